// PERMQ, PERMKV, LINV, GQA and BATCH: how outputs follow the structure of
// the inputs (spec/SPEC.md section 7). Each compares two or more runs whose
// exact results are related exactly, within the sum of their bounds.
#include <rapidcheck.h>

#include <algorithm>
#include <cmath>

#include "properties/clauses/clauses.hpp"
#include "properties/generators.hpp"
#include "properties/harness.hpp"

namespace attnspec {
namespace {

// Causal masking, windows and ALiBi tie the logits to positions, which
// PERMQ and PERMKV move.
Features without_position_rules() {
  Features f;
  f.causal = f.window = f.alibi = false;
  return f;
}

}  // namespace

ClauseOutcome check_permq(PropertyContext& context) {
  const double u_out = output_unit(context.kernel);
  return run_property(context, [&](Problem& p, ErrorStats& stats) {
    p = draw_problem(context.kernel, context.profile, without_position_rules());
    const int L = p.dims.q_len;
    const std::vector<int> order = draw_permutation(L);
    Problem permuted = p;  // query i of `permuted` is query order[i] of p
    permuted.q = permute_blocks(p.q, static_cast<std::size_t>(L), static_cast<std::size_t>(p.dims.d_k), order);
    if (p.mask_kind != MaskKind::none)
      permuted.mask = permute_blocks(p.mask, static_cast<std::size_t>(L), static_cast<std::size_t>(p.dims.kv_len), order);
    const Problem original = p;
    const Evaluation a = evaluate(context.kernel, original), b = evaluate(context.kernel, permuted);
    std::vector<std::size_t> index(p.out_size());
    const auto dv = static_cast<std::size_t>(p.dims.d_v);
    std::vector<int> inverse(static_cast<std::size_t>(L));
    for (int i = 0; i < L; ++i) inverse[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])] = i;
    for (std::size_t flat = 0; flat < p.out_size(); ++flat) {
      const RowIndex r = p.row_index(flat / dv);
      const RowIndex moved{r.batch, r.head, inverse[static_cast<std::size_t>(r.query)]};
      index[flat] = p.row_flat(moved) * dv + flat % dv;
    }
    return related(p, original, a, permuted, b, index, "permuted query rows", u_out, stats);
  });
}

ClauseOutcome check_permkv(PropertyContext& context) {
  const double u_out = output_unit(context.kernel);
  return run_property(context, [&](Problem& p, ErrorStats& stats) {
    p = draw_problem(context.kernel, context.profile, without_position_rules());
    const int S = p.dims.kv_len;
    const std::vector<int> order = draw_permutation(S);
    Problem permuted = p;
    permuted.k = permute_blocks(p.k, static_cast<std::size_t>(S), static_cast<std::size_t>(p.dims.d_k), order);
    permuted.v = permute_blocks(p.v, static_cast<std::size_t>(S), static_cast<std::size_t>(p.dims.d_v), order);
    if (p.mask_kind != MaskKind::none)
      permuted.mask = permute_blocks(p.mask, static_cast<std::size_t>(S), 1, order);
    const Problem original = p;
    return related(p, original, evaluate(context.kernel, original), permuted, evaluate(context.kernel, permuted),
                   same_index(p.out_size()), "keys, values and mask columns permuted together", u_out, stats);
  });
}

ClauseOutcome check_linv(PropertyContext& context) {
  const double u_out = output_unit(context.kernel);
  const FormatId input = context.kernel.formats().input;
  return run_property(context, [&](Problem& p, ErrorStats& stats) -> std::string {
    p = draw_problem(context.kernel, context.profile, Features{});
    Problem second = p;
    second.v = draw_values(p.v.size(), input, Distribution::small_integers);
    const int power = draw_in(-2, 2);
    // V1 + a V2 rounded to the input format (full-precision V1 rarely
    // leaves room): out is linear in V with weights summing to 1, so the
    // rounding moves each output by at most the largest rounding error.
    Problem combined = p;
    double rounding = 0;
    for (std::size_t i = 0; i < p.v.size(); ++i) {
      const double exact = p.v[i] + std::ldexp(second.v[i], power);
      combined.v[i] = round_to_format(exact, input);
      rounding = std::max(rounding, std::fabs(combined.v[i] - exact));
    }
    if (!std::isfinite(rounding)) throw NothingChecked("V1 + a V2 overflows the input format");
    if (p.descales)  // the real values are these times v's descales
      rounding *= *std::max_element(p.descales->v.begin(), p.descales->v.end());
    const Evaluation a = evaluate(context.kernel, p), b = evaluate(context.kernel, second), c = evaluate(context.kernel, combined);
    const double factor = std::ldexp(1.0, power);
    for (std::size_t i = 0; i < p.out_size(); ++i) {
      const double difference = std::fabs(c.got.out[i] - a.got.out[i] - factor * b.got.out[i]);
      // Plus the float64 rounding of the combination formed here (of the
      // finite outputs: a NaN output fails by its difference, and would
      // otherwise make the reported tolerance NaN too).
      const auto size = [](double x) { return std::isfinite(x) ? std::fabs(x) : 0.0; };
      const double tolerance = c.bound[i] + a.bound[i] + factor * b.bound[i] + rounding +
                               0x1p-52 * (size(c.got.out[i]) + size(a.got.out[i]) + factor * size(b.got.out[i]));
      stats.add(difference, tolerance, c.scale[i] + a.scale[i] + factor * b.scale[i], u_out);
      if (!(difference <= tolerance)) {
        ErrorStats ignored;
        if (!outside_bound(second, b, u_out, ignored).empty()) p = second;
        else if (!outside_bound(combined, c, u_out, ignored).empty()) p = combined;
        return element_name(p, i) + ": out(V1 + 2^" + std::to_string(power) + " V2) - out(V1) - 2^" + std::to_string(power) +
               " out(V2) = " + std::to_string(difference) + " exceeds the sum of bounds " + std::to_string(tolerance);
      }
    }
    return "";
  });
}

