// The fast path of the certified reference (spec/SPEC.md section 5, step 5). One
// row in double: logits (softcapped through bounded_exp) with running
// error bounds, a softmax shifted by the largest computed logit through
// bounded_exp, sums with running bounds, and for each output an interval
// [o - E, o + E] that must hold the exact result. An output whose interval
// lies strictly between two rounding boundaries of the target format is
// decided; the multiprecision reference decides the others. Bounds are
// first order with a safety factor, so the path refuses rows where the
// first-order terms are not small.
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
constexpr int kLanes = 8;                // independent partial sums of a logit's dot product
constexpr std::size_t kKeyBlock = 32;    // keys per partial sum of P V and of the denominator

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
  bool finite = true;           // every logit finite (else the exact path, or the rule below)
  bool nonfinite_query_or_key = false;  // a NaN or infinity in q or a visible key: all NaN (SPEC 2.3)
};

// Logits s * (q . k_j) [capped] + mask_j for the visible keys, with their
// error bound.
RowInputs row_logits(const Problem& p, RowIndex r) {
  RowInputs in;
  const int d = p.dims.d_k, g = p.kv_head_of(r.head);
  const std::span<const double> q = p.query_row(r);
  const bool q_finite = std::all_of(q.begin(), q.end(), [](double x) { return std::isfinite(x); });
  in.finite = q_finite;
  // The default scale 1/sqrt(d_k) is two correctly rounded operations away
  // from exact: relative error <= 2u + u^2.
  const double scale = p.scale ? *p.scale : 1.0 / std::sqrt(static_cast<double>(d));
  const double scale_error = p.scale ? 0.0 : 2.01 * u * scale;
  const double cap = p.softcap ? *p.softcap : 0.0;
  if (p.softcap && !(cap > 0 && std::isfinite(cap))) in.finite = false;
  double worst = 0;
  // Without a mask or causal masking every key is visible with mask 0;
  // skipping the per-key lookups matters for short rows.
  const bool unmasked = p.mask_kind == MaskKind::none && p.causal == Causal::none;
  in.visible.reserve(static_cast<std::size_t>(p.dims.kv_len));
  in.logits.reserve(static_cast<std::size_t>(p.dims.kv_len));
  for (int j = 0; j < p.dims.kv_len; ++j) {
    if (!unmasked && !p.visible(r, j)) continue;
    const std::span<const double> k = p.key_row(r.batch, g, j);
    if (!q_finite || !std::all_of(k.begin(), k.end(), [](double x) { return std::isfinite(x); }))
      in.nonfinite_query_or_key = true;
    // A running error bound (Wilkinson): each addition errs by at most
    // u |its result| and each product by u |product|, so the dot product
    // errs by at most u (partial_sums + magnitude), where partial_sums adds
    // up |every partial sum| formed. The products are summed in kLanes
    // independent lanes (component t in lane t % kLanes, which the compiler
    // can vectorise), then the lanes pairwise.
    double lane[kLanes] = {}, lane_partials[kLanes] = {}, lane_magnitude[kLanes] = {};
    int t = 0;
    for (; t + kLanes <= d; t += kLanes)
      for (int l = 0; l < kLanes; ++l) {
        const double product = q[static_cast<std::size_t>(t + l)] * k[static_cast<std::size_t>(t + l)];
        lane[l] += product;
        lane_magnitude[l] += std::fabs(product);
        lane_partials[l] += std::fabs(lane[l]);
      }
    for (int l = 0; t < d; ++t, ++l) {
      const double product = q[static_cast<std::size_t>(t)] * k[static_cast<std::size_t>(t)];
      lane[l] += product;
      lane_magnitude[l] += std::fabs(product);
      lane_partials[l] += std::fabs(lane[l]);
    }
    double magnitude = 0, partial_sums = 0;
    for (int l = 0; l < kLanes; ++l) {
      magnitude += lane_magnitude[l];
      partial_sums += lane_partials[l];
    }
    for (int width = kLanes / 2; width >= 1; width /= 2)
      for (int l = 0; l < width; ++l) {
        lane[l] += lane[l + width];
        partial_sums += std::fabs(lane[l]);
      }
    const double dot = lane[0];
    const double mask = unmasked ? 0.0 : p.mask_value(r, j);
    const double scaled = dot * scale;
    // The dot product's running bound times the scale; the scale's error
    // times |q.k|; one rounding for the product with the scale;
    // d * 2^-1074 for products and sums that underflow.
    double error = (u * (partial_sums + magnitude) * scale + magnitude * scale_error) * (1 + 2 * u) +
                   d * 0x1p-1074 * scale + u * std::fabs(scaled);
    double capped = scaled;
    if (p.softcap) {
      // c tanh(y), y = scaled / c, with tanh|y| = (1 - e) / (1 + e), e =
      // exp(-2|y|) from bounded_exp. |d tanh / d y| <= 1, so the error of
      // y (error / c plus the division's u |y|) passes through times c.
      // The formula's own error is at most 7u absolute: the exp's 8u e
      // moves the quotient by at most 16u e / (1 + e)^2 <= 4u, and its
      // three roundings by u each (all quotients are at most 1); 10u is
      // used. For |y| > 350, e < 2^-1000 and tanh|y| is taken as 1.
      const double y = scaled / cap;
      const double a = std::fabs(y);
      double tanh_a = 1;
      if (-2 * a >= kBoundedExpMin) {
        const double e = bounded_exp(-2 * a);
        tanh_a = (1 - e) / (1 + e);
      }
      capped = cap * std::copysign(tanh_a, y);
      error += cap * (u * a + 10 * u + 0x1p-1000) + u * std::fabs(capped);
    }
    const double logit = capped + mask;
    if (!std::isfinite(logit) || !std::isfinite(magnitude)) in.finite = false;
    error += u * std::fabs(logit);  // adding the mask
    worst = std::max(worst, error);
    in.visible.push_back(j);
    in.logits.push_back(logit);
  }
  in.logit_error = worst * (1 + (d + 8) * u) * kSafety;  // the bound's own roundings
  return in;
}

