// A FlashAttention-style kernel: query and key tiles, online softmax (a
// running max and sum per row, the partial output rescaled when the max
// grows), fp32 accumulation, inputs and output in the named format.
// online-f32, online-bf16, online-f16, and the fp8 variant below.
#pragma once

#include <memory>
#include <string>

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

// FlashAttention 3's fp8 forward pass: e4m3fn inputs with descales,
// 128-row by 128-key tiles, online softmax in float32, each unnormalised
// weight times 256 rounded to e4m3fn for P V (the row sum from the
// unrounded weights), bfloat16 output. online-fp8.
inline constexpr TileSizes kFlash3Fp8Tiles{128, 128};
KernelFormats fp8_formats();  // e4m3fn in, float32, bfloat16 out, weights e4m3fn times 256
std::unique_ptr<Kernel> make_online_fp8();
// The same kernel, declaring fp8_formats(), but multiplying P by
// `applied_scale` before the rounding: the fp8 mutants.
std::unique_ptr<Kernel> make_online_fp8_with_weights_scale(std::string name, double applied_scale);

}  // namespace attnspec
