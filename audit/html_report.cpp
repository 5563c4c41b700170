// Running audit/report_html.py; see html_report.hpp.
#include "audit/html_report.hpp"

#include <spawn.h>
#include <sys/wait.h>

#include <cstdlib>
#include <stdexcept>
#include <vector>

extern char** environ;

namespace attnspec {
namespace {

namespace fs = std::filesystem;

// The exit status of `program args...` (no shell, so no quoting issues);
// stdout and stderr are the caller's, so the script's own errors show.
int run_program(const std::string& program, const std::vector<std::string>& args) {
  std::vector<std::string> strings = {program};
  strings.insert(strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, program.c_str(), nullptr, nullptr, argv.data(), environ) != 0)
    throw std::runtime_error("cannot start " + program + " (set ATTNSPEC_PLOT_PYTHON to a Python with matplotlib)");
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) throw std::runtime_error("waiting for " + program + " failed");
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

}  // namespace

fs::path html_generator_script() {
  if (const char* script = std::getenv("ATTNSPEC_AUDIT_SCRIPT")) return script;
#ifdef ATTNSPEC_SOURCE_AUDIT_SCRIPT
  if (fs::is_regular_file(ATTNSPEC_SOURCE_AUDIT_SCRIPT)) return ATTNSPEC_SOURCE_AUDIT_SCRIPT;
#endif
#ifdef ATTNSPEC_INSTALLED_AUDIT_SCRIPT
  return ATTNSPEC_INSTALLED_AUDIT_SCRIPT;
#else
  return "report_html.py";
#endif
}

std::string plot_python() {
  if (const char* python = std::getenv("ATTNSPEC_PLOT_PYTHON")) return python;
  return "/usr/bin/python3";
}

void check_html_generator() {
  const fs::path script = html_generator_script();
  if (!fs::is_regular_file(script))
    throw std::runtime_error("--html: the report generator " + script.string() +
                             " is missing (set ATTNSPEC_AUDIT_SCRIPT to audit/report_html.py)");
  if (run_program(plot_python(), {script.string(), "--check"}) != 0)
    throw std::runtime_error("--html: " + plot_python() + " cannot draw the plots: it needs matplotlib (Debian: apt-get install " +
                             "python3-matplotlib, or scripts/install-deps.sh; or set ATTNSPEC_PLOT_PYTHON)");
}

void render_html(const fs::path& json_file, const fs::path& html_file) {
  const int status = run_program(plot_python(), {html_generator_script().string(), json_file.string(), html_file.string()});
  if (status != 0)
    throw std::runtime_error("--html: " + html_generator_script().string() + " failed with status " + std::to_string(status));
}

}  // namespace attnspec
