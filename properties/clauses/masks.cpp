// MASKBOOL, MASKADD, MASKNAN, CAUSAL, FULLMASK and GRADMASK: what masks do
// (spec/SPEC.md section 7), in the forward and the backward. Blocked keys whose contents are changed are blocked for every
// query of every head, so their K and V rows may be rewritten freely.
#include <rapidcheck.h>

#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "properties/clauses/clauses.hpp"
#include "properties/generators.hpp"
#include "properties/gradient_check.hpp"
#include "properties/harness.hpp"
#include "spec/precision_model.hpp"

namespace attnspec {
namespace {

// A bool mask [1, 1, L, S] whose last `blocked` keys are blocked for every
// row, plus random further blocks. Returns the first fully blocked key.
int add_padding_mask(Problem& p) {
  const int S = p.dims.kv_len;
  const int first_blocked = draw_in(0, S - 1);
  p.mask_kind = MaskKind::boolean;
  p.mask_batch = p.mask_heads = 1;
  p.causal = Causal::none;
  p.mask.assign(static_cast<std::size_t>(p.dims.q_len) * S, 1.0);
  IntegerSource source(p.mask.size());
  for (int i = 0; i < p.dims.q_len; ++i)
    for (int j = 0; j < S; ++j)
      if (j >= first_blocked || source.in(0, 4) == 4) p.mask[static_cast<std::size_t>(i) * S + j] = 0.0;
  return first_blocked;
}

// How many values rewrite_blocked rewrites.
std::size_t blocked_values(const Problem& p, int first) {
  return static_cast<std::size_t>(p.dims.batch) * p.dims.kv_heads * (p.dims.kv_len - first) * (p.dims.d_k + p.dims.d_v);
}

// Rewrites K and V rows of keys >= first with `fill(old value)`.
template <typename Fill>
void rewrite_blocked(Problem& p, int first, Fill fill) {
  const int S = p.dims.kv_len;
  for (int b = 0; b < p.dims.batch; ++b)
    for (int g = 0; g < p.dims.kv_heads; ++g)
      for (int j = first; j < S; ++j) {
        const std::size_t row = (static_cast<std::size_t>(b) * p.dims.kv_heads + g) * S + j;
        for (int t = 0; t < p.dims.d_k; ++t) fill(p.k[row * p.dims.d_k + t]);
        for (int t = 0; t < p.dims.d_v; ++t) fill(p.v[row * p.dims.d_v + t]);
      }
}

Features without_masks() {
  Features f;
  f.bool_mask = f.additive_mask = f.causal = false;
  return f;
}

}  // namespace

ClauseOutcome check_maskbool(PropertyContext& context) {
  const double u_out = output_unit(context.kernel);
  const FormatId input = context.kernel.formats().input;
  const bool additive = context.kernel.capabilities().additive_mask;
  return run_property(context, [&](Problem& p, ErrorStats& stats) -> std::string {
    p = draw_problem(context.kernel, context.profile, without_masks());
    const int first = add_padding_mask(p);
    const Evaluation base = evaluate(context.kernel, p);
    Problem changed = p;
    IntegerSource source(blocked_values(changed, first));
    rewrite_blocked(changed, first, [&](double& x) { x = round_to_format(-3 * x + source.in(-4, 4), input); });
    const Evaluation other = evaluate(context.kernel, changed);
    const Problem original = p;
    if (std::string f = related(p, original, base, changed, other, same_index(p.out_size()),
                                "changed blocked keys and values", u_out, stats);
        !f.empty())
      return f;
    if (!additive) return "";
    Problem as_additive = p;
    as_additive.mask_kind = MaskKind::additive;
    for (double& m : as_additive.mask) m = m != 0 ? 0.0 : -INFINITY;
    return related(p, original, base, as_additive, evaluate(context.kernel, as_additive), same_index(p.out_size()),
                   "bool mask against additive {0, -inf}", u_out, stats);
  });
}

ClauseOutcome check_maskadd(PropertyContext& context) {
  const double u_out = output_unit(context.kernel);
  Features additive_only = Features{};
  additive_only.bool_mask = false;
  return run_property(context, [&](Problem& p, ErrorStats& stats) {
    p = draw_problem(context.kernel, context.profile, additive_only);
    if (p.mask_kind != MaskKind::additive) {
      p.mask_kind = MaskKind::additive;
      p.mask_batch = p.mask_heads = 1;
      p.mask.resize(static_cast<std::size_t>(p.dims.q_len) * p.dims.kv_len);
      IntegerSource source(p.mask.size());
      for (double& m : p.mask) m = source.in(0, 5) == 5 ? -INFINITY : std::ldexp(source.in(-8, 8), -2);
    }
    return outside_bound(p, evaluate(context.kernel, p), u_out, stats);
  });
}

ClauseOutcome check_masknan(PropertyContext& context) {
  const double u_out = output_unit(context.kernel);
  const bool has_infinity = format_info(context.kernel.formats().input).has_infinity;
  return run_property(context, [&](Problem& p, ErrorStats& stats) -> std::string {
    p = draw_problem(context.kernel, context.profile, without_masks());
    const int first = add_padding_mask(p);
    const Evaluation clean = evaluate(context.kernel, p);
    const int poison = draw_in(0, has_infinity ? 2 : 0);
    const double value = poison == 0   ? std::numeric_limits<double>::quiet_NaN()
                         : poison == 1 ? INFINITY
                                       : -INFINITY;
    const Problem original = p;
    Problem poisoned = p;
    rewrite_blocked(poisoned, first, [&](double& x) { x = value; });
    return related(p, original, clean, poisoned, evaluate(context.kernel, poisoned), same_index(p.out_size()),
                   "NaN or Inf written at blocked keys and values", u_out, stats);
  });
}

// The backward of a problem whose blocked keys hold NaN or an infinity is
// the clean problem's (SPEC 2.6: blocked positions are never read), their
// own dK and dV exactly 0: GRADPREC's rule on the poisoned problem, whose
// certified gradients are the clean ones.
ClauseOutcome check_gradmask(PropertyContext& context) {
  const FormatId output = context.kernel.formats().output;
  const bool has_infinity = format_info(context.kernel.formats().input).has_infinity;
  Features features = without_masks();
  features.backward = true;
  features.descales = false;
  features.fully_masked_rows = context.kernel.capabilities().fully_masked_rows;
  return run_property(context, [&](Problem& p, ErrorStats& stats) -> std::string {
    p = draw_problem(context.kernel, context.profile, features);
    const int first = add_padding_mask(p);
    const int poison = draw_in(0, has_infinity ? 2 : 0);
    const double value = poison == 0   ? std::numeric_limits<double>::quiet_NaN()
                         : poison == 1 ? INFINITY
                                       : -INFINITY;
    rewrite_blocked(p, first, [&](double& x) { x = value; });
    discard_rows_not_declared(context.kernel, p);
    return gradients_outside_bound(p, evaluate_gradients(context.kernel, p), output, stats);
  });
}

ClauseOutcome check_causal(PropertyContext& context) {
  const double u_out = output_unit(context.kernel);
  const Capabilities caps = context.kernel.capabilities();
  return run_property(context, [&](Problem& p, ErrorStats& stats) {
    p = draw_problem(context.kernel, context.profile, Features{}, [](Dims& d) {
      if (d.q_len == d.kv_len) d.kv_len += 1;  // L != S (adjust functions do not draw)
    });
    const bool top_left = caps.causal_top_left && (!caps.causal_bottom_right || (draw_in(0, 1) == 1));
    p.causal = top_left ? Causal::top_left : Causal::bottom_right;
    return outside_bound(p, evaluate(context.kernel, p), u_out, stats);
  });
}

ClauseOutcome check_fullmask(PropertyContext& context) {
  const bool lse = context.kernel.capabilities().lse;
  const bool bool_masks = context.kernel.capabilities().bool_mask;
  const FormatClass formats = format_class(context.kernel.formats());
  return run_property(context, [&](Problem& p, ErrorStats&) -> std::string {
    p = draw_problem(context.kernel, context.profile, without_masks());
    add_padding_mask(p);
    const int row = draw_in(0, p.dims.q_len - 1);
    for (int j = 0; j < p.dims.kv_len; ++j) p.mask[static_cast<std::size_t>(row) * p.dims.kv_len + j] = 0.0;
    if (!bool_masks) {  // the same mask as {0, -inf} (ONNX Runtime's GroupQueryAttention has no other)
      p.mask_kind = MaskKind::additive;
      for (double& m : p.mask) m = m == 1.0 ? 0.0 : -INFINITY;
    }
    const KernelResult got = context.kernel.run(p);
    if (got.out.size() != p.out_size()) return "kernel returned the wrong number of outputs";
    const auto dv = static_cast<std::size_t>(p.dims.d_v);
    for (std::size_t flat = 0; flat < p.rows(); ++flat) {
      const RowIndex r = p.row_index(flat);
      bool any_visible = false;
      for (int j = 0; j < p.dims.kv_len && !any_visible; ++j) any_visible = p.visible(r, j);
      if (any_visible) continue;
      for (std::size_t t = 0; t < dv; ++t)
        if (got.out[flat * dv + t] != 0.0)
          return element_name(p, flat * dv + t) + " of a fully masked row is " + std::to_string(got.out[flat * dv + t]) +
                 ", expected exactly 0";
      if (!lse || got.lse.size() != p.rows()) continue;
      // -inf, or the row's sink: exact, but for its conversion to the
      // accumulation format (the LSE bound of the row, SPEC 6.6).
      const std::optional<double> sink = p.sink(r);
      if (!sink && got.lse[flat] != -INFINITY)
        return "lse of a fully masked row is " + std::to_string(got.lse[flat]) + ", expected -inf";
      if (!sink) continue;
      const std::vector<double> weights(static_cast<std::size_t>(p.dims.kv_len), 0.0), out(dv, 0.0);
      const RowBound bound = precision_bound(p, r, formats, weights, out, *sink);
      if (!(std::fabs(got.lse[flat] - *sink) <= bound.lse))
        return "lse of a fully masked row is " + std::to_string(got.lse[flat]) + ", expected its sink " +
               std::to_string(*sink) + " (within " + std::to_string(bound.lse) + ")";
    }
    return "";
  });
}

}  // namespace attnspec
