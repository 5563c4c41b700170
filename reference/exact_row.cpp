// Exact, precision-independent facts of a row. The grouping of keys by equal
// logits, and which results are rational, follow spec/SPEC.md §5 step 4; the
// number theory behind it (Lindemann-Weierstrass) is stated there.
#include "reference/exact_row.hpp"

#include <algorithm>
#include <bit>
#include <limits>
#include <cmath>
#include <numeric>

namespace attnspec {
namespace {

// The scale as an exact rational, or the integer r with scale = 1/r, or
// neither (1/sqrt(d_k) with d_k not a perfect square: irrational).
struct ScaleKind {
  std::optional<double> explicit_scale;
  std::optional<long> inverse_integer;
};

ScaleKind scale_kind(const Problem& p) {
  if (p.scale) return {p.scale, std::nullopt};
  const long root = std::lround(std::sqrt(static_cast<double>(p.dims.d_k)));
  if (root * root == p.dims.d_k) return {std::nullopt, root};
  return {};
}

// A rough logit, only to pick a reference key near the maximum; any choice
// is correct, a good one keeps exp() in range.
Real rough_logit(const Problem& p, const Real& dot, const Real& additive) {
  WorkingPrecision precision(64);
  // Boost keeps the larger precision of two operands: round the exact dot
  // product (thousands of bits at times) and additive term to 64 bits first.
  Real x, offset;
  mpfr_set(x.backend().data(), dot.backend().data(), MPFR_RNDN);
  mpfr_set(offset.backend().data(), additive.backend().data(), MPFR_RNDN);
  x *= p.scale ? Real(*p.scale) : Real(1) / sqrt(Real(p.dims.d_k));
  if (p.softcap) x = Real(*p.softcap) * tanh(x / Real(*p.softcap));
  return x + offset;
}

// Fills the group fields of an ExactRow (see exact_row.hpp).
void group_equal_logits(const Problem& p, ExactRow& row) {
  const std::size_t n = row.visible.size();
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  const auto less = [&](std::size_t a, std::size_t b) {
    const int c = mpfr_cmp(row.dot[a].backend().data(), row.dot[b].backend().data());
    return c != 0 ? c < 0 : mpfr_less_p(row.additive[a].backend().data(), row.additive[b].backend().data()) != 0;
  };
  std::stable_sort(order.begin(), order.end(), less);
  row.group_of.assign(n, 0);
  for (std::size_t idx = 0; idx < n; ++idx) {
    const std::size_t j = order[idx];
    if (idx == 0 || less(order[idx - 1], j)) {
      row.representative.push_back(j);
      row.group_size.push_back(0);
    }
    row.group_of[j] = row.representative.size() - 1;
    ++row.group_size.back();
  }
  row.value_sums.resize(row.representative.size());
  std::vector<std::vector<std::size_t>> members(row.representative.size());
  for (std::size_t j = 0; j < n; ++j) members[row.group_of[j]].push_back(j);
  for (std::size_t g = 0; g < members.size(); ++g) {
    if (members[g].size() < 2) continue;
    for (int t = 0; t < p.dims.d_v; ++t) {
      std::vector<double> column;
      for (std::size_t j : members[g]) column.push_back(row.value(p, j, t));
      row.value_sums[g].push_back(exact_dot(column, std::vector<double>(column.size(), 1.0)));
    }
  }
}

}  // namespace

Real exact_dot(std::span<const double> a, std::span<const double> b) {
  for (std::size_t t = 0; t < a.size(); ++t) {
    if (!std::isfinite(a[t]) || !std::isfinite(b[t])) {
      Real nan;  // callers treat non-finite inputs apart (spec/SPEC.md section 2.3)
      mpfr_set_nan(nan.backend().data());
      return nan;
    }
  }
  int top = std::numeric_limits<int>::min(), bottom = std::numeric_limits<int>::max();
  for (std::size_t t = 0; t < a.size(); ++t) {
    if (a[t] == 0.0 || b[t] == 0.0) continue;
    const int e = std::ilogb(a[t]) + std::ilogb(b[t]);
    top = std::max(top, e);
    bottom = std::min(bottom, e);
  }
  Real sum;
  if (top == std::numeric_limits<int>::min()) {
    mpfr_set_prec(sum.backend().data(), 2);
    mpfr_set_zero(sum.backend().data(), 1);
    return sum;
  }
  // Each product has its lowest bit at or above 2^(bottom-104) and is below
  // 2^(top+2); n of them stay below 2^(top+2+log2 n).
  const int log2_terms = std::bit_width(a.size());
  mpfr_set_prec(sum.backend().data(), static_cast<mpfr_prec_t>(top - bottom + 106 + log2_terms + 4));
  mpfr_set_zero(sum.backend().data(), 1);
  mpfr_t x, y;
  mpfr_init2(x, 53);
  mpfr_init2(y, 53);
  for (std::size_t t = 0; t < a.size(); ++t) {
    if (a[t] == 0.0 || b[t] == 0.0) continue;
    mpfr_set_d(x, a[t], MPFR_RNDN);
    mpfr_set_d(y, b[t], MPFR_RNDN);
    mpfr_fma(sum.backend().data(), x, y, sum.backend().data(), MPFR_RNDN);  // exact
  }
  mpfr_clears(x, y, static_cast<mpfr_ptr>(nullptr));
  return sum;
}

ExactRow prepare_row(const Problem& p, RowIndex r) {
  ExactRow row;
  row.index = r;
  row.kv_head = p.kv_head_of(r.head);
  const auto q = p.query_row(r);
  const bool q_finite = std::all_of(q.begin(), q.end(), [](double x) { return std::isfinite(x); });
  for (int j = 0; j < p.dims.kv_len; ++j) {
    if (!p.visible(r, j)) continue;
    row.visible.push_back(j);
    // The mask value plus the ALiBi bias (an exact double), summed exactly.
    const double terms[] = {p.mask_value(r, j), p.alibi_bias(r, j)}, ones[] = {1.0, 1.0};
    row.additive.push_back(exact_dot(terms, ones));
    const auto k = p.key_row(r.batch, row.kv_head, j);
    const bool k_finite = std::all_of(k.begin(), k.end(), [](double x) { return std::isfinite(x); });
    if (!q_finite || !k_finite) {
      row.nonfinite_logits = true;
      row.dot.emplace_back(0);
      continue;
    }
    row.dot.push_back(exact_dot(q, k));
  }
  if (const std::optional<double> sink = p.sink(r)) {
    row.visible.push_back(kSinkKey);
    const double zero[] = {0.0}, terms[] = {*sink}, ones[] = {1.0};
    row.dot.push_back(exact_dot(zero, zero));
    row.additive.push_back(exact_dot(terms, ones));
  }
  if (row.nonfinite_logits || row.visible.empty()) return row;
  group_equal_logits(p, row);
  Real best = rough_logit(p, row.dot[0], row.additive[0]);
  for (std::size_t j = 1; j < row.visible.size(); ++j) {
    Real x = rough_logit(p, row.dot[j], row.additive[j]);
    if (x > best) {
      best = x;
      row.reference_key = j;
    }
  }
  return row;
}

std::optional<Rational> rational_scale(const Problem& p) {
  const ScaleKind scale = scale_kind(p);
  if (scale.explicit_scale) return exact_rational(*scale.explicit_scale);
  if (scale.inverse_integer) return Rational(1) / Rational(*scale.inverse_integer);
  return std::nullopt;
}

LogitClasses exact_logit_classes(const Problem& p, const ExactRow& row) {
  // Without softcap and with a rational scale the logits are rational and
  // are compared as such (scaled by r when the scale is 1/r). Otherwise two
  // logits are equal iff their dot products and mask values are (an
  // irrational scale, or tanh, cannot cancel a rational difference). Either
  // way, without softcap the key is linear in the logit.
  const ScaleKind scale = scale_kind(p);
  const bool rational_logits = !p.softcap && (scale.explicit_scale || scale.inverse_integer);
  const std::size_t n = row.visible.size();
  LogitClasses classes;
  classes.keys_add_like_logits = !p.softcap;
  std::vector<LogitKey> key(n);
  for (std::size_t j = 0; j < n; ++j) {
    const Rational d = exact_rational(row.dot[j]);
    const Rational m = exact_rational(row.additive[j]);
    if (!rational_logits) {
      key[j] = {d, m};
    } else if (scale.explicit_scale) {
      key[j] = {exact_rational(*scale.explicit_scale) * d + m, Rational(0)};
    } else {
      key[j] = {d + Rational(*scale.inverse_integer) * m, Rational(0)};
    }
  }
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return key[a] < key[b]; });
  classes.of.assign(n, 0);
  for (std::size_t idx = 0; idx < n; ++idx) {
    const std::size_t j = order[idx];
    if (idx == 0 || key[j] != key[order[idx - 1]]) {
      classes.key.push_back(key[j]);
      classes.size.push_back(0);
    }
    classes.of[j] = classes.key.size() - 1;
    ++classes.size.back();
  }
  return classes;
}

