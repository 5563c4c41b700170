// Shared by the unit tests that touch files: a fresh directory per test,
// removed after it, and the message of the exception a call throws.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace attnspec::testing {

// dir_ is TMPDIR/attnspec-test-PID-TESTNAME, empty at the start of each test.
class ScratchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("attnspec-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
};

// The what() of the std::exception `call` throws; "" if it throws none.
inline std::string error_of(auto&& call) {
  try {
    call();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace attnspec::testing
