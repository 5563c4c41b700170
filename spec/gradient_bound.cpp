// Evaluation of spec/SPEC.md section 6.11, step by step with the section's
// names. Quantities the section takes exact (w_j, dP_j, D, o_t, s_j) are
// the reference's double approximations, replaced by upper bounds of their
// magnitudes (their own evaluation errors added), and every bound is
// inflated at the end by a margin that covers its double evaluation, as in
// spec/precision_model.cpp.
#include "spec/gradient_bound.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace attnspec {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr double kDoubleU = 0x1p-53;

struct StorageArithmetic {
  double unit_roundoff = 0, half_subnormal = 0;
};

// Without F_s, P and dS stay in the accumulator: no rounding beyond the
// arithmetic's own.
StorageArithmetic storage_arithmetic(const GradientClass& c) {
  if (!c.storage) return {};
  const FormatInfo& f = format_info(*c.storage);
  return {f.unit_roundoff, f.min_subnormal / 2};
}

// Sums whose gamma factor is known only when every term is in: A (first
// order) and M (magnitudes), with the count of terms.
struct PendingSum {
  std::vector<double> first, magnitude, scale;
  std::vector<int> terms;
  std::vector<char> unbounded;
  void resize(std::size_t values, std::size_t counters) {
    first.assign(values, 0.0);
    magnitude.assign(values, 0.0);
    scale.assign(values, 0.0);
    terms.assign(counters, 0);
    unbounded.assign(values, 0);
  }
};

void finish(const PendingSum& sum, std::size_t width, double u, double lambda, double margin,
            std::vector<double>& bound, std::vector<double>& scale) {
  bound.assign(sum.first.size(), 0.0);
  scale = sum.scale;
  for (std::size_t i = 0; i < bound.size(); ++i) {
    const int k = sum.terms[i / width];
    if (k == 0) continue;  // nothing reads this value: it must be exactly 0
    bound[i] = sum.unbounded[i] ? kInfinity : (sum.first[i] + gamma(k, u) * sum.magnitude[i] + k * lambda) * margin;
  }
}

}  // namespace

double rounded_gradient_bound(double before, double magnitude, FormatId output) {
  const FormatInfo& f = format_info(output);
  return before + f.unit_roundoff * (magnitude + before) + f.min_subnormal / 2;
}

