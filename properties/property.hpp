// What a property is: a function from a kernel, a profile and a seed to the
// outcome of one clause. Each clause of spec/clauses.cpp has exactly one
// property (properties/registry.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "adapters/kernel.hpp"
#include "formats/format.hpp"
#include "reference/problem.hpp"

namespace attnspec {

struct Profile {
  std::string_view name;
  int cases;              // generated problems per clause
  int max_size;           // RapidCheck's size bound: shapes grow with it
  bool long_sequences;    // include S >= 1024
};

// quick, ci or full; nullptr for an unknown name.
const Profile* find_profile(std::string_view name);
std::string_view profile_names();  // "quick|ci|full"

enum class Status { pass, fail, skip };
std::string_view to_string(Status status);

struct ClauseOutcome {
  Status status = Status::pass;
  int cases = 0;
  std::optional<double> max_error_u;  // error at the element nearest its bound, in u_out * |P||V|
  std::optional<double> bound_u;      // that element's bound, same units
  std::optional<double> bound_used;   // largest error / bound over all checked elements
  std::optional<Problem> counterexample;  // shrunk; inputs representable in the kernel's input format
  std::string reason;                 // why it failed or was skipped; informative notes
};

struct PropertyContext {
  Kernel& kernel;
  const Profile& profile;
  std::uint64_t seed;
  bool shrink = true;  // off: report the first failing problem as found
};

using PropertyFunction = ClauseOutcome (*)(PropertyContext& context);

}  // namespace attnspec
