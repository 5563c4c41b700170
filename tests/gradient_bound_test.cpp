// The backward's bound (spec/gradient_bound.hpp, SPEC 6.11) and the fast
// gradients it encloses (reference/fast_gradients.hpp): the enclosures
// hold the certified gradients and are narrow; a naive float32 backward is
// within its bound, the bound is not vacuous (a gradient a few bound
// widths off fails), and the harness's verdicts, whichever path decides
// them, are those of a judgement against the multiprecision gradients.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "adapters/naive/naive_kernel.hpp"
#include "properties/gradient_check.hpp"
#include "reference/fast_gradients.hpp"
#include "reference/gradients.hpp"
#include "problem_builder.hpp"

namespace attnspec {
namespace {

using testing::featured_problem;

struct Tensors {
  const std::vector<double>& a;
  const std::vector<double>& b;
  const std::vector<double>& c;
  const char* name;
};

TEST(GradientBound, FastGradientsEncloseTheCertifiedOnesNarrowly) {
  std::mt19937_64 random(5);
  for (int index = 0; index < 16; ++index) {
    const Problem p = featured_problem(index, random);
    const std::vector<ForwardRow> forward = forward_rows(p);
    const GradientEnclosure fast = enclosed_gradients(p, forward);
    const GradientResult exact = certified_gradients(p);
    const GradientBounds bounds = gradient_bounds(p, GradientClass{FormatClass{}, std::nullopt}, forward);
    const auto check = [&](const std::vector<double>& approx, const std::vector<double>& error,
                           const std::vector<double>& certified, const std::vector<double>& scale, const char* name) {
      ASSERT_EQ(approx.size(), certified.size()) << name;
      for (std::size_t i = 0; i < approx.size(); ++i) {
        // The certified value is within half a float64 ulp of the exact one.
        EXPECT_LE(std::fabs(approx[i] - certified[i]), error[i] + 0x1p-53 * std::fabs(certified[i]))
            << name << "[" << i << "] of problem " << index;
        // Narrow: a few float64 roundings of the terms' magnitudes, far
        // below a float32 kernel's bound.
        EXPECT_LE(error[i], 0x1p-40 * scale[i] + 0x1p-1000) << name << "[" << i << "] of problem " << index;
      }
    };
    check(fast.dq, fast.dq_error, exact.dq, bounds.dq_scale, "dq");
    check(fast.dk, fast.dk_error, exact.dk, bounds.dk_scale, "dk");
    check(fast.dv, fast.dv_error, exact.dv, bounds.dv_scale, "dv");
    check(fast.dsink, fast.dsink_error, exact.dsink, bounds.dsink_scale, "dsink");
  }
}

// The float32 textbook backward is within its bound, and the bound is not
// vacuous: below 2^-8 of the value's terms' magnitudes (2^16 units of
// float32), so bfloat16-sized errors fail a float32 claim. These problems'
// logits reach hundreds, where each weight's bound is about 2 Delta, a few
// thousand units (SPEC 6.4 and 6.11 step 1).
TEST(GradientBound, NaiveFloat32IsWithinABoundThatIsNotVacuous) {
  std::mt19937_64 random(8);
  const std::unique_ptr<Kernel> naive = make_naive_f32();
  for (int index = 0; index < 16; ++index) {
    const Problem p = featured_problem(index, random);
    GradientEvaluation e = evaluate_gradients(*naive, p);
    ErrorStats stats;
    EXPECT_EQ(gradients_outside_bound(p, e, FormatId::float32, stats), "") << "problem " << index;
    EXPECT_EQ(stats.unbounded, 0u);
    for (std::size_t i = 0; i < e.bounds.dq.size(); ++i) {
      // Values whose terms are all below float32's normal range are bounded
      // by the underflow term n lambda alone.
      if (e.bounds.dq_scale[i] < 0x1p-100) continue;
      const double units = e.bounds.dq[i] / (0x1p-24 * e.bounds.dq_scale[i]);
      EXPECT_LT(units, 0x1p16) << "dq[" << i << "] of problem " << index;
    }
    // The same gradients, one value moved by three times its bound, fail.
    std::size_t moved = 0;
    for (std::size_t i = 1; i < e.got.dk.size(); ++i)
      if (e.bounds.dk[i] > e.bounds.dk[moved]) moved = i;
    const double bound = rounded_gradient_bound(e.bounds.dk[moved], std::fabs(e.got.dk[moved]), FormatId::float32);
    e.got.dk[moved] += 3 * bound;
    ErrorStats moved_stats;
    EXPECT_NE(gradients_outside_bound(p, e, FormatId::float32, moved_stats), "") << "problem " << index;
  }
}

// A float64 kernel's bounds are a few float64 ulps, where the long double
// enclosure's width matters: verdicts on values placed just inside and
// just outside each bound agree with those against the multiprecision
// gradients.
TEST(GradientBound, VerdictsAgreeWithTheMultiprecisionGradients) {
  std::mt19937_64 random(11);
  const std::unique_ptr<Kernel> naive = make_naive_f64();
  for (int index = 0; index < 8; ++index) {
    const Problem p = featured_problem(index, random);
    const GradientResult exact = certified_gradients(p);
    GradientEvaluation e = evaluate_gradients(*naive, p);
    for (const double where : {0.9, 1.1}) {
      GradientEvaluation placed = e;
      std::size_t i = 0;
      for (; i < placed.got.dq.size() && placed.bounds.dq[i] == 0; ++i) {
      }
      ASSERT_LT(i, placed.got.dq.size());
      const double bound = rounded_gradient_bound(placed.bounds.dq[i], std::fabs(exact.dq[i]), FormatId::float64);
      placed.got.dq[i] = exact.dq[i] + where * bound;
      ErrorStats stats;
      const bool failed = !gradients_outside_bound(p, placed, FormatId::float64, stats).empty();
      EXPECT_EQ(failed, where > 1) << "problem " << index << ", placed at " << where << " of the bound";
    }
  }
}

// SPEC 6.11's underflow terms: a float32 backward that flushes subnormal
// results to zero, as XLA on the CPU does (docs/findings/jax-0.10.2.md,
// finding 32, whose shrunk case this is), is within its bound, and the
// bound that admits it stays at the scale of float32's smallest normal.
// Logits 118 and 216: w_0 = e^-98 = 2.7e-43 flushes to 0, so dQ, dK and
// dV_0 come out 0 and dV_1 is dO, where the exact dK_0 reaches -1.24e-38.
TEST(GradientBound, AFlushingFloat32BackwardIsWithinTheUnderflowTerms) {
  // Filled directly: testing::single_head with one query row trips GCC
  // 12's -Wstringop-overflow (a false positive in vector::insert).
  Problem p;
  p.dims.q_len = 1;
  p.dims.kv_len = 2;
  p.dims.d_k = p.dims.d_v = 4;
  p.q = {6, 0, -8, 32};
  p.k = {2, 0, -24, 1, 0, 56, -14, 10};
  p.v = {-12, -32, 24, 6, -48, 14, -8, 8};
  p.dout = {-3, 32, -40, -16};
  const std::unique_ptr<Kernel> naive = make_naive_f32();
  GradientEvaluation e = evaluate_gradients(*naive, p);
  const GradientResult exact = certified_gradients(p);
  ASSERT_LT(exact.dk[3], -1e-38);  // a normal float32 number the flush loses
  ASSERT_GT(exact.dk[3], -2e-38);
  std::fill(e.got.dq.begin(), e.got.dq.end(), 0.0);
  std::fill(e.got.dk.begin(), e.got.dk.end(), 0.0);
  std::fill(e.got.dv.begin(), e.got.dv.begin() + 4, 0.0);
  std::copy(p.dout.begin(), p.dout.end(), e.got.dv.begin() + 4);
  ErrorStats stats;
  EXPECT_EQ(gradients_outside_bound(p, e, FormatId::float32, stats), "");
  // Not vacuous: dK_0's bound is of the order of the products of lambda
  // (2^-126) with the row's magnitudes, and a value 2^-100 off fails.
  EXPECT_LT(e.bounds.dk[3], 0x1p-100);
  e.got.dk[3] = 0x1p-100;
  ErrorStats moved;
  EXPECT_NE(gradients_outside_bound(p, e, FormatId::float32, moved), "");
}

}  // namespace
}  // namespace attnspec
