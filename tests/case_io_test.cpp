// Case directories and NPY files: round trips, and every kind of bad input
// producing an InputError that names the file and the field.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <stdexcept>
#include <unistd.h>

#include "cases/io/case_dir.hpp"
#include "cases/io/input_error.hpp"
#include "cases/io/npy.hpp"
#include "reference/merge.hpp"
#include "problem_builder.hpp"
#include "scratch_test.hpp"

namespace attnspec {
namespace {

namespace fs = std::filesystem;

class CaseIo : public testing::ScratchTest {
 protected:
  Case sample_case() {
    std::mt19937_64 random(11);
    Case c;
    c.dtype = FormatId::float16;
    c.problem = testing::random_problem(random, {2, 4, 2, 3, 5, 2, 3}, FormatId::float16);
    c.problem.scale = 0.25;
    c.problem.causal = Causal::bottom_right;
    c.problem.mask_kind = MaskKind::additive;
    c.problem.mask_heads = 4;
    c.problem.mask.assign(4 * 3 * 5, 0.0);
    c.problem.mask[3] = -INFINITY;
    c.problem.mask[7] = -1.5;
    c.provenance = {{"generator", "case_io_test"}};
    return c;
  }

  nlohmann::json read_json() {
    std::ifstream in(dir_ / "case.json");
    return nlohmann::json::parse(in);
  }
  void write_json(const nlohmann::json& j) { std::ofstream(dir_ / "case.json") << j.dump(); }

