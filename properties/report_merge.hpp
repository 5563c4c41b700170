// Reading attnspec-report/1 JSON back, and merging the reports of the
// shards of one run (`attnspec run --shard I/N`, one CI job each) into the
// report of the whole run: `attnspec merge`.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "properties/runner.hpp"

namespace attnspec {

// Throws InputError(file, field, what was expected) for anything that is
// not a well-formed attnspec-report/1.
RunReport report_from_json(const nlohmann::json& json, const std::string& file);

// One report with every shard's clauses in the clause table's order.
// Refuses (InputError) reports of another kernel, profile, seed, option,
// CPU kind or code path than the first, a clause reported twice, and a
// sharded run with a shard missing or given twice.
RunReport merge_reports(const std::vector<RunReport>& reports, const std::vector<std::string>& files);

// Sorts clause reports into the clause table's order (one report a clause).
void put_in_table_order(std::vector<ClauseReport>& results);

}  // namespace attnspec
