// Helpers shared by the fuzz targets: a per-process scratch directory that
// is removed at exit, writing an input to a file, and turning an exception
// the parser must not throw into a crash libFuzzer reports as a finding.
#pragma once

#include <stdlib.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <typeinfo>

// A fresh directory under $TMPDIR (or /tmp), made once per process;
// scripts/fuzz.sh points TMPDIR into build-fuzz, since libFuzzer can end a
// run without calling atexit handlers.
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/attnspec-fuzz-XXXXXX";
    if (!::mkdtemp(pattern.data())) {
      std::perror("attnspec fuzz: mkdtemp");
      std::abort();
    }
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(scratch_dir(), ignored);
    });
    return std::filesystem::path(pattern);
  }();
  return dir;
}

inline void write_input(const std::filesystem::path& path, const std::uint8_t* data, std::size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) {
    std::fprintf(stderr, "attnspec fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
}

// Called from a catch (...) after the expected error type: anything else is
// a finding, reported with its type so the crash log says what escaped.
[[noreturn]] inline void unexpected_exception() {
  try {
    throw;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "attnspec fuzz: unexpected exception %s: %s\n", typeid(e).name(), e.what());
  } catch (...) {
    std::fprintf(stderr, "attnspec fuzz: unexpected exception of a non-std type\n");
  }
  std::abort();
}
