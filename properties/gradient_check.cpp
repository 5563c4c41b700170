// The backward's verdicts: the same rule as the forward's (within B of the
// exact value, known to lie within the reference's enclosure), applied to
// the four gradient tensors of section 2.6.
#include "properties/gradient_check.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>

#include "reference/certified.hpp"
#include "reference/fast_gradients.hpp"
#include "reference/gradients.hpp"

namespace attnspec {

GradientClass gradient_class(const Kernel& kernel) {
  const KernelFormats f = kernel.formats();
  return GradientClass{format_class(f), f.gradient_storage};
}

GradientTensor gradient_tensor(const GradientEvaluation& e, char name) {
  switch (name) {
    case 'Q': return {name, e.got.dq, e.bounds.dq, e.bounds.dq_scale};
    case 'K': return {name, e.got.dk, e.bounds.dk, e.bounds.dk_scale};
    case 'V': return {name, e.got.dv, e.bounds.dv, e.bounds.dv_scale};
    default: return {'S', e.got.dsink, e.bounds.dsink, e.bounds.dsink_scale};
  }
}

const std::vector<double>& gradient_values(const GradientOutputs& g, char name) {
  return name == 'Q' ? g.dq : name == 'K' ? g.dk : name == 'V' ? g.dv : g.dsink;
}

const std::vector<double>& gradient_values(const GradientResult& g, char name) {
  return name == 'Q' ? g.dq : name == 'K' ? g.dk : name == 'V' ? g.dv : g.dsink;
}

EnclosedTensor enclosed_tensor(const GradientEnclosure& g, char name) {
  switch (name) {
    case 'Q': return {g.dq, g.dq_error};
    case 'K': return {g.dk, g.dk_error};
    case 'V': return {g.dv, g.dv_error};
    default: return {g.dsink, g.dsink_error};
  }
}

Features backward_features(const Kernel& kernel) {
  Features f;
  f.backward = true;
  f.descales = false;
  f.fully_masked_rows = kernel.capabilities().fully_masked_rows;
  return f;
}

GradientEvaluation evaluate_gradients(Kernel& kernel, const Problem& p) {
  GradientEvaluation e;
  e.got = kernel.run_backward(p);
  const Dims& d = p.dims;
  const std::size_t key_blocks = static_cast<std::size_t>(d.batch) * d.kv_heads * d.kv_len;
  const auto check = [&](const std::vector<double>& got, std::size_t want, const char* name) {
    if (got.size() != want)
      throw std::runtime_error(kernel.name() + "'s backward returned " + std::to_string(got.size()) + " values of " +
                               name + ", expected " + std::to_string(want));
  };
  check(e.got.dq, p.rows() * static_cast<std::size_t>(d.d_k), "dQ");
  check(e.got.dk, key_blocks * static_cast<std::size_t>(d.d_k), "dK");
  check(e.got.dv, key_blocks * static_cast<std::size_t>(d.d_v), "dV");
  check(e.got.dsink, p.sinks.size(), "the sinks' gradient");
  e.forward = forward_rows(p);
  e.bounds = gradient_bounds(p, gradient_class(kernel), e.forward);
  return e;
}

void discard_rows_not_declared(const Kernel& kernel, const Problem& p) {
  if (kernel.capabilities().fully_masked_rows) return;
  for (std::size_t row = 0; row < p.rows(); ++row) {
    const RowIndex r = p.row_index(row);
    bool sees = false;
    for (int j = 0; j < p.dims.kv_len && !sees; ++j) sees = p.visible(r, j);
    if (!sees)
      throw NothingChecked("a row with no visible key, which the kernel does not declare it handles (fully_masked_rows)");
  }
}

double bound_around(double before, double got, FormatId output) {
  // B = E + u_o (|g| + E) + l/2 with |g| <= |got| + B: solved for B.
  const FormatInfo& f = format_info(output);
  const double u_o = f.unit_roundoff;
  return (before + u_o * (std::fabs(got) + before) + f.min_subnormal / 2) / (1 - u_o) * (1 + 0x1p-50);
}

double gradient_floor(double exact, FormatId output) {
  const double rounded = round_to_format(exact, output);
  const double spacing = ulp(std::isfinite(rounded) ? rounded : format_info(output).max_finite, output);
  return std::max(rounding_floor(exact, output), spacing);
}

std::string gradient_element_name(const Problem& p, char tensor, std::size_t flat) {
  const Dims& d = p.dims;
  const auto width = static_cast<std::size_t>(tensor == 'V' ? d.d_v : d.d_k);
  const std::string t = std::to_string(flat % width);
  std::size_t rest = flat / width;
  if (tensor == 'Q') {
    const RowIndex r = p.row_index(rest);
    return "dQ (b=" + std::to_string(r.batch) + ", h=" + std::to_string(r.head) + ", i=" + std::to_string(r.query) +
           ", t=" + t + ")";
  }
  if (tensor == 'S') return "dsink (h=" + std::to_string(flat) + ")";
  const auto S = static_cast<std::size_t>(d.kv_len), H = static_cast<std::size_t>(d.kv_heads);
  const std::size_t j = rest % S, g = rest / S % H, b = rest / S / H;
  return std::string("d") + tensor + " (b=" + std::to_string(b) + ", g=" + std::to_string(g) +
         ", j=" + std::to_string(j) + ", t=" + t + ")";
}

ExactGradients::ExactGradients(const Problem& p, const GradientEvaluation& e)
    : problem_(p), enclosure_(enclosed_gradients(p, e.forward)) {}

ExactGradients::Value ExactGradients::enclosed(char tensor, std::size_t i) {
  const EnclosedTensor t = enclosed_tensor(enclosure_, tensor);
  if (std::isfinite(t.approx[i]) && std::isfinite(t.radius[i])) return {t.approx[i], t.radius[i], false};
  return certified(tensor, i);
}

ExactGradients::Value ExactGradients::certified(char tensor, std::size_t i) {
  if (!certified_) certified_ = certified_gradients(problem_);
  const double want = gradient_values(*certified_, tensor)[i];
  return {want, 0x1p-53 * std::fabs(want) + 0x1p-1074, true};
}

std::string gradients_outside_bound(const Problem& p, const GradientEvaluation& e, FormatId output,
                                    ErrorStats& stats) {
  ExactGradients exact(p, e);
  const double u_out = format_info(output).unit_roundoff;
  // The least magnitude that rounds to infinity in the output format
  // (round to nearest: the largest finite value plus half its spacing).
  const FormatInfo& out_format = format_info(output);
  const double overflow = out_format.has_infinity ? out_format.max_finite + ulp(out_format.max_finite, output) / 2
                                                  : INFINITY;
  for (const char name : kGradientTensors) {
    const GradientTensor tensor = gradient_tensor(e, name);
    for (std::size_t i = 0; i < tensor.got.size(); ++i) {
      const double got = tensor.got[i];
      ExactGradients::Value want = exact.enclosed(name, i);
      if (std::isnan(want.approx)) continue;  // NaN semantics are not this rule's
      double bound = 0;
      // true: within the bound, false: outside it, nullopt: the exact
      // value's radius cannot tell.
      const auto verdict = [&]() -> std::optional<bool> {
        bound = rounded_gradient_bound(tensor.before[i], std::fabs(want.approx) + want.radius, output);
        if (std::isinf(got)) {
          // Rounding to the output format overflows to the infinity of the
          // value's sign where the value may reach the format's overflow
          // threshold (SPEC 6.11 step 8); nowhere else.
          if (std::signbit(got) != std::signbit(want.approx) || !std::isfinite(bound)) return false;
          if (std::fabs(want.approx) - want.radius - tensor.before[i] >= overflow) return true;
          if (std::fabs(want.approx) + want.radius + tensor.before[i] < overflow) return false;
          return std::nullopt;
        }
        if (!std::isfinite(got)) return false;
        const double error = std::fabs(got - want.approx);
        if (error <= bound - want.radius) return true;
        if (error > bound + want.radius) return false;
        return std::nullopt;
      };
      std::optional<bool> within = verdict();
      stats.add(std::fabs(got - want.approx), bound, tensor.scale[i], u_out);
      if (!std::isfinite(bound)) continue;  // no bound: counted as not judged
      if (!within && !want.certified) {
        want = exact.certified(name, i);
        within = verdict();
      }
      if (!within)
        throw ReferenceError("a gradient within half a float64 ulp of its bound: " + gradient_element_name(p, name, i));
      if (*within) continue;
      return gradient_element_name(p, name, i) + " is " + number_text(got) + ", the certified gradient " +
             number_text(want.approx) + ": error " + number_text(std::fabs(got - want.approx)) + " exceeds the bound " +
             number_text(bound);
    }
  }
  return "";
}

}  // namespace attnspec
