// The arithmetic of the fast reference's rungs (spec/SPEC.md section 5,
// step 5): what differs between double and x87 extended precision, and the
// two loops that compute a value together with its running error bound
// (Wilkinson), so that the bound and the value cannot describe different
// orders of operations. Templates on the rung's type; used by
// reference/fast_reference.cpp only.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <vector>

#include "reference/bounded_exp.hpp"
#include "reference/problem.hpp"

namespace attnspec {

inline constexpr int kDotProductLanes = 8;        // independent partial sums of a logit's dot product
inline constexpr std::size_t kSumKeyBlock = 32;  // keys per partial sum of P V and of the denominator

// What differs between the rungs: the unit roundoff, the exp with its
// proven bound and range (below it a weight counts as an absolute error of
// at most tiny_term), the smallest positive value (an underflowing product
// errs by at most that much), and a floor under each output's error for
// the double rung's divisions that may underflow (none does in extended
// precision, whose results are converted to doubles exactly, as a pair).
template <typename Real>
struct RungArithmetic;
template <>
struct RungArithmetic<double> {
  static constexpr double unit = kUnitRoundoff;
  static constexpr double exp_error = kBoundedExpError;
  static constexpr double exp_min = kBoundedExpMin;
  static constexpr double tiny_term = 0x1p-1000;  // exp(-700) < 2^-1009
  static constexpr double output_floor = 0x1p-1070;
  static double exp(double x) { return bounded_exp(x); }
};
template <>
struct RungArithmetic<long double> {
  static constexpr long double unit = kExtendedUnitRoundoff;
  static constexpr long double exp_error = kBoundedExpExtendedError;
  static constexpr long double exp_min = kBoundedExpExtendedMin;
  static constexpr long double tiny_term = 0x1p-15850L;  // exp(-11000) < 2^-15869
  static constexpr double output_floor = 0;
  static long double exp(long double x) { return bounded_exp_extended(x); }
};

// q . k_j with what its running error bound (Wilkinson) needs: each
// addition errs by at most u |its result| and each product by u |product|,
// so the dot product errs by at most u (partial_sums + magnitude), where
// partial_sums adds up |every partial sum| formed. The products are summed
// in kDotProductLanes independent lanes (component t in lane t %
// kDotProductLanes, which the compiler can vectorise), then the lanes
// pairwise.
template <typename Real>
struct DotProduct {
  Real value = 0, partial_sums = 0, magnitude = 0;
};

template <typename Real>
inline DotProduct<Real> dot_with_running_bound(const double* q, const double* k, int d) {
  Real lane[kDotProductLanes] = {}, lane_partials[kDotProductLanes] = {}, lane_magnitude[kDotProductLanes] = {};
  int t = 0;
  for (; t + kDotProductLanes <= d; t += kDotProductLanes)
    for (int l = 0; l < kDotProductLanes; ++l) {
      const Real product = static_cast<Real>(q[t + l]) * k[t + l];
      lane[l] += product;
      lane_magnitude[l] += std::fabs(product);
      lane_partials[l] += std::fabs(lane[l]);
    }
  for (int l = 0; t < d; ++t, ++l) {
    const Real product = static_cast<Real>(q[t]) * k[t];
    lane[l] += product;
    lane_magnitude[l] += std::fabs(product);
    lane_partials[l] += std::fabs(lane[l]);
  }
  DotProduct<Real> result;
  for (int l = 0; l < kDotProductLanes; ++l) {
    result.magnitude += lane_magnitude[l];
    result.partial_sums += lane_partials[l];
  }
  for (int width = kDotProductLanes / 2; width >= 1; width /= 2)
    for (int l = 0; l < width; ++l) {
      lane[l] += lane[l + width];
      result.partial_sums += std::fabs(lane[l]);
    }
  result.value = lane[0];
  return result;
}

// The softmax's sums for one row, accumulated in one pass in blocks of
// kSumKeyBlock keys: the numerators sum_j w_j V[j][t], their magnitudes
// sum_j w_j |V[j][t]|, and the denominator sum_j w_j, each with the sum of
// |every partial sum| of the same additions for the running error bound
// (u times the partial sums plus the magnitude of the products bounds a
// sum's rounding error). The bound and the value come from the same loop,
// so they cannot describe different summation orders.
template <typename Real>
struct WeightedSums {
  std::vector<Real> numerator, magnitude, numerator_partials;
  Real denominator = 0, denominator_partials = 0;
};

template <typename Real>
WeightedSums<Real> weighted_sums(const Problem& p, RowIndex r, std::span<const int> keys, std::span<const Real> weight) {
  const auto dv = static_cast<std::size_t>(p.dims.d_v);
  const int g = p.kv_head_of(r.head);
  WeightedSums<Real> sums;
  sums.numerator.assign(dv, 0);
  sums.magnitude.assign(dv, 0);
  sums.numerator_partials.assign(dv, 0);
  std::vector<Real> block_numerator(dv), block_magnitude(dv);
  for (std::size_t start = 0; start < keys.size(); start += kSumKeyBlock) {
    std::fill(block_numerator.begin(), block_numerator.end(), Real(0));
    std::fill(block_magnitude.begin(), block_magnitude.end(), Real(0));
    Real block_denominator = 0;
    for (std::size_t j = start; j < std::min(keys.size(), start + kSumKeyBlock); ++j) {
      const double* v = p.value_row(r.batch, g, keys[j]).data();
      const Real w = weight[j];
      block_denominator += w;
      sums.denominator_partials += block_denominator;
      Real* numerator = block_numerator.data();
      Real* magnitude = block_magnitude.data();
      Real* partials = sums.numerator_partials.data();
      for (std::size_t t = 0; t < dv; ++t) {  // plain arrays: vectorised in double
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

}  // namespace attnspec
