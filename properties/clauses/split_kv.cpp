// SPLITKV: a split-KV kernel computes a row over disjoint key sets and
// merges the parts through their lse (spec/SPEC.md section 6.9). For a
// kernel that returns its lse, its output over all the keys must agree
// with the exact merge of its own outputs and lse over a split of them,
// within B_t + M_t: outputs and lse are checked against each other, as a
// split-KV kernel relies on. Parts in which a row sees no key (lse -inf)
// must contribute nothing.
#include <rapidcheck.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "properties/clauses/clauses.hpp"
#include "properties/generators.hpp"
#include "properties/harness.hpp"

namespace attnspec {
namespace {

// The keys [first, last) of p as a problem of its own: the K and V rows
// and the mask's columns; nothing else of p depends on key positions
// (SPLITKV draws no causal masking, window or ALiBi) or belongs to a
// part (no sinks).
Problem key_part(const Problem& p, int first, int last) {
  Problem part = p;
  const Dims& d = p.dims;
  const auto S = static_cast<std::size_t>(d.kv_len), n = static_cast<std::size_t>(last - first);
  part.dims.kv_len = last - first;
  const auto rows_of = [&](const std::vector<double>& from, std::size_t width) {
    std::vector<double> to;
    for (std::size_t row = 0; row < from.size() / (S * width); ++row)
      to.insert(to.end(), from.begin() + static_cast<std::ptrdiff_t>((row * S + first) * width),
                from.begin() + static_cast<std::ptrdiff_t>((row * S + first + n) * width));
    return to;
  };
  part.k = rows_of(p.k, static_cast<std::size_t>(d.d_k));
  part.v = rows_of(p.v, static_cast<std::size_t>(d.d_v));
  if (p.mask_kind != MaskKind::none) part.mask = rows_of(p.mask, 1);
  return part;
}

// The merge of section 6.9 for one row: outputs, lse and the bound M_t
// plus the binary64 allowance, from the parts' results and bounds.
struct Merged {
  std::vector<double> out, bound;
  double lse = -INFINITY, lse_bound = 0;
};

Merged merge_row(const std::vector<Evaluation>& parts, std::size_t row, std::size_t dv) {
  Merged m;
  m.out.assign(dv, 0.0);
  m.bound.assign(dv, 0.0);
  double top = -INFINITY, E = 0;
  for (const Evaluation& e : parts)
    if (e.got.lse[row] != -INFINITY) {
      top = std::max(top, e.got.lse[row]);
      E = std::max(E, e.lse_bound[row]);
    }
  if (top == -INFINITY) return m;  // every part empty: the row with no visible key
  double sum = 0;
  for (const Evaluation& e : parts) sum += e.got.lse[row] == -INFINITY ? 0.0 : std::exp(e.got.lse[row] - top);
  m.lse = top + std::log(sum);
  m.lse_bound = E;
  const double growth = std::expm1(2 * E) * std::exp(2 * E);
  for (const Evaluation& e : parts) {
    if (e.got.lse[row] == -INFINITY) continue;
    const double a = std::exp(e.got.lse[row] - m.lse);
    for (std::size_t t = 0; t < dv; ++t) {
      const double o = e.got.out[row * dv + t], B = e.bound[row * dv + t];
      m.out[t] += a * o;
      // 0 * inf (a part's weight underflowed to 0 beside an infinite bound
      // or growth) is NaN, which no difference is within: where a part's
      // bound is infinite the merged one is too, and the element is
      // counted as not judged (quick profile, seed 9, online-fp8).
      const double term = a * B + growth * a * (std::fabs(o) + B) + 16 * 0x1p-53 * a * std::fabs(o);
      m.bound[t] += std::isnan(term) ? INFINITY : term;
    }
  }
  return m;
}

}  // namespace

ClauseOutcome check_splitkv(PropertyContext& context) {
  const double u_out = output_unit(context.kernel);
  Features positionless;  // a part's keys keep their order but not their positions
  positionless.causal = positionless.window = positionless.alibi = false;
  positionless.sinks = false;  // a sink belongs to one part only, which a kernel's problem cannot say
  return run_property(context, [&](Problem& p, ErrorStats& stats) -> std::string {
    p = draw_problem(context.kernel, context.profile, positionless, [](Dims& d) { d.kv_len = std::max(d.kv_len, 2); });
    // 2-4 parts: cut points drawn as three rolls whatever S, so that the
    // draws keep their places when S shrinks.
    std::array<int, 3> rolls{};
    for (int& roll : rolls) roll = draw_in(0, 1 << 20);
    const int parts_wanted = draw_in(2, 4);
    const int S = p.dims.kv_len;
    std::vector<int> cuts{0, S};
    // S >= 2 as drawn, but not always after shrinking (quick profile,
    // seed 10: an integer division by zero); S = 1 leaves one part.
    for (int k = 0; k + 1 < parts_wanted; ++k)
      cuts.push_back(1 + rolls[static_cast<std::size_t>(k)] % std::max(1, S - 1));
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());

    const Evaluation whole = evaluate(context.kernel, p);
    if (std::string f = outside_bound(p, whole, u_out, stats); !f.empty()) return f;
    std::vector<Problem> problems;
    std::vector<Evaluation> parts;
    for (std::size_t k = 0; k + 1 < cuts.size(); ++k) {
      problems.push_back(key_part(p, cuts[k], cuts[k + 1]));
      parts.push_back(evaluate(context.kernel, problems.back()));
      ErrorStats ignored;
      // A part outside its own bound is the counterexample: it fails alone.
      std::string f = outside_bound(problems.back(), parts.back(), u_out, ignored);
      if (f.empty()) f = lse_outside_bound(parts.back());
      if (!f.empty()) {
        p = problems.back();
        return "keys " + std::to_string(cuts[k]) + "-" + std::to_string(cuts[k + 1] - 1) + " alone: " + f;
      }
    }
    std::string split = "split at keys";
    for (std::size_t k = 1; k + 1 < cuts.size(); ++k) {
      split += ' ';
      split += std::to_string(cuts[k]);
    }
    const auto dv = static_cast<std::size_t>(p.dims.d_v);
    for (std::size_t row = 0; row < p.rows(); ++row) {
      const Merged m = merge_row(parts, row, dv);
      for (std::size_t t = 0; t < dv; ++t) {
        const std::size_t i = row * dv + t;
        if (std::isnan(whole.ref.out[i])) continue;  // NaN semantics are NANPROP's
        const double tolerance = whole.bound[i] + m.bound[t], difference = std::fabs(whole.got.out[i] - m.out[t]);
        stats.add(difference, tolerance, whole.scale[i], u_out);
        if (!(difference <= tolerance))
          return split + ": " + element_name(p, i) + " is " + std::to_string(whole.got.out[i]) +
                 ", the merge of the parts' outputs and lse " + std::to_string(m.out[t]) + "; they differ by " +
                 std::to_string(difference) + ", more than B + M = " + std::to_string(tolerance);
      }
      if (std::isnan(whole.ref.lse[row])) continue;
      const double lse = whole.got.lse[row];
      const bool agree = m.lse == -INFINITY ? lse == -INFINITY
                                            : std::fabs(lse - m.lse) <= whole.lse_bound[row] + m.lse_bound + 8 * 0x1p-53 * std::fabs(m.lse);
      if (!agree)
        return split + ": lse of row " + std::to_string(row) + " is " + std::to_string(lse) +
               ", the merge of the parts' lse " + std::to_string(m.lse);
    }
    return "";
  });
}

}  // namespace attnspec
