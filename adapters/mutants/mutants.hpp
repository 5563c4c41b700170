// Deliberately broken kernels: each computes attention in float32 the way
// a real implementation did, with one bug of a class found in real attention
// code (shared/ANCHORS.md), and declares the capabilities of a correct
// kernel. They prove the suite has teeth: tests/mutants_test.cpp asserts
// each is caught by its intended clause with a small counterexample.
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "adapters/kernel.hpp"

namespace attnspec {

struct MutantEntry {
  std::string_view name;
  std::string_view bug;     // what is wrong, in one line
  std::string_view clause;  // the clause meant to catch it
  std::unique_ptr<Kernel> (*make)();
};

std::span<const MutantEntry> mutant_kernels();

}  // namespace attnspec
