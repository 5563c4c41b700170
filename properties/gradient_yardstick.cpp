// GRADREL's per-value measure and its maxima (gradient_yardstick.hpp).
#include "properties/gradient_yardstick.hpp"

#include <algorithm>

#include "properties/gradient_check.hpp"

namespace attnspec {

double gradient_error(double got, double want, double radius, FormatId output) {
  if (std::isinf(got)) {
    const FormatInfo& f = format_info(output);
    if (!f.has_infinity || std::signbit(got) != std::signbit(want)) return INFINITY;
    const double overflow = f.max_finite + ulp(f.max_finite, output) / 2;
    return std::max(0.0, overflow - std::fabs(want) - radius);
  }
  if (!std::isfinite(got)) return INFINITY;
  return std::fabs(got - want);
}

GradrelValue gradrel_value(double got, const std::vector<GradientOutputs>& ways, char tensor, std::size_t i,
                           double want, double radius, FormatId output) {
  GradrelValue v;
  v.kernel_error = gradient_error(got, want, radius, output);
  for (const GradientOutputs& way : ways)
    v.yardstick_error = std::max(v.yardstick_error, gradient_error(gradient_values(way, tensor)[i], want, radius, output));
  v.floor = gradient_floor(want, output);
  v.radius = radius;
  return v;
}

void GradrelMaxima::add(const GradrelValue& v) {
  kernel_error = std::max(kernel_error, v.kernel_error);
  yardstick_error = std::max(yardstick_error, v.yardstick_error);
  floor = std::max(floor, v.floor);
  kernel_error_low = std::max(kernel_error_low, v.kernel_error - v.radius);
  yardstick_error_high = std::max(yardstick_error_high, v.yardstick_error + v.radius);
}

}  // namespace attnspec
