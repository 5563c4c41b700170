// naive-f64's and naive-f32's backward, and GRADREL's yardstick: the textbook gradients
// (reference/textbook_gradients.hpp) in the kernel's arithmetic, rounded to
// its output format, its intermediates stored as its formats say.
#include "adapters/naive/naive_backward.hpp"

#include <vector>

#include "reference/textbook_gradients.hpp"

namespace attnspec {

template <typename Scalar>
GradientOutputs naive_gradients(const Problem& p, FormatId output, const TextbookStorage& storage) {
  const TextbookGradients<Scalar> g = textbook_gradients<Scalar>(p, storage);
  const auto rounded = [output](const std::vector<Scalar>& values) {
    std::vector<double> result(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) result[i] = round_to_format(static_cast<double>(values[i]), output);
    return result;
  };
  return {rounded(g.dq), rounded(g.dk), rounded(g.dv), rounded(g.dsink)};
}

std::vector<GradientOutputs> naive_yardstick_gradients(const KernelFormats& formats, const Problem& p) {
  const bool wide = formats.accumulate == FormatId::float64;
  const FormatId arithmetic = wide ? FormatId::float64 : FormatId::float32;
  std::vector<GradientOutputs> ways;
  for (const bool from_lse : {false, true})
    for (const bool from_output : {false, true}) {
      TextbookStorage storage;
      storage.products = formats.gradient_storage;
      if (formats.accumulate != arithmetic) storage.tensors = formats.accumulate;
      if (from_lse) storage.saved_lse = arithmetic;
      if (from_output) storage.saved_output = formats.output;
      ways.push_back(wide ? naive_gradients<double>(p, formats.output, storage)
                          : naive_gradients<float>(p, formats.output, storage));
    }
  return ways;
}

template GradientOutputs naive_gradients<float>(const Problem&, FormatId, const TextbookStorage&);
template GradientOutputs naive_gradients<double>(const Problem&, FormatId, const TextbookStorage&);

}  // namespace attnspec
