// The runner end to end with a kernel that has a real bug (the mutant that
// scales by 1/sqrt(d_model), seed 000's warning): the clause fails, the shrunk
// counterexample is saved as a small case directory, and that case fails
// on its own against the certified reference, as `attnspec check` does it.
#include <gtest/gtest.h>
#include <gtest/gtest-spi.h>

#include <filesystem>
#include <unistd.h>

#include "adapters/online/online_kernel.hpp"
#include "adapters/registry.hpp"
#include "adapters/wrapped_kernel.hpp"
#include "cases/io/case_dir.hpp"
#include "properties/gtest_suite.hpp"
#include "properties/harness.hpp"
#include "properties/runner.hpp"

namespace attnspec {
namespace {

TEST(Runner, CatchesShrinksSavesAndReproduces) {
  const auto dir = std::filesystem::temp_directory_path() / ("attnspec_runner_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const std::unique_ptr<Kernel> mutant = make_kernel("mutant-scale-dmodel");
  Kernel& kernel = *mutant;
  RunOptions options;
  options.clauses = {"SCALE", "FULLMASK"};
  options.save_failures = dir;
  // How far shrinking gets in the default 10 s depends on the machine
  // (a sanitizer build on a slow CPU stopped at 7316 logits): this test
  // checks where it ends, so it gets the time to end.
  options.shrink_cpu_seconds = 300;
  const RunReport report = run_conformance(kernel, kernel.name(), options);
  ASSERT_EQ(report.results.size(), 2u);
  const ClauseReport& scale = report.results[0];
  EXPECT_EQ(scale.outcome.status, Status::fail);
  EXPECT_TRUE(report.failed());
  EXPECT_EQ(report.results[0].clause, "SCALE");
  EXPECT_EQ(report.results[1].outcome.status, Status::pass);  // fully masked rows are still exactly 0
  ASSERT_FALSE(scale.counterexample_dir.empty());
  EXPECT_NE(scale.reproduce.find("attnspec check"), std::string::npos);

  const Case saved = load_case(scale.counterexample_dir);
  const Dims& d = saved.problem.dims;
  EXPECT_LE(d.q_len * d.kv_len * d.d_k, 64) << "counterexample not shrunk";
  EXPECT_EQ(saved.provenance["clause"], "SCALE");
  ErrorStats stats;
  EXPECT_FALSE(outside_bound(saved.problem, evaluate(kernel, saved.problem), output_unit(kernel), stats).empty());

  const nlohmann::json json = report_json(report);
  EXPECT_EQ(json["format"], "attnspec-report/1");
  EXPECT_EQ(json["results"][0]["status"], "fail");
  EXPECT_EQ(json["results"][0]["counterexample"], scale.counterexample_dir);
  EXPECT_NE(report_junit(report).find("<failure"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(Runner, ShardsSplitTheClauses) {
  auto kernel = make_online_bf16();
  std::size_t total = 0;
  for (int shard = 0; shard < 3; ++shard) {
    RunOptions options;
    options.clauses = {"SCALE", "ROWSUM", "CONVEX", "FULLMASK", "GQA"};
    options.shard_index = shard;
    options.shard_count = 3;
    total += run_conformance(*kernel, "online-bf16", options).results.size();
  }
  EXPECT_EQ(total, 5u);
}

// A kernel wrong on two golden cases only (causal top-left rows and
// softcapped logits, each output off by 1): GOLDEN judges every case and
// names both, so the first failure cannot hide the second.
class WrongOnTwoGoldenCases final : public WrappedKernel {
 public:
  WrongOnTwoGoldenCases() : WrappedKernel(make_kernel("online-f32")) {}
  KernelResult run(const Problem& p) override {
    KernelResult r = WrappedKernel::run(p);
    if (p.causal == Causal::top_left || p.softcap)
      for (double& x : r.out) x += 1;
    return r;
  }
};

TEST(Runner, GoldenJudgesEveryCaseAndNamesEveryFailure) {
  WrongOnTwoGoldenCases kernel;
  RunOptions options;
  options.clauses = {"GOLDEN"};
  options.shrink = false;
  const ClauseReport r = run_conformance(kernel, "wrong-on-two", options).results.front();
  EXPECT_EQ(r.outcome.status, Status::fail);
  EXPECT_NE(r.outcome.reason.find("2 of "), std::string::npos) << r.outcome.reason;
  EXPECT_NE(r.outcome.reason.find("(causal_top_left, softcap)"), std::string::npos) << r.outcome.reason;
  EXPECT_NE(r.outcome.reason.find("first: causal_top_left: "), std::string::npos) << r.outcome.reason;
  EXPECT_GE(r.outcome.cases, 10);
}

// A kernel whose reduction order changes between calls: every other call
// moves its first output by one ulp. DETERM must be able to fail it inside
// a user's gtest binary (ATTNSPEC_CONFORMANCE_SUITE), not only print it.
class OneUlpEveryOtherCall final : public WrappedKernel {
 public:
  OneUlpEveryOtherCall() : WrappedKernel(make_kernel("online-f32")) {}
  KernelResult run(const Problem& p) override {
    KernelResult r = WrappedKernel::run(p);
    if (calls_++ % 2 == 1 && !r.out.empty())
      r.out[0] = static_cast<float>(std::nextafter(static_cast<float>(r.out[0]), INFINITY));
    return r;
  }

 private:
  int calls_ = 0;
};

void run_determ_in_gtest_suite() {
  testing::ClauseTest test([] { return std::make_unique<OneUlpEveryOtherCall>(); }, "DETERM");
  test.TestBody();
}

// The worst element is reported in units of u |P||V|: an element whose
// finite bound overflows in those units (|P||V| tiny, not tiny enough for
// the 1e-300 guard) is checked against its bound but never the worst, so
// a report never reads "of bound inf u" (a GQA run with ALiBi did, and
// its --jobs parent refused the worker's JSON).
TEST(ErrorStats, TheWorstElementHasFiniteUnits) {
  const double u = 0x1p-24;
  ErrorStats stats;
  stats.add(0.0, 1e12, 1e-290, u);  // 1e12 / (2^-24 1e-290) overflows
  EXPECT_EQ(stats.max_ratio, -1.0);
  EXPECT_EQ(stats.elements, 1u);
  stats.add(0x1p-30, 0x1p-20, 1.0, u);
  EXPECT_EQ(stats.max_error_u, 0x1p-6);
  EXPECT_EQ(stats.bound_u, 16.0);
  EXPECT_EQ(stats.max_ratio, 0x1p-10);
}

TEST(GtestSuite, DetermFailsUnderStrictDeterminism) {
  setenv("ATTNSPEC_STRICT_DETERMINISM", "1", 1);
  EXPECT_NONFATAL_FAILURE(run_determ_in_gtest_suite(), "DETERM");
  unsetenv("ATTNSPEC_STRICT_DETERMINISM");
}

TEST(GtestSuite, DetermIsInformativeByDefault) {
  unsetenv("ATTNSPEC_STRICT_DETERMINISM");
  ::testing::internal::CaptureStdout();
  run_determ_in_gtest_suite();  // no failure recorded: this test would fail otherwise
  const std::string printed = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(printed.find("[ informative ] DIFF  DETERM"), std::string::npos) << printed;
}

}  // namespace
}  // namespace attnspec
