// Where the online kernel finds the rows of one dense problem or of one
// sequence of a layout (spec/SPEC.md section 2.5), and where it writes
// that sequence's outputs: the index maps of reference/layouts.cpp done
// the way a kernel does them, on the fly, with the layout mutants' bugs
// as options (LayoutBug).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <span>
#include <vector>

#include "adapters/online/online_kernel.hpp"
#include "reference/layouts.hpp"

namespace attnspec {

// Batch entry b of a dense problem.
struct DenseRows {
  const Problem& p;
  int b;
  std::span<const double> query(int h, int i) const { return p.query_row({b, h, i}); }
  std::span<const double> key(int g, int j) const { return p.key_row(b, g, j); }
  std::span<const double> value(int g, int j) const { return p.value_row(b, g, j); }
  bool visible(const Problem& shape, RowIndex r, int j) const { return shape.visible(r, j); }
  std::size_t out_row(int h, int i) const { return p.row_flat({b, h, i}); }
  std::size_t lse_index(int h, int i) const { return p.row_flat({b, h, i}); }
};

// A row of [rows, heads, width] values.
inline std::span<const double> packed_row(const std::vector<double>& values, std::size_t row, int heads, int head,
                                          int width) {
  const auto w = static_cast<std::size_t>(width);
  return {values.data() + (row * static_cast<std::size_t>(heads) + static_cast<std::size_t>(head)) * w, w};
}

// Sequence s of a packed variable-length batch.
class VarlenRows {
 public:
  VarlenRows(const VarlenBatch& batch, int s, LayoutBug bug) : batch_(batch), bug_(bug) {
    const auto at = static_cast<std::size_t>(s);
    q0_ = batch.cu_seqlens_q[at];
    k0_ = batch.cu_seqlens_k[at];
    lengths_ = {batch.cu_seqlens_q[at + 1] - q0_, batch.cu_seqlens_k[at + 1] - k0_};
    if (bug == LayoutBug::varlen_neighbour_key && batch.cu_seqlens_k[at + 1] < batch.k_rows) ++lengths_.kv_len;
  }
  SequenceLengths lengths() const { return lengths_; }
  std::span<const double> query(int h, int i) const { return packed_row(batch_.q, row(q0_ + i), heads(), h, dims().d_k); }
  std::span<const double> key(int g, int j) const { return packed_row(batch_.k, row(k0_ + j), dims().kv_heads, g, dims().d_k); }
  std::span<const double> value(int g, int j) const { return packed_row(batch_.v, row(k0_ + j), dims().kv_heads, g, dims().d_v); }
  bool visible(const Problem& shape, RowIndex r, int j) const {
    if (bug_ != LayoutBug::varlen_packed_alignment || shape.causal != Causal::bottom_right) return shape.visible(r, j);
    const int packed_offset = batch_.cu_seqlens_k.back() - batch_.cu_seqlens_q.back();
    return j <= r.query + packed_offset && shape.in_window(r, j);
  }
  std::size_t out_row(int h, int i) const { return row(q0_ + i) * static_cast<std::size_t>(heads()) + static_cast<std::size_t>(h); }
  std::size_t lse_index(int h, int i) const {
    return static_cast<std::size_t>(h) * static_cast<std::size_t>(batch_.q_rows) + row(q0_ + i);
  }

