// The process protocol (adapters/process): strict parsing of replies, the
// JSON Schema agreeing with the parser, and every failure mode of an
// adapter (crash, hang, garbage, wrong shape, wrong format, wrong id, ...)
// ending that case with a clear message and a restart, driven by the
// deliberately faulty tests/process/faulty_adapter.py.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "adapters/process/process_kernel.hpp"
#include "adapters/process/protocol.hpp"
#include "formats/format.hpp"
#include "scratch_test.hpp"

namespace attnspec {
namespace {

namespace fs = std::filesystem;

const std::string kGoodHello =
    R"({"protocol": 1, "name": "x", "formats": {"input": "float32", "accumulate": "float32", "output": "bfloat16"},
        "capabilities": {"masks": ["bool"], "causal": ["bottom_right"], "window": ["top_left"],
                         "alibi": ["bottom_right"], "sinks": true, "descales": true, "gqa": true,
                         "max_elements": 64}})";

using testing::error_of;

TEST(ProcessProtocol, ParsesAHelloReply) {
  const AdapterInfo info = parse_hello_reply(kGoodHello);
  EXPECT_EQ(info.name, "x");
  EXPECT_EQ(info.formats.output, FormatId::bfloat16);
  EXPECT_TRUE(info.capabilities.bool_mask);
  EXPECT_FALSE(info.capabilities.additive_mask);
  EXPECT_TRUE(info.capabilities.causal_bottom_right);
  EXPECT_FALSE(info.capabilities.causal_top_left);
  EXPECT_TRUE(info.capabilities.window_top_left);
  EXPECT_FALSE(info.capabilities.window_bottom_right);
  EXPECT_FALSE(info.capabilities.alibi_top_left);
  EXPECT_TRUE(info.capabilities.alibi_bottom_right);
  EXPECT_TRUE(info.capabilities.sinks);
  EXPECT_TRUE(info.capabilities.descales);
  EXPECT_TRUE(info.capabilities.gqa);
  EXPECT_FALSE(info.capabilities.softcap);  // left out: unsupported
  EXPECT_EQ(info.capabilities.max_elements, 64u);
}

TEST(ProcessProtocol, ParsesTheBackwardAndItsStorageFormat) {
  EXPECT_FALSE(parse_hello_reply(kGoodHello).capabilities.backward);
  nlohmann::json reply = nlohmann::json::parse(kGoodHello);
  reply["capabilities"]["backward"] = true;
  reply["formats"]["gradient_storage"] = "bfloat16";
  const AdapterInfo info = parse_hello_reply(reply.dump());
  EXPECT_TRUE(info.capabilities.backward);
  EXPECT_EQ(info.formats.gradient_storage, FormatId::bfloat16);
  reply["formats"]["gradient_storage"] = "bfloat17";
  EXPECT_NE(error_of([&] { parse_hello_reply(reply.dump()); }).find("formats.gradient_storage"), std::string::npos);
  reply["formats"].erase("gradient_storage");
  reply["capabilities"]["backward"] = "yes";
  EXPECT_NE(error_of([&] { parse_hello_reply(reply.dump()); }).find("capabilities.backward"), std::string::npos);
}

TEST(ProcessProtocol, RejectsBadHelloRepliesNamingTheField) {
  EXPECT_NE(error_of([] { parse_hello_reply("not json"); }).find("not JSON"), std::string::npos);
  EXPECT_NE(error_of([] { parse_hello_reply(R"({"protocol": 2})"); }).find("'protocol'"), std::string::npos);
  nlohmann::json reply = nlohmann::json::parse(kGoodHello);
  reply["capabilities"]["softCap"] = true;
  EXPECT_NE(error_of([&] { parse_hello_reply(reply.dump()); }).find("capabilities.softCap"), std::string::npos);
  reply = nlohmann::json::parse(kGoodHello);
  reply["formats"]["output"] = "fp16";
  EXPECT_NE(error_of([&] { parse_hello_reply(reply.dump()); }).find("formats.output"), std::string::npos);
  reply = nlohmann::json::parse(kGoodHello);
  reply["capabilities"]["masks"] = {"boolean"};
  EXPECT_NE(error_of([&] { parse_hello_reply(reply.dump()); }).find("capabilities.masks"), std::string::npos);
  reply = nlohmann::json::parse(kGoodHello);
  reply["capabilities"]["window"] = {"bottom-right"};
  EXPECT_NE(error_of([&] { parse_hello_reply(reply.dump()); }).find("capabilities.window"), std::string::npos);
  reply = nlohmann::json::parse(kGoodHello);
  reply["capabilities"]["descales"] = "fp8";
  EXPECT_NE(error_of([&] { parse_hello_reply(reply.dump()); }).find("capabilities.descales"), std::string::npos);
  reply = nlohmann::json::parse(kGoodHello);
  reply["capabilities"]["max_elements"] = 0;
  EXPECT_NE(error_of([&] { parse_hello_reply(reply.dump()); }).find("max_elements"), std::string::npos);
}

