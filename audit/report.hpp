// The audit's reports: the attnspec-audit/1 JSON document (everything the
// HTML generator audit/report_html.py plots and tabulates), the Markdown
// summary for CI logs, and the worst row saved as an attnspec-case/1
// directory that `attnspec check` rechecks.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "audit/audit.hpp"

namespace attnspec {

// The audit point whose worst element has the largest componentwise error.
const AuditPoint& worst_point(const AuditResult& result);

// `worst_case_dir` is named in the document ("" for none).
nlohmann::json audit_json(const AuditResult& result, const std::string& worst_case_dir);
std::string audit_markdown(const AuditResult& result, const std::string& worst_case_dir);

// Writes the worst point's worst row as a case directory, complete or not
// at all (a temporary directory renamed into place, replacing an old one).
void save_worst_case(const AuditResult& result, const std::filesystem::path& directory);

// "0x3c00": the bit pattern of a value of `format`, with the format's width.
std::string hex_bits(double value, FormatId format);

}  // namespace attnspec
