// The suite has teeth: every mutant kernel (adapters/mutants) is caught by
// its intended clause in the quick profile, the shrunk counterexample is
// small, and the saved case shows the bug as the mutant's witness says:
// it fails on its own as `attnspec check` runs it, differs between two
// calls, or (a bug between calls) passes alone.
#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

#include "adapters/mutants/mutants.hpp"
#include "cases/io/case_dir.hpp"
#include "properties/harness.hpp"
#include "properties/layout_check.hpp"
#include "properties/merge_check.hpp"
#include "properties/runner.hpp"

namespace attnspec {
namespace {

class Mutant : public ::testing::TestWithParam<MutantEntry> {};

TEST_P(Mutant, IsCaughtByItsClauseWithASmallCounterexample) {
  const MutantEntry& entry = GetParam();
  const std::unique_ptr<Kernel> kernel = entry.make();
  const auto dir = std::filesystem::temp_directory_path() / ("attnspec_mutant_" + std::to_string(::getpid()));
  RunOptions options;
  options.clauses = {std::string(entry.clause)};
  options.save_failures = dir;
  const RunReport report = run_conformance(*kernel, entry.name, options);
  ASSERT_EQ(report.results.size(), 1u);
  const ClauseReport& r = report.results.front();
  ASSERT_EQ(r.outcome.status, Status::fail) << entry.name << " escaped " << entry.clause;
  if (entry.witness == Witness::statistical) {  // VAR's fixed-seed test draws no case to save
    EXPECT_TRUE(r.counterexample_dir.empty());
    std::printf("  %s: caught by %s (%s)\n", std::string(entry.name).c_str(), std::string(entry.clause).c_str(),
                r.outcome.reason.c_str());
    return;
  }
  ASSERT_FALSE(r.counterexample_dir.empty());

  const Case saved = load_case(r.counterexample_dir);
  const Dims& d = saved.problem.dims;
  std::printf("  %s: caught by %s at case %d (%d cases judged); counterexample B=%d Hq=%d Hkv=%d L=%d S=%d d_k=%d d_v=%d\n",
              std::string(entry.name).c_str(), std::string(entry.clause).c_str(), r.outcome.first_failing_case,
              r.outcome.cases, d.batch, d.q_heads,
              d.kv_heads, d.q_len, d.kv_len, d.d_k, d.d_v);
  const Dims& largest = entry.largest;  // what the bug needs, no more
  EXPECT_LE(d.batch, largest.batch);
  EXPECT_LE(d.q_heads, largest.q_heads);
  EXPECT_LE(d.kv_heads, largest.kv_heads);
  EXPECT_LE(d.q_len, largest.q_len);
  EXPECT_LE(d.kv_len, largest.kv_len);
  EXPECT_LE(d.d_k, largest.d_k);
  EXPECT_LE(d.d_v, largest.d_v);
  ErrorStats stats;
  const std::unique_ptr<Kernel> fresh = entry.make();  // no earlier calls
  const auto fails_alone = [&] {
    return !(saved.merge    ? check_merge_against_reference(*fresh, saved.problem, stats)
             : saved.layout ? check_layout_against_reference(*fresh, saved.problem, *saved.layout, stats)
                            : check_against_reference(*fresh, saved.problem, stats))
                .empty();
  };
  switch (entry.witness) {
    case Witness::alone:
      EXPECT_TRUE(fails_alone()) << "the saved counterexample does not reproduce on its own";
      break;
    case Witness::after_an_earlier_call:
      EXPECT_FALSE(fails_alone()) << "a bug between calls, yet the saved case fails on its own";
      break;
    case Witness::repeated_calls:
      if (entry.clause == "GRADDETERM") {
        const GradientOutputs a = fresh->run_backward(saved.problem), b = fresh->run_backward(saved.problem);
        EXPECT_TRUE(a.dq != b.dq || a.dk != b.dk || a.dv != b.dv) << "two calls on the saved case agree";
      } else {
        EXPECT_NE(fresh->run(saved.problem).out, fresh->run(saved.problem).out) << "two calls on the saved case agree";
      }
      break;
    case Witness::statistical:
      break;
  }
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Catalogue, Mutant, ::testing::ValuesIn(mutant_kernels().begin(), mutant_kernels().end()),
                         [](const auto& info) {
                           std::string name(info.param.name);
                           for (char& c : name)
                             if (c == '-') c = '_';
                           return name;
                         });

}  // namespace
}  // namespace attnspec
