// Formats an InputError as "FILE: field 'F': message", every part made
// printable: names and messages can carry bytes of the bad input.
#include "cases/io/input_error.hpp"

#include "cases/io/printable.hpp"

namespace attnspec {
namespace {
std::string compose(const std::string& file, const std::string& field, const std::string& message) {
  std::string text = printable(file, 1000);
  if (!field.empty()) text += ": field '" + printable(field, 200) + "'";
  return text + ": " + printable(message, 2000);
}
}  // namespace

InputError::InputError(std::string file, std::string field, std::string message)
    : std::runtime_error(compose(file, field, message)),
      file_(std::move(file)),
      field_(std::move(field)),
      detail_(std::move(message)) {}

}  // namespace attnspec
