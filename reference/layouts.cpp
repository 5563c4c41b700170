// The layouts of spec/SPEC.md section 2.5 as maps onto dense problems, and
// the packers that lay dense problems out.
#include "reference/layouts.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

namespace attnspec {
namespace {

std::size_t product(std::initializer_list<std::size_t> factors) {
  return std::accumulate(factors.begin(), factors.end(), std::size_t{1}, std::multiplies<>());
}
std::size_t to_size(int value) { return static_cast<std::size_t>(value); }

// The errors of the shared options, checked as a dense problem of one
// query and one key per sequence would be.
void validate_shared(const SharedOptions& shared, std::vector<std::string>& errors) {
  if (shared.mask_kind != MaskKind::none) errors.push_back("mask: the layouts carry no mask (SPEC 2.5)");
  if (shared.descales) errors.push_back("descales: the layouts carry no descale factors (SPEC 2.5)");
  Problem probe = shared;
  probe.mask_kind = MaskKind::none;
  probe.descales.reset();
  probe.dims.q_len = probe.dims.kv_len = 1;
  const Dims& d = probe.dims;
  if (d.batch >= 1 && d.q_heads >= 1 && d.kv_heads >= 1 && d.d_k >= 1 && d.d_v >= 1) {
    probe.q.assign(product({to_size(d.batch), to_size(d.q_heads), to_size(d.d_k)}), 0.0);
    probe.k.assign(product({to_size(d.batch), to_size(d.kv_heads), to_size(d.d_k)}), 0.0);
    probe.v.assign(product({to_size(d.batch), to_size(d.kv_heads), to_size(d.d_v)}), 0.0);
  }
  for (std::string& e : validate(probe)) errors.push_back(std::move(e));
}

void validate_offsets(const std::vector<int>& offsets, int sequences, int rows, const char* name, const char* rows_name,
                      std::vector<std::string>& errors) {
  if (offsets.size() != to_size(sequences) + 1) {
    errors.push_back(std::string(name) + ": expected " + std::to_string(sequences + 1) + " offsets ([B + 1]), got " +
                     std::to_string(offsets.size()));
    return;
  }
  if (offsets[0] != 0) errors.push_back(std::string(name) + ": expected 0 at index 0, got " + std::to_string(offsets[0]));
  for (std::size_t b = 1; b < offsets.size(); ++b)
    if (offsets[b] < offsets[b - 1]) {
      errors.push_back(std::string(name) + ": expected non-decreasing offsets, got " + std::to_string(offsets[b]) +
                       " after " + std::to_string(offsets[b - 1]) + " at index " + std::to_string(b));
      return;
    }
  if (offsets.back() > rows)
    errors.push_back(std::string(name) + ": the last offset " + std::to_string(offsets.back()) + " is past the " +
                     std::to_string(rows) + " rows of " + rows_name);
}

void validate_size(const std::vector<double>& values, std::size_t expected, const std::string& name,
                   std::vector<std::string>& errors) {
  if (values.size() != expected)
    errors.push_back(name + ": expected " + std::to_string(expected) + " values, got " + std::to_string(values.size()));
}

}  // namespace

Problem sequence_shape(const SharedOptions& shared, int b, SequenceLengths lengths) {
  Problem p = shared;
  p.dims.batch = 1;
  p.dims.q_len = lengths.q_len;
  p.dims.kv_len = lengths.kv_len;
  if (p.alibi && p.alibi->per_batch) {
    const auto heads = static_cast<std::ptrdiff_t>(shared.dims.q_heads);
    p.alibi->slopes.assign(shared.alibi->slopes.begin() + b * heads, shared.alibi->slopes.begin() + (b + 1) * heads);
    p.alibi->per_batch = false;
  }
  return p;
}

namespace {

// The dense problem of one sequence, its rows read through the layout:
// query_at(h, i), key_at(g, j) and value_at(g, j) give the first element
// of each row.
template <class QueryAt, class KeyAt, class ValueAt>
Sequence dense_sequence(const SharedOptions& shared, int b, SequenceLengths lengths, QueryAt query_at, KeyAt key_at,
                        ValueAt value_at) {
  Sequence s{lengths, std::nullopt};
  if (lengths.q_len < 1 || lengths.kv_len < 1) return s;
  Problem p = sequence_shape(shared, b, lengths);
  const Dims& d = p.dims;
  p.q.resize(product({to_size(d.q_heads), to_size(d.q_len), to_size(d.d_k)}));
  p.k.resize(product({to_size(d.kv_heads), to_size(d.kv_len), to_size(d.d_k)}));
  p.v.resize(product({to_size(d.kv_heads), to_size(d.kv_len), to_size(d.d_v)}));
  for (int h = 0; h < d.q_heads; ++h)
    for (int i = 0; i < d.q_len; ++i)
      std::copy_n(query_at(h, i), d.d_k, p.q.begin() + static_cast<std::ptrdiff_t>((to_size(h) * d.q_len + i) * d.d_k));
  for (int g = 0; g < d.kv_heads; ++g)
    for (int j = 0; j < d.kv_len; ++j) {
      const std::size_t row = to_size(g) * d.kv_len + j;
      std::copy_n(key_at(g, j), d.d_k, p.k.begin() + static_cast<std::ptrdiff_t>(row * d.d_k));
      std::copy_n(value_at(g, j), d.d_v, p.v.begin() + static_cast<std::ptrdiff_t>(row * d.d_v));
    }
  s.problem = std::move(p);
  return s;
}

void require_valid(const std::vector<std::string>& errors, const char* what) {
  if (errors.empty()) return;
  std::string message = std::string(what) + ": " + errors.front();
  for (std::size_t i = 1; i < errors.size(); ++i) message += "; " + errors[i];
  throw std::invalid_argument(message);
}

void require_size(const std::vector<double>& values, std::size_t expected, const char* what) {
  if (values.size() != expected)
    throw std::runtime_error(std::string("kernel returned ") + std::to_string(values.size()) + " " + what +
                             ", expected " + std::to_string(expected));
}

}  // namespace

SharedOptions shared_options_of(const Problem& dense) {
  if (dense.mask_kind != MaskKind::none) throw std::invalid_argument("layouts carry no mask (SPEC 2.5)");
  if (dense.descales) throw std::invalid_argument("layouts carry no descale factors (SPEC 2.5)");
  SharedOptions shared = dense;
  shared.q.clear();
  shared.k.clear();
  shared.v.clear();
  shared.mask.clear();
  return shared;
}

std::vector<std::string> validate(const VarlenBatch& batch) {
  std::vector<std::string> errors;
  validate_shared(batch.shared, errors);
  if (!errors.empty()) return errors;
  const Dims& d = batch.shared.dims;
  if (batch.q_rows < 0 || batch.k_rows < 0) return {"q_rows, k_rows: expected integers >= 0"};
  validate_offsets(batch.cu_seqlens_q, d.batch, batch.q_rows, "cu_seqlens_q", "q", errors);
  validate_offsets(batch.cu_seqlens_k, d.batch, batch.k_rows, "cu_seqlens_k", "k and v", errors);
  validate_size(batch.q, product({to_size(batch.q_rows), to_size(d.q_heads), to_size(d.d_k)}), "q [rows, Hq, d_k]", errors);
  validate_size(batch.k, product({to_size(batch.k_rows), to_size(d.kv_heads), to_size(d.d_k)}), "k [rows, Hkv, d_k]", errors);
  validate_size(batch.v, product({to_size(batch.k_rows), to_size(d.kv_heads), to_size(d.d_v)}), "v [rows, Hkv, d_v]", errors);
  return errors;
}

std::vector<std::string> validate(const KvCacheBatch& batch) {
  std::vector<std::string> errors;
  validate_shared(batch.shared, errors);
  if (!errors.empty()) return errors;
  const Dims& d = batch.shared.dims;
  const std::size_t B = to_size(d.batch), L = to_size(d.q_len);
  if (batch.new_len < 0) errors.push_back("new_len: expected an integer >= 0, got " + std::to_string(batch.new_len));
  if (batch.page_size < 0 || batch.page_size > 256)
    errors.push_back("page_size: expected 0 (contiguous) or 1 to 256, got " + std::to_string(batch.page_size));
  if (!errors.empty()) return errors;
  validate_size(batch.q, product({B, L, to_size(d.q_heads), to_size(d.d_k)}), "q [B, L, Hq, d_k]", errors);
  validate_size(batch.k_new, product({B, to_size(batch.new_len), to_size(d.kv_heads), to_size(d.d_k)}),
                "k_new [B, new_len, Hkv, d_k]", errors);
  validate_size(batch.v_new, product({B, to_size(batch.new_len), to_size(d.kv_heads), to_size(d.d_v)}),
                "v_new [B, new_len, Hkv, d_v]", errors);
  const std::size_t rows = batch.paged() ? product({to_size(std::max(batch.pages, 0)), to_size(batch.page_size)})
                                         : product({B, to_size(std::max(batch.slots, 0))});
  const char* shape = batch.paged() ? "[pages, page_size, Hkv, " : "[B, slots, Hkv, ";
  validate_size(batch.k_cache, rows * to_size(d.kv_heads) * to_size(d.d_k), std::string("k_cache ") + shape + "d_k]", errors);
  validate_size(batch.v_cache, rows * to_size(d.kv_heads) * to_size(d.d_v), std::string("v_cache ") + shape + "d_v]", errors);
  if (batch.cache_seqlens.size() != B) {
    errors.push_back("cache_seqlens: expected " + std::to_string(B) + " lengths ([B]), got " +
                     std::to_string(batch.cache_seqlens.size()));
    return errors;
  }
  if (batch.paged() && batch.block_table.size() != B * to_size(std::max(batch.pages_per_sequence, 0)))
    errors.push_back("block_table: expected " + std::to_string(B * to_size(std::max(batch.pages_per_sequence, 0))) +
                     " entries ([B, pages_per_sequence]), got " + std::to_string(batch.block_table.size()));
  if (!errors.empty()) return errors;
  for (std::size_t b = 0; b < B; ++b) {
    const int length = batch.cache_seqlens[b];
    const std::string at = "cache_seqlens[" + std::to_string(b) + "]";
    if (length < 0) errors.push_back(at + ": expected an integer >= 0, got " + std::to_string(length));
    else if (length + batch.new_len > batch.capacity())
      errors.push_back(at + ": " + std::to_string(length) + " cached keys plus " + std::to_string(batch.new_len) +
                       " new ones are past the cache's " + std::to_string(batch.capacity()) + " slots a sequence");
    if (!batch.paged() || length < 0) continue;
    // Every page a sequence reads or appends into must be in the pool.
    const int pages_read = (length + batch.new_len + batch.page_size - 1) / batch.page_size;
    for (int m = 0; m < pages_read && m < batch.pages_per_sequence; ++m) {
      const int page = batch.block_table[b * to_size(batch.pages_per_sequence) + to_size(m)];
      if (page < 0 || page >= batch.pages)
        errors.push_back("block_table[" + std::to_string(b) + "][" + std::to_string(m) + "]: expected a page in 0.." +
                         std::to_string(batch.pages - 1) + ", got " + std::to_string(page));
    }
  }
  return errors;
}

std::vector<Sequence> sequences_of(const VarlenBatch& batch) {
  require_valid(validate(batch), "varlen batch");
  const Dims& d = batch.shared.dims;
  std::vector<Sequence> sequences;
  for (int b = 0; b < d.batch; ++b) {
    const int q0 = batch.cu_seqlens_q[to_size(b)], k0 = batch.cu_seqlens_k[to_size(b)];
    const SequenceLengths lengths{batch.cu_seqlens_q[to_size(b) + 1] - q0, batch.cu_seqlens_k[to_size(b) + 1] - k0};
    sequences.push_back(dense_sequence(
        batch.shared, b, lengths,
        [&](int h, int i) { return batch.q.begin() + static_cast<std::ptrdiff_t>((to_size(q0 + i) * d.q_heads + h) * d.d_k); },
        [&](int g, int j) { return batch.k.begin() + static_cast<std::ptrdiff_t>((to_size(k0 + j) * d.kv_heads + g) * d.d_k); },
        [&](int g, int j) { return batch.v.begin() + static_cast<std::ptrdiff_t>((to_size(k0 + j) * d.kv_heads + g) * d.d_v); }));
  }
  return sequences;
}

std::vector<Sequence> sequences_of(const KvCacheBatch& batch) {
  require_valid(validate(batch), "KV cache batch");
  const Dims& d = batch.shared.dims;
  std::vector<Sequence> sequences;
  for (int b = 0; b < d.batch; ++b) {
    const int cached = batch.cache_seqlens[to_size(b)];
    // The cache row of slot t (a row of [rows, Hkv, d]).
    const auto slot_row = [&](int t) {
      if (!batch.paged()) return to_size(b) * to_size(batch.slots) + to_size(t);
      const int page = batch.block_table[to_size(b) * to_size(batch.pages_per_sequence) + to_size(t / batch.page_size)];
      return to_size(page) * to_size(batch.page_size) + to_size(t % batch.page_size);
    };
    const auto new_row = [&](int t) { return to_size(b) * to_size(batch.new_len) + to_size(t - cached); };
    const auto at = [&](const std::vector<double>& cache, const std::vector<double>& fresh, int g, int j, int width) {
      const std::size_t row = j < cached ? slot_row(j) : new_row(j);
      const std::vector<double>& source = j < cached ? cache : fresh;
      return source.begin() + static_cast<std::ptrdiff_t>((row * to_size(d.kv_heads) + to_size(g)) * to_size(width));
    };
    sequences.push_back(dense_sequence(
        batch.shared, b, {d.q_len, cached + batch.new_len},
        [&](int h, int i) {
          return batch.q.begin() + static_cast<std::ptrdiff_t>(((to_size(b) * d.q_len + i) * d.q_heads + h) * d.d_k);
        },
        [&](int g, int j) { return at(batch.k_cache, batch.k_new, g, j, d.d_k); },
        [&](int g, int j) { return at(batch.v_cache, batch.v_new, g, j, d.d_v); }));
  }
  return sequences;
}

std::size_t output_size(const VarlenBatch& batch) {
  return product({to_size(batch.q_rows), to_size(batch.shared.dims.q_heads), to_size(batch.shared.dims.d_v)});
}
std::size_t lse_size(const VarlenBatch& batch) { return to_size(batch.q_rows) * to_size(batch.shared.dims.q_heads); }
std::size_t output_size(const KvCacheBatch& batch) {
  const Dims& d = batch.shared.dims;
  return product({to_size(d.batch), to_size(d.q_len), to_size(d.q_heads), to_size(d.d_v)});
}
std::size_t lse_size(const KvCacheBatch& batch) {
  const Dims& d = batch.shared.dims;
  return product({to_size(d.batch), to_size(d.q_heads), to_size(d.q_len)});
}

std::vector<Outputs> split_result(const VarlenBatch& batch, const Outputs& result) {
  const Dims& d = batch.shared.dims;
  require_size(result.out, output_size(batch), "outputs ([rows, Hq, d_v])");
  if (!result.lse.empty()) require_size(result.lse, lse_size(batch), "lse values ([Hq, rows])");
  std::vector<Outputs> split;
  for (int b = 0; b < d.batch; ++b) {
    const int q0 = batch.cu_seqlens_q[to_size(b)], L = batch.cu_seqlens_q[to_size(b) + 1] - q0;
    Outputs s;
    for (int h = 0; h < d.q_heads; ++h)
      for (int i = 0; i < L; ++i) {
        const auto from = result.out.begin() + static_cast<std::ptrdiff_t>((to_size(q0 + i) * d.q_heads + h) * d.d_v);
        s.out.insert(s.out.end(), from, from + d.d_v);
        if (!result.lse.empty()) s.lse.push_back(result.lse[to_size(h) * to_size(batch.q_rows) + to_size(q0 + i)]);
      }
    split.push_back(std::move(s));
  }
  return split;
}

std::vector<Outputs> split_result(const KvCacheBatch& batch, const Outputs& result) {
  const Dims& d = batch.shared.dims;
  require_size(result.out, output_size(batch), "outputs ([B, L, Hq, d_v])");
  if (!result.lse.empty()) require_size(result.lse, lse_size(batch), "lse values ([B, Hq, L])");
  std::vector<Outputs> split;
  for (int b = 0; b < d.batch; ++b) {
    Outputs s;
    for (int h = 0; h < d.q_heads; ++h)
      for (int i = 0; i < d.q_len; ++i) {
        const auto from =
            result.out.begin() + static_cast<std::ptrdiff_t>(((to_size(b) * d.q_len + i) * d.q_heads + h) * d.d_v);
        s.out.insert(s.out.end(), from, from + d.d_v);
        if (!result.lse.empty()) s.lse.push_back(result.lse[(to_size(b) * d.q_heads + h) * d.q_len + i]);
      }
    split.push_back(std::move(s));
  }
  return split;
}

Outputs join_results(const VarlenBatch& batch, std::span<const Outputs> parts) {
  const Dims& d = batch.shared.dims;
  if (parts.size() != to_size(d.batch)) throw std::invalid_argument("join_results: one result per sequence");
  Outputs joined{std::vector<double>(output_size(batch), std::numeric_limits<double>::quiet_NaN()),
                 std::vector<double>(lse_size(batch), std::numeric_limits<double>::quiet_NaN())};
  for (int b = 0; b < d.batch; ++b) {
    const int q0 = batch.cu_seqlens_q[to_size(b)], L = batch.cu_seqlens_q[to_size(b) + 1] - q0;
    const Outputs& part = parts[to_size(b)];
    require_size(part.out, to_size(d.q_heads) * to_size(L) * to_size(d.d_v), "a sequence's outputs");
    require_size(part.lse, to_size(d.q_heads) * to_size(L), "a sequence's lse values");
    for (int h = 0; h < d.q_heads; ++h)
      for (int i = 0; i < L; ++i) {
        const std::size_t row = to_size(h) * to_size(L) + to_size(i);
        std::copy_n(part.out.begin() + static_cast<std::ptrdiff_t>(row * to_size(d.d_v)), d.d_v,
                    joined.out.begin() + static_cast<std::ptrdiff_t>((to_size(q0 + i) * to_size(d.q_heads) + to_size(h)) * to_size(d.d_v)));
        joined.lse[to_size(h) * to_size(batch.q_rows) + to_size(q0 + i)] = part.lse[row];
      }
  }
  return joined;
}

Outputs join_results(const KvCacheBatch& batch, std::span<const Outputs> parts) {
  const Dims& d = batch.shared.dims;
  if (parts.size() != to_size(d.batch)) throw std::invalid_argument("join_results: one result per sequence");
  Outputs joined{std::vector<double>(output_size(batch)), std::vector<double>(lse_size(batch))};
  for (int b = 0; b < d.batch; ++b) {
    const Outputs& part = parts[to_size(b)];
    require_size(part.out, to_size(d.q_heads) * to_size(d.q_len) * to_size(d.d_v), "a sequence's outputs");
    require_size(part.lse, to_size(d.q_heads) * to_size(d.q_len), "a sequence's lse values");
    for (int h = 0; h < d.q_heads; ++h)
      for (int i = 0; i < d.q_len; ++i) {
        const std::size_t row = to_size(h) * to_size(d.q_len) + to_size(i);
        std::copy_n(part.out.begin() + static_cast<std::ptrdiff_t>(row * to_size(d.d_v)), d.d_v,
                    joined.out.begin() +
                        static_cast<std::ptrdiff_t>(((to_size(b) * to_size(d.q_len) + to_size(i)) * to_size(d.q_heads) + to_size(h)) * to_size(d.d_v)));
        joined.lse[(to_size(b) * to_size(d.q_heads) + to_size(h)) * to_size(d.q_len) + to_size(i)] = part.lse[row];
      }
  }
  return joined;
}

VarlenBatch pack_varlen(const Problem& dense, std::span<const SequenceLengths> lengths, int padding_q_rows,
                        int padding_k_rows, double filler) {
  const Dims& d = dense.dims;
  if (lengths.size() != to_size(d.batch)) throw std::invalid_argument("pack_varlen: one length pair per batch entry");
  VarlenBatch batch;
  batch.shared = shared_options_of(dense);
  batch.cu_seqlens_q = {0};
  batch.cu_seqlens_k = {0};
  for (const SequenceLengths& l : lengths) {
    if (l.q_len < 0 || l.q_len > d.q_len || l.kv_len < 0 || l.kv_len > d.kv_len)
      throw std::invalid_argument("pack_varlen: lengths outside the dense problem");
    batch.cu_seqlens_q.push_back(batch.cu_seqlens_q.back() + l.q_len);
    batch.cu_seqlens_k.push_back(batch.cu_seqlens_k.back() + l.kv_len);
  }
  batch.q_rows = batch.cu_seqlens_q.back() + padding_q_rows;
  batch.k_rows = batch.cu_seqlens_k.back() + padding_k_rows;
  batch.q.assign(product({to_size(batch.q_rows), to_size(d.q_heads), to_size(d.d_k)}), filler);
  batch.k.assign(product({to_size(batch.k_rows), to_size(d.kv_heads), to_size(d.d_k)}), filler);
  batch.v.assign(product({to_size(batch.k_rows), to_size(d.kv_heads), to_size(d.d_v)}), filler);
  for (int b = 0; b < d.batch; ++b) {
    const SequenceLengths& l = lengths[to_size(b)];
    for (int h = 0; h < d.q_heads; ++h)
      for (int i = 0; i < l.q_len; ++i)
        std::ranges::copy(dense.query_row({b, h, i}),
                          batch.q.begin() + static_cast<std::ptrdiff_t>(
                                                (to_size(batch.cu_seqlens_q[to_size(b)] + i) * d.q_heads + h) * d.d_k));
    for (int g = 0; g < d.kv_heads; ++g)
      for (int j = 0; j < l.kv_len; ++j) {
        const std::size_t row = to_size(batch.cu_seqlens_k[to_size(b)] + j) * d.kv_heads + g;
        std::ranges::copy(dense.key_row(b, g, j), batch.k.begin() + static_cast<std::ptrdiff_t>(row * d.d_k));
        std::ranges::copy(dense.value_row(b, g, j), batch.v.begin() + static_cast<std::ptrdiff_t>(row * d.d_v));
      }
  }
  return batch;
}

KvCacheBatch pack_kv_cache(const Problem& dense, std::span<const int> kv_lens, int new_len, const CacheLayout& cache,
                           double filler) {
  const Dims& d = dense.dims;
  if (kv_lens.size() != to_size(d.batch)) throw std::invalid_argument("pack_kv_cache: one key count per batch entry");
  if (new_len < 0) throw std::invalid_argument("pack_kv_cache: new_len < 0");
  for (int length : kv_lens)
    if (length < new_len || length > d.kv_len) throw std::invalid_argument("pack_kv_cache: key counts outside the problem");
  KvCacheBatch batch;
  batch.shared = shared_options_of(dense);
  batch.new_len = new_len;
  const std::size_t B = to_size(d.batch), Hkv = to_size(d.kv_heads), dk = to_size(d.d_k), dv = to_size(d.d_v);
  batch.q.resize(product({B, to_size(d.q_len), to_size(d.q_heads), dk}));
  for (int b = 0; b < d.batch; ++b)
    for (int h = 0; h < d.q_heads; ++h)
      for (int i = 0; i < d.q_len; ++i)
        std::ranges::copy(dense.query_row({b, h, i}),
                          batch.q.begin() + static_cast<std::ptrdiff_t>(((to_size(b) * d.q_len + i) * d.q_heads + h) * dk));
  batch.k_new.resize(product({B, to_size(new_len), Hkv, dk}));
  batch.v_new.resize(product({B, to_size(new_len), Hkv, dv}));
  const int longest = *std::max_element(kv_lens.begin(), kv_lens.end());
  std::vector<std::size_t> page_of;  // logical page -> physical page
  if (cache.page_size == 0) {
    batch.slots = longest + cache.spare_slots;
  } else {
    batch.page_size = cache.page_size;
    int used = 0;
    for (int length : kv_lens) used += (length + cache.page_size - 1) / cache.page_size;
    batch.pages = std::max(1, used + cache.spare_pages);  // a pool of at least one page
    batch.pages_per_sequence = std::max(1, (longest + cache.page_size - 1) / cache.page_size);
    page_of.resize(to_size(batch.pages));
    std::iota(page_of.begin(), page_of.end(), std::size_t{0});
    if (!cache.page_order.empty()) {
      if (cache.page_order.size() != page_of.size()) throw std::invalid_argument("pack_kv_cache: page_order's size");
      std::ranges::transform(cache.page_order, page_of.begin(), [](int page) { return to_size(page); });
    }
    // Entries past a sequence's own pages are never read: point them at a
    // spare page (filler) where there is one.
    const int unread = batch.pages > used ? static_cast<int>(page_of[to_size(used)]) : static_cast<int>(page_of[0]);
    batch.block_table.assign(B * to_size(batch.pages_per_sequence), unread);
  }
  const std::size_t rows = batch.paged() ? to_size(batch.pages) * to_size(batch.page_size) : B * to_size(batch.slots);
  batch.k_cache.assign(rows * Hkv * dk, filler);
  batch.v_cache.assign(rows * Hkv * dv, filler);
  std::size_t next_page = 0;
  for (int b = 0; b < d.batch; ++b) {
    const int cached = kv_lens[to_size(b)] - new_len;
    batch.cache_seqlens.push_back(cached);
    if (batch.paged())
      for (int m = 0; m < (kv_lens[to_size(b)] + batch.page_size - 1) / batch.page_size; ++m)
        batch.block_table[to_size(b) * to_size(batch.pages_per_sequence) + to_size(m)] =
            static_cast<int>(page_of[next_page++]);
    for (int g = 0; g < d.kv_heads; ++g)
      for (int j = 0; j < kv_lens[to_size(b)]; ++j) {
        std::size_t row;
        std::vector<double>*k_to, *v_to;
        if (j >= cached) {
          row = (to_size(b) * to_size(new_len) + to_size(j - cached)) * Hkv + to_size(g);
          k_to = &batch.k_new;
          v_to = &batch.v_new;
        } else {
          const std::size_t slot =
              batch.paged() ? to_size(batch.block_table[to_size(b) * to_size(batch.pages_per_sequence) +
                                                        to_size(j / batch.page_size)]) *
                                      to_size(batch.page_size) +
                                  to_size(j % batch.page_size)
                            : to_size(b) * to_size(batch.slots) + to_size(j);
          row = slot * Hkv + to_size(g);
          k_to = &batch.k_cache;
          v_to = &batch.v_cache;
        }
        std::ranges::copy(dense.key_row(b, g, j), k_to->begin() + static_cast<std::ptrdiff_t>(row * dk));
        std::ranges::copy(dense.value_row(b, g, j), v_to->begin() + static_cast<std::ptrdiff_t>(row * dv));
      }
  }
  return batch;
}

std::string_view to_string(LayoutKind kind) { return kind == LayoutKind::varlen ? "varlen" : "kv_cache"; }

int pool_pages(const LayoutRecipe& recipe) {
  const int page_size = recipe.cache.page_size;
  if (page_size <= 0) return 0;
  long long used = 0;
  for (int length : recipe.kv_lens) used += (std::max(length, 0) + page_size - 1) / page_size;
  return static_cast<int>(std::clamp<long long>(used + std::max(recipe.cache.spare_pages, 0), 1, 1 << 30));
}

std::vector<std::string> validate(const LayoutRecipe& recipe, const Problem& dense) {
  constexpr int kMostPadding = 1 << 20;
  std::vector<std::string> errors;
  if (dense.mask_kind != MaskKind::none) errors.push_back("layout: a laid-out problem has no mask (SPEC 2.5)");
  if (dense.descales) errors.push_back("layout: a laid-out problem has no descales (SPEC 2.5)");
  const Dims& d = dense.dims;
  const auto lengths = [&](const std::vector<int>& values, const char* name, int low, int high) {
    if (values.size() != static_cast<std::size_t>(d.batch)) {
      errors.push_back(std::string("layout.") + name + ": expected " + std::to_string(d.batch) +
                       " lengths (one per batch entry), got " + std::to_string(values.size()));
      return;
    }
    for (std::size_t b = 0; b < values.size(); ++b)
      if (values[b] < low || values[b] > high) {
        errors.push_back(std::string("layout.") + name + "[" + std::to_string(b) + "]: expected an integer in " +
                         std::to_string(low) + ".." + std::to_string(high) + ", got " + std::to_string(values[b]));
        return;
      }
  };
  const auto count = [&](int value, const char* name, int high) {
    if (value < 0 || value > high)
      errors.push_back(std::string("layout.") + name + ": expected an integer in 0.." + std::to_string(high) + ", got " +
                       std::to_string(value));
  };
  // The laid-out tensors are as bounded as a dense problem's (a case file
  // could otherwise ask for terabytes of padding): rows times heads times
  // the wider head size, at most kMaxTensorElements.
  const auto too_large = [&](std::uint64_t rows, int heads, const char* what) {
    const std::uint64_t elements = rows * static_cast<std::uint64_t>(heads) * static_cast<std::uint64_t>(std::max(d.d_k, d.d_v));
    if (elements > kMaxTensorElements)
      errors.push_back(std::string("layout: the laid-out ") + what + " would hold " + std::to_string(elements) +
                       " elements, more than 2^28, the most a tensor may hold (spec/SPEC.md section 4)");
  };
  const auto sum = [](const std::vector<int>& values) {
    std::uint64_t total = 0;
    for (int v : values) total += static_cast<std::uint64_t>(std::max(v, 0));
    return total;
  };
  if (recipe.kind == LayoutKind::varlen) {
    lengths(recipe.q_lens, "q_lens", 0, d.q_len);
    lengths(recipe.kv_lens, "kv_lens", 0, d.kv_len);
    count(recipe.padding_q_rows, "padding_q_rows", kMostPadding);
    count(recipe.padding_k_rows, "padding_k_rows", kMostPadding);
    if (!errors.empty()) return errors;
    too_large(sum(recipe.q_lens) + static_cast<std::uint64_t>(recipe.padding_q_rows), d.q_heads, "queries");
    too_large(sum(recipe.kv_lens) + static_cast<std::uint64_t>(recipe.padding_k_rows), d.kv_heads, "keys and values");
    return errors;
  }
  count(recipe.new_len, "new_len", d.kv_len);
  if (!errors.empty()) return errors;
  lengths(recipe.kv_lens, "kv_lens", recipe.new_len, d.kv_len);
  count(recipe.cache.page_size, "page_size", 256);
  count(recipe.cache.spare_slots, "spare_slots", kMostPadding);
  count(recipe.cache.spare_pages, "spare_pages", kMostPadding);
  if (!errors.empty()) return errors;
  const std::uint64_t longest =
      static_cast<std::uint64_t>(*std::max_element(recipe.kv_lens.begin(), recipe.kv_lens.end()));
  too_large(recipe.cache.page_size == 0
                ? static_cast<std::uint64_t>(d.batch) * (longest + static_cast<std::uint64_t>(recipe.cache.spare_slots))
                : static_cast<std::uint64_t>(pool_pages(recipe)) * static_cast<std::uint64_t>(recipe.cache.page_size),
            d.kv_heads, "cache");
  if (!errors.empty() || recipe.cache.page_order.empty()) return errors;
  const int pages = pool_pages(recipe);
  std::vector<int> sorted = recipe.cache.page_order;
  std::ranges::sort(sorted);
  std::vector<int> identity(static_cast<std::size_t>(pages));
  std::iota(identity.begin(), identity.end(), 0);
  if (recipe.cache.page_size == 0 || sorted != identity)
    errors.push_back("layout.page_order: expected empty (pages in order) or a permutation of 0.." +
                     std::to_string(pages - 1) + " (the pool's pages) for a paged cache");
  return errors;
}

VarlenBatch lay_out_varlen(const Problem& dense, const LayoutRecipe& recipe) {
  require_valid(validate(recipe, dense), "layout");
  std::vector<SequenceLengths> lengths;
  for (std::size_t b = 0; b < recipe.q_lens.size(); ++b) lengths.push_back({recipe.q_lens[b], recipe.kv_lens[b]});
  return pack_varlen(dense, lengths, recipe.padding_q_rows, recipe.padding_k_rows,
                     std::numeric_limits<double>::quiet_NaN());
}

KvCacheBatch lay_out_kv_cache(const Problem& dense, const LayoutRecipe& recipe) {
  require_valid(validate(recipe, dense), "layout");
  return pack_kv_cache(dense, recipe.kv_lens, recipe.new_len, recipe.cache, std::numeric_limits<double>::quiet_NaN());
}

}  // namespace attnspec
