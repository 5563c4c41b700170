// The certified backward reference (reference/gradients.hpp) against a
// direct evaluation of spec/SPEC.md section 2.6's formulas at 600 bits
// (plain MPFR, no intervals, no grouping, no exact forms: a different
// code path), against closed forms where the gradients are rational, and
// on the section's rules for blocked keys and non-finite inputs.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>

#include "formats/round_multiprecision.hpp"
#include "reference/gradients.hpp"
#include "reference/multiprecision.hpp"
#include "problem_builder.hpp"

namespace attnspec {
namespace {

using testing::featured_problem;
using testing::random_problem;
using testing::with_dout;

constexpr int kDirectBits = 600;

struct DirectGradients {
  std::vector<Real> dq, dk, dv, dsink;
  // Per value, the sum of its terms' magnitudes before any cancellation
  // (|w_j| (|dP_j| + sum_k w_k |dP_k|) for a dX_j): what 600 bits of
  // working precision are relative to.
  std::vector<Real> dq_size, dk_size, dv_size, dsink_size;
};

// Section 2.6 term by term: x_j, w_j = exp(x_j - m) / Z, dP_j, D, dS_j, and
// the sums over visible pairs.
DirectGradients direct_gradients(const Problem& p) {
  WorkingPrecision precision(kDirectBits);
  const Dims& d = p.dims;
  const auto dk_w = static_cast<std::size_t>(d.d_k), dv_w = static_cast<std::size_t>(d.d_v);
  const auto S = static_cast<std::size_t>(d.kv_len), Hkv = static_cast<std::size_t>(d.kv_heads);
  DirectGradients g;
  g.dq.assign(p.rows() * dk_w, Real(0));
  g.dk.assign(static_cast<std::size_t>(d.batch) * Hkv * S * dk_w, Real(0));
  g.dv.assign(static_cast<std::size_t>(d.batch) * Hkv * S * dv_w, Real(0));
  g.dsink.assign(p.sinks.size(), Real(0));
  g.dq_size = g.dq;
  g.dk_size = g.dk;
  g.dv_size = g.dv;
  g.dsink_size = g.dsink;
  const Real scale = p.scale ? Real(*p.scale) : Real(1) / sqrt(Real(d.d_k));
  for (std::size_t flat = 0; flat < p.rows(); ++flat) {
    const RowIndex r = p.row_index(flat);
    const int kv = p.kv_head_of(r.head);
    const auto q = p.query_row(r);
    std::vector<int> keys;
    std::vector<Real> x, s;
    for (int j = 0; j < d.kv_len; ++j) {
      if (!p.visible(r, j)) continue;
      const auto k = p.key_row(r.batch, kv, j);
      Real dot = 0;
      for (std::size_t t = 0; t < dk_w; ++t) dot += Real(q[t]) * Real(k[t]);
      Real logit = scale * dot;
      if (p.softcap) logit = Real(*p.softcap) * tanh(logit / Real(*p.softcap));
      keys.push_back(j);
      s.push_back(scale * dot);
      x.push_back(logit + Real(p.mask_value(r, j)) + Real(p.alibi_bias(r, j)));
    }
    const std::optional<double> sink = p.sink(r);
    if (keys.empty()) continue;
    Real top = sink ? Real(*sink) : x[0];
    for (const Real& xj : x)
      if (xj > top) top = xj;
    Real z = sink ? exp(Real(*sink) - top) : Real(0);
    for (const Real& xj : x) z += exp(xj - top);
    const std::span<const double> dout(p.dout.data() + flat * dv_w, dv_w);
    std::vector<Real> w, dp;
    Real big_d = 0, d_size = 0;
    for (std::size_t a = 0; a < keys.size(); ++a) {
      w.push_back(exp(x[a] - top) / z);
      const auto v = p.value_row(r.batch, kv, keys[a]);
      Real sum = 0;
      for (std::size_t t = 0; t < dv_w; ++t) sum += Real(dout[t]) * Real(v[t]);
      dp.push_back(sum);
      big_d += w[a] * dp[a];
      d_size += w[a] * abs(dp[a]);
    }
    if (sink) {
      const Real sink_weight = exp(Real(*sink) - top) / z;
      g.dsink[static_cast<std::size_t>(r.head)] -= sink_weight * big_d;
      g.dsink_size[static_cast<std::size_t>(r.head)] += sink_weight * d_size;
    }
    for (std::size_t a = 0; a < keys.size(); ++a) {
      Real ds = w[a] * (dp[a] - big_d);
      Real ds_size = w[a] * (abs(dp[a]) + d_size);
      if (p.softcap) {
        const Real t = tanh(s[a] / Real(*p.softcap));
        ds *= 1 - t * t;
        ds_size *= 1 - t * t;
      }
      ds *= scale;
      ds_size *= scale;
      const auto k = p.key_row(r.batch, kv, keys[a]);
      const std::size_t block = (static_cast<std::size_t>(r.batch) * Hkv + static_cast<std::size_t>(kv)) * S +
                                static_cast<std::size_t>(keys[a]);
      for (std::size_t t = 0; t < dk_w; ++t) {
        g.dq[flat * dk_w + t] += ds * Real(k[t]);
        g.dk[block * dk_w + t] += ds * Real(q[t]);
        g.dq_size[flat * dk_w + t] += ds_size * abs(Real(k[t]));
        g.dk_size[block * dk_w + t] += ds_size * abs(Real(q[t]));
      }
      for (std::size_t t = 0; t < dv_w; ++t) {
        g.dv[block * dv_w + t] += w[a] * Real(dout[t]);
        g.dv_size[block * dv_w + t] += w[a] * abs(Real(dout[t]));
      }
    }
  }
  return g;
}

// Bit for bit, except that a direct value below 2^-550 of its terms'
// magnitude is the residue of an exact cancellation (600 bits leave about
// 2^-590; a true value that small would need inputs built to cancel), so
// the certified one must be an exact +0. Tiny values that are no such
// residue (weights of exp(-1000) on keys far below the maximum) are real.
void expect_matches(const std::vector<Real>& direct, const std::vector<Real>& size,
                    const std::vector<double>& certified, FormatId target, const char* what, int problem) {
  ASSERT_EQ(direct.size(), certified.size()) << what;
  for (std::size_t i = 0; i < direct.size(); ++i) {
    if (abs(direct[i]) <= size[i] * Real(std::ldexp(1.0, -550))) {
      EXPECT_EQ(std::bit_cast<std::uint64_t>(certified[i]), 0u)
          << what << "[" << i << "] of problem " << problem << ": exact zero expected, got " << certified[i];
      continue;
    }
    const double expected = round_to_format(direct[i].backend().data(), target);
    EXPECT_TRUE(same_value(expected, certified[i]))
        << what << "[" << i << "] of problem " << problem << ": direct " << expected << ", certified " << certified[i];
  }
}

TEST(Gradients, MatchADirectEvaluationAtHighPrecision) {
  std::mt19937_64 random(14);
  for (int index = 0; index < 16; ++index) {
    const Problem p = featured_problem(index, random);
    ASSERT_TRUE(validate(p).empty()) << validate(p).front();
    const DirectGradients direct = direct_gradients(p);
    for (FormatId target : {FormatId::float64, FormatId::float32, FormatId::bfloat16}) {
      const GradientResult certified = certified_gradients(p, {.target = target});
      expect_matches(direct.dq, direct.dq_size, certified.dq, target, "dq", index);
      expect_matches(direct.dk, direct.dk_size, certified.dk, target, "dk", index);
      expect_matches(direct.dv, direct.dv_size, certified.dv, target, "dv", index);
      expect_matches(direct.dsink, direct.dsink_size, certified.dsink, target, "dsink", index);
    }
  }
}

TEST(Gradients, UniformRowsHaveExactRationalGradients) {
  // A zero query gives each of the 3 keys the weight 1/3, an interval that
  // is never a point: with d_k = 4 (scale 1/2) every gradient is rational,
  // dK is 0 (Q = 0), and dV[j][0] = (3 + 3 * 2^-8) / 3 = 1 + 2^-8 is a
  // bfloat16 midpoint, which only the exact form can round (to even: 1).
  Problem p = testing::single_head({{0, 0, 0, 0}, {0, 0, 0, 0}}, {{1, 2, 0, -1}, {0.5, 0, 3, 1}, {-2, 1, 1, 0}},
                                   {{1, -1}, {2, 0.5}, {-3, 1}});
  p.dout = {3, 2, 0.01171875, 0.25};
  const GradientResult bf16 = certified_gradients(p, {.target = FormatId::bfloat16});
  for (int j = 0; j < 3; ++j) EXPECT_EQ(bf16.dv[static_cast<std::size_t>(j * 2)], 1.0) << j;
  EXPECT_GE(bf16.stats.exact_values, 3u);
  const GradientResult g = certified_gradients(p);
  for (double x : g.dk) EXPECT_EQ(std::bit_cast<std::uint64_t>(x), 0u);
  for (int j = 0; j < 3; ++j) {
    EXPECT_EQ(g.dv[static_cast<std::size_t>(j * 2)], 1.00390625) << j;
    EXPECT_EQ(g.dv[static_cast<std::size_t>(j * 2 + 1)], 0.75) << j;
  }
  // dQ_i = (1/2) sum_j (dP_ij - mean_i dP) / 3 * K_j. Row 0, dO = (3, 2):
  // dP = (1, 7, -7), mean 1/3, dX = (2/9, 20/9, -22/9); column 0:
  // (1/2)(2/9 + 10/9 + 44/9) = 28/9 (its double is the quotient's correct
  // rounding); column 1: (1/2)(4/9 - 22/9) = -1.
  EXPECT_EQ(g.dq[0], 28.0 / 9.0);
  EXPECT_EQ(g.dq[1], -1.0);
}

TEST(Gradients, ZeroDoutGivesPositiveZeros) {
  std::mt19937_64 random(3);
  Problem p = random_problem(random, {1, 2, 1, 3, 5, 4, 3}, FormatId::float32);
  p.sinks = {0.5, -2};
  p.dout.assign(p.out_size(), 0.0);
  const GradientResult g = certified_gradients(p);
  for (const std::vector<double>* tensor : {&g.dq, &g.dk, &g.dv, &g.dsink})
    for (double x : *tensor) EXPECT_EQ(std::bit_cast<std::uint64_t>(x), 0u);
}

// Equal value rows give every key the same dP, so dS = 0 though the
// logits differ: dQ and dK are exactly 0, which no interval can round;
// the exact forms settle them (dQ's by its grouped coefficients, all 0,
// reference/gradient_exact.cpp), and dV is the weights times dO.
TEST(Gradients, EqualValuesGiveExactZeroQueryAndKeyGradients) {
  Problem p = testing::single_head({{1, 0.5, 0, -1}, {0.25, -2, 1, 0}}, {{1, 2, 0, -1}, {0.5, 0, 3, 1}, {-2, 1, 1, 0}},
                                   {{1.5, -1}, {1.5, -1}, {1.5, -1}});
  p.dout = {3, 2, -0.5, 0.25};
  const GradientResult g = certified_gradients(p, {.target = FormatId::float32});
  for (const std::vector<double>* tensor : {&g.dq, &g.dk})
    for (double x : *tensor) EXPECT_EQ(std::bit_cast<std::uint64_t>(x), 0u);
  EXPECT_GE(g.stats.exact_values, g.dq.size() + g.dk.size());
  for (double x : g.dv) EXPECT_NE(x, 0.0);
}

TEST(Gradients, BlockedPairsContributeNothingWhateverTheyHold) {
  std::mt19937_64 random(5);
  Problem p = with_dout(random_problem(random, {1, 1, 1, 3, 5, 2, 2}, FormatId::float32), random, FormatId::float32);
  p.causal = Causal::top_left;  // keys 3 and 4 seen by no row
  Problem poisoned = p;
  for (int j : {3, 4})
    for (int t = 0; t < 2; ++t) {
      poisoned.k[static_cast<std::size_t>(j * 2 + t)] = NAN;
      poisoned.v[static_cast<std::size_t>(j * 2 + t)] = INFINITY;
    }
  const GradientResult a = certified_gradients(p), b = certified_gradients(poisoned);
  for (std::size_t i = 0; i < a.dq.size(); ++i) EXPECT_TRUE(same_value(a.dq[i], b.dq[i])) << i;
  for (std::size_t i = 0; i < a.dk.size(); ++i) EXPECT_TRUE(same_value(a.dk[i], b.dk[i])) << i;
  for (std::size_t i = 0; i < a.dv.size(); ++i) EXPECT_TRUE(same_value(a.dv[i], b.dv[i])) << i;
  for (std::size_t i = 6; i < 10; ++i) {
    EXPECT_EQ(std::bit_cast<std::uint64_t>(b.dk[i]), 0u) << i;
    EXPECT_EQ(std::bit_cast<std::uint64_t>(b.dv[i]), 0u) << i;
  }
}

TEST(Gradients, NonFiniteInputsReachExactlyTheSumsTheyEnter) {
  std::mt19937_64 random(6);
  Problem p = with_dout(random_problem(random, {1, 1, 1, 3, 3, 2, 2}, FormatId::float32), random, FormatId::float32);
  p.causal = Causal::top_left;  // row i sees keys 0..i
  // Infinity in dO of row 1, column 0: dV[j][0] for the keys row 1 sees
  // (0 and 1) is NaN, and the row's dP, so its dQ and those keys' dK.
  Problem dout_inf = p;
  dout_inf.dout[2] = INFINITY;
  GradientResult g = certified_gradients(dout_inf);
  EXPECT_FALSE(std::isnan(g.dq[0]));
  EXPECT_TRUE(std::isnan(g.dq[2]) && std::isnan(g.dq[3]));
  EXPECT_FALSE(std::isnan(g.dq[4]));
  for (int j : {0, 1}) {
    EXPECT_TRUE(std::isnan(g.dv[static_cast<std::size_t>(j * 2)])) << j;
    EXPECT_FALSE(std::isnan(g.dv[static_cast<std::size_t>(j * 2 + 1)])) << j;
    EXPECT_TRUE(std::isnan(g.dk[static_cast<std::size_t>(j * 2)])) << j;
  }
  EXPECT_FALSE(std::isnan(g.dv[4]) || std::isnan(g.dk[4]));
  // NaN in V of key 2 (seen by row 2 only): dP of row 2 is NaN; dV stays finite.
  Problem v_nan = p;
  v_nan.v[4] = NAN;
  g = certified_gradients(v_nan);
  EXPECT_TRUE(std::isnan(g.dq[4]));
  EXPECT_FALSE(std::isnan(g.dq[0]) || std::isnan(g.dq[2]));
  for (double x : g.dv) EXPECT_FALSE(std::isnan(x));
  // NaN in a query: its row's logits; every key it sees gets NaN dK and dV.
  Problem q_nan = p;
  q_nan.q[2] = NAN;  // row 1
  g = certified_gradients(q_nan);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_TRUE(std::isnan(g.dk[i]) && std::isnan(g.dv[i])) << i;
  EXPECT_FALSE(std::isnan(g.dk[4]) || std::isnan(g.dv[4]));
  EXPECT_FALSE(std::isnan(g.dq[0]) || std::isnan(g.dq[4]));
}

TEST(Gradients, KeyGradientsOfAHeadSumToZeroWithinRounding) {
  // Without softcap or sink sum_j dX_j = 0 in each row, so sum_j dK_j = 0:
  // with each dK correctly rounded (relative error at most u), the exact
  // sum of the rounded values is at most u/(1-u) sum_j |dK_j|.
  std::mt19937_64 random(8);
  for (int index = 0; index < 6; ++index) {
    Problem p = with_dout(random_problem(random, {1, 2, 1, 4, 6, 3, 2}, FormatId::float32), random, FormatId::float32);
    if (index % 2) p.causal = Causal::bottom_right;
    const GradientResult g = certified_gradients(p, {.target = FormatId::float32});
    const double u = std::ldexp(1.0, -24);
    for (int t = 0; t < 3; ++t) {
      Rational sum = 0, magnitude = 0;
      for (int j = 0; j < 6; ++j) {
        const double x = g.dk[static_cast<std::size_t>(j * 3 + t)];
        sum += exact_rational(x);
        magnitude += exact_rational(std::fabs(x));
      }
      EXPECT_LE(abs(sum), magnitude * exact_rational(u / (1 - u))) << "problem " << index << ", column " << t;
    }
  }
}

TEST(Gradients, RefinementReachesTheSameValues) {
  // Starting at 12 bits almost nothing is decided at first: every later
  // round must land on the values of the default start.
  std::mt19937_64 random(9);
  const Problem p = featured_problem(7, random);
  const GradientResult plain = certified_gradients(p);
  const GradientResult refined = certified_gradients(p, {.start_precision_bits = 12});
  EXPECT_GT(refined.stats.refined_values, 0u);
  for (std::size_t i = 0; i < plain.dq.size(); ++i) EXPECT_TRUE(same_value(plain.dq[i], refined.dq[i])) << i;
  for (std::size_t i = 0; i < plain.dk.size(); ++i) EXPECT_TRUE(same_value(plain.dk[i], refined.dk[i])) << i;
  for (std::size_t i = 0; i < plain.dv.size(); ++i) EXPECT_TRUE(same_value(plain.dv[i], refined.dv[i])) << i;
  for (std::size_t i = 0; i < plain.dsink.size(); ++i) EXPECT_TRUE(same_value(plain.dsink[i], refined.dsink[i])) << i;
  EXPECT_THROW(certified_gradients(p, {.start_precision_bits = 8, .max_precision_bits = 16}), ReferenceError);
}

TEST(Gradients, RefusesProblemsWithoutDout) {
  std::mt19937_64 random(10);
  Problem p = random_problem(random, {1, 1, 1, 2, 2, 2, 2}, FormatId::float32);
  EXPECT_THROW(certified_gradients(p), std::invalid_argument);
  p.dout = {1, 2, 3};
  EXPECT_FALSE(validate(p).empty());
}

}  // namespace
}  // namespace attnspec