TEST(ProcessProtocol, AWeightsFormatIsOptionalAndChecked) {
  EXPECT_FALSE(parse_hello_reply(kGoodHello).formats.weights.has_value());
  nlohmann::json reply = nlohmann::json::parse(kGoodHello);
  reply["formats"]["weights"] = "float8_e4m3fn";
  reply["formats"]["weights_scale"] = 256;
  const AdapterInfo info = parse_hello_reply(reply.dump());
  EXPECT_EQ(info.formats.weights, FormatId::float8_e4m3fn);
  EXPECT_EQ(info.formats.weights_scale, 256);
  reply["formats"]["weights_scale"] = 512;  // a weight of 1 times 512 is not finite in e4m3fn
  EXPECT_NE(error_of([&] { parse_hello_reply(reply.dump()); }).find("formats.weights_scale"), std::string::npos);
  reply["formats"].erase("weights");
  EXPECT_NE(error_of([&] { parse_hello_reply(reply.dump()); }).find("without formats.weights"), std::string::npos);
  reply = nlohmann::json::parse(kGoodHello);
  reply["formats"]["input"] = "float64";  // descales declared: their products would not be binary64 numbers
  EXPECT_NE(error_of([&] { parse_hello_reply(reply.dump()); }).find("capabilities.descales"), std::string::npos);
}

TEST(ProcessProtocol, RestrictionsAreOptionalAndChecked) {
  EXPECT_FALSE(parse_hello_reply(kGoodHello).capabilities.kv_len_at_least_q_len);
  EXPECT_FALSE(parse_hello_reply(kGoodHello).capabilities.causal_windows_only);
  nlohmann::json reply = nlohmann::json::parse(kGoodHello);
  reply["capabilities"]["kv_len_at_least_q_len"] = true;
  reply["capabilities"]["causal_windows_only"] = true;
  const Capabilities caps = parse_hello_reply(reply.dump()).capabilities;
  EXPECT_TRUE(caps.kv_len_at_least_q_len);
  EXPECT_TRUE(caps.causal_windows_only);
  reply["capabilities"]["kv_len_at_least_q_len"] = 1;
  EXPECT_NE(error_of([&] { parse_hello_reply(reply.dump()); }).find("capabilities.kv_len_at_least_q_len"),
            std::string::npos);
  reply["capabilities"]["kv_len_at_least_q_len"] = true;
  reply["capabilities"].erase("window");  // a restriction of windows it does not have
  EXPECT_NE(error_of([&] { parse_hello_reply(reply.dump()); }).find("capabilities.causal_windows_only"),
            std::string::npos);
}

TEST(ProcessProtocol, AlibiPaperSlopesOnlyNeedsAlibi) {
  nlohmann::json reply = nlohmann::json::parse(kGoodHello);
  reply["capabilities"]["alibi_paper_slopes_only"] = true;
  const Capabilities caps = parse_hello_reply(reply.dump()).capabilities;
  EXPECT_TRUE(caps.alibi_paper_slopes_only);
  EXPECT_NE(describe(caps).find("only:alibi-paper-slopes"), std::string::npos) << describe(caps);
  reply["capabilities"].erase("alibi");
  EXPECT_NE(error_of([&] { parse_hello_reply(reply.dump()); }).find("capabilities.alibi_paper_slopes_only"),
            std::string::npos);
  reply["capabilities"]["alibi_paper_slopes_only"] = "yes";
  EXPECT_NE(error_of([&] { parse_hello_reply(reply.dump()); }).find("capabilities.alibi_paper_slopes_only"),
            std::string::npos);
}

