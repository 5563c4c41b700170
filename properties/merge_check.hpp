// Judging a kernel's merge operator (spec/SPEC.md section 6.10): run it
// on a merge input, and compare each merged output and lse with the
// certified merge (the certified reference on the merge's attention form,
// reference/merge.hpp) within the bound of spec/merge_bound.hpp. MERGE,
// `attnspec check` on a case with "merge": true, and the mutant tests
// share it.
#pragma once

#include <string>

#include "adapters/kernel.hpp"
#include "properties/harness.hpp"
#include "reference/problem.hpp"

namespace attnspec {

// "" when the kernel's merge of `merge_problem` (a merge's attention form)
// is within its bounds, else the first output or lse that is not, with
// the row's parts. KernelUnsupported from the kernel propagates.
std::string check_merge_against_reference(Kernel& kernel, const Problem& merge_problem, ErrorStats& stats);

}  // namespace attnspec
