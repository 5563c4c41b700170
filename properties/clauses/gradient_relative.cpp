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
#include "properties/gradient_yardstick.hpp"

namespace attnspec {
namespace {

// GRADREL's maxima of one gradient tensor over a shape class's problems,
// with the problem of its largest kernel error.
struct TensorMaxima {
  GradrelMaxima gradrel;
  std::optional<Problem> worst;
};

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
    ExactGradients exact(p, e);
    const auto shape = static_cast<std::size_t>(classify_shape(p.dims));
    ++problems[shape];
    for (std::size_t n = 0; n < std::size(kGradientTensors); ++n) {
      const char name = kGradientTensors[n];
      const GradientTensor mine = gradient_tensor(e, name);
      TensorMaxima& m = maxima[shape][n];
      for (std::size_t i = 0; i < mine.got.size(); ++i) {
        const ExactGradients::Value want = exact.enclosed(name, i);
        if (std::isnan(want.approx)) continue;  // NaN semantics are not this clause's
        const GradrelValue v = gradrel_value(mine.got[i], yardsticks, name, i, want.approx, want.radius, output);
        if (!v.judged()) {
          stats.add(v.kernel_error, INFINITY, 0, u_out);
          continue;
        }
        stats.add(v.kernel_error, v.tolerance(), 0, u_out);
        if (v.kernel_error > m.gradrel.kernel_error || (v.kernel_error == m.gradrel.kernel_error && !m.worst))
          m.worst = p;
        m.gradrel.add(v);
      }
    }
    return "";
  });
  if (outcome.status != Status::pass) return outcome;
  // Every class and gradient is judged: the first that misses the
  // yardstick is described and its worst problem saved, the others named.
  std::string others;
  for (int c = 0; c < kShapeClasses; ++c)
    for (std::size_t n = 0; n < std::size(kGradientTensors); ++n) {
      const TensorMaxima& m = maxima[static_cast<std::size_t>(c)][n];
      if (m.gradrel.met()) continue;
      const char name = kGradientTensors[n];
      const std::string tensor = name == 'S' ? "the sinks' gradient" : std::string("d") + name;
      const std::string shape(to_string(static_cast<ShapeClass>(c)));
      outcome.signatures.push_back("shape:" + shape + ":" + (name == 'S' ? std::string("dsinks") : tensor));
      if (outcome.status == Status::fail) {
        others += (others.empty() ? "" : ", ") + shape + " " + tensor;
        continue;
      }
      outcome.status = Status::fail;
      outcome.counterexample = m.worst;
      char text[300];
      std::snprintf(text, sizeof text,
                    "%s problems: %s's max error %.3g over %d problems exceeds %g x the textbook backward's %.3g in the "
                    "same formats (the worst of its four ways) + the rounding floor %.3g",
                    shape.c_str(), tensor.c_str(), m.gradrel.kernel_error, problems[static_cast<std::size_t>(c)],
                    kGradrelFactor, m.gradrel.yardstick_error, m.gradrel.floor);
      outcome.reason = text;
    }
  if (!others.empty()) outcome.reason += "; also outside it: " + others;
  std::sort(outcome.signatures.begin(), outcome.signatures.end());
  return outcome;
}

}  // namespace attnspec