TEST(ProcessProtocol, CausalOnlyAndPageSizesAreChecked) {
  nlohmann::json reply = nlohmann::json::parse(kGoodHello);
  reply["capabilities"]["causal"] = {"bottom_right"};
  reply["capabilities"]["causal_only"] = true;
  reply["capabilities"]["paged_kv_cache"] = true;
  reply["capabilities"]["page_sizes"] = {32, 16};
  const Capabilities caps = parse_hello_reply(reply.dump()).capabilities;
  EXPECT_TRUE(caps.causal_only);
  EXPECT_EQ(caps.page_sizes, (std::vector<int>{32, 16}));
  EXPECT_NE(describe(caps).find("only:causal paged-kv-cache page-sizes:32,16"), std::string::npos) << describe(caps);
  for (const char* bad : {"[]", "[0]", "[257]", "[32, 32]", "[1.5]", "32"}) {
    reply["capabilities"]["page_sizes"] = nlohmann::json::parse(bad);
    EXPECT_NE(error_of([&] { parse_hello_reply(reply.dump()); }).find("capabilities.page_sizes"), std::string::npos) << bad;
  }
  reply["capabilities"]["page_sizes"] = {32};
  reply["capabilities"]["paged_kv_cache"] = false;
  EXPECT_NE(error_of([&] { parse_hello_reply(reply.dump()); }).find("without paged_kv_cache"), std::string::npos);
  reply["capabilities"]["paged_kv_cache"] = true;
  reply["capabilities"]["causal"] = {"top_left", "bottom_right"};
  EXPECT_NE(error_of([&] { parse_hello_reply(reply.dump()); }).find("capabilities.causal_only"), std::string::npos);
  reply["capabilities"].erase("causal");
  EXPECT_NE(error_of([&] { parse_hello_reply(reply.dump()); }).find("capabilities.causal_only"), std::string::npos);
}

TEST(ProcessProtocol, ParsesAndChecksRunReplies) {
  const RunReply declined = parse_run_reply(R"({"id": 3, "ok": false, "unsupported": true, "error": "too big"})");
  EXPECT_EQ(declined.id, 3u);
  EXPECT_TRUE(declined.unsupported);
  EXPECT_EQ(declined.error, "too big");
  EXPECT_NE(error_of([] { parse_run_reply(R"({"id": 3, "ok": false})"); }).find("'error'"), std::string::npos);
  EXPECT_NE(error_of([] { parse_run_reply(R"({"ok": true})"); }).find("'id'"), std::string::npos);
  EXPECT_NE(error_of([] { parse_run_reply(R"({"id": 1, "ok": true, "extra": 1})"); }).find("'extra'"), std::string::npos);
}

TEST(ProcessProtocol, SchemaListsWhatTheParserAccepts) {
  std::ifstream in(fs::path(ATTNSPEC_SOURCE_DIR) / "adapters/process/attnspec-process-1.schema.json");
  const nlohmann::json schema = nlohmann::json::parse(in);
  const nlohmann::json& caps = schema["$defs"]["hello_reply"]["properties"]["capabilities"]["properties"];
  std::set<std::string> in_schema, in_parser;
  for (const auto& [key, value] : caps.items()) in_schema.insert(key);
  for (std::string_view key : capability_keys()) in_parser.insert(std::string(key));
  EXPECT_EQ(in_schema, in_parser);
  std::set<std::string> masks, causal;
  for (const auto& name : caps["masks"]["items"]["enum"]) masks.insert(name.get<std::string>());
  for (const auto& name : caps["causal"]["items"]["enum"]) causal.insert(name.get<std::string>());
  EXPECT_EQ(masks, std::set<std::string>(mask_names().begin(), mask_names().end()));
  EXPECT_EQ(causal, std::set<std::string>(causal_names().begin(), causal_names().end()));
  std::set<std::string> formats;
  for (const auto& name : schema["$defs"]["format"]["enum"]) {
    EXPECT_TRUE(parse_format(name.get<std::string>())) << name;
    formats.insert(name.get<std::string>());
  }
  EXPECT_EQ(formats.size(), 6u);
}

// A small problem any adapter takes: B=1, H=1, L=2, S=3, d=2.
Problem small_problem() {
  Problem p;
  p.dims = Dims{1, 1, 1, 2, 3, 2, 2};
  p.q = {0.5, 1, -1, 0};
  p.k = {1, 0, 0, 1, 0.25, 0.25};
  p.v = {1, 2, 3, 4, 5, 6};
  return p;
}

