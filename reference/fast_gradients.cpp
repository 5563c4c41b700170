// The long double gradients and their enclosures: the model's bound for an
// x87 accumulator (spec/precision_model.cpp's accumulator_arithmetic says
// which u it counts and why), then the rounding to double.
#include "reference/fast_gradients.hpp"

#include <cmath>

#include "reference/fast_reference.hpp"
#include "reference/textbook_gradients.hpp"

namespace attnspec {

std::vector<ForwardRow> forward_rows(const Problem& p) {
  std::vector<ForwardRow> rows(p.rows());
  for (std::size_t row = 0; row < p.rows(); ++row) {
    FastRow f = enclosed_row(p, p.row_index(row));
    rows[row] = ForwardRow{std::move(f.weights), std::move(f.out_double), std::move(f.out_error), f.lse};
  }
  return rows;
}

GradientEnclosure enclosed_gradients(const Problem& p, std::span<const ForwardRow> forward) {
  const TextbookGradients<long double> g = textbook_gradients<long double>(p);
  GradientClass own;
  own.forward.accumulate = FormatId::float64;
  own.forward.output = FormatId::float64;
  own.forward.extended_accumulator = true;
  const GradientBounds bounds = gradient_bounds(p, own, forward);
  GradientEnclosure e;
  const auto enclose = [](const std::vector<long double>& values, const std::vector<double>& before,
                          std::vector<double>& value, std::vector<double>& error) {
    value.resize(values.size());
    error.resize(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      value[i] = static_cast<double>(values[i]);
      error[i] = rounded_gradient_bound(before[i], std::fabs(value[i]) + before[i], FormatId::float64);
      if (!std::isfinite(value[i])) error[i] = INFINITY;
    }
  };
  enclose(g.dq, bounds.dq, e.dq, e.dq_error);
  enclose(g.dk, bounds.dk, e.dk, e.dk_error);
  enclose(g.dv, bounds.dv, e.dv, e.dv_error);
  enclose(g.dsink, bounds.dsink, e.dsink, e.dsink_error);
  return e;
}

}  // namespace attnspec
