// The backward mutants: online-f32 (forward correct) whose FlashAttention 2
// backward (adapters/online/online_backward.hpp) has one bug each, of the
// classes issue 14 lists from real backward kernels. Only the gradient
// clauses can see them.
#include <array>

#include "adapters/mutants/mutants.hpp"
#include "adapters/online/online_kernel.hpp"

namespace attnspec {
namespace {

#define ATTNSPEC_BACKWARD_MUTANT(BUG, NAME, TEXT, CLAUSE) \
  MutantEntry { NAME, TEXT, CLAUSE, [] { return make_online_f32_with_backward_bug(NAME, BackwardBug::BUG); } }

}  // namespace

std::span<const MutantEntry> backward_mutant_kernels() {
  static const std::array kBackwardMutants = {
      ATTNSPEC_BACKWARD_MUTANT(d_left_out, "mutant-backward-d-left-out", "backward: dS = P dP, the row term D left out",
                               "GRADSUM"),
      ATTNSPEC_BACKWARD_MUTANT(ds_without_scale, "mutant-backward-ds-unscaled", "backward: dS not multiplied by the scale",
                               "GRADPREC"),
      ATTNSPEC_BACKWARD_MUTANT(dk_last_query_head, "mutant-backward-gqa-last-head",
                               "backward: a kv head's dK from its last query head only, not summed over its group",
                               "GRADPREC"),
      ATTNSPEC_BACKWARD_MUTANT(causal_missing, "mutant-backward-causal-missing",
                               "backward: causal masking left out (the forward has it)", "GRADPREC"),
      ATTNSPEC_BACKWARD_MUTANT(softcap_derivative_missing, "mutant-backward-softcap-derivative",
                               "backward: dS without the softcap's derivative 1 - tanh^2", "GRADPREC"),
      ATTNSPEC_BACKWARD_MUTANT(dv_unnormalised, "mutant-backward-dv-unnormalised",
                               "backward: dV from exp(x - max), the unnormalised weights", "GRADSUM"),
      ATTNSPEC_BACKWARD_MUTANT(stale_max, "mutant-backward-stale-max",
                               "backward: P recomputed from the first 32-key tile's maximum, not the lse", "GRADPREC"),
      ATTNSPEC_BACKWARD_MUTANT(accumulate_bf16, "mutant-backward-accumulate-bf16",
                               "backward: dQ, dK and dV accumulated in bfloat16 under a float32 claim", "GRADPREC"),
      ATTNSPEC_BACKWARD_MUTANT(blocked_keys_read, "mutant-backward-blocked-read",
                               "backward: blocked keys read with P = 0, so NaN there leaks through 0 * NaN", "GRADMASK"),
  };
  return kBackwardMutants;
}

#undef ATTNSPEC_BACKWARD_MUTANT

}  // namespace attnspec
