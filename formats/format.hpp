// The number formats attention kernels use (float64 down to float8), their
// descriptors, and exact conversions between them and double. Every value of
// every format here is a double, so "a value of format F" is a double that
// round_to_format(x, F) leaves unchanged. Rounding rules: spec/SPEC.md §3.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace attnspec {

enum class FormatId { float64, float32, float16, bfloat16, float8_e4m3fn, float8_e5m2 };

enum class Overflow { to_infinity, to_nan };

struct FormatInfo {
  FormatId id;
  std::string_view name;
  int storage_bits;
  int exponent_bits;
  int precision;  // p: significand bits, hidden bit included
  int bias;
  int emin;  // exponent of the smallest normal number
  int emax;  // exponent of the largest finite number
  bool has_infinity;
  Overflow overflow;
  double max_finite;
  double min_normal;
  double min_subnormal;
  double unit_roundoff;  // u = 2^-p
};

const FormatInfo& format_info(FormatId id);
std::optional<FormatId> parse_format(std::string_view name);
std::span<const FormatId> all_formats();
// "float64|float32|..." for help texts and error messages.
std::string_view format_names();

// Correctly rounded (nearest, ties to even) conversion of a double.
double round_to_format(double x, FormatId id);
bool is_representable(double x, FormatId id);

// Bit patterns (the low storage_bits of the result). encode_bits requires a
// representable value; every NaN encodes to the format's canonical NaN.
std::uint64_t encode_bits(double x, FormatId id);
double decode_bits(std::uint64_t bits, FormatId id);

// The rounding cell of a positive finite value m of the format: the
// midpoints between m and its neighbours (exact doubles for formats of up
// to 51 bits), computed from the spacing, for code that runs per value.
// Above m the neighbour may lie beyond the largest finite value.
struct RoundingCell {
  double down, up;
};
RoundingCell rounding_cell(double magnitude, const FormatInfo& format);

// gamma_k = k u / (1 - k u), or infinity when k u >= 1: the relative error
// bound of k successive roundings with unit roundoff u (Higham, Accuracy
// and Stability of Numerical Algorithms, section 3.1). The one definition
// the precision model and the fast reference share.
double gamma(double k, double u);

// Spacing of the format at x (x finite); see SPEC.md §3.
double ulp(double x, FormatId id);
// A monotone integer numbering of the format's finite values (+0 and -0 both
// 0), so the distance in ulps of two values is the difference of ordinals.
std::int64_t ordinal(double representable, FormatId id);
std::int64_t ulp_distance(double a, double b, FormatId id);

// Bit equality of doubles: tells -0 from +0 and treats every NaN as equal.
bool same_value(double a, double b);

}  // namespace attnspec
