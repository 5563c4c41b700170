// Emulations of kernel styles that papers measure, for reproducing their
// tables (README, "FlashAttention-3, Table 3"). composed-f16 and
// composed-bf16 are the "baseline attention" of FlashAttention-3: the
// textbook composition of framework tensor operations, each result stored
// in the 16-bit format (logits, softmax weights, output), with float32
// arithmetic inside each operation. Their FlashAttention-style counterparts
// are the built-in online-f16 and online-bf16 (float32 softmax and
// accumulation throughout); flash-f16 and flash-bf16 are FlashAttention-2/3
// as their GPU kernels round it, with the weight tile converted to 16 bits
// for the P V product (flash_tile_kernel.cpp). Not part of `--kernel builtin`.
#pragma once

#include <memory>
#include <span>

#include "adapters/registry.hpp"

namespace attnspec {

std::span<const KernelEntry> emulated_kernels();

std::unique_ptr<Kernel> make_composed_f16();
std::unique_ptr<Kernel> make_composed_bf16();

// Keys per tile of flash-f16 and flash-bf16 (FlashAttention-2's forward
// pass uses 64 or 128 depending on d and the GPU).
constexpr int kFlashTileKeys = 128;
std::unique_ptr<Kernel> make_flash_f16();
std::unique_ptr<Kernel> make_flash_bf16();

}  // namespace attnspec
