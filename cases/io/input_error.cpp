// Formats an InputError as "FILE: field 'F': message".
#include "cases/io/input_error.hpp"

namespace attnspec {
namespace {
std::string compose(const std::string& file, const std::string& field, const std::string& message) {
  std::string text = file;
  if (!field.empty()) text += ": field '" + field + "'";
  return text + ": " + message;
}
}  // namespace

InputError::InputError(std::string file, std::string field, std::string message)
    : std::runtime_error(compose(file, field, message)),
      file_(std::move(file)),
      field_(std::move(field)),
      detail_(std::move(message)) {}

}  // namespace attnspec