ClauseOutcome check_gqa(PropertyContext& context) {
  const double u_out = output_unit(context.kernel);
  return run_property(context, [&](Problem& p, ErrorStats& stats) {
    // Hkv >= 2: with one kv head, h / (Hq/Hkv) and ONNX's old h % Hkv agree.
    p = draw_problem(context.kernel, context.profile, Features{}, [](Dims& d) {
      const int group = std::max(2, d.q_heads / d.kv_heads);
      d.kv_heads = std::max(2, d.kv_heads);
      d.q_heads = d.kv_heads * group;
    });
    const Problem repeated = repeat_kv_heads(p);
    const Problem grouped = p;
    return related(p, grouped, evaluate(context.kernel, grouped), repeated, evaluate(context.kernel, repeated),
                   same_index(p.out_size()), "grouped heads against K and V repeated per query head", u_out, stats);
  });
}

ClauseOutcome check_batch(PropertyContext& context) {
  const double u_out = output_unit(context.kernel);
  const bool gqa = context.kernel.capabilities().gqa;
  return run_property(context, [&](Problem& p, ErrorStats& stats) -> std::string {
    p = draw_problem(context.kernel, context.profile, Features{}, [gqa](Dims& d) {
      d.batch = std::max(2, d.batch);
      if (d.q_heads < 2) {
        d.kv_heads = gqa ? 1 : 2;
        d.q_heads = 2;
      }
    });
    const Evaluation whole = evaluate(context.kernel, p);
    const auto L = static_cast<std::size_t>(p.dims.q_len), S = static_cast<std::size_t>(p.dims.kv_len),
               dv = static_cast<std::size_t>(p.dims.d_v);
    // p without its tensors, copied for each (b, h): copying p whole each
    // time made this clause quadratic in the number of heads.
    Problem shell = p;
    shell.q.clear();
    shell.k.clear();
    shell.v.clear();
    shell.mask.clear();
    shell.dout.clear();
    for (int b = 0; b < p.dims.batch; ++b)
      for (int h = 0; h < p.dims.q_heads; ++h) {
        Problem alone = shell;  // batch entry b, query head h, by itself
        alone.dims.batch = alone.dims.q_heads = alone.dims.kv_heads = 1;
        for (int i = 0; i < p.dims.q_len; ++i) {
          const auto q = p.query_row({b, h, i});
          alone.q.insert(alone.q.end(), q.begin(), q.end());
        }
        for (int j = 0; j < p.dims.kv_len; ++j) {
          const auto k = p.key_row(b, p.kv_head_of(h), j);
          const auto v = p.value_row(b, p.kv_head_of(h), j);
          alone.k.insert(alone.k.end(), k.begin(), k.end());
          alone.v.insert(alone.v.end(), v.begin(), v.end());
        }
        if (p.mask_kind != MaskKind::none) {
          alone.mask_batch = alone.mask_heads = 1;
          alone.mask.clear();
          const std::size_t mb = p.mask_batch == 1 ? 0 : static_cast<std::size_t>(b);
          const std::size_t mh = p.mask_heads == 1 ? 0 : static_cast<std::size_t>(h);
          const auto first = p.mask.begin() + static_cast<std::ptrdiff_t>((mb * p.mask_heads + mh) * L * S);
          alone.mask.assign(first, first + static_cast<std::ptrdiff_t>(L * S));
        }
        if (p.alibi) {  // the slope of (b, h) alone
          const std::size_t slope = (p.alibi->per_batch ? static_cast<std::size_t>(b) * p.dims.q_heads : 0) + h;
          alone.alibi->slopes = {p.alibi->slopes[slope]};
          alone.alibi->per_batch = false;
        }
        if (!p.sinks.empty()) alone.sinks = {p.sinks[static_cast<std::size_t>(h)]};
        if (p.descales) {
          const int g = p.kv_head_of(h), Hkv = p.dims.kv_heads;
          alone.descales = Descales{{p.descales->q_of(b, g, Hkv)},
                                    {p.descales->k_of(b, g, Hkv)},
                                    {p.descales->v_of(b, g, Hkv)},
                                    p.descales->applied};
        }
        std::vector<std::size_t> index(L * dv);
        const std::size_t offset = p.row_flat({b, h, 0}) * dv;
        // `disagree` maps outputs of its first argument: here the lone run.
        for (std::size_t i = 0; i < index.size(); ++i) index[i] = offset + i;
        // (related may assign p = p: a self-assignment, which is safe.)
        if (std::string f = related(p, alone, evaluate(context.kernel, alone), p, whole, index,
                                    "batch " + std::to_string(b) + ", head " + std::to_string(h) + " run alone",
                                    u_out, stats);
            !f.empty())
          return f;
      }
    return "";
  });
}

}  // namespace attnspec
