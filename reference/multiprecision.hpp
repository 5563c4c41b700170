// The multiprecision vocabulary of the reference: exact reals and rationals,
// rigorous intervals (MPFI), a scoped working precision, and the test that
// decides whether an interval pins down one correctly rounded value.
#pragma once

#include <boost/multiprecision/gmp.hpp>
#include <boost/multiprecision/mpfi.hpp>
#include <boost/multiprecision/mpfr.hpp>
#include <optional>

#include "formats/format.hpp"

namespace attnspec {

namespace mp = boost::multiprecision;
// Expression templates off: values behave like plain numbers.
using Real = mp::number<mp::mpfr_float_backend<0>, mp::et_off>;
using Interval = mp::number<mp::mpfi_float_backend<0>, mp::et_off>;
using Rational = mp::number<mp::gmp_rational, mp::et_off>;

// Sets the precision (in bits, at least) of every Real and Interval created
// while it lives. Boost keeps this default per type, process-wide: the
// reference is single-threaded.
class WorkingPrecision {
 public:
  explicit WorkingPrecision(int bits);
  ~WorkingPrecision();
  WorkingPrecision(const WorkingPrecision&) = delete;
  WorkingPrecision& operator=(const WorkingPrecision&) = delete;

 private:
  unsigned saved_real_;
  unsigned saved_interval_;
};

// Bits of precision an Interval created now actually has.
long interval_precision_bits();

Real exact_real(double x);  // 53 bits: exact
Rational exact_rational(const Real& x);
Rational exact_rational(double x);

// Tight enclosures at the working precision (each bound correctly rounded
// outward from the exact value, never from a rounded intermediate).
Interval enclose(const Real& x);
Interval enclose(const Rational& x);
Interval enclose_difference(const Real& a, const Real& b);
Interval enclose_difference(double a, double b);

// The value every point of x rounds to in the format, if there is one.
std::optional<double> decide(const Interval& x, FormatId target);

}  // namespace attnspec
