// naive-f64's and naive-f32's backward: the textbook gradients
// (reference/textbook_gradients.hpp) in the kernel's arithmetic, rounded to
// its output format.
#include "adapters/naive/naive_backward.hpp"

#include <vector>

#include "reference/textbook_gradients.hpp"

namespace attnspec {

template <typename Scalar>
GradientOutputs naive_gradients(const Problem& p, FormatId output) {
  const TextbookGradients<Scalar> g = textbook_gradients<Scalar>(p);
  const auto rounded = [output](const std::vector<Scalar>& values) {
    std::vector<double> result(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) result[i] = round_to_format(static_cast<double>(values[i]), output);
    return result;
  };
  return {rounded(g.dq), rounded(g.dk), rounded(g.dv), rounded(g.dsink)};
}

template GradientOutputs naive_gradients<float>(const Problem&, FormatId);
template GradientOutputs naive_gradients<double>(const Problem&, FormatId);

}  // namespace attnspec
