// The gradients' audit: one backward run of the kernel and of the four
// textbook ways of GRADREL's yardstick on the whole problem (a backward
// cannot sample rows: every row adds to every dK and dV), measured against
// the fast certified gradients (reference/fast_gradients.hpp), the
// multiprecision ones where the enclosure cannot tell.
#include "audit/gradient_audit.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <span>
#include <stdexcept>

#include "adapters/naive/naive_backward.hpp"
#include "properties/gradient_check.hpp"
#include "properties/gradient_yardstick.hpp"

namespace attnspec {
namespace {

constexpr std::uint64_t kDoutStream = 0xd0d0a5eedULL;

// The exact values of one tensor (within `radius`) and their correctly
// rounded values in the output format.
struct ExactTensor {
  std::vector<double> exact, radius, correctly_rounded;
};

}  // namespace

std::vector<double> draw_dout(const Problem& p, InputDistribution distribution, FormatId input, std::uint64_t seed) {
  InputRandom random(seed ^ kDoutStream);
  std::vector<double> dout(p.out_size());
  for (double& x : dout) x = round_to_format(draw_value(distribution, random), input);
  return dout;
}

GradientAudit audit_gradients(Kernel& kernel, const Problem& p) {
  using Clock = std::chrono::steady_clock;
  const auto seconds_since = [](Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  GradientAudit audit;
  const FormatId output = kernel.formats().output;
  const double u_out = format_info(output).unit_roundoff;
  auto start = Clock::now();
  const GradientEvaluation e = evaluate_gradients(kernel, p);
  audit.kernel_seconds = seconds_since(start);
  start = Clock::now();
  const GradientEnclosure fast = enclosed_gradients(p, e.forward);
  std::optional<GradientResult> certified;  // correctly rounded to the output format, where needed
  const std::vector<GradientOutputs> ways = naive_yardstick_gradients(kernel.formats(), p);
  const auto width = [&](char tensor) -> std::size_t {
    if (tensor == 'S') return 1;
    return static_cast<std::size_t>(tensor == 'V' ? p.dims.d_v : p.dims.d_k);
  };
  for (const char name : kGradientTensors) {
    if (name == 'S' && p.sinks.empty()) continue;
    const GradientTensor got = gradient_tensor(e, name);
    const EnclosedTensor enclosed = enclosed_tensor(fast, name);
    const std::vector<double>& approx = enclosed.approx;
    const std::vector<double>& approx_error = enclosed.radius;
    ExactTensor x;
    x.exact = approx;
    x.radius = approx_error;
    x.correctly_rounded.resize(approx.size());
    for (std::size_t i = 0; i < approx.size(); ++i) {
      const double low = round_to_format(approx[i] - approx_error[i], output),
                   high = round_to_format(approx[i] + approx_error[i], output);
      if (std::isfinite(approx_error[i]) && low == high) {
        x.correctly_rounded[i] = low;
        continue;
      }
      if (!certified) certified = certified_gradients(p, {.target = output});
      x.correctly_rounded[i] = gradient_values(*certified, name)[i];
      if (!std::isfinite(approx_error[i])) {  // the enclosure has none: the rounded value is what is known
        x.exact[i] = x.correctly_rounded[i];
        x.radius[i] = ulp(x.correctly_rounded[i], output) / 2;
      }
    }
    GradientTensorAudit t;
    t.tensor = name;
    t.values = approx.size();
    MeasureAccumulator kernel_errors(output), textbook_errors(output);
    BoundAccumulator bound;
    GradrelMaxima gradrel;
    const std::size_t w = width(name);
    for (std::size_t first = 0; first < approx.size(); first += w) {
      const auto row = [&](const std::vector<double>& values) { return std::span<const double>(values.data() + first, w); };
      kernel_errors.add_row(row(got.got), row(x.exact), row(x.correctly_rounded), row(got.scale));
      textbook_errors.add_row(row(gradient_values(ways.front(), name)), row(x.exact), row(x.correctly_rounded), row(got.scale));
    }
    for (std::size_t i = 0; i < approx.size(); ++i) {
      const double error = std::isfinite(got.got[i]) ? std::fabs(got.got[i] - x.exact[i]) : INFINITY;
      bound.add(error, x.radius[i], rounded_gradient_bound(got.before[i], std::fabs(x.exact[i]) + x.radius[i], output),
                u_out * got.scale[i]);
      const GradrelValue v = gradrel_value(got.got[i], ways, name, i, x.exact[i], x.radius[i], output);
      if (v.judged())
        gradrel.add(v);
      else
        ++t.gradrel_not_judged;
    }
    t.kernel = kernel_errors.finish();
    t.textbook = textbook_errors.finish();
    t.bound = bound.finish();
    t.yardstick_max_abs = gradrel.yardstick_error;
    t.floor = gradrel.floor;
    t.ratio = gradrel.yardstick_error > 0 ? gradrel.kernel_error / gradrel.yardstick_error
                                          : (gradrel.kernel_error == 0 ? 1 : INFINITY);
    t.within_gradrel = gradrel.met();
    audit.tensors.push_back(std::move(t));
  }
  audit.reference_seconds = seconds_since(start);
  return audit;
}

}  // namespace attnspec
