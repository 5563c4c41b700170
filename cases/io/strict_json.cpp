// nlohmann's parser callback sees every event with its depth: objects and
// arrays deeper than the limit, and keys already seen in the same object,
// stop the parse there, before the document is built any further.
#include "cases/io/strict_json.hpp"

#include <set>
#include <vector>

#include "cases/io/input_error.hpp"
#include "cases/io/printable.hpp"

namespace attnspec {

nlohmann::json parse_strict_json(std::string_view text, const std::string& file) {
  using nlohmann::json;
  std::vector<std::set<std::string>> keys_of_open_objects;
  const json::parser_callback_t callback = [&](int depth, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (depth >= kMaxJsonDepth)
          throw InputError(file, "", "nested more than " + std::to_string(kMaxJsonDepth) +
                                         " levels deep (the most a document may be)");
        if (event == json::parse_event_t::object_start) keys_of_open_objects.emplace_back();
        break;
      case json::parse_event_t::key: {
        const std::string key = parsed.get<std::string>();
        if (!keys_of_open_objects.back().insert(key).second)
          throw InputError(file, printable(key, 80), "appears twice in the same object (duplicate keys are refused)");
        break;
      }
      case json::parse_event_t::object_end:
        keys_of_open_objects.pop_back();
        break;
      default:
        break;
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), callback);
  } catch (const json::exception& e) {
    // "[json.exception.parse_error.101] parse error at line 1, column 3: ..."
    // without the library's tag.
    std::string message = e.what();
    if (message.rfind("[json.exception.", 0) == 0 && message.find("] ") != std::string::npos)
      message.erase(0, message.find("] ") + 2);
    throw InputError(file, "", "invalid JSON: " + printable(message, 200));
  }
}

}  // namespace attnspec
