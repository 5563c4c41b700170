// Reading and writing a case's "layout" object.
#include "cases/io/layout_field.hpp"

#include <set>

#include "cases/io/input_error.hpp"

namespace attnspec {
namespace {

using nlohmann::json;

// The fields of each kind, all required.
const std::set<std::string> kVarlenFields = {"kind", "q_lens", "kv_lens", "padding_q_rows", "padding_k_rows"};
const std::set<std::string> kCacheFields = {"kind",        "kv_lens",     "new_len",   "page_size",
                                            "spare_slots", "spare_pages", "page_order"};

}  // namespace

std::optional<LayoutRecipe> read_layout_field(const json& object, const std::string& file) {
  if (!object.contains("layout") || object["layout"].is_null()) return std::nullopt;
  const json& value = object["layout"];
  const auto fail = [&](const std::string& field, const std::string& message) {
    throw InputError(file, "layout" + (field.empty() ? "" : "." + field), message);
  };
  if (!value.is_object()) fail("", "expected null or an object with a \"kind\", got " + value.dump());
  if (!value.contains("kind")) fail("kind", "missing (required: \"varlen\" or \"kv_cache\")");
  LayoutRecipe recipe;
  if (value["kind"] == "varlen") recipe.kind = LayoutKind::varlen;
  else if (value["kind"] == "kv_cache") recipe.kind = LayoutKind::kv_cache;
  else fail("kind", "expected one of \"varlen\", \"kv_cache\", got " + value["kind"].dump());
  const std::set<std::string>& fields = recipe.kind == LayoutKind::varlen ? kVarlenFields : kCacheFields;
  for (const auto& [key, item] : value.items())
    if (!fields.count(key)) fail(key, "unknown field for a " + value["kind"].get<std::string>() + " layout");
  for (const std::string& field : fields)
    if (!value.contains(field)) fail(field, "missing (required)");
  const auto integer = [&](const std::string& field, const json& item) {
    if (!item.is_number_integer() || item.get<long long>() < -(1ll << 30) || item.get<long long>() > (1ll << 30))
      fail(field, "expected an integer, got " + item.dump());
    return item.get<int>();
  };
  const auto integers = [&](const std::string& field) {
    const json& list = value[field];
    if (!list.is_array()) fail(field, "expected an array of integers, got " + list.dump());
    std::vector<int> values;
    for (std::size_t i = 0; i < list.size(); ++i) values.push_back(integer(field + "[" + std::to_string(i) + "]", list[i]));
    return values;
  };
  recipe.kv_lens = integers("kv_lens");
  if (recipe.kind == LayoutKind::varlen) {
    recipe.q_lens = integers("q_lens");
    recipe.padding_q_rows = integer("padding_q_rows", value["padding_q_rows"]);
    recipe.padding_k_rows = integer("padding_k_rows", value["padding_k_rows"]);
  } else {
    recipe.new_len = integer("new_len", value["new_len"]);
    recipe.cache.page_size = integer("page_size", value["page_size"]);
    recipe.cache.spare_slots = integer("spare_slots", value["spare_slots"]);
    recipe.cache.spare_pages = integer("spare_pages", value["spare_pages"]);
    recipe.cache.page_order = integers("page_order");
  }
  return recipe;
}

json layout_json(const LayoutRecipe& recipe) {
  if (recipe.kind == LayoutKind::varlen)
    return {{"kind", "varlen"},
            {"q_lens", recipe.q_lens},
            {"kv_lens", recipe.kv_lens},
            {"padding_q_rows", recipe.padding_q_rows},
            {"padding_k_rows", recipe.padding_k_rows}};
  return {{"kind", "kv_cache"},
          {"kv_lens", recipe.kv_lens},
          {"new_len", recipe.new_len},
          {"page_size", recipe.cache.page_size},
          {"spare_slots", recipe.cache.spare_slots},
          {"spare_pages", recipe.cache.spare_pages},
          {"page_order", recipe.cache.page_order}};
}

}  // namespace attnspec
