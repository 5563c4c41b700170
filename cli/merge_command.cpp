// `attnspec merge`: the reports of the shards of one run (`attnspec run
// --shard I/N --json shardI.json`, one CI job each) combined into the
// report of the whole run: its clause lines, matrix, JSON and JUnit, and
// its exit status, as if it had run in one job.
#include <iostream>
#include <memory>

#include "cases/io/input_file.hpp"
#include "cases/io/npy.hpp"
#include "cases/io/strict_json.hpp"
#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "properties/report_merge.hpp"
#include "spec/clauses.hpp"

namespace attnspec::cli {
namespace {

struct MergeArgs {
  std::vector<std::string> reports;
  std::string json, junit;
};

constexpr std::uint64_t kMaxReportBytes = 64u << 20;

int merge(const MergeArgs& args) {
  std::vector<RunReport> reports;
  for (const std::string& file : args.reports) {
    const std::string text = read_input_file(file, kMaxReportBytes, "a report is at most 64 MiB");
    reports.push_back(report_from_json(parse_strict_json(text, file), file));
  }
  const RunReport merged = merge_reports(reports, args.reports);
  std::cout << "attnspec merge: " << args.reports.size() << " report(s) of kernel " << merged.kernel << ", profile "
            << merged.profile << ", seed " << merged.seed << "\n";
  if (merged.cpu) std::cout << "  CPU kind: " << merged.cpu->kind << " (" << merged.cpu->model << ")\n";
  if (!merged.available()) std::cout << "  not available on that machine: " << merged.platform.unavailable << "\n";
  std::size_t pass = 0, fail = 0, skip = 0, incomplete = 0;
  for (const ClauseReport& r : merged.results) {
    std::cout << format_line(r) << "\n";
    pass += r.outcome.status == Status::pass;
    fail += r.outcome.status == Status::fail;
    skip += r.outcome.status == Status::skip;
    incomplete += r.outcome.status == Status::incomplete;
  }
  std::string absent;
  for (const Clause& clause : clause_table()) {
    bool found = false;
    for (const ClauseReport& r : merged.results) found = found || r.clause == clause.id;
    if (!found) absent += " " + std::string(clause.id);
  }
  if (!absent.empty()) std::cout << "  clauses in no report (not run):" << absent << "\n";
  std::cout << "\n" << format_matrix({merged}) << "\n";
  std::cout << pass << " passed, " << fail << " failed, " << skip << " skipped";
  if (incomplete) std::cout << ", " << incomplete << " incomplete";
  std::cout << "\n";
  if (!args.json.empty())
    write_file_atomically(args.json, report_json(merged).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  if (!args.junit.empty()) write_file_atomically(args.junit, report_junit(merged));
  if (merged.failed()) return kExitFailed;
  return merged.available() ? 0 : kExitUnavailable;
}

}  // namespace

Command add_merge_command(CLI::App& app) {
  auto args = std::make_shared<MergeArgs>();
  CLI::App* sub = app.add_subcommand("merge", "Combine the JSON reports of the shards of one run into one report");
  sub->footer(
      "The reports must be of one kernel, profile, seed and options, from machines of one CPU kind and\n"
      "code path; a clause may be in one report only, and a run sharded with --shard I/N needs all N\n"
      "shards. Prints the clause lines and the matrix of the whole run. Exit status as attnspec run:\n"
      "0 all pass or skip, 1 a failure or an INCOMPLETE clause (unless the shards ran with\n"
      "--allow-incomplete), 2 bad input (nothing written), 3 the kernel was not available.\n\n"
      "Example: attnspec run --kernel online-f32 --profile ci --shard 0/2 --json s0.json   (one CI job)\n"
      "         attnspec run --kernel online-f32 --profile ci --shard 1/2 --json s1.json   (another)\n"
      "         attnspec merge s0.json s1.json --json report.json --junit report.xml");
  sub->add_option("reports", args->reports, "the shards' attnspec-report/1 JSON files")->required()->check(CLI::ExistingFile);
  sub->add_option("--json", args->json, "write the merged attnspec-report/1 JSON report to FILE")->check(writable_file());
  sub->add_option("--junit", args->junit, "write the merged JUnit XML report to FILE")->check(writable_file());
  return {sub, [args] { return merge(*args); }};
}

}  // namespace attnspec::cli