GradientBounds gradient_bounds(const Problem& p, const GradientClass& c, std::span<const ForwardRow> forward) {
  if (p.dout.size() != p.rows() * static_cast<std::size_t>(p.dims.d_v))
    throw std::invalid_argument("gradient_bounds: the problem carries no dO");
  if (forward.size() != p.rows()) throw std::invalid_argument("gradient_bounds: one forward row per row expected");
  const Dims& d = p.dims;
  const Arithmetic acc = accumulator_arithmetic(c.forward);
  const double u = acc.unit_roundoff, lambda = acc.min_normal;
  const StorageArithmetic st = storage_arithmetic(c);
  const auto dk_w = static_cast<std::size_t>(d.d_k), dv_w = static_cast<std::size_t>(d.d_v);
  const auto S = static_cast<std::size_t>(d.kv_len), Hkv = static_cast<std::size_t>(d.kv_heads);
  const std::size_t key_blocks = static_cast<std::size_t>(d.batch) * Hkv * S;
  const double s = p.scale ? *p.scale : 1.0 / std::sqrt(static_cast<double>(d.d_k));
  const double cap = p.softcap ? *p.softcap : 0.0;
  // The double evaluation of every bound: sums of at most S, d_k + d_v or
  // B Hq L terms, each a product of a few factors.
  const double margin =
      1 + 8 * (static_cast<double>(S) + static_cast<double>(p.rows()) + d.d_k + d.d_v + 64) * kDoubleU;
  const double weight_up = 1 + 2 * kForwardWeightError;
  const double g2 = gamma(2, u), g3 = gamma(3, u), g4 = gamma(4, u), g_dv = gamma(d.d_v, u);
  const double theta = (1 + g2) * (1 + st.unit_roundoff) - 1;
  const double cap_slack = 2 * (d.d_k + 4) * 2 * kDoubleU;  // the double s_j's error, relative to s sum |q||k|

  PendingSum dq, dk, dv, dsink;
  dq.resize(p.rows() * dk_w, p.rows());
  dk.resize(key_blocks * dk_w, key_blocks);
  dv.resize(key_blocks * dv_w, key_blocks);
  dsink.resize(p.sinks.size(), p.sinks.size());

  std::vector<int> keys;
  std::vector<double> w, a, dp_value, dp_abs, m, logit;
  for (std::size_t row = 0; row < p.rows(); ++row) {
    const RowIndex r = p.row_index(row);
    const int g = p.kv_head_of(r.head);
    const ForwardRow& f = forward[row];
    keys.clear();
    for (int j = 0; j < d.kv_len; ++j)
      if (p.visible(r, j)) keys.push_back(j);
    if (keys.empty()) continue;  // every gradient term of the row is 0 exactly (SPEC 2.6)
    const std::optional<double> sink = p.sink(r);
    const RowBound fb = precision_bound(p, r, c.forward, f.weights, f.out, f.lse);
    const auto q = p.query_row(r);
    const std::span<const double> dout(p.dout.data() + row * dv_w, dv_w);
    const std::size_t n_keys = keys.size();
    const double n = static_cast<double>(n_keys) + (sink ? 1 : 0);
    w.assign(n_keys, 0.0);
    a.assign(n_keys, 0.0);
    dp_abs.assign(n_keys, 0.0);
    dp_value.assign(n_keys, 0.0);
    m.assign(n_keys, 0.0);
    logit.assign(n_keys, 0.0);
    std::vector<double> dot_value(n_keys, 0.0);
    bool unbounded = !std::isfinite(fb.lse) || !std::isfinite(fb.logit_error);
    for (std::size_t t = 0; t < dv_w; ++t) unbounded = unbounded || !std::isfinite(fb.out[t]);

    // Steps 1-2 per key: w_j (an upper bound), dP_j's magnitude with its
    // double error, m_j, and the logit for the log-space weights.
    double sum_wdp = 0, sum_wm = 0, d_approx = 0;
    for (std::size_t i = 0; i < n_keys; ++i) {
      const int j = keys[i];
      const auto v = p.value_row(r.batch, g, j);
      const auto k = p.key_row(r.batch, g, j);
      double dp = 0, mj = 0, dot = 0;
      for (std::size_t t = 0; t < dv_w; ++t) {
        dp += dout[t] * v[t];
        mj += std::fabs(dout[t]) * std::fabs(v[t]);
      }
      for (std::size_t t = 0; t < dk_w; ++t) dot += q[t] * k[t];
      const double scaled = s * dot;
      dot_value[i] = scaled;
      logit[i] = (p.softcap ? cap * std::tanh(scaled / cap) : scaled) + p.logit_offset(r, j);
      w[i] = f.weights[static_cast<std::size_t>(j)] * weight_up;
      m[i] = mj * margin;
      dp_value[i] = dp;
      dp_abs[i] = std::fabs(dp) + gamma(d.d_v + 2, kDoubleU) * mj;
      d_approx += f.weights[static_cast<std::size_t>(j)] * dp;
      sum_wdp += w[i] * dp_abs[i];
      sum_wm += w[i] * m[i];
    }
    // |D^approx - D|: the weights' relative error, dP's, and the sum's.
    const double d_error = 2 * kForwardWeightError * sum_wdp + gamma(n + d.d_v + 4, kDoubleU) * (sum_wdp + sum_wm);
    const double d_abs = std::fabs(d_approx) + d_error;

    // Step 1: each weight's error, the larger of the softmax's and the
    // recomputation's from the lse, then P stored in F_s.
    const double lse_shift = fb.logit_error + fb.lse;  // Delta + B_lse
    const double lse_approx = f.lse;  // within its enclosure; the slack below covers it
    for (std::size_t i = 0; i < n_keys; ++i) {
      const int j = keys[i];
      const double wj = w[i];
      double recomputed;
      if (wj > 0) {
        const double gap = -std::log(wj / weight_up) + 2 * kForwardWeightError;  // lse - x_j >= 0
        recomputed = wj * (std::exp(lse_shift + g4 * (std::fabs(gap) + lse_shift)) * (1 + 4 * u) - 1);
      } else {
        const double slack = 2 * (d.d_k + 16) * kDoubleU * (fb.logit_scale[static_cast<std::size_t>(j)] +
                                                              std::fabs(lse_approx)) + 1e-300;
        const double gap = std::max(0.0, lse_approx - logit[i] - slack);
        recomputed = std::exp(-gap * (1 - g4) + lse_shift * (1 + g4)) * (1 + 4 * u);
      }
      const double softmax = fb.weight_error[static_cast<std::size_t>(j)];
      // Underflow in F_acc (SPEC 6.11 step 1): the exp and the quotient
      // lose at most lambda each, flushed or gradual, the first divided by
      // a normaliser of at least 1/2: 3 lambda.
      const double aj = std::max(softmax, recomputed) + 3 * lambda;
      a[i] = aj * (1 + st.unit_roundoff) + wj * st.unit_roundoff + st.half_subnormal;
      unbounded = unbounded || !std::isfinite(a[i]) || std::isnan(a[i]);
    }

    // Step 3: E_D, the larger of D from the output and D from P dP.
    double from_out = 0, out_mag = 0;
    for (std::size_t t = 0; t < dv_w; ++t) {
      from_out += std::fabs(dout[t]) * fb.out[t];
      out_mag += std::fabs(dout[t]) * (std::fabs(f.out[t]) + f.out_error[t] + fb.out[t]);
    }
    from_out += g_dv * out_mag;
    double from_weights_first = 0, from_weights_mag = 0;
    for (std::size_t i = 0; i < n_keys; ++i) {
      from_weights_first += a[i] * dp_abs[i] + (w[i] + a[i]) * g_dv * m[i];
      from_weights_mag += (w[i] + a[i]) * (dp_abs[i] + g_dv * m[i]);
    }
    // Each product of the two sums may underflow: lambda per term (step 3).
    const double from_weights = from_weights_first + gamma(n, u) * from_weights_mag;
    const double e_d = std::max(from_out + static_cast<double>(dv_w) * lambda,
                                from_weights + static_cast<double>(n_keys) * lambda);
    unbounded = unbounded || !std::isfinite(e_d);

    const std::size_t group_block = (static_cast<std::size_t>(r.batch) * Hkv + static_cast<std::size_t>(g)) * S;
    if (unbounded) {
      for (std::size_t t = 0; t < dk_w; ++t) dq.unbounded[row * dk_w + t] = 1;
      ++dq.terms[row];
      for (const int j : keys) {
        const std::size_t block = group_block + static_cast<std::size_t>(j);
        for (std::size_t t = 0; t < dk_w; ++t) dk.unbounded[block * dk_w + t] = 1;
        for (std::size_t t = 0; t < dv_w; ++t) dv.unbounded[block * dv_w + t] = 1;
        ++dk.terms[block];
        ++dv.terms[block];
      }
      if (sink) {
        dsink.unbounded[static_cast<std::size_t>(r.head)] = 1;
        ++dsink.terms[static_cast<std::size_t>(r.head)];
      }
      continue;
    }

    // Steps 4-6 per key, and the terms of step 7's sums.
    const double tau_base = gamma(d.d_k + 6, u);
    double* dq_first = dq.first.data() + row * dk_w;
    double* dq_mag = dq.magnitude.data() + row * dk_w;
    double* dq_size = dq.scale.data() + row * dk_w;
    for (std::size_t i = 0; i < n_keys; ++i) {
      const int j = keys[i];
      // |dP_j - D|, with the errors of the double dP_j and D.
      const double g_abs = std::fabs(dp_value[i] - d_approx) * (1 + kDoubleU) + gamma(d.d_v + 2, kDoubleU) * m[i] + d_error;
      const double b = g_dv * m[i] + e_d;
      // The subtraction's and the product's results may underflow in F_acc.
      const double e_x =
          a[i] * (g_abs + b) + w[i] * b + (w[i] + a[i]) * (g_abs + b) * theta + 2 * lambda + st.half_subnormal;
      const double dx_abs = w[i] * g_abs;
      double e_s = e_x, ds_abs = dx_abs, cap_factor = 1;
      if (p.softcap) {
        const double dot_scale = fb.dot_scale[static_cast<std::size_t>(j)];
        const double th = std::tanh(dot_value[i] / cap);
        const double cap_prime = std::min(1.0, 1 - th * th + 2 * (cap_slack * dot_scale / cap + 4 * kDoubleU));
        const double tau = tau_base * dot_scale / cap + 6 * u;
        const double kappa = 2 * tau + tau * tau + 2 * u;
        e_s = e_x * (cap_prime + kappa) * (1 + u) + dx_abs * (kappa * (1 + u) + u * cap_prime) + lambda;
        ds_abs = dx_abs * cap_prime;
        cap_factor = 1 + th * th;  // 1 - tanh^2 before its cancellation
      }
      // dS may be stored after the scale rather than before: half a
      // subnormal of F_s either way.
      const double f_j = s * (e_s * (1 + g3) + g3 * ds_abs) + lambda + st.half_subnormal;
      const double dd_abs = s * ds_abs;
      // The term's size before any cancellation, in dO . V_j and dO . o as
      // in dP_j - D (the unit of the reports, SPEC 6.11 Evaluation).
      const double dd_size = s * w[i] * (m[i] + sum_wm) * cap_factor;
      const auto k = p.key_row(r.batch, g, j);
      const std::size_t block = group_block + static_cast<std::size_t>(j);
      double* dk_first = dk.first.data() + block * dk_w;
      double* dk_mag = dk.magnitude.data() + block * dk_w;
      double* dk_size = dk.scale.data() + block * dk_w;
      for (std::size_t t = 0; t < dk_w; ++t) {
        const double kt = std::fabs(k[t]), qt = std::fabs(q[t]);
        dq_first[t] += f_j * kt;
        dq_mag[t] += (dd_abs + f_j) * kt;
        dq_size[t] += dd_size * kt;
        dk_first[t] += f_j * qt;
        dk_mag[t] += (dd_abs + f_j) * qt;
        dk_size[t] += dd_size * qt;
      }
      double* dv_first = dv.first.data() + block * dv_w;
      double* dv_mag = dv.magnitude.data() + block * dv_w;
      double* dv_size = dv.scale.data() + block * dv_w;
      for (std::size_t t = 0; t < dv_w; ++t) {
        const double ot = std::fabs(dout[t]);
        dv_first[t] += a[i] * ot;
        dv_mag[t] += (w[i] + a[i]) * ot;
        dv_size[t] += w[i] * ot;
      }
      ++dk.terms[block];
      ++dv.terms[block];
    }
    dq.terms[row] = static_cast<int>(n_keys);
    if (sink) {
      // dsigma's term of this row: -w_sigma D, the sink's weight from the
      // softmax or recomputed as exp(sigma - lse).
      const double ws = fb.sink_weight * weight_up;
      const double recomputed = ws * (std::exp(lse_shift + g4 * (std::fabs(*sink - f.lse) + lse_shift)) * (1 + 4 * u) - 1);
      const double as = std::max(fb.sink_weight_error, recomputed) + 3 * lambda;  // a key's underflow (step 1)
      const auto h = static_cast<std::size_t>(r.head);
      dsink.first[h] += as * d_abs + (ws + as) * e_d;
      dsink.magnitude[h] += (ws + as) * (d_abs + e_d);
      dsink.scale[h] += ws * sum_wm;
      dsink.unbounded[h] = dsink.unbounded[h] || !std::isfinite(as);
      ++dsink.terms[h];
    }
  }

  GradientBounds bounds;
  // dq's counters are per row, dk's and dv's per key, dsink's per head.
  finish(dq, dk_w, u, lambda, margin, bounds.dq, bounds.dq_scale);
  finish(dk, dk_w, u, lambda, margin, bounds.dk, bounds.dk_scale);
  finish(dv, dv_w, u, lambda + st.half_subnormal, margin, bounds.dv, bounds.dv_scale);
  finish(dsink, 1, u, lambda, margin, bounds.dsink, bounds.dsink_scale);
  return bounds;
}

}  // namespace attnspec
