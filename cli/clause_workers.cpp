// Worker processes for `attnspec run --jobs N` (see clause_workers.hpp).
#include "cli/clause_workers.hpp"

#include <fcntl.h>
#include <sched.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "cases/io/npy.hpp"
#include "properties/report_merge.hpp"
#include "spec/clauses.hpp"

extern char** environ;

namespace attnspec::cli {
namespace {

namespace fs = std::filesystem;

// One write(2) per line: lines of workers printing at once do not mix.
void print_whole(const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(STDOUT_FILENO, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

fs::path queue_file(const std::string& dir) { return fs::path(dir) / "queue"; }
fs::path clause_file(const std::string& dir, const std::string& clause) { return fs::path(dir) / ("clause-" + clause + ".json"); }

// The queue is the index of the next clause to hand out, as text, under
// an exclusive lock.
std::size_t take_next_clause(const std::string& dir) {
  const int fd = ::open(queue_file(dir).c_str(), O_RDWR);
  if (fd < 0) throw std::runtime_error("worker: cannot open " + queue_file(dir).string() + ": " + std::strerror(errno));
  if (::flock(fd, LOCK_EX) != 0) {
    ::close(fd);
    throw std::runtime_error("worker: cannot lock " + queue_file(dir).string());
  }
  char text[32] = {};
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  const std::size_t next = n > 0 ? std::stoul(std::string(text, static_cast<std::size_t>(n))) : 0;
  char updated[32];
  const int length = std::snprintf(updated, sizeof updated, "%020zu", next + 1);
  const bool written = ::pwrite(fd, updated, static_cast<std::size_t>(length), 0) == length;
  ::flock(fd, LOCK_UN);
  ::close(fd);
  if (!written) throw std::runtime_error("worker: cannot update " + queue_file(dir).string());
  return next;
}

std::string how_it_ended(int status) {
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "ended (wait status " + std::to_string(status) + ")";
}

std::string this_executable() {
  std::error_code error;
  const fs::path exe = fs::read_symlink("/proc/self/exe", error);
  if (error) throw std::runtime_error("--jobs: cannot find this executable (/proc/self/exe): " + error.message());
  return exe.string();
}

}  // namespace

int default_jobs() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

std::vector<std::string> selected_clauses(const RunOptions& options) {
  std::vector<std::string> ids;
  std::size_t position = 0;
  for (const Clause& clause : clause_table()) {
    const bool selected = options.clauses.empty() ||
                          std::find(options.clauses.begin(), options.clauses.end(), clause.id) != options.clauses.end();
    if (!selected) continue;
    if (position++ % static_cast<std::size_t>(options.shard_count) == static_cast<std::size_t>(options.shard_index))
      ids.emplace_back(clause.id);
  }
  return ids;
}

std::vector<std::string> queue_order(std::vector<std::string> clauses) {
  std::stable_partition(clauses.begin(), clauses.end(),
                        [](const std::string& id) { return (find_clause(id)->needs & kNeedsBackward) != 0; });
  return clauses;
}

bool serve_clause_queue(Kernel& kernel, const std::string& kernel_name, const KernelPlatform& platform,
                        const RunOptions& options, const std::vector<std::string>& clauses, const std::string& dir) {
  bool failed = false;
  for (std::size_t next = take_next_clause(dir); next < clauses.size(); next = take_next_clause(dir)) {
    RunOptions one = options;
    one.clauses = {clauses[next]};
    one.shard_index = 0;
    one.shard_count = 1;
    RunReport report = run_conformance(kernel, kernel_name, one);
    report.platform = platform;
    failed = failed || report.failed();
    // Written whole, then renamed: the parent reads a report or none.
    const fs::path file = clause_file(dir, clauses[next]);
    write_file_atomically(file, report_json(report).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    for (const ClauseReport& r : report.results) print_whole(format_line(r) + "\n");
  }
  return failed;
}

RunReport run_in_workers(Kernel& kernel, const RunOptions& options, const std::vector<std::string>& worker_arguments,
                         const std::vector<std::string>& run_clauses, int jobs, const RunReport& base) {
  const std::vector<std::string> clauses = queue_order(run_clauses);
  std::string pattern = (fs::temp_directory_path() / "attnspec-workers-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) throw std::runtime_error("--jobs: cannot create a directory under " + fs::temp_directory_path().string());
  const std::string dir = pattern;
  struct RemoveDir {
    std::string dir;
    ~RemoveDir() {
      std::error_code ignored;
      fs::remove_all(dir, ignored);
    }
  } remove_dir{dir};
  std::ofstream(queue_file(dir)) << "0";

  std::vector<std::string> arguments{this_executable()};
  arguments.insert(arguments.end(), worker_arguments.begin(), worker_arguments.end());
  arguments.insert(arguments.end(), {"--jobs", "1", "--worker", dir});
  for (const std::string& id : clauses) arguments.insert(arguments.end(), {"--clause", id});
  std::vector<char*> argv;
  for (std::string& a : arguments) argv.push_back(a.data());
  argv.push_back(nullptr);

  std::cout << std::flush;
  // This process is one of the workers: it is started already.
  const int count = std::max(1, std::min<int>(jobs, static_cast<int>(clauses.size())));
  std::vector<pid_t> workers;
  for (int w = 1; w < count; ++w) {
    pid_t pid = 0;
    const int error = ::posix_spawn(&pid, argv.front(), nullptr, nullptr, argv.data(), environ);
    if (error != 0) {
      for (pid_t started : workers) ::waitpid(started, nullptr, 0);
      throw std::runtime_error("--jobs: cannot start a worker process: " + std::string(std::strerror(error)));
    }
    workers.push_back(pid);
  }
  std::string endings;  // how workers that did not end cleanly ended
  try {
    serve_clause_queue(kernel, base.kernel_argument, base.platform, options, clauses, dir);
  } catch (const std::exception& e) {  // the other workers go on with the queue
    endings = std::string("this process: ") + e.what();
  }
  for (pid_t pid : workers) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    // Exit 1 is a worker whose clauses failed, which they report themselves.
    if (!(WIFEXITED(status) && WEXITSTATUS(status) <= 1))
      endings += (endings.empty() ? "" : "; ") + ("worker " + std::to_string(pid) + " " + how_it_ended(status));
  }

  std::vector<RunReport> reports;
  std::vector<std::string> files, lost;
  for (const std::string& id : clauses) {
    const fs::path file = clause_file(dir, id);
    if (!fs::exists(file)) {
      lost.push_back(id);
      continue;
    }
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    reports.push_back(report_from_json(nlohmann::json::parse(text.str()), file.string()));
    files.push_back(file.string());
  }
  RunReport merged = reports.empty() ? base : merge_reports(reports, files);
  merged.cpu.reset();  // measured here
  merged.shard_index = base.shard_index;
  merged.shard_count = base.shard_count;
  for (const std::string& id : lost) {
    ClauseReport r;
    r.clause = id;
    r.dtype = format_info(kernel.formats().input).name;
    r.informative = false;  // not judged fails the run, even for a clause whose differences only inform
    r.outcome.status = Status::fail;
    r.outcome.reason = "not judged: its worker process ended before reporting it (" +
                       (endings.empty() ? std::string("no worker reported an abnormal end") : endings) +
                       "); run the clause alone with --jobs 1 to see why";
    print_whole(format_line(r) + "\n");
    merged.results.push_back(std::move(r));
  }
  put_in_table_order(merged.results);
  return merged;
}

}  // namespace attnspec::cli
