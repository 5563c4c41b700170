// A FlashAttention-style kernel: query and key tiles, online softmax (a
// running max and sum per row, the partial output rescaled when the max
// grows), fp32 accumulation, inputs and output in the named format.
// online-f32, online-bf16, online-f16, and the fp8 variant below.
#pragma once

#include <memory>
#include <string>

#include "adapters/kernel.hpp"
#include "adapters/merge/merge_states.hpp"
#include "adapters/online/online_backward.hpp"

namespace attnspec {

struct TileSizes {
  int queries = 16;  // rows of Q per tile
  int keys = 32;     // rows of K and V per tile
  // Split-KV: keys in splits of this many (a multiple of `keys`), reduced
  // from each split's maximum, sum and normalised output (vLLM's paged
  // attention v2); 0: one pass.
  int split_keys = 0;
};

std::unique_ptr<Kernel> make_online_kernel(FormatId io_format, TileSizes tiles = {});

// How the online kernel reads a layout of SPEC 2.5 (adapters/online/
// layout_rows.hpp): correctly, or with one bug of a class real serving
// kernels had (shared/ANCHORS.md; the layout mutants).
enum class LayoutBug {
  none,
  varlen_neighbour_key,      // sequence b reads keys through cu_seqlens_k[b + 1]: its neighbour's first key
  varlen_packed_alignment,   // bottom-right causal offset of the packed totals, not of the sequence
  cache_length_ignored,      // attends every slot of the cache, not cache_seqlens[b] of them
  appended_one_slot_late,    // new keys read one slot after cache_seqlens[b]: a stale slot, the last new key lost
  block_table_one_page_far,  // a sequence's last page read from the next block-table entry
  page_size_assumed_16,      // slot t read from page t / 16, row t % 16, whatever the page size
};
// online-f32 reading its layouts with `bug`, named `name`.
std::unique_ptr<Kernel> make_online_f32_with_layout_bug(std::string name, LayoutBug bug);
// online-f32 whose merge operator has `bug` (adapters/merge/merge_states.hpp).
std::unique_ptr<Kernel> make_online_f32_with_merge_bug(std::string name, MergeBug bug);
// online-f32, online-bf16 and online-f16 have FlashAttention 2's backward
// (adapters/online/online_backward.hpp), P and dS stored in the input
// format.
std::unique_ptr<Kernel> make_online_f32();
// online-f32 in split-KV mode: 64-key splits of 32-key tiles, float32
// partials reduced from their maxima and sums. online-f32-splitkv.
std::unique_ptr<Kernel> make_online_f32_splitkv();
std::unique_ptr<Kernel> make_online_bf16();
std::unique_ptr<Kernel> make_online_f16();
// online-f32 whose backward has `bug`: the backward mutants.
std::unique_ptr<Kernel> make_online_f32_with_backward_bug(std::string name, BackwardBug bug);

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
