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

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

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
  // Times 2^k, k in [-1010, 0], built from its bit pattern (std::ldexp is
  // a library call, and this runs for every weight): exact, as p * 2^k is
  // a normal number.
  return p * std::bit_cast<double>(static_cast<std::uint64_t>(static_cast<int>(k) + 1023) << 52);
}

}  // namespace attnspec

namespace attnspec {

// The same exp in x87 extended precision (64-bit significand, u = 2^-64),
// for the fast reference's extended rung (spec/SPEC.md section 5, step 5):
// where a double enclosure is too wide to decide a verdict, the row is
// evaluated again in extended precision before the multiprecision path.
// Its range reaches exp(-11000), about 2^-15870, still a normal number of
// the format. x = k ln2 + r with ln2 split into a 45-bit head (k ln2_hi
// exact in 64 bits for |k| < 2^14) and a 64-bit tail within 2^-110 of the
// rest. Error budget, relative to exp(x), first order in u = 2^-64: the
// reduction errs by at most u |x - k ln2_hi| + u |k ln2_lo| + u |r| +
// |k| 2^-110 in r, below 0.73u + 2^-96 for |r| <= 0.36, |k| < 2^14;
// truncation after degree 16, |r|^17/17! e^|r| / e^-|r| < 0.003u; Horner
// as for bounded_exp (the same coefficients' magnitudes; a_0, a_1, a_2
// exact), below 3.55u relative. Total < 4.3u; the bound used is 8u.
static_assert(std::numeric_limits<long double>::digits == 64, "the extended rung assumes x87 extended precision");
inline constexpr long double kExtendedUnitRoundoff = 0x1p-64L;
inline constexpr long double kBoundedExpExtendedError = 8 * kExtendedUnitRoundoff;
inline constexpr long double kBoundedExpExtendedMin = -11000.0L;

// exp(x) for kBoundedExpExtendedMin <= x <= 0, within kBoundedExpExtendedError relative.
inline long double bounded_exp_extended(long double x) {
  constexpr long double kLn2High = 0x1.62e42fefa39p-1L;       // 45 significant bits
  constexpr long double kLn2Low = 0x1.de6af278ece600fcp-46L;  // ln2 - kLn2High, within 2^-110
  constexpr long double kInverseLn2 = 1.44269504088896340735992468100189214L;
  const long double k = std::nearbyint(x * kInverseLn2);
  const long double r = (x - k * kLn2High) - k * kLn2Low;
  // Horner with 1/i! for i = 16 down to 0, rounded to extended precision.
  constexpr long double kInverseFactorials[] = {
      1.0L / 1307674368000.0L, 1.0L / 87178291200.0L, 1.0L / 6227020800.0L, 1.0L / 479001600.0L,
      1.0L / 39916800.0L,      1.0L / 3628800.0L,     1.0L / 362880.0L,     1.0L / 40320.0L,
      1.0L / 5040.0L,          1.0L / 720.0L,         1.0L / 120.0L,        1.0L / 24.0L,
      1.0L / 6.0L,             0.5L,                  1.0L,                 1.0L};
  long double p = 1.0L / 20922789888000.0L;
  for (const long double coefficient : kInverseFactorials) p = p * r + coefficient;
  return std::ldexp(p, static_cast<int>(k));
}

}  // namespace attnspec
