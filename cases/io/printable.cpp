// UTF-8 validation per RFC 3629 (no overlong forms, no surrogates, nothing
// above U+10FFFF), escaping as it goes.
#include "cases/io/printable.hpp"

#include <cstdint>
#include <cstdio>

namespace attnspec {
namespace {

void append_hex(std::string& out, unsigned char byte) {
  char buffer[8];
  std::snprintf(buffer, sizeof buffer, "\\x%02x", byte);
  out += buffer;
}

// The length of the well-formed UTF-8 sequence at text[i], or 0.
std::size_t sequence_length(std::string_view text, std::size_t i, std::uint32_t& code_point) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  std::size_t length;
  if (lead < 0x80) {
    code_point = lead;
    return 1;
  } else if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
    code_point = lead & 0x1fu;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    code_point = lead & 0x0fu;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    code_point = lead & 0x07u;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (std::size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xc0u) != 0x80u) return 0;
    code_point = (code_point << 6) | (byte(i + k) & 0x3fu);
  }
  const bool overlong = (length == 3 && code_point < 0x800) || (length == 4 && code_point < 0x10000);
  const bool surrogate = code_point >= 0xd800 && code_point <= 0xdfff;
  if (overlong || surrogate || code_point > 0x10ffff) return 0;
  return length;
}

}  // namespace

std::string printable(std::string_view text, std::size_t max_bytes) {
  std::string out;
  const std::size_t end = text.size() > max_bytes ? max_bytes : text.size();
  std::size_t i = 0;
  while (i < end) {
    std::uint32_t code_point = 0;
    const std::size_t length = sequence_length(text, i, code_point);
    if (length == 0) {
      append_hex(out, static_cast<unsigned char>(text[i]));
      ++i;
      continue;
    }
    if (code_point == '\n') out += "\\n";
    else if (code_point == '\t') out += "\\t";
    else if (code_point == '\r') out += "\\r";
    else if (code_point < 0x20 || code_point == 0x7f) append_hex(out, static_cast<unsigned char>(code_point));
    else if (code_point >= 0x80 && code_point <= 0x9f) {  // C1 controls: CSI (0x9b) starts escape sequences too
      char buffer[12];
      std::snprintf(buffer, sizeof buffer, "\\u{%02x}", static_cast<unsigned>(code_point));
      out += buffer;
    } else {
      out.append(text.substr(i, length));
    }
    i += length;
  }
  if (text.size() > end) out += " ... [" + std::to_string(text.size() - end) + " more bytes]";
  return out;
}

}  // namespace attnspec
