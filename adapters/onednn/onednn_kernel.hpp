// The oneDNN adapter's kernels: attention composed from oneDNN primitives the
// way a framework would build it on a CPU engine, in f32 ("onednn-f32") or
// with bf16 inputs, intermediates and output ("onednn-bf16"). See
// onednn_kernel.cpp for the composition and the glue the adapter adds.
#pragma once

#include <span>
#include <string>

#include "adapters/registry.hpp"

namespace attnspec {

std::span<const KernelEntry> onednn_kernels();

// oneDNN 2.6.3's AMX kernels (ISA avx512_core_amx) die of SIGILL (at
// tdpbf16ps) on this project's AMX machines, in bf16 matmuls of the quick
// profile already; one libdnnl serves the oneDNN adapter and libtorch's
// bf16 products alike. On a CPU with AMX, and unless ONEDNN_MAX_CPU_ISA (or
// DNNL_MAX_CPU_ISA) says otherwise, oneDNN is capped at avx512_core_bf16
// before anything uses it; code paths say so. Idempotent; called when the
// third-party kernels register and by every use of oneDNN here.
void apply_onednn_isa_policy();
// "" or why oneDNN was capped (for code-path descriptions).
std::string onednn_isa_policy_note();
std::string onednn_version();  // e.g. "oneDNN 2.6.3"

}  // namespace attnspec
