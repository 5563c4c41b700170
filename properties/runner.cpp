// Runs clauses against a kernel and writes the reports. Each clause gets
// its own seed derived from the run's seed and the clause ID, so a clause's
// verdict does not depend on which other clauses ran.
#include "properties/runner.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <sstream>

#include "adapters/cpu.hpp"
#include "cases/io/case_dir.hpp"
#include "cases/io/printable.hpp"
#include "properties/registry.hpp"
#include "spec/clauses.hpp"

namespace attnspec {
namespace {

std::uint64_t clause_seed(std::uint64_t seed, std::string_view clause) {
  std::uint64_t h = 1469598103934665603ull ^ seed;  // FNV-1a over the ID
  for (char c : clause) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

std::string fixed(double x, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*g", digits, x);
  return buffer;
}

std::string xml_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// A kernel name as part of a directory name: "cmd:" adapters name
// themselves freely.
std::string file_name_part(const std::string& name) {
  std::string part = name;
  for (char& c : part)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  return part;
}

// A word the shell reads back unchanged: quoted when it needs to be.
std::string shell_word(const std::string& word) {
  const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("-_./:=,+").find(c) != std::string_view::npos;
  });
  if (plain) return word;
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

bool counts_as_failure(const ClauseReport& r, bool strict_determinism, bool allow_incomplete) {
  if (r.outcome.status == Status::fail) return !r.informative || strict_determinism;
  return r.outcome.status == Status::incomplete && !allow_incomplete && !r.informative;
}

}  // namespace

bool RunReport::failed() const {
  for (const ClauseReport& r : results)
    if (counts_as_failure(r, strict_determinism, allow_incomplete)) return true;
  return false;
}

RunReport run_conformance(Kernel& kernel, std::string_view kernel_name, const RunOptions& options,
                          const ResultCallback& on_result) {
  const Profile& profile = options.profile ? *options.profile : *find_profile("quick");
  RunReport report;
  report.kernel_argument = std::string(kernel_name);
  report.kernel = kernel_name.starts_with("cmd:") ? kernel.name() : std::string(kernel_name);
  if (const auto log = kernel.log_file()) report.kernel_log = log->string();
  report.profile = std::string(profile.name);
  report.seed = options.seed;
  report.strict_determinism = options.strict_determinism;
  report.allow_incomplete = options.allow_incomplete;
  report.shard_index = options.shard_index;
  report.shard_count = options.shard_count;
  const std::string dtype(format_info(kernel.formats().input).name);
  std::size_t position = 0;
  for (const Clause& clause : clause_table()) {
    const bool selected = options.clauses.empty() ||
                          std::find(options.clauses.begin(), options.clauses.end(), clause.id) != options.clauses.end();
    if (!selected) continue;
    const bool mine = position++ % static_cast<std::size_t>(options.shard_count) ==
                      static_cast<std::size_t>(options.shard_index);
    if (!mine) continue;
    ClauseReport r;
    r.clause = std::string(clause.id);
    r.dtype = dtype;
    r.informative = clause.kind == ClauseKind::informative;
    const auto start = std::chrono::steady_clock::now();
    const std::string lacking = skip_reason(clause, kernel.capabilities());
    if (!lacking.empty()) {
      r.outcome.status = Status::skip;
      r.outcome.reason = lacking;
    } else {
      PropertyContext context{kernel,
                              profile,
                              clause_seed(options.seed, clause.id),
                              options.shrink,
                              expected_shapes_of(profile),
                              options.shrink_cpu_seconds,
                              options.judge_every_case};
      // A property that lets an exception out (a kernel failing outside the
      // harness's loop) fails its own clause; the run goes on.
      try {
        r.outcome = find_property(clause.id)(context);
      } catch (const std::exception& e) {
        r.outcome = ClauseOutcome{};
        r.outcome.status = Status::fail;
        r.outcome.reason = "exception: " + printable(e.what(), 2000);
      }
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (r.outcome.status == Status::fail && r.outcome.counterexample && options.save_failures) {
      const auto dir = *options.save_failures / (file_name_part(report.kernel) + "_" + r.clause);
      Case c;
      c.dtype = kernel.formats().input;
      c.problem = *r.outcome.counterexample;
      c.layout = r.outcome.counterexample_layout;
      c.merge = r.outcome.counterexample_merge;
      c.provenance = {{"generator", "attnspec run"}, {"kernel", report.kernel_argument}, {"clause", r.clause},
                      {"profile", report.profile}, {"seed", options.seed}, {"failure", r.outcome.reason}};
      try {
        save_case(c, dir);
        r.counterexample_dir = dir.string();
        r.reproduce = "attnspec check " + shell_word(dir.string()) + " --kernel " + shell_word(report.kernel_argument);
      } catch (const std::exception& e) {
        r.outcome.reason += "; the counterexample could not be saved: " + printable(e.what());
      }
    }
    if (on_result) on_result(r);
    report.results.push_back(std::move(r));
  }
  return report;
}

RunReport unavailable_report(std::string_view kernel_name, const KernelPlatform& platform, const RunOptions& options) {
  RunReport report;
  report.kernel = report.kernel_argument = std::string(kernel_name);
  report.profile = std::string((options.profile ? *options.profile : *find_profile("quick")).name);
  report.seed = options.seed;
  report.strict_determinism = options.strict_determinism;
  report.allow_incomplete = options.allow_incomplete;
  report.shard_index = options.shard_index;
  report.shard_count = options.shard_count;
  report.platform = platform;
  return report;
}

std::string format_line(const ClauseReport& r) {
  std::ostringstream line;
  std::string status(to_string(r.outcome.status));
  if (r.informative && r.outcome.status == Status::fail) status = "DIFF";
  char head[96];
  std::snprintf(head, sizeof head, "%-4s  %-9s %-14s %5d cases", status.c_str(), r.clause.c_str(), r.dtype.c_str(),
                r.outcome.cases);
  line << head;
  if (r.outcome.max_error_u)
    line << "  worst " << fixed(*r.outcome.max_error_u, 3) << " u of bound " << fixed(*r.outcome.bound_u, 3) << " u ("
         << fixed(100 * *r.outcome.bound_used, 3) << "% of bound)";
  line << "  (" << fixed(r.seconds, 2) << " s)";
  if (!r.outcome.reason.empty()) line << "\n        " << r.outcome.reason;
  if (!r.reproduce.empty()) line << "\n        reproduce: " << r.reproduce;
  return line.str();
}

std::string format_matrix(const std::vector<RunReport>& reports) {
  std::ostringstream table;
  table << "| clause |";
  for (const RunReport& r : reports) table << " " << r.kernel << " |";
  table << "\n|---|";
  for (std::size_t i = 0; i < reports.size(); ++i) table << "---|";
  table << "\n";
  for (const Clause& clause : clause_table()) {
    bool any = false;
    std::ostringstream row;
    row << "| " << clause.id << " |";
    for (const RunReport& report : reports) {
      std::string cell = report.available() ? " " : "N/A";
      for (const ClauseReport& r : report.results) {
        if (r.clause != clause.id) continue;
        any = true;
        cell = r.informative && r.outcome.status == Status::fail ? "DIFF" : std::string(to_string(r.outcome.status));
        if (r.outcome.status != Status::skip && r.outcome.bound_used) {
          cell += ' ';
          cell += fixed(100 * *r.outcome.bound_used, 3);
          cell += '%';
        }
      }
      row << " " << cell << " |";
    }
    if (any) table << row.str() << "\n";
  }
  return table.str();
}

nlohmann::json report_json(const RunReport& report) {
  nlohmann::json results = nlohmann::json::array();
  for (const ClauseReport& r : report.results) {
    std::string status(to_string(r.outcome.status));
    for (char& c : status) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    results.push_back({{"clause", r.clause},
                       {"dtype", r.dtype},
                       {"status", status},
                       {"cases", r.outcome.cases},
                       {"max_error_u", r.outcome.max_error_u ? nlohmann::json(*r.outcome.max_error_u) : nlohmann::json()},
                       {"bound_u", r.outcome.bound_u ? nlohmann::json(*r.outcome.bound_u) : nlohmann::json()},
                       {"bound_used", r.outcome.bound_used ? nlohmann::json(*r.outcome.bound_used) : nlohmann::json()},
                       {"counterexample", r.counterexample_dir.empty() ? nlohmann::json() : nlohmann::json(r.counterexample_dir)},
                       {"reason", r.outcome.reason},
                       {"declined", r.outcome.declined},
                       {"declined_share", r.outcome.declined_share()},
                       {"discarded", r.outcome.discarded},
                       {"elements", r.outcome.elements},
                       {"unjudged_elements", r.outcome.unbounded_elements},
                       {"signatures", r.outcome.signatures},
                       {"first_failing_case", r.outcome.first_failing_case ? nlohmann::json(r.outcome.first_failing_case)
                                                                           : nlohmann::json()},
                       {"judged_by_shape", {{"small", r.outcome.judged_by_shape[0]},
                                            {"tile", r.outcome.judged_by_shape[1]},
                                            {"long", r.outcome.judged_by_shape[2]}}},
                       {"size_limit", r.outcome.size_limit ? nlohmann::json(r.outcome.size_limit) : nlohmann::json()},
                       {"informative", r.informative},
                       {"reproduce", r.reproduce},
                       {"seconds", r.seconds}});
  }
  const CpuDescription& cpu = report.cpu ? *report.cpu : this_cpu();
  nlohmann::json platform = {{"cpu", cpu.model}, {"cpu_kind", cpu.kind}, {"cpu_features", cpu.features},
                             {"code_path", report.platform.code_path}};
  nlohmann::json json = {{"format", "attnspec-report/1"}, {"kernel", report.kernel}, {"profile", report.profile},
                         {"seed", report.seed}, {"available", report.available()}, {"platform", platform},
                         {"strict_determinism", report.strict_determinism},
                         {"allow_incomplete", report.allow_incomplete},
                         {"shard", {{"index", report.shard_index}, {"count", report.shard_count}}},
                         {"results", results}};
  if (!report.available()) json["unavailable"] = report.platform.unavailable;
  if (report.kernel_argument != report.kernel) json["kernel_command"] = report.kernel_argument;
  if (!report.kernel_log.empty()) json["kernel_log"] = report.kernel_log;
  return json;
}

std::string report_junit(const RunReport& report) {
  std::size_t failures = 0, skipped = 0;
  double total = 0;
  for (const ClauseReport& r : report.results) {
    if (counts_as_failure(r, report.strict_determinism, report.allow_incomplete)) ++failures;
    else if (r.outcome.status == Status::skip || r.outcome.status == Status::incomplete) ++skipped;
    total += r.seconds;
  }
  std::ostringstream xml;
  xml << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  if (!report.available()) {
    // Nothing was judged: one skipped test case says why, so a CI dashboard
    // shows the kernel as not run rather than as passed.
    xml << "<testsuite name=\"attnspec." << xml_escape(report.kernel) << "\" tests=\"1\" failures=\"0\" skipped=\"1\">\n"
        << "  <testcase classname=\"attnspec." << xml_escape(report.kernel) << "\" name=\"available\"><skipped message=\""
        << xml_escape("not available on this machine: " + report.platform.unavailable) << "\"/></testcase>\n</testsuite>\n";
    return xml.str();
  }
  xml << "<testsuite name=\"attnspec." << xml_escape(report.kernel) << "\" tests=\"" << report.results.size()
      << "\" failures=\"" << failures << "\" skipped=\"" << skipped << "\" time=\"" << total << "\">\n";
  for (const ClauseReport& r : report.results) {
    xml << "  <testcase classname=\"attnspec." << xml_escape(report.kernel) << "\" name=\"" << xml_escape(r.clause) << "."
        << xml_escape(r.dtype) << "\" time=\"" << r.seconds << "\">";
    if (counts_as_failure(r, report.strict_determinism, report.allow_incomplete)) {
      const std::string what = r.outcome.status == Status::incomplete ? "INCOMPLETE: " + r.outcome.reason : r.outcome.reason;
      xml << "<failure message=\"" << xml_escape(what) << "\">"
          << xml_escape(r.reproduce.empty() ? what : r.reproduce) << "</failure>";
    } else if (r.outcome.status == Status::skip || r.outcome.status == Status::incomplete) {
      xml << "<skipped message=\"" << xml_escape(r.outcome.reason) << "\"/>";
    } else if (r.outcome.status == Status::fail) {
      xml << "<system-out>" << xml_escape("informative: " + r.outcome.reason) << "</system-out>";
    }
    xml << "</testcase>\n";
  }
  xml << "</testsuite>\n";
  return xml.str();
}

}  // namespace attnspec
