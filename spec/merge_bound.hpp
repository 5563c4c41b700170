// The precision model of a kernel's merge operator (spec/SPEC.md section
// 6.10): for merge inputs (exact: they are the operator's inputs) and the
// operator's accumulation and output formats, the bound on the error of
// each merged output and of the merged lse. MERGE's tolerance.
#pragma once

#include <vector>

#include "formats/format.hpp"
#include "reference/merge.hpp"

namespace attnspec {

struct MergeRowBound {
  std::vector<double> out;  // M_t per output column; 0 for a row every part of which is empty (exact 0)
  double lse = 0;           // E_L; 0 for such a row (exactly -inf)
  std::vector<double> scale;  // sum_i a_i |o_i,t| per column: the |P||V| of the report's units (SPEC 6.7)
};

// Bounds for row `row` of `input`, evaluated in binary64 with the
// allowance of section 6.10 for that evaluation; infinite where the
// model gives none (Psi >= 1: an accumulation format too narrow for n
// parts and those lse).
MergeRowBound merge_row_bound(const MergeInput& input, int row, FormatId accumulate, FormatId output);

}  // namespace attnspec
