// The llama.cpp ggml adapter: ggml_flash_attn_ext on the CPU, the attention
// of every llama.cpp user (ollama, LM Studio), from the prebuilt libraries
// of the npm package @node-llama-cpp/linux-x64 (one pinned version,
// adapters/ggml/package.json). The package ships libggml-base.so and one
// libggml-cpu-<variant>.so per x86-64 CPU family; each variant is its own
// kernel here ("ggml-<variant>-kv-f16", "ggml-<variant>-kv-f32"), loaded
// with dlopen, and NOT AVAILABLE where its ggml_backend_score() says this
// CPU cannot run it.
//
// The mapping onto ggml (its header's layout comments):
//   q    [d_k, L, Hq, B]   float32 (ggml converts it to K's dot type, F16
//                          for F16 keys)
//   k    [d_k, S, Hkv, B]  F16 or F32, the kernel's key/value type
//   v    [d_v, S, Hkv, B]  likewise, not transposed
//   mask [S, L, Hq, B]     F16 (the only type ggml takes): 0 for a
//                          visible key, -inf for a blocked one (bool masks,
//                          causal masking and windows folded in), and, for
//                          the F16 kernels, the additive mask's values;
//                          with ALiBi, the bias over ggml's slope for the
//                          head, with max_bias as alibi_slopes.hpp says
//   out  [d_v, Hq, L, B]   float32, read back permuted to [B, Hq, L, d_v]
// with scale, logit_softcap and sinks (ggml_flash_attn_ext_add_sinks) as
// ggml's own arguments; query head h reads kv head h / (Hq / Hkv) as in
// the spec. The F32 kernels take no additive mask: ggml would round its
// values to F16, which would be this adapter's error, not ggml's.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "adapters/registry.hpp"

namespace attnspec {

std::span<const KernelEntry> ggml_kernels();

// Deliberately wrong copies of the glue above, for tests/ggml_glue_test.cpp
// only (never registered): each must fail the clause that guards its part
// of the mapping, so that a mapping bug cannot hide behind a PASS.
enum class GgmlGlueFault {
  none,
  dropped_scale,     // ggml gets 1/sqrt(d_k) whatever the problem's scale: SCALE
  inverted_bool_mask,  // a bool mask's true read as blocked: MASKBOOL
  transposed_keys,   // K filled as [d_k, Hkv, S, B] instead of [d_k, S, Hkv, B]: BATCH
  alibi_top_left,    // ALiBi distances from the top-left diagonal whatever the alignment: ALIBI
};
// The kernel "ggml-<variant>-kv-f16" (kv_f16) or "-kv-f32" with the glue fault.
std::unique_ptr<Kernel> make_ggml_kernel(const std::string& variant, bool kv_f16, GgmlGlueFault fault);
// "llama.cpp ggml (npm @node-llama-cpp/linux-x64 <version>)".
std::string ggml_version();

}  // namespace attnspec
