// The precision audit (audit/): its error measures on hand-computed inputs,
// the growth-exponent fit on data with a known exponent, the outliers
// distribution's statistics, the row sample, and a whole audit of a
// built-in kernel on a small shape, with its reports.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <set>
#include <string>

#include "adapters/registry.hpp"
#include "audit/audit.hpp"
#include "audit/report.hpp"
#include "cases/io/case_dir.hpp"
#include "properties/harness.hpp"

namespace attnspec {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

TEST(AuditMeasures, ComponentwiseErrorIsInUnitsOfUOutTimesAbsScale) {
  const double u = 0x1p-8;  // bfloat16
  // |0.75 - 0.7| = 0.05, in units of 2^-8 * 0.8: 0.05 / 0.003125 = 16.
  EXPECT_NEAR(componentwise_error(0.75, 0.7, 0.8, u), 16.0, 1e-12);
  EXPECT_EQ(componentwise_error(0.5, 0.5, 0.0, u), 0.0);            // |P||V| = 0: must be exact, and is
  EXPECT_EQ(componentwise_error(0.5, 0.25, 0.0, u), kInfinity);     // and is not
  EXPECT_EQ(componentwise_error(std::nan(""), 0.25, 1.0, u), kInfinity);
}

TEST(AuditMeasures, UlpsCountTheFormatsValuesInBetween) {
  // float16 near 1: spacing 2^-10 above 1, 2^-11 below.
  EXPECT_EQ(ulps_error(1.0 + 3 * 0x1p-10, 1.0, FormatId::float16), 3.0);
  EXPECT_EQ(ulps_error(1.0 - 0x1p-11, 1.0 + 0x1p-10, FormatId::float16), 2.0);
  EXPECT_EQ(ulps_error(-0.0, 0.0, FormatId::float16), 0.0);
  // Not a float16 value: fractional, in ulps of the rounded value.
  EXPECT_DOUBLE_EQ(ulps_error(1.0 + 0x1p-12, 1.0, FormatId::float16), 0.25);
  EXPECT_EQ(ulps_error(kInfinity, 1.0, FormatId::float16), kInfinity);
}

TEST(AuditMeasures, NormwiseRelativeError) {
  const std::vector<double> exact = {3, 4}, got = {3, 4.5};
  EXPECT_DOUBLE_EQ(normwise_relative_error(got, exact), 0.1);  // 0.5 / 5
  EXPECT_EQ(normwise_relative_error(exact, exact), 0.0);
  const std::vector<double> zero = {0, 0};
  EXPECT_EQ(normwise_relative_error(got, zero), kInfinity);
}

TEST(AuditMeasures, SummaryOfValues) {
  const std::vector<double> values = {3, 1, 4, 1, 5, 9};
  const Summary s = summarize(values);
  EXPECT_EQ(s.count, 6u);
  EXPECT_EQ(s.max, 9);
  EXPECT_EQ(s.median, 3.5);  // mean of 3 and 4
  EXPECT_DOUBLE_EQ(s.rms, std::sqrt((9 + 1 + 16 + 1 + 25 + 81) / 6.0));
  const std::vector<double> odd = {2, 7, 1};
  EXPECT_EQ(summarize(odd).median, 2);
  const std::vector<double> with_nan = {1, std::nan("")};
  EXPECT_EQ(summarize(with_nan).nonfinite, 1u);
  EXPECT_EQ(summarize(with_nan).max, kInfinity);
}

TEST(AuditMeasures, AccumulatorGivesRmseAndMaxAbs) {
  MeasureAccumulator m(FormatId::float16);
  const std::vector<double> exact = {1.0, 2.0}, rounded = {1.0, 2.0}, scale = {1.0, 2.0};
  const std::vector<double> got = {1.0 + 0x1p-10, 2.0 - 0x1p-9};
  m.add_row(got, exact, rounded, scale);
  const ErrorMeasures e = m.finish();
  EXPECT_DOUBLE_EQ(e.max_abs, 0x1p-9);
  EXPECT_DOUBLE_EQ(e.rmse, std::sqrt((0x1p-20 + 0x1p-18) / 2));
  EXPECT_DOUBLE_EQ(e.componentwise.max, 2.0);  // 2^-10 / (2^-11 * 1) and 2^-9 / (2^-11 * 2)
  EXPECT_EQ(e.ulps.max, 2.0);                  // 2 - 2^-9 is two float16 values below 2 (spacing 2^-10 there)
  EXPECT_EQ(e.normwise.count, 1u);
  EXPECT_EQ(e.correctly_rounded_share, 0.0);
  MeasureAccumulator exact_one(FormatId::float16);
  exact_one.add_row(rounded, exact, rounded, scale);
  EXPECT_EQ(exact_one.finish().correctly_rounded_share, 1.0);
}

TEST(AuditMeasures, FlashAttentionFloor) {
  // float16: 0.3 is 0.2998046875; 1 + 0.2998 rounds to 1.2998046875 exactly, minus it gives 1: floor 0.
  EXPECT_EQ(flash_attention_floor(1.0, FormatId::float16), 0.0);
  // A value far below 0.3's spacing vanishes in r + 0.3: the floor is 2|r|.
  EXPECT_EQ(flash_attention_floor(0x1p-20, FormatId::float16), 0x1p-19);
}

TEST(AuditMeasures, HistogramCountsZerosAndOutliersApart) {
  const std::vector<double> values = {0, 0.5, 0.05, 0.0501, 2000, kInfinity};
  const std::span<const double> series[] = {values};
  const std::vector<double> edges = log_bin_edges(series, 1);  // decades 1e-2 .. 1e4
  ASSERT_EQ(edges.front(), 0.01);
  ASSERT_EQ(edges.back(), 10000);
  const Histogram h = histogram(values, edges);
  EXPECT_EQ(h.zeros, 1u);
  EXPECT_EQ(h.above, 1u);  // infinity
  EXPECT_EQ(h.counts[0], 2u);  // [0.01, 0.1)
  EXPECT_EQ(h.counts[1], 1u);  // [0.1, 1)
  EXPECT_EQ(h.counts[5], 1u);  // [1000, 10000)
}

TEST(AuditFit, RecoversAKnownExponent) {
  std::vector<double> x, half, linear;
  for (double s = 128; s <= 4096; s *= 2) {
    x.push_back(s);
    half.push_back(3 * std::sqrt(s));
    linear.push_back(0.01 * s * (1 + 0.01 * std::sin(s)));  // a little noise
  }
  const GrowthFit a = fit_growth(x, half);
  EXPECT_NEAR(a.exponent, 0.5, 1e-12);
  EXPECT_NEAR(a.coefficient, 3, 1e-9);
  EXPECT_NEAR(a.r_squared, 1, 1e-12);
  EXPECT_EQ(a.points, 6u);
  EXPECT_NEAR(fit_growth(x, linear).exponent, 1.0, 0.01);
  // Zeros and infinities are left out; one point cannot be fitted.
  const std::vector<double> y = {0, kInfinity, 5, 0, 0, 0};
  EXPECT_TRUE(std::isnan(fit_growth(x, y).exponent));
}

// N(0,1) + N(0,100) Bernoulli(0.001) (FlashAttention-3): variance 1.1 and
// 4th moment 0.999 * 3 + 0.001 * 3 * 101^2 = 33.6; a share of
// 0.001 * P(|N(0, 101)| > 6) = 5.5e-4 beyond 6 (N(0, 1) alone: 2e-9).
// Each statistic within its two-sided 99.9% normal interval (3.29 SE);
// the fixed seed makes the outcome reproducible. Outliers of sd 100
// instead of 10 would give variance 11 and a tail share of 9.5e-4, no
// outliers 1.0 and 0: all far outside.
TEST(AuditInputs, OutliersDistributionHasFlashAttention3Statistics) {
  InputRandom random(7);
  const int n = 1'000'000;
  double sum = 0, sum_squares = 0;
  int tail = 0;
  for (int i = 0; i < n; ++i) {
    const double x = round_to_format(draw_value(InputDistribution::outliers, random), FormatId::float32);
    sum += x;
    sum_squares += x * x;
    tail += std::fabs(x) > 6;
  }
  const double variance = 1.1, fourth = 0.999 * 3 + 0.001 * 3 * 101 * 101;
  EXPECT_NEAR(sum / n, 0, 3.29 * std::sqrt(variance / n));
  EXPECT_NEAR(sum_squares / n, variance, 3.29 * std::sqrt((fourth - variance * variance) / n));
  const double tail_share = 0.001 * std::erfc(6 / std::sqrt(2 * 101.0));
  EXPECT_NEAR(tail, n * tail_share, 3.29 * std::sqrt(n * tail_share));
}

TEST(AuditInputs, ProblemsAreRepresentableAndReproducible) {
  Dims d;
  d.batch = 1, d.q_heads = 2, d.kv_heads = 1, d.q_len = 3, d.kv_len = 40, d.d_k = 8, d.d_v = 4;
  for (InputDistribution distribution : {InputDistribution::normal, InputDistribution::uniform, InputDistribution::outliers,
                                         InputDistribution::ties, InputDistribution::large}) {
    const Problem p = make_audit_problem(d, distribution, FormatId::bfloat16, 3);
    EXPECT_TRUE(validate(p).empty());
    for (const auto* values : {&p.q, &p.k, &p.v})
      for (double x : *values) ASSERT_TRUE(is_representable(x, FormatId::bfloat16)) << to_string(distribution);
    EXPECT_EQ(make_audit_problem(d, distribution, FormatId::bfloat16, 3).k, p.k);
    EXPECT_NE(make_audit_problem(d, distribution, FormatId::bfloat16, 4).k, p.k);
  }
  // ties: keys cluster around 4 base vectors, so a key's nearest other key is close.
  const Problem ties = make_audit_problem(d, InputDistribution::ties, FormatId::float32, 3);
  for (int j = 0; j < d.kv_len; ++j) {
    double nearest = kInfinity;
    for (int i = 0; i < d.kv_len; ++i) {
      if (i == j) continue;
      double distance = 0;
      for (int t = 0; t < d.d_k; ++t) distance = std::hypot(distance, ties.key_row(0, 0, i)[t] - ties.key_row(0, 0, j)[t]);
      nearest = std::min(nearest, distance);
    }
    EXPECT_LT(nearest, 0.2);  // noise sd 1/64 per component, 8 components: distance about 0.03
  }
}

TEST(AuditSampling, RowsAreDistinctSortedAndSeeded) {
  Dims d;
  d.batch = 2, d.q_heads = 3, d.kv_heads = 1, d.q_len = 100;
  const auto sample = sample_rows(d, 10, 5);
  ASSERT_EQ(sample.size(), 6u);
  for (const auto& rows : sample) {
    ASSERT_EQ(rows.size(), 10u);
    EXPECT_TRUE(std::is_sorted(rows.begin(), rows.end()));
    EXPECT_EQ(std::set<int>(rows.begin(), rows.end()).size(), 10u);
    EXPECT_GE(rows.front(), 0);
    EXPECT_LT(rows.back(), 100);
  }
  EXPECT_NE(sample[0], sample[1]);
  EXPECT_EQ(sample_rows(d, 10, 5), sample);
  EXPECT_EQ(sample_rows(d, 500, 5)[0].size(), 100u);  // more than L: every row
}

TEST(AuditSweep, Values) {
  EXPECT_EQ(sweep_values(SweepAxis::kv_len, 4096), (std::vector<int>{128, 256, 512, 1024, 2048, 4096}));
  EXPECT_EQ(sweep_values(SweepAxis::kv_len, 1000), (std::vector<int>{128, 256, 512, 1000}));
  EXPECT_EQ(sweep_values(SweepAxis::kv_len, 64), (std::vector<int>{16, 32, 64}));
  EXPECT_EQ(sweep_values(SweepAxis::d_k, 128), (std::vector<int>{16, 32, 64, 128}));
  EXPECT_EQ(sweep_values(SweepAxis::d_k, 2), (std::vector<int>{1, 2}));
}

// An audit of a built-in kernel at one shape, with rows_per_head rows of
// each head sampled.
AuditResult audit_one_shape(const std::string& kernel_name, Dims shape, InputDistribution distribution,
                            int rows_per_head) {
  AuditOptions options;
  options.shape = shape;
  options.distribution = distribution;
  options.rows_per_head = rows_per_head;
  return run_audit(*make_kernel(kernel_name), kernel_name, options);
}

// The yardstick takes, per element, the worse of two q.k orders (as
// PRECREL does): auditing the blocked order itself must then come out
// below the yardstick, where a blocked-only yardstick would tie. One query
// row per head, so that Eigen's product of a head is a matrix-vector one,
// whose order is not the running sum's (LogitProduct).
TEST(Audit, NaiveYardstickIsTheWorseOfTwoOrders) {
  const AuditResult r = audit_one_shape("naive-f32", Dims{1, 16, 1, 1, 512, 128, 8}, InputDistribution::normal, 1);
  ASSERT_EQ(r.points.size(), 1u);
  EXPECT_GT(r.points.front().kernel_naive_ratio, 0);
  EXPECT_LT(r.points.front().kernel_naive_ratio, 1);
}

// A whole audit: finite, sensible figures. Every kernel output is a value
// of the output format and the floor is the correctly rounded value, the
// nearest such value to the exact result, so the kernel's errors are at
// least the floor's, element by element and so in every maximum and RMS.
TEST(Audit, BuiltinKernelOnASmallShape) {
  const AuditResult r = audit_one_shape("online-f16", Dims{1, 2, 1, 40, 96, 16, 8}, InputDistribution::outliers, 12);
  ASSERT_EQ(r.points.size(), 1u);
  const AuditPoint& p = r.points.front();
  EXPECT_EQ(p.checked_rows, 24u);
  EXPECT_EQ(p.checked_elements, 24u * 8);
  EXPECT_EQ(r.naive, "naive composition in float32, output float16, q.k blocked or as a running sum, the worse per element");
  for (const ErrorMeasures* m : {&p.kernel, &p.naive, &p.floor}) {
    EXPECT_TRUE(std::isfinite(m->componentwise.max) && std::isfinite(m->rmse));
    EXPECT_EQ(m->componentwise.nonfinite, 0u);
  }
  EXPECT_GT(p.kernel.componentwise.max, 0);
  EXPECT_GE(p.kernel.componentwise.max, p.floor.componentwise.max);
  EXPECT_GE(p.kernel.rmse, p.floor.rmse);
  EXPECT_GE(p.kernel.max_abs, p.floor.max_abs);
  EXPECT_EQ(p.floor.ulps.max, 0);
  EXPECT_LE(p.kernel.ulps.max, 4);  // float32 accumulation, float16 output: a few ulps at most here
  // The floor is at most one rounding: u_out |o| <= u_out |P||V|.
  EXPECT_LE(p.floor.componentwise.max, 1.0);
  EXPECT_LE(p.bound.max_ratio, 1.0);
  EXPECT_EQ(p.bound.outside, 0u);
  EXPECT_EQ(p.bound.unbounded, 0u);
  EXPECT_FALSE(exceeds_bound(r));
  EXPECT_GT(p.kernel_naive_ratio, 0);
  EXPECT_LE(p.kernel_naive_ratio, 2);  // FlashAttention's criterion
  std::size_t histogram_total = p.kernel_histogram.zeros + p.kernel_histogram.below + p.kernel_histogram.above;
  for (std::size_t c : p.kernel_histogram.counts) histogram_total += c;
  EXPECT_EQ(histogram_total, p.checked_elements);
  EXPECT_EQ(p.worst.componentwise, p.kernel.componentwise.max);
  EXPECT_EQ(p.worst.query.size(), 16u);
  EXPECT_EQ(p.worst.case_problem.dims.kv_len, 96);

  const nlohmann::json json = audit_json(r, "worst");
  EXPECT_EQ(json["format"], "attnspec-audit/1");
  EXPECT_EQ(json["points"][0]["kernel"]["rmse"], p.kernel.rmse);
  EXPECT_EQ(json["points"][0]["worst"]["query_hex"].size(), 16u);
  EXPECT_NE(audit_markdown(r, "worst").find("| RMSE |"), std::string::npos);

  // The worst row, saved and loaded, is the audited row.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "attnspec_audit_test_case";
  save_worst_case(r, dir);
  const Case c = load_case(dir);
  EXPECT_EQ(c.dtype, FormatId::float16);
  EXPECT_EQ(c.problem.q, p.worst.query);
  std::filesystem::remove_all(dir);
}

// Sampled rows keep their positions (and their heads' sinks): with 12 of
// 40 rows sampled, a window, causal masking and ALiBi that moved with the row index (the sample's L
// is 12, not 40) would give the naive yardstick another function, with
// errors of order 1 against the reference; kept, it is as precise as the
// kernel itself (the same float64 composition).
TEST(Audit, SampledRowsKeepTheirPositions) {
  const std::unique_ptr<Kernel> kernel = make_kernel("naive-f64");
  AuditOptions options;
  options.shape = Dims{1, 2, 1, 40, 56, 8, 8};
  options.rows_per_head = 12;
  options.causal = Causal::bottom_right;
  options.window = Window{7, std::nullopt, Alignment::top_left};
  options.alibi = Alignment::bottom_right;
  options.sink = 1.5;
  const AuditResult r = run_audit(*kernel, "naive-f64", options);
  const AuditPoint& p = r.points.front();
  EXPECT_EQ(p.checked_rows, 24u);
  EXPECT_EQ(p.bound.outside, 0u);
  EXPECT_LE(p.kernel.componentwise.max, 8);
  EXPECT_LE(p.naive.componentwise.max, 8);
  EXPECT_EQ(r.positions,
            "causal bottom_right; window (7, unbounded) top_left; ALiBi (the paper's slopes) bottom_right; sink 1.5 for "
            "every head");
  EXPECT_EQ(p.worst.case_problem.sinks, std::vector<double>{1.5});
  EXPECT_NE(audit_markdown(r, "worst").find("positions: causal bottom_right"), std::string::npos);
  // The worst row alone, positions as an additive mask, is still that row.
  ErrorStats stats;
  EXPECT_EQ(check_against_reference(*kernel, p.worst.case_problem, stats), "");
  EXPECT_EQ(p.worst.case_problem.mask_kind, MaskKind::additive);
}

// An fp8 kernel with descales: the kernel sees e4m3 inputs and the factors,
// the reference the real inputs; the worst row's case holds the former
// (its query in the input format's bits) and fails or passes on its own.
TEST(Audit, DescalesReachTheKernelAndTheWorstCase) {
  const std::unique_ptr<Kernel> kernel = make_kernel("online-fp8");
  AuditOptions options;
  options.shape = Dims{1, 4, 2, 16, 160, 32, 16};
  options.distribution = InputDistribution::uniform;
  options.descales = std::array<double, 3>{0.5, 0x1.8p1, 0.125};
  const AuditResult r = run_audit(*kernel, "online-fp8", options);
  const AuditPoint& p = r.points.front();
  EXPECT_EQ(p.bound.outside, 0u);
  EXPECT_EQ(r.positions, "descales q 0.5, k 3, v 0.125 for every (batch, kv head)");
  ASSERT_TRUE(p.worst.case_problem.descales.has_value());
  EXPECT_EQ(p.worst.case_problem.descales->k, std::vector<double>{3});
  for (double x : p.worst.case_problem.q) EXPECT_TRUE(is_representable(x, FormatId::float8_e4m3fn));
  ErrorStats stats;
  EXPECT_EQ(check_against_reference(*kernel, p.worst.case_problem, stats), "");
}

// --backward: the gradients of a correct backward are within SPEC 6.11's
// bound and meet GRADREL's criterion; a backward without the scale in dS
// is outside the bound and fails the criterion; a kernel without a
// backward, or descales, are refused.
TEST(Audit, BackwardMeasuresTheGradients) {
  AuditOptions options;
  options.shape = Dims{1, 4, 2, 24, 40, 16, 8};
  options.sink = 0.5;
  options.backward = true;
  const std::unique_ptr<Kernel> correct = make_kernel("online-f32");
  const AuditResult r = run_audit(*correct, "online-f32", options);
  const AuditPoint& p = r.points.front();
  ASSERT_TRUE(p.gradients.has_value());
  ASSERT_EQ(p.gradients->tensors.size(), 4u);  // dQ, dK, dV and the sinks'
  const std::size_t sizes[] = {4 * 24 * 16, 2 * 40 * 16, 2 * 40 * 8, 4};
  for (std::size_t n = 0; n < 4; ++n) {
    const GradientTensorAudit& t = p.gradients->tensors[n];
    EXPECT_EQ(t.values, sizes[n]) << t.tensor;
    EXPECT_EQ(t.bound.outside, 0u) << t.tensor;
    EXPECT_EQ(t.bound.unbounded, 0u) << t.tensor;
    EXPECT_TRUE(t.within_gradrel) << t.tensor;
    EXPECT_GT(t.kernel.max_abs, 0) << t.tensor;
    EXPECT_TRUE(std::isfinite(t.kernel.componentwise.max)) << t.tensor;
  }
  EXPECT_NE(audit_markdown(r, "").find("| dsink | 4 |"), std::string::npos);

  const std::unique_ptr<Kernel> unscaled = make_kernel("mutant-backward-ds-unscaled");
  const AuditResult bad = run_audit(*unscaled, "mutant-backward-ds-unscaled", options);
  const GradientTensorAudit& dq = bad.points.front().gradients->tensors.front();
  EXPECT_GT(dq.bound.outside, 0u);
  EXPECT_FALSE(dq.within_gradrel);

  EXPECT_THROW(run_audit(*make_kernel("online-fp8"), "online-fp8", options), std::invalid_argument);
  options.sink.reset();
  options.descales = std::array<double, 3>{1, 1, 1};
  EXPECT_THROW(run_audit(*correct, "online-f32", options), std::invalid_argument);
}

TEST(Audit, KernelsWithoutAFeatureAreRefused) {
  const std::unique_ptr<Kernel> kernel = make_kernel("naive-f64");
  AuditOptions options;
  options.shape = Dims{1, 1, 1, 8, 8, 4, 4};
  Capabilities caps = kernel->capabilities();
  EXPECT_TRUE(missing_capabilities(caps, audit_positions(options.shape, options)).empty());
  options.window = Window{2, 0, Alignment::bottom_right};
  caps.window_bottom_right = false;
  EXPECT_EQ(missing_capabilities(caps, audit_positions(options.shape, options)),
            std::vector<std::string>{"needs a sliding window, bottom_right"});
  options.window.reset();
  options.sink = 0.0;
  caps.sinks = false;
  EXPECT_EQ(missing_capabilities(caps, audit_positions(options.shape, options)),
            std::vector<std::string>{"needs attention sinks"});
  options.sink.reset();
  options.descales = std::array<double, 3>{1, 1, 1};
  caps.descales = false;
  EXPECT_EQ(missing_capabilities(caps, audit_positions(options.shape, options)),
            std::vector<std::string>{"needs descale factors"});
}

TEST(Audit, SweepFitsAGrowthExponent) {
  const std::unique_ptr<Kernel> kernel = make_kernel("composed-f16");
  ASSERT_NE(kernel, nullptr);
  AuditOptions options;
  options.shape.q_len = 4, options.shape.kv_len = 256, options.shape.d_k = 8, options.shape.d_v = 8;
  options.sweep = SweepAxis::kv_len;
  const AuditResult r = run_audit(*kernel, "composed-f16", options);
  ASSERT_EQ(r.points.size(), 3u);  // 64, 128, 256
  EXPECT_EQ(r.points[0].shape.kv_len, 64);
  ASSERT_FALSE(r.fits.empty());
  EXPECT_TRUE(std::isfinite(r.fits.front().fit.exponent));
  EXPECT_EQ(r.fits.front().fit.points, 3u);
}

}  // namespace
}  // namespace attnspec
