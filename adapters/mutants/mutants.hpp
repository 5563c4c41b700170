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

// The largest counterexample a bug needs when no tile boundary of a real
// kernel is involved, once shrinking has cut the shape down (properties/
// cuts.hpp): two batch entries (a layout bug), a GQA group of two kv heads
// with two query heads each, a few rows and head components, and keys
// enough for two 32-key tiles (a missing rescale needs a later tile with a
// larger maximum).
inline constexpr Dims kSmallCounterexample{2, 4, 2, 4, 40, 4, 4};

// What the saved counterexample shows on its own. Most bugs are in the
// function: the case fails `attnspec check` alone. Some law mutants' bugs
// are in how calls relate (adapters/mutants/law_mutants.cpp).
enum class Witness {
  alone,                  // the saved case fails against the reference on its own
  repeated_calls,         // the saved case, run twice, gives different bits
  statistical,            // none: the clause's fixed-seed statistical test
  after_an_earlier_call,  // the saved case passes alone: the bug needs the call before it
};

struct MutantEntry {
  std::string_view name;
  std::string_view bug;     // what is wrong, in one line
  std::string_view clause;  // the clause meant to catch it
  std::unique_ptr<Kernel> (*make)();
  // Each dimension of the shrunk counterexample is at most this: what the
  // bug needs (a tile-boundary bug needs a tile-sized shape).
  Dims largest = kSmallCounterexample;
  Witness witness = Witness::alone;
};

// Every mutant: the row and 32-key-tile ones (mutants.cpp), then the
// tile-boundary ones (tile_mutants.cpp), the layout ones
// (layout_mutants.cpp), the backward ones (backward_mutants.cpp) and the
// law ones (law_mutants.cpp).
std::span<const MutantEntry> mutant_kernels();
std::span<const MutantEntry> tile_mutant_kernels();
std::span<const MutantEntry> layout_mutant_kernels();  // layout_mutants.cpp: SPEC 2.5's layouts
std::span<const MutantEntry> backward_mutant_kernels();  // backward_mutants.cpp: SPEC 2.6's gradients
// Not a mutant and not registered: the mutants' row kernel, correct but
// for its weights rounded to `bits` significant bits (to nearest) before
// P V; 24 is a correct float32 kernel. The held-out kernel of the tight
// tier's sensitivity table (bench/weights_bits.cpp).
std::unique_ptr<Kernel> make_weights_rounded_kernel(int bits);

std::span<const MutantEntry> law_mutant_kernels();       // law_mutants.cpp: bugs PREC cannot see (SPEC 7.4)

}  // namespace attnspec
