// `attnspec run`: the conformance run of one kernel, one line per clause as
// it finishes, optional JSON and JUnit reports, counterexamples saved as
// case directories. Exit status 0 all pass or skip, 1 a failure, 2 usage,
// 3 a kernel not available on this machine (nothing judged).
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "adapters/cpu.hpp"
#include "adapters/registry.hpp"
#include "cases/io/input_error.hpp"
#include "cases/io/npy.hpp"
#include "cli/clause_workers.hpp"
#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "properties/runner.hpp"
#include "spec/clauses.hpp"

namespace attnspec::cli {
namespace {

struct RunArgs {
  std::vector<std::string> kernels;
  std::string dtype;
  std::string profile = "quick";
  std::vector<std::string> clauses;
  std::uint64_t seed = 1;
  std::string json, json_dir, junit, save_failures = "attnspec-failures", shard;
  bool strict_determinism = false;
  bool no_shrink = false;
  bool stop_at_first_failure = false;
  bool allow_incomplete = false;
  int jobs = 0;        // 0: default_jobs()
  std::string worker;  // set in a worker process: its queue directory
};

// The `run` arguments a worker process gets: everything that shapes the
// verdicts, nothing that writes reports.
std::vector<std::string> worker_arguments(const RunArgs& args, const std::string& kernel) {
  std::vector<std::string> a{"run", "--kernel", kernel, "--profile", args.profile, "--seed", std::to_string(args.seed)};
  if (!args.save_failures.empty()) a.insert(a.end(), {"--save-failures", args.save_failures});
  if (args.strict_determinism) a.push_back("--strict-determinism");
  if (args.allow_incomplete) a.push_back("--allow-incomplete");
  if (args.no_shrink) a.push_back("--no-shrink");
  if (args.stop_at_first_failure) a.push_back("--stop-at-first-failure");
  return a;
}

// A process adapter too gets one worker per core, though each worker
// starts an adapter of its own and an adapter may use every core itself:
// the suite's certified arithmetic is single-threaded and the adapter
// waits while it runs, so one worker leaves a core idle. The NumPy
// adapter's quick profile took 96 s with one worker and 57 s with two on
// a 2-core machine (README, the budgets).
int jobs_for(const RunArgs& args) { return args.jobs > 0 ? args.jobs : default_jobs(); }

// One report per kernel, DIR/KERNEL.json, the name kept to letters,
// digits, '.', '_' and '-' (a process adapter's reported name may hold
// anything).
void write_report_per_kernel(const std::string& dir, const std::vector<RunReport>& reports) {
  std::filesystem::create_directories(dir);
  for (const RunReport& report : reports) {
    std::string file = report.kernel;
    for (char& c : file)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
    write_file_atomically((std::filesystem::path(dir) / (file + ".json")).string(),
                          report_json(report).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  }
}

std::unique_ptr<Kernel> kernel_or_error(const std::string& name) {
  std::unique_ptr<Kernel> kernel = make_kernel(name);
  if (kernel) return kernel;
  std::string known;
  for (const KernelEntry& entry : builtin_kernels()) known += std::string(known.empty() ? "" : ", ") + std::string(entry.name);
  for (const KernelEntry& entry : registered_kernels()) known += ", " + std::string(entry.name);
  throw InputError("--kernel", "", "unknown kernel '" + name + "' (known: " + known +
                                       "; or cmd:COMMAND for a process adapter; see attnspec kernels)");
}

// After a failed run: where the adapter's stderr was kept, or that it
// wrote none (the kernel then removes its empty log).
void say_where_the_log_is(const Kernel& kernel) {
  const auto log = kernel.log_file();
  if (!log) return;
  std::error_code error;
  const auto size = std::filesystem::file_size(*log, error);
  if (!error && size > 0)
    std::cout << "  adapter stderr kept: " << log->string() << "\n";
  else if (!error)
    std::cout << "  adapter stderr: empty (nothing kept)\n";
}

// Options shared by every kernel of the run, checked before anything runs.
RunOptions parse_options(const RunArgs& args) {
  RunOptions options;
  options.profile = find_profile(args.profile);
  if (!options.profile)
    throw InputError("--profile", "", "unknown profile '" + args.profile + "' (expected " + std::string(profile_names()) + ")");
  for (const std::string& id : args.clauses)
    if (!find_clause(id)) throw InputError("--clause", "", "unknown clause '" + id + "' (see spec/SPEC.md section 7)");
  if (!args.shard.empty()) {
    int index = -1, count = 0;
    char slash = 0;
    std::istringstream in(args.shard);
    if (!(in >> index >> slash >> count) || slash != '/' || count < 1 || index < 0 || index >= count || !in.eof())
      throw InputError("--shard", "", "expected I/N with 0 <= I < N, got '" + args.shard + "'");
    options.shard_index = index;
    options.shard_count = count;
  }
  options.clauses = args.clauses;
  options.seed = args.seed;
  options.strict_determinism = args.strict_determinism;
  options.shrink = !args.no_shrink;
  options.judge_every_case = !args.stop_at_first_failure;
  options.allow_incomplete = args.allow_incomplete;
  if (!args.save_failures.empty()) options.save_failures = args.save_failures;
  return options;
}

// One --kernel: the kernel itself, or why this machine cannot run it.
struct Selected {
  std::string name;
  std::unique_ptr<Kernel> kernel;
  std::string unavailable;
};

int run(const RunArgs& args) {
  std::vector<std::string> names = args.kernels;
  if (names.size() == 1 && (names.front() == "all" || names.front() == "builtin")) {
    const bool third_party = names.front() == "all";
    names.clear();
    for (const KernelEntry& entry : builtin_kernels()) names.emplace_back(entry.name);
    if (third_party)
      for (const KernelEntry& entry : registered_kernels()) names.emplace_back(entry.name);
  }
  std::vector<Selected> selected;
  for (const std::string& name : names) {
    Selected s{name, nullptr, ""};
    try {
      s.kernel = kernel_or_error(name);
    } catch (const KernelUnavailable& e) {
      s.unavailable = e.reason;
    }
    selected.push_back(std::move(s));
  }
  if (selected.size() > 1 && (!args.json.empty() || !args.junit.empty() || !args.dtype.empty()))
    throw InputError("--json/--junit/--dtype", "", "take one --kernel at a time");
  if (!args.dtype.empty()) {
    const auto format = parse_format(args.dtype);
    if (!format) throw InputError("--dtype", "", "unknown format '" + args.dtype + "' (expected " + std::string(format_names()) + ")");
    const Kernel* kernel = selected.front().kernel.get();
    if (kernel && *format != kernel->formats().input)
      throw InputError("--dtype", "", "kernel " + names.front() + " takes " +
                                          std::string(format_info(kernel->formats().input).name) + " inputs, not " + args.dtype);
  }
  const RunOptions options = parse_options(args);
  if (!args.worker.empty()) {  // a worker of a parent's --jobs: clauses from its queue, lines only
    if (selected.size() != 1 || !selected.front().kernel)
      throw InputError("--worker", "", "takes one kernel available on this machine");
    Kernel& kernel = *selected.front().kernel;
    const std::optional<KernelEntry> entry = find_kernel_entry(selected.front().name);
    const bool failed = serve_clause_queue(kernel, selected.front().name, entry ? platform_of(*entry) : KernelPlatform{},
                                           options, args.clauses, args.worker);
    kernel.end_run(failed);
    if (failed) say_where_the_log_is(kernel);
    return failed ? kExitFailed : 0;
  }
  for (const Selected& s : selected)
    if (s.kernel && s.kernel->capabilities().max_elements < kMinMaxElements)
      throw InputError("--kernel", "", "kernel " + s.kernel->name() + " declares max_elements " +
                                           std::to_string(s.kernel->capabilities().max_elements) + ", below the " +
                                           std::to_string(kMinMaxElements) +
                                           " logits (B Hq L S) attnspec needs to judge it (spec/SPEC.md section 8)");

  std::vector<RunReport> reports;
  std::size_t pass = 0, fail = 0, skip = 0, incomplete = 0, unavailable = 0;
  for (Selected& s : selected) {
    if (!s.kernel) {
      std::cout << "attnspec run: kernel " << s.name << " is not available on this machine, nothing judged:\n  "
                << s.unavailable << "\n  CPU: " << describe(this_cpu()) << "\n";
      const std::optional<KernelEntry> entry = find_kernel_entry(s.name);
      reports.push_back(unavailable_report(s.name, entry ? platform_of(*entry) : KernelPlatform{s.unavailable, ""}, options));
      ++unavailable;
      continue;
    }
    Kernel& kernel = *s.kernel;
    const KernelFormats f = kernel.formats();
    std::cout << "attnspec run: kernel " << kernel.name() << " (input " << format_info(f.input).name << ", accumulate "
              << format_info(f.accumulate).name << ", output " << format_info(f.output).name << describe_weights(f)
              << "), profile "
              << options.profile->name << ", seed " << args.seed << "\n";
    const std::optional<KernelEntry> entry = find_kernel_entry(s.name);
    const KernelPlatform platform = entry ? platform_of(*entry) : KernelPlatform{};
    std::cout << "  CPU: " << describe(this_cpu());
    if (!platform.code_path.empty()) std::cout << "; code path: " << platform.code_path;
    std::cout << "\n";
    if (s.name.starts_with("cmd:")) std::cout << "  command: " << s.name.substr(4) << "\n";
    const std::vector<std::string> clauses = selected_clauses(options);
    const int jobs = std::min<int>(jobs_for(args), static_cast<int>(clauses.size()));
    if (jobs > 1)
      std::cout << "  " << jobs << " processes (--jobs): clause lines in the order they finish\n";
    if (const auto log = kernel.log_file()) {
      if (jobs > 1)
        std::cout << "  adapter stderr: " << log->string() << " and one file per worker's adapter (each kept and named if the run fails and it is not empty)\n";
      else
        std::cout << "  adapter stderr: " << log->string() << " (kept only if the run fails and it is not empty)\n";
    }
    if (kernel.capabilities().max_elements < kMaxTensorElements)
      std::cout << "  declared: at most " << kernel.capabilities().max_elements
                << " logits (B Hq L S) a case; a shape class it never reaches makes a clause INCOMPLETE\n";
    if (!kernel.capabilities().fully_masked_rows)
      std::cout << "  declared: rows with no visible key are not given the spec's 0; FULLMASK judges them, the other\n"
                   "  clauses leave them out\n";
    if (jobs > 1) {
      RunReport base = unavailable_report(s.name, platform, options);
      base.kernel = s.name.starts_with("cmd:") ? kernel.name() : s.name;
      reports.push_back(run_in_workers(kernel, options, worker_arguments(args, s.name), clauses, jobs, base));
    } else {
      reports.push_back(run_conformance(kernel, s.name, options, [](const ClauseReport& r) {
        std::cout << format_line(r) << "\n" << std::flush;
      }));
    }
    reports.back().platform = platform;
    for (const ClauseReport& r : reports.back().results) {
      if (r.outcome.status == Status::pass) ++pass;
      if (r.outcome.status == Status::fail) ++fail;
      if (r.outcome.status == Status::skip) ++skip;
      if (r.outcome.status == Status::incomplete) ++incomplete;
    }
    kernel.end_run(reports.back().failed());
    if (reports.back().failed()) say_where_the_log_is(kernel);
  }
  if (selected.size() > 1) std::cout << "\nConformance matrix (" << options.profile->name << " profile, seed " << args.seed
                                     << "; each cell: the largest error / bound over the clause's checks; N/A: the\n"
                                     << "kernel is not available on this machine):\n\n"
                                     << format_matrix(reports) << "\n";
  std::cout << pass << " passed, " << fail << " failed, " << skip << " skipped";
  if (incomplete)
    std::cout << ", " << incomplete << " incomplete (" << (args.allow_incomplete ? "allowed by --allow-incomplete" : "failing the run; --allow-incomplete to accept") << ")";
  if (unavailable) std::cout << ", " << unavailable << " kernel(s) not available here";
  std::cout << "\n";
  if (!args.json.empty())
    write_file_atomically(args.json,
                          report_json(reports.front()).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  if (!args.junit.empty()) write_file_atomically(args.junit, report_junit(reports.front()));
  if (!args.json_dir.empty()) write_report_per_kernel(args.json_dir, reports);
  for (const RunReport& report : reports)
    if (report.failed()) return 1;
  return unavailable ? kExitUnavailable : 0;
}

}  // namespace

Command add_run_command(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* sub = app.add_subcommand("run", "Conformance: every clause of spec/SPEC.md section 7 against a kernel");
  sub->footer(
      "Prints one line per clause: PASS / FAIL / SKIP / INCOMPLETE (DIFF for an informative difference),\n"
      "cases run, the largest error in units of u of the output format times |P||V|, and the bound there.\n"
      "INCOMPLETE: what was judged passed, but the kernel declined more than 10% of the cases or a shape\n"
      "class of the profile (small, tile, long) was never judged. A failure's shrunk counterexample is\n"
      "saved as a case directory with a command that reproduces it. Exit status: 0 all pass or skip,\n"
      "1 a failure or an INCOMPLETE clause (unless --allow-incomplete), 2 usage error or bad input, 3 no failure but a\n"
      "kernel is not available on this machine (its library lacks a code path for this CPU; nothing of\n"
      "it was judged; see attnspec kernels).\n\n"
      "Example: attnspec run --kernel online-bf16 --profile ci --json report.json");
  sub->add_option("--kernel", args->kernels, "kernel(s) to test (see: attnspec kernels), or cmd:COMMAND for a process adapter (spec/SPEC.md section 8); repeatable; 'builtin' for every built-in one, 'all' for those and the in-process third-party ones, with a clause x kernel matrix at the end")->required();
  sub->add_option("--dtype", args->dtype, "input format to test; must be the kernel's (" + std::string(format_names()) + ")");
  sub->add_option("--profile", args->profile, "quick (default; 100 cases a clause), ci (300, with S >= 1024), full (1000)");
  sub->add_option("--clause", args->clauses, "run only these clauses (IDs of spec/SPEC.md section 7); repeatable");
  sub->add_option("--seed", args->seed, "seed of the generators (default 1); the same seed gives the same run")
      ->check(unsigned_64());
  sub->add_option("--json", args->json, "write the attnspec-report/1 JSON report to FILE")->check(writable_file());
  sub->add_option("--json-dir", args->json_dir,
                  "write one attnspec-report/1 JSON report per kernel into DIR, as KERNEL.json (what a sweep keeps for "
                  "each seed; --json takes one kernel)")
      ->check(creatable_directory());
  sub->add_option("--junit", args->junit, "write a JUnit XML report to FILE (one testcase per clause x format)")
      ->check(writable_file());
  sub->add_option("--save-failures", args->save_failures, "directory for counterexample case directories (default attnspec-failures)")
      ->check(creatable_directory());
  sub->add_option("--shard", args->shard, "I/N: run only every N-th clause, starting at I (for CI fleets)");
  sub->add_flag("--strict-determinism", args->strict_determinism, "make DETERM differences fail the run");
  sub->add_flag("--allow-incomplete", args->allow_incomplete,
                "let INCOMPLETE clauses (too many declined cases, a shape class never judged) pass the run; they are still reported");
  sub->add_flag("--no-shrink", args->no_shrink, "save the first failing problem as found, without shrinking it (faster)");
  sub->add_flag("--stop-at-first-failure", args->stop_at_first_failure,
                "stop a failing clause at its first failure instead of judging every case it draws (faster; the "
                "count of failing cases and their shape classes are then unknown)");
  sub->add_option("--jobs", args->jobs,
                  "worker processes the clauses are spread over, each with its own adapter process for cmd:COMMAND (default: "
                  "one per core); each clause draws from its own seed, so the verdicts do not depend on it")
      ->check(CLI::Range(1, 256));
  sub->add_option("--worker", args->worker, "")->group("");  // internal: a worker process of --jobs
  return {sub, [args] { return run(*args); }};
}

}  // namespace attnspec::cli
