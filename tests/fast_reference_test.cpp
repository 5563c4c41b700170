// The fast certified reference against the multiprecision one: the same
// correctly rounded outputs, bit for bit, on random problems of every
// distribution the suite draws (ties, huge logits, masks, GQA, long rows),
// for every target format; its double approximations within their stated
// error; and bounded_exp within its proven bound against MPFR.
#include <gtest/gtest.h>

#include <cmath>
#include <mpfr.h>
#include <random>

#include "reference/bounded_exp.hpp"
#include "reference/certified.hpp"
#include "reference/fast_reference.hpp"

namespace attnspec {
namespace {

// |got - exp(x)| / exp(x), exactly enough (MPFR at 200 bits; doubles and
// x87 extended values convert to MPFR exactly).
double relative_error_of_exp(long double x, long double got) {
  mpfr_t exact, error;
  mpfr_inits2(200, exact, error, static_cast<mpfr_ptr>(nullptr));
  mpfr_set_ld(exact, x, MPFR_RNDN);
  mpfr_exp(exact, exact, MPFR_RNDN);
  mpfr_set_ld(error, got, MPFR_RNDN);
  mpfr_sub(error, error, exact, MPFR_RNDN);
  mpfr_div(error, error, exact, MPFR_RNDN);
  const double relative = std::fabs(mpfr_get_d(error, MPFR_RNDN));
  mpfr_clears(exact, error, static_cast<mpfr_ptr>(nullptr));
  return relative;
}

double relative_error_of_bounded_exp(double x) { return relative_error_of_exp(x, bounded_exp(x)); }

TEST(BoundedExp, StaysWithinItsBound) {
  std::mt19937_64 random(7);
  std::uniform_real_distribution<double> anywhere(kBoundedExpMin, 0.0), near_zero(-1.0, 0.0);
  double worst = 0;
  for (int i = 0; i < 200000; ++i) {
    const double x = i % 2 ? anywhere(random) : near_zero(random);
    worst = std::max(worst, relative_error_of_bounded_exp(x));
  }
  for (double x : {0.0, -0.0, -1e-300, kBoundedExpMin, -0.5 * std::log(2.0), -std::log(2.0), -1.5 * std::log(2.0)})
    worst = std::max(worst, relative_error_of_bounded_exp(x));
  EXPECT_EQ(bounded_exp(0.0), 1.0);
  EXPECT_LT(worst, kBoundedExpError);
  // The proven bound is loose; the measured error is a few units of u.
  EXPECT_LT(worst, 4 * kUnitRoundoff);
}

// |bounded_exp_extended(x) - exp(x)| / exp(x), in units of 2^-64.
double relative_error_of_bounded_exp_extended(long double x) {
  return std::ldexp(relative_error_of_exp(x, bounded_exp_extended(x)), 64);
}

TEST(BoundedExpExtended, StaysWithinItsBound) {
  std::mt19937_64 random(8);
  std::uniform_real_distribution<long double> anywhere(kBoundedExpExtendedMin, 0.0L), near_zero(-1.0L, 0.0L),
      double_range(kBoundedExpMin, 0.0L);
  double worst = 0;
  for (int i = 0; i < 200000; ++i) {
    const long double x = i % 3 == 0 ? anywhere(random) : i % 3 == 1 ? near_zero(random) : double_range(random);
    worst = std::max(worst, relative_error_of_bounded_exp_extended(x));
  }
  for (long double x : {0.0L, -0.0L, -1e-300L, kBoundedExpExtendedMin, static_cast<long double>(kBoundedExpMin),
                        -0.5L * std::log(2.0L), -std::log(2.0L), -1.5L * std::log(2.0L), -11000.0L * 0.999L})
    worst = std::max(worst, relative_error_of_bounded_exp_extended(x));
  EXPECT_EQ(bounded_exp_extended(0.0L), 1.0L);
  EXPECT_LT(worst, 8.0);  // kBoundedExpExtendedError in units of 2^-64
  EXPECT_LT(worst, 4.0);  // measured: the proven bound is loose
}

Problem random_problem(std::mt19937_64& random, int kind) {
  std::uniform_int_distribution<int> small(1, 4), length(1, 40), dims(1, 16);
  std::normal_distribution<double> normal(0.0, 1.0);
  Problem p;
  p.dims.batch = 1;
  p.dims.kv_heads = small(random) % 2 + 1;
  p.dims.q_heads = p.dims.kv_heads * (small(random) % 2 + 1);
  p.dims.q_len = small(random);
  p.dims.kv_len = kind == 5 ? 300 + length(random) : length(random);
  p.dims.d_k = dims(random);
  p.dims.d_v = dims(random);
  const auto draw = [&](std::size_t n, double spread) {
    std::vector<double> values(n);
    for (double& x : values) {
      x = normal(random) * spread;
      if (kind == 1) x = std::round(x * 4) / 4;  // ties: few distinct values
      if (kind == 4 && random() % 500 == 0) x += normal(random) * 10;  // outliers
      x = round_to_format(x, kind == 2 ? FormatId::float16 : FormatId::bfloat16);
    }
    return values;
  };
  const double spread = kind == 3 ? 16.0 : 1.0;  // large logits
  p.q = draw(p.rows() * p.dims.d_k, spread);
  p.k = draw(static_cast<std::size_t>(p.dims.kv_heads) * p.dims.kv_len * p.dims.d_k, spread);
  p.v = draw(static_cast<std::size_t>(p.dims.kv_heads) * p.dims.kv_len * p.dims.d_v, 1.0);
  if (random() % 3 == 0) {
    p.mask_kind = random() % 2 ? MaskKind::boolean : MaskKind::additive;
    p.mask.resize(static_cast<std::size_t>(p.dims.q_len) * p.dims.kv_len);
    for (double& m : p.mask)
      m = p.mask_kind == MaskKind::boolean ? static_cast<double>(random() % 4 != 0)
                                           : (random() % 4 == 0 ? -INFINITY : std::ldexp(static_cast<double>(random() % 9) - 4, -2));
  }
  if (random() % 4 == 0) p.causal = random() % 2 ? Causal::top_left : Causal::bottom_right;
  if (random() % 3 == 0) p.scale = std::ldexp(1.0 + static_cast<double>(random() % 7), -3);
  if (random() % 3 == 0)  // sinks: a quarter, none (-inf), or one that outweighs every key
    for (int h = 0; h < p.dims.q_heads; ++h) {
      const auto kind = random() % 3;
      p.sinks.push_back(kind == 0 ? std::ldexp(static_cast<double>(random() % 17) - 8, -2) : kind == 1 ? -INFINITY : 200.0);
    }
  return p;
}

TEST(FastReference, AgreesBitForBitWithTheMultiprecisionReference) {
  std::mt19937_64 random(11);
  std::size_t rows = 0, escalated = 0;
  for (int trial = 0; trial < 240; ++trial) {
    const Problem p = random_problem(random, trial % 6);
    const FormatId target = std::array{FormatId::float32, FormatId::bfloat16, FormatId::float16,
                                       FormatId::float8_e4m3fn, FormatId::float8_e5m2, FormatId::float64}[trial % 6 == 5 ? (trial / 6) % 6 : trial % 5];
    ReferenceOptions exact_options;
    exact_options.target = target;
    exact_options.weights = false;
    ReferenceOptions wide_options;
    wide_options.weights = false;
    for (std::size_t flat = 0; flat < p.rows(); ++flat) {
      const RowIndex r = p.row_index(flat);
      const FastRow fast = fast_certified_row(p, r, target);
      const RowResult exact = certified_row(p, r, exact_options);
      const RowResult wide = certified_row(p, r, wide_options);
      ++rows;
      escalated += fast.escalated;
      for (std::size_t t = 0; t < exact.out.size(); ++t) {
        EXPECT_TRUE(same_value(fast.out[t], exact.out[t]))
            << "trial " << trial << " row " << flat << " column " << t << ": fast " << fast.out[t] << ", exact "
            << exact.out[t] << " (" << format_info(target).name << ")";
        // The approximation (the pair out_double + out_low on the extended
        // rung, which float64 targets take) holds the exact value within
        // its error (up to the half ulp of float64 rounding of `wide`).
        const long double approximation = static_cast<long double>(fast.out_double[t]) + fast.out_low[t];
        EXPECT_LE(static_cast<double>(std::fabs(approximation - wide.out[t])),
                  fast.out_error[t] + std::fabs(wide.out[t]) * 0x1p-53 + 0x1p-1074)
            << "trial " << trial << " row " << flat << " column " << t;
      }
      if (std::isfinite(wide.lse))  // the lse's enclosure holds it too (sinks included)
        EXPECT_LE(std::fabs(fast.lse - wide.lse), fast.lse_error + std::fabs(wide.lse) * 0x1p-53)
            << "trial " << trial << " row " << flat << " lse";
      else
        EXPECT_TRUE(same_value(fast.lse, wide.lse)) << "trial " << trial << " row " << flat << " lse";
    }
  }
  // Most rows take the fast path.
  EXPECT_LT(escalated, rows / 3) << escalated << " of " << rows << " rows escalated";
}

// float64 targets through the extended rung: the same correctly rounded
// outputs as the exact path, bit for bit, many of them decided without it;
// and the extended enclosure about 2^11 times narrower than the double one.
TEST(FastReference, ExtendedRungDecidesFloat64Roundings) {
  std::mt19937_64 random(12);
  std::size_t outputs = 0, escalated_outputs = 0, narrower = 0, compared = 0;
  ReferenceOptions exact_options;
  exact_options.weights = false;
  for (int trial = 0; trial < 120; ++trial) {
    const Problem p = random_problem(random, trial % 6);
    for (std::size_t flat = 0; flat < p.rows(); ++flat) {
      const RowIndex r = p.row_index(flat);
      const FastRow fast = fast_certified_row(p, r, FormatId::float64);
      const RowResult exact = certified_row(p, r, exact_options);
      const FastRow wide = enclosed_row(p, r), extended = enclosed_row(p, r, EnclosurePrecision::extended);
      outputs += exact.out.size();
      escalated_outputs += fast.escalated_outputs;
      for (std::size_t t = 0; t < exact.out.size(); ++t) {
        EXPECT_TRUE(same_value(fast.out[t], exact.out[t]))
            << "trial " << trial << " row " << flat << " column " << t << ": fast " << fast.out[t] << ", exact "
            << exact.out[t];
        if (extended.escalated || !std::isfinite(exact.out[t])) continue;
        // The pair holds the exact value within its error, up to the half
        // ulp of the float64 rounding that `exact` is.
        const long double pair = static_cast<long double>(extended.out_double[t]) + extended.out_low[t];
        EXPECT_LE(std::fabs(pair - exact.out[t]), extended.out_error[t] + std::fabs(exact.out[t]) * 0x1p-53 + 0x1p-1074)
            << "trial " << trial << " row " << flat << " column " << t;
        if (wide.out_error[t] > 0) {
          ++compared;
          narrower += extended.out_error[t] * 256 < wide.out_error[t];
        }
      }
    }
  }
  // Measured: about a third (the proven bounds are loose, and an output
  // within a few hundredths of an ulp of a midpoint stays open).
  EXPECT_LT(escalated_outputs, outputs / 2) << escalated_outputs << " of " << outputs << " outputs escalated";
  EXPECT_GT(narrower, compared * 9 / 10) << narrower << " of " << compared << " enclosures 256 times narrower";
}

}  // namespace
}  // namespace attnspec
