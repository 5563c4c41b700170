// The tight tier of the precision model (spec/SPEC.md section 6.8): for one
// query row, a bound on each output's error that a correct kernel of the
// declared formats exceeds only with a stated, negligible probability under
// the probabilistic rounding model of Higham and Mary (2019), with rounding
// errors of identical operations taken as fully correlated. It is never
// looser than the worst-case bound B_t. The PRECTIGHT clause judges with it.
#pragma once

#include <span>
#include <vector>

#include "spec/precision_model.hpp"

namespace attnspec {

// lambda of section 6.8: each martingale bound fails with probability at
// most 2 exp(-lambda^2 / 2) = 2.5e-14 under the model.
inline constexpr double kTightLambda = 8;

// T_t per output element of the row (infinite where neither tier gives a
// finite bound); `worst` is precision_bound's result for the same row.
std::vector<double> tight_bound(const Problem& p, RowIndex r, FormatClass formats,
                                std::span<const double> exact_weights, std::span<const double> exact_out,
                                const RowBound& worst);

}  // namespace attnspec
