// The suite has teeth: every mutant kernel (adapters/mutants) is caught by
// its intended clause in the quick profile, the shrunk counterexample is
// small, and the saved case fails on its own as `attnspec check` runs it.
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
  EXPECT_FALSE((saved.merge    ? check_merge_against_reference(*kernel, saved.problem, stats)
                 : saved.layout ? check_layout_against_reference(*kernel, saved.problem, *saved.layout, stats)
                                : check_against_reference(*kernel, saved.problem, stats))
                   .empty())
      << "the saved counterexample does not reproduce on its own";
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
