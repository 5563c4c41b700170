// fork/exec with pipes and poll(2). Writes ignore SIGPIPE (a child that died
// mid-conversation is reported, not fatal to attnspec).
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

}  // namespace

Subprocess::Subprocess(const std::string& command, const std::filesystem::path& stderr_log) {
  ignore_sigpipe();
  const int log = ::open(stderr_log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0) throw std::runtime_error(system_error("cannot open the adapter log " + stderr_log.string()));
  int in_pipe[2], out_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0) {
    ::close(log);
    throw std::runtime_error(system_error("pipe"));
  }
  pid_ = ::fork();
  if (pid_ < 0) {
    const std::string message = system_error("fork");
    for (int fd : {in_pipe[0], in_pipe[1], out_pipe[0], out_pipe[1], log}) ::close(fd);
    exited_ = true;
    throw std::runtime_error(message);
  }
  if (pid_ == 0) {
    ::setpgid(0, 0);
    ::dup2(in_pipe[0], STDIN_FILENO);
    ::dup2(out_pipe[1], STDOUT_FILENO);
    ::dup2(log, STDERR_FILENO);
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::setpgid(pid_, pid_);  // also here: no race with a kill before the child ran
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  ::close(log);
  to_child_ = in_pipe[1];
  from_child_ = out_pipe[0];
}

Subprocess::~Subprocess() {
  if (!exited_) kill();
  if (to_child_ >= 0) ::close(to_child_);
  if (from_child_ >= 0) ::close(from_child_);
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

Subprocess::Read Subprocess::read_line(std::string& line, std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (const auto newline = buffer_.find('\n'); newline != std::string::npos) {
      line = buffer_.substr(0, newline);
      buffer_.erase(0, newline + 1);
      return Read::line;
    }
    if (from_child_ < 0) {
      if (buffer_.empty()) return Read::closed;
      line = std::move(buffer_);
      buffer_.clear();
      return Read::line;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return Read::timeout;
    pollfd descriptor{from_child_, POLLIN, 0};
    const int ready = ::poll(&descriptor, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (ready < 0 && errno != EINTR) throw std::runtime_error(system_error("poll"));
    if (ready <= 0) continue;
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
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

void Subprocess::kill() {
  if (exited_) return;
  ::kill(-pid_, SIGKILL);
  ::kill(pid_, SIGKILL);
  reap(true);
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
