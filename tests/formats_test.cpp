// Tests of formats/: descriptors against published constants, exhaustive
// round trips of every 8- and 16-bit pattern, and conversions from double
// and from MPFR checked against independent paths (the compiler's float and
// _Float16 conversions, and an integer implementation written here) at every
// rounding boundary: ties, subnormals, overflow.
#include <gtest/gtest.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "formats/format.hpp"
#include "formats/round_multiprecision.hpp"

namespace attnspec {
namespace {

// Independent rounding: integer arithmetic on the double's bits. x =
// significand * 2^exponent with a 53-bit integer significand; drop the bits
// below the format's quantum with round-half-even on the integer.
double round_by_integer_bits(double x, FormatId id) {
  const FormatInfo& f = format_info(id);
  if (std::isnan(x)) return x;
  if (std::isinf(x)) return f.has_infinity ? x : std::copysign(std::numeric_limits<double>::quiet_NaN(), x);
  if (x == 0) return x;
  const std::uint64_t bits = std::bit_cast<std::uint64_t>(x);
  const bool negative = bits >> 63;
  const int biased = static_cast<int>((bits >> 52) & 0x7ff);
  std::uint64_t significand = bits & ((std::uint64_t{1} << 52) - 1);
  int exponent;  // of the significand's last bit
  if (biased == 0) {
    exponent = -1074;
  } else {
    significand |= std::uint64_t{1} << 52;
    exponent = biased - 1075;
  }
  const int top = exponent + 63 - std::countl_zero(significand);  // floor(log2|x|)
  const int quantum = std::max(top, f.emin) - f.precision + 1;
  const int drop = quantum - exponent;
  std::uint64_t kept = significand;
  if (drop > 0) {
    if (drop > 60) {
      kept = 0;  // far below half a quantum
    } else {
      const std::uint64_t remainder = significand & ((std::uint64_t{1} << drop) - 1);
      const std::uint64_t half = std::uint64_t{1} << (drop - 1);
      kept = significand >> drop;
      if (remainder > half || (remainder == half && (kept & 1))) ++kept;
    }
  }
  const double magnitude = drop > 0 ? std::ldexp(static_cast<double>(kept), quantum) : std::fabs(x);
  if (magnitude > f.max_finite) {
    const double over = f.has_infinity ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
    return negative ? -over : over;
  }
  return negative ? -magnitude : magnitude;
}

double round_through_mpfr(double x, FormatId id) {
  mpfr_t m;
  mpfr_init2(m, 53);
  mpfr_set_d(m, x, MPFR_RNDN);
  const double r = round_to_format(m, id);
  mpfr_clear(m);
  return r;
}

// The exact sum of terms sign * 2^exponent (beyond double's reach), rounded
// by the MPFR path.
struct PowerOfTwo {
  int sign;
  long exponent;
};
double round_sum(std::initializer_list<PowerOfTwo> terms, FormatId id) {
  mpfr_t sum, term;
  mpfr_init2(sum, 8192);
  mpfr_init2(term, 8);
  mpfr_set_zero(sum, 1);
  for (const PowerOfTwo& t : terms) {
    mpfr_set_si_2exp(term, t.sign, t.exponent, MPFR_RNDN);
    mpfr_add(sum, sum, term, MPFR_RNDN);
  }
  const double r = round_to_format(sum, id);
  mpfr_clears(sum, term, static_cast<mpfr_ptr>(nullptr));
  return r;
}

std::vector<double> positive_values(FormatId id) {
  const FormatInfo& f = format_info(id);
  std::vector<double> values;
  for (std::uint64_t bits = 0; bits < (std::uint64_t{1} << (f.storage_bits - 1)); ++bits) {
    const double x = decode_bits(bits, id);
    if (std::isfinite(x)) values.push_back(x);
  }
  return values;
}

const FormatId kSmallFormats[] = {FormatId::float16, FormatId::bfloat16, FormatId::float8_e4m3fn,
                                  FormatId::float8_e5m2};

TEST(Formats, DescriptorsMatchPublishedConstants) {
  EXPECT_EQ(format_info(FormatId::float64).max_finite, DBL_MAX);
  EXPECT_EQ(format_info(FormatId::float64).min_subnormal, std::numeric_limits<double>::denorm_min());
  EXPECT_EQ(format_info(FormatId::float32).max_finite, FLT_MAX);
  EXPECT_EQ(format_info(FormatId::float32).min_normal, FLT_MIN);
  EXPECT_EQ(format_info(FormatId::float32).min_subnormal, std::numeric_limits<float>::denorm_min());
  EXPECT_EQ(format_info(FormatId::float16).max_finite, 65504.0);
  EXPECT_EQ(format_info(FormatId::float16).min_subnormal, std::ldexp(1.0, -24));
  EXPECT_EQ(format_info(FormatId::bfloat16).max_finite, 3.3895313892515355e38);
  EXPECT_EQ(format_info(FormatId::float8_e4m3fn).max_finite, 448.0);
  EXPECT_EQ(format_info(FormatId::float8_e4m3fn).min_subnormal, std::ldexp(1.0, -9));
  EXPECT_EQ(format_info(FormatId::float8_e5m2).max_finite, 57344.0);
  EXPECT_EQ(format_info(FormatId::float8_e5m2).min_subnormal, std::ldexp(1.0, -16));
  // Unit roundoffs of shared/ANCHORS.md section 3.
  EXPECT_EQ(format_info(FormatId::float64).unit_roundoff, std::ldexp(1.0, -53));
  EXPECT_EQ(format_info(FormatId::float32).unit_roundoff, std::ldexp(1.0, -24));
  EXPECT_EQ(format_info(FormatId::float16).unit_roundoff, std::ldexp(1.0, -11));
  EXPECT_EQ(format_info(FormatId::bfloat16).unit_roundoff, std::ldexp(1.0, -8));
  EXPECT_EQ(format_info(FormatId::float8_e4m3fn).unit_roundoff, std::ldexp(1.0, -4));
  EXPECT_EQ(format_info(FormatId::float8_e5m2).unit_roundoff, std::ldexp(1.0, -3));
  EXPECT_FALSE(format_info(FormatId::float8_e4m3fn).has_infinity);
  for (FormatId id : all_formats()) EXPECT_EQ(parse_format(format_info(id).name), id);
  EXPECT_FALSE(parse_format("float8"));
}

TEST(Formats, EverySmallBitPatternRoundTrips) {
  for (FormatId id : kSmallFormats) {
    const FormatInfo& f = format_info(id);
    std::size_t nans = 0;
    for (std::uint64_t bits = 0; bits < (std::uint64_t{1} << f.storage_bits); ++bits) {
      const double x = decode_bits(bits, id);
      if (std::isnan(x)) {
        ++nans;
        EXPECT_TRUE(std::isnan(decode_bits(encode_bits(x, id), id)));
        continue;
      }
      ASSERT_EQ(encode_bits(x, id), bits) << f.name << " pattern " << bits;
      ASSERT_TRUE(same_value(round_to_format(x, id), x)) << f.name << " pattern " << bits;
      ASSERT_TRUE(same_value(round_through_mpfr(x, id), x)) << f.name << " pattern " << bits;
    }
    // e4m3fn: one NaN pattern per sign; the IEEE-style formats: all-ones
    // exponent with a nonzero significand.
    const std::size_t expected_nans =
        f.has_infinity ? 2 * ((std::size_t{1} << (f.precision - 1)) - 1) : 2;
    EXPECT_EQ(nans, expected_nans) << f.name;
  }
}

TEST(Formats, OrdinalsCountRepresentableValues) {
  for (FormatId id : kSmallFormats) {
    const std::vector<double> values = positive_values(id);
    for (std::size_t i = 0; i < values.size(); ++i) {
      ASSERT_EQ(ordinal(values[i], id), static_cast<std::int64_t>(i));
      ASSERT_EQ(ordinal(-values[i], id), -static_cast<std::int64_t>(i));
      if (i + 1 < values.size()) {
        ASSERT_LT(values[i], values[i + 1]);
        ASSERT_EQ(ulp_distance(values[i], values[i + 1], id), 1);
        // The spacing between neighbours is the ulp of the smaller one.
        ASSERT_EQ(values[i + 1] - values[i], ulp(values[i], id)) << format_info(id).name << " " << values[i];
      }
    }
  }
  EXPECT_EQ(ulp_distance(-0.0, 0.0, FormatId::float32), 0);
  EXPECT_EQ(ulp_distance(-FLT_TRUE_MIN, FLT_TRUE_MIN, FormatId::float32), 2);
  EXPECT_EQ(ulp_distance(1.0, std::nextafter(1.0f, 2.0f), FormatId::float32), 1);
  EXPECT_EQ(ulp(1.0, FormatId::float32), std::ldexp(1.0, -23));
  EXPECT_EQ(ulp(0.0, FormatId::float16), std::ldexp(1.0, -24));
  EXPECT_EQ(ulp(1.0, FormatId::float64), DBL_EPSILON);
}

// Every boundary of a format: each value, the midpoint to its successor and
// the doubles just either side, the overflow threshold, half the smallest
// subnormal; both signs.
std::vector<double> boundary_doubles(FormatId id) {
  const FormatInfo& f = format_info(id);
  std::vector<double> values = positive_values(id);
  std::vector<double> points;
  const auto around = [&](double x) {
    points.push_back(x);
    points.push_back(std::nextafter(x, 0.0));
    points.push_back(std::nextafter(x, INFINITY));
  };
  for (std::size_t i = 0; i + 1 < values.size(); ++i) {
    around(values[i]);
    around(values[i] + (values[i + 1] - values[i]) / 2);
  }
  const double half_ulp_at_max = ulp(f.max_finite, id) / 2;
  around(f.max_finite);
  around(f.max_finite + half_ulp_at_max);
  around(f.max_finite + 2 * half_ulp_at_max);
  around(f.min_subnormal / 2);
  around(f.min_subnormal / 4);
  points.push_back(1e300);
  points.push_back(1e-300);
  points.push_back(std::numeric_limits<double>::denorm_min());
  points.push_back(INFINITY);
  points.push_back(std::numeric_limits<double>::quiet_NaN());
  const std::size_t n = points.size();
  for (std::size_t i = 0; i < n; ++i) points.push_back(-points[i]);
  return points;
}

TEST(Formats, RoundingFromDoubleAgreesWithIntegerImplementationAtEveryBoundary) {
  for (FormatId id : kSmallFormats) {
    for (double x : boundary_doubles(id)) {
      const double expected = round_by_integer_bits(x, id);
      ASSERT_TRUE(same_value(round_to_format(x, id), expected)) << format_info(id).name << " x=" << std::hexfloat << x;
      ASSERT_TRUE(same_value(round_through_mpfr(x, id), expected)) << format_info(id).name << " x=" << std::hexfloat << x;
    }
  }
}

TEST(Formats, RoundingFromDoubleAgreesWithTheCompiler) {
  std::mt19937_64 random(20261129);
  std::vector<double> samples = boundary_doubles(FormatId::float16);
  for (int i = 0; i < 200000; ++i) {
    // Random bit patterns cover every exponent; values near 1 probe ties.
    samples.push_back(std::bit_cast<double>(random()));
    samples.push_back(1.0 + std::ldexp(static_cast<double>(random() >> 11), -53));
  }
  for (float boundary : {FLT_MAX, FLT_MIN, FLT_TRUE_MIN, 1.0f}) {
    const double next = std::nextafter(boundary, INFINITY);
    const double mid = (static_cast<double>(boundary) + static_cast<double>(std::nextafter(boundary, INFINITY))) / 2;
    for (double x : {static_cast<double>(boundary), next, mid, std::nextafter(mid, 0.0), std::nextafter(mid, INFINITY)})
      samples.push_back(x);
  }
  for (double x : samples) {
    ASSERT_TRUE(same_value(round_to_format(x, FormatId::float32), static_cast<double>(static_cast<float>(x))))
        << std::hexfloat << x;
    ASSERT_TRUE(same_value(round_to_format(x, FormatId::float64), x));
#ifdef __FLT16_MAX__
    ASSERT_TRUE(same_value(round_to_format(x, FormatId::float16), static_cast<double>(static_cast<_Float16>(x))))
        << std::hexfloat << x;
#endif
    for (FormatId id : kSmallFormats)
      ASSERT_TRUE(same_value(round_to_format(x, id), round_by_integer_bits(x, id)))
          << format_info(id).name << " " << std::hexfloat << x;
  }
}

TEST(Formats, MultiprecisionRoundingResolvesTiesAndNearTies) {
  for (FormatId id : all_formats()) {
    const FormatInfo& f = format_info(id);
    const long p = f.precision;
    const double next = 1.0 + std::ldexp(1.0, static_cast<int>(1 - p));
    const double next2 = 1.0 + std::ldexp(1.0, static_cast<int>(2 - p));
    // Midpoint of 1 and its successor ties to even (1); 2^-300 more rounds
    // up, 2^-300 less stays.
    EXPECT_EQ(round_sum({{1, 0}, {1, -p}}, id), 1.0) << f.name;
    EXPECT_EQ(round_sum({{1, 0}, {1, -p}, {1, -300}}, id), next) << f.name;
    EXPECT_EQ(round_sum({{1, 0}, {1, -p}, {-1, -300}}, id), 1.0) << f.name;
    // Midpoint of the successor and the next: ties up, to the even one.
    EXPECT_EQ(round_sum({{1, 0}, {1, 1 - p}, {1, -p}}, id), next2) << f.name;
    // Half the smallest subnormal ties to zero (keeping the sign); a hair
    // more is the subnormal.
    const long half_subnormal = f.emin - p;
    EXPECT_TRUE(same_value(round_sum({{1, half_subnormal}}, id), 0.0)) << f.name;
    EXPECT_TRUE(same_value(round_sum({{-1, half_subnormal}}, id), -0.0)) << f.name;
    EXPECT_EQ(round_sum({{1, half_subnormal}, {1, half_subnormal - 200}}, id), f.min_subnormal) << f.name;
    EXPECT_TRUE(same_value(round_sum({{-1, half_subnormal - 1}}, id), -0.0)) << f.name;
  }
  // Overflow: IEEE formats overflow at max + half ulp (the tie goes to the
  // even 2^(emax+1)); e4m3fn rounds 464 to 448 and anything above to NaN.
  EXPECT_EQ(round_sum({{1, 16}, {-1, 4}}, FormatId::float16), INFINITY);  // 65504 + 16
  EXPECT_EQ(round_sum({{1, 16}, {-1, 4}, {-1, -200}}, FormatId::float16), 65504.0);
  EXPECT_EQ(round_sum({{1, 1024}, {-1, 970}}, FormatId::float64), INFINITY);  // max + half ulp
  EXPECT_EQ(round_sum({{1, 1024}, {-1, 970}, {-1, 0}}, FormatId::float64), DBL_MAX);
  EXPECT_EQ(round_sum({{1, 9}, {-1, 5}, {-1, 4}}, FormatId::float8_e4m3fn), 448.0);  // 464
  EXPECT_TRUE(std::isnan(round_sum({{1, 9}, {-1, 5}, {-1, 4}, {1, -200}}, FormatId::float8_e4m3fn)));
  // e5m2: -(57344 + 4096) ties between 57344 (odd significand) and 2^16.
  EXPECT_EQ(round_sum({{-1, 15}, {-1, 14}, {-1, 13}, {-1, 12}}, FormatId::float8_e5m2), -INFINITY);
  // Far beyond double's range.
  EXPECT_EQ(round_sum({{1, 5000}}, FormatId::float64), INFINITY);
  EXPECT_TRUE(same_value(round_sum({{-1, -5000}}, FormatId::float64), -0.0));
}

}  // namespace
}  // namespace attnspec

