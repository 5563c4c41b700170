// Cutting a problem down to a sub-problem with the same values: some batch
// entries, kv heads, query heads of each group, rows, keys, key components
// or value columns, and fewer options (mask, causal masking, window, ALiBi,
// sinks, softcap, explicit scale). Shrinking uses cuts (properties/generators.cpp) so that
// a failing problem's shape keeps shrinking after its values have: a
// RapidCheck draw, once a later draw has shrunk, is never shrunk again, so
// the shape draws alone stall wherever the values shrank first.
#pragma once

#include <climits>
#include <vector>

#include "reference/problem.hpp"

namespace attnspec {

// A half-open range [begin, end) of one axis, in the uncut problem's
// coordinates; end beyond the axis means "to its end".
struct AxisRange {
  int begin = 0;
  int end = INT_MAX;
  bool operator==(const AxisRange&) const = default;
};

// Which part of each axis, and which options, a cut keeps. The default
// keeps everything.
struct Cut {
  AxisRange batch, kv_heads, group;  // group: query heads within each kv head's group
  AxisRange rows, keys, key_dims, value_dims;
  bool mask = true, causal = true, window = true, alibi = true, sinks = true, descales = true, softcap = true,
       scale = true;
  bool operator==(const Cut&) const = default;
};

// The cut's ranges fitted to a problem of shape d: every range within its
// axis and not empty.
Cut fit_cut(const Cut& cut, const Dims& d);

// The shape a (fitted) cut leaves.
Dims cut_dims(const Cut& cut, const Dims& d);

// The sub-problem a cut keeps: tensors, mask, ALiBi slopes, sinks and descales sliced, the
// options it drops gone; causal masking and window as they were (so
// positions move: a cut problem is a new candidate, not the old one
// restricted).
Problem cut_problem(const Problem& p, const Cut& cut);

// Whether d_k and d_v are cut apart, or together (for a kernel that needs
// d_v = d_k: a cut of one alone would give it a problem it cannot run).
enum class HeadDims { apart, together };

// Cuts that keep less than `cut` (fitted to p): each head dimension of
// more than two elements cut to its first one, then each axis of more
// than one element halved (either half), then a quarter, an eighth, ...
// and finally one element off either end of each axis, then each option
// p has dropped; the largest reductions first.
std::vector<Cut> smaller_cuts(const Cut& cut, const Problem& p, HeadDims head_dims = HeadDims::apart);

}  // namespace attnspec
