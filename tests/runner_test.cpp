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
  // The same failures as labels a script compares (expected/).
  EXPECT_EQ(r.outcome.signatures, (std::vector<std::string>{"golden:causal_top_left", "golden:softcap"}));
  EXPECT_EQ(report_json(run_conformance(kernel, "wrong-on-two", options))["results"][0]["signatures"],
            nlohmann::json({"golden:causal_top_left", "golden:softcap"}));
}

// A kernel wrong on every tile-sized problem only (each output off by 1).
class WrongOnTileProblems final : public WrappedKernel {
 public:
  WrongOnTileProblems() : WrappedKernel(make_kernel("online-f32")) {}
  KernelResult run(const Problem& p) override {
    KernelResult r = WrappedKernel::run(p);
    if (classify_shape(p.dims) == ShapeClass::tile)
      for (double& x : r.out) x += 1;
    return r;
  }
};

// A failing clause judges every drawn case, not only those up to its
// first failure: it counts the failing ones and names their shape classes,
// and it draws the same problems a passing kernel gets (the second search
// replays the first one's draws), so the counts are of the same run.
TEST(Runner, AFailingClauseJudgesEveryDrawnCase) {
  RunOptions options;
  options.clauses = {"PREC"};
  options.shrink = false;
  WrongOnTileProblems wrong;
  const ClauseReport failing = run_conformance(wrong, "wrong-on-tiles", options).results.front();
  const auto right = make_kernel("online-f32");
  const ClauseReport passing = run_conformance(*right, "online-f32", options).results.front();
  ASSERT_EQ(passing.outcome.status, Status::pass) << passing.outcome.reason;
  ASSERT_EQ(failing.outcome.status, Status::fail);
  EXPECT_EQ(failing.outcome.cases, passing.outcome.cases);
  EXPECT_EQ(failing.outcome.judged_by_shape, passing.outcome.judged_by_shape);
  const int tiles = passing.outcome.judged_by_shape[static_cast<std::size_t>(ShapeClass::tile)];
  ASSERT_GT(tiles, 0);
  const std::string count = std::to_string(tiles) + " of " + std::to_string(passing.outcome.cases) +
                            " judged drawn case(s) fail (tile " + std::to_string(tiles) + ")";
  EXPECT_NE(failing.outcome.reason.find(count), std::string::npos) << failing.outcome.reason;
  EXPECT_EQ(failing.outcome.signatures, std::vector<std::string>{"shape:tile"});
  EXPECT_GE(failing.outcome.first_failing_case, 1);
  EXPECT_LE(failing.outcome.first_failing_case, failing.outcome.cases);
  EXPECT_EQ(passing.outcome.first_failing_case, 0);
}

// A kernel whose machinery fails on every third call (a process adapter
// that crashes now and then): the lost cases fail the clause, the others
// are still judged, and the report labels the failure "faults".
class FaultsEveryThirdCall final : public WrappedKernel {
 public:
  FaultsEveryThirdCall() : WrappedKernel(make_kernel("online-f32")) {}
  KernelResult run(const Problem& p) override {
    if (calls_++ % 3 == 2) throw KernelFault("adapter crashed (simulated)");
    return WrappedKernel::run(p);
  }

 private:
  int calls_ = 0;
};

TEST(Runner, LostCasesFailTheClauseAndAreLabelledFaults) {
  FaultsEveryThirdCall kernel;
  RunOptions options;
  options.clauses = {"SCALE", "GOLDEN"};
  options.shrink = false;
  for (const ClauseReport& r : run_conformance(kernel, "faults-every-third-call", options).results) {
    EXPECT_EQ(r.outcome.status, Status::fail) << r.clause;
    EXPECT_NE(r.outcome.reason.find("lost to kernel faults"), std::string::npos) << r.clause << ": " << r.outcome.reason;
    EXPECT_GT(r.outcome.cases, 0) << r.clause;  // the other cases were judged
    EXPECT_EQ(r.outcome.signatures, std::vector<std::string>{"faults"}) << r.clause;
  }
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

// The backward's determinism, with the mutant whose keys' gradients are
// accumulated in another order on every other call (atomics).
void run_graddeterm_in_gtest_suite() {
  testing::ClauseTest test([] { return make_kernel("mutant-backward-order-per-call"); }, "GRADDETERM");
  test.TestBody();
}

TEST(GtestSuite, GradDetermFailsUnderStrictDeterminism) {
  setenv("ATTNSPEC_STRICT_DETERMINISM", "1", 1);
  EXPECT_NONFATAL_FAILURE(run_graddeterm_in_gtest_suite(), "GRADDETERM");
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
