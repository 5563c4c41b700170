// The HTML report is drawn by audit/report_html.py with matplotlib (a
// well-kept plotting library, not drawing code of ours); this finds the
// script and the Python that has matplotlib, and runs it.
#pragma once

#include <filesystem>
#include <string>

namespace attnspec {

// ATTNSPEC_AUDIT_SCRIPT if set, else the source tree's copy, else the
// installed one (share/attnspec/audit/report_html.py).
std::filesystem::path html_generator_script();
// ATTNSPEC_PLOT_PYTHON if set, else /usr/bin/python3 (Debian's, which has
// python3-matplotlib; a python3 earlier on PATH may lack it).
std::string plot_python();

// Throws std::runtime_error saying what to install when the script or
// matplotlib is missing; cheap enough to run before a long audit.
void check_html_generator();

// Reads an attnspec-audit/1 JSON file and writes the self-contained HTML
// report; throws std::runtime_error if the script fails.
void render_html(const std::filesystem::path& json_file, const std::filesystem::path& html_file);

}  // namespace attnspec
