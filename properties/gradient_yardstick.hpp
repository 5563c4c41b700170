// GRADREL's criterion (spec/SPEC.md section 7, GRADREL), shared by the
// clause and the gradients' audit so that both judge alike: each value's
// error beside the worst of the textbook backward's four ways
// (naive_yardstick_gradients), and the maxima that decide a tensor.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

#include "adapters/kernel.hpp"
#include "formats/format.hpp"

namespace attnspec {

// FlashAttention's factor: the kernel may err up to this many times the
// textbook backward in the same formats.
inline constexpr double kGradrelFactor = 3;

// |got - exact| with exact within `radius` of `want`. An infinity of the
// exact value's sign is a value rounded up from at least the output
// format's overflow threshold (SPEC 6.11 step 8): its error is at least
// that threshold's distance from the exact value, which is counted. Any
// other non-finite value is an infinite error.
double gradient_error(double got, double want, double radius, FormatId output);

// One value of GRADREL: the kernel's error, the yardstick's (the largest
// of the four ways'), the rounding floor (gradient_floor) and the exact
// value's enclosure radius.
struct GradrelValue {
  double kernel_error = 0, yardstick_error = 0, floor = 0, radius = 0;
  // Where the yardstick fails (overflow in its narrow intermediates) it
  // says nothing: the value is not judged, rather than making a whole
  // tensor's yardstick infinite.
  bool judged() const { return std::isfinite(yardstick_error); }
  double tolerance() const { return kGradrelFactor * yardstick_error + floor; }
};

// Value i of tensor `tensor` ('Q', 'K', 'V' or 'S', as gradient_values
// takes) of the kernel (`got`) and of the four ways, whose exact value is
// within `radius` of `want`.
GradrelValue gradrel_value(double got, const std::vector<GradientOutputs>& ways, char tensor, std::size_t i,
                           double want, double radius, FormatId output);

// The maxima of judged values (a tensor in a shape class, or on the
// audit's problem). Each error is known to within its exact value's
// radius, so the verdict compares the kernel's error less that radius with
// the yardstick's plus it: only a certain excess fails.
struct GradrelMaxima {
  double kernel_error = 0, yardstick_error = 0, floor = 0;
  double kernel_error_low = 0, yardstick_error_high = 0;
  void add(const GradrelValue& v);
  bool met() const { return kernel_error_low <= kGradrelFactor * yardstick_error_high + floor; }
};

}  // namespace attnspec
