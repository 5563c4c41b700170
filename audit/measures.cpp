// Error measures, summaries, histogram and growth fit; see measures.hpp.
#include "audit/measures.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace attnspec {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

}  // namespace

double componentwise_error(double got, double exact, double abs_scale, double u_out) {
  if (!std::isfinite(got)) return kInfinity;
  const double error = std::fabs(got - exact);
  if (error == 0) return 0;
  if (abs_scale == 0) return kInfinity;
  return error / (u_out * abs_scale);
}

double ulps_error(double got, double correctly_rounded, FormatId format) {
  if (!std::isfinite(got) || !std::isfinite(correctly_rounded)) return got == correctly_rounded ? 0 : kInfinity;
  if (is_representable(got, format)) return static_cast<double>(std::llabs(ulp_distance(got, correctly_rounded, format)));
  return std::fabs(got - correctly_rounded) / ulp(correctly_rounded, format);
}

double normwise_relative_error(std::span<const double> got, std::span<const double> exact) {
  if (got.size() != exact.size()) throw std::invalid_argument("normwise_relative_error: sizes differ");
  double difference = 0, norm = 0;
  for (std::size_t t = 0; t < got.size(); ++t) {
    if (!std::isfinite(got[t])) return kInfinity;
    difference = std::hypot(difference, got[t] - exact[t]);  // hypot: no overflow or underflow of the squares
    norm = std::hypot(norm, exact[t]);
  }
  if (difference == 0) return 0;
  return norm == 0 ? kInfinity : difference / norm;
}

double flash_attention_floor(double correctly_rounded, FormatId format) {
  const double c = round_to_format(0.3, format);
  const double round_trip = round_to_format(round_to_format(correctly_rounded + c, format) - c, format);
  return 2 * std::fabs(round_trip - correctly_rounded);
}

Summary summarize(std::span<const double> values) {
  Summary s;
  s.count = values.size();
  if (values.empty()) return s;
  std::vector<double> sorted(values.begin(), values.end());
  double sum_squares = 0;
  for (double& x : sorted) {
    if (!std::isfinite(x)) {
      x = kInfinity;
      ++s.nonfinite;
    }
    sum_squares += x * x;
  }
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  s.max = sorted.back();
  s.median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  s.rms = std::sqrt(sum_squares / static_cast<double>(n));
  return s;
}

void MeasureAccumulator::add_row(std::span<const double> got, std::span<const double> exact,
                                 std::span<const double> correctly_rounded, std::span<const double> abs_scale) {
  if (got.size() != exact.size() || got.size() != correctly_rounded.size() || got.size() != abs_scale.size())
    throw std::invalid_argument("MeasureAccumulator::add_row: sizes differ");
  const double u_out = format_info(output_).unit_roundoff;
  for (std::size_t t = 0; t < got.size(); ++t) {
    componentwise_.push_back(componentwise_error(got[t], exact[t], abs_scale[t], u_out));
    ulps_.push_back(ulps_error(got[t], correctly_rounded[t], output_));
    absolute_.push_back(std::isfinite(got[t]) ? std::fabs(got[t] - exact[t]) : kInfinity);
  }
  normwise_.push_back(normwise_relative_error(got, exact));
}

ErrorMeasures MeasureAccumulator::finish() const {
  ErrorMeasures m;
  m.componentwise = summarize(componentwise_);
  m.ulps = summarize(ulps_);
  m.normwise = summarize(normwise_);
  const Summary absolute = summarize(absolute_);
  m.rmse = absolute.rms;
  m.max_abs = absolute.max;
  if (!ulps_.empty())
    m.correctly_rounded_share =
        static_cast<double>(std::count(ulps_.begin(), ulps_.end(), 0.0)) / static_cast<double>(ulps_.size());
  return m;
}

