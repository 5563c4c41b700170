// The backward pass's worst-case bound (spec/SPEC.md section 6.11): for a
// kernel class and a problem carrying dO, a bound on the error of every
// value of dQ, dK, dV and each sink's gradient, whichever of the four ways
// the section covers the kernel takes its weights (from the softmax or
// recomputed from the lse) and D (from dO . O or from P dP). GRADPREC
// judges kernels with it, and the reference's long double evaluation of
// the gradients (reference/fast_gradients.hpp) bounds itself with it.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "formats/format.hpp"
#include "reference/problem.hpp"
#include "spec/precision_model.hpp"

namespace attnspec {

struct GradientClass {
  FormatClass forward;              // accumulator and output format, as the forward's (SPEC 6.1)
  std::optional<FormatId> storage;  // F_s: P and dS stored in it before their products; nullopt: the accumulator
};

// What the bound needs of the forward of one row: the certified
// reference's approximations of the exact weights (S values, relative
// error at most kForwardWeightError), outputs (d_v values, within
// out_error) and lse.
struct ForwardRow {
  std::vector<double> weights, out, out_error;
  double lse = 0;
};
inline constexpr double kForwardWeightError = 0x1p-19;  // reference/fast_reference.hpp's guarantee

// Per gradient value, the bound of section 6.11 step 7 (before the output
// rounding; rounded_gradient_bound adds step 8) and the sum of its terms'
// magnitudes (the value's "|dS||K|", the unit errors are reported in).
// Infinite where the model gives no bound (section 6.11's last paragraph).
struct GradientBounds {
  std::vector<double> dq, dk, dv, dsink;
  std::vector<double> dq_scale, dk_scale, dv_scale, dsink_scale;
};

// `forward` holds one ForwardRow per flat row of p; p must carry dout.
GradientBounds gradient_bounds(const Problem& p, const GradientClass& c, std::span<const ForwardRow> forward);

// Step 8: a value computed within `before` of an exact gradient of
// magnitude at most `magnitude`, rounded to `output`.
double rounded_gradient_bound(double before, double magnitude, FormatId output);

}  // namespace attnspec
