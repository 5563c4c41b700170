// The tight tier's sensitivity (issue 43): which clauses catch a float32
// kernel that is right except that it rounds its weights P to b
// significant bits before P V (adapters/mutants: make_weights_rounded_kernel).
// Runs every clause for each b given, one profile and seed, without
// shrinking, each failing clause stopped at its first failure (only
// whether it fails is asked), and prints one tab-separated line per
// clause: bits, profile, seed, clause, status, worst error / bound.
// bench/weights_bits.sh runs it for b = 24 down to 16 and keeps the lines
// in docs/results/; scripts/weights_bits_table.py makes the docs' table.
//
// Usage: weights_bits PROFILE SEED BITS...
#include <cstdio>
#include <cstdlib>
#include <string>

#include "adapters/mutants/mutants.hpp"
#include "properties/runner.hpp"

int main(int argc, char** argv) {
  using namespace attnspec;
  const std::string usage = "usage: weights_bits PROFILE SEED BITS...  (PROFILE: " + std::string(profile_names()) +
                            "; BITS: 2-24)\nEvery clause on a float32 kernel whose weights are rounded to BITS significant "
                            "bits before P V; one tab-separated line per clause.\n";
  if (argc == 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    std::fputs(usage.c_str(), stdout);
    return 0;
  }
  if (argc < 4) {
    std::fputs(usage.c_str(), stderr);
    return 2;
  }
  RunOptions options;
  options.profile = find_profile(argv[1]);
  if (!options.profile) {
    std::fprintf(stderr, "weights_bits: unknown profile '%s' (expected %s)\n", argv[1], std::string(profile_names()).c_str());
    return 2;
  }
  options.seed = std::strtoull(argv[2], nullptr, 10);
  options.shrink = false;
  options.judge_every_case = false;
  std::printf("bits\tprofile\tseed\tclause\tstatus\tworst_of_bound\n");
  for (int arg = 3; arg < argc; ++arg) {
    const int bits = std::atoi(argv[arg]);
    if (bits < 2 || bits > 24) {
      std::fprintf(stderr, "weights_bits: bits must be 2-24, not '%s'\n", argv[arg]);
      return 2;
    }
    const auto kernel = make_weights_rounded_kernel(bits);
    const RunReport report = run_conformance(*kernel, kernel->name(), options);
    for (const ClauseReport& r : report.results) {
      const std::string used = r.outcome.bound_used ? std::to_string(*r.outcome.bound_used) : "-";
      std::printf("%d\t%s\t%llu\t%s\t%s\t%s\n", bits, std::string(options.profile->name).c_str(),
                  static_cast<unsigned long long>(options.seed), r.clause.c_str(), std::string(to_string(r.outcome.status)).c_str(),
                  used.c_str());
      std::fflush(stdout);
    }
  }
  return 0;
}
