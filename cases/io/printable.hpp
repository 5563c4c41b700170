// Text from outside (an adapter's error string, bytes of a malformed file)
// made safe to show: control characters and bytes that are not UTF-8
// escaped, so nothing reaches the user's terminal as an escape sequence
// and every JSON report stays valid UTF-8; long text cut, so one 10 MB
// message cannot flood a log.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace attnspec {

inline constexpr std::size_t kPrintableDefaultBytes = 400;

// Tabs, newlines and other C0/C1 controls and DEL become \t, \n, \xNN or
// \u{NN}; a byte that does not start a well-formed UTF-8 sequence becomes
// \xNN. Past max_bytes of input the rest is replaced by
// " ... [N more bytes]".
std::string printable(std::string_view text, std::size_t max_bytes = kPrintableDefaultBytes);

}  // namespace attnspec
