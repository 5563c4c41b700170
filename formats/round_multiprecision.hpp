// Correctly rounded conversion of multiprecision values (MPFR, through
// Boost.Multiprecision) into the number formats. This is the one rounding
// step of the certified reference: it must not pass through double first,
// which would round twice.
#pragma once

#include <boost/multiprecision/mpfr.hpp>
#include <mpfr.h>

#include "formats/format.hpp"

namespace attnspec {

// Nearest, ties to even, with the format's subnormals and overflow rule.
// The result is returned as the (exactly equal) double.
double round_to_format(mpfr_srcptr x, FormatId id);
double round_to_format(const boost::multiprecision::mpfr_float& x, FormatId id);

}  // namespace attnspec
