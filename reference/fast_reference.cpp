// The fast path of the certified reference (spec/SPEC.md section 5, step 5). One
// row in double (or, on the extended rung, x87 extended precision): logits
// (softcapped through bounded_exp) with running error bounds, a softmax
// shifted by the largest computed logit through bounded_exp, sums with
// running bounds, and for each output an interval [o - E, o + E] that must
// hold the exact result. An output whose interval lies strictly between two
// rounding boundaries of the target format is decided; the multiprecision
// reference decides the others. Bounds are first order with a safety
// factor, so the path refuses rows where the first-order terms are not
// small. One template serves both precisions, so the two rungs cannot
// differ in anything but their arithmetic.
#include "reference/fast_reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <optional>
#include <type_traits>

#include "reference/bounded_exp.hpp"
#include "reference/certified.hpp"
#include "reference/running_bound.hpp"

namespace attnspec {
namespace {

constexpr double u = kUnitRoundoff;
constexpr double kSafety = 1 + 0x1p-30;  // covers the rounding of the bound arithmetic itself

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

// The double rung's dot products (reference/running_bound.hpp), the fast
// path's hottest loop, compiled
// also for AVX2 and AVX-512 and chosen by the CPU at load time. Every
// clone performs the same operations in the same order (no contraction
// into FMA: -ffp-contract=off, CMakeLists.txt), so every clone returns the
// same values.
[[gnu::target_clones("avx512f", "avx2", "default")]] DotProduct<double> dot_in_double(const double* q, const double* k,
                                                                                     int d) {
  return dot_with_running_bound<double>(q, k, d);
}

template <typename Real>
struct RowInputs {
  std::vector<int> visible;     // keys visible to the row
  std::vector<Real> logits;     // computed logits of the visible keys
  Real logit_error = 0;         // bound on |computed - exact| over the visible keys
  std::optional<Real> sink;     // the row's sink logit (exact: a float32 value), if it has one
  bool finite = true;           // every logit finite (else the exact path, or the rule below)
  bool nonfinite_query_or_key = false;  // a NaN or infinity in q or a visible key: all NaN (SPEC 2.3)
};

// Logits s * (q . k_j) [capped] + mask_j for the visible keys, with their
// error bound.
template <typename Real>
RowInputs<Real> row_logits(const Problem& p, RowIndex r) {
  constexpr Real ur = RungArithmetic<Real>::unit;
  constexpr Real kUnderflow = std::numeric_limits<Real>::denorm_min();
  RowInputs<Real> in;
  const int d = p.dims.d_k, g = p.kv_head_of(r.head);
  const std::span<const double> q = p.query_row(r);
  const bool q_finite = std::all_of(q.begin(), q.end(), [](double x) { return std::isfinite(x); });
  in.finite = q_finite;
  // The default scale 1/sqrt(d_k) is two correctly rounded operations away
  // from exact: relative error <= 2u + u^2.
  const Real scale = p.scale ? static_cast<Real>(*p.scale) : 1 / std::sqrt(static_cast<Real>(d));
  const Real scale_error = p.scale ? 0 : Real(2.01) * ur * scale;
  const Real cap = p.softcap ? static_cast<Real>(*p.softcap) : 0;
  if (p.softcap && !(cap > 0 && std::isfinite(cap))) in.finite = false;
  Real worst = 0;
  // Without a mask or causal masking every key is visible with mask 0;
  // skipping the per-key lookups matters for short rows.
  const bool unmasked = p.every_key_visible();
  in.visible.reserve(static_cast<std::size_t>(p.dims.kv_len));
  in.logits.reserve(static_cast<std::size_t>(p.dims.kv_len));
  for (int j = 0; j < p.dims.kv_len; ++j) {
    if (!unmasked && !p.visible(r, j)) continue;
    const std::span<const double> k = p.key_row(r.batch, g, j);
    if (!q_finite || !std::all_of(k.begin(), k.end(), [](double x) { return std::isfinite(x); }))
      in.nonfinite_query_or_key = true;
    DotProduct<Real> dot_product;
    if constexpr (std::is_same_v<Real, double>)
      dot_product = dot_in_double(q.data(), k.data(), d);
    else
      dot_product = dot_with_running_bound<Real>(q.data(), k.data(), d);
    const Real dot = dot_product.value, magnitude = dot_product.magnitude, partial_sums = dot_product.partial_sums;
    // The mask value plus the ALiBi bias: both exact doubles, their sum
    // within one rounding (added to the error below).
    const Real additive = unmasked && !p.alibi ? 0
                                               : static_cast<Real>(p.mask_value(r, j)) + static_cast<Real>(p.alibi_bias(r, j));
    const Real scaled = dot * scale;
    // The dot product's running bound times the scale; the scale's error
    // times |q.k|; one rounding for the product with the scale;
    // d * (smallest subnormal) for products and sums that underflow.
    Real error = (ur * (partial_sums + magnitude) * scale + magnitude * scale_error) * (1 + 2 * ur) +
                 d * kUnderflow * scale + ur * std::fabs(scaled);
    Real capped = scaled;
    if (p.softcap) {
      // c tanh(y), y = scaled / c, with tanh|y| = (1 - e) / (1 + e), e =
      // exp(-2|y|) from bounded_exp. |d tanh / d y| <= 1, so the error of
      // y (error / c plus the division's u |y|) passes through times c.
      // The formula's own error is at most 7u absolute: the exp's 8u e
      // moves the quotient by at most 16u e / (1 + e)^2 <= 4u, and its
      // three roundings by u each (all quotients are at most 1); 10u is
      // used. Past the exp's range (|y| > 350 in double), e < tiny_term
      // and tanh|y| is taken as 1.
      const Real y = scaled / cap;
      const Real a = std::fabs(y);
      Real tanh_a = 1;
      if (-2 * a >= RungArithmetic<Real>::exp_min) {
        const Real e = RungArithmetic<Real>::exp(-2 * a);
        tanh_a = (1 - e) / (1 + e);
      }
      capped = cap * std::copysign(tanh_a, y);
      error += cap * (ur * a + 10 * ur + RungArithmetic<Real>::tiny_term) + ur * std::fabs(capped);
    }
    const Real logit = capped + additive;
    if (!std::isfinite(logit) || !std::isfinite(magnitude)) in.finite = false;
    error += ur * std::fabs(additive) + ur * std::fabs(logit);  // forming the additive term, adding it
    worst = std::max(worst, error);
    in.visible.push_back(j);
    in.logits.push_back(logit);
  }
  in.logit_error = worst * (1 + (d + 8) * ur) * kSafety;  // the bound's own roundings
  if (const std::optional<double> sink = p.sink(r)) in.sink = static_cast<Real>(*sink);
  return in;
}

// Each column's largest |V| over the keys, and whether all are finite: a
// second pass over the values (row by row, as they are stored), taken only
// where needed.
struct ColumnValues {
  std::vector<double> largest;
  std::vector<char> finite;
};
ColumnValues column_values(const Problem& p, RowIndex r, std::span<const int> keys) {
  const auto dv = static_cast<std::size_t>(p.dims.d_v);
  const int g = p.kv_head_of(r.head);
  ColumnValues c{std::vector<double>(dv, 0.0), std::vector<char>(dv, 1)};
  for (int j : keys) {
    const double* v = p.value_row(r.batch, g, j).data();
    for (std::size_t t = 0; t < dv; ++t) {
      c.finite[t] = c.finite[t] && std::isfinite(v[t]);
      c.largest[t] = std::max(c.largest[t], std::fabs(v[t]));
    }
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
    row.out_error[t] = std::isfinite(wide.out[t]) ? std::fabs(wide.out[t]) * u + 0x1p-1070 : 0.0;
    double scale = 0;
    for (int j = 0; j < p.dims.kv_len; ++j)
      scale += wide.weights[static_cast<std::size_t>(j)] * std::fabs(p.value_row(r.batch, g, j)[t]);
    row.abs_scale[t] = scale;
  }
}

// A non-negative bound as a double no smaller than it.
double bound_as_double(double bound) { return bound; }
double bound_as_double(long double bound) {
  const double rounded = static_cast<double>(bound);
  return rounded < bound ? std::nextafter(rounded, INFINITY) : rounded;
}

// Stores x +- error as the pair out_double + out_low (out_low is 0 on the
// double rung; on the extended rung it holds what the double lacks, and the
// part of x the pair misses, computed exactly, joins the error).
template <typename Real>
void store_output(Real x, Real error, double& high, double& low, double& stored_error) {
  high = static_cast<double>(x);
  const Real rest = x - high;  // exact: x and its rounding are close
  low = static_cast<double>(rest);
  stored_error = bound_as_double(error + std::fabs(rest - low)) + RungArithmetic<Real>::output_floor;
}

// The enclosure of one row in arithmetic Real (SPEC.md section 5, step 5).
template <typename Real>
FastRow enclose(const Problem& p, RowIndex r) {
  constexpr Real ur = RungArithmetic<Real>::unit, exp_error = RungArithmetic<Real>::exp_error;
  const auto dv = static_cast<std::size_t>(p.dims.d_v);
  const auto S = static_cast<std::size_t>(p.dims.kv_len);
  FastRow row;
  row.out_double.assign(dv, 0.0);
  row.out_low.assign(dv, 0.0);
  row.out_error.assign(dv, 0.0);
  row.abs_scale.assign(dv, 0.0);
  row.weights.assign(S, 0.0);
  row.lse = -std::numeric_limits<double>::infinity();

  const RowInputs<Real> in = row_logits<Real>(p, r);
  if (in.visible.empty()) {  // no visible key: exactly 0, lse -inf or the sink's (SPEC section 2.3)
    if (in.sink) row.lse = static_cast<double>(*in.sink);
    return row;
  }
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
  // The sink is one more term of the denominator with an exact logit
  // (reference/exact_row.hpp): it joins the shift, so the largest term is
  // still exp(0) = 1.
  const Real shift = std::max(*std::max_element(in.logits.begin(), in.logits.end()), in.sink.value_or(-INFINITY));
  // Weights exp(x_j - shift) * (1 + rho_j): the shifted argument is off by
  // at most logit_error + u |a_j| (the subtraction), which bounded_exp's
  // own error multiplies.
  std::vector<Real> weight(n);
  Real argument_error = 0, tiny = 0;
  for (std::size_t j = 0; j < n; ++j) {
    const Real a = in.logits[j] - shift;
    if (a < RungArithmetic<Real>::exp_min) {
      weight[j] = 0;  // exact value below exp(exp_min + error): an absolute error instead
      tiny += 1;
      continue;
    }
    argument_error = std::max(argument_error, ur * std::fabs(a));
    weight[j] = RungArithmetic<Real>::exp(a);
  }
  Real sink_weight = 0;
  if (in.sink) {
    const Real a = *in.sink - shift;
    if (a < RungArithmetic<Real>::exp_min) {
      tiny += 1;
    } else {
      argument_error = std::max(argument_error, ur * std::fabs(a));
      sink_weight = RungArithmetic<Real>::exp(a);
    }
  }
  const std::size_t terms = n + (in.sink ? 1 : 0);  // of the denominator
  const Real eta = in.logit_error + argument_error * kSafety;
  const Real rho = (std::expm1(eta) * (1 + exp_error) + exp_error) * kSafety;
  // The running bounds below are at most gamma of the longest chain of
  // additions times the magnitudes; when that is not small, the first-order
  // treatment of products of error factors is not safe.
  const Real sum_gamma =
      gamma(static_cast<double>(kSumKeyBlock + (n + kSumKeyBlock - 1) / kSumKeyBlock + 1 + (in.sink ? 1 : 0)),
            static_cast<double>(ur));
  if (!(rho < 0x1p-20) || !(sum_gamma < 0x1p-20)) {
    enclose_exactly(p, r, row);
    return row;
  }

  WeightedSums<Real> sums = weighted_sums<Real>(p, r, in.visible, weight);
  if (in.sink) {  // one more addition, in the running bound as the others
    sums.denominator += sink_weight;
    sums.denominator_partials += sums.denominator;
  }
  // A non-finite magnitude: a NaN or infinite value (that column is NaN,
  // SPEC section 2.3), or overflow (the exact path's). The largest |V| of
  // a column is needed only for the tiny weights' absolute error.
  // The second pass is needed for a column with a non-finite or zero
  // magnitude, or when tiny weights were dropped.
  bool second_pass = tiny > 0;
  for (std::size_t t = 0; t < dv && !second_pass; ++t)
    second_pass = !std::isfinite(sums.magnitude[t]) || sums.magnitude[t] == 0;
  ColumnValues columns{std::vector<double>(dv, 0.0), std::vector<char>(dv, 1)};
  if (second_pass) columns = column_values(p, r, in.visible);
  for (std::size_t t = 0; t < dv; ++t)
    if (columns.finite[t] && !std::isfinite(sums.magnitude[t])) {
      enclose_exactly(p, r, row);
      return row;
    }
  // denominator >= 1: the largest logit's weight is exp(0) = 1 exactly.
  const Real denominator = sums.denominator;
  const Real chain = 1 + (terms + 4) * ur;  // the running bounds' own roundings
  const Real second_order = 1 + 2 * rho + 2 * sum_gamma;
  const Real denominator_error =
      (ur * sums.denominator_partials * chain + rho * denominator + tiny * RungArithmetic<Real>::tiny_term) *
      second_order * kSafety;
  // Each product w_j V[j][t] that underflows errs by at most the smallest
  // subnormal instead of u relative.
  const Real underflow = static_cast<Real>(n) * std::numeric_limits<Real>::denorm_min();
  for (std::size_t t = 0; t < dv; ++t) {
    // |N - exact N| <= u (partial sums + sum w|v|) + rho sum w|v| + tiny
    // terms. With o the exact output, N/D - o = (N - exact N)/D +
    // o (exact D - D)/D, and |o| <= |N/D| + |N/D - o| solves to the bound
    // below; the division adds u |output|.
    const Real numerator_error =
        (ur * (sums.numerator_partials[t] + sums.magnitude[t]) * chain + rho * sums.magnitude[t] +
         tiny * RungArithmetic<Real>::tiny_term * columns.largest[t] + underflow) *
        second_order;
    if (!columns.finite[t]) {  // a NaN or infinite value at a visible key: NaN (SPEC section 2.3)
      row.out_double[t] = std::numeric_limits<double>::quiet_NaN();
      continue;
    }
    // A column of zeros at every visible key: exactly 0 (out, low and
    // error already are), whatever the weights' errors.
    if (sums.magnitude[t] == 0 && columns.largest[t] == 0) continue;
    const Real output = sums.numerator[t] / denominator;
    const Real quotient = std::fabs(output) * (1 + ur);
    const Real error =
        (ur * quotient + (numerator_error + quotient * denominator_error) / (denominator - denominator_error)) * kSafety;
    store_output(output, error, row.out_double[t], row.out_low[t], row.out_error[t]);
    row.abs_scale[t] = static_cast<double>(sums.magnitude[t] / denominator);
  }
  for (std::size_t j = 0; j < n; ++j)
    row.weights[static_cast<std::size_t>(in.visible[j])] = static_cast<double>(weight[j] / denominator);
  // lse = shift + log(exact D), the logits' errors being in derr through
  // rho: log moves by at most derr / (D - derr) when D does; std::log is
  // taken to err by at most 2 ulp (glibc documents 1 on x86-64), and the
  // addition by u |lse|. On the extended rung the lse's rounding to double
  // joins the error.
  const Real log_denominator = std::log(denominator);
  const Real lse = shift + log_denominator;
  const Real lse_error = (denominator_error / (denominator - denominator_error) + 4 * ur * std::fabs(log_denominator) +
                          ur * std::fabs(lse)) *
                         kSafety * (1 + 4 * ur);
  row.lse = static_cast<double>(lse);
  row.lse_error = bound_as_double(lse_error + std::fabs(lse - row.lse));
  return row;
}

// True when the exact value, within error of high + low, rounds to the
// double `high` for certain: the interval lies strictly inside the cell
// between the midpoints next to `high` (half its spacings; the gaps are
// computed exactly in extended precision).
bool float64_rounding_is_decided(double high, double low, double error) {
  if (!std::isfinite(high) || high == 0 || !std::isfinite(error) ||
      std::fabs(high) == std::numeric_limits<double>::max())
    return false;
  const long double magnitude = std::fabs(high);
  const long double offset = std::copysign(1.0L, high) * low;  // signed towards larger magnitudes
  const long double half_up = (static_cast<long double>(std::nextafter(std::fabs(high), INFINITY)) - magnitude) / 2;
  const long double half_down = (magnitude - std::nextafter(std::fabs(high), 0.0)) / 2;
  return offset + error < half_up && error - offset < half_down;
}

}  // namespace

FastRow enclosed_row(const Problem& p, RowIndex r, EnclosurePrecision precision) {
  require_real_inputs(p, "enclosed_row");
  return precision == EnclosurePrecision::extended ? enclose<long double>(p, r) : enclose<double>(p, r);
}

FastRow fast_certified_row(const Problem& p, RowIndex r, FormatId target) {
  FastRow row = enclosed_row(p, r);
  const auto dv = row.out_double.size();
  row.out.assign(dv, 0.0);
  if (target == FormatId::float64 && !row.escalated && !std::isnan(row.lse) &&
      row.lse != -std::numeric_limits<double>::infinity()) {
    // A double evaluation cannot certify a float64 rounding; the extended
    // rung usually can, and the exact path decides the rest.
    FastRow extended = enclosed_row(p, r, EnclosurePrecision::extended);
    if (!extended.escalated) {
      std::vector<int> undecided;
      extended.out.assign(dv, 0.0);
      for (std::size_t t = 0; t < dv; ++t) {
        extended.out[t] = extended.out_double[t];
        if (std::isnan(extended.out_double[t])) continue;  // exactly NaN (SPEC section 2.3)
        if (extended.out_double[t] == 0 && extended.out_error[t] == 0) continue;  // exactly 0
        if (!float64_rounding_is_decided(extended.out_double[t], extended.out_low[t], extended.out_error[t]))
          undecided.push_back(static_cast<int>(t));
      }
      if (!undecided.empty()) {
        const RowResult exact = exact_row(p, r, target, undecided);
        for (int t : undecided) extended.out[static_cast<std::size_t>(t)] = exact.out[static_cast<std::size_t>(t)];
        extended.escalated = true;
        extended.escalated_outputs = undecided.size();
      }
      return extended;
    }
    row = std::move(extended);
  }
  if (row.escalated || target == FormatId::float64) {
    // The enclosure came from the multiprecision path, or is a float64
    // target's with an escalated extended rung: the exact path rounds.
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
  // The extended rung, about 2^11 times narrower, decides most of the
  // rest. Its pair's low part joins the error (it is below half a float64
  // ulp, far inside a narrower format's cells; rounding_is_decided's
  // (1 + 4u) covers the addition's rounding).
  const FastRow extended = enclosed_row(p, r, EnclosurePrecision::extended);
  if (!extended.escalated)
    std::erase_if(undecided, [&](int column) {
      const auto t = static_cast<std::size_t>(column);
      const double rounded = round_to_format(extended.out_double[t], target);
      const double error = extended.out_error[t] + std::fabs(extended.out_low[t]);
      if (!rounding_is_decided(extended.out_double[t], error, rounded, format)) return false;
      row.out[t] = rounded;
      return true;
    });
  if (undecided.empty()) return row;
  const RowResult exact = exact_row(p, r, target, undecided);
  for (int t : undecided) row.out[static_cast<std::size_t>(t)] = exact.out[static_cast<std::size_t>(t)];
  row.escalated = true;
  row.escalated_outputs = undecided.size();
  return row;
}

FastReferenceResult fast_certified_attention(const Problem& given, FormatId target, std::span<const std::size_t> rows,
                                             const std::function<void(std::size_t, std::size_t)>& progress) {
  std::optional<Problem> storage;
  const Problem& p = real_problem(given, storage);
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
