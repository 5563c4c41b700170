// Format descriptors and the double <-> format conversions. The rounding
// works by scaling to the format's quantum and letting nearbyint round ties to
// even (the default rounding mode); tests/formats_test.cpp checks it against
// the compiler's conversions and a bit-level implementation.
#include "formats/format.hpp"

#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace attnspec {
namespace {

// 2^e for -1022 <= e <= 1023, from its bit pattern: the per-value code
// below runs for every drawn input and every rounding decision, where
// std::ldexp's library call was a tenth of a run's time.
double power_of_two(int e) { return std::bit_cast<double>(static_cast<std::uint64_t>(e + 1023) << 52); }

// ilogb for finite nonzero x, from the exponent field where x is normal.
int exponent_of(double x) {
  const int biased = static_cast<int>((std::bit_cast<std::uint64_t>(x) >> 52) & 0x7ff);
  return biased != 0 ? biased - 1023 : std::ilogb(x);
}

FormatInfo make_info(FormatId id, std::string_view name, int storage_bits, int exponent_bits,
                     int precision, bool has_infinity) {
  FormatInfo f{};
  f.id = id;
  f.name = name;
  f.storage_bits = storage_bits;
  f.exponent_bits = exponent_bits;
  f.precision = precision;
  f.bias = (1 << (exponent_bits - 1)) - 1;
  f.emin = 1 - f.bias;
  f.has_infinity = has_infinity;
  f.overflow = has_infinity ? Overflow::to_infinity : Overflow::to_nan;
  if (has_infinity) {
    // IEEE layout: the all-ones exponent is reserved for infinity and NaN.
    f.emax = f.bias;
    f.max_finite = std::ldexp(2.0 - std::ldexp(1.0, 1 - precision), f.emax);
  } else {
    // float8_e4m3fn: the all-ones exponent holds normal numbers, except the
    // all-ones significand, which is the NaN.
    f.emax = f.bias + 1;
    f.max_finite = std::ldexp(2.0 - std::ldexp(1.0, 2 - precision), f.emax);
  }
  f.min_normal = std::ldexp(1.0, f.emin);
  f.min_subnormal = std::ldexp(1.0, f.emin - precision + 1);
  f.unit_roundoff = std::ldexp(1.0, -precision);
  return f;
}

const std::array<FormatInfo, 6>& table() {
  static const std::array<FormatInfo, 6> formats = {
      make_info(FormatId::float64, "float64", 64, 11, 53, true),
      make_info(FormatId::float32, "float32", 32, 8, 24, true),
      make_info(FormatId::float16, "float16", 16, 5, 11, true),
      make_info(FormatId::bfloat16, "bfloat16", 16, 8, 8, true),
      make_info(FormatId::float8_e4m3fn, "float8_e4m3fn", 8, 4, 4, false),
      make_info(FormatId::float8_e5m2, "float8_e5m2", 8, 5, 3, true),
  };
  return formats;
}

constexpr std::array<FormatId, 6> kAllFormats = {
    FormatId::float64,  FormatId::float32,       FormatId::float16,
    FormatId::bfloat16, FormatId::float8_e4m3fn, FormatId::float8_e5m2};

double quiet_nan(bool negative) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  return negative ? -nan : nan;
}

double overflow_value(const FormatInfo& f, bool negative) {
  if (f.overflow == Overflow::to_nan) return quiet_nan(negative);
  return negative ? -std::numeric_limits<double>::infinity()
                  : std::numeric_limits<double>::infinity();
}

std::uint64_t low_mask(int bits) {
  return bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
}

}  // namespace

const FormatInfo& format_info(FormatId id) { return table()[static_cast<std::size_t>(id)]; }

std::optional<FormatId> parse_format(std::string_view name) {
  for (const FormatInfo& f : table())
    if (f.name == name) return f.id;
  return std::nullopt;
}

std::span<const FormatId> all_formats() { return kAllFormats; }

std::string_view format_names() {
  return "float64|float32|float16|bfloat16|float8_e4m3fn|float8_e5m2";
}

RoundingCell rounding_cell(double magnitude, const FormatInfo& f) {
  const int exponent = exponent_of(magnitude);
  // The spacing is 2^-1074 or more: for float64's subnormals, ldexp.
  const int spacing_exponent = std::max(exponent, f.emin) - f.precision + 1;
  const double spacing = spacing_exponent >= -1022 ? power_of_two(spacing_exponent) : std::ldexp(1.0, spacing_exponent);
  // The spacing below halves at a power of two above 2^emin.
  const bool at_power_of_two = exponent > f.emin && magnitude == power_of_two(exponent);
  return {magnitude - (at_power_of_two ? spacing / 4 : spacing / 2), magnitude + spacing / 2};
}

