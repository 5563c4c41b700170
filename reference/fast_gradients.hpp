// The fast path of the certified gradients (spec/SPEC.md section 5, step
// 6): the textbook backward (reference/textbook_gradients.hpp) in x87 long
// double, with a rigorous bound on its own error from the precision model
// of section 6.11 (spec/gradient_bound.hpp), the long double evaluation
// being a kernel of that model's class. The enclosures are about 2^-10
// times a float64 kernel's bound, so they decide nearly every verdict; the
// harness takes the multiprecision gradients (reference/gradients.hpp) for
// the rest.
#pragma once

#include <span>
#include <vector>

#include "reference/problem.hpp"
#include "spec/gradient_bound.hpp"

namespace attnspec {

struct GradientEnclosure {
  std::vector<double> dq, dk, dv, dsink;  // approximations of the exact gradients (GradientResult's layouts) ...
  std::vector<double> dq_error, dk_error, dv_error, dsink_error;  // ... within these (infinite: no enclosure)
};

// `forward`: one ForwardRow per flat row (the certified forward's
// weights, outputs and lse); p must carry dout.
GradientEnclosure enclosed_gradients(const Problem& p, std::span<const ForwardRow> forward);

// The ForwardRow of every row of p, from the fast certified forward
// (reference/fast_reference.hpp).
std::vector<ForwardRow> forward_rows(const Problem& p);

}  // namespace attnspec
