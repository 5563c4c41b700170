// Evaluation of the tight tier, spec/SPEC.md section 6.8, term by term with
// the section's names. Keys are visited in order of their logits so that
// the keys whose computed terms may coincide (one cluster, rounding errors
// correlated) are adjacent: their contributions are added before squaring.
#include "spec/tight_bound.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

namespace attnspec {
namespace {

constexpr double kDoubleU = 0x1p-53;
constexpr int kSinkIndex = -1;  // Key::index of the row's sink (SPEC 6.4: a term with value 0)

struct Key {
  int index;
  double weight, gap, logit_error, alpha;  // w_j, x_max - x_j, Delta_j, alpha_j (6.8.1)
};

}  // namespace

std::vector<double> tight_bound(const Problem& p, RowIndex r, FormatClass formats,
                                std::span<const double> exact_weights, std::span<const double> exact_out,
                                const RowBound& worst) {
  std::vector<double> bound = worst.out;  // never looser than B_t
  const FormatInfo& acc = format_info(formats.accumulate);
  const FormatInfo& out = format_info(formats.output);
  const FormatInfo& f32 = format_info(FormatId::float32);
  // 6.8, (P2): an accumulator narrower than float32 stores the logits and
  // the weights between operations; the arithmetic is float32's.
  const bool narrow = acc.unit_roundoff > f32.unit_roundoff;
  const FormatInfo& arith = narrow ? f32 : acc;
  const double u = arith.unit_roundoff, u_s = narrow ? acc.unit_roundoff : 0.0;
  // (P2) the query and the key may each be scaled and stored in the narrow
  // format before their product: 2 u_s + u_s^2 relative to L_j, and the
  // dot product's own errors on the rounded inputs; 2.01 u_s covers both.
  // Dequantised inputs (descales, SPEC 2.4) may be stored once more.
  const double scaled_inputs = (p.descales ? 4.03 : 2.01) * u_s;
  const double u_o = out.unit_roundoff, lambda = kTightLambda;
  const Dims& d = p.dims;
  const int g = p.kv_head_of(r.head);
  const auto dv = static_cast<std::size_t>(d.d_v);

  // Keys whose exact weight underflows enter below only through the
  // underflow terms; where their computed weights may be larger (6.4),
  // the worst case stands.
  if (!(worst.underflowed_weights <= arith.min_normal)) return bound;
  std::vector<Key> keys;
  std::vector<double> largest_value(dv, 0.0);  // over every visible key, for the underflow terms
  double n = 0, w_max = 0, delta = 0;
  for (int j = 0; j < d.kv_len; ++j) {
    if (!p.visible(r, j)) continue;
    ++n;
    const double w = exact_weights[static_cast<std::size_t>(j)];
    w_max = std::max(w_max, w);
    const double magnitude = worst.logit_scale[static_cast<std::size_t>(j)];
    const double arithmetic = gamma(d.d_k + logit_roundings(p), u) * magnitude;
    // 6.2, the scaled query and key stored before the product, then the
    // logit stored.
    const double logit_error = arithmetic + scaled_inputs * worst.dot_scale[static_cast<std::size_t>(j)] +
                               u_s * (magnitude + arithmetic);
    delta = std::max(delta, logit_error);
    if (w > 0) keys.push_back({j, w, 0, logit_error, 0});  // underflowed weights: in the underflow terms only
    const double* values = p.value_row(r.batch, g, j).data();
    for (std::size_t t = 0; t < dv; ++t) largest_value[t] = std::max(largest_value[t], std::fabs(values[t]));
  }
  const std::optional<double> sink = p.sink(r);
  if (sink) {
    // Exact in float32: converted to the arithmetic's format and stored,
    // one rounding each at most.
    ++n;
    const double logit_error = (u + u_s) * std::fabs(*sink);
    delta = std::max(delta, logit_error);
    w_max = std::max(w_max, worst.sink_weight);
    if (worst.sink_weight > 0) keys.push_back({kSinkIndex, worst.sink_weight, 0, logit_error, 0});
  }
  if (keys.empty()) return bound;
  double mean_alpha = 0, max_alpha = 0;
  for (Key& k : keys) {
    k.gap = std::log(w_max) - std::log(k.weight);
    k.alpha = std::expm1(k.logit_error + (k.gap + 2 * delta) * u + 4 * u);
    mean_alpha += k.weight * k.alpha;
    max_alpha = std::max(max_alpha, k.alpha);
  }
  // Past these the first-order slack below is not justified: no tight bound.
  if (!(mean_alpha < 0.5 && max_alpha < 0.5)) return bound;
  const double kappa = (1 + max_alpha) / (1 - max_alpha);  // >= w~_j / w_j

  // 6.8.1: clusters of keys whose computed terms may be identical.
  std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) { return a.gap < b.gap; });
  std::vector<std::size_t> cluster_end;  // one past each cluster's last key
  double sum_squared_sizes = 0;
  std::size_t start = 0;
  for (std::size_t i = 1; i <= keys.size(); ++i) {
    const bool split = i == keys.size() ||
                       keys[i].gap - keys[i - 1].gap > 2 * delta + 2 * u * (keys[i].gap + 2 * delta) + 4 * u;
    if (!split) continue;
    const double size = static_cast<double>(i - start);
    sum_squared_sizes += size * size;
    cluster_end.push_back(i);
    start = i;
  }

  // 6.8.2: the two accumulators' rounding errors, relative to the
  // computed denominator; n - 1 rescalings at most.
  const double rescalings = n - 1;
  const double random_d = lambda * u * std::sqrt(sum_squared_sizes + rescalings);
  const double random_n = lambda * u * std::sqrt(4 * sum_squared_sizes + rescalings);
  const double growth = 1 + 2 * random_d;  // partial sums' own growth, first order
  const double small = 2 * u * kappa;      // terms below the spacing of the partial sum
  double small_d = 0;
  for (const Key& k : keys)
    if (k.weight < small) small_d += k.weight;
  const double error_d = random_d * growth + kappa * small_d;
  if (!(error_d < 0.5)) return bound;

  // 6.8.1 per column, keys in cluster order: the deterministic sum, the
  // shared roundings, and the variance of the rest (absolute units).
  std::vector<double> deterministic(dv, 0.0), shared(dv, 0.0), small_n(dv, 0.0);
  std::vector<double> variance(dv, 0.0);  // in units of column_unit(t)^2
  const auto column_unit = [&worst](std::size_t t) { return worst.scale[t] > 0 ? worst.scale[t] : 1.0; };
  std::vector<double> cluster_dot(dv, 0.0), cluster_rest(dv, 0.0), cluster_stored(dv, 0.0), cluster_weight(dv, 0.0);
  const double split_merge = 2 * u * (std::log(n) + 4);
  const double dot_steps = d.d_k + 1;
  const double gamma_shared = gamma(logit_roundings(p), u);
  const std::vector<double> no_values(dv, 0.0);  // the sink's
  std::size_t cluster = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const Key& k = keys[i];
    const bool is_sink = k.index == kSinkIndex;
    const double* values = is_sink ? no_values.data() : p.value_row(r.batch, g, k.index).data();
    const double w = k.weight;
    const double dot_scale = is_sink ? 0.0 : worst.dot_scale[static_cast<std::size_t>(k.index)];
    const double magnitude = is_sink ? std::fabs(*sink) : worst.logit_scale[static_cast<std::size_t>(k.index)];
    const double dot = u * dot_scale;
    // The scaled query's roundings are the row's, shared by every key, and
    // the scaled keys' are identical wherever two keys share a component
    // value: both in the worst case, with the other shared roundings.
    const double scaled_dot = scaled_inputs * dot_scale;
    const double shared_j = gamma_shared * magnitude + split_merge + scaled_dot;
    const double rest = u * (k.gap + 2 * delta + 4);
    const double stored_logit = u_s * (magnitude + k.logit_error);
    for (std::size_t t = 0; t < dv; ++t) {
      const double value = std::fabs(values[t]);
      const double deviation = w * std::fabs(values[t] - exact_out[t]);
      deterministic[t] += k.alpha * deviation;
      shared[t] += shared_j * deviation;
      cluster_dot[t] += dot * deviation;
      cluster_rest[t] += rest * deviation;
      cluster_stored[t] += stored_logit * deviation;
      cluster_weight[t] += u_s * w * value;  // a stored weight: not renormalised, so |v|, not |v - o|
      if (w * value < small * worst.scale[t]) small_n[t] += w * value;
    }
    if (i + 1 == cluster_end[cluster]) {
      // In units of |P||V|_t: squares of absolute terms underflow where the
      // weights are tiny (a sink of 512 leaves the keys weights of e^-510,
      // whose squared errors are below 1e-400), and the bound with them.
      for (std::size_t t = 0; t < dv; ++t) {
        const double unit = column_unit(t);
        const double dot_term = cluster_dot[t] / unit, rest_term = cluster_rest[t] / unit;
        const double stored_term = cluster_stored[t] / unit, weight_term = cluster_weight[t] / unit;
        variance[t] += dot_steps * dot_term * dot_term + rest_term * rest_term + stored_term * stored_term +
                       weight_term * weight_term;
        cluster_dot[t] = cluster_rest[t] = cluster_stored[t] = cluster_weight[t] = 0;
      }
      ++cluster;
    }
  }

  const double margin = 1 + 4 * (n + d.d_k + 16) * kDoubleU;
  // P rounded to a declared weights format (SPEC 6.4), in the worst case
  // as in B_t: computed weights within kappa of exact.
  WeightsRounding weights_rounding;
  if (formats.weights) {
    const FormatInfo& f = format_info(*formats.weights);
    weights_rounding.relative = f.unit_roundoff * kappa;
    weights_rounding.absolute = n * f.min_subnormal / (2 * formats.weights_scale);
  }
  // Stored weights that underflow (gradually, A1) lose at most half the
  // storage format's smallest subnormal each.
  const double stored_underflow = narrow ? n * acc.min_subnormal / 2 : 0.0;
  for (std::size_t t = 0; t < dv; ++t) {
    const double o = std::fabs(exact_out[t]);
    const double weights_term =
        std::min(deterministic[t] + u_s * kappa * worst.scale[t], (shared[t] + lambda * std::sqrt(variance[t]) * column_unit(t)) * kappa) /
        (1 - mean_alpha);
    const double error_n = random_n * growth * kappa * worst.scale[t] + kappa * small_n[t];
    const double before_division = weights_term + (error_n + (o + weights_term) * error_d) / (1 - error_d);
    // v's descale (as in B_t), on a value that may be stored once more.
    const double descale = p.descales ? (u + u_s) * (worst.scale[t] + before_division) : 0.0;
    const double a = before_division + descale + weights_rounding.error(worst.scale[t], o, before_division, largest_value[t]) +
                     u * (o + before_division) * (1 + u) +
                     (2.5 * n * arith.min_normal + stored_underflow) * largest_value[t];
    const double tight = (a + u_o * (o + a) + out.min_subnormal / 2 + kDoubleU * o) * margin;
    bound[t] = std::min(bound[t], tight);
  }
  return bound;
}

}  // namespace attnspec
