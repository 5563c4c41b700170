// fork/exec with pipes and poll(2). Writes ignore SIGPIPE (a child that died
// mid-conversation is reported, not fatal to attnspec). While waiting for a
// line, the child's stderr is read too, so a chatty child never blocks on a
// full stderr pipe.
#include "adapters/process/subprocess.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "adapters/process/process_tree.hpp"

namespace attnspec {
namespace {

std::string system_error(const std::string& what) { return what + ": " + std::strerror(errno); }

void ignore_sigpipe() {
  static const bool once = [] {
    struct sigaction action {};
    action.sa_handler = SIG_IGN;
    sigemptyset(&action.sa_mask);
    sigaction(SIGPIPE, &action, nullptr);
    return true;
  }();
  (void)once;
}

void close_all(std::initializer_list<int> fds) {
  for (int fd : fds)
    if (fd >= 0) ::close(fd);
}

}  // namespace

Subprocess::Subprocess(const std::string& command, StderrSink on_stderr) : on_stderr_(std::move(on_stderr)) {
  ignore_sigpipe();
  become_subreaper();
  int in_pipe[2] = {-1, -1}, out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
  if (::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    const std::string message = system_error("pipe");
    close_all({in_pipe[0], in_pipe[1], out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]});
    exited_ = tree_ended_ = true;
    throw std::runtime_error(message);
  }
  pid_ = ::fork();
  if (pid_ < 0) {
    const std::string message = system_error("fork");
    close_all({in_pipe[0], in_pipe[1], out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]});
    exited_ = tree_ended_ = true;
    throw std::runtime_error(message);
  }
  if (pid_ == 0) {
    ::setsid();  // its own session and process group, both with its pid
    ::dup2(in_pipe[0], STDIN_FILENO);
    ::dup2(out_pipe[1], STDOUT_FILENO);
    ::dup2(err_pipe[1], STDERR_FILENO);
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  register_adapter(pid_);
  close_all({in_pipe[0], out_pipe[1], err_pipe[1]});
  to_child_ = in_pipe[1];
  from_child_ = out_pipe[0];
  errors_from_child_ = err_pipe[0];
  ::fcntl(errors_from_child_, F_SETFL, ::fcntl(errors_from_child_, F_GETFL) | O_NONBLOCK);
}

Subprocess::~Subprocess() {
  kill();
  close_all({to_child_, from_child_, errors_from_child_});
}

bool Subprocess::write_line(const std::string& line) {
  if (to_child_ < 0) return false;
  const std::string data = line + "\n";
  std::size_t written = 0;
  while (written < data.size()) {
    const ssize_t n = ::write(to_child_, data.data() + written, data.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    written += static_cast<std::size_t>(n);
  }
  return true;
}

void Subprocess::drain_stderr() {
  if (errors_from_child_ < 0) return;
  char chunk[65536];
  for (;;) {
    const ssize_t n = ::read(errors_from_child_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return;  // EAGAIN: nothing more for now
    if (n == 0) {
      ::close(errors_from_child_);
      errors_from_child_ = -1;
      return;
    }
    if (on_stderr_) on_stderr_(std::string_view(chunk, static_cast<std::size_t>(n)));
  }
}

Subprocess::Read Subprocess::read_line(std::string& line, std::chrono::milliseconds timeout, std::size_t max_bytes) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (const auto newline = buffer_.find('\n'); newline != std::string::npos && newline <= max_bytes) {
      line = buffer_.substr(0, newline);
      buffer_.erase(0, newline + 1);
      return Read::line;
    }
    if (buffer_.size() > max_bytes) {
      buffer_.clear();
      return Read::too_long;
    }
    if (from_child_ < 0) {
      if (buffer_.empty()) return Read::closed;
      line = std::move(buffer_);
      buffer_.clear();
      return Read::line;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return Read::timeout;
    pollfd descriptors[2] = {{from_child_, POLLIN, 0}, {errors_from_child_, POLLIN, 0}};
    const int ready = ::poll(descriptors, errors_from_child_ >= 0 ? 2 : 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (ready < 0 && errno != EINTR) throw std::runtime_error(system_error("poll"));
    if (ready <= 0) continue;
    if (errors_from_child_ >= 0 && descriptors[1].revents) drain_stderr();
    if (!descriptors[0].revents) continue;
    char chunk[65536];
    const ssize_t n = ::read(from_child_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(from_child_);
      from_child_ = -1;
      continue;
    }
    buffer_.append(chunk, static_cast<std::size_t>(n));
  }
}

bool Subprocess::reap(bool block) {
  if (exited_) return true;
  const pid_t r = ::waitpid(pid_, &wait_status_, block ? 0 : WNOHANG);
  if (r == pid_) exited_ = true;
  return exited_;
}

bool Subprocess::running() { return !reap(false); }

bool Subprocess::finish(std::chrono::milliseconds timeout) {
  if (to_child_ >= 0) {
    ::close(to_child_);
    to_child_ = -1;
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!reap(false)) {
    drain_stderr();
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

void Subprocess::kill() {
  if (!tree_ended_) {
    end_process_tree(pid_);
    tree_ended_ = true;
  }
  reap(true);
  unregister_adapter(pid_);
  drain_stderr();  // the tree is gone, so this reaches the end of its stderr
}

std::string Subprocess::exit_description() {
  // A child that just closed its stdout is usually a moment from exiting.
  for (int i = 0; i < 500 && !reap(false); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (!reap(false)) return "still running";
  if (WIFEXITED(wait_status_)) {
    const int status = WEXITSTATUS(wait_status_);
    std::string text = "exited with status " + std::to_string(status);
    // A shell reports a child killed by signal N as status 128 + N.
    if (status > 128 && status < 128 + 32) {
      const char* name = ::strsignal(status - 128);
      text += ": a shell's report of signal " + std::to_string(status - 128) + (name ? std::string(" (") + name + ")" : std::string());
    }
    return text;
  }
  if (WIFSIGNALED(wait_status_)) {
    const int signal = WTERMSIG(wait_status_);
    const char* name = ::strsignal(signal);
    return "killed by signal " + std::to_string(signal) + (name ? std::string(" (") + name + ")" : std::string());
  }
  return "ended (wait status " + std::to_string(wait_status_) + ")";
}

}  // namespace attnspec