// The softmax's sums for one row, accumulated in one pass in blocks of
// kKeyBlock keys: the numerators sum_j w_j V[j][t], their magnitudes
// sum_j w_j |V[j][t]|, and the denominator sum_j w_j, each with the sum of
// |every partial sum| of the same additions for the running error bound
// (u times the partial sums plus the magnitude of the products bounds a
// sum's rounding error). The bound and the value come from the same loop,
// so they cannot describe different summation orders.
struct WeightedSums {
  std::vector<double> numerator, magnitude, numerator_partials;
  double denominator = 0, denominator_partials = 0;
};

WeightedSums weighted_sums(const Problem& p, RowIndex r, std::span<const int> keys, std::span<const double> weight) {
  const auto dv = static_cast<std::size_t>(p.dims.d_v);
  const int g = p.kv_head_of(r.head);
  WeightedSums sums;
  sums.numerator.assign(dv, 0.0);
  sums.magnitude.assign(dv, 0.0);
  sums.numerator_partials.assign(dv, 0.0);
  std::vector<double> block_numerator(dv), block_magnitude(dv);
  for (std::size_t start = 0; start < keys.size(); start += kKeyBlock) {
    std::fill(block_numerator.begin(), block_numerator.end(), 0.0);
    std::fill(block_magnitude.begin(), block_magnitude.end(), 0.0);
    double block_denominator = 0;
    for (std::size_t j = start; j < std::min(keys.size(), start + kKeyBlock); ++j) {
      const double* v = p.value_row(r.batch, g, keys[j]).data();
      const double w = weight[j];
      block_denominator += w;
      sums.denominator_partials += block_denominator;
      double* numerator = block_numerator.data();
      double* magnitude = block_magnitude.data();
      double* partials = sums.numerator_partials.data();
      for (std::size_t t = 0; t < dv; ++t) {  // plain arrays: vectorised
        numerator[t] += w * v[t];
        magnitude[t] += w * std::fabs(v[t]);
        partials[t] += std::fabs(numerator[t]);
      }
    }
    sums.denominator += block_denominator;
    sums.denominator_partials += sums.denominator;
    for (std::size_t t = 0; t < dv; ++t) {
      sums.numerator[t] += block_numerator[t];
      sums.magnitude[t] += block_magnitude[t];
      sums.numerator_partials[t] += std::fabs(sums.numerator[t]);
    }
  }
  return sums;
}

