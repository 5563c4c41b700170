// The property of each clause, by clause ID.
#pragma once

#include <span>
#include <string_view>

#include "properties/property.hpp"

namespace attnspec {

struct RegisteredProperty {
  std::string_view clause;
  PropertyFunction check;
};

std::span<const RegisteredProperty> registered_properties();
PropertyFunction find_property(std::string_view clause);

}  // namespace attnspec
