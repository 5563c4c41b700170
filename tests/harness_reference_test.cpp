// The harness judges kernels against the fast reference's enclosures and
// takes a row from the multiprecision path only where an enclosure leaves
// a verdict open (properties/harness.hpp). This test checks that the two
// paths give the same verdict on a fixed problem set: the problems PREC
// draws in the quick profile at seed 1 (small, tile-sized, softcapped,
// masked, non-finite), for correct kernels and for mutants that fail,
// float64 ones too (whose verdicts the extended rung settles).
#include <gtest/gtest.h>

#include <cstdio>

#include "adapters/mutants/mutants.hpp"
#include "adapters/registry.hpp"
#include "properties/harness.hpp"
#include "properties/runner.hpp"
#include "recording_kernel.hpp"

namespace attnspec {
namespace {

using testing::RecordingKernel;

std::vector<Problem> problem_set() {
  RecordingKernel recorder(make_kernel("online-f32"));
  RunOptions options;
  options.clauses = {"PREC", "NANPROP", "SOFTCAP"};
  run_conformance(recorder, "online-f32", options);
  // The multiprecision path is the slow one: problems up to 2^16
  // multiply-adds (tile-sized lengths or head dimensions, not both).
  std::vector<Problem> kept;
  for (const Problem& p : recorder.seen) {
    const Dims& d = p.dims;
    const double work = static_cast<double>(p.rows()) * d.kv_len * (d.d_k + d.d_v);
    if (work <= 1 << 16) kept.push_back(p);
  }
  return kept;
}

// A float64 kernel off by a relative 2^-47 (64 ulps) at every output: its
// verdicts lie near its bounds of a few tens of ulps, where the double
// enclosures cannot decide and the extended rung must.
class OffByUlps final : public WrappedKernel {
 public:
  OffByUlps() : WrappedKernel(make_kernel("naive-f64")) {}
  std::string name() const override { return "naive-f64 x (1 + 2^-47)"; }
  KernelResult run(const Problem& p) override {
    KernelResult r = WrappedKernel::run(p);
    for (double& x : r.out) x *= 1 + 0x1p-47;
    return r;
  }
};

struct Verdict {
  bool outputs_within = false;
  bool lse_within = false;
};

std::size_t extended_rows = 0;  // rows the extended rung settled, over the test

Verdict judge(Kernel& kernel, const Problem& p, ReferencePath path) {
  const Evaluation e = evaluate(kernel, p, FullyMaskedRows::as_declared, path);
  extended_rows += e.extended_rows;
  ErrorStats stats;
  Verdict v;
  v.outputs_within = outside_bound(p, e, output_unit(kernel), stats).empty();
  v.lse_within = true;
  for (std::size_t row = 0; row < p.rows() && kernel.capabilities().lse; ++row) {
    const double want = e.ref.lse[row];
    if (std::isnan(want) || want == -INFINITY) continue;
    v.lse_within = v.lse_within && within_bound(e.got.lse[row], want, e.ref_lse_error[row], e.lse_bound[row]).value_or(false);
  }
  return v;
}

// Whether some output's error against the float64-rounded exact result
// lies within an ulp of that result of its bound.
bool within_an_ulp_of_a_bound(Kernel& kernel, const Problem& p) {
  const Evaluation e = evaluate(kernel, p, FullyMaskedRows::as_declared, ReferencePath::multiprecision);
  for (std::size_t i = 0; i < e.bound.size(); ++i)
    if (std::fabs(std::fabs(e.got.out[i] - e.ref.out[i]) - e.bound[i]) <= 0x1p-52 * std::fabs(e.ref.out[i])) return true;
  return false;
}

TEST(HarnessReference, FastAndMultiprecisionPathsGiveTheSameVerdicts) {
  const std::vector<Problem> problems = problem_set();
  ASSERT_GE(problems.size(), 80u);
  std::vector<std::unique_ptr<Kernel>> kernels;
  for (const char* name : {"online-f32", "online-bf16", "naive-f64"}) kernels.push_back(make_kernel(name));
  kernels.push_back(std::make_unique<OffByUlps>());
  for (const MutantEntry& m : mutant_kernels())
    if (m.name == "mutant-weights-bf16" || m.name == "mutant-values-bf16") kernels.push_back(m.make());
  int outside = 0, judged = 0, at_the_edge = 0;
  for (const auto& kernel : kernels)
    for (const Problem& p : problems) {
      const Verdict fast = judge(*kernel, p, ReferencePath::fast);
      const Verdict exact = judge(*kernel, p, ReferencePath::multiprecision);
      // The multiprecision path's reference is the exact value rounded to
      // float64, and the bound allows for that rounding (SPEC 6.5); the
      // fast path compares with the exact value itself. So an error within
      // an ulp of the bound may be judged either way, and nothing else.
      if (fast.outputs_within != exact.outputs_within && within_an_ulp_of_a_bound(*kernel, p)) {
        ++at_the_edge;
        continue;
      }
      EXPECT_EQ(fast.outputs_within, exact.outputs_within) << kernel->name();
      EXPECT_EQ(fast.lse_within, exact.lse_within) << kernel->name();
      outside += !exact.outputs_within;
      ++judged;
    }
  std::printf("  %d verdicts, %d of them outside the bound, equal on both paths but %d within an ulp of a bound; "
              "%zu rows settled on the extended rung\n",
              judged, outside, at_the_edge, extended_rows);
  EXPECT_LE(at_the_edge, 2);  // the edge is an ulp wide: rare
  EXPECT_GT(outside, 20);  // the set has failing verdicts to agree on, not only passes
  EXPECT_GT(extended_rows, 0u);  // and the extended rung took part
}

}  // namespace
}  // namespace attnspec
