// WINDOW: what a sliding window does (spec/SPEC.md sections 2.2 and 7).
// A window is a band of the (query, key) plane, so it must equal that band
// given as an explicit mask; and a key outside a row's band is never read
// for that row, so poisoning it (NaN, infinities, other numbers) changes
// none of the rows that cannot see it.
#include <rapidcheck.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "properties/clauses/clauses.hpp"
#include "properties/generators.hpp"
#include "properties/harness.hpp"

namespace attnspec {
namespace {

// The same problem without its window, the band folded into its mask
// instead: a bool mask where the problem has one (or has none and the
// kernel takes bool masks), else additive {.., -inf}. nullopt when the
// kernel takes no mask at all.
std::optional<Problem> as_explicit_band(const Problem& p, const Capabilities& caps) {
  Problem band = p;
  band.window.reset();
  const auto L = static_cast<std::size_t>(p.dims.q_len), S = static_cast<std::size_t>(p.dims.kv_len);
  if (p.mask_kind == MaskKind::none) {
    if (!caps.bool_mask && !caps.additive_mask) return std::nullopt;
    band.mask_kind = caps.bool_mask ? MaskKind::boolean : MaskKind::additive;
    band.mask_batch = band.mask_heads = 1;
    band.mask.assign(L * S, band.mask_kind == MaskKind::boolean ? 1.0 : 0.0);
  }
  const double blocked = band.mask_kind == MaskKind::boolean ? 0.0 : -INFINITY;
  for (std::size_t row = 0; row < band.mask.size() / S; ++row)
    for (std::size_t j = 0; j < S; ++j)
      if (!p.in_window({0, 0, static_cast<int>(row % L)}, static_cast<int>(j))) band.mask[row * S + j] = blocked;
  return band;
}

}  // namespace

ClauseOutcome check_window(PropertyContext& context) {
  const double u_out = output_unit(context.kernel);
  const Capabilities caps = context.kernel.capabilities();
  const FormatId input = context.kernel.formats().input;
  const bool has_infinity = format_info(input).has_infinity;
  Features with_window;
  with_window.always_window = true;
  return run_property(context, [&](Problem& p, ErrorStats& stats) -> std::string {
    p = draw_problem(context.kernel, context.profile, with_window);
    const int poison = draw_in(0, has_infinity ? 3 : 1);
    const int outside_of = draw_in(0, p.dims.q_len - 1);
    const Problem windowed = p;
    const Evaluation base = evaluate(context.kernel, windowed);
    if (std::string f = outside_bound(p, base, u_out, stats); !f.empty()) return f;

    if (const std::optional<Problem> band = as_explicit_band(windowed, caps)) {
      if (std::string f = related(p, windowed, base, *band, evaluate(context.kernel, *band), same_index(p.out_size()),
                                  "window against its band as an explicit mask", u_out, stats);
          !f.empty())
        return f;
    }

    // Poison the keys outside query `outside_of`'s window, in every head;
    // the rows that see none of them must not change.
    const int S = p.dims.kv_len;
    std::vector<char> poisoned_key(static_cast<std::size_t>(S), 0);
    bool any = false;
    for (int j = 0; j < S; ++j) any |= poisoned_key[static_cast<std::size_t>(j)] = !p.in_window({0, 0, outside_of}, j);
    if (!any) return "";  // this window blocks nothing for that row: the band comparison above was the check
    Problem poisoned = windowed;
    for (int b = 0; b < p.dims.batch; ++b)
      for (int g = 0; g < p.dims.kv_heads; ++g)
        for (int j = 0; j < S; ++j) {
          if (!poisoned_key[static_cast<std::size_t>(j)]) continue;
          const std::size_t row = (static_cast<std::size_t>(b) * p.dims.kv_heads + g) * S + j;
          const auto rewrite = [&](double& x) {
            x = poison == 0   ? round_to_format(-3 * x + 1, input)
                : poison == 1 ? std::numeric_limits<double>::quiet_NaN()
                : poison == 2 ? INFINITY
                              : -INFINITY;
          };
          for (int t = 0; t < p.dims.d_k; ++t) rewrite(poisoned.k[row * p.dims.d_k + t]);
          for (int t = 0; t < p.dims.d_v; ++t) rewrite(poisoned.v[row * p.dims.d_v + t]);
        }
    // Rows that see a poisoned key may change; every other row may not.
    std::vector<std::size_t> index = same_index(p.out_size());
    const auto dv = static_cast<std::size_t>(p.dims.d_v);
    for (std::size_t flat = 0; flat < p.rows(); ++flat) {
      const RowIndex r = p.row_index(flat);
      bool sees_poison = false;
      for (int j = 0; j < S && !sees_poison; ++j) sees_poison = poisoned_key[static_cast<std::size_t>(j)] && p.visible(r, j);
      if (sees_poison) std::fill_n(index.begin() + static_cast<std::ptrdiff_t>(flat * dv), dv, kNotCompared);
    }
    return related(p, windowed, base, poisoned, evaluate(context.kernel, poisoned), index,
                   "keys outside query " + std::to_string(outside_of) +
                       "'s window (which the compared rows cannot see either) rewritten",
                   u_out, stats);
  });
}

}  // namespace attnspec
