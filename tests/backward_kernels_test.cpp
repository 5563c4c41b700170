// The built-in backward passes (naive-f64, naive-f32) against the certified
// gradients where every step is exact in their arithmetic, so that any
// difference is a wrong formula and no tolerance is involved; and the rules
// of spec/SPEC.md section 2.6 for blocked keys and non-finite inputs. Their
// errors elsewhere, and the online kernels' (FlashAttention 2's backward,
// never exact: P comes from a float32 lse), are GRADPREC's business.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <random>

#include "adapters/naive/naive_kernel.hpp"
#include "adapters/online/online_kernel.hpp"
#include "reference/gradients.hpp"
#include "problem_builder.hpp"

namespace attnspec {
namespace {

// Zero queries give equal logits, hence weights 1/n; a bool mask makes
// every n a power of two (without a sink rows see 1, 2, 4 and 2 keys; with
// one, whose logit 0 equals every key's, 1, 3, 3 and 1 keys and the sink).
// With small dyadic keys, values and dO and d_k = 4 (scale 1/2), every
// intermediate of the textbook backward is then exact in float32.
Problem exactly_computable(bool with_sink) {
  std::mt19937_64 random(21);
  Problem p = testing::random_problem(random, {2, 4, 2, 4, 4, 4, 3}, FormatId::bfloat16);
  for (double& x : p.q) x = 0;
  p.mask_kind = MaskKind::boolean;
  const int without_sink[4][4] = {{1, 0, 0, 0}, {0, 1, 1, 0}, {1, 1, 1, 1}, {0, 0, 1, 1}};
  const int beside_sink[4][4] = {{1, 0, 0, 0}, {1, 1, 1, 0}, {0, 1, 1, 1}, {0, 0, 0, 1}};
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) p.mask.push_back(with_sink ? beside_sink[i][j] : without_sink[i][j]);
  if (with_sink) p.sinks = {0.0, 0.0, 0.0, 0.0};
  p.dout.resize(p.out_size());
  for (double& x : p.dout) x = testing::random_value(random, FormatId::bfloat16);
  return p;
}

void expect_bits(const std::vector<double>& kernel, const std::vector<double>& certified, const char* what) {
  ASSERT_EQ(kernel.size(), certified.size()) << what;
  for (std::size_t i = 0; i < kernel.size(); ++i)
    EXPECT_EQ(std::bit_cast<std::uint64_t>(kernel[i]), std::bit_cast<std::uint64_t>(certified[i]))
        << what << "[" << i << "]: kernel " << kernel[i] << ", certified " << certified[i];
}

TEST(BackwardKernels, NaiveGradientsAreExactWhereEveryStepIs) {
  for (bool with_sink : {false, true}) {
    const Problem p = exactly_computable(with_sink);
    ASSERT_TRUE(validate(p).empty()) << validate(p).front();
    for (auto make : {make_naive_f64, make_naive_f32}) {
      const std::unique_ptr<Kernel> kernel = make();
      ASSERT_TRUE(kernel->capabilities().backward) << kernel->name();
      const GradientOutputs got = kernel->run_backward(p);
      const GradientResult exact = certified_gradients(p, {.target = kernel->formats().output});
      expect_bits(got.dq, exact.dq, "dq");
      expect_bits(got.dk, exact.dk, "dk");
      expect_bits(got.dv, exact.dv, "dv");
      expect_bits(got.dsink, exact.dsink, "dsink");
      // Not vacuous: the problem has non-zero gradients of every kind.
      const auto nonzero = [](const std::vector<double>& g) {
        return std::count_if(g.begin(), g.end(), [](double x) { return x != 0; });
      };
      EXPECT_GT(nonzero(exact.dq), 0);
      EXPECT_GT(nonzero(exact.dv), 0);
      if (with_sink) {
        EXPECT_GT(nonzero(exact.dsink), 0);
      }
    }
  }
}

TEST(BackwardKernels, BlockedKeysGetExactZerosWhateverTheyHold) {
  std::mt19937_64 random(22);
  Problem p = testing::random_problem(random, {1, 2, 1, 3, 5, 4, 2}, FormatId::float32);
  p.causal = Causal::top_left;  // keys 3 and 4 unseen
  p.dout.resize(p.out_size());
  for (double& x : p.dout) x = testing::random_value(random, FormatId::float32);
  Problem poisoned = p;
  for (std::size_t i = 12; i < 20; ++i) poisoned.k[i] = NAN;
  for (std::size_t i = 6; i < 10; ++i) poisoned.v[i] = INFINITY;
  const std::unique_ptr<Kernel> kernel = make_naive_f32();
  const GradientOutputs clean = kernel->run_backward(p), dirty = kernel->run_backward(poisoned);
  expect_bits(dirty.dq, clean.dq, "dq");
  expect_bits(dirty.dk, clean.dk, "dk");
  expect_bits(dirty.dv, clean.dv, "dv");
  for (std::size_t i = 12; i < 20; ++i) EXPECT_EQ(std::bit_cast<std::uint64_t>(dirty.dk[i]), 0u) << i;
  for (std::size_t i = 6; i < 10; ++i) EXPECT_EQ(std::bit_cast<std::uint64_t>(dirty.dv[i]), 0u) << i;
}

TEST(BackwardKernels, NonFiniteDoutReachesItsRowAndColumn) {
  std::mt19937_64 random(23);
  Problem p = testing::random_problem(random, {1, 1, 1, 3, 3, 2, 2}, FormatId::float32);
  p.causal = Causal::top_left;
  p.dout.resize(p.out_size());
  for (double& x : p.dout) x = testing::random_value(random, FormatId::float32);
  p.dout[2] = NAN;  // row 1, column 0: keys 0 and 1
  const GradientOutputs g = make_naive_f64()->run_backward(p);
  EXPECT_TRUE(std::isnan(g.dq[2]) && std::isnan(g.dq[3]));
  EXPECT_TRUE(std::isfinite(g.dq[0]) && std::isfinite(g.dq[4]));
  EXPECT_TRUE(std::isnan(g.dv[0]) && std::isnan(g.dv[2]));
  EXPECT_TRUE(std::isfinite(g.dv[1]) && std::isfinite(g.dv[3]) && std::isfinite(g.dv[4]));
  EXPECT_TRUE(std::isfinite(g.dk[4]) && std::isfinite(g.dk[5]));
}

TEST(BackwardKernels, KernelsWithoutABackwardSayWhy) {
  std::mt19937_64 random(24);
  Problem p = testing::random_problem(random, {1, 1, 1, 2, 2, 2, 2}, FormatId::float32);
  p.dout.assign(p.out_size(), 1.0);
  const std::unique_ptr<Kernel> splitkv = make_online_f32_splitkv();
  EXPECT_FALSE(splitkv->capabilities().backward);
  EXPECT_THROW(splitkv->run_backward(p), KernelUnsupported);
  const std::vector<std::string> missing = missing_capabilities(splitkv->capabilities(), p);
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing[0], "needs a backward pass");
  // The naive composition in a narrower storage format (PRECREL's
  // yardstick) has no backward either.
  EXPECT_FALSE(make_naive_kernel(FormatId::bfloat16, FormatId::bfloat16)->capabilities().backward);
}

}  // namespace
}  // namespace attnspec
