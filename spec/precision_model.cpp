// Evaluation of the bounds of spec/SPEC.md section 6, term by term with the
// section's names. The bounds are computed in double and then inflated by
// a margin that covers the double rounding of their own evaluation.
#include "spec/precision_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

namespace attnspec {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr double kDoubleU = 0x1p-53;

}  // namespace

Arithmetic accumulator_arithmetic(const FormatClass& formats) {
  // x87 extended: counted as u = 2^-63, twice its unit roundoff, so that
  // glibc's long double exp and tanh (documented within 3 ulps, not A2's
  // 2) are covered; its smallest normal number (2^-16382) is 0 in double,
  // and what underflows there is far below half of float64's smallest
  // subnormal, which the rounding to float64 adds (SPEC 6.5).
  if (formats.extended_accumulator) return Arithmetic{0x1p-63, 0};
  const FormatInfo& acc = format_info(formats.accumulate);
  return Arithmetic{acc.unit_roundoff, acc.min_normal};
}

WeightsRounding weights_rounding_of(const FormatClass& formats, double n, std::span<const double> eta) {
  WeightsRounding rounding;
  if (!formats.weights) return rounding;
  const FormatInfo& f = format_info(*formats.weights);
  double eta_max = 0;
  for (double e : eta) eta_max = std::max(eta_max, e);
  rounding.relative = f.unit_roundoff * (1 + eta_max);
  rounding.absolute = n * f.min_subnormal / (2 * formats.weights_scale);
  return rounding;
}