  // Loading must fail with an InputError naming this file and field.
  void expect_error(const std::string& file, const std::string& field, const std::string& fragment) {
    try {
      load_case(dir_);
      ADD_FAILURE() << "no error for " << file << " " << field;
    } catch (const InputError& e) {
      EXPECT_EQ(fs::path(e.file()).filename().string(), file) << e.what();
      EXPECT_EQ(e.field(), field) << e.what();
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  }

};

TEST_F(CaseIo, SavedCaseLoadsBackIdentically) {
  const Case original = sample_case();
  save_case(original, dir_);
  const Case loaded = load_case(dir_);
  EXPECT_EQ(loaded.dtype, FormatId::float16);
  EXPECT_EQ(loaded.problem.dims.q_heads, 4);
  EXPECT_EQ(loaded.problem.scale, 0.25);
  EXPECT_FALSE(loaded.problem.softcap);
  EXPECT_EQ(loaded.problem.causal, Causal::bottom_right);
  EXPECT_EQ(loaded.problem.mask_batch, 1);
  EXPECT_EQ(loaded.problem.mask_heads, 4);
  EXPECT_EQ(loaded.problem.q, original.problem.q);
  EXPECT_EQ(loaded.problem.v, original.problem.v);
  EXPECT_EQ(loaded.problem.mask, original.problem.mask);
  EXPECT_EQ(loaded.provenance["generator"], "case_io_test");
}

TEST_F(CaseIo, WindowRoundTripsAndIsOptional) {
  Case original = sample_case();
  save_case(original, dir_);
  EXPECT_FALSE(read_json().contains("window")) << "written only when there is one";
  EXPECT_FALSE(load_case(dir_).problem.window);
  original.problem.window = Window{std::nullopt, 2, Alignment::top_left};
  save_case(original, dir_);
  EXPECT_EQ(read_json()["window"], nlohmann::json::parse(R"({"left": null, "right": 2, "alignment": "top_left"})"));
  EXPECT_EQ(load_case(dir_).problem.window, original.problem.window);
  nlohmann::json j = read_json();
  j["window"] = nullptr;
  write_json(j);
  EXPECT_FALSE(load_case(dir_).problem.window);
}

// The schema names what the reader takes: a saved case with every optional
// field holds exactly the schema's properties, one without them exactly
// its required ones.
TEST_F(CaseIo, SchemaListsWhatTheReaderTakes) {
  std::ifstream in(fs::path(ATTNSPEC_SOURCE_DIR) / "cases/attnspec-case-1.schema.json");
  const nlohmann::json schema = nlohmann::json::parse(in);
  const auto keys = [](const nlohmann::json& object) {
    std::set<std::string> names;
    for (const auto& [key, value] : object.items()) names.insert(key);
    return names;
  };
  std::set<std::string> required;
  for (const auto& key : schema.at("required")) required.insert(key.get<std::string>());
  Case c = sample_case();
  save_case(c, dir_);
  const nlohmann::json without_window = read_json();
  c.problem.window = Window{1, 2, Alignment::bottom_right};
  c.problem.alibi = Alibi{{0.5, 0.25, 0.125, 0.0625}, false, Alignment::top_left};
  c.problem.sinks = {0.5, -INFINITY, 3, -2};
  c.problem.descales = Descales{{2, 2, 2, 2}, {0.5, 0.5, 0.5, 0.5}, {1, 1, 1, 1}};
  save_case(c, dir_);
  const nlohmann::json with_window = read_json();
  // A layout goes with neither a mask nor descales: saved apart.
  c.problem.mask_kind = MaskKind::none;
  c.problem.mask.clear();
  c.problem.descales.reset();
  c.layout = LayoutRecipe{LayoutKind::varlen, {1, 2}, {3, 4}, 0, 1, 0, {}};
  save_case(c, dir_);
  const nlohmann::json varlen = read_json();
  c.layout = LayoutRecipe{LayoutKind::kv_cache, {}, {3, 4}, 0, 0, 1, CacheLayout{4, 0, 1, {}}};
  save_case(c, dir_);
  const nlohmann::json cache = read_json();
  // dO goes with neither a layout nor descales: saved apart too.
  c.layout.reset();
  c.problem.dout.assign(c.problem.out_size(), 0.5);
  save_case(c, dir_);
  const nlohmann::json backward = read_json();
  c.problem.dout.clear();
  Case merge_case;
  merge_case.problem = merge_as_attention(MergeInput{1, 2, 1, {0.5, 0}, {1.5, -INFINITY}});
  merge_case.merge = true;
  save_case(merge_case, dir_);
  EXPECT_EQ(read_json().at("merge"), true);
  std::set<std::string> every = keys(with_window);
  every.insert("layout");
  std::set<std::string> laid_out = every;
  every.insert("merge");
  every.insert("backward");
  laid_out.erase("descales");  // "mask" stays, as null
  EXPECT_TRUE(backward.contains("backward"));
  EXPECT_FALSE(backward.contains("descales"));
  EXPECT_EQ(keys(varlen), laid_out);
  EXPECT_EQ(every, keys(schema.at("properties")));
  EXPECT_EQ(keys(without_window), required);
  const nlohmann::json& layouts = schema.at("properties").at("layout").at("oneOf");
  EXPECT_EQ(keys(with_window.at("window")), keys(schema.at("properties").at("window").at("oneOf").at(1).at("properties")));
  EXPECT_EQ(keys(varlen.at("layout")), keys(layouts.at(1).at("properties")));
  EXPECT_EQ(keys(cache.at("layout")), keys(layouts.at(2).at("properties")));
}

TEST_F(CaseIo, AlibiRoundTripsWithItsSlopes) {
  Case original = sample_case();  // B = 2, Hq = 4
  original.problem.alibi = Alibi{{0.5, 0.25, 0.125, 0.0625, 1, 2, 3, 0x1p-20}, true, Alignment::bottom_right};
  save_case(original, dir_);
  EXPECT_EQ(read_json()["alibi"], nlohmann::json::parse(R"({"alignment": "bottom_right"})"));
  EXPECT_EQ(load_case(dir_).problem.alibi, original.problem.alibi);
  original.problem.alibi = Alibi{{0.5, 0.25, 0.125, 0.0625}, false, Alignment::top_left};
  save_case(original, dir_);
  EXPECT_EQ(load_case(dir_).problem.alibi, original.problem.alibi);
  original.problem.alibi.reset();
  save_case(original, dir_);
  EXPECT_FALSE(fs::exists(dir_ / "alibi_slopes.npy"));
  EXPECT_FALSE(load_case(dir_).problem.alibi);
}

TEST_F(CaseIo, BadAlibiIsNamed) {
  Case c = sample_case();
  c.problem.alibi = Alibi{{0.5, 0.25, 0.125, 0.0625}, false, Alignment::bottom_right};
  save_case(c, dir_);
  const nlohmann::json good = read_json();
  nlohmann::json j = good;
  j["alibi"]["alignment"] = "left";
  write_json(j);
  expect_error("case.json", "alibi.alignment", "bottom_right");
  j = good;
  j["alibi"]["slopes"] = {1, 2};
  write_json(j);
  expect_error("case.json", "alibi.slopes", "unknown field");
  write_json(good);
  write_npy(dir_ / "alibi_slopes.npy", {NpyDtype::float64, {3}, {0.5, 0.25, 0.125}});
  expect_error("alibi_slopes.npy", "shape", "[4] or [2, 4]");
  write_npy(dir_ / "alibi_slopes.npy", {NpyDtype::float64, {4}, {0.5, 0.1, 0.125, 0.0625}});
  expect_error("alibi_slopes.npy", "values", "float32");
  write_npy(dir_ / "alibi_slopes.npy", {NpyDtype::float32, {4}, {0.5, 0.25, 0.125, 0.0625}});
  expect_error("alibi_slopes.npy", "dtype", "<f8");
  j = good;
  j.erase("alibi");
  write_json(j);
  expect_error("alibi_slopes.npy", "", "no \"alibi\"");
}

// A case with a layout (spec/SPEC.md sections 2.5 and 4): the sample's
// problem without its mask, laid out.
TEST_F(CaseIo, LayoutsRoundTrip) {
  Case c = sample_case();  // B = 2, L = 3, S = 5
  c.problem.mask_kind = MaskKind::none;
  c.problem.mask.clear();
  LayoutRecipe varlen;
  varlen.q_lens = {3, 0};
  varlen.kv_lens = {2, 5};
  varlen.padding_k_rows = 2;
  c.layout = varlen;
  save_case(c, dir_);
  EXPECT_EQ(read_json()["layout"]["kind"], "varlen");
  EXPECT_EQ(load_case(dir_).layout, c.layout);
  LayoutRecipe paged;
  paged.kind = LayoutKind::kv_cache;
  paged.kv_lens = {5, 1};
  paged.new_len = 1;
  paged.cache.page_size = 2;
  paged.cache.spare_pages = 1;
  paged.cache.page_order = {3, 0, 2, 1, 4};  // 3 + 1 pages used, 1 spare
  c.layout = paged;
  save_case(c, dir_);
  EXPECT_EQ(load_case(dir_).layout, c.layout);
  c.layout.reset();
  save_case(c, dir_);
  EXPECT_FALSE(read_json().contains("layout"));
  EXPECT_FALSE(load_case(dir_).layout);
}

TEST_F(CaseIo, BadLayoutsAreNamed) {
  Case c = sample_case();
  c.problem.mask_kind = MaskKind::none;
  c.problem.mask.clear();
  LayoutRecipe paged;
  paged.kind = LayoutKind::kv_cache;
  paged.kv_lens = {5, 1};
  paged.cache.page_size = 2;
  c.layout = paged;
  save_case(c, dir_);
  const nlohmann::json good = read_json();
  nlohmann::json j = good;
  j["layout"]["kind"] = "paged";
  write_json(j);
  expect_error("case.json", "layout.kind", "\"varlen\", \"kv_cache\"");
  j = good;
  j["layout"]["q_lens"] = {1, 1};
  write_json(j);
  expect_error("case.json", "layout.q_lens", "unknown field for a kv_cache layout");
  j = good;
  j["layout"].erase("new_len");
  write_json(j);
  expect_error("case.json", "layout.new_len", "missing");
  j = good;
  j["layout"]["kv_lens"] = {5, 6};
  write_json(j);
  expect_error("case.json", "layout.kv_lens[1]", "expected an integer in 0..5, got 6");
  j = good;
  j["layout"]["kv_lens"] = {5};
  write_json(j);
  expect_error("case.json", "layout.kv_lens", "expected 2 lengths");
  j = good;
  j["layout"]["page_order"] = {0, 1, 1, 2};
  write_json(j);
  expect_error("case.json", "layout.page_order", "a permutation of 0..3");
  j = good;
  j["layout"]["page_size"] = 512;
  write_json(j);
  expect_error("case.json", "layout.page_size", "0..256");
  j = good;
  j["mask"] = "bool";
  write_json(j);
  write_npy(dir_ / "mask.npy", {NpyDtype::boolean, {1, 1, 3, 5}, std::vector<double>(15, 1.0)});
  expect_error("case.json", "layout", "no mask");
}

TEST_F(CaseIo, SinksRoundTrip) {
  Case original = sample_case();  // Hq = 4
  original.problem.sinks = {0.5, -INFINITY, 100, -0x1p-20};
  save_case(original, dir_);
  EXPECT_EQ(read_json()["sinks"], true);
  EXPECT_EQ(load_case(dir_).problem.sinks, original.problem.sinks);
  original.problem.sinks.clear();
  save_case(original, dir_);
  EXPECT_FALSE(fs::exists(dir_ / "sinks.npy"));
  EXPECT_TRUE(load_case(dir_).problem.sinks.empty());
}

TEST_F(CaseIo, BadSinksAreNamed) {
  Case c = sample_case();
  c.problem.sinks = {0.5, 0.25, 0.125, 0.0625};
  save_case(c, dir_);
  const nlohmann::json good = read_json();
  nlohmann::json j = good;
  j["sinks"] = "yes";
  write_json(j);
  expect_error("case.json", "sinks", "true, false or null");
  write_json(good);
  write_npy(dir_ / "sinks.npy", {NpyDtype::float64, {3}, {0.5, 0.25, 0.125}});
  expect_error("sinks.npy", "shape", "[4]");
  write_npy(dir_ / "sinks.npy", {NpyDtype::float64, {4}, {0.5, NAN, 0.125, 0.0625}});
  expect_error("sinks.npy", "values", "head 1");
  write_npy(dir_ / "sinks.npy", {NpyDtype::float64, {4}, {0.5, 0.25, INFINITY, 0.0625}});
  expect_error("sinks.npy", "values", "finite or -inf");
  write_npy(dir_ / "sinks.npy", {NpyDtype::float64, {4}, {0.1, 0.25, 0.125, 0.0625}});
  expect_error("sinks.npy", "values", "float32");
  j = good;
  j["sinks"] = false;
  write_json(j);
  expect_error("sinks.npy", "", "no \"sinks\": true");
}

TEST_F(CaseIo, DoutRoundTrips) {
  Case original = sample_case();  // float16, [B, Hq, L, d_v] = [2, 4, 3, 3]
  std::mt19937_64 random(12);
  original.problem.dout.resize(original.problem.out_size());
  for (double& x : original.problem.dout) x = testing::random_value(random, FormatId::float16);
  original.problem.dout[5] = NAN;  // non-finite dO is an input like any other (SPEC 2.6)
  save_case(original, dir_);
  EXPECT_EQ(read_json()["backward"], true);
  const Case loaded = load_case(dir_);
  ASSERT_EQ(loaded.problem.dout.size(), original.problem.dout.size());
  for (std::size_t i = 0; i < loaded.problem.dout.size(); ++i)
    EXPECT_TRUE(same_value(loaded.problem.dout[i], original.problem.dout[i])) << i;
  original.problem.dout.clear();
  save_case(original, dir_);
  EXPECT_FALSE(fs::exists(dir_ / "dout.npy"));
  EXPECT_TRUE(load_case(dir_).problem.dout.empty());
}

TEST_F(CaseIo, BadDoutIsNamed) {
  Case c = sample_case();
  c.problem.dout.assign(c.problem.out_size(), 1.0);
  save_case(c, dir_);
  const nlohmann::json good = read_json();
  nlohmann::json j = good;
  j["backward"] = 1;
  write_json(j);
  expect_error("case.json", "backward", "true, false or null");
  write_json(good);
  write_npy(dir_ / "dout.npy", {NpyDtype::float64, {2, 4, 3, 2}, std::vector<double>(48, 1.0)});
  expect_error("dout.npy", "shape", "[2, 4, 3, 3]");
  std::vector<double> values(72, 1.0);
  values[7] = 0.1;  // not a float16 value
  write_npy(dir_ / "dout.npy", {NpyDtype::float64, {2, 4, 3, 3}, values});
  expect_error("dout.npy", "values", "flat index 7");
  j = good;
  j["backward"] = false;
  write_json(j);
  expect_error("dout.npy", "", "no \"backward\": true");
  j = good;
  j["descales"] = true;
  write_json(j);
  expect_error("case.json", "backward", "no descale factors");
  j = good;
  j["mask"] = nullptr;
  j["layout"] = {{"kind", "varlen"}, {"q_lens", {1, 2}}, {"kv_lens", {3, 4}}, {"padding_q_rows", 0},
                 {"padding_k_rows", 0}};
  write_json(j);
  fs::remove(dir_ / "mask.npy");
  write_npy(dir_ / "dout.npy", {NpyDtype::float64, {2, 4, 3, 3}, std::vector<double>(72, 1.0)});
  expect_error("case.json", "backward", "dense problems only");
}

// Factors per (batch, kv head) of the sample's [B, Hkv] = [2, 2]: a power
// of two, a full-precision float32 value, the largest float32 and the
// smallest subnormal one.
Descales sample_descales() {
  return Descales{{0.5, 3, 0x1.fffffep127, 0x1p-149}, {0x1.234568p-3, 1, 4, 8}, {1, 2, 0x1.8p-9, 1000}};
}

TEST_F(CaseIo, DescalesRoundTripAsTheKernelsInputs) {
  Case original = sample_case();
  original.problem.descales = sample_descales();
  save_case(original, dir_);
  EXPECT_EQ(read_json()["descales"], true);
  for (const char* name : {"q_descale.npy", "k_descale.npy", "v_descale.npy"})
    EXPECT_EQ(read_npy(dir_ / name).shape, (std::vector<std::size_t>{2, 2})) << name;
  const Case loaded = load_case(dir_);
  ASSERT_TRUE(loaded.problem.descales);
  EXPECT_EQ(*loaded.problem.descales, *original.problem.descales);
  EXPECT_FALSE(loaded.problem.descales->applied) << "a case holds the kernel's inputs";
  EXPECT_EQ(loaded.problem.q, original.problem.q) << "the factors are not applied on loading";
  EXPECT_EQ(loaded.problem.k, original.problem.k);
  EXPECT_EQ(loaded.problem.v, original.problem.v);
  original.problem.descales.reset();
  save_case(original, dir_);
  EXPECT_FALSE(read_json().contains("descales")) << "written only when there are some";
  for (const char* name : {"q_descale.npy", "k_descale.npy", "v_descale.npy"}) EXPECT_FALSE(fs::exists(dir_ / name)) << name;
  EXPECT_FALSE(load_case(dir_).problem.descales);
  for (const nlohmann::json& none : {nlohmann::json(nullptr), nlohmann::json(false)}) {
    nlohmann::json j = read_json();
    j["descales"] = none;
    write_json(j);
    EXPECT_FALSE(load_case(dir_).problem.descales) << none;
  }
}

// Real inputs (factors applied) written as a case would be scaled twice by
// whoever reads it: a programming error, not a bad input.
TEST_F(CaseIo, AppliedDescalesAreNotWritten) {
  Case c = sample_case();
  c.problem.descales = sample_descales();
  c.problem = apply_descales(c.problem);
  ASSERT_TRUE(c.problem.descales->applied);
  EXPECT_THROW(save_case(c, dir_), std::logic_error);
  EXPECT_FALSE(fs::exists(dir_ / "case.json"));
}

TEST_F(CaseIo, BadDescalesAreNamed) {
  Case c = sample_case();  // B = 2, Hkv = 2
  c.problem.descales = sample_descales();
  save_case(c, dir_);
  const nlohmann::json good = read_json();
  nlohmann::json j = good;
  j["descales"] = "fp8";
  write_json(j);
  expect_error("case.json", "descales", "true, false or null");
  j = good;
  j["dtype"] = "float64";  // its values times float32 factors need not be binary64 numbers
  write_json(j);
  expect_error("case.json", "descales", "at most 29 significant bits");
  write_json(good);
  write_npy(dir_ / "k_descale.npy", {NpyDtype::float64, {4}, {1, 1, 1, 1}});
  expect_error("k_descale.npy", "shape", "[2, 2]");
  write_npy(dir_ / "k_descale.npy", {NpyDtype::float64, {2, 1}, {1, 1}});
  expect_error("k_descale.npy", "shape", "[2, 2]");
  write_npy(dir_ / "k_descale.npy", {NpyDtype::float32, {2, 2}, {1, 1, 1, 1}});
  expect_error("k_descale.npy", "dtype", "<f8");
  write_npy(dir_ / "k_descale.npy", {NpyDtype::float64, {2, 2}, {1, 1, 1, 1}});
  ASSERT_NO_THROW(load_case(dir_));
  // Each bad value named with its file, its (batch, kv head) and itself.
  write_npy(dir_ / "q_descale.npy", {NpyDtype::float64, {2, 2}, {1, 1, NAN, 1}});
  expect_error("q_descale.npy", "values", "factor nan of (batch 1, kv head 0)");
  write_npy(dir_ / "q_descale.npy", {NpyDtype::float64, {2, 2}, {1, INFINITY, 1, 1}});
  expect_error("q_descale.npy", "values", "factor inf of (batch 0, kv head 1)");
  write_npy(dir_ / "q_descale.npy", {NpyDtype::float64, {2, 2}, {1, 1, 1, 0}});
  expect_error("q_descale.npy", "values", "factor 0 of (batch 1, kv head 1) is not a float32 value, finite and > 0");
  write_npy(dir_ / "q_descale.npy", {NpyDtype::float64, {2, 2}, {-0.5, 1, 1, 1}});
  expect_error("q_descale.npy", "values", "factor -0.5 of (batch 0, kv head 0)");
  write_npy(dir_ / "q_descale.npy", {NpyDtype::float64, {2, 2}, {1, 1, 1, 1}});
  write_npy(dir_ / "v_descale.npy", {NpyDtype::float64, {2, 2}, {1, 0.1, 1, 1}});
  expect_error("v_descale.npy", "values", "factor 0.1 of (batch 0, kv head 1) is not a float32 value");
  write_npy(dir_ / "v_descale.npy", {NpyDtype::float64, {2, 2}, {1, 1, 1, 0x1p-150}});
  expect_error("v_descale.npy", "values", "float32");
  fs::remove(dir_ / "v_descale.npy");
  expect_error("v_descale.npy", "", "does not exist");
  // A factor file without "descales": true (absent, null or false alike).
  for (const char* name : {"q_descale.npy", "k_descale.npy"}) fs::remove(dir_ / name);
  write_npy(dir_ / "v_descale.npy", {NpyDtype::float64, {2, 2}, {1, 1, 1, 1}});
  for (const nlohmann::json& none : {nlohmann::json(nullptr), nlohmann::json(false)}) {
    j = good;
    j["descales"] = none;
    write_json(j);
    expect_error("v_descale.npy", "", "no \"descales\": true");
  }
  j = good;
  j.erase("descales");
  write_json(j);
  expect_error("v_descale.npy", "", "no \"descales\": true");
}

TEST_F(CaseIo, BadWindowsAreNamed) {
  Case c = sample_case();
  c.problem.window = Window{3, 0, Alignment::bottom_right};
  save_case(c, dir_);
  const nlohmann::json good = read_json();
  const auto with = [&](const std::string& field, const nlohmann::json& value) {
    nlohmann::json j = good;
    j["window"][field] = value;
    write_json(j);
  };
  with("left", -1);
  expect_error("case.json", "window.left", "integer >= 0");
  with("right", 1.5);
  expect_error("case.json", "window.right", "integer >= 0");
  with("alignment", "center");
  expect_error("case.json", "window.alignment", "bottom_right");
  with("size", 4);
  expect_error("case.json", "window.size", "unknown field");
  nlohmann::json j = good;
  j["window"].erase("right");
  write_json(j);
  expect_error("case.json", "window.right", "missing");
  j = good;
  j["window"] = 4;
  write_json(j);
  expect_error("case.json", "window", "expected null or an object");
}

TEST_F(CaseIo, NpyVersionsAndDtypesRoundTrip) {
  const NpyArray f64{NpyDtype::float64, {2, 3}, {1, -2.5, 0x1p-1074, INFINITY, -0.0, 3}};
  write_npy(dir_ / "a.npy", f64);
  const NpyArray back = read_npy(dir_ / "a.npy");
  EXPECT_EQ(back.shape, f64.shape);
  for (std::size_t i = 0; i < 6; ++i) EXPECT_TRUE(same_value(back.values[i], f64.values[i]));
  write_npy(dir_ / "b.npy", {NpyDtype::boolean, {4}, {1, 0, 0, 1}});
  EXPECT_EQ(read_npy(dir_ / "b.npy").values, (std::vector<double>{1, 0, 0, 1}));
  write_npy(dir_ / "c.npy", {NpyDtype::float32, {}, {0.5}});
  EXPECT_EQ(read_npy(dir_ / "c.npy").shape.size(), 0u);
  // Version 2.0: a 4-byte header length.
  std::string v1 = encode_npy(f64);
  const std::string header = v1.substr(10);
  std::string v2 = std::string("\x93NUMPY\x02\x00", 8);
  const std::uint32_t length = static_cast<std::uint32_t>(v1[8] & 0xff) | (static_cast<std::uint32_t>(v1[9] & 0xff) << 8);
  for (int i = 0; i < 4; ++i) v2 += static_cast<char>((length >> (8 * i)) & 0xff);
  v2 += header;
  std::ofstream(dir_ / "v2.npy", std::ios::binary) << v2;
  EXPECT_EQ(read_npy(dir_ / "v2.npy").values[1], -2.5);
}

TEST_F(CaseIo, BadNpyFilesAreNamed) {
  std::ofstream(dir_ / "junk.npy") << "not an array";
  EXPECT_THROW(read_npy(dir_ / "junk.npy"), InputError);
  EXPECT_THROW(read_npy(dir_ / "missing.npy"), InputError);
  std::string truncated = encode_npy({NpyDtype::float64, {3}, {1, 2, 3}});
  truncated.pop_back();
  std::ofstream(dir_ / "short.npy", std::ios::binary) << truncated;
  try {
    read_npy(dir_ / "short.npy");
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("short.npy"), std::string::npos);
  }
}

TEST_F(CaseIo, BadCaseJsonFieldsAreNamed) {
  save_case(sample_case(), dir_);
  const nlohmann::json good = read_json();
  const auto with = [&](const std::string& field, const nlohmann::json& value) {
    nlohmann::json j = good;
    j[field] = value;
    write_json(j);
  };
  with("colour", "blue");
  expect_error("case.json", "colour", "unknown field");
  with("dtype", "float8");
  expect_error("case.json", "dtype", "expected one of");
  with("q_heads", 3);
  expect_error("case.json", "q_heads", "multiple of kv_heads");
  with("d_k", 0);
  expect_error("case.json", "d_k", "integer >= 1");
  with("scale", -1);
  expect_error("case.json", "scale", "finite number > 0");
  with("causal", "upper_left");
  expect_error("case.json", "causal", "top_left");
  with("format", "attnspec-case/2");
  expect_error("case.json", "format", "attnspec-case/1");
  nlohmann::json missing = good;
  missing.erase("d_v");
  write_json(missing);
  expect_error("case.json", "d_v", "missing");
  std::ofstream(dir_ / "case.json") << "{ not json";
  expect_error("case.json", "", "invalid JSON");
}

TEST_F(CaseIo, BadArraysAreNamed) {
  Case c = sample_case();
  save_case(c, dir_);
  write_npy(dir_ / "k.npy", {NpyDtype::float64, {2, 2, 5, 3}, std::vector<double>(60, 0.0)});
  expect_error("k.npy", "shape", "expected [2, 2, 5, 2]");
  save_case(c, dir_);
  write_npy(dir_ / "v.npy", {NpyDtype::float32, {2, 2, 5, 3}, std::vector<double>(60, 0.0)});
  expect_error("v.npy", "dtype", "expected <f8");
  save_case(c, dir_);
  Case not_half = c;
  not_half.problem.q[5] = 0.1;  // not a float16 value
  save_case(not_half, dir_);
  expect_error("q.npy", "values", "not representable in float16");
  save_case(c, dir_);
  std::vector<double> mask = c.problem.mask;
  mask[2] = INFINITY;
  write_npy(dir_ / "mask.npy", {NpyDtype::float64, {1, 4, 3, 5}, mask});
  expect_error("mask.npy", "values", "+inf");
  save_case(c, dir_);
  fs::remove(dir_ / "mask.npy");
  expect_error("mask.npy", "", "cannot open");
  save_case(c, dir_);
  write_npy(dir_ / "mask.npy", {NpyDtype::float64, {1, 3, 3, 5}, std::vector<double>(45, 0.0)});
  expect_error("mask.npy", "shape", "4 or 1");
}

// A merge case (spec/SPEC.md section 6.10) round-trips, and one that is
// not a merge's attention form is named.
TEST_F(CaseIo, MergeCasesRoundTripAndBadOnesAreNamed) {
  Case c;
  c.problem = merge_as_attention(MergeInput{2, 2, 2, {0.5, -1, 0, 0, 2, 3, 0.25, 4}, {1.5, -INFINITY, 90, 0}});
  c.merge = true;
  save_case(c, dir_);
  const Case back = load_case(dir_);
  EXPECT_TRUE(back.merge);
  EXPECT_EQ(merge_input_of(back.problem), merge_input_of(c.problem));
  nlohmann::json j = read_json();
  j["merge"] = "yes";
  write_json(j);
  expect_error("case.json", "merge", "expected true, false or null");
  j["merge"] = true;
  j["q_len"] = 2;  // q.npy no longer matches either: restore it below
  write_json(j);
  EXPECT_THROW(load_case(dir_), InputError);
  c.merge = false;
  c.problem.scale = 0.5;  // no longer a merge's form
  save_case(c, dir_);
  j = read_json();
  j["merge"] = true;
  write_json(j);
  expect_error("case.json", "merge", "attention form");
}

}  // namespace
}  // namespace attnspec
