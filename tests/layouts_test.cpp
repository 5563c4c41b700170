// The layouts of spec/SPEC.md section 2.5: the maps onto dense problems
// (reference/layouts.hpp) undo the packers exactly, malformed layouts are
// refused with the field named, and the online kernel's layout paths give
// each sequence the very bits of its dense run.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "adapters/online/online_kernel.hpp"
#include "reference/layouts.hpp"
#include "tests/problem_builder.hpp"

namespace attnspec {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Problem dense_batch(int batch, int L, int S, unsigned seed) {
  std::mt19937_64 random(seed);
  Problem p = testing::random_problem(random, Dims{batch, 4, 2, L, S, 8, 5}, FormatId::float32);
  p.causal = Causal::bottom_right;
  p.window = Window{5, std::nullopt, Alignment::bottom_right};
  p.sinks = {0.5, -INFINITY, 2.0, -1.0};
  p.alibi = Alibi{{0.25, 0.5, 0.125, 1.0}, false, Alignment::bottom_right};
  return p;
}

// Entry b of p cut to its first L_b queries and S_b keys, built directly.
Problem cut_entry(const Problem& p, int b, SequenceLengths l) {
  Problem e = sequence_shape(shared_options_of(p), b, l);
  for (int h = 0; h < p.dims.q_heads; ++h)
    for (int i = 0; i < l.q_len; ++i) std::ranges::copy(p.query_row({b, h, i}), std::back_inserter(e.q));
  for (int g = 0; g < p.dims.kv_heads; ++g)
    for (int j = 0; j < l.kv_len; ++j) std::ranges::copy(p.key_row(b, g, j), std::back_inserter(e.k));
  for (int g = 0; g < p.dims.kv_heads; ++g)
    for (int j = 0; j < l.kv_len; ++j) std::ranges::copy(p.value_row(b, g, j), std::back_inserter(e.v));
  return e;
}

void expect_same_problem(const Problem& got, const Problem& want) {
  EXPECT_EQ(got.dims, want.dims);
  EXPECT_EQ(got.q, want.q);
  EXPECT_EQ(got.k, want.k);
  EXPECT_EQ(got.v, want.v);
  EXPECT_EQ(got.alibi, want.alibi);
  EXPECT_EQ(got.sinks, want.sinks);
  EXPECT_EQ(got.window, want.window);
  EXPECT_EQ(got.causal, want.causal);
}

// Bitwise, NaN equal to NaN.
void expect_same_bits(const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(got[i] == want[i] || (std::isnan(got[i]) && std::isnan(want[i])))
        << what << " element " << i << ": " << got[i] << " vs " << want[i];
}

TEST(Layouts, VarlenSequencesAreTheDenseEntriesCut) {
  const Problem p = dense_batch(3, 6, 9, 1);
  const std::vector<SequenceLengths> lengths{{6, 9}, {0, 4}, {3, 0}};
  const VarlenBatch batch = pack_varlen(p, lengths, 2, 1, kNaN);
  EXPECT_EQ(batch.cu_seqlens_q, (std::vector<int>{0, 6, 6, 9}));
  EXPECT_EQ(batch.cu_seqlens_k, (std::vector<int>{0, 9, 13, 13}));
  EXPECT_EQ(batch.q_rows, 11);
  const std::vector<Sequence> sequences = sequences_of(batch);
  ASSERT_EQ(sequences.size(), 3u);
  ASSERT_TRUE(sequences[0].problem);
  expect_same_problem(*sequences[0].problem, cut_entry(p, 0, lengths[0]));
  EXPECT_FALSE(sequences[1].problem);  // no queries
  EXPECT_FALSE(sequences[2].problem);  // no keys
  EXPECT_EQ(sequences[2].lengths, (SequenceLengths{3, 0}));
}

TEST(Layouts, PerSequenceAlibiSlopesGoToTheirSequence) {
  Problem p = dense_batch(2, 3, 4, 2);
  p.alibi = Alibi{{1, 2, 3, 4, 5, 6, 7, 8}, true, Alignment::top_left};
  const std::vector<SequenceLengths> lengths{{3, 4}, {2, 3}};
  const std::vector<Sequence> sequences = sequences_of(pack_varlen(p, lengths, 0, 0, kNaN));
  ASSERT_TRUE(sequences[1].problem);
  EXPECT_EQ(sequences[1].problem->alibi, (Alibi{{5, 6, 7, 8}, false, Alignment::top_left}));
}

TEST(Layouts, CacheSequencesAreTheDenseEntriesCutContiguousOrPaged) {
  const Problem p = dense_batch(3, 2, 11, 3);
  const std::vector<int> kv_lens{11, 2, 7};
  for (int page_size : {0, 1, 3, 16}) {
    CacheLayout layout;
    layout.page_size = page_size;
    layout.spare_slots = 2;
    layout.spare_pages = 2;
    if (page_size > 0) {
      int used = 0;
      for (int length : kv_lens) used += (length + page_size - 1) / page_size;
      for (int page = used + 1; page >= 0; --page) layout.page_order.push_back(page);  // reversed
    }
    const KvCacheBatch batch = pack_kv_cache(p, kv_lens, 2, layout, kNaN);
    EXPECT_EQ(batch.cache_seqlens, (std::vector<int>{9, 0, 5})) << page_size;
    const std::vector<Sequence> sequences = sequences_of(batch);
    for (int b = 0; b < 3; ++b) {
      ASSERT_TRUE(sequences[static_cast<std::size_t>(b)].problem) << page_size;
      expect_same_problem(*sequences[static_cast<std::size_t>(b)].problem, cut_entry(p, b, {2, kv_lens[static_cast<std::size_t>(b)]}));
    }
  }
}

std::string first_error(const std::vector<std::string>& errors) { return errors.empty() ? "" : errors.front(); }

TEST(Layouts, MalformedLayoutsAreRefusedWithTheFieldNamed) {
  const Problem p = dense_batch(2, 3, 4, 4);
  VarlenBatch varlen = pack_varlen(p, std::vector<SequenceLengths>{{3, 4}, {2, 3}}, 0, 0, kNaN);
  EXPECT_EQ(first_error(validate(varlen)), "");
  varlen.cu_seqlens_k = {0, 5, 4};
  EXPECT_EQ(first_error(validate(varlen)), "cu_seqlens_k: expected non-decreasing offsets, got 4 after 5 at index 2");
  varlen.cu_seqlens_k = {0, 4, 9};
  EXPECT_EQ(first_error(validate(varlen)), "cu_seqlens_k: the last offset 9 is past the 7 rows of k and v");
  EXPECT_THROW(sequences_of(varlen), std::invalid_argument);

  CacheLayout paged;
  paged.page_size = 2;
  KvCacheBatch cache = pack_kv_cache(p, std::vector<int>{4, 3}, 1, paged, kNaN);
  EXPECT_EQ(first_error(validate(cache)), "");
  cache.block_table[1] = cache.pages;
  EXPECT_EQ(first_error(validate(cache)),
            "block_table[0][1]: expected a page in 0.." + std::to_string(cache.pages - 1) + ", got " +
                std::to_string(cache.pages));
  cache = pack_kv_cache(p, std::vector<int>{4, 3}, 1, paged, kNaN);
  cache.cache_seqlens[1] = 4;
  EXPECT_EQ(first_error(validate(cache)),
            "cache_seqlens[1]: 4 cached keys plus 1 new ones are past the cache's 4 slots a sequence");
  cache.cache_seqlens[1] = 2;
  cache.page_size = 300;
  EXPECT_EQ(first_error(validate(cache)), "page_size: expected 0 (contiguous) or 1 to 256, got 300");

  Problem masked = p;
  masked.mask_kind = MaskKind::boolean;
  masked.mask.assign(12, 1.0);
  EXPECT_THROW(shared_options_of(masked), std::invalid_argument);
}

// A case file's recipe cannot ask for more than a tensor may hold: its
// padding and spare slots count.
TEST(Layouts, RecipesAreBoundedLikeDenseTensors) {
  Problem p;
  p.dims = Dims{4, 8, 8, 1, 1, 64, 64};
  LayoutRecipe cache;
  cache.kind = LayoutKind::kv_cache;
  cache.kv_lens = {1, 1, 1, 1};
  EXPECT_EQ(first_error(validate(cache, p)), "");
  cache.cache.spare_slots = 1 << 20;  // 4 x (1 + 2^20) slots x 8 heads x 64
  EXPECT_NE(first_error(validate(cache, p)).find("more than 2^28"), std::string::npos) << first_error(validate(cache, p));
  LayoutRecipe varlen;
  varlen.q_lens = {1, 1, 1, 1};
  varlen.kv_lens = {1, 1, 1, 1};
  EXPECT_EQ(first_error(validate(varlen, p)), "");
  varlen.padding_k_rows = 1 << 20;
  EXPECT_NE(first_error(validate(varlen, p)).find("the laid-out keys and values would hold"), std::string::npos);
}

TEST(Layouts, ResultsOfTheWrongSizeAreRefused) {
  const Problem p = dense_batch(2, 3, 4, 5);
  const VarlenBatch batch = pack_varlen(p, std::vector<SequenceLengths>{{3, 4}, {2, 3}}, 1, 0, kNaN);
  Outputs result{std::vector<double>(output_size(batch) - 1, 0.0), {}};
  EXPECT_THROW(split_result(batch, result), std::runtime_error);
}

// The two examples of README.md's layouts section, as the tables there say.
TEST(Layouts, TheReadmeExamples) {
  Problem p = dense_batch(2, 4, 6, 9);
  p.window.reset();
  const VarlenBatch varlen = pack_varlen(p, std::vector<SequenceLengths>{{3, 5}, {1, 2}}, 1, 1, kNaN);
  EXPECT_EQ(varlen.cu_seqlens_q, (std::vector<int>{0, 3, 4}));
  EXPECT_EQ(varlen.cu_seqlens_k, (std::vector<int>{0, 5, 7}));
  EXPECT_EQ(varlen.q_rows, 5);
  EXPECT_EQ(varlen.k_rows, 8);
  EXPECT_TRUE(std::isnan(varlen.q[4 * 4 * 8]));  // packed query row 4: padding
  const std::vector<Sequence> sequences = sequences_of(varlen);
  ASSERT_TRUE(sequences[0].problem && sequences[1].problem);
  EXPECT_EQ(sequences[0].lengths, (SequenceLengths{3, 5}));
  EXPECT_EQ(sequences[1].lengths, (SequenceLengths{1, 2}));
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) EXPECT_EQ(sequences[0].problem->visible({0, 0, i}, j), j <= i + 2);
  EXPECT_TRUE(sequences[1].problem->visible({0, 0, 0}, 1));

