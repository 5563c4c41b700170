// Fuzzes the attnspec-process/1 reply parsers (adapters/process/protocol.hpp):
// each input, as a std::string_view, goes to parse_hello_reply and then to
// parse_run_reply. A ProtocolError is the expected answer to a bad reply; a
// crash, another exception type, a hang, a sanitizer report or a leak is a
// finding.
#include <cstdint>
#include <string_view>

#include "adapters/process/protocol.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  try {
    (void)attnspec::parse_hello_reply(line);
  } catch (const attnspec::ProtocolError&) {
  } catch (...) {
    unexpected_exception();
  }
  try {
    (void)attnspec::parse_run_reply(line);
  } catch (const attnspec::ProtocolError&) {
  } catch (...) {
    unexpected_exception();
  }
  return 0;
}
