// expected.json of golden cases: results computed by an independent
// implementation (scripts/independent_reference.py) as decimal strings, and
// the comparison of a reference result against them, format by format.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "formats/format.hpp"
#include "reference/certified.hpp"

namespace attnspec {

struct ExpectedValues {
  std::vector<std::string> out, lse, weights;  // flattened in C order
};

// nullopt when the case directory has no expected.json.
std::optional<ExpectedValues> load_expected(const std::filesystem::path& case_directory);

// Rounds a decimal string ("3.25E-1", "0", "-inf", "nan") to the format.
// The string is read at 2048 bits first; a 60-digit decimal is exact there
// unless it has more than 2048 significant bits, far beyond any midpoint.
double round_decimal(const std::string& text, FormatId target);

struct Agreement {
  std::size_t agree = 0, total = 0;
  std::string first_mismatch;  // "out[5]: expected 0x1.8p+1, got 0x1.7ffp+1"
  bool ok() const { return agree == total; }
};

Agreement compare_with_expected(const ExpectedValues& expected, const ReferenceResult& result);

}  // namespace attnspec
