// The conformance run: every selected clause against one kernel, with
// SKIP for clauses whose needs the kernel lacks, counterexamples saved as
// case directories, sharding, and the report formats (text line, JSON
// attnspec-report/1, JUnit XML).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "adapters/cpu.hpp"
#include "adapters/registry.hpp"
#include "properties/property.hpp"

namespace attnspec {

struct RunOptions {
  const Profile* profile = nullptr;        // default: quick
  std::vector<std::string> clauses;        // empty: all, in table order
  std::uint64_t seed = 1;
  std::optional<std::filesystem::path> save_failures;  // where counterexamples go
  int shard_index = 0, shard_count = 1;    // clause i runs in shard i % count
  bool strict_determinism = false;         // DETERM differences fail the run
  bool shrink = true;                      // shrink counterexamples (slower on failures)
  int shrink_cpu_seconds = 10;             // shrinking's budget per clause (60 s of wall time at most)
  bool allow_incomplete = false;           // INCOMPLETE clauses do not fail the run
  bool judge_every_case = true;            // off: a failing clause stops at its first failure
};

struct ClauseReport {
  std::string clause;
  std::string dtype;  // the kernel's input format
  ClauseOutcome outcome;
  std::string counterexample_dir;  // empty if none saved
  std::string reproduce;           // one-line command
  double seconds = 0;
  bool informative = false;
};

struct RunReport {
  std::string kernel;           // the kernel's name (a process adapter's own)
  std::string kernel_argument;  // what selects it: the name, or "cmd:COMMAND"
  std::string kernel_log;       // the kernel's diagnostics file, if any
  std::string profile;
  std::uint64_t seed = 0;
  std::vector<ClauseReport> results;
  // A FAIL that counts (informative ones only under strict_determinism), or
  // an INCOMPLETE clause unless allow_incomplete.
  bool failed() const;
  bool strict_determinism = false;
  bool allow_incomplete = false;
  // Where the verdicts were measured: the kernel's code path on this CPU
  // (reports add the CPU itself), or why it could not run here, in which
  // case there are no results and nothing was judged.
  KernelPlatform platform;
  bool available() const { return platform.unavailable.empty(); }
  // The CPU the verdicts were measured on: this machine's unless the
  // report was read back from JSON (attnspec merge).
  std::optional<CpuDescription> cpu;
  int shard_index = 0, shard_count = 1;  // which clauses of the run this report holds
};

// The report of a kernel this machine cannot run: no results, the reason.
RunReport unavailable_report(std::string_view kernel_name, const KernelPlatform& platform, const RunOptions& options);

using ResultCallback = std::function<void(const ClauseReport&)>;

// Runs the clauses; calls on_result after each (progress output).
RunReport run_conformance(Kernel& kernel, std::string_view kernel_name, const RunOptions& options,
                          const ResultCallback& on_result = {});

std::string format_line(const ClauseReport& r);
// The conformance matrix, clause x kernel, as a Markdown table.
std::string format_matrix(const std::vector<RunReport>& reports);  // "PASS  SCALE  bfloat16  30 cases  max 0.98 u  bound 1.06 u"
nlohmann::json report_json(const RunReport& report);
std::string report_junit(const RunReport& report);

}  // namespace attnspec
