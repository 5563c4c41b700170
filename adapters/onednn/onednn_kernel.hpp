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
std::string onednn_version();  // e.g. "oneDNN 2.6.3"

}  // namespace attnspec
