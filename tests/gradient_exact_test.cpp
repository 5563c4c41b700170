// dQ's exact form (reference/gradient_exact.hpp) against a plain
// evaluation of its criterion: in a row of several logit classes, dQ_t is
// exactly 0 when every group of the terms (n_C dP_j - S_C) K_j[t], one
// term per (key, class), sums to 0, grouped by the exponent x_j + x_C (by
// the ordered pair of classes under a softcap). The form takes shortcuts
// (the groups at both ends of the order of keys; all coefficients 0 at
// once); the plain grouping here takes none.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "problem_builder.hpp"
#include "reference/exact_row.hpp"
#include "reference/gradient_exact.hpp"

namespace attnspec {
namespace {

struct PlainGrouping {
  bool zero = true;              // every group sums to 0
  bool every_term_zero = true;   // every term is 0 (no cancellation needed)
  bool end_groups_zero = true;   // the two groups at each end of the exponents' order sum to 0
};

PlainGrouping dq_by_every_term(const Problem& p, const BackwardRow& row, int t) {
  const ExactRow& exact = row.exact;
  const LogitClasses classes = exact_logit_classes(p, exact);
  const std::size_t n = exact.visible.size();
  std::vector<Rational> dp(n), class_dp(classes.size.size(), Rational(0));
  for (std::size_t j = 0; j < n; ++j) {
    dp[j] = exact_rational(row.dp[j]);
    class_dp[classes.of[j]] += dp[j];
  }
  std::map<LogitKey, Rational> by_exponent;
  std::map<std::pair<std::size_t, std::size_t>, Rational> by_pair;
  PlainGrouping result;
  for (std::size_t j = 0; j < n; ++j) {
    if (exact.visible[j] == kSinkKey) continue;
    const double k = p.key_row(exact.index.batch, exact.kv_head, exact.visible[j])[static_cast<std::size_t>(t)];
    for (std::size_t c = 0; c < classes.size.size(); ++c) {
      const Rational term = (Rational(classes.size[c]) * dp[j] - class_dp[c]) * exact_rational(k);
      result.every_term_zero = result.every_term_zero && term == 0;
      if (classes.keys_add_like_logits) {
        const LogitKey& a = classes.key[classes.of[j]];
        const LogitKey& b = classes.key[c];
        by_exponent[{a.first + b.first, a.second + b.second}] += term;
      } else {
        by_pair[{classes.of[j], c}] += term;
      }
    }
  }
  for (const auto& [exponent, sum] : by_exponent) result.zero = result.zero && sum == 0;
  for (const auto& [pair, sum] : by_pair) result.zero = result.zero && sum == 0;
  if (by_exponent.size() >= 2) {
    const auto end_zero = [](auto first, auto second) { return first->second == 0 && second->second == 0; };
    result.end_groups_zero = end_zero(by_exponent.begin(), std::next(by_exponent.begin())) &&
                             end_zero(by_exponent.rbegin(), std::next(by_exponent.rbegin()));
  }
  return result;
}

// Rows whose logits come from K's first column alone (the query is a
// multiple of e_0), on a grid with repeats, so that classes of several
// keys and equal sums of two logits (x_a + x_d = x_b + x_c) occur; K's
// other columns are 0 at the keys of the largest and smallest logits in
// some problems (the end groups are then 0 and only the full grouping
// decides), the values are equal in others (every dP alike: all 0), and
// K's last column is one constant in every other problem (then dQ_t =
// kappa sum_j dS_j = 0 by cancellation: the terms are not 0, the groups
// {(a, c), (c, a)} are, except under a softcap).
Problem grid_problem(std::mt19937_64& random, int index) {
  std::uniform_int_distribution<int> logit(0, 5), small(-3, 3), coin(0, 1);
  const int S = 6, d_k = 4, d_v = 2;
  std::vector<std::vector<double>> q(2, std::vector<double>(d_k, 0.0)), k(S), v(S);
  q[0][0] = 1;
  q[1][0] = 0.5;
  const bool zero_ends = index % 3 == 1, equal_values = index % 3 == 2;
  std::vector<int> first(S);
  for (int& x : first) x = logit(random);
  const auto [lowest, highest] = std::minmax_element(first.begin(), first.end());
  for (int j = 0; j < S; ++j) {
    k[j] = {static_cast<double>(first[j]), 0, 0, 0};
    const bool at_an_end = first[j] == *lowest || first[j] == *highest;
    for (int t = 1; t < d_k; ++t) k[j][t] = zero_ends && at_an_end ? 0.0 : small(random) * 0.5;
    if (index % 2 == 0) k[j][3] = 1.5;
    v[j] = equal_values ? std::vector<double>{1.5, -1} : std::vector<double>{small(random) * 0.25, small(random) * 1.0};
  }
  Problem p = testing::single_head(q, k, v);
  if (coin(random) && index % 4 == 0) p.softcap = 4;
  for (int i = 0; i < 2 * d_v; ++i) p.dout.push_back(small(random) * 0.5 + (i == 0 ? 0.25 : 0));
  return p;
}

// One query, five keys of logits 0, 1/2, ..., 2 (one class each) and dP
// = (1, 2, 1, 3, 4); K's second column is 0 but at the middle key. Every
// coefficient of a pair with the middle class, n_c A_2 - S_c B_2 =
// 1.5 (1 - dP_c), is not 0 for c = 1, 3, 4, and alone in its group (the
// end groups are 0): dQ_1 is not 0, though A_a = mean_0 B_a for every
// class a (the classes' means differ, so that is no proof of 0).
Problem middle_class_problem() {
  std::vector<std::vector<double>> k;
  for (int j = 0; j < 5; ++j) k.push_back({static_cast<double>(j), j == 2 ? 1.5 : 0.0, 0, 0});
  Problem p = testing::single_head({{1, 0, 0, 0}}, k, {{1}, {2}, {1}, {3}, {4}});
  p.dout = {1};
  return p;
}

struct Tally {
  std::size_t zeros = 0, cancelled = 0, nonzeros = 0, decided_by_full_grouping = 0;
};

void expect_same_verdicts(const Problem& p, const std::string& name, Tally& tally) {
  const std::vector<BackwardRow> rows = prepare_backward_rows(p);
  GradientExactForms forms(p, rows);
  for (std::size_t row = 0; row < rows.size(); ++row) {
    if (rows[row].poisoned || exact_logit_classes(p, rows[row].exact).size.size() < 2) continue;
    for (int t = 0; t < p.dims.d_k; ++t) {
      const PlainGrouping plain = dq_by_every_term(p, rows[row], t);
      const std::optional<Rational> form = forms.dq(row, t);
      EXPECT_EQ(form.has_value(), plain.zero) << name << ", row " << row << ", column " << t;
      if (form) {
        EXPECT_EQ(*form, 0);
      }
      tally.zeros += plain.zero;
      tally.cancelled += plain.zero && !plain.every_term_zero;
      tally.nonzeros += !plain.zero;
      tally.decided_by_full_grouping += !plain.zero && plain.end_groups_zero;
    }
  }
}

TEST(GradientExactForms, QueryGradientZeroExactlyWhenEveryGroupIs) {
  Tally tally;
  expect_same_verdicts(middle_class_problem(), "the middle class's problem", tally);
  std::mt19937_64 random(42);
  for (int index = 0; index < 240; ++index)
    expect_same_verdicts(grid_problem(random, index), "problem " + std::to_string(index), tally);
  // Each way to the answer was taken.
  EXPECT_GT(tally.zeros, 0u);
  EXPECT_GT(tally.cancelled, 0u);
  EXPECT_GT(tally.nonzeros, 0u);
  EXPECT_GT(tally.decided_by_full_grouping, 0u);
}

}  // namespace
}  // namespace attnspec
