// The ALiBi slopes onto ggml's max_bias (adapters/ggml/alibi_slopes.hpp):
// the expected slopes are worked out by hand from ggml's formula, not
// computed by the code under test.
#include <gtest/gtest.h>

#include <vector>

#include "adapters/ggml/alibi_slopes.hpp"
#include "adapters/kernel.hpp"

namespace attnspec {
namespace {

Alibi alibi_of(std::vector<double> slopes, bool per_batch = false) {
  Alibi alibi;
  alibi.slopes = std::move(slopes);
  alibi.per_batch = per_batch;
  return alibi;
}

TEST(GgmlAlibi, NoAlibiIsMaxBiasZeroWithSlopesOne) {
  const GgmlAlibi plan = plan_ggml_alibi(std::nullopt, 2, 3);
  EXPECT_EQ(plan.max_bias, 0.0f);
  EXPECT_EQ(plan.divisors, (std::vector<double>{1, 1, 1}));
}

// The ALiBi paper's slopes (max_bias 8) for head counts whose slopes are
// powers of two: 8 heads 2^-1 ... 2^-8; 6 heads (n = 4): 2^-2, 2^-4, 2^-6,
// 2^-8, then m1 = 2^-1: 2^-1, 2^-3.
TEST(GgmlAlibi, ThePapersSlopesAreGgmlsOwnWithMaxBias8) {
  for (int heads : {1, 2, 3, 4, 5, 6, 7, 8}) {
    const std::vector<double> paper = alibi_paper_slopes(heads);
    const GgmlAlibi plan = plan_ggml_alibi(alibi_of(paper), 1, heads);
    EXPECT_EQ(plan.max_bias, 8.0f) << heads << " heads";
    EXPECT_TRUE(plan.formula) << heads << " heads";
    const std::vector<float> ggml = ggml_alibi_slopes(8.0f, heads);
    for (int h = 0; h < heads; ++h)
      EXPECT_EQ(static_cast<double>(ggml[static_cast<std::size_t>(h)]), paper[static_cast<std::size_t>(h)])
          << heads << " heads, head " << h;
  }
  EXPECT_EQ(ggml_alibi_slopes(8.0f, 6), (std::vector<float>{0x1p-2f, 0x1p-4f, 0x1p-6f, 0x1p-8f, 0x1p-1f, 0x1p-3f}));
}

// From 12 heads on (n = 8 beyond the eighth head, or n = 16) the paper's
// slopes are not powers of two, and ggml's powf products miss the rounded
// formula: with 16 heads head 14's slope is 0.00552427024 (the paper's,
// rounded to float, 0.00552427163). The problem is still given to ggml as
// max_bias 8, so that ggml's own slopes are judged.
TEST(GgmlAlibi, SixteenHeadsGetMaxBias8ThoughGgmlsSlopesMissThePapers) {
  const std::vector<double> paper = alibi_paper_slopes(16);
  const GgmlAlibi plan = plan_ggml_alibi(alibi_of(paper), 1, 16);
  EXPECT_EQ(plan.max_bias, 8.0f);
  EXPECT_TRUE(plan.formula);
  EXPECT_EQ(plan.divisors, paper);
  EXPECT_EQ(ggml_alibi_slopes(8.0f, 16)[14], 0.00552427024f);
  EXPECT_EQ(static_cast<float>(paper[14]), 0.00552427163f);
}

// A head run alone (BATCH's decomposition) keeps its slope: 2^-5 is ggml's
// own for one head with max_bias 5.
TEST(GgmlAlibi, OneHeadsSlopeIsItsOwnMaxBias) {
  const GgmlAlibi plan = plan_ggml_alibi(alibi_of({0x1p-5}), 1, 1);
  EXPECT_EQ(plan.max_bias, 5.0f);
  EXPECT_TRUE(plan.formula);
  // And 2^-2.5 rounded to float, head 4 of 16 run alone: max_bias 2.5.
  const GgmlAlibi half = plan_ggml_alibi(alibi_of({alibi_paper_slopes(16)[4]}), 1, 1);
  EXPECT_EQ(half.max_bias, 2.5f);
}

// Slopes ggml cannot make (3/16, 4/16, 5/16) get powers of two, whose
// quotients the adapter writes into the mask: 3 heads, n = 2, max_bias 4,
// m0 = 2^-2, m1 = 2^-1.
TEST(GgmlAlibi, OtherSlopesGetPowersOfTwo) {
  const GgmlAlibi three = plan_ggml_alibi(alibi_of({3 / 16.0, 4 / 16.0, 5 / 16.0}), 1, 3);
  EXPECT_EQ(three.max_bias, 4.0f);
  EXPECT_FALSE(three.formula);
  EXPECT_EQ(three.divisors, (std::vector<double>{0x1p-2, 0x1p-4, 0x1p-1}));
  const GgmlAlibi four = plan_ggml_alibi(alibi_of({0.0, 1 / 16.0, 2 / 16.0, 3 / 16.0}), 1, 4);
  EXPECT_EQ(four.max_bias, 4.0f);  // n = 4, m0 = 2^-1
  EXPECT_EQ(four.divisors, (std::vector<double>{0x1p-1, 0x1p-2, 0x1p-3, 0x1p-4}));
}

TEST(GgmlAlibi, PerBatchSlopesMustAgreeBetweenEntries) {
  EXPECT_NO_THROW(plan_ggml_alibi(alibi_of({0.5, 0.25, 0.5, 0.25}, true), 2, 2));
  EXPECT_THROW(plan_ggml_alibi(alibi_of({0.5, 0.25, 0.5, 0.125}, true), 2, 2), KernelUnsupported);
  EXPECT_THROW(plan_ggml_alibi(alibi_of({-0.5}), 1, 1), KernelUnsupported);
}

}  // namespace
}  // namespace attnspec
