// The run profiles (how many problems each clause sees and which shape
// classes), the statuses and the shape classes' names.
#include <array>

#include "properties/property.hpp"

namespace attnspec {
namespace {
constexpr std::array kProfiles = {
    Profile{"quick", 100, 100, false},
    Profile{"ci", 300, 100, true},
    Profile{"full", 1000, 100, true},
};
}  // namespace

const Profile* find_profile(std::string_view name) {
  for (const Profile& p : kProfiles)
    if (p.name == name) return &p;
  return nullptr;
}

std::string_view to_string(ShapeClass shape) {
  switch (shape) {
    case ShapeClass::small: return "small";
    case ShapeClass::tile: return "tile";
    case ShapeClass::long_rows: return "long";
  }
  return "?";
}

ShapeClass classify_shape(const Dims& d) {
  if (d.kv_len >= 1024) return ShapeClass::long_rows;
  if (d.q_len > 8 || d.kv_len > 8 || d.d_k > 16 || d.d_v > 16) return ShapeClass::tile;
  return ShapeClass::small;
}

std::vector<ShapeClass> expected_shapes_of(const Profile& profile) {
  if (profile.long_sequences) return {ShapeClass::small, ShapeClass::tile, ShapeClass::long_rows};
  return {ShapeClass::small, ShapeClass::tile};
}

std::string_view profile_names() { return "quick|ci|full"; }

std::string_view to_string(Status status) {
  switch (status) {
    case Status::pass: return "PASS";
    case Status::fail: return "FAIL";
    case Status::skip: return "SKIP";
    case Status::incomplete: return "INCOMPLETE";
  }
  return "?";
}

}  // namespace attnspec