 private:
  static std::size_t row(int r) { return static_cast<std::size_t>(r); }
  const Dims& dims() const { return batch_.shared.dims; }
  int heads() const { return dims().q_heads; }
  const VarlenBatch& batch_;
  LayoutBug bug_;
  int q0_ = 0, k0_ = 0;
  SequenceLengths lengths_;
};

// Sequence b of a KV cache, contiguous or paged, with its new keys.
class CacheRows {
 public:
  CacheRows(const KvCacheBatch& batch, int b, LayoutBug bug) : batch_(batch), b_(b), bug_(bug) {
    cached_ = batch.cache_seqlens[static_cast<std::size_t>(b)];
    lengths_ = {dims().q_len, cached_ + batch.new_len};
    if (bug == LayoutBug::cache_length_ignored) lengths_.kv_len = batch.capacity();
  }
  SequenceLengths lengths() const { return lengths_; }
  std::span<const double> query(int h, int i) const {
    return packed_row(batch_.q, static_cast<std::size_t>(b_) * static_cast<std::size_t>(dims().q_len) + static_cast<std::size_t>(i),
                      dims().q_heads, h, dims().d_k);
  }
  std::span<const double> key(int g, int j) const { return read(batch_.k_cache, batch_.k_new, g, j, dims().d_k); }
  std::span<const double> value(int g, int j) const { return read(batch_.v_cache, batch_.v_new, g, j, dims().d_v); }
  bool visible(const Problem& shape, RowIndex r, int j) const { return shape.visible(r, j); }
  std::size_t out_row(int h, int i) const {
    return (static_cast<std::size_t>(b_) * static_cast<std::size_t>(dims().q_len) + static_cast<std::size_t>(i)) *
               static_cast<std::size_t>(dims().q_heads) + static_cast<std::size_t>(h);
  }
  std::size_t lse_index(int h, int i) const {
    return (static_cast<std::size_t>(b_) * static_cast<std::size_t>(dims().q_heads) + static_cast<std::size_t>(h)) *
               static_cast<std::size_t>(dims().q_len) + static_cast<std::size_t>(i);
  }

 private:
  const Dims& dims() const { return batch_.shared.dims; }

  // Key j: a cache slot before cache_seqlens[b], a new key from there on
  // (the cache's own slot there when the kernel ignores the length).
  std::span<const double> read(const std::vector<double>& cache, const std::vector<double>& fresh, int g, int j,
                               int width) const {
    int fresh_index = j - cached_;
    if (bug_ == LayoutBug::appended_one_slot_late) {
      if (j == cached_) return slot(cache, j, g, width);  // the stale slot
      --fresh_index;
    }
    if (j < cached_ || fresh_index >= batch_.new_len) return slot(cache, j, g, width);
    return packed_row(fresh, static_cast<std::size_t>(b_) * static_cast<std::size_t>(batch_.new_len) + static_cast<std::size_t>(fresh_index),
                      dims().kv_heads, g, width);
  }

  std::span<const double> slot(const std::vector<double>& cache, int t, int g, int width) const {
    if (!batch_.paged())
      return packed_row(cache, static_cast<std::size_t>(b_) * static_cast<std::size_t>(batch_.slots) + static_cast<std::size_t>(t),
                        dims().kv_heads, g, width);
    const int page_size = bug_ == LayoutBug::page_size_assumed_16 ? 16 : batch_.page_size;
    int entry = std::min(t / page_size, batch_.pages_per_sequence - 1);
    const int last_page = (lengths_.kv_len - 1) / page_size;
    if (bug_ == LayoutBug::block_table_one_page_far && entry == last_page && entry + 1 < batch_.pages_per_sequence) ++entry;
    const int page = batch_.block_table[static_cast<std::size_t>(b_) * static_cast<std::size_t>(batch_.pages_per_sequence) +
                                        static_cast<std::size_t>(entry)];
    const std::size_t row = static_cast<std::size_t>(page) * static_cast<std::size_t>(batch_.page_size) + static_cast<std::size_t>(t % page_size);
    // A wrong page size reads past the pool: what memory holds there is
    // anything; NaN here.
    if (row >= static_cast<std::size_t>(batch_.pages) * static_cast<std::size_t>(batch_.page_size)) return nan_row(width);
    return packed_row(cache, row, dims().kv_heads, g, width);
  }

  static std::span<const double> nan_row(int width) {
    static thread_local std::vector<double> nans;
    if (nans.size() < static_cast<std::size_t>(width)) nans.assign(static_cast<std::size_t>(width), std::numeric_limits<double>::quiet_NaN());
    return {nans.data(), static_cast<std::size_t>(width)};
  }

  const KvCacheBatch& batch_;
  int b_;
  LayoutBug bug_;
  int cached_ = 0;
  SequenceLengths lengths_;
};

}  // namespace attnspec
