// Each validator returns "" for a good value, else the message CLI11 prints
// (it names the option itself).
#include "cli/options.hpp"

#include <unistd.h>

#include <cstdint>
#include <filesystem>

namespace attnspec::cli {
namespace {

namespace fs = std::filesystem;

std::string writable_directory_error(const fs::path& directory) {
  std::error_code error;
  if (!fs::exists(directory, error)) return "directory '" + directory.string() + "' does not exist";
  if (!fs::is_directory(directory, error)) return "'" + directory.string() + "' is not a directory";
  if (::access(directory.c_str(), W_OK) != 0) return "directory '" + directory.string() + "' is not writable";
  return "";
}

fs::path directory_of(const fs::path& file) {
  const fs::path parent = file.parent_path();
  return parent.empty() ? fs::path(".") : parent;
}

}  // namespace

CLI::Validator unsigned_64() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const std::string expected = "expected an integer from 0 to 18446744073709551615, got '" + text + "'";
        if (text.empty() || text.size() > 20) return expected;
        std::uint64_t value = 0;
        for (char c : text)
          if (c < '0' || c > '9' || __builtin_mul_overflow(value, std::uint64_t{10}, &value) ||
              __builtin_add_overflow(value, static_cast<std::uint64_t>(c - '0'), &value))
            return expected;
        return "";
      },
      "UINT64");
}

CLI::Validator writable_file() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const fs::path path(text);
        std::error_code error;
        if (text.empty()) return "expected a file name";
        if (fs::is_directory(path, error)) return "'" + text + "' is a directory, expected a file name";
        return writable_directory_error(directory_of(path));
      },
      "FILE");
}

CLI::Validator creatable_directory() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (text.empty()) return "expected a directory name";
        fs::path path = fs::absolute(fs::path(text));
        std::error_code error;
        if (fs::exists(path, error) && !fs::is_directory(path, error)) return "'" + text + "' exists and is not a directory";
        while (!fs::exists(path, error) && path.has_parent_path() && path.parent_path() != path) path = path.parent_path();
        return writable_directory_error(path);
      },
      "DIR");
}

}  // namespace attnspec::cli
