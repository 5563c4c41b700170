// Reads expected.json and compares bit for bit after rounding each expected
// decimal to the reference's target format.
#include "cases/io/expected.hpp"

#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>

#include "cases/io/input_error.hpp"
#include "cases/io/input_file.hpp"
#include "cases/io/strict_json.hpp"
#include "formats/round_multiprecision.hpp"

namespace attnspec {
namespace {

constexpr std::uint64_t kMaxExpectedJsonBytes = 64u << 20;
constexpr std::size_t kMaxDecimalLength = 1000;  // 60 digits are written; far more is not a number we can mean

// Whether MPFR reads the whole text as a number (or "nan", "inf", "-inf").
bool is_decimal(const std::string& text) {
  if (text == "nan" || text == "NaN") return true;
  mpfr_t value;
  mpfr_init2(value, 64);
  const bool ok = mpfr_set_str(value, text.c_str(), 10, MPFR_RNDN) == 0;
  mpfr_clear(value);
  return ok;
}

std::vector<std::string> string_list(const nlohmann::json& object, const std::string& field, const std::string& file) {
  if (!object.contains(field) || !object.at(field).is_array())
    throw InputError(file, field, "expected an array of decimal strings");
  std::vector<std::string> values;
  for (const auto& item : object.at(field)) {
    const std::string where = "item " + std::to_string(values.size()) + ": ";
    if (!item.is_string())
      throw InputError(file, field, where + "expected a decimal string, got " + item.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    const std::string& text = item.get_ref<const std::string&>();
    if (text.size() > kMaxDecimalLength || text.find('\0') != std::string::npos || !is_decimal(text))
      throw InputError(file, field, where + "not a decimal number: '" + text + "'");
    values.push_back(text);
  }
  return values;
}

std::string hex(double x) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%a", x);
  return buffer;
}

void compare_list(const char* name, const std::vector<std::string>& expected, const std::vector<double>& got,
                  FormatId target, Agreement& agreement) {
  if (expected.size() != got.size()) {
    agreement.total += std::max(expected.size(), got.size());
    if (agreement.first_mismatch.empty())
      agreement.first_mismatch = std::string(name) + ": expected " + std::to_string(expected.size()) + " values, got " +
                                 std::to_string(got.size());
    return;
  }
  for (std::size_t i = 0; i < got.size(); ++i) {
    ++agreement.total;
    const double want = round_decimal(expected[i], target);
    if (same_value(want, got[i])) {
      ++agreement.agree;
    } else if (agreement.first_mismatch.empty()) {
      agreement.first_mismatch =
          std::string(name) + "[" + std::to_string(i) + "]: expected " + hex(want) + ", got " + hex(got[i]);
    }
  }
}

}  // namespace

std::optional<ExpectedValues> load_expected(const std::filesystem::path& case_directory) {
  const auto path = case_directory / "expected.json";
  std::error_code missing;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, missing))) return std::nullopt;
  const nlohmann::json object =
      parse_strict_json(read_input_file(path, kMaxExpectedJsonBytes, "the most an expected.json may hold"), path.string());
  if (!object.is_object() || !object.contains("format") || object["format"] != "attnspec-expected/1")
    throw InputError(path.string(), "format", "expected \"attnspec-expected/1\"");
  return ExpectedValues{string_list(object, "out", path.string()), string_list(object, "lse", path.string()),
                        string_list(object, "weights", path.string())};
}

double round_decimal(const std::string& text, FormatId target) {
  if (text == "nan" || text == "NaN") return round_to_format(std::numeric_limits<double>::quiet_NaN(), target);
  mpfr_t value;
  mpfr_init2(value, 2048);
  if (mpfr_set_str(value, text.c_str(), 10, MPFR_RNDN) != 0) {
    mpfr_clear(value);
    throw InputError("expected.json", "", "not a decimal number: '" + text + "'");
  }
  const double rounded = round_to_format(value, target);
  mpfr_clear(value);
  return rounded;
}

Agreement compare_with_expected(const ExpectedValues& expected, const ReferenceResult& result) {
  Agreement agreement;
  compare_list("out", expected.out, result.out, result.target, agreement);
  compare_list("lse", expected.lse, result.lse, result.target, agreement);
  if (!result.weights.empty()) compare_list("weights", expected.weights, result.weights, result.target, agreement);
  return agreement;
}

}  // namespace attnspec
