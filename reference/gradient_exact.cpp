// Exact forms of gradient values. The number theory is that of the forward
// (spec/SPEC.md section 5, Lindemann-Weierstrass): exponentials of
// distinct logits are linearly independent over the rationals, so a sum
// of them with rational coefficients is zero only when every coefficient
// (grouped by equal exponent) is. Only sufficient conditions are used here:
// a form returned is always the exact value; a value without one is left to
// the intervals, and to ReferenceError if they never decide it.
#include "reference/gradient_exact.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace attnspec {
namespace {

bool is_nan(const Real& x) { return mpfr_nan_p(x.backend().data()) != 0; }

// Rows are identical for the backward when they read the same keys with the
// same logits and sink: the same batch, heads, query, visible keys and
// additive terms.
std::vector<double> identity_of(const Problem& p, const BackwardRow& row) {
  const RowIndex r = row.exact.index;
  std::vector<double> key = {static_cast<double>(r.batch), static_cast<double>(r.head),
                             static_cast<double>(row.exact.visible.size())};
  for (int j : row.exact.visible) {
    key.push_back(j);
    if (j == kSinkKey) {
      key.push_back(*p.sink(r));
    } else {
      key.push_back(p.mask_value(r, j));
      key.push_back(p.alibi_bias(r, j));
    }
  }
  const auto q = p.query_row(r);
  key.insert(key.end(), q.begin(), q.end());
  return key;
}

}  // namespace

std::vector<BackwardRow> prepare_backward_rows(const Problem& p) {
  if (p.dout.size() != p.out_size())
    throw std::invalid_argument("backward reference: the problem carries no dout of [B, Hq, L, d_v] values");
  std::vector<BackwardRow> rows(p.rows());
  const auto dv = static_cast<std::size_t>(p.dims.d_v);
  for (std::size_t flat = 0; flat < rows.size(); ++flat) {
    BackwardRow& row = rows[flat];
    row.exact = prepare_row(p, p.row_index(flat));
    const std::vector<int>& visible = row.exact.visible;
    row.has_sink = !visible.empty() && visible.back() == kSinkKey;
    row.has_real_key = visible.size() > (row.has_sink ? 1u : 0u);
    if (row.exact.nonfinite_logits) {
      row.poisoned = true;
      continue;
    }
    const std::span<const double> dout(p.dout.data() + flat * dv, dv);
    for (int j : visible) {
      if (j == kSinkKey) {
        row.dp.emplace_back(0);
        continue;
      }
      row.dp.push_back(exact_dot(dout, p.value_row(row.exact.index.batch, row.exact.kv_head, j)));
      if (is_nan(row.dp.back())) row.poisoned = true;
    }
  }
  return rows;
}

std::optional<std::size_t> visible_position(const ExactRow& row, int key) {
  // Real keys are ascending, the sink (-1) last.
  const auto end = row.visible.end() - (!row.visible.empty() && row.visible.back() == kSinkKey ? 1 : 0);
  const auto it = std::lower_bound(row.visible.begin(), end, key);
  if (it == end || *it != key) return std::nullopt;
  return static_cast<std::size_t>(it - row.visible.begin());
}

GradientExactForms::GradientExactForms(const Problem& p, const std::vector<BackwardRow>& rows)
    : p_(p), rows_(rows), scale_(rational_scale(p)) {}

GradientExactForms::Facts GradientExactForms::facts_of(const std::vector<std::size_t>& members) const {
  const BackwardRow& first = rows_[members.front()];
  const std::size_t n = first.exact.visible.size();
  const auto dv = static_cast<std::size_t>(p_.dims.d_v);
  Facts facts;
  facts.classes = exact_logit_classes(p_, first.exact);
  facts.single_class = facts.classes.size.size() == 1;
  facts.dout.assign(dv, Rational(0));
  bool dp_finite = true;
  for (std::size_t member : members) {
    dp_finite = dp_finite && !rows_[member].poisoned;
    // A non-finite dO component makes that column's dV NaN, never asked for.
    for (std::size_t t = 0; t < dv; ++t)
      if (std::isfinite(p_.dout[member * dv + t])) facts.dout[t] += exact_rational(p_.dout[member * dv + t]);
  }
  // With a non-finite dP only dV is asked for (dQ, dK and dsigma are NaN).
  if (!dp_finite) return facts;
  facts.dp.assign(n, Rational(0));
  for (std::size_t member : members)
    for (std::size_t j = 0; j < n; ++j) facts.dp[j] += exact_rational(rows_[member].dp[j]);
  const std::size_t classes = facts.classes.size.size();
  facts.class_dp.assign(classes, Rational(0));
  for (std::size_t j = 0; j < n; ++j) facts.class_dp[facts.classes.of[j]] += facts.dp[j];
  // dX_j = w_j sum_C w_C (dP_j - mean_C dP) (the sink a key of dP 0): zero
  // when dP_j equals every class's mean.
  std::optional<Rational> common_mean;
  bool means_agree = true;
  for (std::size_t c = 0; c < classes; ++c) {
    const Rational mean = facts.class_dp[c] / Rational(facts.classes.size[c]);
    if (common_mean && *common_mean != mean) means_agree = false;
    common_mean = mean;
  }
  facts.dx_zero.assign(n, 0);
  for (std::size_t j = 0; j < n; ++j) facts.dx_zero[j] = means_agree && facts.dp[j] == *common_mean;
  // D = sum_C u_C S_C / Z: zero when every class sum is.
  facts.d_zero = std::all_of(facts.class_dp.begin(), facts.class_dp.end(), [](const Rational& s) { return s == 0; });
  if (facts.single_class) {
    // Every weight is 1/n: dX_j = (dP_j - S/n) / n.
    const Rational count(static_cast<long>(n));
    const Rational mean = facts.class_dp[0] / count;
    for (std::size_t j = 0; j < n; ++j) facts.dx.push_back((facts.dp[j] - mean) / count);
  }
  return facts;
}

