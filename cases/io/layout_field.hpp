// A case's "layout" (spec/SPEC.md section 4): how the dense problem of its
// arrays is laid out for a kernel that takes variable-length batches or KV
// caches (section 2.5), so that a counterexample of VARLEN, KVCACHE or
// PAGED reproduces with `attnspec check`.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "reference/layouts.hpp"

namespace attnspec {

// Absent or null: none. Throws InputError naming the field for anything
// else that is not a layout object; the lengths against the problem's
// shape are checked by validate(LayoutRecipe, Problem).
std::optional<LayoutRecipe> read_layout_field(const nlohmann::json& object, const std::string& file);
nlohmann::json layout_json(const LayoutRecipe& recipe);

}  // namespace attnspec
