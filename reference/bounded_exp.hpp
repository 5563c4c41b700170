// exp in double with a proven relative error bound, for the fast certified
// reference: std::exp's accuracy is documented by measurement, not proven,
// so the fast path uses this instead. The argument is reduced as
// x = k ln2 + r with |r| <= 0.36 (ln2 split in two parts) and exp(r) is a
// degree-13 Taylor polynomial in Horner form. Error budget (spec/SPEC.md
// section 5, step 5): truncation r^14/14! e^|r| < 0.1u relative; Horner with 13
// steps and rounded coefficients <= (gamma_26 + u) e^|r| / e^-|r| < 56u;
// reduction <= 3u|r| + 2^-70 absolute in r. Total below kBoundedExpError.
#pragma once

#include <cmath>

namespace attnspec {

inline constexpr double kUnitRoundoff = 0x1p-53;
// The relative error bound of bounded_exp on [kBoundedExpMin, 0].
inline constexpr double kBoundedExpError = 64 * kUnitRoundoff;
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
