// POSIX open/fstat/pread: the file type is checked on the open descriptor,
// so a path swapped for a FIFO between a check and the open cannot block.
#include "cases/io/input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "cases/io/input_error.hpp"

namespace attnspec {
namespace {

std::string file_type(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string bytes_text(std::uint64_t n) {
  if (n >= (1ull << 20) && n % (1ull << 20) == 0) return std::to_string(n >> 20) + " MiB";
  return std::to_string(n) + " bytes";
}

}  // namespace

InputFile::InputFile(const std::filesystem::path& path) : name_(path.string()) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) {
    const int error = errno;
    throw InputError(name_, "", error == ENOENT ? "cannot open file: it does not exist"
                                                : std::string("cannot open file: ") + std::strerror(error));
  }
  struct stat status {};
  if (::fstat(fd_, &status) != 0 || !S_ISREG(status.st_mode)) {
    const std::string type = file_type(status.st_mode);
    ::close(fd_);
    fd_ = -1;
    throw InputError(name_, "", "is " + type + ", not a regular file (only regular files are read)");
  }
  size_ = static_cast<std::uint64_t>(status.st_size);
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::string InputFile::read(std::uint64_t offset, std::uint64_t count, const Deadline& deadline) const {
  std::string bytes(count, '\0');
  std::uint64_t done = 0;
  constexpr std::uint64_t kChunk = 1u << 20;  // the deadline is looked at between chunks
  while (done < count) {
    if (deadline && std::chrono::steady_clock::now() > *deadline)
      throw InputError(name_, "", "not read within the time allowed (read " + std::to_string(done) + " of " +
                                      std::to_string(count) + " bytes)");
    const std::uint64_t want = std::min(kChunk, count - done);
    const ssize_t n = ::pread(fd_, bytes.data() + done, want, static_cast<off_t>(offset + done));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) throw InputError(name_, "", std::string("read failed: ") + std::strerror(errno));
    if (n == 0)
      throw InputError(name_, "", "ended after " + std::to_string(offset + done) + " bytes, " +
                                      std::to_string(offset + count) + " expected (did it change while being read?)");
    done += static_cast<std::uint64_t>(n);
  }
  return bytes;
}

std::string read_input_file(const std::filesystem::path& path, std::uint64_t max_bytes, const std::string& limit_reason,
                            const Deadline& deadline) {
  const InputFile file(path);
  if (file.size() > max_bytes)
    throw InputError(file.name(), "", "holds " + std::to_string(file.size()) + " bytes, more than the limit of " +
                                          bytes_text(max_bytes) + " (" + limit_reason + ")");
  return file.read(0, file.size(), deadline);
}

}  // namespace attnspec
