// The run profiles: how many problems each clause sees and how large.
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

std::string_view profile_names() { return "quick|ci|full"; }

std::string_view to_string(Status status) {
  switch (status) {
    case Status::pass: return "PASS";
    case Status::fail: return "FAIL";
    case Status::skip: return "SKIP";
  }
  return "?";
}

}  // namespace attnspec
