// The merge bound of spec/SPEC.md section 6.10; each quantity is named as
// there.
#include "spec/merge_bound.hpp"

#include <algorithm>
#include <cmath>

namespace attnspec {

MergeRowBound merge_row_bound(const MergeInput& in, int row, FormatId accumulate, FormatId output) {
  const auto dv = static_cast<std::size_t>(in.d_v);
  MergeRowBound b;
  b.out.assign(dv, 0.0);
  b.scale.assign(dv, 0.0);
  double m = -INFINITY;
  int n = 0;
  for (int part = 0; part < in.parts; ++part) {
    const double lse = in.lse[in.lse_index(part, row)];
    if (lse == -INFINITY) continue;
    m = std::max(m, lse);
    ++n;
  }
  if (n == 0) return b;  // the row with no visible key: exactly 0 and -inf

  const FormatInfo& acc = format_info(accumulate);
  const FormatInfo& out = format_info(output);
  const double u = acc.unit_roundoff, u_o = out.unit_roundoff, lambda = acc.min_normal, lambda_o = out.min_subnormal;
  const double log_n = std::log(static_cast<double>(n));
  // The exact weights a_i = exp(delta_i) / s, delta_i = lse_i - m <= 0.
  std::vector<double> delta(static_cast<std::size_t>(in.parts), -INFINITY), a(static_cast<std::size_t>(in.parts), 0.0);
  double s = 0;
  for (int part = 0; part < in.parts; ++part) {
    const double lse = in.lse[in.lse_index(part, row)];
    if (lse == -INFINITY) continue;
    delta[static_cast<std::size_t>(part)] = lse - m;
    s += std::exp(lse - m);
  }
  for (int part = 0; part < in.parts; ++part)
    if (delta[static_cast<std::size_t>(part)] != -INFINITY)
      a[static_cast<std::size_t>(part)] = std::exp(delta[static_cast<std::size_t>(part)]) / s;

  // rho: relative error of the computed sum of shifted weights. Terms
  // a_i ((1 + c) e^x - 1), x = u |delta_i| + extra, are evaluated through
  // expm1 (no cancellation where u is float64's), and as (1 + c)
  // e^{(1 - u) delta_i + extra} / s where a_i underflows.
  const double gamma_n = gamma(n, u), gamma_n1 = gamma(n + 1, u);
  const auto weighted_excess = [&](std::size_t i, double c, double extra) {
    const double x = u * std::fabs(delta[i]) + extra;
    if (a[i] == 0) return (1 + c) * std::exp((1 - u) * delta[i] + extra) / s;
    return a[i] * (std::expm1(x) + c * std::exp(x));
  };
  double rho = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (delta[i] != -INFINITY) rho += weighted_excess(i, 4 * u + gamma_n + 4 * u * gamma_n, 0);
  const double infinite = INFINITY;
  if (!(rho < 1)) {
    b.out.assign(dv, infinite);
    b.lse = infinite;
    return b;
  }
  const double r = -std::log1p(-rho);
  // lambda_L: error of a computed lse = m + ln(s), the ln and the sum rounded.
  const double lambda_L = r + 4 * u * (log_n + r) + 2 * u * (std::fabs(m) + log_n + r);
  // psi_i: relative error of part i's weight times its outputs, through
  // Delta_i = lambda_L + u (|delta_i| + ln n + lambda_L); a_i psi_i kept.
  double Psi = 0;
  std::vector<double> weighted_psi(a.size(), 0.0);
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (delta[i] == -INFINITY) continue;
    weighted_psi[i] = weighted_excess(i, 4 * u + gamma_n1 + 4 * u * gamma_n1, lambda_L + u * (log_n + lambda_L));
    Psi += weighted_psi[i];
  }
  if (!(Psi < 1)) {
    b.out.assign(dv, infinite);
    b.lse = infinite;
    return b;
  }
  // The harness's own binary64 evaluation of a_i, o_t and the sums above.
  const double allowance = 1 + 0x1p-40;
  for (std::size_t t = 0; t < dv; ++t) {
    double o = 0, weighted_error = 0, largest = 0;
    for (int part = 0; part < in.parts; ++part) {
      const std::size_t i = static_cast<std::size_t>(part);
      if (delta[i] == -INFINITY) continue;
      const double value = in.out[in.out_index(part, row, static_cast<int>(t))];
      o += a[i] * value;
      weighted_error += std::fabs(value) * weighted_psi[i];
      b.scale[t] += a[i] * std::fabs(value);
      largest = std::max(largest, std::fabs(value));
    }
    const double D = (weighted_error + std::fabs(o) * Psi) / (1 - Psi);
    const double U = 2 * n * u * lambda * (1 + largest) / (1 - Psi);  // weights and products below lambda
    b.out[t] = allowance * ((D + U) * (1 + u_o) + u_o * std::fabs(o) + lambda_o);
  }
  b.lse = allowance * lambda_L;
  return b;
}

}  // namespace attnspec
