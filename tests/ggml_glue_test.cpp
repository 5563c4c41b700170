// The ggml adapter proves its glue (issue 42): each deliberately wrong copy
// of adapters/ggml's mapping (GgmlGlueFault) fails the clause that guards
// it in the quick profile, and the right glue passes the same clauses, so
// the Findings' ggml PASSes cannot rest on a mapping bug. Runs on the first
// ggml CPU build this machine can run (haswell, else sse42, else x64).
#include <gtest/gtest.h>

#include <ostream>
#include <random>
#include <string>

#include "adapters/ggml/ggml_kernel.hpp"
#include "properties/harness.hpp"
#include "properties/runner.hpp"
#include "tests/problem_builder.hpp"

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

// ALiBi's mapping onto ggml's max_bias (adapters/ggml/alibi_slopes.hpp),
// checked on problems made for it beside the ALIBI case above: the ALiBi
// paper's slopes (max_bias 8), d = 64, both of ggml's paths (one row under
// 64 queries, the tiled path from 64), 16 heads too (ggml's slopes then
// miss the paper's by an ulp or two, and are judged), within the precision
// model's bounds (the largest error was 0.7% of its bound); distances from
// the top-left diagonal must leave them (they gave 900 and 1600 times the
// bound). F32 keys: with F16 keys the model's bounds for an F16
// accumulator are loose enough to hold that fault (24% and 87% of them).
struct AlibiShape {
  int q_heads, kv_heads, q_len, kv_len;
  bool causal;
};

// "" when every output is within its bound; the bound is finite where the
// logits are small, so Q, K and V are eighths in [-1, 1].
std::string alibi_outcome(GgmlGlueFault fault, AlibiShape shape) {
  std::mt19937_64 random(42);
  std::uniform_int_distribution<int> eighths(-8, 8);
  Dims dims;
  dims.q_heads = shape.q_heads;
  dims.kv_heads = shape.kv_heads;
  dims.q_len = shape.q_len;
  dims.kv_len = shape.kv_len;
  dims.d_k = dims.d_v = 64;
  Problem p = testing::random_problem(random, dims, FormatId::float16);
  for (auto* tensor : {&p.q, &p.k, &p.v})
    for (double& x : *tensor) x = eighths(random) / 8.0;
  p.alibi = Alibi{alibi_paper_slopes(shape.q_heads), false, Alignment::bottom_right};
  if (shape.causal) p.causal = Causal::bottom_right;
  const std::unique_ptr<Kernel> kernel = make_ggml_kernel(runnable_variant(), /*kv_f16=*/false, fault);
  ErrorStats stats;
  const std::string outcome = outside_bound(p, evaluate(*kernel, p), output_unit(*kernel), stats);
  EXPECT_GT(stats.elements, stats.unbounded) << "no element with a finite bound";
  return outcome;
}

TEST(GgmlAlibiMapping, ThePapersSlopesAreWithinTheBounds) {
  for (const AlibiShape shape : {AlibiShape{8, 2, 3, 40, false}, AlibiShape{8, 8, 80, 100, false},
                                 AlibiShape{8, 1, 70, 90, true}, AlibiShape{16, 2, 5, 60, false},
                                 AlibiShape{16, 4, 72, 72, true}})
    EXPECT_EQ(alibi_outcome(GgmlGlueFault::none, shape), "")
        << shape.q_heads << " heads, L " << shape.q_len << ", S " << shape.kv_len;
}

TEST(GgmlAlibiMapping, DistancesFromTheTopLeftDiagonalLeaveThem) {
  for (const AlibiShape shape : {AlibiShape{8, 2, 3, 40, false}, AlibiShape{8, 8, 80, 100, false}})
    EXPECT_NE(alibi_outcome(GgmlGlueFault::alibi_top_left, shape), "")
        << shape.q_heads << " heads, L " << shape.q_len << ", S " << shape.kv_len;
}

INSTANTIATE_TEST_SUITE_P(Faults, GgmlGlue,
                         ::testing::Values(GlueCase{GgmlGlueFault::dropped_scale, "SCALE", "dropped_scale"},
                                           GlueCase{GgmlGlueFault::inverted_bool_mask, "MASKBOOL", "inverted_bool_mask"},
                                           GlueCase{GgmlGlueFault::transposed_keys, "BATCH", "transposed_keys"},
                                           GlueCase{GgmlGlueFault::alibi_top_left, "ALIBI", "alibi_top_left"}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace attnspec
