// attnspec-report/1 read back field by field (every field's type checked,
// the file and field named in each error), and the merge of shards.
#include "properties/report_merge.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "cases/io/input_error.hpp"
#include "spec/clauses.hpp"

namespace attnspec {
namespace {

class Reader {
 public:
  explicit Reader(const std::string& file) : file_(file) {}

  const nlohmann::json& member(const nlohmann::json& object, const std::string& key, const std::string& where) const {
    if (!object.is_object()) fail(where, "expected an object");
    const auto it = object.find(key);
    if (it == object.end()) fail(join(where, key), "missing");
    return *it;
  }
  std::string text(const nlohmann::json& object, const std::string& key, const std::string& where) const {
    const nlohmann::json& v = member(object, key, where);
    if (!v.is_string()) fail(join(where, key), "expected a string");
    return v.get<std::string>();
  }
  std::uint64_t count(const nlohmann::json& object, const std::string& key, const std::string& where) const {
    const nlohmann::json& v = member(object, key, where);
    if (!v.is_number_unsigned()) fail(join(where, key), "expected a non-negative integer");
    return v.get<std::uint64_t>();
  }
  bool flag(const nlohmann::json& object, const std::string& key, const std::string& where) const {
    const nlohmann::json& v = member(object, key, where);
    if (!v.is_boolean()) fail(join(where, key), "expected true or false");
    return v.get<bool>();
  }
  std::optional<double> number_or_null(const nlohmann::json& object, const std::string& key, const std::string& where) const {
    const nlohmann::json& v = member(object, key, where);
    if (v.is_null()) return std::nullopt;
    if (!v.is_number()) fail(join(where, key), "expected a number or null");
    return v.get<double>();
  }
  [[noreturn]] void fail(const std::string& field, const std::string& message) const {
    throw InputError(file_, field, message);
  }
  static std::string join(const std::string& where, const std::string& key) { return where.empty() ? key : where + "." + key; }

 private:
  std::string file_;
};

Status status_named(const std::string& name, const Reader& reader, const std::string& field) {
  for (const Status s : {Status::pass, Status::fail, Status::skip, Status::incomplete}) {
    std::string lower(to_string(s));
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower == name) return s;
  }
  reader.fail(field, "expected pass, fail, skip or incomplete, got '" + name + "'");
}

int small_count(const Reader& reader, const nlohmann::json& object, const std::string& key, const std::string& where) {
  const std::uint64_t n = reader.count(object, key, where);
  if (n > 1000000000) reader.fail(Reader::join(where, key), "too large: " + std::to_string(n));
  return static_cast<int>(n);
}

}  // namespace

RunReport report_from_json(const nlohmann::json& json, const std::string& file) {
  const Reader in(file);
  if (in.text(json, "format", "") != "attnspec-report/1")
    in.fail("format", "expected \"attnspec-report/1\", got \"" + in.text(json, "format", "") + "\"");
  RunReport report;
  report.kernel = in.text(json, "kernel", "");
  report.kernel_argument = json.contains("kernel_command") ? in.text(json, "kernel_command", "") : report.kernel;
  if (json.contains("kernel_log")) report.kernel_log = in.text(json, "kernel_log", "");
  report.profile = in.text(json, "profile", "");
  if (!find_profile(report.profile)) in.fail("profile", "unknown profile '" + report.profile + "'");
  report.seed = in.count(json, "seed", "");
  // Written since issue 11; older reports ran with the defaults.
  if (json.contains("strict_determinism")) report.strict_determinism = in.flag(json, "strict_determinism", "");
  if (json.contains("allow_incomplete")) report.allow_incomplete = in.flag(json, "allow_incomplete", "");
  if (json.contains("shard")) {
    const nlohmann::json& shard = in.member(json, "shard", "");
    report.shard_count = small_count(in, shard, "count", "shard");
    report.shard_index = small_count(in, shard, "index", "shard");
    if (report.shard_count < 1 || report.shard_index >= report.shard_count)
      in.fail("shard", "expected 0 <= index < count");
  }
  const nlohmann::json& platform = in.member(json, "platform", "");
  CpuDescription cpu;
  cpu.model = in.text(platform, "cpu", "platform");
  cpu.kind = in.text(platform, "cpu_kind", "platform");
  const nlohmann::json& features = in.member(platform, "cpu_features", "platform");
  if (!features.is_array()) in.fail("platform.cpu_features", "expected an array of strings");
  for (const nlohmann::json& f : features) {
    if (!f.is_string()) in.fail("platform.cpu_features", "expected an array of strings");
    cpu.features.push_back(f.get<std::string>());
  }
  report.cpu = cpu;
  report.platform.code_path = in.text(platform, "code_path", "platform");
  if (!in.flag(json, "available", "")) {
    report.platform.unavailable = in.text(json, "unavailable", "");
    if (report.platform.unavailable.empty()) in.fail("unavailable", "expected the reason the kernel is not available");
  }
  const nlohmann::json& results = in.member(json, "results", "");
  if (!results.is_array()) in.fail("results", "expected an array");
  for (std::size_t i = 0; i < results.size(); ++i) {
    const nlohmann::json& r = results[i];
    const std::string where = "results[" + std::to_string(i) + "]";
    ClauseReport c;
    c.clause = in.text(r, "clause", where);
    if (!find_clause(c.clause)) in.fail(where + ".clause", "unknown clause '" + c.clause + "'");
    c.dtype = in.text(r, "dtype", where);
    c.outcome.status = status_named(in.text(r, "status", where), in, where + ".status");
    c.outcome.cases = small_count(in, r, "cases", where);
    c.outcome.max_error_u = in.number_or_null(r, "max_error_u", where);
    c.outcome.bound_u = in.number_or_null(r, "bound_u", where);
    c.outcome.bound_used = in.number_or_null(r, "bound_used", where);
    if (c.outcome.max_error_u.has_value() != c.outcome.bound_u.has_value() ||
        c.outcome.max_error_u.has_value() != c.outcome.bound_used.has_value())
      in.fail(where, "max_error_u, bound_u and bound_used must all be numbers or all null");
    const nlohmann::json& counterexample = in.member(r, "counterexample", where);
    if (!counterexample.is_null() && !counterexample.is_string())
      in.fail(where + ".counterexample", "expected a directory name or null");
    if (counterexample.is_string()) c.counterexample_dir = counterexample.get<std::string>();
    c.outcome.reason = in.text(r, "reason", where);
    c.outcome.declined = small_count(in, r, "declined", where);
    c.outcome.discarded = small_count(in, r, "discarded", where);
    const nlohmann::json& shapes = in.member(r, "judged_by_shape", where);
    c.outcome.judged_by_shape = {small_count(in, shapes, "small", where + ".judged_by_shape"),
                                 small_count(in, shapes, "tile", where + ".judged_by_shape"),
                                 small_count(in, shapes, "long", where + ".judged_by_shape")};
    if (!in.member(r, "size_limit", where).is_null()) c.outcome.size_limit = in.count(r, "size_limit", where);
    if (r.contains("elements")) c.outcome.elements = in.count(r, "elements", where);
    if (r.contains("unjudged_elements")) c.outcome.unbounded_elements = in.count(r, "unjudged_elements", where);
    if (r.contains("reproduce")) c.reproduce = in.text(r, "reproduce", where);
    if (r.contains("first_failing_case") && !r["first_failing_case"].is_null())
      c.outcome.first_failing_case = small_count(in, r, "first_failing_case", where);
    if (r.contains("signatures")) {
      const nlohmann::json& signatures = r["signatures"];
      if (!signatures.is_array()) in.fail(where + ".signatures", "expected an array of strings");
      for (const nlohmann::json& s : signatures) {
        if (!s.is_string()) in.fail(where + ".signatures", "expected an array of strings");
        c.outcome.signatures.push_back(s.get<std::string>());
      }
    }
    c.informative = in.flag(r, "informative", where);
    const std::optional<double> seconds = in.number_or_null(r, "seconds", where);
    if (!seconds || *seconds < 0) in.fail(where + ".seconds", "expected a non-negative number");
    c.seconds = *seconds;
    report.results.push_back(std::move(c));
  }
  return report;
}

