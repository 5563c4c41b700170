// How serving kernels hold their inputs (spec/SPEC.md section 2.5): packed
// variable-length batches and KV caches, contiguous or paged. Each layout
// is a map onto the dense function of section 2: sequence b of a batch is
// the dense problem `sequences_of` returns, so the certified reference, the
// clauses and the precision model apply to it unchanged. The packers build
// a layout from a dense problem (the clauses' direction); the maps and
// `split_result` go back (the specification's direction).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "reference/problem.hpp"

namespace attnspec {

// What every sequence of a batch shares: heads, head sizes, scale, softcap,
// causal masking, window, ALiBi (slopes [B, Hq] give sequence b row b) and
// sinks. A Problem whose tensors are empty, with no mask and no descales
// (the layouts carry neither); dims.batch is the number of sequences,
// dims.q_len and dims.kv_len are not read.
using SharedOptions = Problem;

struct SequenceLengths {
  int q_len = 0;   // L_b >= 0
  int kv_len = 0;  // S_b >= 0
  bool operator==(const SequenceLengths&) const = default;
};

// FlashAttention's flash_attn_varlen_func: sequences packed one after the
// other along the first axis. Sequence b's queries are rows
// cu_seqlens_q[b] .. cu_seqlens_q[b+1]-1 of q, its keys and values rows
// cu_seqlens_k[b] .. cu_seqlens_k[b+1]-1 of k and v. Rows after the last
// sequence are padding: they belong to no sequence and must not matter.
// The output is [q_rows, Hq, d_v] (padding rows not read), the lse
// [Hq, q_rows] (FlashAttention's varlen softmax_lse).
struct VarlenBatch {
  SharedOptions shared;
  std::vector<int> cu_seqlens_q;  // [B + 1]: 0, then non-decreasing
  std::vector<int> cu_seqlens_k;  // [B + 1]
  int q_rows = 0;                 // >= cu_seqlens_q[B]
  int k_rows = 0;                 // >= cu_seqlens_k[B]
  std::vector<double> q;          // [q_rows, Hq, d_k]
  std::vector<double> k;          // [k_rows, Hkv, d_k]
  std::vector<double> v;          // [k_rows, Hkv, d_v]
};

// FlashAttention's flash_attn_with_kvcache: every sequence has L queries
// (shared.dims.q_len) placed after its keys; its keys are cache slots
// 0 .. cache_seqlens[b]-1 followed by new_len new keys (k_new, v_new),
// which the kernel appends at slot cache_seqlens[b]: S_b =
// cache_seqlens[b] + new_len. The cache is contiguous ([B, slots, Hkv, d])
// or paged ([pages, page_size, Hkv, d], slot t of sequence b in page
// block_table[b][t / page_size] at row t % page_size). Slots and pages no
// sequence reads must not matter. The output is [B, L, Hq, d_v], the lse
// [B, Hq, L].
struct KvCacheBatch {
  SharedOptions shared;
  std::vector<double> q;           // [B, L, Hq, d_k]
  std::vector<int> cache_seqlens;  // [B]
  int new_len = 0;                 // keys appended per sequence
  std::vector<double> k_new;       // [B, new_len, Hkv, d_k]
  std::vector<double> v_new;       // [B, new_len, Hkv, d_v]
  int page_size = 0;               // 0: a contiguous cache of `slots` slots per sequence
  int slots = 0;                   // contiguous: slots per sequence
  int pages = 0;                   // paged: pages in the pool
  int pages_per_sequence = 0;      // paged: columns of the block table
  std::vector<int> block_table;    // paged: [B, pages_per_sequence]
  std::vector<double> k_cache;     // [B, slots, Hkv, d_k] or [pages, page_size, Hkv, d_k]
  std::vector<double> v_cache;     // [B, slots, Hkv, d_v] or [pages, page_size, Hkv, d_v]