const GradientExactForms::Facts& GradientExactForms::row_facts(std::size_t row) {
  auto it = row_facts_.find(row);
  if (it == row_facts_.end()) it = row_facts_.emplace(row, facts_of({row})).first;
  return it->second;
}

std::vector<const GradientExactForms::Facts*> GradientExactForms::groups_seeing(
    int batch, int kv_head, int key, std::vector<std::size_t>* representatives) {
  const std::size_t block = static_cast<std::size_t>(batch) * static_cast<std::size_t>(p_.dims.kv_heads) +
                            static_cast<std::size_t>(kv_head);
  auto it = blocks_.find(block);
  if (it == blocks_.end()) {
    std::map<std::vector<double>, std::vector<std::size_t>> identical;
    for (std::size_t flat = 0; flat < rows_.size(); ++flat) {
      const BackwardRow& row = rows_[flat];
      if (row.exact.index.batch != batch || row.exact.kv_head != kv_head || row.exact.nonfinite_logits ||
          !row.has_real_key)
        continue;
      identical[identity_of(p_, row)].push_back(flat);
    }
    std::vector<std::pair<std::vector<std::size_t>, Facts>> groups;
    for (auto& [identity, members] : identical) groups.emplace_back(members, facts_of(members));
    it = blocks_.emplace(block, std::move(groups)).first;
  }
  std::vector<const Facts*> seeing;
  for (const auto& [members, facts] : it->second) {
    if (key >= 0 && !visible_position(rows_[members.front()].exact, key)) continue;
    seeing.push_back(&facts);
    if (representatives) representatives->push_back(members.front());
  }
  return seeing;
}

std::optional<Rational> GradientExactForms::scaled(const Rational& t) const {
  if (t == 0) return Rational(0);
  if (scale_) return *scale_ * t;
  return std::nullopt;  // an irrational scale times a non-zero rational
}

