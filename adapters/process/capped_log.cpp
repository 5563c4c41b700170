// The head goes straight to the file; past it, bytes are kept in memory and
// written behind the head on flush(), replacing the previous tail.
#include "adapters/process/capped_log.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "cases/io/printable.hpp"

namespace attnspec {
namespace {

void write_all(int fd, std::string_view bytes, std::uint64_t offset) {
  while (!bytes.empty()) {
    const ssize_t n = ::pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // a full disk loses log bytes, not the run
    bytes.remove_prefix(static_cast<std::size_t>(n));
    offset += static_cast<std::uint64_t>(n);
  }
}

}  // namespace

CappedLog::CappedLog(std::filesystem::path path, std::uint64_t head_bytes, std::uint64_t tail_bytes)
    : path_(std::move(path)), head_limit_(head_bytes), tail_limit_(tail_bytes) {
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error("cannot open the adapter log " + path_.string() + ": " + std::strerror(errno));
  struct stat status {};
  if (::fstat(fd_, &status) == 0) start_ = static_cast<std::uint64_t>(status.st_size);
}

CappedLog::~CappedLog() {
  flush();
  ::close(fd_);
}

void CappedLog::append(std::string_view bytes) {
  seen_ += bytes.size();
  if (head_ < head_limit_) {
    const std::size_t into_head = static_cast<std::size_t>(std::min<std::uint64_t>(bytes.size(), head_limit_ - head_));
    write_all(fd_, bytes.substr(0, into_head), start_ + head_);
    head_ += into_head;
    bytes.remove_prefix(into_head);
  }
  if (bytes.empty()) return;
  tail_.append(bytes);
  if (tail_.size() > 2 * tail_limit_) tail_.erase(0, tail_.size() - tail_limit_);
  tail_dirty_ = true;
}

void CappedLog::flush() {
  if (!tail_dirty_) return;
  if (tail_.size() > tail_limit_) tail_.erase(0, tail_.size() - tail_limit_);
  const std::uint64_t left_out = seen_ - head_ - tail_.size();
  std::string middle;
  if (left_out > 0)
    middle = "\n[attnspec: " + std::to_string(left_out) + " bytes of the adapter's stderr left out here; the log keeps the first " +
             std::to_string(head_limit_) + " and the last " + std::to_string(tail_limit_) + "]\n";
  write_all(fd_, middle, start_ + head_);
  write_all(fd_, tail_, start_ + head_ + middle.size());
  if (::ftruncate(fd_, static_cast<off_t>(start_ + head_ + middle.size() + tail_.size())) != 0) {
    // The file keeps stale bytes past the end; nothing else depends on it.
  }
  tail_dirty_ = false;
}

std::string CappedLog::recent_lines(std::size_t lines) const {
  // The last bytes seen: from the tail if anything went past the head, else
  // from the head in the file.
  std::string recent;
  if (!tail_.empty()) {
    recent = tail_.size() > 8192 ? tail_.substr(tail_.size() - 8192) : tail_;
  } else if (head_ > 0) {
    const std::uint64_t length = std::min<std::uint64_t>(head_, 8192);
    recent.resize(length);
    const ssize_t n = ::pread(fd_, recent.data(), length, static_cast<off_t>(start_ + head_ - length));
    recent.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  }
  std::vector<std::string> kept;
  std::size_t end = recent.size();
  while (end > 0 && recent[end - 1] == '\n') --end;
  while (end > 0 && kept.size() < lines) {
    const std::size_t start = recent.rfind('\n', end - 1);
    const std::size_t from = start == std::string::npos ? 0 : start + 1;
    kept.insert(kept.begin(), printable(std::string_view(recent).substr(from, end - from), 300));
    if (start == std::string::npos) break;
    end = start;
  }
  std::string text;
  for (const std::string& line : kept) text += (text.empty() ? "" : "\n") + line;
  return text;
}

}  // namespace attnspec
