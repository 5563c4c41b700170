// libtorch 1.13 (Debian libtorch-dev) as kernels under test:
// at::_scaled_dot_product_attention in float32, float64 and bfloat16 on the
// CPU. There it is the math composition itself (it dispatches through
// _scaled_dot_product_attention_forward to
// _scaled_dot_product_attention_math, as libtorch's own error backtraces
// show), so the composition is not registered a second time.
#pragma once

#include <span>
#include <string>

#include "adapters/registry.hpp"

namespace attnspec {

std::span<const KernelEntry> libtorch_kernels();
std::string libtorch_version();  // "libtorch 1.13.1"

}  // namespace attnspec
