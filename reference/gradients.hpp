// The certified backward pass (spec/SPEC.md section 2.6, and section 5
// step 6): dQ, dK, dV and each sink's gradient of a problem that carries
// dO, every value the correctly rounded value, in a chosen format, of the
// exact gradient.
#pragma once

#include <cstddef>
#include <vector>

#include "formats/format.hpp"
#include "reference/certified.hpp"
#include "reference/problem.hpp"

namespace attnspec {

struct GradientOptions {
  FormatId target = FormatId::float64;
  int start_precision_bits = 0;    // 0: starting_precision(target)
  int max_precision_bits = 65536;  // refinement gives up (ReferenceError) beyond this
};

struct GradientStats {
  std::size_t values = 0;          // gradient values in all, NaN ones included
  std::size_t exact_values = 0;    // settled exactly: no visible pair, or an exact rational form
  std::size_t refined_values = 0;  // not decided by the first evaluation
  int max_precision_bits = 0;      // working precision of the last evaluation
};

struct GradientResult {
  FormatId target = FormatId::float64;
  std::vector<double> dq;     // [B, Hq, L, d_k]
  std::vector<double> dk;     // [B, Hkv, S, d_k]
  std::vector<double> dv;     // [B, Hkv, S, d_v]
  std::vector<double> dsink;  // [Hq] when the problem has sinks, else empty
  GradientStats stats;
};

// p must carry dout and no descale factors (std::invalid_argument
// otherwise); ReferenceError when a value is still undecided at
// max_precision_bits.
GradientResult certified_gradients(const Problem& p, const GradientOptions& options = {});

}  // namespace attnspec