// Column t's largest |V| over the keys, and whether all are finite (a
// second pass, taken only where needed).
struct ColumnValues {
  double largest = 0;
  bool finite = true;
};
ColumnValues column_values(const Problem& p, RowIndex r, std::span<const int> keys, std::size_t t) {
  const int g = p.kv_head_of(r.head);
  ColumnValues c;
  for (int j : keys) {
    const double v = p.value_row(r.batch, g, j)[t];
    c.finite = c.finite && std::isfinite(v);
    c.largest = std::max(c.largest, std::fabs(v));
  }
  return c;
}

// The multiprecision reference's row: outputs in `target` (only `columns`,
// if given), with weights and lse when `target` is float64 and all columns
// are asked for.
RowResult exact_row(const Problem& p, RowIndex r, FormatId target, std::vector<int> columns = {}) {
  // One escalation at a time: the multiprecision path sets Boost's default
  // precision, which is one value for the whole process, so two threads
  // refining at once could each compute at the other's precision (sound,
  // but a row needing more bits could then run into the refinement guard).
  static std::mutex one_at_a_time;
  const std::lock_guard<std::mutex> lock(one_at_a_time);
  ReferenceOptions options;
  options.target = target;
  options.weights = target == FormatId::float64 && columns.empty();
  options.columns = std::move(columns);
  return certified_row(p, r, options);
}

// The enclosure from the multiprecision reference: correctly rounded
// float64 values, each within half an ulp of float64 of the exact one.
void enclose_exactly(const Problem& p, RowIndex r, FastRow& row) {
  const RowResult wide = exact_row(p, r, FormatId::float64);
  row.out_double = wide.out;
  row.weights = wide.weights;
  row.lse = wide.lse;
  row.lse_error = std::isfinite(wide.lse) ? std::fabs(wide.lse) * u : 0.0;
  row.escalated = true;
  row.escalated_outputs = row.out_double.size();
  const int g = p.kv_head_of(r.head);
  for (std::size_t t = 0; t < row.out_double.size(); ++t) {
    row.out_error[t] = std::isfinite(wide.out[t]) ? std::fabs(wide.out[t]) * u + 0x1p-1074 : 0.0;
    double scale = 0;
    for (int j = 0; j < p.dims.kv_len; ++j)
      scale += wide.weights[static_cast<std::size_t>(j)] * std::fabs(p.value_row(r.batch, g, j)[t]);
    row.abs_scale[t] = scale;
  }
}

}  // namespace

