// The seeds' worked examples (shared/seeds/001 and 003) through the
// certified reference, asserted against their closed forms: the exact
// expressions evaluated here with plain MPFR scalars at 300 bits and rounded
// once, never against the reference's own output. The seeds' printed
// decimals are checked too, to make sure the closed forms are the seeds'.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "formats/round_multiprecision.hpp"
#include "reference/certified.hpp"
#include "reference/multiprecision.hpp"
#include "problem_builder.hpp"

namespace attnspec {
namespace {

using testing::single_head;

// softmax of the given logits, then the weighted sum of values; at 300 bits.
struct ClosedForm {
  std::vector<Real> weights, out;
  Real lse;
};

ClosedForm softmax_closed_form(const std::vector<Real>& logits, const std::vector<std::vector<double>>& v) {
  WorkingPrecision precision(300);
  ClosedForm form;
  Real z = 0;
  for (const Real& x : logits) z += exp(x);
  form.lse = log(z);
  form.out.assign(v.front().size(), Real(0));
  for (std::size_t j = 0; j < logits.size(); ++j) {
    form.weights.push_back(exp(logits[j]) / z);
    for (std::size_t t = 0; t < v[j].size(); ++t) form.out[t] += form.weights[j] * Real(v[j][t]);
  }
  return form;
}

void expect_matches(const RowResult& row, const ClosedForm& form, FormatId target) {
  for (std::size_t j = 0; j < form.weights.size(); ++j)
    EXPECT_EQ(row.weights[j], round_to_format(form.weights[j], target)) << "weight " << j;
  for (std::size_t t = 0; t < form.out.size(); ++t)
    EXPECT_EQ(row.out[t], round_to_format(form.out[t], target)) << "out " << t;
  EXPECT_EQ(row.lse, round_to_format(form.lse, target));
}

TEST(GoldenSeeds, MatrixExampleOfSeed001) {
  const std::vector<std::vector<double>> V = {{1, 2, 3}, {4, 5, 6}, {7, 8, 9}};
  const Problem p = single_head({{1, 0, 1, 0}, {0, 1, 0, 1}}, {{1, 0, 1, 0}, {0, 1, 0, 1}, {1, 1, 0, 0}}, V);
  // Scores Q K^T / sqrt(4): [[1, 0, 0.5], [0, 1, 0.5]].
  const std::vector<std::vector<Real>> logits = {{Real(1), Real(0), Real(0.5)}, {Real(0), Real(1), Real(0.5)}};
  const double seed_weights[2][3] = {{0.5065, 0.1863, 0.3072}, {0.1863, 0.5065, 0.3072}};
  const double seed_out[2][3] = {{3.4021, 4.4021, 5.4021}, {4.3626, 5.3626, 6.3626}};
  for (FormatId target : all_formats()) {
    for (int i = 0; i < 2; ++i) {
      const ClosedForm form = softmax_closed_form(logits[i], V);
      for (int j = 0; j < 3; ++j) EXPECT_NEAR(form.weights[j].convert_to<double>(), seed_weights[i][j], 5e-5);
      for (int t = 0; t < 3; ++t) EXPECT_NEAR(form.out[t].convert_to<double>(), seed_out[i][t], 5e-5);
      ReferenceOptions options;
      options.target = target;
      expect_matches(certified_row(p, {0, 0, i}, options), form, target);
    }
  }
}

TEST(GoldenSeeds, TwoKeysOfSeed003) {
  // q = (1, 2), k1 = (1, 0), k2 = (0, 1), d_k = 2: logits 1/sqrt 2 and sqrt 2.
  const Problem p = single_head({{1, 2}}, {{1, 0}, {0, 1}}, {{1, 0}, {0, 1}});
  WorkingPrecision precision(300);
  const std::vector<Real> logits = {Real(1) / sqrt(Real(2)), sqrt(Real(2))};
  const ClosedForm form = softmax_closed_form(logits, {{1, 0}, {0, 1}});
  EXPECT_NEAR(form.weights[0].convert_to<double>(), 0.330, 5e-4);
  EXPECT_NEAR(form.weights[1].convert_to<double>(), 0.670, 5e-4);
  for (FormatId target : all_formats()) {
    ReferenceOptions options;
    options.target = target;
    expect_matches(certified_row(p, {0, 0, 0}, options), form, target);
  }
}

TEST(GoldenSeeds, ZeroQueryGivesUniformWeightsOfSeed003) {
  const Problem p = single_head({{0, 0, 0}}, {{1, 2, 3}, {-4, 0.5, 2}, {7, 7, -1}}, {{3, 1}, {5, 2}, {-2, 0}});
  for (FormatId target : all_formats()) {
    ReferenceOptions options;
    options.target = target;
    const RowResult row = certified_row(p, {0, 0, 0}, options);
    // Exactly 1/3 each, and the plain means 2 and 1, rounded once.
    WorkingPrecision precision(300);
    for (double w : row.weights) EXPECT_EQ(w, round_to_format(Real(1) / Real(3), target));
    EXPECT_EQ(row.out[0], 2.0);
    EXPECT_EQ(row.out[1], 1.0);
    EXPECT_EQ(row.lse, round_to_format(log(Real(3)), target));
  }
}

}  // namespace
}  // namespace attnspec
