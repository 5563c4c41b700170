// The error measures of `attnspec audit`, per checked output element and
// summarised: componentwise error in units of u_out * |P||V| (SPEC 6.7),
// ulps of the output format against the correctly rounded value, per-row
// normwise relative error, RMSE and max absolute error (the figures peers
// publish). Also the log-binned histogram the report plots and the
// least-squares growth exponent of a sweep.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "formats/format.hpp"

namespace attnspec {

// |got - exact| / (u_out * abs_scale). An element whose |P||V| is 0 has an
// exact output (SPEC 6.7): error 0 if got equals it, else infinity. A NaN
// or infinite `got` has infinite error.
double componentwise_error(double got, double exact, double abs_scale, double u_out);
// Values of `format` stepped over between got and the correctly rounded
// value (SPEC 3); a `got` outside the format counts in ulps of the rounded
// value, fractionally. NaN or infinite got: infinity.
double ulps_error(double got, double correctly_rounded, FormatId format);
// ||got - exact||_2 / ||exact||_2 over one row (0 when both are 0,
// infinity when only exact is).
double normwise_relative_error(std::span<const double> got, std::span<const double> exact);
// FlashAttention's rounding floor for one output, 2 |(r + 0.3 - 0.3) - r|
// evaluated in `format`, r the correctly rounded value (SPEC, PRECREL).
double flash_attention_floor(double correctly_rounded, FormatId format);

// max, median (mean of the two middle values for an even count) and root
// mean square; non-finite values count as +infinity (and make max and rms
// infinite), `nonfinite` says how many there were.
struct Summary {
  std::size_t count = 0;
  std::size_t nonfinite = 0;
  double max = 0;
  double median = 0;
  double rms = 0;
};
Summary summarize(std::span<const double> values);

// Every measure of one candidate (the kernel, the naive yardstick, or the
// correctly rounded value itself) over the checked elements.
struct ErrorMeasures {
  Summary componentwise;  // u_out * |P||V|
  Summary ulps;
  Summary normwise;       // one value per row
  double rmse = 0;
  double max_abs = 0;
  double correctly_rounded_share = 0;  // elements at 0 ulps: what the kernel could not have done better
};

// The precision model's bound at the checked elements, in the units of
// the componentwise error (u_out * |P||V| for outputs).
struct BoundComparison {
  double max_ratio = 0;       // largest error / bound over elements with a finite bound
  double error_u = 0;         // the error at that element
  double bound_u = 0;         // and its bound
  double median_bound_u = 0;  // over elements with a finite bound (infinity if none)
  double min_bound_u = 0;
  double max_bound_u = 0;
  std::size_t outside = 0;    // elements whose error exceeds their bound
  std::size_t unbounded = 0;  // elements without a finite bound (SPEC 6.4: 6 n u >= 1 or n^u (1 + gamma) >= 2)
};

// Collects a BoundComparison element by element.
class BoundAccumulator {
 public:
  // An element whose error is `error`, known within `exact_error`, and
  // whose bound is `bound` (infinite: none), with `units` the absolute
  // size of one unit of the measures.
  void add(double error, double exact_error, double bound, double units);
  BoundComparison finish() const;

 private:
  BoundComparison comparison_;
  bool any_bounded_ = false;
  std::vector<double> finite_bounds_u_;
};

// Collects a candidate's errors row by row.
class MeasureAccumulator {
 public:
  explicit MeasureAccumulator(FormatId output) : output_(output) {}
  // One row: the candidate's outputs, the exact values (approximations far
  // closer than any candidate's error), the correctly rounded values in the
  // output format, and |P||V| per element.
  void add_row(std::span<const double> got, std::span<const double> exact, std::span<const double> correctly_rounded,
               std::span<const double> abs_scale);
  ErrorMeasures finish() const;
  const std::vector<double>& componentwise() const { return componentwise_; }
  const std::vector<double>& absolute() const { return absolute_; }

 private:
  FormatId output_;
  std::vector<double> componentwise_, ulps_, normwise_, absolute_;
};

// Counts per log-spaced bin; zeros and values beyond the edges counted apart.
struct Histogram {
  std::vector<double> edges;          // increasing, bins [edges[i], edges[i+1])
  std::vector<std::size_t> counts;    // edges.size() - 1 values
  std::size_t zeros = 0;              // exactly 0
  std::size_t below = 0;              // positive, under edges.front()
  std::size_t above = 0;              // at or over edges.back(), infinity included
};
// Edges at 10^(k / bins_per_decade) spanning the positive finite values of
// every series given (whole decades; 1e-3 to 1e1 when there are none).
std::vector<double> log_bin_edges(std::span<const std::span<const double>> series, int bins_per_decade = 10);
Histogram histogram(std::span<const double> values, std::span<const double> edges);

// y ~ coefficient * x^exponent by least squares of log y on log x, over the
// points with finite positive x and y. Fewer than 2 such points, or a
// single x: exponent NaN.
struct GrowthFit {
  double exponent = 0;
  double coefficient = 0;
  double r_squared = 0;  // of the log-log fit
  std::size_t points = 0;
};
GrowthFit fit_growth(std::span<const double> x, std::span<const double> y);

}  // namespace attnspec
