// A child process behind two pipes, for the process protocol: lines go to
// its stdin, lines come from its stdout with a timeout, its stderr goes to a
// log file. POSIX only. The child runs in its own process group, so killing
// it also ends whatever its shell started.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <sys/types.h>

namespace attnspec {

class Subprocess {
 public:
  // Starts `/bin/sh -c command`; throws std::runtime_error if it cannot.
  Subprocess(const std::string& command, const std::filesystem::path& stderr_log);
  ~Subprocess();  // kills the child if it is still running
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  // False if the child has closed its stdin (it exited, most likely).
  bool write_line(const std::string& line);

  enum class Read { line, timeout, closed };
  // One line without its newline. A partial line at end of output counts
  // as a line; `closed` means the child closed its stdout with nothing left.
  Read read_line(std::string& line, std::chrono::milliseconds timeout);

  // Closes stdin and waits up to `timeout` for the child to exit; true if it did.
  bool finish(std::chrono::milliseconds timeout);
  void kill();  // SIGKILL to the process group, then reap
  bool running();
  // "exited with status 3", "killed by signal 11 (Segmentation fault)", or
  // "still running".
  std::string exit_description();

 private:
  bool reap(bool block);
  pid_t pid_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
  bool exited_ = false;
  int wait_status_ = 0;
  std::string buffer_;
};

}  // namespace attnspec
