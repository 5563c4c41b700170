// The ggml adapter proves its glue (issue 42): each deliberately wrong copy
// of adapters/ggml's mapping (GgmlGlueFault) fails the clause that guards
// it in the quick profile, and the right glue passes the same clauses, so
// the Findings' ggml PASSes cannot rest on a mapping bug. Runs on the first
// ggml CPU build this machine can run (haswell, else sse42, else x64).
#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "adapters/ggml/ggml_kernel.hpp"
#include "properties/runner.hpp"

namespace attnspec {
namespace {

std::string runnable_variant() {
  for (const char* variant : {"haswell", "sse42", "x64"}) {
    for (const KernelEntry& entry : ggml_kernels()) {
      if (entry.name == "ggml-" + std::string(variant) + "-kv-f16" && entry.platform().unavailable.empty())
        return variant;
    }
  }
  return "";
}

struct GlueCase {
  GgmlGlueFault fault;
  const char* clause;
  const char* name;
};

// The fault's name, not its bytes, in test listings.
void PrintTo(const GlueCase& c, std::ostream* os) { *os << c.name; }

class GgmlGlue : public ::testing::TestWithParam<GlueCase> {};

Status clause_status(GgmlGlueFault fault, const std::string& clause) {
  const std::string variant = runnable_variant();
  EXPECT_FALSE(variant.empty()) << "no ggml CPU build runs on this machine";
  const std::unique_ptr<Kernel> kernel = make_ggml_kernel(variant, /*kv_f16=*/true, fault);
  RunOptions options;
  options.clauses = {clause};
  const RunReport report = run_conformance(*kernel, kernel->name(), options);
  EXPECT_EQ(report.results.size(), 1u);
  return report.results.empty() ? Status::skip : report.results.front().outcome.status;
}

TEST_P(GgmlGlue, WrongCopyFailsItsClause) {
  const GlueCase& c = GetParam();
  EXPECT_EQ(clause_status(c.fault, c.clause), Status::fail) << c.name << " escaped " << c.clause;
}

TEST_P(GgmlGlue, RightGluePassesTheSameClause) {
  const GlueCase& c = GetParam();
  EXPECT_EQ(clause_status(GgmlGlueFault::none, c.clause), Status::pass) << c.clause;
}

INSTANTIATE_TEST_SUITE_P(Faults, GgmlGlue,
                         ::testing::Values(GlueCase{GgmlGlueFault::dropped_scale, "SCALE", "dropped_scale"},
                                           GlueCase{GgmlGlueFault::inverted_bool_mask, "MASKBOOL", "inverted_bool_mask"},
                                           GlueCase{GgmlGlueFault::transposed_keys, "BATCH", "transposed_keys"}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace attnspec
