// DETERM and GRADDETERM: the same inputs twice give bitwise identical
// outputs, and gradients. Informative: the runner reports them and fails
// the run only when asked to (--strict-determinism; FlashAttention's
// deterministic=True is that promise for the backward).
#include <bit>
#include <cstdint>

#include "properties/clauses/clauses.hpp"
#include "properties/generators.hpp"
#include "properties/gradient_check.hpp"
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

// Atomic accumulation of dK and dV across query blocks (FlashAttention 2's
// default backward, cuDNN's) orders its sums differently from run to run.
ClauseOutcome check_graddeterm(PropertyContext& context) {
  return run_property(context, [&](Problem& p, ErrorStats&) -> std::string {
    p = draw_problem(context.kernel, context.profile, backward_features(context.kernel));
    discard_rows_not_declared(context.kernel, p);
    const GradientOutputs first = context.kernel.run_backward(p), second = context.kernel.run_backward(p);
    const std::pair<const std::vector<double>*, const std::vector<double>*> tensors[] = {
        {&first.dq, &second.dq}, {&first.dk, &second.dk}, {&first.dv, &second.dv}, {&first.dsink, &second.dsink}};
    for (std::size_t n = 0; n < std::size(tensors); ++n) {
      const auto& [a, b] = tensors[n];
      if (a->size() != b->size()) return "two calls returned different numbers of gradient values";
      for (std::size_t i = 0; i < a->size(); ++i)
        if (std::bit_cast<std::uint64_t>((*a)[i]) != std::bit_cast<std::uint64_t>((*b)[i]))
          return gradient_element_name(p, kGradientTensors[n], i) + " differs between two calls: " +
                 number_text((*a)[i]) + " and " + number_text((*b)[i]);
    }
    return "";
  });
}

}  // namespace attnspec