  Problem decode = dense_batch(2, 1, 6, 9);
  decode.window.reset();
  const KvCacheBatch cache = pack_kv_cache(decode, std::vector<int>{5, 2}, 1, CacheLayout{2, 0, 1, {3, 0, 4, 2, 1}}, kNaN);
  EXPECT_EQ(cache.cache_seqlens, (std::vector<int>{4, 1}));
  EXPECT_EQ(cache.block_table, (std::vector<int>{3, 0, 4, 2, 1, 1}));
  const auto cached_key = [&](int page, int row, int g) {
    const std::size_t at = ((static_cast<std::size_t>(page) * 2 + static_cast<std::size_t>(row)) * 2 + static_cast<std::size_t>(g)) * 8;
    return std::vector<double>(cache.k_cache.begin() + static_cast<std::ptrdiff_t>(at), cache.k_cache.begin() + static_cast<std::ptrdiff_t>(at + 8));
  };
  const auto dense_key = [&](int b, int g, int j) {
    const auto row = decode.key_row(b, g, j);
    return std::vector<double>(row.begin(), row.end());
  };
  for (int g = 0; g < 2; ++g) {
    EXPECT_EQ(cached_key(3, 1, g), dense_key(0, g, 1));
    EXPECT_EQ(cached_key(0, 0, g), dense_key(0, g, 2));
    EXPECT_EQ(cached_key(2, 0, g), dense_key(1, g, 0));
    for (int row = 0; row < 2; ++row) EXPECT_TRUE(std::isnan(cached_key(1, row, g)[0]));  // the spare page
  }
}

