// Case directories (attnspec-case/1, spec/SPEC.md §4): case.json plus q, k,
// v and mask arrays. Loading validates everything a case promises (fields,
// shapes, dtypes, representability) and fails with an InputError naming the
// file and field.
#pragma once

#include <filesystem>
#include <optional>
#include <nlohmann/json.hpp>

#include "formats/format.hpp"
#include "reference/layouts.hpp"
#include "reference/problem.hpp"

namespace attnspec {

struct Case {
  std::filesystem::path directory;
  FormatId dtype = FormatId::float64;
  Problem problem;
  nlohmann::json provenance = nlohmann::json::object();
  // How the problem is laid out for the kernel (spec/SPEC.md sections 2.5
  // and 4); nullopt: dense.
  std::optional<LayoutRecipe> layout;
  // The problem is a merge's input in its attention form (spec/SPEC.md
  // section 6.10, reference/merge.hpp): kernels run it through their merge
  // operator. "merge": true in case.json.
  bool merge = false;
};

Case load_case(const std::filesystem::path& directory);

// Writes case.json, q.npy, k.npy, v.npy and, when the problem has them,
// mask.npy, alibi_slopes.npy, sinks.npy, the three descale files and
// dout.npy (and "layout" or "merge" in case.json when it has one). Throws
// std::logic_error for descales already applied: a case holds the kernel's
// inputs, never the real ones.
void save_case(const Case& c, const std::filesystem::path& directory);

// The case.json fields of a problem's shape and options, as written by
// save_case: batch, q_heads, kv_heads, d_k, d_v, scale, softcap, causal,
// and window, alibi, sinks where it has them. Not q_len, kv_len, mask or
// descales, which the layouts of section 2.5 do not carry
// (adapters/process/packed_case.hpp writes these fields too).
nlohmann::json option_fields(const Problem& p);

// Shapes of the arrays, as NPY shape lists.
std::vector<std::size_t> out_shape(const Problem& p);  // [B, Hq, L, d_v]
std::vector<std::size_t> lse_shape(const Problem& p);  // [B, Hq, L]

}  // namespace attnspec
