// The merge of split results (spec/SPEC.md section 6.10): its attention
// form round-trips and is certified as the closed forms say, the built-in
// merge operator is within its bound where merges break (large lse, empty
// parts, rows no part saw), and the bound is tight enough to fail an
// output moved by twice its size.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "adapters/merge/merge_states.hpp"
#include "adapters/naive/naive_kernel.hpp"
#include "adapters/online/online_kernel.hpp"
#include "properties/merge_check.hpp"
#include "reference/certified.hpp"
#include "reference/merge.hpp"
#include "spec/merge_bound.hpp"

namespace attnspec {
namespace {

// rows x parts x d_v, lse around `centre` (float32 values), some parts empty.
MergeInput random_merge(std::mt19937_64& random, int rows, int parts, int dv, double centre, double spread) {
  std::uniform_real_distribution<double> unit(-1, 1);
  MergeInput in{rows, parts, dv, {}, {}};
  for (int part = 0; part < parts; ++part)
    for (int row = 0; row < rows; ++row)
      in.lse.push_back(random() % 5 == 0 ? -INFINITY : round_to_format(centre + spread * unit(random), FormatId::float32));
  for (int part = 0; part < parts; ++part)
    for (int row = 0; row < rows; ++row)
      for (int t = 0; t < dv; ++t)
        in.out.push_back(in.lse[in.lse_index(part, row)] == -INFINITY ? 0.0 : round_to_format(unit(random), FormatId::float32));
  return in;
}

TEST(Merge, AttentionFormRoundTrips) {
  std::mt19937_64 random(3);
  const MergeInput in = random_merge(random, 3, 4, 5, 0, 10);
  EXPECT_EQ(merge_input_of(merge_as_attention(in)), in);
  MergeInput bad = in;
  bad.lse[0] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_NE(validate(bad), "");
  EXPECT_THROW(merge_as_attention(bad), std::invalid_argument);
}

// Two parts of equal lse: the average and lse + ln 2; one empty part: the
// other part unchanged; every part empty: 0 and -inf.
TEST(Merge, CertifiedMergeHasTheClosedForms) {
  const MergeInput in{3, 2, 1, {1, 7, 0, 3, 0, 0}, {0.5, 100, -INFINITY, 0.5, -INFINITY, -INFINITY}};
  const Problem p = merge_as_attention(in);
  ReferenceOptions options;
  options.weights = false;
  const RowResult equal = certified_row(p, {0, 0, 0}, options);
  EXPECT_EQ(equal.out[0], 2.0);
  EXPECT_EQ(equal.lse, round_to_format(std::log(2.0) + 0.5, FormatId::float64));
  const RowResult one_empty = certified_row(p, {1, 0, 0}, options);
  EXPECT_EQ(one_empty.out[0], 7.0);
  EXPECT_EQ(one_empty.lse, 100.0);
  const RowResult none = certified_row(p, {2, 0, 0}, options);
  EXPECT_EQ(none.out[0], 0.0);
  EXPECT_EQ(none.lse, -INFINITY);
  const MergeRowBound bound = merge_row_bound(in, 2, FormatId::float32, FormatId::float32);
  EXPECT_EQ(bound.out[0], 0.0);  // exact 0 required
}

// The built-in operators pass on every lse class MERGE draws, and their
// errors use some of the bound; an output moved by twice its bound fails.
TEST(Merge, BuiltInOperatorsAreWithinTheirBoundWhichIsNotVacuous) {
  std::mt19937_64 random(11);
  for (const auto& make : {make_online_f32, make_online_bf16, make_naive_f64, make_naive_f32}) {
    const std::unique_ptr<Kernel> kernel = make();
    for (const double centre : {0.0, 2000.0, -2000.0, 9000.0}) {
      for (int trial = 0; trial < 4; ++trial) {
        const MergeInput in = random_merge(random, 4, 1 + trial * 3, 16, centre, trial % 2 ? 30 : 3);
        ErrorStats stats;
        EXPECT_EQ(check_merge_against_reference(*kernel, merge_as_attention(in), stats), "")
            << kernel->name() << " centre " << centre;
        EXPECT_LT(stats.max_ratio, 1.0);
      }
    }
  }
  // A float32 merge moved by twice its bound on one output.
  const MergeInput in = random_merge(random, 1, 3, 4, 50, 2);
  const KernelFormats f32{FormatId::float32, FormatId::float32, FormatId::float32};
  const MergeRowBound bound = merge_row_bound(in, 0, f32.accumulate, f32.output);
  KernelResult moved = merge_states<float>(in, FormatId::float32);
  moved.out[0] += 2 * bound.out[0] + 0x1p-53 * std::fabs(moved.out[0]);
  ReferenceOptions options;
  options.weights = false;
  const RowResult exact = certified_row(merge_as_attention(in), {0, 0, 0}, options);
  EXPECT_GT(std::fabs(moved.out[0] - exact.out[0]), bound.out[0] + 0x1p-53 * std::fabs(exact.out[0]));
  // And the bound is within a small multiple of float32's rounding there:
  // lse near 50 costs ~4u|m| = 200u at most.
  EXPECT_LT(bound.out[0], 400 * 0x1p-24 * (bound.scale[0] + 1e-30) + 1e-40);
}

TEST(Merge, TheMergeMutantsFailAtTheirBug) {
  const MergeInput large{1, 2, 1, {1, 3}, {100, 99}};  // exp(100) overflows float32
  const MergeInput empty{1, 2, 1, {0, 0}, {-INFINITY, -INFINITY}};
  ErrorStats stats;
  const auto no_shift = make_online_f32_with_merge_bug("no-shift", MergeBug::no_max_shift);
  EXPECT_NE(check_merge_against_reference(*no_shift, merge_as_attention(large), stats), "");
  EXPECT_EQ(check_merge_against_reference(*no_shift, merge_as_attention(MergeInput{1, 2, 1, {1, 3}, {1, 2}}), stats), "");
  const auto empty_nan = make_online_f32_with_merge_bug("empty-nan", MergeBug::empty_split_nan);
  EXPECT_NE(check_merge_against_reference(*empty_nan, merge_as_attention(empty), stats), "");
  EXPECT_EQ(check_merge_against_reference(*empty_nan, merge_as_attention(large), stats), "");
}

}  // namespace
}  // namespace attnspec
