// The softmax of one prepared row at the working precision, shared by the
// forward (certified.cpp) and the backward (gradients.cpp) references:
// exp(x_g - x_r) for each group of equal logits, r the row's reference key,
// computed from exact differences so that nearly equal logits lose nothing.
#pragma once

#include <optional>
#include <vector>

#include "reference/exact_row.hpp"
#include "reference/multiprecision.hpp"

namespace attnspec {

struct RowExponentials {
  std::vector<Interval> per_group;  // u_g = exp(x_g - x_r), per group of ExactRow
  Interval sum;                     // sum_g group_size[g] * u_g: the denominator over exp(x_r)
  // A key whose logit certainly exceeds the reference key's, if any: the
  // rough choice of reference key can miss the largest logit when two huge
  // logits agree to 70 bits, and then u may overflow at any precision;
  // callers re-centre on this key.
  std::optional<std::size_t> heavier_key;
};

// The scale as an interval: the explicit one, or 1/sqrt(d_k).
Interval scale_interval(const Problem& p);

// u_g and their sum for a row with finite logits and at least one visible key.
RowExponentials row_exponentials(const Problem& p, const ExactRow& row);

// The logit of the row's reference key, x_r = cap(scale * q.k_r) + additive_r.
Interval reference_logit(const Problem& p, const ExactRow& row);

}  // namespace attnspec
