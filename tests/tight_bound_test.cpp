// The tight tier (spec/SPEC.md 6.8) where its probabilistic model is known
// to fail: recursive float32 summation of many equal terms, whose errors
// add up like n u rather than sqrt(n) u. A correct kernel that sums so
// stays inside T_t, and a cluster of equal logits widens T_t towards the
// worst case. (At 4096 keys the output's other terms would still cover
// this drift without the cluster; the cluster is there for the rows where
// they would not, which the model cannot rule out.)
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "adapters/kernel.hpp"
#include "adapters/registry.hpp"
#include "properties/harness.hpp"
#include "spec/tight_bound.hpp"
#include "problem_builder.hpp"

namespace attnspec {
namespace {

// The plainest correct float32 kernel: one pass over the keys, every sum
// recursive, as a loop written without tiles would be.
class RecursiveFloat32 final : public Kernel {
 public:
  std::string name() const override { return "recursive-f32"; }
  KernelFormats formats() const override { return {FormatId::float32, FormatId::float32, FormatId::float32}; }
  Capabilities capabilities() const override {
    Capabilities c = full_capabilities();
    c.lse = false;
    c.sinks = false;  // the loop below has none
    return c;
  }
  KernelResult run(const Problem& p) override {
    KernelResult result;
    result.out.assign(p.out_size(), 0.0);
    const int S = p.dims.kv_len, dv = p.dims.d_v, dk = p.dims.d_k;
    for (std::size_t row = 0; row < p.rows(); ++row) {
      const RowIndex r = p.row_index(row);
      const auto q = p.query_row(r);
      std::vector<float> x(static_cast<std::size_t>(S));
      float max = -INFINITY;
      for (int j = 0; j < S; ++j) {
        const auto k = p.key_row(r.batch, p.kv_head_of(r.head), j);
        float dot = 0;
        for (int t = 0; t < dk; ++t) dot += static_cast<float>(q[t]) * static_cast<float>(k[t]);
        x[j] = dot / std::sqrt(static_cast<float>(dk));
        max = std::max(max, x[j]);
      }
      float sum = 0;
      std::vector<float> acc(static_cast<std::size_t>(dv), 0.0f);
      for (int j = 0; j < S; ++j) {
        const float a = std::exp(x[j] - max);
        sum += a;
        const auto v = p.value_row(r.batch, p.kv_head_of(r.head), j);
        for (int t = 0; t < dv; ++t) acc[t] += a * static_cast<float>(v[t]);
      }
      for (int t = 0; t < dv; ++t) result.out[row * dv + t] = acc[t] / sum;
    }
    return result;
  }
};

constexpr int kKeys = 4096;

// One query (q = 1, d_k = 1) against a key of logit 0 and kKeys - 1 keys of
// logit `low` (or, with `spread`, of logits that differ by 2^-10 each);
// values full-precision float32 in [0, 1).
Problem row_of_equal_terms(double low, bool spread) {
  std::mt19937_64 random(7);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<std::vector<double>> k, v;
  for (int j = 0; j < kKeys; ++j) {
    k.push_back({j == 0 ? 0.0 : low - (spread ? std::ldexp(j, -10) : 0.0)});
    v.push_back({round_to_format(unit(random), FormatId::float32)});
  }
  return testing::single_head({{1.0}}, k, v);
}

TEST(TightBound, CorrelatedRecursiveSummationStaysInside) {
  // exp(-2.5) summed 4095 times in float32 drifts by 5.4e-5 relative, more
  // than a sqrt(n) model allows (8 u sqrt(2 n) = 4.3e-5): the premise.
  const float c = std::exp(-2.5f);
  float sum = 1;
  for (int j = 1; j < kKeys; ++j) sum += c;
  const double exact = 1 + (kKeys - 1) * static_cast<double>(c);
  const double drift = std::fabs(sum - exact) / exact;
  ASSERT_GT(drift, kTightLambda * 0x1p-24 * std::sqrt(2.0 * kKeys));

  RecursiveFloat32 kernel;
  const Problem p = row_of_equal_terms(-2.5, false);
  const Evaluation e = evaluate(kernel, p, FullyMaskedRows::as_declared, ReferencePath::fast, Tier::tight);
  const double error = std::fabs(e.got.out[0] - e.ref.out[0]);
  EXPECT_GT(error, 0.3 * drift * std::fabs(e.ref.out[0])) << "the kernel should show the drift";
  EXPECT_TRUE(within_bound(e.got.out[0], e.ref.out[0], e.ref_error[0], e.tight[0], e.ref_low[0]).value_or(false))
      << "error " << error << ", tight bound " << e.tight[0];
}

TEST(TightBound, EqualLogitsWidenTheBound) {
  RecursiveFloat32 kernel;
  const Evaluation equal = evaluate(kernel, row_of_equal_terms(-2.5, false), FullyMaskedRows::as_declared,
                                    ReferencePath::fast, Tier::tight);
  const Evaluation distinct = evaluate(kernel, row_of_equal_terms(-2.5, true), FullyMaskedRows::as_declared,
                                       ReferencePath::fast, Tier::tight);
  // One cluster of 4095 keys: sqrt(sum m^2) ~ n; distinct keys: ~ sqrt(2 n).
  EXPECT_GT(equal.tight[0], 10 * distinct.tight[0]);
  EXPECT_LT(distinct.tight[0], distinct.bound[0] / 10) << "the tight tier should be far below the worst case";
}

TEST(TightBound, NeverLooserThanTheWorstCase) {
  std::mt19937_64 random(3);
  RecursiveFloat32 kernel;
  for (int trial = 0; trial < 20; ++trial) {
    const Problem p = testing::random_problem(random, {1, 2, 1, 5, 40 + trial, 8, 4}, FormatId::float32);
    const Evaluation e = evaluate(kernel, p, FullyMaskedRows::as_declared, ReferencePath::fast, Tier::tight);
    for (std::size_t i = 0; i < e.tight.size(); ++i) {
      EXPECT_LE(e.tight[i], e.bound[i]);
      EXPECT_TRUE(within_bound(e.got.out[i], e.ref.out[i], e.ref_error[i], e.tight[i], e.ref_low[i]).value_or(false));
    }
  }
}

// T_t is homogeneous in V: scaling the values by a power of two scales the
// bound by it, down to where the output rounding's subnormal term matters
// (far below 2^-600 times a unit output in float64). The squares of the
// random terms are of the order of the squared errors, 1e-400 here, so
// they must not be formed in absolute units (a sink of 512 gives keys
// weights of e^-510 and such squares: a false alarm of naive-f64 in the
// ci profile, seed 5).
TEST(TightBound, HomogeneousInTheValues) {
  std::mt19937_64 random(11);
  const std::unique_ptr<Kernel> kernel = make_kernel("naive-f64");
  for (int trial = 0; trial < 10; ++trial) {
    const Problem p = testing::random_problem(random, {1, 1, 1, 2, 3 + trial, 4, 3}, FormatId::float64);
    Problem tiny = p;
    for (double& value : tiny.v) value = std::ldexp(value, -600);
    const Evaluation unit = evaluate(*kernel, p, FullyMaskedRows::as_declared, ReferencePath::fast, Tier::tight);
    const Evaluation scaled = evaluate(*kernel, tiny, FullyMaskedRows::as_declared, ReferencePath::fast, Tier::tight);
    for (std::size_t i = 0; i < unit.tight.size(); ++i) {
      ASSERT_GT(unit.tight[i], 0);
      EXPECT_NEAR(std::ldexp(scaled.tight[i], 600) / unit.tight[i], 1.0, 1e-9) << "trial " << trial << ", output " << i;
    }
  }
}

}  // namespace
}  // namespace attnspec
