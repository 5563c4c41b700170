// GoogleTest integration: one line instantiates the whole conformance
// suite for a kernel inside a user's own gtest binary, one test per clause
// with the clause ID in the test name:
//
//   ATTNSPEC_CONFORMANCE_SUITE(MyKernel, [] { return std::make_unique<MyKernel>(); });
//
// gives MyKernel.SCALE, MyKernel.VAR, ... . ATTNSPEC_PROFILE (quick, ci,
// full) and ATTNSPEC_SEED pick the profile and seed; GoogleTest's own
// GTEST_TOTAL_SHARDS / GTEST_SHARD_INDEX shard the clauses. A clause the
// kernel lacks the capabilities for is reported with GTEST_SKIP. DETERM and
// GRADDETERM failures are printed as informative unless
// ATTNSPEC_STRICT_DETERMINISM is set (to anything but 0), which makes them
// fail the test, as `attnspec run --strict-determinism` does.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <memory>
#include <string>

#include "adapters/kernel.hpp"
#include "properties/registry.hpp"
#include "properties/runner.hpp"
#include "spec/clauses.hpp"

namespace attnspec::testing {

using KernelFactory = std::function<std::unique_ptr<Kernel>()>;

class ClauseTest : public ::testing::Test {
 public:
  ClauseTest(KernelFactory factory, std::string clause) : factory_(std::move(factory)), clause_(std::move(clause)) {}

  void TestBody() override {
    const std::unique_ptr<Kernel> kernel = factory_();
    RunOptions options;
    const char* profile = std::getenv("ATTNSPEC_PROFILE");
    options.profile = find_profile(profile ? profile : "quick");
    ASSERT_NE(options.profile, nullptr) << "ATTNSPEC_PROFILE must be one of " << profile_names();
    if (const char* seed = std::getenv("ATTNSPEC_SEED")) options.seed = std::strtoull(seed, nullptr, 10);
    const char* strict = std::getenv("ATTNSPEC_STRICT_DETERMINISM");
    options.strict_determinism = strict != nullptr && *strict != '\0' && std::string(strict) != "0";
    options.clauses = {clause_};
    const RunReport report = run_conformance(*kernel, kernel->name(), options);
    ASSERT_EQ(report.results.size(), 1u);
    const ClauseReport& r = report.results.front();
    RecordProperty("cases", r.outcome.cases);
    if (r.outcome.status == Status::skip) GTEST_SKIP() << r.outcome.reason;
    if (r.informative && r.outcome.status == Status::fail && !options.strict_determinism) {
      std::cout << "[ informative ] " << format_line(r) << "\n";
      return;
    }
    EXPECT_EQ(r.outcome.status, Status::pass) << format_line(r);
  }

 private:
  KernelFactory factory_;
  std::string clause_;
};

// Registers one test per clause; returns a value so it can run at static
// initialisation.
inline bool register_conformance_suite(const char* suite, const char* file, int line, KernelFactory factory) {
  for (const Clause& clause : clause_table()) {
    const std::string id(clause.id);
    ::testing::RegisterTest(suite, id.c_str(), nullptr, nullptr, file, line,
                            [factory, id]() -> ::testing::Test* { return new ClauseTest(factory, id); });
  }
  return true;
}

}  // namespace attnspec::testing

#define ATTNSPEC_CONFORMANCE_SUITE(suite_name, factory)                                                 \
  [[maybe_unused]] static const bool attnspec_conformance_registered_##suite_name =                    \
      ::attnspec::testing::register_conformance_suite(#suite_name, __FILE__, __LINE__, factory)
