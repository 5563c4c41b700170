// Implementation of the multiprecision helpers. Boost sets precision in
// decimal digits, so the working precision is converted up to the digits that
// give at least the requested bits.
#include "reference/multiprecision.hpp"

#include <bit>
#include <cmath>
#include <cstdint>

#include "formats/round_multiprecision.hpp"

namespace attnspec {
namespace {

unsigned digits10_for_bits(int bits) {
  // Boost turns d decimal digits into at least d*1000/301+1 bits.
  return static_cast<unsigned>(std::ceil(bits * 0.30103)) + 1;
}

mpfr_ptr left_of(Interval& x) { return &x.backend().data()->left; }
mpfr_ptr right_of(Interval& x) { return &x.backend().data()->right; }
mpfr_srcptr left_of(const Interval& x) { return &x.backend().data()->left; }
mpfr_srcptr right_of(const Interval& x) { return &x.backend().data()->right; }

}  // namespace

WorkingPrecision::WorkingPrecision(int bits)
    : saved_real_(Real::default_precision()), saved_interval_(Interval::default_precision()) {
  Real::default_precision(digits10_for_bits(bits));
  Interval::default_precision(digits10_for_bits(bits));
}

WorkingPrecision::~WorkingPrecision() {
  Real::default_precision(saved_real_);
  Interval::default_precision(saved_interval_);
}

long interval_precision_bits() {
  Interval probe;
  return static_cast<long>(mpfi_get_prec(probe.backend().data()));
}

Real exact_real(double x) {
  Real r;
  mpfr_set_prec(r.backend().data(), 53);
  mpfr_set_d(r.backend().data(), x, MPFR_RNDN);
  return r;
}

Rational exact_rational(const Real& x) {
  Rational q;
  mpfr_get_q(q.backend().data(), x.backend().data());
  return q;
}

Rational exact_rational(double x) {
  Rational q;
  mpq_set_d(q.backend().data(), x);  // exact for finite doubles
  return q;
}

Interval enclose(const Real& x) {
  Interval i;
  mpfi_set_fr(i.backend().data(), x.backend().data());
  return i;
}

Interval enclose(const Rational& x) {
  Interval i;
  mpfi_set_q(i.backend().data(), x.backend().data());
  return i;
}

Interval enclose_difference(const Real& a, const Real& b) {
  Interval i;
  mpfr_sub(left_of(i), a.backend().data(), b.backend().data(), MPFR_RNDD);
  mpfr_sub(right_of(i), a.backend().data(), b.backend().data(), MPFR_RNDU);
  return i;
}

Interval enclose_difference(double a, double b) {
  Interval i;
  mpfr_set_d(left_of(i), a, MPFR_RNDD);
  mpfr_sub_d(left_of(i), left_of(i), b, MPFR_RNDD);
  mpfr_set_d(right_of(i), a, MPFR_RNDU);
  mpfr_sub_d(right_of(i), right_of(i), b, MPFR_RNDU);
  // With a working precision >= 54 bits, setting a double is exact and each
  // bound is the correctly directed rounding of a - b.
  return i;
}

std::optional<double> decide(const Interval& x, FormatId target) {
  if (mpfr_nan_p(left_of(x)) || mpfr_nan_p(right_of(x))) return std::nullopt;
  // A zero bound says nothing about the sign of the exact value (MPFI stores
  // [0, 0] as [+0, -0]); an exact zero is +0. With a negative lower bound
  // and a zero upper bound the value may be a negative tiny (-0) or exactly
  // zero (+0), and the bounds disagree, as they should.
  const auto bound = [&](mpfr_srcptr b) { return mpfr_zero_p(b) ? 0.0 : round_to_format(b, target); };
  const double low = bound(left_of(x));
  const double high = bound(right_of(x));
  // Rounding is monotone and each possible result has an interval as its
  // preimage, so equal bit patterns at both ends (sign of zero and of an
  // overflow NaN included) decide every point in between.
  if (std::bit_cast<std::uint64_t>(low) != std::bit_cast<std::uint64_t>(high)) return std::nullopt;
  return low;
}

}  // namespace attnspec
