// exp in double with a proven relative error bound, for the fast certified
// reference: std::exp's accuracy is documented by measurement, not proven,
// so the fast path uses this instead. The argument is reduced as
// x = k ln2 + r with |r| <= 0.36 (ln2 split in two parts) and exp(r) is a
// degree-13 Taylor polynomial in Horner form. Error budget (spec/SPEC.md
// section 5, step 5), relative to exp(x), first order in u (second-order
// terms are below 10^-30): truncation r^14/14! e^|r| / e^-|r| < 0.14u;
// Horner, each step h_k = a_k + r h_(k+1) erring by u |r h_(k+1)| for the
// product, u |h_k| for the sum and u a_k for a rounded coefficient (a_0,
// a_1, a_2 are exact), damped by |r|^k on the way out:
// sum_k 0.36^k (0.36 |h_(k+1)| + |h_k| + coefficient) < 2.48u absolute,
// 3.55u relative to exp(r) >= e^-0.36; the reduction errs by at most
// 3u|r| + 2^-70 in r, i.e. 1.09u relative. Total < 4.8u; the bound used
// is 8u.
#pragma once

#include <cmath>

namespace attnspec {

inline constexpr double kUnitRoundoff = 0x1p-53;
// The relative error bound of bounded_exp on [kBoundedExpMin, 0].
inline constexpr double kBoundedExpError = 8 * kUnitRoundoff;
// Below this, exp(x) < 2^-1009: callers treat the value as "tiny" (an
// absolute error instead of a relative one, far from subnormal results).
inline constexpr double kBoundedExpMin = -700.0;

// exp(x) for kBoundedExpMin <= x <= 0, within kBoundedExpError relative.
inline double bounded_exp(double x) {
  constexpr double kLn2High = 0x1.62e42fefa0000p-1;  // 36 significant bits: k * kLn2High is exact for |k| < 2^17
  constexpr double kLn2Low = 0x1.cf79abc9e3b3ap-40;  // ln2 - kLn2High, rounded
  constexpr double kInverseLn2 = 0x1.71547652b82fep0;
  const double k = std::nearbyint(x * kInverseLn2);
  const double r = (x - k * kLn2High) - k * kLn2Low;
  // 1/i! for i = 13 down to 1, rounded to double.
  double p = 1.0 / 6227020800.0;
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  return std::ldexp(p, static_cast<int>(k));
}

}  // namespace attnspec