FastRow enclosed_row(const Problem& p, RowIndex r) {
  const auto dv = static_cast<std::size_t>(p.dims.d_v);
  const auto S = static_cast<std::size_t>(p.dims.kv_len);
  FastRow row;
  row.out_double.assign(dv, 0.0);
  row.out_error.assign(dv, 0.0);
  row.abs_scale.assign(dv, 0.0);
  row.weights.assign(S, 0.0);
  row.lse = -std::numeric_limits<double>::infinity();

  const RowInputs in = row_logits(p, r);
  if (in.visible.empty()) return row;  // no visible key: exactly 0 (SPEC section 2.3)
  if (in.nonfinite_query_or_key) {
    // SPEC section 2.3: every output, visible weight and the lse are NaN,
    // exactly as the exact path has them (reference/exact_row.cpp).
    constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
    std::fill(row.out_double.begin(), row.out_double.end(), kNaN);
    for (int j : in.visible) row.weights[static_cast<std::size_t>(j)] = kNaN;
    row.lse = kNaN;
    return row;
  }
  if (!in.finite) {  // other NaN and infinities (in the mask) are the exact path's
    enclose_exactly(p, r, row);
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
  // The running bounds below are at most gamma of the longest chain of
  // additions times the magnitudes; when that is not small, the first-order
  // treatment of products of error factors is not safe.
  const double sum_gamma = gamma(static_cast<double>(kKeyBlock + (n + kKeyBlock - 1) / kKeyBlock + 1), u);
  if (!(rho < 0x1p-20) || !(sum_gamma < 0x1p-20)) {
    enclose_exactly(p, r, row);
    return row;
  }

  const WeightedSums sums = weighted_sums(p, r, in.visible, weight);
  // A non-finite magnitude: a NaN or infinite value (that column is NaN,
  // SPEC section 2.3), or overflow (the exact path's). The largest |V| of
  // a column is needed only for the tiny weights' absolute error.
  std::vector<char> finite(dv, 1);
  std::vector<double> largest(dv, 0.0);
  for (std::size_t t = 0; t < dv; ++t) {
    if (std::isfinite(sums.magnitude[t]) && tiny == 0) continue;
    const ColumnValues column = column_values(p, r, in.visible, t);
    finite[t] = column.finite;
    largest[t] = column.largest;
    if (column.finite && !std::isfinite(sums.magnitude[t])) {
      enclose_exactly(p, r, row);
      return row;
    }
  }
  // denominator >= 1: the largest logit's weight is exp(0) = 1 exactly.
  const double denominator = sums.denominator;
  const double chain = 1 + (n + 4) * u;  // the running bounds' own roundings
  const double second_order = 1 + 2 * rho + 2 * sum_gamma;
  const double denominator_error =
      (u * sums.denominator_partials * chain + rho * denominator + tiny * kTinyTerm) * second_order * kSafety;
  for (std::size_t t = 0; t < dv; ++t) {
    // |N - exact N| <= u (partial sums + sum w|v|) + rho sum w|v| + tiny
    // terms. With o the exact output, N/D - o = (N - exact N)/D +
    // o (exact D - D)/D, and |o| <= |N/D| + |N/D - o| solves to the bound
    // below; the division adds u |output|.
    const double numerator_error =
        (u * (sums.numerator_partials[t] + sums.magnitude[t]) * chain + rho * sums.magnitude[t] +
         tiny * kTinyTerm * largest[t]) *
        second_order;
    if (!finite[t]) {  // a NaN or infinite value at a visible key: NaN (SPEC section 2.3)
      row.out_double[t] = std::numeric_limits<double>::quiet_NaN();
      continue;
    }
    const double output = sums.numerator[t] / denominator;
    const double quotient = std::fabs(output) * (1 + u);
    row.out_double[t] = output;
    row.out_error[t] =
        (u * quotient + (numerator_error + quotient * denominator_error) / (denominator - denominator_error)) * kSafety +
        0x1p-1070;
    row.abs_scale[t] = sums.magnitude[t] / denominator;
  }
  for (std::size_t j = 0; j < n; ++j) row.weights[static_cast<std::size_t>(in.visible[j])] = weight[j] / denominator;
  // lse = shift + log(exact D), the logits' errors being in derr through
  // rho: log moves by at most derr / (D - derr) when D does; std::log is
  // taken to err by at most 2 ulp (glibc documents 1 on x86-64), and the
  // addition by u |lse|.
  const double log_denominator = std::log(denominator);
  row.lse = shift + log_denominator;
  row.lse_error = (denominator_error / (denominator - denominator_error) +
                   4 * u * std::fabs(log_denominator) + u * std::fabs(row.lse)) *
                  kSafety * (1 + 4 * u);
  return row;
}

FastRow fast_certified_row(const Problem& p, RowIndex r, FormatId target) {
  FastRow row = enclosed_row(p, r);
  const auto dv = row.out_double.size();
  row.out.assign(dv, 0.0);
  if (row.escalated || target == FormatId::float64) {
    // The enclosure came from the multiprecision path, or a double
    // evaluation cannot certify a float64 rounding: the exact path rounds.
    if (std::isnan(row.lse) && !row.escalated) {  // a NaN query or key: all NaN, in every format
      row.out = row.out_double;
      return row;
    }
    const bool visible = row.lse != -std::numeric_limits<double>::infinity();
    if (visible) row.out = exact_row(p, r, target).out;
    row.escalated = row.escalated || visible;
    row.escalated_outputs = visible ? dv : 0;
    return row;
  }
  const FormatInfo& format = format_info(target);
  std::vector<int> undecided;
  for (std::size_t t = 0; t < dv; ++t) {
    row.out[t] = round_to_format(row.out_double[t], target);
    if (std::isnan(row.out_double[t])) continue;                      // exactly NaN (SPEC section 2.3)
    if (row.out_double[t] == 0 && row.out_error[t] == 0) continue;  // no visible key: exactly 0
    if (!rounding_is_decided(row.out_double[t], row.out_error[t], row.out[t], format))
      undecided.push_back(static_cast<int>(t));
  }
  if (undecided.empty()) return row;
  const RowResult exact = exact_row(p, r, target, undecided);
  for (int t : undecided) row.out[static_cast<std::size_t>(t)] = exact.out[static_cast<std::size_t>(t)];
  row.escalated = true;
  row.escalated_outputs = undecided.size();
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
