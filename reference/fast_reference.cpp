// The fast path of the certified reference (spec/SPEC.md section 5, step 5). One
// row in double: logits with a bound from gamma_d, a softmax shifted by the
// largest computed logit through bounded_exp, sums with gamma_S, and for
// each output an interval [o - E, o + E] that must hold the exact result.
// An output whose interval lies strictly between two rounding boundaries
// of the target format is decided; the multiprecision reference decides
// the others. Bounds are first order with a safety factor,
// so the path refuses rows where the first-order terms are not small.
#include "reference/fast_reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>

#include "reference/bounded_exp.hpp"
#include "reference/certified.hpp"

namespace attnspec {
namespace {

constexpr double u = kUnitRoundoff;
constexpr double kSafety = 1 + 0x1p-30;  // covers the rounding of the bound arithmetic itself
constexpr double kTinyTerm = 0x1p-1000;  // bound on a weight exp(a) with a < kBoundedExpMin
constexpr int kDotBlock = 8;             // products per partial sum of a logit
constexpr std::size_t kKeyBlock = 32;    // keys per partial sum of P V and of the denominator

double gamma(double n) { return n * u / (1 - n * u); }

// True when the exact value x with |x - approximation| <= error rounds to
// `rounded` = round_to_format(approximation) in `target` for certain: the
// interval lies strictly inside the rounding cell of `rounded`.
bool rounding_is_decided(double approximation, double error, double rounded, const FormatInfo& target) {
  if (!std::isfinite(rounded) || rounded == 0 || !std::isfinite(error)) return false;
  const double magnitude = std::fabs(rounded), x = std::fabs(approximation);
  const RoundingCell cell = rounding_cell(magnitude, target);
  // Next to overflow (whose threshold depends on the format's top
  // patterns), let the exact path decide.
  if (cell.up + (cell.up - magnitude) > target.max_finite) return false;
  // The midpoints are doubles for formats of up to 51 bits; each gap is
  // computed with one rounding (relative error <= u).
  return error * (1 + 4 * u) < (cell.up - x) * (1 - 2 * u) && error * (1 + 4 * u) < (x - cell.down) * (1 - 2 * u);
}

struct RowInputs {
  std::vector<int> visible;     // keys visible to the row
  std::vector<double> logits;   // computed logits of the visible keys
  double logit_error = 0;       // bound on |computed - exact| over the visible keys
  bool finite = true;
};

// Logits s * (q . k_j) + mask_j for the visible keys, with their error bound.
RowInputs row_logits(const Problem& p, RowIndex r) {
  RowInputs in;
  const int d = p.dims.d_k, g = p.kv_head_of(r.head);
  const std::span<const double> q = p.query_row(r);
  for (double x : q) in.finite = in.finite && std::isfinite(x);
  // The default scale 1/sqrt(d_k) is two correctly rounded operations away
  // from exact: relative error <= 2u + u^2.
  const double scale = p.scale ? *p.scale : 1.0 / std::sqrt(static_cast<double>(d));
  const double scale_error = p.scale ? 0.0 : 2.01 * u * scale;
  double worst = 0;
  // Without a mask or causal masking every key is visible with mask 0;
  // skipping the per-key lookups matters for short rows.
  const bool unmasked = p.mask_kind == MaskKind::none && p.causal == Causal::none;
  in.visible.reserve(static_cast<std::size_t>(p.dims.kv_len));
  in.logits.reserve(static_cast<std::size_t>(p.dims.kv_len));
  for (int j = 0; j < p.dims.kv_len; ++j) {
    if (!unmasked && !p.visible(r, j)) continue;
    const std::span<const double> k = p.key_row(r.batch, g, j);
    // A running error bound (Wilkinson): each addition errs by at most
    // u |its result| and each product by u |product|, so the dot product
    // errs by at most u (partial_sums + magnitude), where partial_sums adds
    // up |every partial sum| (blocks of kDotBlock products, then blocks).
    double dot = 0, magnitude = 0, partial_sums = 0;
    for (int start = 0; start < d; start += kDotBlock) {
      double block = 0;
      for (int t = start; t < std::min(d, start + kDotBlock); ++t) {
        const double product = q[static_cast<std::size_t>(t)] * k[static_cast<std::size_t>(t)];
        block += product;
        magnitude += std::fabs(product);
        partial_sums += std::fabs(block);
      }
      dot += block;
      partial_sums += std::fabs(dot);
    }
    const double mask = unmasked ? 0.0 : p.mask_value(r, j);
    const double scaled = dot * scale;
    const double logit = scaled + mask;
    if (!std::isfinite(logit) || !std::isfinite(magnitude)) in.finite = false;
    // The dot product's running bound times the scale; the scale's error
    // times |q.k|; one rounding for the product with the scale and one for
    // adding the mask; d * 2^-1074 for products and sums that underflow.
    const double error = (u * (partial_sums + magnitude) * scale + magnitude * scale_error) * (1 + 2 * u) +
                         d * 0x1p-1074 * scale + u * std::fabs(scaled) + u * std::fabs(logit);
    worst = std::max(worst, error);
    in.visible.push_back(j);
    in.logits.push_back(logit);
  }
  in.logit_error = worst * (1 + (d + 4) * u) * kSafety;  // the bound's own roundings
  return in;
}

// Sum of |partial sums| of sum_j weight_j V[key_j][t], accumulated in the
// same blocks as the numerators, for the running error bound. The value
// it sums is the numerator already computed: same operations, same order.
double numerator_partial_sums(const Problem& p, RowIndex r, std::span<const int> keys, std::span<const double> weight,
                              std::size_t t) {
  const int g = p.kv_head_of(r.head);
  double total = 0, partial_sums = 0;
  for (std::size_t start = 0; start < keys.size(); start += kKeyBlock) {
    double block = 0;
    for (std::size_t j = start; j < std::min(keys.size(), start + kKeyBlock); ++j) {
      block += weight[j] * p.value_row(r.batch, g, keys[j])[t];
      partial_sums += std::fabs(block);
    }
    total += block;
    partial_sums += std::fabs(total);
  }
  return partial_sums;
}

// The row through the multiprecision reference: its outputs in the target
// (only `columns`, if given), and (when the fast values are unusable) in
// float64 with the weights.
void escalate(const Problem& p, RowIndex r, FormatId target, bool replace_approximations, FastRow& row,
              std::vector<int> columns = {}) {
  // One escalation at a time: the multiprecision path sets Boost's default
  // precision, which is one value for the whole process, so two threads
  // refining at once could each compute at the other's precision (sound,
  // but a row needing more bits could then run into the refinement guard).
  static std::mutex one_at_a_time;
  const std::lock_guard<std::mutex> lock(one_at_a_time);
  ReferenceOptions options;
  options.target = target;
  options.weights = false;
  options.columns = std::move(columns);
  const RowResult exact = certified_row(p, r, options);
  if (options.columns.empty()) row.out = exact.out;
  for (int t : options.columns) row.out[static_cast<std::size_t>(t)] = exact.out[static_cast<std::size_t>(t)];
  row.escalated = true;
  row.escalated_outputs = options.columns.empty() ? row.out.size() : options.columns.size();
  if (!replace_approximations) return;
  options.columns.clear();
  options.target = FormatId::float64;
  options.weights = true;
  const RowResult wide = certified_row(p, r, options);
  row.out_double = wide.out;
  row.weights = wide.weights;
  row.lse = wide.lse;
  const int g = p.kv_head_of(r.head);
  for (std::size_t t = 0; t < row.out.size(); ++t) {
    row.out_error[t] = std::isfinite(wide.out[t]) ? std::fabs(wide.out[t]) * u + 0x1p-1074 : 0.0;  // half an ulp of float64, at least
    double scale = 0;
    for (int j = 0; j < p.dims.kv_len; ++j)
      scale += wide.weights[static_cast<std::size_t>(j)] * std::fabs(p.value_row(r.batch, g, j)[t]);
    row.abs_scale[t] = scale;
  }
}

}  // namespace

FastRow fast_certified_row(const Problem& p, RowIndex r, FormatId target) {
  const auto dv = static_cast<std::size_t>(p.dims.d_v);
  const auto S = static_cast<std::size_t>(p.dims.kv_len);
  FastRow row;
  row.out.assign(dv, 0.0);
  row.out_double.assign(dv, 0.0);
  row.out_error.assign(dv, 0.0);
  row.abs_scale.assign(dv, 0.0);
  row.weights.assign(S, 0.0);
  row.lse = -std::numeric_limits<double>::infinity();

  const RowInputs in = row_logits(p, r);
  if (in.visible.empty()) return row;  // no visible key: exactly 0 (SPEC section 2.3)
  if (!in.finite || p.softcap) {  // NaN, infinities and tanh are the exact path's
    escalate(p, r, target, true, row);
    return row;
  }

  const std::size_t n = in.visible.size();
  const double shift = *std::max_element(in.logits.begin(), in.logits.end());
  // Weights exp(x_j - shift) * (1 + rho_j): the shifted argument is off by
  // at most logit_error + u |a_j| (the subtraction), which bounded_exp's
  // own error multiplies.
  std::vector<double> weight(n);
  double argument_error = 0, tiny = 0;
  for (std::size_t j = 0; j < n; ++j) {
    const double a = in.logits[j] - shift;
    if (a < kBoundedExpMin) {
      weight[j] = 0;  // exact value below exp(-700 + error): an absolute error instead
      tiny += 1;
      continue;
    }
    argument_error = std::max(argument_error, u * std::fabs(a));
    weight[j] = bounded_exp(a);
  }
  const double eta = in.logit_error + argument_error * kSafety;
  const double rho = (std::expm1(eta) * (1 + kBoundedExpError) + kBoundedExpError) * kSafety;
  const double sum_gamma = gamma(static_cast<double>(kKeyBlock + (n + kKeyBlock - 1) / kKeyBlock + 1));
  if (!(rho < 0x1p-20) || !(sum_gamma < 0x1p-20)) {  // first-order bounds no longer safe
    escalate(p, r, target, true, row);
    return row;
  }

  // Numerators, their magnitudes and the denominator, summed in blocks of
  // kKeyBlock keys (error bound gamma_(block + n / block + 1)).
  std::vector<double> numerator(dv, 0.0), magnitude(dv, 0.0), largest(dv, 0.0);
  std::vector<double> block_numerator(dv), block_magnitude(dv);
  double denominator = 0;
  const int g = p.kv_head_of(r.head);
  for (std::size_t start = 0; start < n; start += kKeyBlock) {
    std::fill(block_numerator.begin(), block_numerator.end(), 0.0);
    std::fill(block_magnitude.begin(), block_magnitude.end(), 0.0);
    double block_denominator = 0;
    for (std::size_t j = start; j < std::min(n, start + kKeyBlock); ++j) {
      const std::span<const double> v = p.value_row(r.batch, g, in.visible[j]);
      const double w = weight[j];
      block_denominator += w;
      for (std::size_t t = 0; t < dv; ++t) {
        block_numerator[t] += w * v[t];
        block_magnitude[t] += w * std::fabs(v[t]);
        largest[t] = std::max(largest[t], std::fabs(v[t]));
      }
    }
    denominator += block_denominator;
    for (std::size_t t = 0; t < dv; ++t) {
      numerator[t] += block_numerator[t];
      magnitude[t] += block_magnitude[t];
    }
  }
  for (std::size_t t = 0; t < dv; ++t)
    if (!std::isfinite(largest[t]) || !std::isfinite(magnitude[t])) {  // a NaN or infinite value, or overflow
      escalate(p, r, target, true, row);
      return row;
    }
  // denominator >= 1: the largest logit's weight is exp(0) = 1 exactly.
  const double second_order = 1 + 2 * rho + 2 * sum_gamma;
  const double denominator_error = ((sum_gamma + rho) * denominator + tiny * kTinyTerm) * second_order * kSafety;
  std::vector<int> undecided;
  const FormatInfo& format = format_info(target);
  for (std::size_t t = 0; t < dv; ++t) {
    // |N - exact N| <= (gamma + rho) sum w|v| + tiny terms. With o the
    // exact output, N/D - o = (N - exact N)/D + o (exact D - D)/D, and
    // |o| <= |N/D| + |N/D - o| solves to the bound below; the division
    // adds u |output|.
    const double numerator_error = ((sum_gamma + rho) * magnitude[t] + tiny * kTinyTerm * largest[t]) * second_order;
    const double output = numerator[t] / denominator;
    const double quotient = std::fabs(output) * (1 + u);
    const double error =
        (u * quotient + (numerator_error + quotient * denominator_error) / (denominator - denominator_error)) * kSafety +
        0x1p-1070;
    row.out_double[t] = output;
    row.out_error[t] = error;
    row.abs_scale[t] = magnitude[t] / denominator;
    if (target == FormatId::float64) continue;
    row.out[t] = round_to_format(output, target);
    if (rounding_is_decided(output, error, row.out[t], format)) continue;
    // A second look before the exact path: the numerator again with a
    // running error bound (u times every |partial sum| and |product|),
    // which for a cancelling sum is far below gamma times its magnitude.
    const std::span<const int> keys = in.visible;
    const double running_error =
        (u * (numerator_partial_sums(p, r, keys, weight, t) + magnitude[t]) * (1 + (n + 4) * u) + rho * magnitude[t] +
         tiny * kTinyTerm * largest[t]) *
        second_order;
    const double tighter =
        (u * quotient + (running_error + quotient * denominator_error) / (denominator - denominator_error)) * kSafety +
        0x1p-1070;
    if (tighter < error) row.out_error[t] = tighter;
    if (!rounding_is_decided(output, tighter, row.out[t], format)) undecided.push_back(static_cast<int>(t));
  }
  for (std::size_t j = 0; j < n; ++j) row.weights[static_cast<std::size_t>(in.visible[j])] = weight[j] / denominator;
  row.lse = shift + std::log(denominator);
  // A double evaluation cannot certify a float64 rounding: that target
  // always takes the exact path, keeping the double approximations above.
  if (target == FormatId::float64) escalate(p, r, target, false, row);
  else if (!undecided.empty()) escalate(p, r, target, false, row, std::move(undecided));
  return row;
}

FastReferenceResult fast_certified_attention(const Problem& p, FormatId target, std::span<const std::size_t> rows,
                                             const std::function<void(std::size_t, std::size_t)>& progress) {
  const std::size_t count = rows.empty() ? p.rows() : rows.size();
  FastReferenceResult result;
  result.out.reserve(count * static_cast<std::size_t>(p.dims.d_v));
  for (std::size_t i = 0; i < count; ++i) {
    const FastRow row = fast_certified_row(p, p.row_index(rows.empty() ? i : rows[i]), target);
    result.out.insert(result.out.end(), row.out.begin(), row.out.end());
    result.escalated_rows += row.escalated;
    result.escalated_outputs += row.escalated_outputs;
    ++result.rows;
    if (progress) progress(i + 1, count);
  }
  return result;
}

}  // namespace attnspec
