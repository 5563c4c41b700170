// Fuzzes the expected.json reader, load_expected (cases/io/expected.hpp):
// each input is written as expected.json in a per-process scratch directory;
// when it parses, the first few strings of each list also go through
// round_decimal to float32. An InputError is the expected answer to bad
// input; a crash, another exception type, a hang, a sanitizer report or a
// leak is a finding.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "cases/io/expected.hpp"
#include "cases/io/input_error.hpp"
#include "fuzz_support.hpp"

namespace {

constexpr std::size_t kRoundedPerList = 3;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  write_input(scratch_dir() / "expected.json", data, size);
  try {
    const auto expected = attnspec::load_expected(scratch_dir());
    if (!expected) std::abort();  // the file was just written: nullopt would be a bug
    for (const std::vector<std::string>* list : {&expected->out, &expected->lse, &expected->weights})
      for (std::size_t i = 0; i < std::min(list->size(), kRoundedPerList); ++i)
        (void)attnspec::round_decimal((*list)[i], attnspec::FormatId::float32);
  } catch (const attnspec::InputError&) {
  } catch (...) {
    unexpected_exception();
  }
  return 0;
}
