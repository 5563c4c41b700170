// The pieces that stand between attnspec and hostile input (issue 10):
// text made printable, strict JSON, reading only regular files within a
// size limit, checked tensor sizes, the capped adapter log, and ending an
// adapter's whole process tree. tests/hostile_inputs_test.sh drives the
// same through the command line.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "adapters/process/capped_log.hpp"
#include "adapters/process/process_tree.hpp"
#include "adapters/process/subprocess.hpp"
#include "cases/io/expected.hpp"
#include "cases/io/input_error.hpp"
#include "cases/io/input_file.hpp"
#include "cases/io/npy.hpp"
#include "cases/io/printable.hpp"
#include "cases/io/strict_json.hpp"
#include "reference/problem.hpp"
#include "scratch_test.hpp"

namespace attnspec {
namespace {

namespace fs = std::filesystem;

using testing::error_of;
using Scratch = testing::ScratchTest;

TEST(Printable, EscapesControlsAndBytesThatAreNotUtf8) {
  EXPECT_EQ(printable("plain text, ünïcödé"), "plain text, ünïcödé");
  EXPECT_EQ(printable("a\x1b[2Jb"), "a\\x1b[2Jb");
  EXPECT_EQ(printable("bell\x07 nul", 100), "bell\\x07 nul");
  EXPECT_EQ(printable(std::string("z\0z", 3)), "z\\x00z");
  EXPECT_EQ(printable("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(printable("\xc2\x9b" "31m"), "\\u{9b}31m");    // CSI as a C1 control
  EXPECT_EQ(printable("\xc0\xaf"), "\\xc0\\xaf");           // overlong '/'
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(printable("line\nnext\t."), "line\\nnext\\t.");
}

TEST(Printable, CutsLongText) {
  const std::string cut = printable(std::string(10'000'000, 'A'), 10);
  EXPECT_EQ(cut, "AAAAAAAAAA ... [9999990 more bytes]");
}

TEST(StrictJson, RefusesDeepNestingDuplicateKeysAndBadUtf8) {
  EXPECT_EQ(parse_strict_json(R"({"a": [1, {"b": 2}]})", "f.json")["a"][1]["b"], 2);
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  EXPECT_NE(error_of([&] { parse_strict_json(deep, "f.json"); }).find("f.json: nested more than 64 levels deep"),
            std::string::npos);
  const std::string ok_depth = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_NO_THROW(parse_strict_json(ok_depth, "f.json"));
  EXPECT_NE(error_of([] { parse_strict_json(R"({"x": 1, "y": {"x": 2, "x": 3}})", "f.json"); })
                .find("f.json: field 'x': appears twice"),
            std::string::npos);
  const std::string message = error_of([] { parse_strict_json("{\"a\": \"\xff\x1b\"}", "f.json"); });
  EXPECT_NE(message.find("f.json: invalid JSON"), std::string::npos) << message;
  EXPECT_EQ(message.find('\x1b'), std::string::npos) << message;
  EXPECT_EQ(message.find("json.exception"), std::string::npos) << message;
}

TEST_F(Scratch, OnlyRegularFilesAreRead) {
  EXPECT_NE(error_of([] { read_input_file("/dev/zero", 100, "test"); }).find("/dev/zero: is a character device"),
            std::string::npos);
  EXPECT_NE(error_of([&] { read_input_file(dir_, 100, "test"); }).find("is a directory"), std::string::npos);
  const fs::path fifo = dir_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_NE(error_of([&] { read_input_file(fifo, 100, "test"); }).find("is a FIFO"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));  // refused, not waited on
  fs::create_symlink("/dev/zero", dir_ / "link");
  EXPECT_NE(error_of([&] { read_npy(dir_ / "link"); }).find("is a character device"), std::string::npos);
  EXPECT_NE(error_of([&] { read_input_file(dir_ / "missing", 100, "test"); }).find("does not exist"), std::string::npos);
}

TEST_F(Scratch, AFileOverItsLimitIsNotRead) {
  std::ofstream(dir_ / "big") << std::string(1000, 'x');
  EXPECT_EQ(read_input_file(dir_ / "big", 1000, "test").size(), 1000u);
  EXPECT_NE(error_of([&] { read_input_file(dir_ / "big", 999, "the test's limit"); })
                .find("holds 1000 bytes, more than the limit of 999 bytes (the test's limit)"),
            std::string::npos);
}

TEST_F(Scratch, AnNpyHeaderCannotClaimMoreThanTheFileHolds) {
  // A header claiming 2^62 float64 values in a 128-byte file: refused by
  // the element limit before anything is allocated.
  std::string header = "{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904,), }";
  header += std::string((64 - (10 + header.size() + 1) % 64) % 64, ' ') + "\n";
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(header.size()) + '\0' + header;
  std::ofstream(dir_ / "claims.npy", std::ios::binary) << bytes;
  EXPECT_NE(error_of([&] { read_npy(dir_ / "claims.npy"); }).find("field 'shape': holds more than 268435456 elements"),
            std::string::npos);
  NpyReadOptions options;
  options.max_elements = std::uint64_t{1} << 62;
  EXPECT_NE(error_of([&] { read_npy(dir_ / "claims.npy", options); }).find("data holds 0 bytes, shape and dtype need more than 2^64"), std::string::npos);
}

// Found by the expected_json fuzz target (fuzz/regressions/expected_json/):
// a "format" that is not a string let the JSON library's type_error out.
TEST_F(Scratch, AnExpectedJsonWhoseFormatIsNotAStringIsAnInputError) {
  std::ofstream(dir_ / "expected.json") << R"({"format": 1})";
  try {
    load_expected(dir_);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("expected.json: field 'format'"), std::string::npos) << e.what();
  }
}

TEST(TensorSizes, ProductsPast2To64AreRefusedNotWrapped) {
  Dims d;
  d.batch = d.q_heads = d.kv_heads = 1 << 30;
  EXPECT_NE(size_limit_error(d).find("q [B, Hq, L, d_k] = [1073741824, 1073741824, 1, 1] holds more than 2^28"),
            std::string::npos);
  Dims wide;
  wide.q_len = 1 << 15;
  wide.kv_len = 1 << 14;
  EXPECT_NE(size_limit_error(wide).find("the weights"), std::string::npos);
  Dims fits;
  fits.q_len = 1 << 13;
  fits.kv_len = 1 << 15;
  EXPECT_EQ(size_limit_error(fits), "");
  Problem p;
  p.dims = d;
  EXPECT_EQ(validate(p).size(), 1u);
}

TEST_F(Scratch, TheAdapterLogKeepsItsHeadAndTail) {
  const fs::path path = dir_ / "adapter.log";
  {
    CappedLog log(path, 1000, 500);
    log.append("start\n");
    for (int i = 0; i < 10000; ++i) log.append("line " + std::to_string(i) + "\n");
    log.append("the end\n");
    EXPECT_EQ(log.recent_lines(2), "line 9999\nthe end");
  }
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_LT(text.size(), 1000u + 500u + 200u);
  EXPECT_EQ(text.rfind("start\n", 0), 0u);
  EXPECT_NE(text.find("bytes of the adapter's stderr left out here"), std::string::npos);
  EXPECT_EQ(text.substr(text.size() - 8), "the end\n");
}

bool alive(pid_t pid) {
  // Gone, or a zombie nobody has reaped yet, is ended.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  return close != std::string::npos && text.size() > close + 2 && text[close + 2] != 'Z';
}

TEST_F(Scratch, EndingAnAdapterEndsWhatItStarted) {
  // A shell that starts one helper in a session of its own and one daemon
  // whose parent exits at once, writes their pids, and waits.
  const fs::path pids = dir_ / "pids";
  const std::string command = "setsid sleep 600 & echo $! > " + pids.string() +
                              "; sh -c 'setsid sleep 600 & echo $! >> " + pids.string() + "'; exec sleep 600";
  std::vector<pid_t> helpers;
  {
    Subprocess process(command, [](std::string_view) {});
    for (int i = 0; i < 500 && helpers.size() < 2; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      helpers.clear();
      std::ifstream in(pids);
      for (pid_t pid; in >> pid;) helpers.push_back(pid);
    }
    ASSERT_EQ(helpers.size(), 2u);
    for (pid_t pid : helpers) EXPECT_TRUE(alive(pid)) << pid;
  }  // the destructor ends the tree
  for (pid_t pid : helpers) {
    EXPECT_FALSE(alive(pid)) << "helper " << pid << " outlived its adapter";
    if (alive(pid)) ::kill(pid, SIGKILL);
  }
}

}  // namespace
}  // namespace attnspec
