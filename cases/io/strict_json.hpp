// JSON from outside (case.json, expected.json, an adapter's protocol
// lines), parsed strictly: nesting at most kMaxJsonDepth levels deep (a
// 200 000-level document would otherwise overflow the stack of anything
// that walks it), no key twice in one object (which value wins is not
// something a case should leave to the parser), the input valid UTF-8.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace attnspec {

inline constexpr int kMaxJsonDepth = 64;

// Throws InputError(file, ...) naming what is wrong: the parser's message
// (made printable), the depth, or the duplicate key and where it is.
nlohmann::json parse_strict_json(std::string_view text, const std::string& file);

}  // namespace attnspec
