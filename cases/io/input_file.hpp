// Reading files that may be hostile: case files a user hands over, outputs
// an adapter process wrote. Only regular files are read (a FIFO would block
// forever, /dev/zero never ends, a directory is not data), never more bytes
// than a limit the caller states, and, for an adapter's outputs, not past a
// deadline. Every error is an InputError naming the file.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace attnspec {

using Deadline = std::optional<std::chrono::steady_clock::time_point>;

// An open regular file. Opening never blocks (O_NONBLOCK, so a FIFO is
// refused instead of waited on) and follows symbolic links to what they
// name, which must itself be a regular file.
class InputFile {
 public:
  explicit InputFile(const std::filesystem::path& path);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  std::uint64_t size() const { return size_; }
  const std::string& name() const { return name_; }
  // Exactly `count` bytes from `offset`; an InputError if the file is
  // shorter (it shrank while being read) or the deadline passes.
  std::string read(std::uint64_t offset, std::uint64_t count, const Deadline& deadline = std::nullopt) const;

 private:
  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::string name_;
};

// The whole file, if it holds at most max_bytes; `limit_reason` says where
// the limit comes from, for the message ("case.json is at most 16 MiB").
std::string read_input_file(const std::filesystem::path& path, std::uint64_t max_bytes, const std::string& limit_reason,
                            const Deadline& deadline = std::nullopt);

}  // namespace attnspec
