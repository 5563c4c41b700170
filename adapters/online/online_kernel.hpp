// A FlashAttention-style kernel: query and key tiles, online softmax (a
// running max and sum per row, the partial output rescaled when the max
// grows), fp32 accumulation, inputs and output in the named format.
// online-f32, online-bf16, online-f16.
#pragma once

#include <memory>

#include "adapters/kernel.hpp"

namespace attnspec {

struct TileSizes {
  int queries = 16;  // rows of Q per tile
  int keys = 32;     // rows of K and V per tile
};

std::unique_ptr<Kernel> make_online_kernel(FormatId io_format, TileSizes tiles = {});
std::unique_ptr<Kernel> make_online_f32();
std::unique_ptr<Kernel> make_online_bf16();
std::unique_ptr<Kernel> make_online_f16();

}  // namespace attnspec
