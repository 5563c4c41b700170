// The clause table: one row per conformance clause (ID, title, kind, the
// kernel capabilities it needs). The runner, the report, the docs and the
// test that keeps SPEC.md and the registered properties in step all read
// this one table.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "adapters/kernel.hpp"

namespace attnspec {

enum class ClauseKind {
  semantic,     // an exact law of the function, checked within the precision model's bounds
  statistical,  // a fixed-seed statistical test with a stated confidence level
  precision,    // error against the certified reference
  golden,       // the bundled golden cases
  informative,  // reported, never fails the run unless asked to
};

std::string_view to_string(ClauseKind kind);

// Capabilities a clause needs; a kernel lacking one is SKIP for the clause.
enum Need : unsigned {
  kNeedsNothing = 0,
  kNeedsBoolMask = 1u << 0,
  kNeedsAdditiveMask = 1u << 1,
  kNeedsCausal = 1u << 2,  // either alignment
  kNeedsGqa = 1u << 3,
  kNeedsExplicitScale = 1u << 4,
  kNeedsSoftcap = 1u << 5,
  kNeedsLse = 1u << 6,
  kNeedsWindow = 1u << 7,  // either alignment
  kNeedsAlibi = 1u << 8,   // either alignment
  kNeedsSinks = 1u << 9,
  kNeedsDescales = 1u << 10,
  kNeedsMask = 1u << 11,  // bool or additive
  kNeedsVarlen = 1u << 12,
  kNeedsKvCache = 1u << 13,
  kNeedsPagedKvCache = 1u << 14,
  kNeedsMerge = 1u << 15,  // a merge operator (Capabilities::merge_partials)
  kNeedsBackward = 1u << 16,  // a backward pass (Capabilities::backward)
};

struct Clause {
  std::string_view id;
  std::string_view title;
  ClauseKind kind;
  unsigned needs;  // Need flags
};

std::span<const Clause> clause_table();
const Clause* find_clause(std::string_view id);

// Empty when the kernel has everything the clause needs, else the reason.
std::string skip_reason(const Clause& clause, const Capabilities& capabilities);

}  // namespace attnspec
