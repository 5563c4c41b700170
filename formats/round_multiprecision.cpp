// Rounds an MPFR value to a format: round the significand to the number of
// bits the format has in the value's binade (fewer below 2^emin), then apply
// the overflow rule. See spec/SPEC.md §3.
#include "formats/round_multiprecision.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attnspec {
namespace {

double signed_zero(bool negative) { return negative ? -0.0 : 0.0; }

double overflowed(const FormatInfo& f, bool negative) {
  const double v = f.overflow == Overflow::to_nan ? std::numeric_limits<double>::quiet_NaN()
                                                  : std::numeric_limits<double>::infinity();
  return negative ? -v : v;
}

}  // namespace

double round_to_format(mpfr_srcptr x, FormatId id) {
  const FormatInfo& f = format_info(id);
  const bool negative = mpfr_signbit(x) != 0;
  if (mpfr_nan_p(x)) return round_to_format(std::numeric_limits<double>::quiet_NaN(), id);
  if (mpfr_inf_p(x)) return overflowed(f, negative);
  if (mpfr_zero_p(x)) return signed_zero(negative);

  // MPFR writes x = m * 2^e with 0.5 <= |m| < 1, so floor(log2|x|) = e - 1.
  const long binade = static_cast<long>(mpfr_get_exp(x)) - 1;
  if (binade > f.emax) return overflowed(f, negative);
  const long quantum_exponent = std::max<long>(binade, f.emin) - f.precision + 1;
  const long kept_bits = binade - quantum_exponent + 1;
  if (kept_bits <= 0) {
    // |x| < one quantum (the smallest subnormal). It rounds up to the
    // quantum only when above half of it; exactly half is a tie, and the
    // even neighbour is zero.
    if (kept_bits < 0) return signed_zero(negative);
    const bool exactly_half = mpfr_cmp_si_2exp(x, negative ? -1 : 1, binade) == 0;
    if (exactly_half) return signed_zero(negative);
    return std::ldexp(negative ? -1.0 : 1.0, static_cast<int>(quantum_exponent));
  }
  mpfr_t rounded;
  mpfr_init2(rounded, static_cast<mpfr_prec_t>(kept_bits));
  mpfr_set(rounded, x, MPFR_RNDN);  // MPFR's RNDN is ties-to-even
  // rounded has at most 53 significant bits and lies inside double's range
  // (or just above it for a float64 overflow), so this conversion is exact.
  const double value = mpfr_get_d(rounded, MPFR_RNDN);
  mpfr_clear(rounded);
  if (std::fabs(value) > f.max_finite) return overflowed(f, negative);
  return value;
}

double round_to_format(const boost::multiprecision::mpfr_float& x, FormatId id) {
  return round_to_format(x.backend().data(), id);
}

}  // namespace attnspec
