// libtorch's backward (autograd through its math composition) as the
// Findings report it (README, finding 9): within its bound where every
// row sees a key, and NaN in every dK and dV of a head one of whose rows
// sees none. If a libtorch release changes the second, this test says so
// and the finding must be revised.
#include <gtest/gtest.h>

#include <cmath>

#include "adapters/registry.hpp"
#include "adapters/third_party.hpp"
#include "properties/gradient_check.hpp"
#include "problem_builder.hpp"

namespace attnspec {
namespace {

Problem two_rows(bool second_row_blind) {
  Problem p = testing::single_head({{0.5, -1}, {1, 0.25}}, {{1, 0}, {0, 1}, {-1, 2}}, {{1, 2}, {3, -1}, {0.5, 0.25}});
  p.mask_kind = MaskKind::boolean;
  p.mask = {1, 1, 1, 1, 0, 1};
  if (second_row_blind) p.mask = {1, 1, 1, 0, 0, 0};
  p.dout = {1, -2, 0.5, 0.75};
  return p;
}

TEST(LibtorchBackward, IsWithinItsBoundWhereEveryRowSeesAKey) {
  register_third_party_kernels();
  for (const char* name : {"libtorch-sdpa-f64", "libtorch-sdpa-f32"}) {
    const std::unique_ptr<Kernel> kernel = make_kernel(name);
    ASSERT_TRUE(kernel) << name;
    ASSERT_TRUE(kernel->capabilities().backward);
    const Problem p = two_rows(false);
    ErrorStats stats;
    EXPECT_EQ(gradients_outside_bound(p, evaluate_gradients(*kernel, p), kernel->formats().output, stats), "") << name;
  }
}

TEST(LibtorchBackward, ARowWithNoVisibleKeySpoilsEveryKeyGradientOfItsHead) {
  register_third_party_kernels();
  const std::unique_ptr<Kernel> kernel = make_kernel("libtorch-sdpa-f32");
  ASSERT_TRUE(kernel);
  const GradientOutputs g = kernel->run_backward(two_rows(true));
  EXPECT_TRUE(std::isnan(g.dq[2]) && std::isnan(g.dq[3]));    // the blind row's dQ
  EXPECT_FALSE(std::isnan(g.dq[0]) || std::isnan(g.dq[1]));  // the other row's
  for (double x : g.dk) EXPECT_TRUE(std::isnan(x));
  for (double x : g.dv) EXPECT_TRUE(std::isnan(x));
}

}  // namespace
}  // namespace attnspec