namespace attnspec {
namespace {

// rounding_cell (from the spacing) against the neighbours found from bit
// patterns: every positive finite value of the 8- and 16-bit formats, and
// float32 values at binade edges, subnormals and at random.
TEST(RoundingCell, MatchesTheBitPatternNeighbours) {
  const auto check = [](double m, FormatId id) {
    const FormatInfo& f = format_info(id);
    const std::uint64_t bits = encode_bits(m, id);
    const double down = decode_bits(bits - 1, id), up = decode_bits(bits + 1, id);
    const RoundingCell cell = rounding_cell(m, f);
    EXPECT_EQ(cell.down, (m + down) / 2) << f.name << " " << m;
    if (std::isfinite(up)) {
      EXPECT_EQ(cell.up, (m + up) / 2) << f.name << " " << m;
    }
  };
  for (FormatId id : {FormatId::float16, FormatId::bfloat16, FormatId::float8_e4m3fn, FormatId::float8_e5m2}) {
    const FormatInfo& f = format_info(id);
    for (std::uint64_t bits = 1; bits < (std::uint64_t{1} << (f.storage_bits - 1)); ++bits) {
      const double m = decode_bits(bits, id);
      if (std::isfinite(m)) check(m, id);
    }
  }
  std::mt19937 random(3);
  for (int i = 0; i < 100000; ++i) {
    const double m = std::bit_cast<float>(static_cast<std::uint32_t>(random() % 0x7f7fffffu) + 1u);
    check(m, FormatId::float32);
  }
  for (int e = -149; e <= 127; ++e) check(std::ldexp(1.0, e), FormatId::float32);
}

}  // namespace
}  // namespace attnspec
