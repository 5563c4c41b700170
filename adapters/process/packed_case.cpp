// Writing attnspec-packed/1 directories: case.json (the shared options in
// attnspec-case/1's field names, the offsets, lengths and block table as
// JSON integers) and the packed arrays as <f8 .npy files, places no
// sequence reads included as the layout holds them (NaN, typically).
#include "adapters/process/packed_case.hpp"

#include <nlohmann/json.hpp>

#include "cases/io/case_dir.hpp"
#include "cases/io/npy.hpp"

namespace attnspec {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::size_t extent(int n) { return static_cast<std::size_t>(n); }

json packed_header(PackedKind kind, FormatId dtype) {
  return {{"format", std::string(kPackedFormatTag)},
          {"kind", std::string(to_string(kind))},
          {"dtype", std::string(format_info(dtype).name)}};
}

// The shared options' fields and arrays (ALiBi slopes, sinks), as a dense
// case has them.
json write_shared(const fs::path& directory, const SharedOptions& shared) {
  const std::size_t B = extent(shared.dims.batch), Hq = extent(shared.dims.q_heads);
  if (shared.alibi)
    write_npy(directory / "alibi_slopes.npy",
              {NpyDtype::float64, shared.alibi->per_batch ? std::vector<std::size_t>{B, Hq} : std::vector<std::size_t>{Hq},
               shared.alibi->slopes});
  if (!shared.sinks.empty()) write_npy(directory / "sinks.npy", {NpyDtype::float64, {Hq}, shared.sinks});
  return option_fields(shared);
}

void write_json(const fs::path& path, const json& object) { write_file_atomically(path, object.dump(2) + "\n"); }

}  // namespace

std::string_view to_string(PackedKind kind) {
  switch (kind) {
    case PackedKind::varlen: return "varlen";
    case PackedKind::kv_cache: return "kv_cache";
    case PackedKind::merge: return "merge";
  }
  return "?";
}

PackedOutputs save_packed_case(const fs::path& directory, FormatId dtype, const VarlenBatch& batch) {
  fs::create_directories(directory);
  const Dims& d = batch.shared.dims;
  const std::size_t Hq = extent(d.q_heads), Hkv = extent(d.kv_heads), Dk = extent(d.d_k), Dv = extent(d.d_v),
                    q_rows = extent(batch.q_rows), k_rows = extent(batch.k_rows);
  write_npy(directory / "q.npy", {NpyDtype::float64, {q_rows, Hq, Dk}, batch.q});
  write_npy(directory / "k.npy", {NpyDtype::float64, {k_rows, Hkv, Dk}, batch.k});
  write_npy(directory / "v.npy", {NpyDtype::float64, {k_rows, Hkv, Dv}, batch.v});
  json object = write_shared(directory, batch.shared);
  object.update(packed_header(PackedKind::varlen, dtype));
  object["cu_seqlens_q"] = batch.cu_seqlens_q;
  object["cu_seqlens_k"] = batch.cu_seqlens_k;
  write_json(directory / "case.json", object);
  // Rows past the last sequence are padding: not read.
  const std::size_t used_rows = extent(batch.cu_seqlens_q.back());
  return {{q_rows, Hq, Dv}, {Hq, q_rows}, [=](std::size_t i) { return i / (Hq * Dv) < used_rows; },
          [=](std::size_t i) { return i % q_rows < used_rows; }};
}

PackedOutputs save_packed_case(const fs::path& directory, FormatId dtype, const KvCacheBatch& batch) {
  fs::create_directories(directory);
  const Dims& d = batch.shared.dims;
  const std::size_t B = extent(d.batch), L = extent(d.q_len), Hq = extent(d.q_heads), Hkv = extent(d.kv_heads),
                    Dk = extent(d.d_k), Dv = extent(d.d_v), n = extent(batch.new_len);
  // The cache's leading dimensions: [B, slots] or [pages, page_size].
  const std::size_t outer = batch.paged() ? extent(batch.pages) : B,
                    inner = batch.paged() ? extent(batch.page_size) : extent(batch.slots);
  write_npy(directory / "q.npy", {NpyDtype::float64, {B, L, Hq, Dk}, batch.q});
  write_npy(directory / "k_cache.npy", {NpyDtype::float64, {outer, inner, Hkv, Dk}, batch.k_cache});
  write_npy(directory / "v_cache.npy", {NpyDtype::float64, {outer, inner, Hkv, Dv}, batch.v_cache});
  write_npy(directory / "k_new.npy", {NpyDtype::float64, {B, n, Hkv, Dk}, batch.k_new});
  write_npy(directory / "v_new.npy", {NpyDtype::float64, {B, n, Hkv, Dv}, batch.v_new});
  json object = write_shared(directory, batch.shared);
  object.update(packed_header(PackedKind::kv_cache, dtype));
  object["q_len"] = d.q_len;
  object["cache_seqlens"] = batch.cache_seqlens;
  object["new_len"] = batch.new_len;
  if (batch.paged()) {
    object["page_size"] = batch.page_size;
    json table = json::array();
    for (std::size_t b = 0; b < B; ++b) {
      const auto row = batch.block_table.begin() + static_cast<std::ptrdiff_t>(b * extent(batch.pages_per_sequence));
      table.push_back(std::vector<int>(row, row + batch.pages_per_sequence));
    }
    object["block_table"] = table;
  } else {
    object["page_size"] = nullptr;
  }
  write_json(directory / "case.json", object);
  return {{B, L, Hq, Dv}, {B, Hq, L}, {}, {}};
}

PackedOutputs save_packed_case(const fs::path& directory, FormatId dtype, const MergeInput& input) {
  fs::create_directories(directory);
  const std::size_t parts = extent(input.parts), rows = extent(input.rows), Dv = extent(input.d_v);
  write_npy(directory / "out_parts.npy", {NpyDtype::float64, {parts, rows, Dv}, input.out});
  write_npy(directory / "lse_parts.npy", {NpyDtype::float64, {parts, rows}, input.lse});
  json object = packed_header(PackedKind::merge, dtype);
  object["parts"] = input.parts;
  object["rows"] = input.rows;
  object["d_v"] = input.d_v;
  write_json(directory / "case.json", object);
  return {{rows, Dv}, {rows}, {}, {}};
}

}  // namespace attnspec
