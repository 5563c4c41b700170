// DESCALE: what descale factors are (spec/SPEC.md sections 2.4 and 7):
// exact scalings of the kernel's inputs, one per (batch, kv head) and
// tensor, which a query head reads through its kv head. A kernel's outputs
// must be within B_t of the certified reference of the real inputs (factors
// that differ between q, k and v and between every (b, g), so a factor
// dropped, swapped or read at a query head's index shows), and two exact
// laws must hold between its own runs: q's factor times 2^e with k's times
// 2^-e is the same problem, and v's factor times 2^e scales every output by
// 2^e.
#include <rapidcheck.h>

#include <cmath>

#include "properties/clauses/clauses.hpp"
#include "properties/generators.hpp"
#include "properties/harness.hpp"

namespace attnspec {
namespace {

// e's results as those of a problem whose outputs are `factor` (a power of
// two) times e's: exact in double, far from its range's ends.
Evaluation outputs_times(Evaluation e, double factor) {
  for (std::vector<double>* values : {&e.got.out, &e.ref.out, &e.ref_low, &e.ref_error, &e.bound, &e.tight, &e.scale})
    for (double& x : *values) x *= factor;
  return e;
}

}  // namespace

ClauseOutcome check_descale(PropertyContext& context) {
  const double u_out = output_unit(context.kernel);
  Features with_descales;
  with_descales.always_descales = true;
  return run_property(context, [&](Problem& p, ErrorStats& stats) -> std::string {
    p = draw_problem(context.kernel, context.profile, with_descales);
    if (!p.descales) throw NothingChecked("no descales drawn: the kernel's inputs have more than 29 bits (SPEC 2.4)");
    const int e = draw_in(1, 3) * (draw_in(0, 1) == 1 ? -1 : 1);
    const Problem drawn = p;
    const Evaluation base = evaluate(context.kernel, drawn);
    if (std::string f = outside_bound(p, base, u_out, stats); !f.empty()) return f;
    // The factors stay float32 values > 0: draw_descales keeps them within
    // [2^-9, 2^4], so 2^+-3 leaves them normal.
    Problem moved = drawn;
    for (double& x : moved.descales->q) x = std::ldexp(x, e);
    for (double& x : moved.descales->k) x = std::ldexp(x, -e);
    if (std::string f = related(p, drawn, base, moved, evaluate(context.kernel, moved), same_index(p.out_size()),
                                "q's descales times 2^" + std::to_string(e) + ", k's times 2^" + std::to_string(-e),
                                u_out, stats);
        !f.empty())
      return f;
    Problem scaled = drawn;
    for (double& x : scaled.descales->v) x = std::ldexp(x, e);
    const Evaluation scaled_run = evaluate(context.kernel, scaled);
    return related(p, drawn, base, scaled, outputs_times(scaled_run, std::ldexp(1.0, -e)), same_index(p.out_size()),
                   "v's descales times 2^" + std::to_string(e) + ", outputs times 2^" + std::to_string(-e), u_out,
                   stats);
  });
}

}  // namespace attnspec
