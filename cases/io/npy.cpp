// NPY reader and writer. The header is a Python dict literal; the parser
// accepts exactly the three keys NumPy writes and reports anything else by
// file name.
#include "cases/io/npy.hpp"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>

#include "cases/io/input_error.hpp"
#include "cases/io/input_file.hpp"
#include "formats/format.hpp"

namespace attnspec {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicSize = 6;

std::size_t item_size(NpyDtype dtype) {
  switch (dtype) {
    case NpyDtype::float64: return 8;
    case NpyDtype::float32: return 4;
    case NpyDtype::float16: return 2;
    case NpyDtype::boolean: return 1;
  }
  return 1;
}

// A cursor over the header dict, with errors that name the file.
class HeaderParser {
 public:
  HeaderParser(std::string text, std::string file) : text_(std::move(text)), file_(std::move(file)) {}

  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool accept(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!accept(c)) fail(std::string("expected '") + c + "' in the header");
  }
  std::string quoted() {
    skip_space();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) fail("expected a quoted string in the header");
    const char quote = text_[pos_++];
    const std::size_t end = text_.find(quote, pos_);
    if (end == std::string::npos) fail("unterminated string in the header");
    std::string s = text_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return s;
  }
  std::string word() {
    skip_space();
    const std::size_t start = pos_;
    while (pos_ < text_.size() && std::isalnum(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    return text_.substr(start, pos_ - start);
  }
  std::size_t integer() {
    const std::string digits = word();
    if (digits.empty() || !std::all_of(digits.begin(), digits.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      fail("expected a non-negative integer in 'shape'");
    std::uint64_t value = 0;
    for (char c : digits)
      if (__builtin_mul_overflow(value, std::uint64_t{10}, &value) ||
          __builtin_add_overflow(value, static_cast<std::uint64_t>(c - '0'), &value))
        fail("'shape' extent " + digits.substr(0, 40) + " is too large");
    return static_cast<std::size_t>(value);
  }
  bool at_end() {
    skip_space();
    return pos_ >= text_.size();
  }
  [[noreturn]] void fail(const std::string& message) const { throw InputError(file_, "", message); }

 private:
  std::string text_, file_;
  std::size_t pos_ = 0;
};

std::string shape_text(const std::vector<std::size_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

std::uint32_t little_endian(const unsigned char* bytes, int count) {
  std::uint32_t value = 0;
  for (int i = count - 1; i >= 0; --i) value = (value << 8) | bytes[i];
  return value;
}

}  // namespace

std::string_view npy_descr(NpyDtype dtype) {
  switch (dtype) {
    case NpyDtype::float64: return "<f8";
    case NpyDtype::float32: return "<f4";
    case NpyDtype::float16: return "<f2";
    case NpyDtype::boolean: return "|b1";
  }
  return "?";
}

NpyArray read_npy(const std::filesystem::path& path, const NpyReadOptions& options) {
  const InputFile in(path);
  const std::string file = in.name();
  if (in.size() < 10) throw InputError(file, "", "not an NPY file (" + std::to_string(in.size()) + " bytes, too short)");
  const std::string head = in.read(0, std::min<std::uint64_t>(in.size(), 12));
  if (std::memcmp(head.data(), kMagic, kMagicSize) != 0) throw InputError(file, "", "not an NPY file (bad magic string)");
  const auto* raw = reinterpret_cast<const unsigned char*>(head.data());
  const int major = raw[6];
  if (major < 1 || major > 3) throw InputError(file, "", "unsupported NPY version " + std::to_string(major));
  const int length_bytes = major == 1 ? 2 : 4;
  const std::size_t header_start = 8 + static_cast<std::size_t>(length_bytes);
  if (head.size() < header_start) throw InputError(file, "", "truncated NPY header");
  const std::size_t header_length = little_endian(raw + 8, length_bytes);
  if (header_length > kMaxNpyHeaderBytes)
    throw InputError(file, "", "NPY header of " + std::to_string(header_length) + " bytes, more than the " +
                                   std::to_string(kMaxNpyHeaderBytes) + " this reader accepts");
  if (in.size() < header_start + header_length) throw InputError(file, "", "truncated NPY header");

  HeaderParser header(in.read(header_start, header_length), file);
  NpyArray array;
  std::string descr;
  bool fortran = false, have_descr = false, have_order = false, have_shape = false;
  header.expect('{');
  while (!header.accept('}')) {
    const std::string key = header.quoted();
    header.expect(':');
    if (key == "descr") {
      if (have_descr) header.fail("'descr' appears twice in the NPY header");
      descr = header.quoted();
      have_descr = true;
    } else if (key == "fortran_order") {
      if (have_order) header.fail("'fortran_order' appears twice in the NPY header");
      const std::string value = header.word();
      if (value != "True" && value != "False") header.fail("'fortran_order' must be True or False");
      fortran = value == "True";
      have_order = true;
    } else if (key == "shape") {
      if (have_shape) header.fail("'shape' appears twice in the NPY header");
      header.expect('(');
      while (!header.accept(')')) {
        if (array.shape.size() == kMaxNpyDimensions)
          header.fail("'shape' has more than " + std::to_string(kMaxNpyDimensions) + " dimensions");
        array.shape.push_back(header.integer());
        header.accept(',');
      }
      have_shape = true;
    } else {
      header.fail("unexpected key '" + key + "' in the NPY header");
    }
    header.accept(',');
  }
  if (!have_descr || !have_order || !have_shape) header.fail("NPY header lacks descr, fortran_order or shape");
  if (fortran) header.fail("Fortran-order arrays are not accepted; write C order");
  if (descr == "<f8") array.dtype = NpyDtype::float64;
  else if (descr == "<f4") array.dtype = NpyDtype::float32;
  else if (descr == "<f2") array.dtype = NpyDtype::float16;
  else if (descr == "|b1") array.dtype = NpyDtype::boolean;
  else header.fail("unsupported dtype '" + descr + "' (expected <f8, <f4, <f2 or |b1)");

  if (options.shape && array.shape != *options.shape)
    throw InputError(file, "shape", "expected " + shape_text(*options.shape) + ", got " + shape_text(array.shape));
  // The element count, checked against the limit before anything the
  // header claims is allocated or read.
  std::uint64_t count = 1;
  bool too_many = false;
  for (std::size_t extent : array.shape)
    too_many = too_many || __builtin_mul_overflow(count, static_cast<std::uint64_t>(extent), &count);
  // The product, not a running one: [1, 0] holds nothing (a varlen lse
  // with no rows).
  if (too_many || count > options.max_elements)
    throw InputError(file, "shape", "holds more than " + std::to_string(options.max_elements) +
                                        " elements, the most an array may hold here (" + options.limit_reason + ")");
  const std::uint64_t data_start = header_start + header_length;
  std::uint64_t expected = 0;
  const bool overflow = __builtin_mul_overflow(count, static_cast<std::uint64_t>(item_size(array.dtype)), &expected);
  if (overflow || in.size() - data_start != expected)
    throw InputError(file, "", "data holds " + std::to_string(in.size() - data_start) + " bytes, shape and dtype need " +
                                   (overflow ? std::string("more than 2^64") : std::to_string(expected)));
  const std::string bytes = in.read(data_start, expected, options.deadline);
  array.values.resize(count);
  const char* data = bytes.data();
  for (std::size_t i = 0; i < count; ++i) {
    switch (array.dtype) {
      case NpyDtype::float64: {
        std::uint64_t b;
        std::memcpy(&b, data + 8 * i, 8);
        array.values[i] = std::bit_cast<double>(b);
        break;
      }
      case NpyDtype::float32: {
        std::uint32_t b;
        std::memcpy(&b, data + 4 * i, 4);
        array.values[i] = static_cast<double>(std::bit_cast<float>(b));
        break;
      }
      case NpyDtype::float16: {
        std::uint16_t b;
        std::memcpy(&b, data + 2 * i, 2);
        array.values[i] = decode_bits(b, FormatId::float16);
        break;
      }
      case NpyDtype::boolean: {
        const auto byte = static_cast<unsigned char>(data[i]);
        if (byte > 1) throw InputError(file, "", "bool array holds a byte other than 0 or 1");
        array.values[i] = byte;
        break;
      }
    }
  }
  return array;
}

std::string encode_npy(const NpyArray& array) {
  std::string shape = "(";
  for (std::size_t extent : array.shape) shape += std::to_string(extent) + ", ";
  if (array.shape.size() > 1) shape.resize(shape.size() - 2);
  else if (array.shape.size() == 1) shape.resize(shape.size() - 1);
  shape += ")";
  std::string header = "{'descr': '" + std::string(npy_descr(array.dtype)) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // The total header (magic, version, length, dict, newline) is padded to a
  // multiple of 64 bytes, as NumPy does.
  const std::size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string bytes(kMagic, kMagicSize);
  bytes += '\x01';
  bytes += '\x00';
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>((header.size() >> 8) & 0xff);
  bytes += header;
  for (double value : array.values) {
    switch (array.dtype) {
      case NpyDtype::float64: {
        const auto b = std::bit_cast<std::uint64_t>(value);
        bytes.append(reinterpret_cast<const char*>(&b), 8);
        break;
      }
      case NpyDtype::float32: {
        const auto b = std::bit_cast<std::uint32_t>(static_cast<float>(value));
        bytes.append(reinterpret_cast<const char*>(&b), 4);
        break;
      }
      case NpyDtype::float16: {
        const auto b = static_cast<std::uint16_t>(encode_bits(value, FormatId::float16));
        bytes.append(reinterpret_cast<const char*>(&b), 2);
        break;
      }
      case NpyDtype::boolean:
        bytes += value != 0.0 ? '\x01' : '\x00';
        break;
    }
  }
  return bytes;
}

void write_file_atomically(const std::filesystem::path& path, const std::string& bytes) {
  std::filesystem::path temporary = path;
  temporary += ".partial";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError(path.string(), "", "cannot write file");
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw InputError(path.string(), "", "write failed");
  }
  std::filesystem::rename(temporary, path);
}

void write_npy(const std::filesystem::path& path, const NpyArray& array) {
  write_file_atomically(path, encode_npy(array));
}

}  // namespace attnspec
