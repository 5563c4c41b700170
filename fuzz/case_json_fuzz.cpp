// Fuzzes the case.json reader, load_case (cases/io/case_dir.hpp): a
// per-process scratch directory holds q.npy, k.npy, v.npy and mask.npy of
// the golden case additive_mask, and each input is written there as
// case.json before load_case reads the directory. An InputError is the
// expected answer to bad input; a crash, another exception type, a hang, a
// sanitizer report or a leak is a finding.
#include <cstdint>
#include <filesystem>

#include "cases/io/case_dir.hpp"
#include "cases/io/input_error.hpp"
#include "fuzz_support.hpp"

namespace fs = std::filesystem;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const fs::path golden = fs::path(ATTNSPEC_SOURCE_DIR) / "cases/golden/additive_mask";
  for (const char* name : {"q.npy", "k.npy", "v.npy", "mask.npy"})
    fs::copy_file(golden / name, scratch_dir() / name, fs::copy_options::overwrite_existing);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  write_input(scratch_dir() / "case.json", data, size);
  try {
    const attnspec::Case c = attnspec::load_case(scratch_dir());
    (void)c;
  } catch (const attnspec::InputError&) {
  } catch (...) {
    unexpected_exception();
  }
  return 0;
}
