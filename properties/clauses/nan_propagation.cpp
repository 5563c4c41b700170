// NANPROP: a NaN or infinity at a visible input reaches exactly the outputs
// that depend on it (spec/SPEC.md sections 2.3 and 7): the certified
// reference says which outputs are NaN; the kernel must make those
// non-finite and keep every other output within its bound.
#include <rapidcheck.h>

#include <cmath>
#include <limits>

#include "properties/clauses/clauses.hpp"
#include "properties/generators.hpp"
#include "properties/harness.hpp"

namespace attnspec {

ClauseOutcome check_nanprop(PropertyContext& context) {
  const double u_out = output_unit(context.kernel);
  const bool has_infinity = format_info(context.kernel.formats().input).has_infinity;
  return run_property(context, [&](Problem& p, ErrorStats& stats) -> std::string {
    p = draw_problem(context.kernel, context.profile, Features{});
    // An infinity only without softcap: IEEE tanh(inf) = 1 would hide it,
    // a corner where section 2.3 and common kernels part ways.
    const bool infinity = has_infinity && !p.softcap && (draw_in(0, 1) == 1);
    const double poison = infinity ? INFINITY : std::numeric_limits<double>::quiet_NaN();
    if (draw_in(0, 1) == 1) {
      p.q[static_cast<std::size_t>(draw_in(0, static_cast<int>(p.q.size()) - 1))] = poison;  // spoils one query row
    } else {
      p.v[static_cast<std::size_t>(draw_in(0, static_cast<int>(p.v.size()) - 1))] = poison;  // spoils one value column
    }
    const Evaluation e = evaluate(context.kernel, p);
    for (std::size_t i = 0; i < e.got.out.size(); ++i)
      if (std::isnan(e.ref.out[i]) && std::isfinite(e.got.out[i]))
        return element_name(p, i) + " depends on the non-finite input but is " + std::to_string(e.got.out[i]);
    return outside_bound(p, e, u_out, stats);  // every other output as usual
  });
}

}  // namespace attnspec
