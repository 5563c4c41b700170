// GRADLIN and GRADPERM: how exact gradients follow dO and the order of the
// inputs (spec/SPEC.md section 7). Each compares backward runs whose exact
// gradients are related exactly; every value of the kernel is within its
// bound (SPEC 6.11) of its own exact value, so related values differ by at
// most the sum of their bounds.
#include <rapidcheck.h>

#include <cmath>
#include <initializer_list>
#include <string>
#include <vector>

#include "properties/clauses/clauses.hpp"
#include "properties/generators.hpp"
#include "properties/gradient_check.hpp"

namespace attnspec {
namespace {

// The float64 rounding of a comparison formed here, of values of these
// magnitudes.
double comparison_rounding(double magnitudes) { return 0x1p-52 * magnitudes; }

// Of two or three problems whose gradients disagree, the one outside its
// own bounds is the counterexample (one must be: their exact gradients
// are related); `drawn` is kept when none is found.
void keep_failing(Problem& drawn, const std::vector<std::pair<const Problem*, const GradientEvaluation*>>& runs,
                  FormatId output) {
  for (const auto& [problem, evaluation] : runs) {
    ErrorStats ignored;
    if (!gradients_outside_bound(*problem, *evaluation, output, ignored).empty()) {
      drawn = *problem;
      return;
    }
  }
}

// The verdict on kernel values whose exact values are related exactly,
// `difference` being how far they break the relation: "" when it holds
// within `tolerance`, else why not. NaN fails, the draws' exact gradients
// being finite. A value rounded to an infinity near the output format's
// overflow, and so any infinite tolerance, leaves the relation unbounded:
// counted as not judged (GRADPREC judges such values on their own).
std::string relation_broken(std::initializer_list<double> values, double difference, double tolerance, double scale,
                            double u_out, ErrorStats& stats) {
  bool nan = false, infinite = false;
  for (const double v : values) {
    nan = nan || std::isnan(v);
    infinite = infinite || std::isinf(v);
  }
  if (nan) return "NaN where every exact gradient is finite";
  if (infinite || !std::isfinite(tolerance)) {
    stats.add(0, INFINITY, scale, u_out);
    return "";
  }
  stats.add(difference, tolerance, scale, u_out);
  if (difference <= tolerance) return "";
  return "they differ by " + number_text(difference) + ", more than the bounds' " + number_text(tolerance);
}

}  // namespace

// dO split by rows into two parts a and b (the whole is their sum,
// exactly), b's also times c = +-2^k: the gradients of a + c b are those of
// a plus c times those of b. Every gradient is linear in dO (D_i too). A
// kernel whose D, or other state, comes from an earlier call breaks it, and
// so does one far outside its bounds, whose own rounding then exceeds
// them; a wrong formula that is still linear in dO does not (GRADPREC's).
ClauseOutcome check_gradlin(PropertyContext& context) {
  const KernelFormats formats = context.kernel.formats();
  const FormatId output = formats.output;
  const double u_out = format_info(output).unit_roundoff;
  return run_property(context, [&](Problem& p, ErrorStats& stats) -> std::string {
    p = draw_problem(context.kernel, context.profile, backward_features(context.kernel));
    discard_rows_not_declared(context.kernel, p);
    const auto part = *rc::gen::container<std::vector<int>>(p.rows(), rc::gen::inRange(0, 2));
    const double c = (draw_in(0, 1) == 1 ? -1.0 : 1.0) * std::ldexp(1.0, draw_in(-2, 2));
    Problem a = p, b = p, combined = p;
    const auto dv = static_cast<std::size_t>(p.dims.d_v);
    for (std::size_t i = 0; i < p.dout.size(); ++i) {
      if (part[i / dv] == 0) {
        b.dout[i] = 0;
        continue;
      }
      a.dout[i] = 0;
      combined.dout[i] = c * p.dout[i];
      if (round_to_format(combined.dout[i], formats.input) != combined.dout[i])
        throw NothingChecked("c dO leaves the input format's range");
    }
    const GradientEvaluation ea = evaluate_gradients(context.kernel, a), eb = evaluate_gradients(context.kernel, b),
                             ec = evaluate_gradients(context.kernel, combined);
    for (const char name : kGradientTensors) {
      const GradientTensor ta = gradient_tensor(ea, name), tb = gradient_tensor(eb, name),
                           tc = gradient_tensor(ec, name);
      for (std::size_t i = 0; i < tc.got.size(); ++i) {
        const double x = ta.got[i], y = c * tb.got[i], z = tc.got[i];
        const double tolerance = bound_around(ta.before[i], x, output) +
                                 std::fabs(c) * bound_around(tb.before[i], tb.got[i], output) +
                                 bound_around(tc.before[i], z, output) +
                                 comparison_rounding(std::fabs(x) + std::fabs(y) + std::fabs(z));
        const double scale = ta.scale[i] + std::fabs(c) * tb.scale[i] + tc.scale[i];
        const std::string broken =
            relation_broken({x, y, z}, std::fabs(z - x - y), tolerance, scale, u_out, stats);
        if (broken.empty()) continue;
        const std::string what = gradient_element_name(p, name, i) + " is " + number_text(z) + " for dO = a + " +
                                 number_text(c) + " b, but " + number_text(x) + " for a and " +
                                 number_text(tb.got[i]) + " for b: " + broken;
        keep_failing(p, {{&combined, &ec}, {&a, &ea}, {&b, &eb}}, output);
        return what;
      }
    }
    return "";
  });
}

// Query rows (with their dO and mask rows) and keys (with their values
// and mask columns) permuted: dQ's rows and dK's and dV's keys move with
// them, the sinks' gradients stay. Without causal masks, windows and
// ALiBi, which tie logits to positions.
ClauseOutcome check_gradperm(PropertyContext& context) {
  const FormatId output = context.kernel.formats().output;
  const double u_out = format_info(output).unit_roundoff;
  Features features = backward_features(context.kernel);
  features.causal = features.window = features.alibi = false;
  return run_property(context, [&](Problem& p, ErrorStats& stats) -> std::string {
    p = draw_problem(context.kernel, context.profile, features);
    discard_rows_not_declared(context.kernel, p);
    const Dims& d = p.dims;
    const auto L = static_cast<std::size_t>(d.q_len), S = static_cast<std::size_t>(d.kv_len);
    const std::vector<int> queries = draw_permutation(d.q_len), keys = draw_permutation(d.kv_len);
    // Query i of `permuted` is query queries[i] of p; key j is key keys[j].
    Problem permuted = p;
    permuted.q = permute_blocks(p.q, L, static_cast<std::size_t>(d.d_k), queries);
    permuted.dout = permute_blocks(p.dout, L, static_cast<std::size_t>(d.d_v), queries);
    permuted.k = permute_blocks(p.k, S, static_cast<std::size_t>(d.d_k), keys);
    permuted.v = permute_blocks(p.v, S, static_cast<std::size_t>(d.d_v), keys);
    if (p.mask_kind != MaskKind::none) permuted.mask = permute_blocks(permute_blocks(p.mask, L, S, queries), S, 1, keys);
    const Problem original = p;
    const GradientEvaluation before = evaluate_gradients(context.kernel, original),
                             after = evaluate_gradients(context.kernel, permuted);
    for (const char name : kGradientTensors) {
      const GradientTensor mine = gradient_tensor(before, name), moved = gradient_tensor(after, name);
      const auto width = static_cast<std::size_t>(name == 'V' ? d.d_v : d.d_k);
      for (std::size_t i = 0; i < moved.got.size(); ++i) {
        std::size_t from = i;  // the value of `original` that value i of `permuted` must equal
        if (name == 'Q') {
          const RowIndex r = p.row_index(i / width);
          from = p.row_flat({r.batch, r.head, queries[static_cast<std::size_t>(r.query)]}) * width + i % width;
        } else if (name != 'S') {
          const std::size_t block = i / width / S, j = i / width % S;
          from = (block * S + static_cast<std::size_t>(keys[j])) * width + i % width;
        }
        const double x = mine.got[from], y = moved.got[i];
        const double tolerance = bound_around(mine.before[from], x, output) +
                                 bound_around(moved.before[i], y, output);
        const double scale = mine.scale[from] + moved.scale[i];
        const std::string broken = relation_broken({x, y}, std::fabs(x - y), tolerance, scale, u_out, stats);
        if (broken.empty()) continue;
        const std::string what = gradient_element_name(p, name, from) + " is " + number_text(x) + ", and " +
                                 number_text(y) + " with query rows and keys permuted: " + broken;
        keep_failing(p, {{&original, &before}, {&permuted, &after}}, output);
        return what;
      }
    }
    return "";
  });
}

}  // namespace attnspec
