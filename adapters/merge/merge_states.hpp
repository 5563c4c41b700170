// The built-in kernels' merge operator (Kernel::merge, spec/SPEC.md
// section 6.10), normalised as vLLM's merge_attn_states: the largest lse
// m, weights exp(lse_i - m), the output sum_i w_i o_i / sum_i w_i and the
// lse m + ln sum_i w_i, all in the accumulation type; the output rounded to
// the output format. Normalising keeps the error a matter of the parts'
// distances from the output (the tight tier's model, SPEC 6.8), which
// FlashAttention's combine (weights exp(lse_i - lse), no division) does
// not: its weights' float32 rounding errs by about u |lse| times |o|. With
// a MergeBug, one bug of a class real merges had.
#pragma once

#include "adapters/kernel.hpp"
#include "formats/format.hpp"
#include "reference/merge.hpp"

namespace attnspec {

enum class MergeBug {
  none,
  no_max_shift,     // exp(lse_i) unshifted: overflows once an lse passes ln of the largest finite number
  empty_split_nan,  // no guard for a row every part of which is empty: exp(-inf - (-inf)) is NaN (FlashInfer #4451)
};

// Accumulation in float (float32) or double (float64).
template <class Accumulate>
KernelResult merge_states(const MergeInput& input, FormatId output, MergeBug bug = MergeBug::none);

extern template KernelResult merge_states<float>(const MergeInput&, FormatId, MergeBug);
extern template KernelResult merge_states<double>(const MergeInput&, FormatId, MergeBug);

}  // namespace attnspec
