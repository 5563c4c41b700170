// A built-in kernel that keeps every problem it is given: for the tests that
// check what the clauses draw and what the harness does with it.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "adapters/wrapped_kernel.hpp"

namespace attnspec::testing {

class RecordingKernel final : public WrappedKernel {
 public:
  using WrappedKernel::WrappedKernel;
  KernelResult run(const Problem& p) override {
    seen.push_back(p);
    return WrappedKernel::run(p);
  }
  std::vector<Problem> seen;
};

}  // namespace attnspec::testing
