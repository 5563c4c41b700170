// libtorch 1.13 (Debian libtorch-dev) as kernels under test: the fused
// entry point at::_scaled_dot_product_attention and the math composition
// at::_scaled_dot_product_attention_math, in float32, float64 and bfloat16
// on the CPU.
#pragma once

#include <span>
#include <string>

#include "adapters/registry.hpp"

namespace attnspec {

std::span<const KernelEntry> libtorch_kernels();
std::string libtorch_version();  // "libtorch 1.13.1"

}  // namespace attnspec
