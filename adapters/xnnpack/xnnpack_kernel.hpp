// The XNNPACK adapter (Debian libxnnpack-dev, a 2022 snapshot). XNNPACK has
// no attention operator, so "xnnpack-f32" composes attention per head from
// the library's own float32 operators:
//
//   logits = fully-connected nc f32 (input Q [L, d_k], weights K [S, d_k])
//   glue   = scale, softcap, mask (see below), in float32
//   P      = softmax nc f32 over each row of S logits
//   out    = fully-connected nc f32 (input P [L, S], weights V [S, d_v]
//            read as transposed weights, XNN_FLAG_TRANSPOSE_WEIGHTS)
//
// Glue done by the adapter, since XNNPACK's operators offer none of it:
// multiplying the logits by the scale (1/sqrt(d_k) rounded to float32 when
// none is given); the softcap c*tanh(x/c) in float32; setting a blocked key's
// logit to -inf (bool mask false, additive -inf, causal top_left or
// bottom_right) and adding a finite additive mask value in float32; mapping
// query head h to kv head h / (Hq/Hkv) for GQA. The matmuls and the softmax,
// including what they do with rows of -inf and with NaN, are XNNPACK's.
// No log-sum-exp: XNNPACK's softmax does not expose it.
//
// Seen with this snapshot and left as the library does it: a NaN result of
// either operator comes out as -inf (softmax of a row of -inf gives -inf
// weights, so a fully masked row outputs -inf; 0 * NaN from a blocked NaN
// value in the dense P V gives -inf too), and the operators flush subnormal
// inputs and results to zero.
#pragma once

#include <span>
#include <string>

#include "adapters/registry.hpp"

namespace attnspec {

std::span<const KernelEntry> xnnpack_kernels();
// "XNNPACK (Debian libxnnpack0 <version>)"; XNNPACK itself has no version call.
std::string xnnpack_version();

}  // namespace attnspec