RowBound precision_bound(const Problem& p, RowIndex r, FormatClass formats, std::span<const double> exact_weights,
                         std::span<const double> exact_out, double exact_lse) {
  const Arithmetic acc = accumulator_arithmetic(formats);
  const FormatInfo& out = format_info(formats.output);
  const double u = acc.unit_roundoff, u_o = out.unit_roundoff;
  const Dims& d = p.dims;
  const int g = p.kv_head_of(r.head);
  const auto dv = static_cast<std::size_t>(d.d_v);

  RowBound bound;
  bound.out.assign(dv, 0.0);
  bound.scale.assign(dv, 0.0);
  bound.dot_scale.assign(static_cast<std::size_t>(d.kv_len), 0.0);
  bound.logit_scale.assign(static_cast<std::size_t>(d.kv_len), 0.0);
  bound.weight_error.assign(static_cast<std::size_t>(d.kv_len), 0.0);
  std::vector<int> visible;
  for (int j = 0; j < d.kv_len; ++j)
    if (p.visible(r, j)) visible.push_back(j);
  // A sink is one more term of the normaliser, with an exact logit and a
  // value of 0 (SPEC 6.4): n counts it.
  const std::optional<double> sink = p.sink(r);
  const double n = static_cast<double>(visible.size()) + (sink ? 1 : 0);
  if (visible.empty() && !sink) return bound;  // the output must be exactly 0

  // 6.2: Delta.
  const double s = p.scale ? *p.scale : 1.0 / std::sqrt(static_cast<double>(d.d_k));
  const double cap = p.softcap ? *p.softcap : 0.0;
  const auto q = p.query_row(r);
  double delta = 0;
  // Approximate logits, for the keys whose exact weight underflows in
  // double (below).
  std::vector<double> logit(visible.size());
  double logit_max = -kInfinity, logit_scale_max = 0;
  for (std::size_t i = 0; i < visible.size(); ++i) {
    const int j = visible[i];
    const auto k = p.key_row(r.batch, g, j);
    // |q|.|k| and q.k in four independent lanes (vectorised; the margin
    // below covers any order of these positive sums).
    double lanes[4] = {}, signed_lanes[4] = {};
    int t = 0;
    for (; t + 4 <= d.d_k; t += 4)
      for (int l = 0; l < 4; ++l) {
        lanes[l] += std::fabs(q[t + l]) * std::fabs(k[t + l]);
        signed_lanes[l] += q[t + l] * k[t + l];
      }
    for (; t < d.d_k; ++t) {
      lanes[0] += std::fabs(q[t]) * std::fabs(k[t]);
      signed_lanes[0] += q[t] * k[t];
    }
    const double abs_dot = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
    const double mask = p.mask_value(r, j), bias = p.alibi_bias(r, j);
    bound.dot_scale[static_cast<std::size_t>(j)] = s * abs_dot;
    bound.logit_scale[static_cast<std::size_t>(j)] = s * abs_dot + cap + std::fabs(mask) + std::fabs(bias);
    delta = std::max(delta, gamma(d.d_k + logit_roundings(p), u) * bound.logit_scale[static_cast<std::size_t>(j)]);
    const double scaled = s * ((signed_lanes[0] + signed_lanes[1]) + (signed_lanes[2] + signed_lanes[3]));
    logit[i] = (p.softcap ? cap * std::tanh(scaled / cap) : scaled) + mask + bias;
    logit_max = std::max(logit_max, logit[i]);
    logit_scale_max = std::max(logit_scale_max, bound.logit_scale[static_cast<std::size_t>(j)]);
  }
  if (sink) {
    // The sink's logit is exact (a float32 value); converting it to F_acc
    // costs at most one rounding (6.2).
    delta = std::max(delta, u * std::fabs(*sink));
    bound.sink_weight = std::exp(*sink - exact_lse);
    logit_max = std::max(logit_max, *sink);
    logit_scale_max = std::max(logit_scale_max, std::fabs(*sink));
  }
  bound.logit_error = delta;

  // 6.4: the normaliser's factor and eta_j; x_max - x_j from the weights.
  const double g6 = gamma(6 * n + 2, u);
  const double normaliser_low = 2 - std::pow(n, u) * (1 + g6);
  const bool valid = 6 * n * u < 1 && normaliser_low > 0;
  double w_max = 0;
  for (int j : visible) w_max = std::max(w_max, exact_weights[static_cast<std::size_t>(j)]);
  w_max = std::max(w_max, bound.sink_weight);
  // The bound's own double evaluation: sums of at most n + d_k positive
  // terms, each a product of a few factors.
  const double margin = 1 + 4 * (n + d.d_k + 16) * kDoubleU;

  // eta_j depends on the key alone: computed once per key, not per output
  // column; the columns are then summed key by key (rows of V are
  // contiguous), each column's terms in the same order as one loop per column.
  std::vector<double> eta(visible.size(), 0.0);
  // w_j eta_j for keys whose exact weight w_j underflows in double:
  // w_j = w_max e^-(x_max - x_j) is then evaluated in log space, with the
  // gap from the logits evaluated above, less twice their evaluation error
  // (d_k + 16 roundings of at most their magnitude each, std::tanh within
  // 2 ulps inside). A large Delta can lift such a weight to O(1): two
  // logits 4096 apart at 2.1e6 are equal once stored in bfloat16.
  std::vector<double> underflowed(visible.size(), 0.0);
  for (std::size_t i = 0; i < visible.size(); ++i) {
    const double w = exact_weights[static_cast<std::size_t>(visible[i])];
    if (w == 0) {
      const double slack =
          2 * (d.d_k + 16) * kDoubleU * (bound.logit_scale[static_cast<std::size_t>(visible[i])] + logit_scale_max);
      const double gap = std::max(0.0, logit_max - logit[i] - slack);
      const double exponent = -gap + 2 * delta + (gap + 2 * slack + 2 * delta) * u;
      underflowed[i] = std::isnan(exponent) ? 0.0 : w_max * std::exp(exponent) * (1 + g6) / normaliser_low;
      bound.underflowed_weights += underflowed[i];
      bound.weight_error[static_cast<std::size_t>(visible[i])] = valid ? underflowed[i] : kInfinity;
      continue;
    }
    const double gap = std::log(w_max) - std::log(w);  // x_max - x_j; w_max / w may overflow
    eta[i] = std::exp(2 * delta + (gap + 2 * delta) * u) * (1 + g6) / normaliser_low - 1;
    bound.weight_error[static_cast<std::size_t>(visible[i])] = valid ? w * eta[i] * margin : kInfinity;
  }
  if (sink) {
    // The sink's weight as any key's: eta from its gap to the largest
    // logit, or the log-space bound where its weight underflows.
    const double w = bound.sink_weight;
    const double gap = w > 0 ? std::log(w_max) - std::log(w)
                             : std::max(0.0, logit_max - *sink - 2 * (d.d_k + 16) * kDoubleU * 2 * logit_scale_max);
    const double factor = std::exp(2 * delta + (gap + 2 * delta) * u) * (1 + g6) / normaliser_low;
    bound.sink_weight_error = !valid ? kInfinity
                              : w > 0 ? w * (factor - 1) * margin
                                      : w_max * std::exp(-gap + 2 * delta + (gap + 2 * delta) * u) * (1 + g6) / normaliser_low;
  }
  // Branch-free inner loop: w eta_j once per key (where it underflows, the
  // loss is below the 2.5 n min_normal term); a key with an infinite eta_j
  // makes the columns where its value is not 0 infinite.
  std::vector<double> weighted(dv, 0.0), largest_value(dv, 0.0);
  std::vector<char> unbounded(dv, 0);
  for (std::size_t i = 0; i < visible.size(); ++i) {
    const double w = exact_weights[static_cast<std::size_t>(visible[i])];
    const double* values = p.value_row(r.batch, g, visible[i]).data();
    const bool infinite_eta = w > 0 ? std::isinf(eta[i]) : std::isinf(underflowed[i]);
    const double w_eta = infinite_eta ? 0.0 : w > 0 ? w * eta[i] : underflowed[i];
    double* scale = bound.scale.data();
    double* sum = weighted.data();
    double* largest = largest_value.data();
    for (std::size_t t = 0; t < dv; ++t) {
      const double value = std::fabs(values[t]);
      largest[t] = largest[t] < value ? value : largest[t];
      scale[t] += w * value;
      sum[t] += w_eta * value;
    }
    if (infinite_eta)
      for (std::size_t t = 0; t < dv; ++t) unbounded[t] = unbounded[t] || values[t] != 0;
  }
  for (std::size_t t = 0; t < dv; ++t)
    if (unbounded[t]) weighted[t] = kInfinity;
  const WeightsRounding weights_rounding = weights_rounding_of(formats, n, eta);
  for (std::size_t t = 0; t < dv; ++t) {
    // v's descale, applied to V or to the output: one more rounding of
    // each value (u |P||V| with the weights' own error) or of the output.
    const double descale = p.descales ? u * (bound.scale[t] + weighted[t]) : 0.0;
    const double before = valid ? weighted[t] + descale + 2.5 * n * acc.min_normal * largest_value[t] : kInfinity;
    const double o = std::fabs(exact_out[t]);
    const double a = before + weights_rounding.error(bound.scale[t], o, before, largest_value[t]);
    // 6.5, plus the float64 rounding of the reference value itself.
    bound.out[t] = (a + u_o * (o + a) + out.min_subnormal / 2 + kDoubleU * o) * margin;
  }

  // 6.6: lse.
  const double log_normaliser = valid ? -std::log(normaliser_low) : kInfinity;
  bound.lse = ((1 + gamma(5, u)) * (delta + log_normaliser + gamma(4, u) * std::log(n)) +
               gamma(2, u) * std::fabs(exact_lse) + kDoubleU * std::fabs(exact_lse)) *
              margin;
  return bound;
}

}  // namespace attnspec
