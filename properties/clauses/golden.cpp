// GOLDEN: the bundled golden cases (cases/golden) that the kernel can take,
// within the precision model's bound of their certified results.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "cases/io/case_dir.hpp"
#include "cases/io/printable.hpp"
#include "properties/clauses/clauses.hpp"
#include "properties/harness.hpp"

namespace attnspec {
namespace {

namespace fs = std::filesystem;

// ATTNSPEC_GOLDEN_DIR if set, else the source tree's or the installed copy.
fs::path golden_directory() {
  if (const char* dir = std::getenv("ATTNSPEC_GOLDEN_DIR")) return dir;
#ifdef ATTNSPEC_SOURCE_GOLDEN_DIR
  if (fs::is_directory(ATTNSPEC_SOURCE_GOLDEN_DIR)) return ATTNSPEC_SOURCE_GOLDEN_DIR;
#endif
#ifdef ATTNSPEC_INSTALLED_GOLDEN_DIR
  return ATTNSPEC_INSTALLED_GOLDEN_DIR;
#else
  return "cases/golden";
#endif
}

bool representable_in(const Problem& p, FormatId format) {
  for (const auto* values : {&p.q, &p.k, &p.v})
    for (double x : *values)
      if (!is_representable(x, format)) return false;
  return true;
}

}  // namespace

ClauseOutcome check_golden(PropertyContext& context) {
  ClauseOutcome outcome;
  const fs::path dir = golden_directory();
  if (!fs::is_directory(dir)) {
    outcome.status = Status::skip;
    outcome.reason = "no golden cases at " + dir.string() + " (set ATTNSPEC_GOLDEN_DIR)";
    return outcome;
  }
  std::vector<fs::path> cases;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_directory()) cases.push_back(entry.path());
  std::sort(cases.begin(), cases.end());
  const double u_out = output_unit(context.kernel);
  ErrorStats stats;
  int skipped = 0, declined = 0, faulted = 0;
  std::vector<std::string> failing;
  std::string first_fault, first_failure;
  std::optional<Problem> first_faulted;
  for (const fs::path& path : cases) {
    const Case c = load_case(path);
    if (!missing_capabilities(context.kernel.capabilities(), c.problem).empty() ||
        !representable_in(c.problem, context.kernel.formats().input)) {
      ++skipped;
      continue;
    }
    std::string failure;
    try {
      failure = outside_bound(c.problem, evaluate(context.kernel, c.problem), u_out, stats);
    } catch (const KernelUnsupported&) {
      ++declined;  // not judged: counted in the reason, never a pass
      continue;
    } catch (const KernelFault& e) {
      if (faulted++ == 0) {
        first_fault = path.filename().string() + ": " + printable(e.what(), 2000);
        first_faulted = c.problem;
      }
      continue;
    } catch (const std::exception& e) {
      failure = std::string("exception: ") + printable(e.what(), 2000);
    }
    ++outcome.cases;
    // Every case is judged, so a known failure of one case (a fully masked
    // row, say) cannot hide a new failure of another: the reason names
    // them all, the first in full, and the first is the counterexample.
    if (!failure.empty()) {
      if (failing.empty()) {
        first_failure = path.filename().string() + ": " + failure;
        outcome.counterexample = c.problem;
      }
      failing.push_back(path.filename().string());
    }
  }
  if (!failing.empty()) {
    outcome.status = Status::fail;
    std::string names;
    for (const std::string& name : failing) {
      if (!names.empty()) names += ", ";
      names += name;
      outcome.signatures.push_back("golden:" + name);
    }
    outcome.reason = std::to_string(failing.size()) + " of " + std::to_string(outcome.cases) +
                     " judged golden case(s) fail (" + names + "); first: " + first_failure;
    if (faulted > 0) outcome.reason += "; " + std::to_string(faulted) + " lost to kernel faults (first: " + first_fault + ")";
    if (skipped > 0) outcome.reason += "; " + std::to_string(skipped) + " skipped (capabilities or input format)";
  }
  if (stats.max_error_u >= 0) {
    outcome.max_error_u = stats.max_error_u;
    outcome.bound_u = stats.bound_u;
    outcome.bound_used = stats.max_ratio;
  }
  if (faulted > 0) outcome.signatures.push_back("faults");
  std::sort(outcome.signatures.begin(), outcome.signatures.end());
  if (faulted > 0 && outcome.status == Status::pass) {
    outcome.status = Status::fail;
    outcome.reason = std::to_string(faulted) + " golden case(s) lost to kernel faults (first: " + first_fault + "); the other " +
                     std::to_string(outcome.cases) + " case(s) passed";
    outcome.counterexample = first_faulted;
    return outcome;
  }
  outcome.declined = declined;
  if (outcome.status == Status::pass && outcome.cases == 0 && declined == 0) {
    outcome.status = Status::skip;
    outcome.reason = "no golden case fits the kernel's capabilities and input format";
  } else if (outcome.status == Status::pass) {
    if (skipped > 0) outcome.reason = std::to_string(skipped) + " golden cases skipped (capabilities or input format)";
    if (declined > 0) {
      if (!outcome.reason.empty()) outcome.reason += ", ";
      outcome.reason += std::to_string(declined) + " declined by the kernel";
    }
    // Declines are not passes (spec/SPEC.md section 8).
    if (outcome.declined_share() > kMaxDeclinedShare) outcome.status = Status::incomplete;
  }
  return outcome;
}

}  // namespace attnspec
