// Reads expected.json and compares bit for bit after rounding each expected
// decimal to the reference's target format.
#include "cases/io/expected.hpp"

#include <cstdio>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "cases/io/input_error.hpp"
#include "formats/round_multiprecision.hpp"

namespace attnspec {
namespace {

std::vector<std::string> string_list(const nlohmann::json& object, const std::string& field, const std::string& file) {
  if (!object.contains(field) || !object.at(field).is_array())
    throw InputError(file, field, "expected an array of decimal strings");
  std::vector<std::string> values;
  for (const auto& item : object.at(field)) {
    if (!item.is_string()) throw InputError(file, field, "expected decimal strings, got " + item.dump());
    values.push_back(item.get<std::string>());
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
  if (!std::filesystem::exists(path)) return std::nullopt;
  std::ifstream in(path);
  nlohmann::json object;
  try {
    object = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(path.string(), "", std::string("invalid JSON: ") + e.what());
  }
  if (!object.is_object() || object.value("format", "") != "attnspec-expected/1")
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