// join_results undoes split_result (the reference's laid-out results are
// joined by it), and leaves varlen padding rows NaN.
TEST(Layouts, JoinUndoesSplit) {
  const Problem p = dense_batch(2, 3, 4, 5);
  const VarlenBatch varlen = pack_varlen(p, std::vector<SequenceLengths>{{3, 4}, {0, 3}}, 2, 0, kNaN);
  Outputs result{std::vector<double>(output_size(varlen)), std::vector<double>(lse_size(varlen))};
  for (std::size_t i = 0; i < result.out.size(); ++i) result.out[i] = static_cast<double>(i);
  for (std::size_t i = 0; i < result.lse.size(); ++i) result.lse[i] = -static_cast<double>(i);
  const Outputs joined = join_results(varlen, split_result(varlen, result));
  for (std::size_t i = 0; i < result.out.size(); ++i) {
    const bool padding = i / static_cast<std::size_t>(p.dims.q_heads * p.dims.d_v) >= 3;
    if (padding) EXPECT_TRUE(std::isnan(joined.out[i])) << i;
    else EXPECT_EQ(joined.out[i], result.out[i]) << i;
  }
  const KvCacheBatch cache = pack_kv_cache(p, std::vector<int>{4, 2}, 1, CacheLayout{2, 0, 1, {}}, kNaN);
  Outputs cached{std::vector<double>(output_size(cache)), std::vector<double>(lse_size(cache))};
  for (std::size_t i = 0; i < cached.out.size(); ++i) cached.out[i] = static_cast<double>(i);
  for (std::size_t i = 0; i < cached.lse.size(); ++i) cached.lse[i] = 0.5 * static_cast<double>(i);
  const Outputs back = join_results(cache, split_result(cache, cached));
  EXPECT_EQ(back.out, cached.out);
  EXPECT_EQ(back.lse, cached.lse);
}

