// The certified reference near and on rounding boundaries: results within
// 2^-90 of a midpoint force refinement and still come out right; results
// exactly on a midpoint are recognised as exact and tie to even; refinement
// that cannot finish fails loudly; two working precisions agree.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "reference/certified.hpp"
#include "problem_builder.hpp"

namespace attnspec {
namespace {

using testing::random_problem;
using testing::single_head;

// Two keys whose logits differ by 2^-90 (q.k1 = 1, q.k2 = 1 +- 2^-90, scale
// 1) and values 1 and 1 + 2^(1-p), neighbours in a format of precision p:
// the plain mean is their midpoint 1 + 2^-p. The exact output is that
// midpoint +- about 2^(1-p) * 2^-92, so it rounds towards the heavier key,
// which no evaluation with fewer than about p + 93 bits can tell.
Problem near_midpoint_problem(int p, bool second_key_larger) {
  const double tiny = std::ldexp(1.0, -45);
  const double second = second_key_larger ? tiny : -tiny;
  Problem problem = single_head({{1, tiny}}, {{1, 0}, {1, second}}, {{1}, {1 + std::ldexp(1.0, 1 - p)}});
  problem.scale = 1.0;
  return problem;
}

TEST(Refinement, LogitsTwoToTheMinus90ApartForceEscalationAndRoundCorrectly) {
  for (FormatId target : {FormatId::float64, FormatId::float32}) {
    const int p = format_info(target).precision;
    for (bool larger : {true, false}) {
      const Problem problem = near_midpoint_problem(p, larger);
      ReferenceOptions options;
      options.target = target;
      options.weights = false;
      const RowResult row = certified_row(problem, {0, 0, 0}, options);
      EXPECT_GT(row.attempts, 1) << "no escalation for " << format_info(target).name;
      EXPECT_GT(row.precision_bits, p + 92);
      EXPECT_EQ(row.exact_values, 0u);
      // The heavier key decides the side of the midpoint.
      const double expected = larger ? 1 + std::ldexp(1.0, 1 - p) : 1.0;
      EXPECT_EQ(row.out[0], expected) << format_info(target).name << (larger ? " up" : " down");
    }
  }
}

TEST(Refinement, IdenticalKeysAveragingNeighboursTieToEven) {
  // Identical keys: weights exactly 1/2, output exactly the midpoint of two
  // neighbouring float32 values. 1 and 1 + 2^-23 tie to 1 (even);
  // 1 + 2^-23 and 1 + 2^-22 tie up to 1 + 2^-22.
  for (const auto& [low, high, expected] :
       {std::tuple{1.0, 1 + 0x1p-23, 1.0}, std::tuple{1 + 0x1p-23, 1 + 0x1p-22, 1 + 0x1p-22}}) {
    const Problem problem = single_head({{0.5, -2}}, {{3, 1}, {3, 1}}, {{low}, {high}});
    ReferenceOptions options;
    options.target = FormatId::float32;
    const RowResult row = certified_row(problem, {0, 0, 0}, options);
    EXPECT_EQ(row.out[0], expected);
    EXPECT_EQ(row.weights[0], 0.5);
  }
}

TEST(Refinement, ExactMidpointBehindDifferentLogitsIsRecognised) {
  // Two pairs of identical keys with different logits; each pair averages
  // 1 and 1 + 2^-23, so the output is exactly the float32 midpoint
  // 1 + 2^-24 whatever the weights. Its enclosures always straddle the
  // midpoint; only the exact form settles it (tie to even: 1).
  const Problem problem =
      single_head({{1, 0.5}}, {{1, 2}, {1, 2}, {-3, 0.25}, {-3, 0.25}}, {{1}, {1 + 0x1p-23}, {1 + 0x1p-23}, {1}});
  ReferenceOptions options;
  options.target = FormatId::float32;
  const RowResult row = certified_row(problem, {0, 0, 0}, options);
  EXPECT_EQ(row.out[0], 1.0);
  EXPECT_GE(row.exact_values, 1u);
  EXPECT_EQ(row.attempts, 2);  // one miss, then settled from the exact form
  // In float64 the same value is representable and needs no exact form.
  options.target = FormatId::float64;
  const RowResult wide = certified_row(problem, {0, 0, 0}, options);
  EXPECT_EQ(wide.out[0], 1 + 0x1p-24);
  EXPECT_EQ(wide.attempts, 1);
}

TEST(Refinement, ExactWeightOnTheUnderflowTieRoundsToZero) {
  // 1024 identical keys: each weight is exactly 2^-10, half the smallest
  // float8_e4m3fn subnormal: a tie between 0 and 2^-9 that goes to 0.
  Problem problem;
  problem.dims.kv_len = 1024;
  problem.q = {1};
  problem.k.assign(1024, 0.5);
  problem.v.assign(1024, 2.0);
  ReferenceOptions options;
  options.target = FormatId::float8_e4m3fn;
  const RowResult row = certified_row(problem, {0, 0, 0}, options);
  for (double w : row.weights) ASSERT_TRUE(same_value(w, 0.0));
  EXPECT_EQ(row.out[0], 2.0);
  options.target = FormatId::float32;
  EXPECT_EQ(certified_row(problem, {0, 0, 0}, options).weights[17], 0x1p-10);
}

TEST(Refinement, SingleKeyLseIsItsExactLogit) {
  // One visible key: lse equals the logit q.k * scale = 1 + 2^-24 exactly, a
  // float32 tie (to 1) and a float64 value.
  Problem problem = single_head({{1 + 0x1p-24}}, {{1}}, {{5}});
  problem.scale = 1.0;
  ReferenceOptions options;
  options.target = FormatId::float32;
  EXPECT_EQ(certified_row(problem, {0, 0, 0}, options).lse, 1.0);
  options.target = FormatId::float64;
  EXPECT_EQ(certified_row(problem, {0, 0, 0}, options).lse, 1 + 0x1p-24);
  // The same with the default scale 1/sqrt(4) = 1/2: lse = (1 + 2^-24) / 2.
  problem.scale.reset();
  problem.dims.d_k = 4;
  problem.q = {1 + 0x1p-24, 0, 0, 0};
  problem.k = {1, 0, 0, 0};
  options.target = FormatId::float32;
  EXPECT_EQ(certified_row(problem, {0, 0, 0}, options).lse, 0.5);
}

TEST(Refinement, GivesUpLoudlyAtTheCap) {
  const Problem problem = near_midpoint_problem(53, true);
  ReferenceOptions options;
  options.max_precision_bits = 120;  // the case needs about 146
  EXPECT_THROW(certified_row(problem, {0, 0, 0}, options), ReferenceError);
}

TEST(Refinement, HugeLogitsNeitherOverflowNorLoseTheWinner) {
  // Dot products near 2^2000 (far beyond double): the winning key takes all
  // the weight, exactly representable in every format.
  const double big = 0x1p1000;
  const Problem problem = single_head({{big, big}}, {{big, 0}, {big, big}, {-big, big}}, {{3}, {5}, {7}});
  ReferenceOptions options;
  for (FormatId target : all_formats()) {
    options.target = target;
    const RowResult row = certified_row(problem, {0, 0, 0}, options);
    EXPECT_EQ(row.out[0], 5.0) << format_info(target).name;
    EXPECT_EQ(row.weights[1], 1.0);
    EXPECT_TRUE(same_value(row.weights[0], 0.0));
    EXPECT_TRUE(same_value(row.weights[2], 0.0));
    // lse = 2^2001 / sqrt 2 overflows every format: to +inf, or NaN in e4m3fn.
    if (target == FormatId::float8_e4m3fn) EXPECT_TRUE(std::isnan(row.lse));
    else EXPECT_EQ(row.lse, INFINITY);
  }
}

TEST(Refinement, NearlyTiedHugeLogitsDoNotOverflow) {
  // Dot products 2^110 and 2^110 + 2^32 agree to 78 bits, so a rough
  // comparison cannot tell which is larger, yet their scaled difference
  // (about 3e9) puts exp() beyond MPFR's exponent range. The reference must
  // re-centre on the larger key: the second key takes all the weight.
  const Problem problem = single_head({{0x1p55, 0x1p32}}, {{0x1p55, 0}, {0x1p55, 1}}, {{3}, {5}});
  const RowResult row = certified_row(problem, {0, 0, 0});
  EXPECT_EQ(row.out[0], 5.0);
  EXPECT_EQ(row.weights[1], 1.0);
  EXPECT_TRUE(same_value(row.weights[0], 0.0));
}

TEST(Refinement, TwoWorkingPrecisionsAgreeOnRandomProblems) {
  std::mt19937_64 random(7);
  std::uniform_int_distribution<int> size(1, 5);
  for (int trial = 0; trial < 40; ++trial) {
    Dims dims;
    dims.kv_heads = size(random) % 2 + 1;
    dims.q_heads = dims.kv_heads * (size(random) % 3 + 1);
    dims.q_len = size(random);
    dims.kv_len = size(random);
    dims.d_k = size(random);
    dims.d_v = size(random);
    const FormatId input_format = all_formats()[static_cast<std::size_t>(trial) % all_formats().size()];
    Problem problem = random_problem(random, dims, input_format);
    if (trial % 3 == 1) problem.softcap = 1.5;
    if (trial % 4 == 2) problem.causal = trial % 8 == 2 ? Causal::top_left : Causal::bottom_right;
    for (FormatId target : all_formats()) {
      ReferenceOptions low, high;
      low.target = high.target = target;
      high.start_precision_bits = 400;
      const ReferenceResult a = certified_attention(problem, low), b = certified_attention(problem, high);
      for (std::size_t i = 0; i < a.out.size(); ++i) ASSERT_TRUE(same_value(a.out[i], b.out[i])) << trial;
      for (std::size_t i = 0; i < a.lse.size(); ++i) ASSERT_TRUE(same_value(a.lse[i], b.lse[i])) << trial;
      for (std::size_t i = 0; i < a.weights.size(); ++i) ASSERT_TRUE(same_value(a.weights[i], b.weights[i])) << trial;
    }
  }
}

}  // namespace
}  // namespace attnspec
