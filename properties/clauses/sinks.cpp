// SINK: what an attention sink is (spec/SPEC.md sections 2.3 and 7): a
// term exp(sigma_h) in the softmax's denominator that brings no value.
// That is exactly one more key whose logit is sigma_h and whose value row
// is 0: with k = 0 its scaled, capped logit is 0 whatever the scale and
// softcap, so an additive mask of sigma_h there gives it the logit
// sigma_h. A kernel's sink path must agree with that key, outputs and
// lse, and both with the certified reference; a row with no visible key
// still outputs 0.
#include <rapidcheck.h>

#include <cmath>

#include "properties/clauses/clauses.hpp"
#include "properties/generators.hpp"
#include "properties/harness.hpp"

namespace attnspec {
namespace {

// The same problem with each sink as key S (k = 0, v = 0) and every
// position rule folded into a full-shape additive mask [B, Hq, L, S + 1]:
// appending a key moves the bottom-right diagonal, so causal masking,
// windows and ALiBi become their -inf and exact biases at the old
// positions; the new key's mask value is the sink (-inf: none).
Problem sink_as_key(const Problem& p) {
  Problem keyed = p;
  const int S = p.dims.kv_len;
  keyed.dims.kv_len = S + 1;
  keyed.sinks.clear();
  keyed.causal = Causal::none;
  keyed.window.reset();
  keyed.alibi.reset();
  keyed.k.clear();
  keyed.v.clear();
  for (int b = 0; b < p.dims.batch; ++b)
    for (int g = 0; g < p.dims.kv_heads; ++g) {
      for (int j = 0; j < S; ++j) {
        const auto k = p.key_row(b, g, j);
        keyed.k.insert(keyed.k.end(), k.begin(), k.end());
      }
      keyed.k.insert(keyed.k.end(), static_cast<std::size_t>(p.dims.d_k), 0.0);
      for (int j = 0; j < S; ++j) {
        const auto v = p.value_row(b, g, j);
        keyed.v.insert(keyed.v.end(), v.begin(), v.end());
      }
      keyed.v.insert(keyed.v.end(), static_cast<std::size_t>(p.dims.d_v), 0.0);
    }
  keyed.mask_kind = MaskKind::additive;
  keyed.mask_batch = p.dims.batch;
  keyed.mask_heads = p.dims.q_heads;
  keyed.mask.clear();
  for (std::size_t row = 0; row < p.rows(); ++row) {
    const RowIndex r = p.row_index(row);
    for (int j = 0; j < S; ++j) keyed.mask.push_back(p.visible(r, j) ? p.logit_offset(r, j) : -INFINITY);
    keyed.mask.push_back(p.sink(r).value_or(-INFINITY));
  }
  return keyed;
}

// "" when the two runs' lse agree within the sum of their bounds (their
// exact values are equal), else a description; `drawn` becomes the run
// whose lse is outside its own bound, so the saved case fails on its own.
std::string lse_disagrees(Problem& drawn, const Problem& pa, const Evaluation& a, const Problem& pb,
                          const Evaluation& b) {
  const auto outside = [](const Evaluation& e, std::size_t row) {
    const double want = e.ref.lse[row], got = e.got.lse[row];
    if (want == -INFINITY) return got != -INFINITY;
    return !within_bound(got, want, e.ref_lse_error[row], e.lse_bound[row]).value_or(true);
  };
  for (std::size_t row = 0; row < pa.rows(); ++row) {
    if (std::isnan(a.ref.lse[row])) continue;  // NANPROP's
    const double x = a.got.lse[row], y = b.got.lse[row];
    const bool agree = x == y || std::fabs(x - y) <= a.lse_bound[row] + b.lse_bound[row];
    if (agree) continue;
    drawn = outside(b, row) && !outside(a, row) ? pb : pa;
    return "lse of row " + std::to_string(row) + ": " + std::to_string(x) + " with sinks, " + std::to_string(y) +
           " with each sink as a key of value 0; they differ by more than the sum of their bounds " +
           std::to_string(a.lse_bound[row] + b.lse_bound[row]);
  }
  return "";
}

}  // namespace

ClauseOutcome check_sink(PropertyContext& context) {
  const double u_out = output_unit(context.kernel);
  const Capabilities caps = context.kernel.capabilities();
  // Sinks always; no additive mask of the draw's own, whose values could
  // not always be summed with ALiBi's biases exactly (ALIBI's reason).
  Features with_sinks;
  with_sinks.always_sinks = true;
  with_sinks.additive_mask = false;
  return run_property(context, [&](Problem& p, ErrorStats& stats) -> std::string {
    p = draw_problem(context.kernel, context.profile, with_sinks);
    const Problem sunk = p;
    const Evaluation base = evaluate(context.kernel, sunk);
    if (std::string f = outside_bound(p, base, u_out, stats); !f.empty()) return f;
    if (!caps.additive_mask) return "";
    const Problem keyed = sink_as_key(sunk);
    const Evaluation as_key = evaluate(context.kernel, keyed);
    if (std::string f = related(p, sunk, base, keyed, as_key, same_index(p.out_size()),
                                "sinks against one more key of logit sigma_h and value 0", u_out, stats);
        !f.empty())
      return f;
    return caps.lse ? lse_disagrees(p, sunk, base, keyed, as_key) : "";
  });
}

}  // namespace attnspec