RunReport merge_reports(const std::vector<RunReport>& reports, const std::vector<std::string>& files) {
  if (reports.empty()) throw InputError("attnspec merge", "reports", "no report to merge");
  const RunReport& first = reports.front();
  RunReport merged = first;
  merged.results.clear();
  merged.shard_index = 0;
  merged.shard_count = 1;
  const auto same = [&](std::size_t i, const std::string& field, const std::string& mine, const std::string& theirs) {
    if (mine != theirs)
      throw InputError(files[i], field,
                       "is '" + mine + "', but '" + theirs + "' in " + files.front() + ": not a shard of the same run");
  };
  std::map<std::string, std::size_t> clause_file;
  std::set<int> shards;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const RunReport& r = reports[i];
    same(i, "kernel", r.kernel_argument, first.kernel_argument);
    same(i, "profile", r.profile, first.profile);
    same(i, "seed", std::to_string(r.seed), std::to_string(first.seed));
    same(i, "strict_determinism", r.strict_determinism ? "true" : "false", first.strict_determinism ? "true" : "false");
    same(i, "allow_incomplete", r.allow_incomplete ? "true" : "false", first.allow_incomplete ? "true" : "false");
    same(i, "platform.cpu_kind", r.cpu ? r.cpu->kind : "", first.cpu ? first.cpu->kind : "");
    same(i, "platform.code_path", r.platform.code_path, first.platform.code_path);
    same(i, "unavailable", r.platform.unavailable, first.platform.unavailable);
    same(i, "shard.count", std::to_string(r.shard_count), std::to_string(first.shard_count));
    if (r.shard_count > 1 && !shards.insert(r.shard_index).second)
      throw InputError(files[i], "shard.index", "shard " + std::to_string(r.shard_index) + " is given twice");
    for (const ClauseReport& c : r.results) {
      const auto [it, inserted] = clause_file.emplace(c.clause, i);
      if (!inserted) throw InputError(files[i], "results", "clause " + c.clause + " is also in " + files[it->second]);
      merged.results.push_back(c);
    }
    if (!r.kernel_log.empty() && merged.kernel_log.empty()) merged.kernel_log = r.kernel_log;
  }
  if (first.shard_count > 1 && static_cast<int>(shards.size()) != first.shard_count) {
    std::string missing;
    for (int s = 0; s < first.shard_count; ++s)
      if (!shards.count(s)) missing += (missing.empty() ? "" : ", ") + std::to_string(s) + "/" + std::to_string(first.shard_count);
    throw InputError("attnspec merge", "shard", "shard(s) " + missing + " missing: the merged report would not hold the whole run");
  }
  // The clause table's order, whatever order the shards came in.
  put_in_table_order(merged.results);
  return merged;
}

void put_in_table_order(std::vector<ClauseReport>& results) {
  std::vector<ClauseReport> ordered;
  for (const Clause& clause : clause_table())
    for (ClauseReport& c : results)
      if (c.clause == clause.id) ordered.push_back(std::move(c));
  results = std::move(ordered);
}

}  // namespace attnspec
