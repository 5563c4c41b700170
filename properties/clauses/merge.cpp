// MERGE: a kernel's own merge operator (vLLM's merge_attn_states,
// FlashAttention's combine) against the certified merge, within the bound
// of spec/SPEC.md section 6.10. The inputs are drawn as a merge meets them:
// parts with close or far-apart lse, lse past the overflow of exp in
// float32 and float64, parts that saw no key (lse -inf), rows that no
// part saw a key of, and head dimensions of real kernels.
#include <rapidcheck.h>

#include <array>
#include <cmath>

#include "properties/clauses/clauses.hpp"
#include "properties/generators.hpp"
#include "properties/harness.hpp"
#include "properties/merge_check.hpp"
#include "reference/merge.hpp"

namespace attnspec {
namespace {

// One part's lse for a row, of the case's class: near 0, past exp's
// float32 overflow (88.7) or underflow, spread over thousands, or past
// float64's overflow (709.8); a float32 value, as the peers keep lse.
double draw_lse(int lse_class) {
  const double fraction = std::ldexp(draw_in(-(1 << 20), 1 << 20), -20);  // (-1, 1), 21 bits
  double x = 0;
  switch (lse_class) {
    case 0: x = 8 * fraction; break;                            // near 0
    case 1: x = 90 + 2000 * (fraction + 1); break;              // 90 .. 4090
    case 2: x = -(90 + 2000 * (fraction + 1)); break;           // -4090 .. -90
    case 3: x = 4096 * fraction; break;                         // far apart
    default: x = 710 + 8000 * (fraction + 1); break;            // past float64's exp overflow
  }
  return round_to_format(x, FormatId::float32);
}

MergeInput draw_merge_input(FormatId partials) {
  MergeInput in;
  in.rows = draw_in(1, 4);
  // Mostly two to four parts (vLLM merges two, FlashAttention up to 128);
  // sometimes 9-16 (the tile shape class).
  in.parts = draw_in(0, 3) == 3 ? draw_in(9, 16) : draw_in(1, 4);
  constexpr std::array kHeadDims = {32, 64, 80, 128, 256};
  in.d_v = draw_in(0, 3) == 3 ? kHeadDims[static_cast<std::size_t>(draw_in(0, 4))] : draw_in(1, 8);
  const int lse_class = draw_in(0, 4);
  const bool empty_row = draw_in(0, 3) == 3;  // row 0 sees no key in any part
  for (int part = 0; part < in.parts; ++part)
    for (int row = 0; row < in.rows; ++row) {
      const bool empty = (empty_row && row == 0) || draw_in(0, 4) == 4;
      in.lse.push_back(empty ? -INFINITY : draw_lse(lse_class));
    }
  // lse is [parts, rows]: the loop above is in that order.
  in.out = draw_values(static_cast<std::size_t>(in.parts) * static_cast<std::size_t>(in.rows) * static_cast<std::size_t>(in.d_v),
                       partials, draw_distribution());
  for (int part = 0; part < in.parts; ++part)
    for (int row = 0; row < in.rows; ++row)
      if (in.lse[in.lse_index(part, row)] == -INFINITY)
        for (int t = 0; t < in.d_v; ++t) in.out[in.out_index(part, row, t)] = 0;
  return in;
}

}  // namespace

ClauseOutcome check_merge(PropertyContext& context) {
  // A merge's shape has no long rows (its keys are parts).
  std::erase(context.expected_shapes, ShapeClass::long_rows);
  const FormatId partials = *context.kernel.capabilities().merge_partials;
  ClauseOutcome outcome = run_property(context, [&](Problem& p, ErrorStats& stats) -> std::string {
    p = merge_as_attention(draw_merge_input(partials));
    return check_merge_against_reference(context.kernel, p, stats);
  });
  outcome.counterexample_merge = outcome.counterexample.has_value();
  return outcome;
}

}  // namespace attnspec