  bool paged() const { return page_size > 0; }
  // Slots a sequence can hold: `slots`, or pages_per_sequence * page_size.
  int capacity() const { return paged() ? pages_per_sequence * page_size : slots; }
};

// One sequence of a batch as the dense function sees it: its lengths and,
// when both are >= 1, its dense problem (batch 1). A sequence with no keys
// has rows with no visible key (output 0, lse as SPEC 2.3); one with no
// queries has nothing to output.
struct Sequence {
  SequenceLengths lengths;
  std::optional<Problem> problem;
};

// Sequence b's dense problem without its tensors: batch 1, its own L and
// S, the shared options (per-sequence ALiBi slopes taken from row b).
Problem sequence_shape(const SharedOptions& shared, int b, SequenceLengths lengths);

// Empty when the layout is well-formed, else one message per problem found,
// naming the field ("cu_seqlens_q: expected non-decreasing offsets, got 3
// after 5 at index 2").
std::vector<std::string> validate(const VarlenBatch& batch);
std::vector<std::string> validate(const KvCacheBatch& batch);

// The dense problems of SPEC 2.5 (std::invalid_argument for a batch that
// does not validate).
std::vector<Sequence> sequences_of(const VarlenBatch& batch);
std::vector<Sequence> sequences_of(const KvCacheBatch& batch);

// Outputs and lse in one layout or another (a kernel's result).
struct Outputs {
  std::vector<double> out;
  std::vector<double> lse;  // empty: none
};

// A result in a layout's arrangement cut into one dense result per
// sequence (out [1, Hq, L_b, d_v], lse [1, Hq, L_b] when the result has
// one); std::runtime_error naming the size expected when it is wrong.
std::vector<Outputs> split_result(const VarlenBatch& batch, const Outputs& result);
std::vector<Outputs> split_result(const KvCacheBatch& batch, const Outputs& result);

// The inverse of split_result: one dense result per sequence (out [1,
// Hq, L_b, d_v], lse [1, Hq, L_b]) into the layout's arrangement; places
// no sequence owns (varlen padding rows) hold NaN.
Outputs join_results(const VarlenBatch& batch, std::span<const Outputs> parts);
Outputs join_results(const KvCacheBatch& batch, std::span<const Outputs> parts);

// Sizes of a layout's result: outputs, lse values.
std::size_t output_size(const VarlenBatch& batch);
std::size_t output_size(const KvCacheBatch& batch);
std::size_t lse_size(const VarlenBatch& batch);
std::size_t lse_size(const KvCacheBatch& batch);

// The packers. Sequence b is batch entry b of `dense` (no mask, no
// descales) cut to its first lengths[b].q_len queries and first
// lengths[b].kv_len keys; `filler` fills every place no sequence reads.
VarlenBatch pack_varlen(const Problem& dense, std::span<const SequenceLengths> lengths, int padding_q_rows,
                        int padding_k_rows, double filler);

// How a KV cache holds its keys: contiguous with `spare_slots` unused slots
// after the longest sequence, or paged with `page_size` rows a page, the
// pages of the pool in the order `page_order` (a permutation of the pool's
// pages, which has `spare_pages` pages no sequence uses; empty: in order).
struct CacheLayout {
  int page_size = 0;  // 0: contiguous
  int spare_slots = 0;
  int spare_pages = 0;
  std::vector<int> page_order;
  bool operator==(const CacheLayout&) const = default;
};

// Sequence b is batch entry b of `dense` with all its dense.dims.q_len
// queries and its first kv_lens[b] keys, of which the last new_len come as
// new keys (kv_lens[b] >= new_len).
KvCacheBatch pack_kv_cache(const Problem& dense, std::span<const int> kv_lens, int new_len, const CacheLayout& cache,
                           double filler);

// The options of `dense` shared by the sequences of a layout (tensors
// dropped); std::invalid_argument when it has a mask or descales.
SharedOptions shared_options_of(const Problem& dense);

// How a dense problem is laid out: the packers' arguments, which a case
// file holds as its "layout" (spec/SPEC.md section 4), so that a
// counterexample of VARLEN, KVCACHE or PAGED reproduces. The places no
// sequence reads hold NaN.
enum class LayoutKind { varlen, kv_cache };
std::string_view to_string(LayoutKind kind);  // "varlen", "kv_cache"

struct LayoutRecipe {
  LayoutKind kind = LayoutKind::varlen;
  std::vector<int> q_lens;  // varlen: [B], each 0..L
  std::vector<int> kv_lens;  // [B], each 0..S (kv_cache: >= new_len)
  int padding_q_rows = 0;    // varlen
  int padding_k_rows = 0;    // varlen
  int new_len = 0;           // kv_cache
  CacheLayout cache;         // kv_cache
  bool operator==(const LayoutRecipe&) const = default;
};

// Empty when `recipe` can lay `dense` out, else one message per problem,
// naming the field ("layout.kv_lens[1]: expected an integer in 0..9, got
// 12"; "layout.page_order: expected a permutation of 0..5").
std::vector<std::string> validate(const LayoutRecipe& recipe, const Problem& dense);
// The pages a paged recipe's pool holds: its sequences' pages and the spare
// ones, at least one.
int pool_pages(const LayoutRecipe& recipe);

VarlenBatch lay_out_varlen(const Problem& dense, const LayoutRecipe& recipe);
KvCacheBatch lay_out_kv_cache(const Problem& dense, const LayoutRecipe& recipe);

}  // namespace attnspec
