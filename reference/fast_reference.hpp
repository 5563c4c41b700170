// The fast certified reference (spec/SPEC.md section 5, step 5): each row in
// double arithmetic with a rigorous running error bound; an output whose
// bound leaves its rounding to the target format undecided sends the row
// to the multiprecision reference (certified.hpp). The outputs returned are
// the correctly rounded values of the exact results, as there.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include "formats/format.hpp"
#include "reference/problem.hpp"

namespace attnspec {

struct FastRow {
  std::vector<double> out;         // d_v values: the exact outputs correctly rounded to the target (certified)
  std::vector<double> out_double;  // d_v approximations of the exact outputs ...
  std::vector<double> out_low;     // ... plus these corrections (0 but on the extended rung) ...
  std::vector<double> out_error;   // ... with |out_double[t] + out_low[t] - exact[t]| <= out_error[t] (rigorous)
  std::vector<double> abs_scale;   // d_v values of sum_j w_j |V[j][t]|, the |P||V| of SPEC 6.7 (approximate)
  std::vector<double> weights;     // S approximate weights (relative error below 2^-19, about 1e-13 in practice), 0 at blocked keys
  double lse = 0;                  // approximation of the exact log-sum-exp (-inf for a row with no visible key) ...
  double lse_error = 0;            // ... with |lse - exact| <= lse_error (rigorous given a 2-ulp std::log)
  bool escalated = false;          // the multiprecision reference decided some of this row's outputs
  std::size_t escalated_outputs = 0;  // how many
};

// An enclosure of the row's exact results, computed in double: every
// out_double[t] +- out_error[t] and lse +- lse_error holds the exact value;
// `out` is left empty. Rows the double evaluation cannot bound (non-finite
// inputs, first-order terms that are not small) come from the
// multiprecision reference, correctly rounded to float64 (`escalated`).
// The harness judges kernels against these enclosures.
// EnclosurePrecision::extended evaluates the same row in x87 extended
// precision (u = 2^-64): about 2^11 times narrower enclosures, at a few
// times the cost, for the verdicts a double enclosure leaves open (a
// float64 kernel's bounds are a few float64 ulps); its outputs are pairs
// out_double + out_low.
enum class EnclosurePrecision { binary64, extended };
FastRow enclosed_row(const Problem& p, RowIndex r, EnclosurePrecision precision = EnclosurePrecision::binary64);

// One row's outputs correctly rounded to `target`; safe to call from
// several threads (escalations take turns). Outputs the enclosure cannot
// decide are escalated, and a float64 target always is (a double
// evaluation cannot certify double rounding).
FastRow fast_certified_row(const Problem& p, RowIndex r, FormatId target);

struct FastReferenceResult {
  std::vector<double> out;  // [rows.size(), d_v], certified, in the order of `rows`
  std::size_t rows = 0;
  std::size_t escalated_rows = 0;
  std::size_t escalated_outputs = 0;
};

// The given flat row indices (all rows when empty); progress(done, total)
// after each row if set.
FastReferenceResult fast_certified_attention(const Problem& p, FormatId target, std::span<const std::size_t> rows = {},
                                             const std::function<void(std::size_t, std::size_t)>& progress = {});

}  // namespace attnspec
