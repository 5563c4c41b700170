// A kernel in another process, of any language, spoken to over the
// attnspec-process/1 protocol (spec/SPEC.md section 8): one JSON object per
// line on the adapter's stdin and stdout, cases passed as attnspec-case/1
// directories, the layouts and merges as attnspec-packed/1 ones. A crash,
// a hang past the case timeout, garbage or a malformed output fails that
// case with a message; the adapter is started again for the next one.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "adapters/kernel.hpp"

namespace attnspec {

inline constexpr std::string_view kProcessKernelPrefix = "cmd:";

struct ProcessOptions {
  std::chrono::milliseconds hello_timeout{30000};  // start-up and handshake
  std::chrono::milliseconds case_timeout{60000};   // one "run" request
  // The adapter's stderr is appended here; empty: a file in the work
  // directory. The work directory holds the case directories; empty: a
  // fresh directory under the system's temporary directory.
  std::filesystem::path log_file;
  std::filesystem::path work_directory;
};

// Starts COMMAND (through /bin/sh) and shakes hands; throws
// std::runtime_error naming the command and what went wrong if it cannot.
std::unique_ptr<Kernel> make_process_kernel(std::string_view command, const ProcessOptions& options = {});

// The options make_kernel("cmd:...") uses: the defaults, with the timeouts
// taken from ATTNSPEC_CASE_TIMEOUT / ATTNSPEC_HELLO_TIMEOUT (seconds) when set.
ProcessOptions default_process_options();

}  // namespace attnspec