// The online kernel's layout paths read through the layout, its dense
// path through the dense problem; both run the same arithmetic, so every
// sequence's outputs and lse are bitwise those of its dense problem.
TEST(Layouts, OnlineKernelGivesEachSequenceItsDenseBits) {
  for (FormatId format : {FormatId::float32, FormatId::bfloat16}) {
    const std::unique_ptr<Kernel> kernel = make_online_kernel(format, TileSizes{4, 8});
    const Problem p = dense_batch(3, 7, 19, 6);  // small integers: exact in bfloat16 too
    const std::vector<SequenceLengths> lengths{{7, 19}, {5, 0}, {3, 11}};
    const VarlenBatch varlen = pack_varlen(p, lengths, 2, 3, kNaN);
    const KernelResult packed = kernel->run_varlen(varlen);
    const std::vector<Outputs> parts = split_result(varlen, Outputs{packed.out, packed.lse});
    const std::vector<Sequence> sequences = sequences_of(varlen);
    for (std::size_t b = 0; b < sequences.size(); ++b) {
      if (!sequences[b].problem) continue;
      const KernelResult dense = kernel->run(*sequences[b].problem);
      expect_same_bits(parts[b].out, dense.out, "varlen sequence " + std::to_string(b));
      expect_same_bits(parts[b].lse, dense.lse, "varlen lse " + std::to_string(b));
    }
    // The sequence with no keys: outputs 0, lse the sinks (or -inf).
    ASSERT_EQ(parts[1].lse.size(), 20u);
    EXPECT_EQ(parts[1].lse[0], 0.5);
    EXPECT_EQ(parts[1].lse[5], -INFINITY);
    for (double x : parts[1].out) EXPECT_EQ(x, 0.0);

    for (int page_size : {0, 3, 8}) {
      CacheLayout layout;
      layout.page_size = page_size;
      layout.spare_pages = 1;
      const KvCacheBatch cache = pack_kv_cache(p, std::vector<int>{19, 6, 11}, 3, layout, kNaN);
      const KernelResult got = kernel->run_kv_cache(cache);
      const std::vector<Outputs> cached = split_result(cache, Outputs{got.out, got.lse});
      const std::vector<Sequence> dense_sequences = sequences_of(cache);
      for (std::size_t b = 0; b < dense_sequences.size(); ++b) {
        const KernelResult dense = kernel->run(*dense_sequences[b].problem);
        expect_same_bits(cached[b].out, dense.out, "cache sequence " + std::to_string(b));
        expect_same_bits(cached[b].lse, dense.lse, "cache lse " + std::to_string(b));
      }
    }
  }
}

}  // namespace
}  // namespace attnspec