double round_to_format(double x, FormatId id) {
  const FormatInfo& f = format_info(id);
  if (std::isnan(x)) return quiet_nan(std::signbit(x));
  if (std::isinf(x)) return f.has_infinity ? x : quiet_nan(std::signbit(x));
  if (x == 0.0) return x;
  // Quantum (spacing) of the format in x's binade; below 2^emin the subnormal
  // spacing holds. Scaling by a power of two is exact, and the scaled value
  // is below 2^p, so nearbyint performs the one and only rounding.
  if (id == FormatId::float64) return x;
  const int exponent = exponent_of(x);
  // Narrower formats' quantum exponents lie between -149 (float32's
  // subnormals) and 1020 (float8 at double's largest binade), so both
  // powers of two are normal doubles and both products exact.
  const int quantum_exponent = std::max(exponent, f.emin) - f.precision + 1;
  const double rounded = std::nearbyint(x * power_of_two(-quantum_exponent)) * power_of_two(quantum_exponent);
  if (std::fabs(rounded) > f.max_finite) return overflow_value(f, std::signbit(x));
  return rounded;
}

bool is_representable(double x, FormatId id) { return same_value(round_to_format(x, id), x); }

std::uint64_t encode_bits(double x, FormatId id) {
  const FormatInfo& f = format_info(id);
  if (id == FormatId::float64) return std::bit_cast<std::uint64_t>(x);
  const int mantissa_bits = f.precision - 1;
  const std::uint64_t sign = std::signbit(x) ? std::uint64_t{1} << (f.storage_bits - 1) : 0;
  const std::uint64_t exponent_all_ones = low_mask(f.exponent_bits);
  if (std::isnan(x)) {
    if (!f.has_infinity) return sign | low_mask(f.storage_bits - 1);
    return sign | (exponent_all_ones << mantissa_bits) | (std::uint64_t{1} << (mantissa_bits - 1));
  }
  if (!is_representable(x, id))
    throw std::invalid_argument("encode_bits: value not representable in " + std::string(f.name));
  if (std::isinf(x)) return sign | (exponent_all_ones << mantissa_bits);
  const double magnitude = std::fabs(x);
  if (magnitude < f.min_normal) {
    const auto m = static_cast<std::uint64_t>(std::ldexp(magnitude, -(f.emin - mantissa_bits)));
    return sign | m;
  }
  const int e = std::ilogb(magnitude);
  const auto significand = static_cast<std::uint64_t>(std::ldexp(magnitude, mantissa_bits - e));
  const std::uint64_t biased = static_cast<std::uint64_t>(e + f.bias);
  return sign | (biased << mantissa_bits) | (significand & low_mask(mantissa_bits));
}

double decode_bits(std::uint64_t bits, FormatId id) {
  const FormatInfo& f = format_info(id);
  if (id == FormatId::float64) return std::bit_cast<double>(bits);
  bits &= low_mask(f.storage_bits);
  const int mantissa_bits = f.precision - 1;
  const bool negative = (bits >> (f.storage_bits - 1)) & 1;
  const std::uint64_t biased = (bits >> mantissa_bits) & low_mask(f.exponent_bits);
  const std::uint64_t mantissa = bits & low_mask(mantissa_bits);
  double magnitude;
  if (biased == low_mask(f.exponent_bits) && f.has_infinity) {
    if (mantissa != 0) return quiet_nan(negative);
    magnitude = std::numeric_limits<double>::infinity();
  } else if (!f.has_infinity && (bits & low_mask(f.storage_bits - 1)) == low_mask(f.storage_bits - 1)) {
    return quiet_nan(negative);
  } else if (biased == 0) {
    magnitude = std::ldexp(static_cast<double>(mantissa), f.emin - mantissa_bits);
  } else {
    const double significand = static_cast<double>((std::uint64_t{1} << mantissa_bits) | mantissa);
    magnitude = std::ldexp(significand, static_cast<int>(biased) - f.bias - mantissa_bits);
  }
  return negative ? -magnitude : magnitude;
}

double gamma(double k, double u) {
  const double ku = k * u;
  return ku < 1 ? ku / (1 - ku) : std::numeric_limits<double>::infinity();
}

double ulp(double x, FormatId id) {
  const FormatInfo& f = format_info(id);
  if (!std::isfinite(x)) throw std::invalid_argument("ulp: value is not finite");
  if (x == 0.0) return f.min_subnormal;
  return std::ldexp(1.0, std::max(std::ilogb(x), f.emin) - f.precision + 1);
}

std::int64_t ordinal(double representable, FormatId id) {
  const FormatInfo& f = format_info(id);
  if (!std::isfinite(representable) || !is_representable(representable, id))
    throw std::invalid_argument("ordinal: value is not a finite value of " + std::string(f.name));
  // Magnitudes of the encodings increase with the value's magnitude, so the
  // bit pattern without its sign is already the position among magnitudes.
  const std::uint64_t bits = encode_bits(representable, id);
  const auto magnitude = static_cast<std::int64_t>(bits & low_mask(f.storage_bits - 1));
  return std::signbit(representable) ? -magnitude : magnitude;
}

std::int64_t ulp_distance(double a, double b, FormatId id) {
  const std::int64_t d = ordinal(a, id) - ordinal(b, id);
  return d < 0 ? -d : d;
}

bool same_value(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

}  // namespace attnspec