std::vector<double> log_bin_edges(std::span<const std::span<const double>> series, int bins_per_decade) {
  if (bins_per_decade < 1) throw std::invalid_argument("log_bin_edges: bins_per_decade must be >= 1");
  double low = kInfinity, high = 0;
  for (const auto& values : series)
    for (double x : values)
      if (x > 0 && std::isfinite(x)) {
        low = std::min(low, x);
        high = std::max(high, x);
      }
  int first = -3, last = 1;  // decades
  if (high > 0) {
    first = static_cast<int>(std::floor(std::log10(low)));
    last = static_cast<int>(std::floor(std::log10(high))) + 1;  // the top edge strictly above the largest value
  }
  std::vector<double> edges;
  for (int k = first * bins_per_decade; k <= last * bins_per_decade; ++k)
    edges.push_back(std::pow(10.0, static_cast<double>(k) / bins_per_decade));
  return edges;
}

Histogram histogram(std::span<const double> values, std::span<const double> edges) {
  if (edges.size() < 2) throw std::invalid_argument("histogram: need at least two edges");
  Histogram h;
  h.edges.assign(edges.begin(), edges.end());
  h.counts.assign(edges.size() - 1, 0);
  for (double x : values) {
    if (x == 0) {
      ++h.zeros;
    } else if (!(x < edges.back())) {  // NaN and infinity too
      ++h.above;
    } else if (x < edges.front()) {
      ++h.below;
    } else {
      const auto bin = std::upper_bound(edges.begin(), edges.end(), x) - edges.begin() - 1;
      ++h.counts[static_cast<std::size_t>(bin)];
    }
  }
  return h;
}

GrowthFit fit_growth(std::span<const double> x, std::span<const double> y) {
  if (x.size() != y.size()) throw std::invalid_argument("fit_growth: sizes differ");
  std::vector<double> lx, ly;
  for (std::size_t i = 0; i < x.size(); ++i)
    if (x[i] > 0 && y[i] > 0 && std::isfinite(x[i]) && std::isfinite(y[i])) {
      lx.push_back(std::log(x[i]));
      ly.push_back(std::log(y[i]));
    }
  GrowthFit fit;
  fit.points = lx.size();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  fit.exponent = fit.coefficient = fit.r_squared = nan;
  if (lx.size() < 2) return fit;
  const double n = static_cast<double>(lx.size());
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < lx.size(); ++i) {
    mx += lx[i] / n;
    my += ly[i] / n;
  }
  double sxx = 0, sxy = 0, syy = 0;
  for (std::size_t i = 0; i < lx.size(); ++i) {
    sxx += (lx[i] - mx) * (lx[i] - mx);
    sxy += (lx[i] - mx) * (ly[i] - my);
    syy += (ly[i] - my) * (ly[i] - my);
  }
  if (sxx == 0) return fit;
  fit.exponent = sxy / sxx;
  fit.coefficient = std::exp(my - fit.exponent * mx);
  fit.r_squared = syy == 0 ? 1 : sxy * sxy / (sxx * syy);
  return fit;
}

void BoundAccumulator::add(double error, double exact_error, double bound, double units) {
  BoundComparison& b = comparison_;
  if (!std::isfinite(bound)) {
    ++b.unbounded;
    return;
  }
  // Outside only when certainly so: the exact value is known within exact_error.
  if (error - exact_error > bound) ++b.outside;
  finite_bounds_u_.push_back(units > 0 ? bound / units : INFINITY);
  const double ratio = bound > 0 ? error / bound : (error == 0 ? 0 : INFINITY);
  if (!any_bounded_ || ratio > b.max_ratio) {
    any_bounded_ = true;
    b.max_ratio = ratio;
    b.error_u = units > 0 ? error / units : (error == 0 ? 0 : INFINITY);
    b.bound_u = units > 0 ? bound / units : INFINITY;
  }
}

BoundComparison BoundAccumulator::finish() const {
  BoundComparison b = comparison_;
  const Summary bounds = summarize(finite_bounds_u_);
  const bool none = finite_bounds_u_.empty();
  b.median_bound_u = none ? INFINITY : bounds.median;
  b.min_bound_u = none ? INFINITY : *std::min_element(finite_bounds_u_.begin(), finite_bounds_u_.end());
  b.max_bound_u = none ? INFINITY : bounds.max;
  return b;
}

}  // namespace attnspec