ExactForms exact_forms(const Problem& p, const ExactRow& row) {
  ExactForms forms;
  forms.out.resize(static_cast<std::size_t>(p.dims.d_v));
  const std::size_t n = row.visible.size();
  if (n == 0 || row.nonfinite_logits) return forms;

  const ScaleKind scale = scale_kind(p);
  const bool rational_logits = !p.softcap && (scale.explicit_scale || scale.inverse_integer);
  const LogitClasses classes = exact_logit_classes(p, row);
  std::vector<std::vector<std::size_t>> groups(classes.size.size());
  for (std::size_t j = 0; j < n; ++j) groups[classes.of[j]].push_back(j);

  if (groups.size() == 1) forms.weight = Rational(1) / Rational(static_cast<long>(n));

  if (n == 1) {
    const Rational d = exact_rational(row.dot[0]);
    const Rational m = exact_rational(row.additive[0]);
    if (d == 0) {
      forms.lse = m;
    } else if (rational_logits) {
      forms.lse = scale.explicit_scale ? exact_rational(*scale.explicit_scale) * d + m
                                       : d / Rational(*scale.inverse_integer) + m;
    }
  }
  // out[t] is rational iff every group has the same mean of column t.
  const auto common_group_mean = [&](int t) -> std::optional<Rational> {
    std::optional<Rational> common;
    for (const auto& group : groups) {
      Rational sum = 0;
      for (std::size_t j : group) {
        const double value = row.value(p, j, t);
        if (!std::isfinite(value)) return std::nullopt;  // a NaN column, decided elsewhere
        sum += exact_rational(value);
      }
      const Rational mean = sum / Rational(static_cast<long>(group.size()));
      if (common && *common != mean) return std::nullopt;
      common = mean;
    }
    return common;
  };
  for (int t = 0; t < p.dims.d_v; ++t) forms.out[static_cast<std::size_t>(t)] = common_group_mean(t);
  return forms;
}

}  // namespace attnspec
