// Packed cases (attnspec-packed/1, spec/SPEC.md section 8): how a process
// adapter receives the layouts of section 2.5 and a merge's input, as a
// serving kernel holds them (packed rows, offsets, a cache and its block
// table, partial outputs), rather than the dense arrays of attnspec-case/1.
// Each writer also says what shape the adapter's out.npy and lse.npy must
// have, and which of their elements belong to a sequence (varlen padding
// rows are not read).
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string_view>
#include <vector>

#include "formats/format.hpp"
#include "reference/layouts.hpp"
#include "reference/merge.hpp"

namespace attnspec {

inline constexpr std::string_view kPackedFormatTag = "attnspec-packed/1";

// What the run request's "kind" names, besides "dense" (attnspec-case/1).
enum class PackedKind { varlen, kv_cache, merge };
std::string_view to_string(PackedKind kind);  // "varlen", "kv_cache", "merge"

struct PackedOutputs {
  std::vector<std::size_t> out_shape;
  std::vector<std::size_t> lse_shape;
  // Whether flat index i of out.npy, or of lse.npy, is read (empty: all).
  std::function<bool(std::size_t)> out_read;
  std::function<bool(std::size_t)> lse_read;
};

// Each writes case.json and the arrays into `directory` (created; its
// previous contents are the caller's to remove). `dtype`: the adapter's
// input format (a merge's partial outputs are in `dtype` too: the kernel's
// merge_partials format).
PackedOutputs save_packed_case(const std::filesystem::path& directory, FormatId dtype, const VarlenBatch& batch);
PackedOutputs save_packed_case(const std::filesystem::path& directory, FormatId dtype, const KvCacheBatch& batch);
PackedOutputs save_packed_case(const std::filesystem::path& directory, FormatId dtype, const MergeInput& input);

}  // namespace attnspec
