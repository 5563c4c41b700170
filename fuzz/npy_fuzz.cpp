// Fuzzes the NPY reader, read_npy (cases/io/npy.hpp), with default options:
// each input is an .npy file, held in a memfd and read through
// /proc/self/fd/N. An InputError is the expected answer to bad input; a
// crash, another exception type, a hang, a sanitizer report or a leak is a
// finding.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cases/io/input_error.hpp"
#include "cases/io/npy.hpp"
#include "fuzz_support.hpp"

namespace {

int memfd = -1;
std::string memfd_path;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  memfd = ::memfd_create("attnspec-npy-fuzz", MFD_CLOEXEC);
  if (memfd < 0) {
    std::perror("attnspec fuzz: memfd_create");
    std::abort();
  }
  memfd_path = "/proc/self/fd/" + std::to_string(memfd);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (::ftruncate(memfd, 0) != 0 ||
      (size > 0 && ::pwrite(memfd, data, size, 0) != static_cast<ssize_t>(size))) {
    std::perror("attnspec fuzz: writing the memfd");
    std::abort();
  }
  try {
    const attnspec::NpyArray array = attnspec::read_npy(memfd_path);
    (void)array;
  } catch (const attnspec::InputError&) {
  } catch (...) {
    unexpected_exception();
  }
  return 0;
}
