// attnspec-packed/1 (adapters/process/packed_case.hpp): what a process
// adapter receives for the layouts and the merge. The files hold the
// layout's arrays as they are (padding NaN included), case.json's fields
// are exactly those the JSON Schema lists, the hello's layout capabilities
// parse strictly, and the output shapes and read masks are the layout's.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "adapters/process/packed_case.hpp"
#include "adapters/process/protocol.hpp"
#include "cases/io/npy.hpp"
#include "problem_builder.hpp"
#include "scratch_test.hpp"

namespace attnspec {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::error_of;

json read_json(const fs::path& path) {
  std::ifstream in(path);
  return json::parse(in);
}

// Two sequences with every shared option a layout carries.
Problem dense_with_options() {
  std::mt19937_64 random(7);
  Problem p = testing::random_problem(random, Dims{2, 2, 1, 3, 5, 4, 3}, FormatId::float32);
  p.causal = Causal::bottom_right;
  p.window = Window{2, 0, Alignment::bottom_right};
  p.alibi = Alibi{{0.5, 0.25, 0.125, 0.0625}, true, Alignment::bottom_right};
  p.sinks = {1.0, -INFINITY};
  p.softcap = 4.0;
  return p;
}

class PackedCase : public testing::ScratchTest {};

TEST_F(PackedCase, VarlenHoldsThePackedRowsAndOffsets) {
  const Problem dense = dense_with_options();
  const std::vector<SequenceLengths> lengths = {{3, 5}, {0, 2}};
  const VarlenBatch batch = pack_varlen(dense, lengths, 2, 1, NAN);
  const PackedOutputs outputs = save_packed_case(dir_, FormatId::float32, batch);
  const json c = read_json(dir_ / "case.json");
  EXPECT_EQ(c["format"], "attnspec-packed/1");
  EXPECT_EQ(c["kind"], "varlen");
  EXPECT_EQ(c["dtype"], "float32");
  EXPECT_EQ(c["cu_seqlens_q"], json({0, 3, 3}));
  EXPECT_EQ(c["cu_seqlens_k"], json({0, 5, 7}));
  EXPECT_EQ(c["causal"], "bottom_right");
  EXPECT_EQ(c["softcap"], 4.0);
  EXPECT_EQ(c["sinks"], true);
  const NpyArray q = read_npy(dir_ / "q.npy");
  EXPECT_EQ(q.shape, (std::vector<std::size_t>{5, 2, 4}));  // 3 rows and 2 of padding
  for (std::size_t i = 0; i < batch.q.size(); ++i)
    EXPECT_TRUE(q.values[i] == batch.q[i] || (std::isnan(q.values[i]) && std::isnan(batch.q[i]))) << i;
  EXPECT_TRUE(std::isnan(q.values.back()));  // padding as the layout holds it
  EXPECT_EQ(read_npy(dir_ / "alibi_slopes.npy").shape, (std::vector<std::size_t>{2, 2}));
  EXPECT_EQ(read_npy(dir_ / "sinks.npy").values[1], -INFINITY);
  EXPECT_EQ(outputs.out_shape, (std::vector<std::size_t>{5, 2, 3}));
  EXPECT_EQ(outputs.lse_shape, (std::vector<std::size_t>{2, 5}));
  // Rows 0-2 are read, padding rows 3-4 are not.
  EXPECT_TRUE(outputs.out_read(2 * 2 * 3 + 5));
  EXPECT_FALSE(outputs.out_read(3 * 2 * 3));
  EXPECT_TRUE(outputs.lse_read(1 * 5 + 2));
  EXPECT_FALSE(outputs.lse_read(1 * 5 + 3));
}

TEST_F(PackedCase, KvCachesHoldTheCacheTheNewKeysAndTheBlockTable) {
  Problem dense = dense_with_options();
  const std::vector<int> kv_lens = {5, 2};
  const KvCacheBatch contiguous = pack_kv_cache(dense, kv_lens, 1, CacheLayout{0, 1, 0, {}}, NAN);
  save_packed_case(dir_ / "contiguous", FormatId::float32, contiguous);
  json c = read_json(dir_ / "contiguous" / "case.json");
  EXPECT_EQ(c["kind"], "kv_cache");
  EXPECT_EQ(c["cache_seqlens"], json({4, 1}));
  EXPECT_EQ(c["new_len"], 1);
  EXPECT_EQ(c["q_len"], 3);
  EXPECT_TRUE(c["page_size"].is_null());
  EXPECT_FALSE(c.contains("block_table"));
  EXPECT_EQ(read_npy(dir_ / "contiguous" / "k_cache.npy").shape,
            (std::vector<std::size_t>{2, static_cast<std::size_t>(contiguous.slots), 1, 4}));
  EXPECT_EQ(read_npy(dir_ / "contiguous" / "v_new.npy").shape, (std::vector<std::size_t>{2, 1, 1, 3}));

  const KvCacheBatch paged = pack_kv_cache(dense, kv_lens, 0, CacheLayout{2, 0, 1, {3, 1, 0, 4, 2}}, NAN);
  const PackedOutputs outputs = save_packed_case(dir_ / "paged", FormatId::float32, paged);
  c = read_json(dir_ / "paged" / "case.json");
  EXPECT_EQ(c["page_size"], 2);
  ASSERT_EQ(c["block_table"].size(), 2u);
  for (int b = 0; b < 2; ++b)
    for (int n = 0; n < paged.pages_per_sequence; ++n)
      EXPECT_EQ(c["block_table"][b][n], paged.block_table[static_cast<std::size_t>(b * paged.pages_per_sequence + n)]);
  EXPECT_EQ(read_npy(dir_ / "paged" / "k_cache.npy").shape,
            (std::vector<std::size_t>{static_cast<std::size_t>(paged.pages), 2, 1, 4}));
  EXPECT_EQ(read_npy(dir_ / "paged" / "k_new.npy").shape, (std::vector<std::size_t>{2, 0, 1, 4}));
  EXPECT_EQ(outputs.out_shape, (std::vector<std::size_t>{2, 3, 2, 3}));
  EXPECT_EQ(outputs.lse_shape, (std::vector<std::size_t>{2, 2, 3}));
}

TEST_F(PackedCase, MergeHoldsThePartsAndTheirLse) {
  const MergeInput input{2, 3, 1, {1, 2, 3, 4, 0, 6}, {0.5, -1, 2, 0.25, -INFINITY, 3}};
  const PackedOutputs outputs = save_packed_case(dir_, FormatId::bfloat16, input);
  const json c = read_json(dir_ / "case.json");
  EXPECT_EQ(c["kind"], "merge");
  EXPECT_EQ(c["dtype"], "bfloat16");
  EXPECT_EQ(c["parts"], 3);
  EXPECT_EQ(c["rows"], 2);
  const NpyArray lse = read_npy(dir_ / "lse_parts.npy");
  EXPECT_EQ(lse.shape, (std::vector<std::size_t>{3, 2}));
  EXPECT_EQ(lse.values[4], -INFINITY);
  EXPECT_EQ(read_npy(dir_ / "out_parts.npy").shape, (std::vector<std::size_t>{3, 2, 1}));
  EXPECT_EQ(outputs.out_shape, (std::vector<std::size_t>{2, 1}));
  EXPECT_EQ(outputs.lse_shape, (std::vector<std::size_t>{2}));
}

// What the writers put in case.json is what the schema's packed_case
// lists, field for field, so adapter authors can trust the schema.
TEST_F(PackedCase, FieldsAreThoseOfTheSchema) {
  std::ifstream in(fs::path(ATTNSPEC_SOURCE_DIR) / "adapters/process/attnspec-process-1.schema.json");
  const json schema = json::parse(in);
  std::set<std::string> in_schema, written;
  for (const auto& [key, value] : schema["$defs"]["packed_case"]["properties"].items()) in_schema.insert(key);
  const Problem dense = dense_with_options();
  const std::vector<SequenceLengths> lengths = {{3, 5}, {1, 2}};
  save_packed_case(dir_ / "a", FormatId::float32, pack_varlen(dense, lengths, 0, 0, NAN));
  const std::vector<int> kv_lens = {5, 2};
  save_packed_case(dir_ / "b", FormatId::float32, pack_kv_cache(dense, kv_lens, 1, CacheLayout{2, 0, 0, {}}, NAN));
  save_packed_case(dir_ / "c", FormatId::float32, MergeInput{1, 1, 1, {1}, {0}});
  for (const char* name : {"a", "b", "c"}) {
    const json written_case = read_json(dir_ / name / "case.json");
    for (const auto& [key, value] : written_case.items()) written.insert(key);
  }
  EXPECT_EQ(written, in_schema);
  std::set<std::string> kinds;
  for (const auto& kind : schema["$defs"]["run_request"]["properties"]["kind"]["enum"]) kinds.insert(kind.get<std::string>());
  EXPECT_EQ(kinds, (std::set<std::string>{std::string(to_string(PackedKind::varlen)), std::string(to_string(PackedKind::kv_cache)),
                                          std::string(to_string(PackedKind::merge)), std::string(kBackwardKind)}));
}

TEST(ProcessProtocolLayouts, HelloDeclaresLayoutsAndAMergeFormat) {
  json reply = json::parse(R"({"protocol": 1, "name": "x",
      "formats": {"input": "float16", "accumulate": "float32", "output": "float16"},
      "capabilities": {"lse": true, "varlen": true, "paged_kv_cache": true, "merge_partials": "float32"}})");
  const AdapterInfo info = parse_hello_reply(reply.dump());
  EXPECT_TRUE(info.capabilities.varlen);
  EXPECT_FALSE(info.capabilities.kv_cache);
  EXPECT_TRUE(info.capabilities.paged_kv_cache);
  EXPECT_EQ(info.capabilities.merge_partials, FormatId::float32);
  reply["capabilities"]["merge_partials"] = true;
  EXPECT_NE(error_of([&] { parse_hello_reply(reply.dump()); }).find("capabilities.merge_partials"), std::string::npos);
  reply["capabilities"]["merge_partials"] = "float32";
  reply["capabilities"]["varlen"] = "yes";
  EXPECT_NE(error_of([&] { parse_hello_reply(reply.dump()); }).find("capabilities.varlen"), std::string::npos);
}

TEST(ProcessProtocolLayouts, RunRequestsNameTheirKind) {
  EXPECT_FALSE(json::parse(run_request(1, "/x")).contains("kind"));  // dense, as before the layouts
  EXPECT_EQ(json::parse(run_request(2, "/x", "varlen"))["kind"], "varlen");
}

}  // namespace
}  // namespace attnspec
