// DETERM: the same inputs twice give bitwise identical outputs. Informative:
// the runner reports it and fails the run only when asked to.
#include <bit>
#include <cstdint>

#include "properties/clauses/clauses.hpp"
#include "properties/generators.hpp"
#include "properties/harness.hpp"

namespace attnspec {

ClauseOutcome check_determ(PropertyContext& context) {
  return run_property(context, [&](Problem& p, ErrorStats&) -> std::string {
    p = draw_problem(context.kernel, context.profile, Features{});
    const KernelResult first = context.kernel.run(p), second = context.kernel.run(p);
    for (std::size_t i = 0; i < first.out.size() && i < second.out.size(); ++i)
      if (std::bit_cast<std::uint64_t>(first.out[i]) != std::bit_cast<std::uint64_t>(second.out[i]))
        return element_name(p, i) + " differs between two calls: " + std::to_string(first.out[i]) + " and " +
               std::to_string(second.out[i]);
    return "";
  });
}

}  // namespace attnspec