class FaultyAdapter : public testing::ScratchTest {
 protected:
  std::unique_ptr<Kernel> start(const std::string& fault, bool once = false, const std::string& output = "float32") {
    ProcessOptions options;
    options.case_timeout = std::chrono::milliseconds(1500);
    options.hello_timeout = std::chrono::seconds(20);
    options.work_directory = dir_ / "work";
    std::string command = std::string(ATTNSPEC_PYTHON) + " " + ATTNSPEC_SOURCE_DIR + "/tests/process/faulty_adapter.py --fault " +
                          fault + " --output " + output;
    if (once) command += " --once " + (dir_ / "once").string();
    return make_process_kernel(command, options);
  }

  // The case fails with a message containing `expected`; the next case,
  // with the fault spent, runs.
  void expect_failure_then_recovery(const std::string& fault, const std::string& expected) {
    std::unique_ptr<Kernel> kernel = start(fault, true);
    const std::string message = error_of([&] { kernel->run(small_problem()); });
    EXPECT_NE(message.find(expected), std::string::npos) << fault << ": " << message;
    KernelResult result;
    EXPECT_NO_THROW(result = kernel->run(small_problem())) << fault;
    EXPECT_EQ(result.out.size(), 4u);
  }

};

TEST_F(FaultyAdapter, AWellBehavedAdapterRuns) {
  std::unique_ptr<Kernel> kernel = start("none");
  EXPECT_EQ(kernel->name(), "faulty-none");
  for (int i = 0; i < 3; ++i) EXPECT_EQ(kernel->run(small_problem()).out, std::vector<double>(4, 0.0));
}

TEST_F(FaultyAdapter, ACrashFailsTheCaseAndTheAdapterIsRestarted) {
  expect_failure_then_recovery("crash", "exited with status 3");
}

TEST_F(FaultyAdapter, ASignalIsNamed) { expect_failure_then_recovery("signal", "signal 11"); }

TEST_F(FaultyAdapter, AHangIsKilledAfterTheCaseTimeout) { expect_failure_then_recovery("hang", "did not answer within"); }

TEST_F(FaultyAdapter, GarbageOnStdoutBreaksTheProtocol) { expect_failure_then_recovery("garbage", "not JSON"); }

// Output faults leave the conversation in step: the adapter keeps running.
TEST_F(FaultyAdapter, AWrongShapeIsRejected) {
  std::unique_ptr<Kernel> kernel = start("wrong-shape");
  for (int i = 0; i < 2; ++i)
    EXPECT_NE(error_of([&] { kernel->run(small_problem()); }).find("out.npy: field 'shape': expected [1, 1, 2, 2], got [1, 1, 1, 2]"),
              std::string::npos);
}

TEST_F(FaultyAdapter, AMissingOutputIsRejected) {
  std::unique_ptr<Kernel> kernel = start("no-output");
  EXPECT_NE(error_of([&] { kernel->run(small_problem()); }).find("wrote no out.npy"), std::string::npos);
}

TEST_F(FaultyAdapter, AnAnswerToAnotherRequestIsRejected) { expect_failure_then_recovery("wrong-id", "when request 1 was pending"); }

TEST_F(FaultyAdapter, ValuesOutsideTheDeclaredFormatAreRejected) {
  std::unique_ptr<Kernel> kernel = start("not-format", false, "float16");
  EXPECT_NE(error_of([&] { kernel->run(small_problem()); }).find("not a float16 value"), std::string::npos);
}

TEST_F(FaultyAdapter, ADeclinedCaseIsNeitherPassNorFail) {
  std::unique_ptr<Kernel> kernel = start("unsupported");
  EXPECT_THROW(kernel->run(small_problem()), KernelUnsupported);
}

TEST_F(FaultyAdapter, AnAdapterErrorFailsTheCase) {
  std::unique_ptr<Kernel> kernel = start("error");
  try {
    kernel->run(small_problem());
    FAIL() << "no exception";
  } catch (const KernelUnsupported&) {
    FAIL() << "an error is not a declined case";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("out of memory (simulated)"), std::string::npos);
  }
}

TEST_F(FaultyAdapter, ABadHelloStopsBeforeAnyCase) {
  EXPECT_NE(error_of([&] { start("bad-hello"); }).find("capabilities.softCap"), std::string::npos);
  EXPECT_NE(error_of([&] { start("silent"); }).find("ended without answering the hello"), std::string::npos);
}

TEST_F(FaultyAdapter, AMissingProgramIsReported) {
  ProcessOptions options;
  options.work_directory = dir_ / "work";
  const std::string message = error_of([&] { make_process_kernel("/nonexistent/adapter --x", options); });
  EXPECT_NE(message.find("exited with status 127"), std::string::npos) << message;
}

}  // namespace
}  // namespace attnspec
