// The merge of split results (spec/SPEC.md sections 6.9 and 6.10): n
// partial outputs and their log-sum-exp, per row, merged into the row over
// the union of the parts' keys. The merge is itself an attention row, with
// the parts' lse as logits and their outputs as values, so the certified
// reference of section 5 certifies it unchanged: merge_as_attention.
#pragma once

#include <string>
#include <vector>

#include "reference/problem.hpp"

namespace attnspec {

// What a merge operator takes (vLLM's merge_attn_states for two parts,
// FlashAttention's combine for any number).
struct MergeInput {
  int rows = 0;   // rows merged independently (batch x heads x queries)
  int parts = 0;  // n, at least 1
  int d_v = 0;
  std::vector<double> out;  // [parts, rows, d_v]
  // [parts, rows]: finite, or -inf where the part has no visible key for
  // the row (its outputs are then 0).
  std::vector<double> lse;
  bool operator==(const MergeInput&) const = default;

  std::size_t out_index(int part, int row, int t) const {
    return (static_cast<std::size_t>(part) * static_cast<std::size_t>(rows) + static_cast<std::size_t>(row)) *
               static_cast<std::size_t>(d_v) + static_cast<std::size_t>(t);
  }
  std::size_t lse_index(int part, int row) const {
    return static_cast<std::size_t>(part) * static_cast<std::size_t>(rows) + static_cast<std::size_t>(row);
  }
};

// What is wrong with the input ("" when nothing): sizes, NaN or +inf lse,
// non-finite outputs, an empty part's outputs not 0.
std::string validate(const MergeInput& input);

// The merge as attention (section 6.10): one batch entry per row, one head,
// one query of value 1, one key per part with the part's lse as its only
// component and the part's outputs as its value, scale 1, and a bool mask
// blocking the parts with lse -inf. Its output and lse are the merge's.
Problem merge_as_attention(const MergeInput& input);

// The inverse, for problems of that form (std::invalid_argument otherwise).
MergeInput merge_input_of(const Problem& p);

}  // namespace attnspec
