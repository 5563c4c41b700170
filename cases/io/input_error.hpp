// The one error type for bad input files: it names the file, the field (or
// array) and what was expected, so a user can fix the input without reading
// code. The command line turns it into exit status 2.
#pragma once

#include <stdexcept>
#include <string>

namespace attnspec {

class InputError : public std::runtime_error {
 public:
  InputError(std::string file, std::string field, std::string message);
  const std::string& file() const { return file_; }
  const std::string& field() const { return field_; }
  const std::string& detail() const { return detail_; }

 private:
  std::string file_, field_, detail_;
};

}  // namespace attnspec
