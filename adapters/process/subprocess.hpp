// A child process behind three pipes, for the process protocol: lines go to
// its stdin, lines come from its stdout with a timeout and a length limit,
// its stderr is handed to a callback as it arrives (the adapter log). POSIX
// only. The child runs in its own session and process group, and ending it
// ends everything it started (adapters/process/process_tree.hpp).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <sys/types.h>

namespace attnspec {

class Subprocess {
 public:
  using StderrSink = std::function<void(std::string_view)>;

  // Starts `/bin/sh -c command`; throws std::runtime_error if it cannot.
  Subprocess(const std::string& command, StderrSink on_stderr);
  ~Subprocess();  // ends the child's whole tree
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  // False if the child has closed its stdin (it exited, most likely).
  bool write_line(const std::string& line);

  enum class Read { line, timeout, closed, too_long };
  // One line without its newline. A partial line at end of output counts
  // as a line; `closed` means the child closed its stdout with nothing
  // left; `too_long` that max_bytes arrived without a newline.
  Read read_line(std::string& line, std::chrono::milliseconds timeout, std::size_t max_bytes);

  // Closes stdin and waits up to `timeout` for the child to exit; true if it did.
  bool finish(std::chrono::milliseconds timeout);
  void kill();  // SIGKILL to the child's tree, then reap
  bool running();
  // "exited with status 3", "killed by signal 11 (Segmentation fault)", or
  // "still running".
  std::string exit_description();

 private:
  bool reap(bool block);
  void drain_stderr();  // whatever the child has written so far, without blocking
  pid_t pid_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
  int errors_from_child_ = -1;
  bool exited_ = false;
  bool tree_ended_ = false;
  int wait_status_ = 0;
  std::string buffer_;
  StderrSink on_stderr_;
};

}  // namespace attnspec
