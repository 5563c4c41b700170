// FlashAttention 2's backward pass on the CPU (Dao 2023, Algorithm 2), the
// backward of online-f32, online-bf16 and online-f16: P recomputed from the
// forward's saved lse, D from dO and the forward's stored output, P and dS
// converted to the input format for their products (as the tensor-core
// kernels do), everything accumulated in float32; and the backward mutants,
// each with one bug of a class real backward kernels had (issue 14).
#pragma once

#include "adapters/kernel.hpp"

namespace attnspec {

enum class BackwardBug {
  none,
  d_left_out,                  // dS = P dP: the row term D missing
  ds_without_scale,            // dS not multiplied by the scale
  dk_last_query_head,          // GQA: a kv head's dK from its last query head only, not the sum
  causal_missing,              // the backward ignores causal masking
  softcap_derivative_missing,  // dS without the factor 1 - tanh^2
  dv_unnormalised,             // dV from exp(x - max), not exp(x - lse)
  stale_max,                   // P from the first key tile's maximum and the final denominator
  accumulate_bf16,             // dQ, dK, dV accumulated in bfloat16 (a float32 claim)
  blocked_keys_read,           // every key of the row read, blocked ones with P = 0: 0 * NaN leaks
};

// `forward` is the kernel's own forward result for p (its output and lse);
// P and dS are rounded to `storage`, the gradients to `output`.
GradientOutputs flash_backward(const Problem& p, const KernelResult& forward, FormatId storage, FormatId output,
                               BackwardBug bug = BackwardBug::none);

}  // namespace attnspec