std::optional<Rational> GradientExactForms::dq(std::size_t row_flat, int t) {
  const BackwardRow& row = rows_[row_flat];
  const Facts& facts = row_facts(row_flat);
  const ExactRow& exact = row.exact;
  const std::size_t n = exact.visible.size();
  const auto component = [&](std::size_t j) {
    return p_.key_row(exact.index.batch, exact.kv_head, exact.visible[j])[static_cast<std::size_t>(t)];
  };
  if (facts.single_class) {
    // dQ_t = scale * cap' * sum_j dX_j K_j[t]; cap' = 1 - tanh^2 is 1 without
    // softcap or at a zero dot product, else irrational.
    Rational sum = 0;
    for (std::size_t j = 0; j < n; ++j)
      if (exact.visible[j] != kSinkKey) sum += facts.dx[j] * exact_rational(component(j));
    if (sum == 0) return Rational(0);
    if (p_.softcap && !mpfr_zero_p(exact.dot[0].backend().data())) return std::nullopt;
    return scaled(sum);
  }
  // Z^2 dQ_t / scale = sum_j sum_C cap'_j u_j u_C (n_C dP_j - S_C) K_j[t]:
  // coefficients grouped by the exponent x_j + x_C when keys add like logits,
  // else (softcap: cap'_j differs per class) by the ordered pair of classes.
  const LogitClasses& classes = facts.classes;
  const std::size_t class_count = classes.size.size();
  // The coefficient of the pair of classes (a, c) is n_c A_a - S_c B_a,
  // with A_a = sum over a's keys of dP_j K_j[t] and B_a that of K_j[t]:
  // O(n) for all A and B, then O(1) a pair.
  std::vector<Rational> weighted(class_count, Rational(0)), plain(class_count, Rational(0));
  for (std::size_t j = 0; j < n; ++j) {
    if (exact.visible[j] == kSinkKey || component(j) == 0.0) continue;
    const Rational k = exact_rational(component(j));
    weighted[classes.of[j]] += facts.dp[j] * k;
    plain[classes.of[j]] += k;
  }
  const auto coefficient = [&](std::size_t a, std::size_t c) {
    return Rational(classes.size[c]) * weighted[a] - facts.class_dp[c] * plain[a];
  };
  // The keys ascend in an ordered group (pairs compared lexicographically),
  // so the largest sum of two classes' keys comes only from (top, top),
  // the next largest only from (top, top - 1) and (top - 1, top), and
  // likewise at the bottom: a non-zero sum over one of these groups
  // settles that the value is not 0. (The diagonal pairs alone would not:
  // a one-key class's is always 0, dP_j - dP_j.)
  const std::size_t top = class_count - 1;
  const auto group_non_zero = [&](std::size_t a, std::size_t c) {
    if (a == c) return coefficient(a, a) != 0;
    return classes.keys_add_like_logits ? coefficient(a, c) + coefficient(c, a) != 0
                                        : coefficient(a, c) != 0 || coefficient(c, a) != 0;
  };
  if (group_non_zero(top, top) || group_non_zero(0, 0) || group_non_zero(top, top - 1) || group_non_zero(1, 0))
    return std::nullopt;
  // Every coefficient is 0 when each class has A_a = B_a = 0, or when all
  // classes have one mean dP (S_c = mean n_c) and A_a = mean B_a: an exact
  // 0 settled in O(C) instead of the O(C^2) grouping below.
  const Rational mean = facts.class_dp[0] / Rational(classes.size[0]);
  bool one_mean = true;
  for (std::size_t c = 1; c < class_count && one_mean; ++c)
    one_mean = facts.class_dp[c] == mean * Rational(classes.size[c]);
  bool every_coefficient_zero = true;
  for (std::size_t a = 0; a < class_count && every_coefficient_zero; ++a)
    every_coefficient_zero = (weighted[a] == 0 && plain[a] == 0) || (one_mean && weighted[a] == mean * plain[a]);
  if (every_coefficient_zero) return Rational(0);
  std::map<LogitKey, Rational> by_exponent;
  std::map<std::pair<std::size_t, std::size_t>, Rational> by_pair;
  for (std::size_t a = 0; a < class_count; ++a)
    for (std::size_t c = 0; c < class_count; ++c) {
      const Rational pair = coefficient(a, c);
      if (pair == 0) continue;
      if (classes.keys_add_like_logits) {
        const LogitKey& x = classes.key[a];
        const LogitKey& y = classes.key[c];
        by_exponent[{x.first + y.first, x.second + y.second}] += pair;
      } else {
        by_pair[{a, c}] += pair;
      }
    }
  const auto zero = [](const auto& entry) { return entry.second == 0; };
  if (std::all_of(by_exponent.begin(), by_exponent.end(), zero) && std::all_of(by_pair.begin(), by_pair.end(), zero))
    return Rational(0);
  return std::nullopt;
}

std::optional<Rational> GradientExactForms::dk(int batch, int kv_head, int key, int t) {
  // dK = scale * sum over rows seeing the key of cap'_j dX_j Q[t].
  std::vector<std::size_t> representatives;
  const std::vector<const Facts*> groups = groups_seeing(batch, kv_head, key, &representatives);
  Rational sum = 0;
  for (std::size_t idx = 0; idx < groups.size(); ++idx) {
    const Facts& facts = *groups[idx];
    const ExactRow& exact = rows_[representatives[idx]].exact;
    const double q = p_.query_row(exact.index)[static_cast<std::size_t>(t)];
    const std::size_t j = *visible_position(exact, key);
    if (q == 0.0 || facts.dx_zero[j]) continue;
    if (!facts.single_class || (p_.softcap && !mpfr_zero_p(exact.dot[j].backend().data()))) return std::nullopt;
    sum += facts.dx[j] * exact_rational(q);
  }
  return scaled(sum);
}

std::optional<Rational> GradientExactForms::dv(int batch, int kv_head, int key, int t) {
  // dV = sum over rows seeing the key of w_j dO[t]; w_j = 1/n in a single class.
  Rational sum = 0;
  for (const Facts* facts : groups_seeing(batch, kv_head, key, nullptr)) {
    const Rational& weighted = facts->dout[static_cast<std::size_t>(t)];
    if (weighted == 0) continue;
    if (!facts->single_class) return std::nullopt;
    sum += weighted / Rational(static_cast<long>(facts->classes.of.size()));
  }
  return sum;
}

std::optional<Rational> GradientExactForms::dsink(int head) {
  // dsigma = -sum over the head's rows of w_sigma D; in a single class
  // w_sigma = 1/n and D = S/n.
  Rational sum = 0;
  const int kv_head = p_.kv_head_of(head);
  for (int batch = 0; batch < p_.dims.batch; ++batch) {
    std::vector<std::size_t> representatives;
    const std::vector<const Facts*> groups = groups_seeing(batch, kv_head, -1, &representatives);
    for (std::size_t idx = 0; idx < groups.size(); ++idx) {
      const BackwardRow& row = rows_[representatives[idx]];
      const Facts& facts = *groups[idx];
      if (row.exact.index.head != head || !row.has_sink || facts.d_zero) continue;
      if (!facts.single_class) return std::nullopt;
      const Rational count(static_cast<long>(facts.dp.size()));
      sum -= facts.class_dp[0] / (count * count);
    }
  }
  return sum;
}

}  // namespace attnspec
