// An adapter's stderr, kept in a log file of bounded size: the first
// head_bytes as they come, then only the most recent tail_bytes, with a
// line saying how much was left out between them. An adapter that writes
// 200 MB of stderr per case leaves a log of at most head + tail bytes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace attnspec {

class CappedLog {
 public:
  static constexpr std::uint64_t kDefaultHeadBytes = 1 << 20;
  static constexpr std::uint64_t kDefaultTailBytes = 1 << 20;

  // Appends to the file if it exists (the same log across adapter restarts).
  explicit CappedLog(std::filesystem::path path, std::uint64_t head_bytes = kDefaultHeadBytes,
                     std::uint64_t tail_bytes = kDefaultTailBytes);
  ~CappedLog();
  CappedLog(const CappedLog&) = delete;
  CappedLog& operator=(const CappedLog&) = delete;

  void append(std::string_view bytes);
  // Brings the file up to date (head, the left-out line, the tail).
  void flush();

  const std::filesystem::path& path() const { return path_; }
  std::uint64_t bytes_seen() const { return seen_; }
  // The last lines written (at most `lines`, each cut to 300 bytes and made
  // printable), for messages about the adapter's failures.
  std::string recent_lines(std::size_t lines) const;

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  std::uint64_t head_limit_, tail_limit_;
  std::uint64_t start_ = 0;  // the file's size when this log took it over
  std::uint64_t head_ = 0;   // bytes of this log's head in the file
  std::uint64_t seen_ = 0;   // all bytes appended
  std::string tail_;         // the most recent bytes past the head (up to 2 x tail_limit_)
  bool tail_dirty_ = false;
};

}  // namespace attnspec
