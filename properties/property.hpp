// What a property is: a function from a kernel, a profile and a seed to the
// outcome of one clause. Each clause of spec/clauses.cpp has exactly one
// property (properties/registry.cpp).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/kernel.hpp"
#include "formats/format.hpp"
#include "reference/problem.hpp"

namespace attnspec {

struct Profile {
  std::string_view name;
  int cases;              // generated problems per clause
  int max_size;           // RapidCheck's size bound (the generators draw at nominal size whatever it is)
  bool long_sequences;    // include the long-rows shape class
};

// The shape classes of spec/SPEC.md section 7.1 (properties/generators.hpp
// draws them). A clause that judged no case of a class its profile draws
// is INCOMPLETE.
enum class ShapeClass {
  small,      // L, S <= 8 and d_k, d_v <= 16
  tile,       // L or S in 9..257 or a head dimension above 16
  long_rows,  // S >= 1024
};
inline constexpr int kShapeClasses = 3;
std::string_view to_string(ShapeClass shape);  // "small", "tile", "long"
ShapeClass classify_shape(const Dims& d);

// A kernel that declares max_elements below this many logits (B Hq L S,
// one 64 x 64 tile) is refused: too little of the suite could judge it.
inline constexpr std::uint64_t kMinMaxElements = 4096;

// More than this share of declined cases makes a clause INCOMPLETE.
inline constexpr double kMaxDeclinedShare = 0.10;

// quick, ci or full; nullptr for an unknown name.
const Profile* find_profile(std::string_view name);
std::string_view profile_names();  // "quick|ci|full"

// INCOMPLETE: what was judged passed, but too much was not judged (spec/
// SPEC.md section 8); it fails the run unless the user allows it.
enum class Status { pass, fail, skip, incomplete };
std::string_view to_string(Status status);

struct ClauseOutcome {
  Status status = Status::pass;
  int cases = 0;
  std::optional<double> max_error_u;  // error at the element nearest its bound, in u_out * |P||V|
  std::optional<double> bound_u;      // that element's bound, same units
  std::optional<double> bound_used;   // largest error / bound over all checked elements
  std::optional<Problem> counterexample;  // shrunk; inputs representable in the kernel's input format
  std::string reason;                 // why it failed or was skipped; informative notes
  // How the counterexample was laid out (VARLEN, KVCACHE, PAGED: the
  // failure needs the layout; saved with the case).
  std::optional<LayoutRecipe> counterexample_layout;
  // The counterexample is a merge's input in its attention form (MERGE;
  // saved with "merge": true).
  bool counterexample_merge = false;
  // What was and was not judged (spec/SPEC.md section 8).
  int declined = 0;                   // cases the kernel turned down
  int discarded = 0;                  // cases neither judged nor declined (undecidable, nothing to check)
  std::array<int, kShapeClasses> judged_by_shape{};  // judged cases per ShapeClass, before any failure
  std::uint64_t size_limit = 0;       // the kernel's max_elements in force; 0: none below attnspec's own
  // Output elements compared with a bound, and those of them whose bound is
  // infinite: compared with nothing, so not judged (spec/SPEC.md section 7).
  std::uint64_t elements = 0, unbounded_elements = 0;
  // What broke, as stable labels a script can compare between runs (the
  // Findings expectations, expected/; spec/SPEC.md section 7.1):
  // "shape:CLASS" for each shape class with a failing drawn case,
  // "golden:NAME" for each failing golden case, "faults" where cases were
  // lost to the kernel's machinery. Sorted, no repeats; empty for a
  // clause that does not fail.
  std::vector<std::string> signatures;
  // Which judged drawn case failed first (1 for the first case), 0 if none
  // did: how soon the clause saw the failure (README's mutant table).
  int first_failing_case = 0;
  double declined_share() const {
    const int drawn = cases + declined;
    return drawn > 0 ? static_cast<double>(declined) / drawn : 0.0;
  }
};

struct PropertyContext {
  Kernel& kernel;
  const Profile& profile;
  std::uint64_t seed;
  bool shrink = true;  // off: report the first failing problem as found
  // The shape classes this clause must judge at least one case of: the
  // profile's (expected_shapes_of); a clause that draws fewer narrows it.
  std::vector<ShapeClass> expected_shapes;
  // Shrinking's budget in CPU seconds from the first failure (spec/SPEC.md
  // section 7.1); tests that check how far shrinking gets raise it, so that
  // a slow machine (or a sanitizer build) reaches the same counterexample.
  int shrink_cpu_seconds = 10;
  // Judge every drawn case of a failing clause (spec/SPEC.md section 7.1);
  // off (attnspec run --stop-at-first-failure), a failing clause stops at
  // its first failure: faster, and the count of failing cases unknown.
  bool judge_every_case = true;
  // Set by the harness while it judges the drawn cases after the first
  // failure (spec/SPEC.md section 7.1): none of them becomes the
  // counterexample, so a body that keeps what goes with it (a layout
  // recipe) leaves it alone then.
  bool judging_the_rest = false;
};

std::vector<ShapeClass> expected_shapes_of(const Profile& profile);

using PropertyFunction = ClauseOutcome (*)(PropertyContext& context);

}  // namespace attnspec
