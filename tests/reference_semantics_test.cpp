// The reference implements the semantics of spec/SPEC.md §2: GQA head
// mapping, both causal alignments, sliding windows, ALiBi, sinks, descales, masks (bool = additive {0, -inf},
// broadcasting), fully masked rows, softcap order, the default scale, and
// what NaN and infinity at visible and blocked positions do. Each test
// compares two problems that the spec says are equal, or a closed form.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "formats/round_multiprecision.hpp"
#include "reference/certified.hpp"
#include "reference/fast_reference.hpp"
#include "reference/multiprecision.hpp"
#include "problem_builder.hpp"

namespace attnspec {
namespace {

using testing::random_problem;
using testing::single_head;

void expect_same(const std::vector<double>& a, const std::vector<double>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(same_value(a[i], b[i])) << what << "[" << i << "]";
}

void expect_same_results(const Problem& a, const Problem& b) {
  const ReferenceResult x = certified_attention(a), y = certified_attention(b);
  expect_same(x.out, y.out, "out");
  expect_same(x.lse, y.lse, "lse");
  expect_same(x.weights, y.weights, "weights");
}

Dims dims(int batch, int q_heads, int kv_heads, int L, int S, int d_k, int d_v) {
  return {batch, q_heads, kv_heads, L, S, d_k, d_v};
}

TEST(Semantics, GqaQueryHeadReadsKvHeadOfItsGroup) {
  // Hq = 6, Hkv = 2: heads 0-2 read kv head 0, heads 3-5 kv head 1. The same
  // problem with K and V repeated per query head must agree exactly.
  std::mt19937_64 random(1);
  const Problem grouped = random_problem(random, dims(2, 6, 2, 3, 4, 3, 2), FormatId::float32);
  Problem repeated = grouped;
  repeated.dims.kv_heads = 6;
  repeated.k.clear();
  repeated.v.clear();
  for (int b = 0; b < 2; ++b)
    for (int h = 0; h < 6; ++h)
      for (int j = 0; j < 4; ++j) {
        const auto k = grouped.key_row(b, h / 3, j);
        const auto v = grouped.value_row(b, h / 3, j);
        repeated.k.insert(repeated.k.end(), k.begin(), k.end());
        repeated.v.insert(repeated.v.end(), v.begin(), v.end());
      }
  EXPECT_EQ(grouped.kv_head_of(2), 0);
  EXPECT_EQ(grouped.kv_head_of(3), 1);
  expect_same_results(grouped, repeated);
}

// A bool mask spelling out the causal rule, to compare against `causal`.
Problem with_explicit_causal_mask(Problem p, bool bottom_right) {
  const int L = p.dims.q_len, S = p.dims.kv_len;
  p.mask_kind = MaskKind::boolean;
  p.mask.assign(static_cast<std::size_t>(L) * S, 0.0);
  for (int i = 0; i < L; ++i)
    for (int j = 0; j < S; ++j)
      p.mask[static_cast<std::size_t>(i) * S + j] = (bottom_right ? j <= i + S - L : j <= i) ? 1.0 : 0.0;
  return p;
}

TEST(Semantics, CausalAlignmentsWithUnequalLengths) {
  std::mt19937_64 random(2);
  for (const auto& [L, S] : {std::pair{3, 5}, std::pair{5, 3}, std::pair{4, 4}}) {
    const Problem base = random_problem(random, dims(1, 2, 1, L, S, 2, 3), FormatId::bfloat16);
    for (bool bottom_right : {false, true}) {
      Problem causal = base;
      causal.causal = bottom_right ? Causal::bottom_right : Causal::top_left;
      expect_same_results(causal, with_explicit_causal_mask(base, bottom_right));
    }
  }
  // Top-left with L=3, S=5: query 0 sees key 0 only; bottom-right: keys 0-2.
  Problem p = random_problem(random, dims(1, 1, 1, 3, 5, 2, 1), FormatId::float32);
  p.causal = Causal::top_left;
  EXPECT_TRUE(p.visible({0, 0, 0}, 0));
  EXPECT_FALSE(p.visible({0, 0, 0}, 1));
  p.causal = Causal::bottom_right;
  EXPECT_TRUE(p.visible({0, 0, 0}, 2));
  EXPECT_FALSE(p.visible({0, 0, 0}, 3));
}

// A bool mask spelling out the window rule i + off - left <= j <= i + off + right.
Problem with_explicit_band(Problem p, std::optional<int> left, std::optional<int> right, bool bottom_right) {
  const int L = p.dims.q_len, S = p.dims.kv_len, off = bottom_right ? S - L : 0;
  p.mask_kind = MaskKind::boolean;
  p.mask.assign(static_cast<std::size_t>(L) * S, 0.0);
  for (int i = 0; i < L; ++i)
    for (int j = 0; j < S; ++j)
      p.mask[static_cast<std::size_t>(i) * S + j] = (!left || j >= i + off - *left) && (!right || j <= i + off + *right);
  return p;
}

TEST(Semantics, WindowsAreInclusiveBandsOfEitherAlignment) {
  std::mt19937_64 random(4);
  for (const auto& [L, S] : {std::pair{3, 7}, std::pair{6, 4}, std::pair{5, 5}}) {
    const Problem base = random_problem(random, dims(1, 2, 1, L, S, 3, 2), FormatId::float32);
    for (bool bottom_right : {false, true})
      for (const auto& [left, right] : {std::pair<std::optional<int>, std::optional<int>>{1, 0}, {0, 2}, {std::nullopt, 1},
                                        {2, std::nullopt}, {0, 0}, {9, 9}}) {
        Problem windowed = base;
        windowed.window = Window{left, right, bottom_right ? Alignment::bottom_right : Alignment::top_left};
        expect_same_results(windowed, with_explicit_band(base, left, right, bottom_right));
      }
  }
  // FlashAttention's window_size = (2, 0) with L = 2, S = 6 (bottom-right):
  // query 1 sees keys 3, 4, 5; query 0 keys 2, 3, 4; so 3 keys each.
  Problem p = random_problem(random, dims(1, 1, 1, 2, 6, 2, 1), FormatId::float32);
  p.window = Window{2, 0, Alignment::bottom_right};
  for (int j = 0; j < 6; ++j) {
    EXPECT_EQ(p.visible({0, 0, 1}, j), j >= 3) << j;
    EXPECT_EQ(p.visible({0, 0, 0}, j), j >= 2 && j <= 4) << j;
  }
  // Causal is the window (unbounded, 0) of the same alignment.
  Problem causal = p, window = p;
  causal.window.reset();
  causal.causal = Causal::top_left;
  window.window = Window{std::nullopt, 0, Alignment::top_left};
  expect_same_results(causal, window);
  // Intersected with causal: a right side past the diagonal adds nothing.
  window.window = Window{1, 3, Alignment::top_left};
  window.causal = Causal::top_left;
  EXPECT_TRUE(window.visible({0, 0, 1}, 0));
  EXPECT_FALSE(window.visible({0, 0, 1}, 2));
  EXPECT_FALSE(window.visible({0, 0, 0}, 1));
}

TEST(Semantics, AlibiIsItsBiasAsAnAdditiveMaskAfterTheSoftcap) {
  std::mt19937_64 random(5);
  for (const auto& [L, S] : {std::pair{3, 6}, std::pair{5, 2}}) {
    Problem base = random_problem(random, dims(2, 2, 1, L, S, 3, 2), FormatId::float32);
    base.softcap = 2.0;
    for (bool bottom_right : {false, true})
      for (bool per_batch : {false, true}) {
        Problem biased = base;
        biased.alibi = Alibi{per_batch ? std::vector<double>{0.5, 0.25, 0x1p-3, 3} : std::vector<double>{0.5, 0.25},
                             per_batch, bottom_right ? Alignment::bottom_right : Alignment::top_left};
        Problem masked = base;
        masked.mask_kind = MaskKind::additive;
        masked.mask_batch = masked.mask_heads = 2;
        const int off = bottom_right ? S - L : 0;
        for (int b = 0; b < 2; ++b)
          for (int h = 0; h < 2; ++h)
            for (int i = 0; i < L; ++i)
              for (int j = 0; j < S; ++j)
                masked.mask.push_back(-biased.alibi->slopes[static_cast<std::size_t>(per_batch ? 2 * b + h : h)] *
                                      std::abs(i + off - j));
        expect_same_results(biased, masked);
      }
  }
  // The bias of row 0, bottom-right, L = 2, S = 5: the diagonal is key 3.
  Problem p = random_problem(random, dims(1, 1, 1, 2, 5, 1, 1), FormatId::float32);
  p.alibi = Alibi{{0.25}, false, Alignment::bottom_right};
  EXPECT_EQ(p.alibi_bias({0, 0, 0}, 0), -0.75);
  EXPECT_EQ(p.alibi_bias({0, 0, 0}, 3), 0.0);
  EXPECT_EQ(p.alibi_bias({0, 0, 0}, 4), -0.25);
  p.alibi->alignment = Alignment::top_left;
  EXPECT_EQ(p.alibi_bias({0, 0, 0}, 4), -1.0);
}

TEST(Semantics, SinkIsOneMoreKeyWithLogitSigmaAndValueZero) {
  std::mt19937_64 random(8);
  for (const bool softcap : {false, true}) {
    const int L = 3, S = 4;
    Problem sunk = random_problem(random, dims(1, 2, 1, L, S, 3, 2), FormatId::float32);
    if (softcap) sunk.softcap = 1.5;
    sunk.sinks = {0.75, -2.5};
    sunk.mask_kind = MaskKind::boolean;
    sunk.mask = std::vector<double>(static_cast<std::size_t>(L * S), 1.0);
    for (int j = 0; j < S; ++j) sunk.mask[static_cast<std::size_t>(S + j)] = 0.0;  // row 1 sees no key
    // Key S with k = 0 (a logit of 0 whatever the scale and softcap), an
    // additive mask of the head's sink there, v = 0.
    Problem keyed = sunk;
    keyed.sinks.clear();
    keyed.dims.kv_len = S + 1;
    keyed.k.insert(keyed.k.end(), 3, 0.0);
    keyed.v.insert(keyed.v.end(), 2, 0.0);
    keyed.mask_kind = MaskKind::additive;
    keyed.mask_heads = 2;
    keyed.mask.clear();
    for (int h = 0; h < 2; ++h)
      for (int i = 0; i < L; ++i) {
        for (int j = 0; j < S; ++j) keyed.mask.push_back(i == 1 ? -INFINITY : 0.0);
        keyed.mask.push_back(sunk.sinks[static_cast<std::size_t>(h)]);
      }
    const ReferenceResult x = certified_attention(sunk), y = certified_attention(keyed);
    expect_same(x.out, y.out, "out");
    expect_same(x.lse, y.lse, "lse");
    for (std::size_t row = 0; row < sunk.rows(); ++row)
      for (std::size_t j = 0; j < static_cast<std::size_t>(S); ++j)
        EXPECT_TRUE(same_value(x.weights[row * S + j], y.weights[row * (S + 1) + j])) << "row " << row << " key " << j;
    // Row 1 has no visible key: output exactly 0, lse the sink.
    EXPECT_EQ(x.lse[1], 0.75);
    EXPECT_EQ(x.lse[L + 1], -2.5);
    EXPECT_TRUE(same_value(x.out[2], 0.0));
    EXPECT_TRUE(same_value(x.out[3], 0.0));
  }
  // A sink of -inf is no sink.
  Problem p = random_problem(random, dims(2, 2, 2, 2, 3, 2, 2), FormatId::bfloat16);
  Problem without = p;
  p.sinks = {-INFINITY, -INFINITY};
  expect_same_results(p, without);
}

TEST(Semantics, DescalesScaleTheInputsPerKvHead) {
  // B = 2, Hq = 4, Hkv = 2: query heads 0, 1 read kv head 0's factors, 2, 3
  // kv head 1's; every (tensor, b, g) its own factor.
  std::mt19937_64 random(12);
  const Dims d = dims(2, 4, 2, 3, 5, 4, 3);
  Problem given = random_problem(random, d, FormatId::float8_e4m3fn);
  given.softcap = 6;
  given.sinks = {0.5, -INFINITY, 1.25, -1};
  given.descales = Descales{{0.5, 2, 0.75, 0x1.8p-7}, {4, 0.25, 0x1.2p-3, 1}, {3, 0x1p-9, 0.625, 8}, false};
  Problem real = given;
  real.descales.reset();
  const auto factor = [&](const std::vector<double>& f, int b, int g) { return f[static_cast<std::size_t>(b * 2 + g)]; };
  for (int b = 0; b < 2; ++b)
    for (int h = 0; h < 4; ++h)
      for (int i = 0; i < d.q_len * d.d_k; ++i)
        real.q[static_cast<std::size_t>((b * 4 + h) * d.q_len * d.d_k + i)] *= factor(given.descales->q, b, h / 2);
  for (int b = 0; b < 2; ++b)
    for (int g = 0; g < 2; ++g) {
      for (int i = 0; i < d.kv_len * d.d_k; ++i)
        real.k[static_cast<std::size_t>((b * 2 + g) * d.kv_len * d.d_k + i)] *= factor(given.descales->k, b, g);
      for (int i = 0; i < d.kv_len * d.d_v; ++i)
        real.v[static_cast<std::size_t>((b * 2 + g) * d.kv_len * d.d_v + i)] *= factor(given.descales->v, b, g);
    }
  expect_same_results(given, real);
  const FastReferenceResult fast_given = fast_certified_attention(given, FormatId::float32);
  const FastReferenceResult fast_real = fast_certified_attention(real, FormatId::float32);
  expect_same(fast_given.out, fast_real.out, "fast out");
  // The row-level entry points refuse factors not yet applied.
  EXPECT_THROW(certified_row(given, {0, 0, 0}, ReferenceOptions{}), std::logic_error);
  EXPECT_NO_THROW(certified_row(apply_descales(given), {0, 0, 0}, ReferenceOptions{}));
}

TEST(Semantics, DescalesAreFloat32ValuesAboveZeroPerBatchAndKvHead) {
  std::mt19937_64 random(13);
  const Problem p = random_problem(random, dims(2, 2, 1, 1, 2, 2, 2), FormatId::float32);
  const auto errors_with = [&](Descales descales) {
    Problem q = p;
    q.descales = std::move(descales);
    return validate(q);
  };
  EXPECT_TRUE(errors_with({{1, 2}, {1, 2}, {1, 2}, false}).empty());
  const std::vector<std::string> errors = errors_with({{1}, {0, 1}, {0.1, NAN}, false});
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_NE(errors[0].find("q_descale: expected 2 values ([B, Hkv]), got 1"), std::string::npos) << errors[0];
  EXPECT_NE(errors[1].find("k_descale: expected float32 values > 0"), std::string::npos) << errors[1];
  EXPECT_NE(errors[2].find("v_descale: expected float32 values > 0"), std::string::npos) << errors[2];  // 0.1: not float32
}

TEST(Semantics, FullyMaskedRowsOutputZeroWithLseMinusInfinity) {
  // Bottom-right with L = 5 > S = 3: rows 0 and 1 see no key.
  std::mt19937_64 random(3);
  Problem p = random_problem(random, dims(1, 1, 1, 5, 3, 2, 2), FormatId::float16);
  p.causal = Causal::bottom_right;
  const ReferenceResult r = certified_attention(p);
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(same_value(r.out[static_cast<std::size_t>(i) * 2], 0.0));
    EXPECT_TRUE(same_value(r.out[static_cast<std::size_t>(i) * 2 + 1], 0.0));
    EXPECT_EQ(r.lse[static_cast<std::size_t>(i)], -INFINITY);
    for (int j = 0; j < 3; ++j) EXPECT_TRUE(same_value(r.weights[static_cast<std::size_t>(i) * 3 + j], 0.0));
  }
  EXPECT_EQ(r.weights[2 * 3 + 0], 1.0);  // row 2 sees key 0 alone
}

TEST(Semantics, BoolMaskEqualsAdditiveZeroMinusInfinityAndBroadcasts) {
  std::mt19937_64 random(4);
  Problem boolean = random_problem(random, dims(2, 2, 1, 3, 4, 2, 2), FormatId::float32);
  boolean.mask_kind = MaskKind::boolean;
  boolean.mask = {1, 0, 1, 1, 0, 0, 0, 0, 1, 1, 0, 1};  // [1, 1, 3, 4], broadcast; row 1 fully masked
  Problem additive = boolean;
  additive.mask_kind = MaskKind::additive;
  for (double& m : additive.mask) m = m != 0 ? 0.0 : -INFINITY;
  expect_same_results(boolean, additive);
  // Broadcast [1, 1, L, S] equals the mask written out for every batch and head.
  Problem full = boolean;
  full.mask_batch = 2;
  full.mask_heads = 2;
  full.mask.clear();
  for (int copy = 0; copy < 4; ++copy) full.mask.insert(full.mask.end(), boolean.mask.begin(), boolean.mask.end());
  expect_same_results(boolean, full);
}

TEST(Semantics, BlockedNaNNeverLeaksVisibleNaNPropagates) {
  Problem p = single_head({{1, 2}}, {{1, 0}, {NAN, INFINITY}, {0, 1}}, {{1, 2}, {NAN, -INFINITY}, {3, 4}});
  p.mask_kind = MaskKind::boolean;
  p.mask = {1, 0, 1};
  Problem clean = p;
  clean.k[2] = clean.k[3] = 0;
  clean.v[2] = clean.v[3] = 0;
  expect_same_results(p, clean);
  // A NaN value at a visible key spoils only its column.
  Problem visible_nan = clean;
  visible_nan.v[4] = NAN;  // key 2, column 0
  const RowResult row = certified_row(visible_nan, {0, 0, 0});
  EXPECT_TRUE(std::isnan(row.out[0]));
  EXPECT_FALSE(std::isnan(row.out[1]));
  EXPECT_FALSE(std::isnan(row.lse));
  // A NaN in the query spoils the whole row.
  Problem nan_query = clean;
  nan_query.q[0] = NAN;
  const RowResult spoiled = certified_row(nan_query, {0, 0, 0});
  EXPECT_TRUE(std::isnan(spoiled.out[0]) && std::isnan(spoiled.out[1]) && std::isnan(spoiled.lse));
  EXPECT_TRUE(same_value(spoiled.weights[1], 0.0));  // blocked keys keep weight 0
}

TEST(Semantics, DefaultScaleIsOneOverSqrtOfHeadWidth) {
  std::mt19937_64 random(5);
  Problem implicit = random_problem(random, dims(1, 2, 2, 2, 3, 4, 5), FormatId::float32);
  Problem explicit_half = implicit;
  explicit_half.scale = 0.5;  // 1/sqrt(4)
  expect_same_results(implicit, explicit_half);
  Problem wrong = implicit;
  wrong.scale = 1.0 / std::sqrt(8.0);  // sqrt(d_model) with two heads: a different function
  EXPECT_NE(certified_attention(wrong).out, certified_attention(implicit).out);
}

TEST(Semantics, SoftcapComesAfterScaleAndBeforeTheMask) {
  // d_k = 1, scale 0.5, cap 2, additive mask (0, 1.5): logits are
  // 2 tanh(0.5 q k_j / 2) + m_j; compared with the closed form.
  Problem p = single_head({{6}}, {{3}, {-1}}, {{1}, {0}});
  p.scale = 0.5;
  p.softcap = 2.0;
  p.mask_kind = MaskKind::additive;
  p.mask = {0.0, 1.5};
  const RowResult row = certified_row(p, {0, 0, 0});
  WorkingPrecision precision(300);
  const Real x0 = 2 * tanh(Real(0.5) * 18 / 2), x1 = 2 * tanh(Real(0.5) * -6 / 2) + Real(1.5);
  const Real w0 = exp(x0) / (exp(x0) + exp(x1));
  EXPECT_EQ(row.weights[0], round_to_format(w0, FormatId::float64));
  EXPECT_EQ(row.out[0], round_to_format(w0, FormatId::float64));
  EXPECT_EQ(row.lse, round_to_format(log(exp(x0) + exp(x1)), FormatId::float64));
}

TEST(Semantics, ValueWidthMayDifferFromKeyWidth) {
  const Problem p = single_head({{1, 0, 0}}, {{0, 0, 0}, {0, 0, 0}}, {{1, 2, 3, 4, 5}, {3, 4, 5, 6, 7}});
  const RowResult row = certified_row(p, {0, 0, 0});
  EXPECT_EQ(row.out, (std::vector<double>{2, 3, 4, 5, 6}));
}

}  // namespace
}  // namespace attnspec
