// ALIBI: what an ALiBi bias is (spec/SPEC.md sections 2.3 and 7): the
// logit of key j in row i moves by -slope_h |i + off - j| after the scale
// and the softcap, which is exactly what an additive mask holding those
// biases does. So a kernel's ALiBi path must agree with its additive-mask
// path, and both with the certified reference.
#include <rapidcheck.h>

#include <cmath>
#include <optional>
#include <string>

#include "properties/clauses/clauses.hpp"
#include "properties/generators.hpp"
#include "properties/harness.hpp"

namespace attnspec {
namespace {

// The same problem with its biases moved into a full-shape additive mask
// ([B, Hq, L, S]; a bool mask's blocked keys become -inf). Each bias is
// an exact double (float32 slopes times integer distances), so the two
// problems have the same exact result.
Problem as_additive_mask(const Problem& p) {
  Problem masked = p;
  masked.alibi.reset();
  masked.mask_kind = MaskKind::additive;
  masked.mask_batch = p.dims.batch;
  masked.mask_heads = p.dims.q_heads;
  masked.mask.resize(p.rows() * static_cast<std::size_t>(p.dims.kv_len));
  for (std::size_t row = 0; row < p.rows(); ++row) {
    const RowIndex r = p.row_index(row);
    for (int j = 0; j < p.dims.kv_len; ++j)
      masked.mask[row * static_cast<std::size_t>(p.dims.kv_len) + static_cast<std::size_t>(j)] =
          p.mask_allows(r, j) ? p.alibi_bias(r, j) : -INFINITY;
  }
  return masked;
}

}  // namespace

ClauseOutcome check_alibi(PropertyContext& context) {
  const double u_out = output_unit(context.kernel);
  const Capabilities caps = context.kernel.capabilities();
  // ALiBi always; no additive mask, whose values could not be summed with
  // the biases exactly in every case (PREC and the other clauses draw the
  // two together against the reference).
  Features biased_only;
  biased_only.always_alibi = true;
  biased_only.additive_mask = false;
  // A kernel whose mask format cannot hold every bias (ggml's F16 mask)
  // declines the masked copy: that case is still judged by (1), and the
  // comparisons not made are counted.
  int comparisons_declined = 0;
  ClauseOutcome outcome = run_property(context, [&](Problem& p, ErrorStats& stats) -> std::string {
    p = draw_problem(context.kernel, context.profile, biased_only);
    const Problem biased = p;
    const Evaluation base = evaluate(context.kernel, biased);
    if (std::string f = outside_bound(p, base, u_out, stats); !f.empty()) return f;
    if (!caps.additive_mask) return "";
    const Problem masked = as_additive_mask(biased);
    std::optional<Evaluation> as_mask;
    try {
      as_mask = evaluate(context.kernel, masked);
    } catch (const KernelUnsupported&) {
      ++comparisons_declined;
      return "";
    }
    return related(p, biased, base, masked, *as_mask, same_index(p.out_size()),
                   "ALiBi against its biases as an additive mask", u_out, stats);
  });
  if (comparisons_declined > 0)
    outcome.reason += (outcome.reason.empty() ? "" : "; ") + std::to_string(comparisons_declined) +
                      " comparison(s) with the biases as an additive mask not made: the kernel declined those masks";
  return outcome;
}

}  // namespace attnspec
