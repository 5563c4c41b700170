// Strict parsing of the adapter's replies: every field checked for presence
// and type, unknown fields rejected, each error naming the field and what
// was expected.
#include "adapters/process/protocol.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <nlohmann/json.hpp>

#include "cases/io/input_error.hpp"
#include "cases/io/printable.hpp"
#include "cases/io/strict_json.hpp"
#include "formats/format.hpp"

namespace attnspec {
namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 23> kCapabilityKeys = {
    "masks",   "causal",  "window",   "alibi", "sinks", "descales", "gqa", "scale", "softcap", "dv_ne_dk", "lse",
    "fully_masked_rows", "kv_len_at_least_q_len", "causal_windows_only", "causal_only", "alibi_paper_slopes_only",
    "varlen", "kv_cache",
    "paged_kv_cache", "page_sizes", "merge_partials", "max_elements", "backward"};
constexpr std::array<std::string_view, 2> kMasks = {"bool", "additive"};
constexpr std::array<std::string_view, 2> kCausal = {"top_left", "bottom_right"};

[[noreturn]] void fail(const std::string& field, const std::string& message) {
  throw ProtocolError("field '" + printable(field, 100) + "': " + printable(message, 300));
}

// An adapter's value, as JSON text that is safe to show.
std::string shown(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

// Strictly parsed (cases/io/strict_json.hpp: depth, duplicate keys, UTF-8);
// the line is shown escaped and cut, since it can be any bytes at all.
json parse_object(std::string_view line, std::string_view what) {
  json message;
  try {
    message = parse_strict_json(line, std::string(what));
  } catch (const InputError& e) {
    throw ProtocolError("the " + std::string(what) + " is not JSON (" + e.detail() + "): '" + printable(line, 200) + "'");
  }
  if (!message.is_object()) throw ProtocolError("the " + std::string(what) + " is not a JSON object: '" + printable(line, 200) + "'");
  return message;
}

void reject_unknown(const json& object, const std::string& where, std::initializer_list<std::string_view> known) {
  for (const auto& [key, value] : object.items())
    if (std::find(known.begin(), known.end(), key) == known.end())
      fail(where + key, "unknown field (a typo? see adapters/process/attnspec-process-1.schema.json)");
}

bool get_bool(const json& object, const std::string& key, const std::string& where) {
  if (!object.contains(key)) return false;  // a missing capability is an unsupported one
  if (!object[key].is_boolean()) fail(where + key, "expected true or false");
  return object[key].get<bool>();
}

FormatId get_format(const json& formats, const std::string& key) {
  if (!formats.contains(key)) fail("formats." + key, "missing (expected one of " + std::string(format_names()) + ")");
  const json& value = formats[key];
  const auto format = value.is_string() ? parse_format(value.get<std::string>()) : std::nullopt;
  if (!format) fail("formats." + key, "expected one of " + std::string(format_names()) + ", got " + shown(value));
  return *format;
}

template <std::size_t N>
std::vector<std::string> get_names(const json& object, const std::string& key, const std::array<std::string_view, N>& allowed) {
  std::vector<std::string> names;
  if (!object.contains(key)) return names;
  const json& list = object[key];
  std::string expected;
  for (std::string_view name : allowed) expected += (expected.empty() ? "\"" : ", \"") + std::string(name) + "\"";
  if (!list.is_array()) fail("capabilities." + key, "expected a list of " + expected);
  for (const json& item : list) {
    if (!item.is_string() || std::find(allowed.begin(), allowed.end(), item.get<std::string>()) == allowed.end())
      fail("capabilities." + key, "expected a list of " + expected + ", got " + shown(item) + " in it");
    names.push_back(item.get<std::string>());
  }
  return names;
}

bool has(const std::vector<std::string>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

bool AdapterInfo::operator==(const AdapterInfo& other) const {
  const Capabilities &a = capabilities, &b = other.capabilities;
  return name == other.name && formats.input == other.formats.input && formats.accumulate == other.formats.accumulate &&
         formats.output == other.formats.output && a.bool_mask == b.bool_mask && a.additive_mask == b.additive_mask &&
         a.causal_top_left == b.causal_top_left && a.causal_bottom_right == b.causal_bottom_right &&
         a.window_top_left == b.window_top_left && a.window_bottom_right == b.window_bottom_right &&
         a.alibi_top_left == b.alibi_top_left && a.alibi_bottom_right == b.alibi_bottom_right && a.sinks == b.sinks &&
         a.descales == b.descales && a.gqa == b.gqa &&
         a.explicit_scale == b.explicit_scale && a.softcap == b.softcap && a.dv_ne_dk == b.dv_ne_dk && a.lse == b.lse &&
         a.fully_masked_rows == b.fully_masked_rows && a.kv_len_at_least_q_len == b.kv_len_at_least_q_len &&
         a.causal_windows_only == b.causal_windows_only && a.varlen == b.varlen && a.kv_cache == b.kv_cache &&
         a.causal_only == b.causal_only && a.alibi_paper_slopes_only == b.alibi_paper_slopes_only &&
         a.paged_kv_cache == b.paged_kv_cache && a.page_sizes == b.page_sizes &&
         a.merge_partials == b.merge_partials && a.backward == b.backward &&
         formats.weights == other.formats.weights && formats.weights_scale == other.formats.weights_scale &&
         formats.gradient_storage == other.formats.gradient_storage &&
         a.max_elements == b.max_elements;
}

std::string hello_request() { return json{{"op", "hello"}, {"protocol", kProcessProtocolVersion}}.dump(); }

std::string run_request(std::uint64_t id, const std::filesystem::path& case_directory, std::string_view kind) {
  json request = {{"op", "run"}, {"id", id}, {"case", case_directory.string()}};
  // Absent for dense cases: adapters written before the layouts read them
  // as they always did.
  if (kind != "dense") request["kind"] = std::string(kind);
  return request.dump();
}

std::string bye_request() { return json{{"op", "bye"}}.dump(); }

AdapterInfo parse_hello_reply(std::string_view line) {
  const json reply = parse_object(line, "hello reply");
  reject_unknown(reply, "", {"protocol", "name", "formats", "capabilities"});
  if (!reply.contains("protocol") || reply["protocol"] != kProcessProtocolVersion)
    fail("protocol", "expected 1, got " + (reply.contains("protocol") ? shown(reply["protocol"]) : std::string("nothing")));
  AdapterInfo info;
  if (!reply.contains("name") || !reply["name"].is_string() || reply["name"].get<std::string>().empty())
    fail("name", "expected a non-empty string");
  info.name = printable(reply["name"].get<std::string>(), 100);
  if (!reply.contains("formats") || !reply["formats"].is_object())
    fail("formats", "expected an object {\"input\": ..., \"accumulate\": ..., \"output\": ...}");
  const json& formats = reply["formats"];
  reject_unknown(formats, "formats.", {"input", "accumulate", "output", "weights", "weights_scale", "gradient_storage"});
  info.formats = {get_format(formats, "input"), get_format(formats, "accumulate"), get_format(formats, "output")};
  // Optional: P rounded to "weights" times "weights_scale" for P V (SPEC 6.4).
  if (formats.contains("weights")) {
    info.formats.weights = get_format(formats, "weights");
    if (formats.contains("weights_scale")) {
      const json& scale = formats["weights_scale"];
      if (!scale.is_number()) fail("formats.weights_scale", "expected a number >= 1, got " + shown(scale));
      info.formats.weights_scale = scale.get<double>();
    }
    if (const std::string error = formats_error(info.formats); !error.empty()) fail("formats.weights_scale", error);
  } else if (formats.contains("weights_scale")) {
    fail("formats.weights_scale", "given without formats.weights (the format P is rounded to)");
  }
  // Optional: the backward's P and dS stored in this format (SPEC 6.11).
  if (formats.contains("gradient_storage")) info.formats.gradient_storage = get_format(formats, "gradient_storage");
  if (!reply.contains("capabilities") || !reply["capabilities"].is_object())
    fail("capabilities", "expected an object (see the schema)");
  const json& caps = reply["capabilities"];
  for (const auto& [key, value] : caps.items())
    if (std::find(kCapabilityKeys.begin(), kCapabilityKeys.end(), key) == kCapabilityKeys.end())
      fail("capabilities." + key, "unknown capability (a typo? see adapters/process/attnspec-process-1.schema.json)");
  const std::vector<std::string> masks = get_names(caps, "masks", kMasks);
  const std::vector<std::string> causal = get_names(caps, "causal", kCausal);
  const std::vector<std::string> window = get_names(caps, "window", kCausal);  // the same alignments
  const std::vector<std::string> alibi = get_names(caps, "alibi", kCausal);
  Capabilities& c = info.capabilities;
  c.bool_mask = has(masks, "bool");
  c.additive_mask = has(masks, "additive");
  c.causal_top_left = has(causal, "top_left");
  c.causal_bottom_right = has(causal, "bottom_right");
  c.window_top_left = has(window, "top_left");
  c.window_bottom_right = has(window, "bottom_right");
  c.alibi_top_left = has(alibi, "top_left");
  c.alibi_bottom_right = has(alibi, "bottom_right");
  c.sinks = get_bool(caps, "sinks", "capabilities.");
  c.descales = get_bool(caps, "descales", "capabilities.");
  if (c.descales && format_info(info.formats.input).precision > 29)
    fail("capabilities.descales", "true with " + std::string(format_info(info.formats.input).name) +
                                      " inputs: descales need inputs of at most 29 significant bits (SPEC 2.4)");
  c.gqa = get_bool(caps, "gqa", "capabilities.");
  c.explicit_scale = get_bool(caps, "scale", "capabilities.");
  c.softcap = get_bool(caps, "softcap", "capabilities.");
  c.dv_ne_dk = get_bool(caps, "dv_ne_dk", "capabilities.");
  c.lse = get_bool(caps, "lse", "capabilities.");
  c.fully_masked_rows = get_bool(caps, "fully_masked_rows", "capabilities.");
  // Restrictions: absent means none.
  c.kv_len_at_least_q_len = get_bool(caps, "kv_len_at_least_q_len", "capabilities.");
  c.causal_windows_only = get_bool(caps, "causal_windows_only", "capabilities.");
  if (c.causal_windows_only && !c.window_top_left && !c.window_bottom_right)
    fail("capabilities.causal_windows_only", "true without any window alignment in capabilities.window");
  c.causal_only = get_bool(caps, "causal_only", "capabilities.");
  if (c.causal_only && !c.causal_top_left && !c.causal_bottom_right)
    fail("capabilities.causal_only", "true without any causal alignment in capabilities.causal");
  if (c.causal_only && c.causal_top_left && c.causal_bottom_right)
    fail("capabilities.causal_only", "true with both causal alignments: a kernel that always masks causally has one");
  c.alibi_paper_slopes_only = get_bool(caps, "alibi_paper_slopes_only", "capabilities.");
  if (c.alibi_paper_slopes_only && !c.alibi_top_left && !c.alibi_bottom_right)
    fail("capabilities.alibi_paper_slopes_only", "true without any ALiBi alignment in capabilities.alibi");
  // The layouts of SPEC 2.5 and the merge operator of 6.10, sent as
  // attnspec-packed/1 directories.
  c.varlen = get_bool(caps, "varlen", "capabilities.");
  c.kv_cache = get_bool(caps, "kv_cache", "capabilities.");
  c.paged_kv_cache = get_bool(caps, "paged_kv_cache", "capabilities.");
  if (caps.contains("page_sizes")) {
    const json& sizes = caps["page_sizes"];
    const auto fail_sizes = [&] {
      fail("capabilities.page_sizes",
           "expected a non-empty list of distinct page sizes, integers from 1 to 256 (PAGED's range), got " + shown(sizes));
    };
    if (!sizes.is_array() || sizes.empty()) fail_sizes();
    for (const json& size : sizes) {
      if (!size.is_number_integer() || size.get<long long>() < 1 || size.get<long long>() > 256) fail_sizes();
      const int value = static_cast<int>(size.get<long long>());
      if (std::find(c.page_sizes.begin(), c.page_sizes.end(), value) != c.page_sizes.end()) fail_sizes();
      c.page_sizes.push_back(value);
    }
    if (!c.paged_kv_cache) fail("capabilities.page_sizes", "given without paged_kv_cache: true");
  }
  if (caps.contains("merge_partials")) {
    const json& value = caps["merge_partials"];
    const auto format = value.is_string() ? parse_format(value.get<std::string>()) : std::nullopt;
    if (!format)
      fail("capabilities.merge_partials", "expected the format of the partial outputs its merge takes, one of " +
                                              std::string(format_names()) + ", got " + shown(value));
    c.merge_partials = *format;
  }
  // The backward pass of SPEC 2.6, sent with kind "backward"; P and dS
  // stored in formats.gradient_storage if it says so (SPEC 6.11).
  c.backward = get_bool(caps, "backward", "capabilities.");
  if (caps.contains("max_elements")) {
    const json& limit = caps["max_elements"];
    if (!limit.is_number_unsigned() || limit.get<std::uint64_t>() == 0)
      fail("capabilities.max_elements", "expected an integer >= 1 (or leave it out for no limit), got " + shown(limit));
    c.max_elements = limit.get<std::uint64_t>();
  }
  return info;
}

RunReply parse_run_reply(std::string_view line) {
  const json reply = parse_object(line, "reply to run");
  reject_unknown(reply, "", {"id", "ok", "unsupported", "error"});
  RunReply r;
  if (!reply.contains("id") || !reply["id"].is_number_unsigned()) fail("id", "expected the request's id (an integer >= 0)");
  r.id = reply["id"].get<std::uint64_t>();
  if (!reply.contains("ok") || !reply["ok"].is_boolean()) fail("ok", "expected true or false");
  r.ok = reply["ok"].get<bool>();
  r.unsupported = get_bool(reply, "unsupported", "");
  if (reply.contains("error")) {
    if (!reply["error"].is_string()) fail("error", "expected a string");
    r.error = printable(reply["error"].get<std::string>());
  }
  if (r.ok && r.unsupported) fail("unsupported", "true together with \"ok\": true");
  if (!r.ok && r.error.empty()) fail("error", "missing: a reply with \"ok\": false must say why");
  return r;
}

std::span<const std::string_view> capability_keys() { return kCapabilityKeys; }
std::span<const std::string_view> mask_names() { return kMasks; }
std::span<const std::string_view> causal_names() { return kCausal; }

}  // namespace attnspec
