// GRADREL: FlashAttention's criterion for the backward (spec/SPEC.md
// section 7, GRADREL): each gradient tensor's maximum error at most 3 times
// that of the textbook backward in the kernel's own formats, plus the
// rounding floor. An empirical yardstick beside GRADPREC's a priori bound.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <optional>

#include "adapters/naive/naive_backward.hpp"
#include "properties/clauses/clauses.hpp"
#include "properties/generators.hpp"
#include "properties/gradient_check.hpp"

namespace attnspec {
namespace {

constexpr double kYardstickFactor = 3;

// The maxima of one gradient tensor over a shape class's problems. As in
// PRECREL each error is known to within its exact value's enclosure, so
// the verdict compares the kernel's error less that width with the
// yardstick's plus it: only a certain excess fails.
struct TensorMaxima {
  double kernel_error = 0, yardstick_error = 0, floor = 0;
  double kernel_error_low = 0, yardstick_error_high = 0;
  std::optional<Problem> worst;
};

// |got - exact| with exact within `radius` of `want`. An infinity of the
// exact value's sign is a value rounded up from at least the output
// format's overflow threshold (SPEC 6.11 step 8): its error is at least
// that threshold's distance from the exact value, which is counted. Any
// other non-finite value is an infinite error.
double error_of(double got, double want, double radius, FormatId output) {
  if (std::isinf(got)) {
    const FormatInfo& f = format_info(output);
    if (!f.has_infinity || std::signbit(got) != std::signbit(want)) return INFINITY;
    const double overflow = f.max_finite + ulp(f.max_finite, output) / 2;
    return std::max(0.0, overflow - std::fabs(want) - radius);
  }
  if (!std::isfinite(got)) return INFINITY;
  return std::fabs(got - want);
}

}  // namespace

ClauseOutcome check_gradrel(PropertyContext& context) {
  const KernelFormats formats = context.kernel.formats();
  const FormatId output = formats.output;
  const double u_out = format_info(output).unit_roundoff;
  std::array<std::array<TensorMaxima, std::size(kGradientTensors)>, kShapeClasses> maxima{};
  std::array<int, kShapeClasses> problems{};
  const Features features = backward_features(context.kernel);
  ClauseOutcome outcome = run_property(context, [&](Problem& p, ErrorStats& stats) -> std::string {
    p = draw_problem(context.kernel, context.profile, features);
    discard_rows_not_declared(context.kernel, p);
    const GradientEvaluation e = evaluate_gradients(context.kernel, p);
    const std::vector<GradientOutputs> yardsticks = naive_yardstick_gradients(formats, p);
    const GradientEnclosure exact = enclosed_gradients(p, e.forward);
    std::optional<GradientResult> certified;  // where the enclosure is not finite
    const auto shape = static_cast<std::size_t>(classify_shape(p.dims));
    ++problems[shape];
    for (std::size_t n = 0; n < std::size(kGradientTensors); ++n) {
      const char name = kGradientTensors[n];
      const GradientTensor mine = gradient_tensor(e, name);
      const EnclosedTensor enclosed = enclosed_tensor(exact, name);
      TensorMaxima& m = maxima[shape][n];
      for (std::size_t i = 0; i < mine.got.size(); ++i) {
        double want = enclosed.approx[i], radius = enclosed.radius[i];
        if (!std::isfinite(want) || !std::isfinite(radius)) {
          if (!certified) certified = certified_gradients(p);
          want = gradient_values(*certified, name)[i];
          radius = 0x1p-53 * std::fabs(want) + 0x1p-1074;
        }
        if (std::isnan(want)) continue;  // NaN semantics are not this clause's
        const double error = error_of(mine.got[i], want, radius, output);
        double yardstick_error = 0;  // the largest of the four ways'
        for (const GradientOutputs& way : yardsticks)
          yardstick_error = std::max(yardstick_error, error_of(gradient_values(way, name)[i], want, radius, output));
        // Where the yardstick fails (overflow in its narrow intermediates)
        // it says nothing: the value is counted as not judged, not as one
        // that would make the class's yardstick infinite.
        if (!std::isfinite(yardstick_error)) {
          stats.add(error, INFINITY, 0, u_out);
          continue;
        }
        const double floor = gradient_floor(want, output);
        stats.add(error, kYardstickFactor * yardstick_error + floor, 0, u_out);
        if (error > m.kernel_error || (error == m.kernel_error && !m.worst)) {
          m.kernel_error = error;
          m.worst = p;
        }
        m.yardstick_error = std::max(m.yardstick_error, yardstick_error);
        m.kernel_error_low = std::max(m.kernel_error_low, error - radius);
        m.yardstick_error_high = std::max(m.yardstick_error_high, yardstick_error + radius);
        m.floor = std::max(m.floor, floor);
      }
    }
    return "";
  });
  if (outcome.status != Status::pass) return outcome;
  for (int c = 0; c < kShapeClasses; ++c)
    for (std::size_t n = 0; n < std::size(kGradientTensors); ++n) {
      const TensorMaxima& m = maxima[static_cast<std::size_t>(c)][n];
      if (m.kernel_error_low <= kYardstickFactor * m.yardstick_error_high + m.floor) continue;
      outcome.status = Status::fail;
      outcome.counterexample = m.worst;
      const char name = kGradientTensors[n];
      const std::string tensor = name == 'S' ? "the sinks' gradient" : std::string("d") + name;
      char text[300];
      std::snprintf(text, sizeof text,
                    "%s problems: %s's max error %.3g over %d problems exceeds 3 x the textbook backward's %.3g in the "
                    "same formats (the worst of its four ways) + the rounding floor %.3g",
                    std::string(to_string(static_cast<ShapeClass>(c))).c_str(), tensor.c_str(), m.kernel_error,
                    problems[static_cast<std::size_t>(c)], m.yardstick_error, m.floor);
      outcome.reason = text;
      return outcome;
    }
  return outcome;
}

}  // namespace attnspec
