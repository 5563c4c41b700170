// The process kernel: one adapter process, started on first use and again
// after any case that left it in an unknown state (crash, hang, garbage, an
// answer to the wrong request). Each case is written as a case directory,
// the adapter's out.npy is read back and checked for shape and format
// before the suite sees it.
#include "adapters/process/process_kernel.hpp"

#include <stdlib.h>

#include <cstdlib>
#include <fstream>
#include <optional>

#include "adapters/process/protocol.hpp"
#include "adapters/process/subprocess.hpp"
#include "cases/io/case_dir.hpp"
#include "cases/io/input_error.hpp"
#include "cases/io/npy.hpp"

namespace attnspec {
namespace {

namespace fs = std::filesystem;

std::string seconds(std::chrono::milliseconds t) {
  const long long ms = t.count();
  return ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
}

fs::path make_work_directory() {
  std::string pattern = (fs::temp_directory_path() / "attnspec-process-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) throw std::runtime_error("cannot create a work directory under " + fs::temp_directory_path().string());
  return pattern;
}

// The last lines of the adapter's log, for messages about its failures.
std::string log_tail(const fs::path& log, std::size_t max_lines = 5) {
  std::ifstream in(log);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
    if (lines.size() > max_lines) lines.erase(lines.begin());
  }
  if (lines.empty()) return "";
  std::string tail = "; the end of its stderr (" + log.string() + "):";
  for (const std::string& line : lines) tail += "\n    " + line;
  return tail;
}

class ProcessKernel final : public Kernel {
 public:
  ProcessKernel(std::string command, ProcessOptions options) : command_(std::move(command)), options_(std::move(options)) {
    if (options_.work_directory.empty()) {
      options_.work_directory = make_work_directory();
      owns_work_directory_ = true;
    } else {
      fs::create_directories(options_.work_directory);
    }
    if (options_.log_file.empty()) options_.log_file = options_.work_directory / "adapter.log";
    info_ = start();
  }

  ~ProcessKernel() override {
    stop();
    std::error_code ignored;
    fs::remove_all(options_.work_directory / "case", ignored);
    // The log stays where something was logged; otherwise nothing is left behind.
    if (owns_work_directory_ && fs::file_size(options_.log_file, ignored) == 0)
      fs::remove_all(options_.work_directory, ignored);
  }

  std::string name() const override { return info_.name; }
  KernelFormats formats() const override { return info_.formats; }
  Capabilities capabilities() const override { return info_.capabilities; }
  std::optional<std::filesystem::path> log_file() const override { return options_.log_file; }

  KernelResult run(const Problem& problem) override {
    if (!process_) {
      const AdapterInfo again = start();
      if (!(again == info_))
        throw std::runtime_error("the restarted adapter describes itself differently from its first hello");
    }
    const fs::path directory = fs::absolute(options_.work_directory / "case");
    fs::remove_all(directory);
    save_case(Case{directory, info_.formats.input, problem, {{"generator", "attnspec process kernel"}}}, directory);
    const std::uint64_t id = ++last_id_;
    if (!process_->write_line(run_request(id, directory))) fail_and_restart("closed its stdin before the case was sent");

    std::string line;
    switch (process_->read_line(line, options_.case_timeout)) {
      case Subprocess::Read::timeout:
        fail_and_restart("did not answer within the case timeout of " + seconds(options_.case_timeout) +
                         " (killed; raise it with ATTNSPEC_CASE_TIMEOUT=seconds)");
      case Subprocess::Read::closed:
        fail_and_restart("ended while running the case");
      case Subprocess::Read::line:
        break;
    }
    RunReply reply;
    try {
      reply = parse_run_reply(line);
    } catch (const ProtocolError& e) {
      fail_and_restart(std::string("broke the protocol: ") + e.what());
    }
    if (reply.id != id)
      fail_and_restart("answered request " + std::to_string(reply.id) + " when request " + std::to_string(id) + " was pending");
    if (!reply.ok && reply.unsupported) throw KernelUnsupported("the adapter declined the case: " + reply.error);
    if (!reply.ok) throw std::runtime_error("the adapter reported an error: " + reply.error);

    KernelResult result;
    result.out = read_output(directory / "out.npy", out_shape(problem));
    if (info_.capabilities.lse) result.lse = read_output(directory / "lse.npy", lse_shape(problem));
    return result;
  }

 private:
  AdapterInfo start() {
    process_.emplace(command_, options_.log_file);
    const std::string where = "adapter '" + command_ + "'";
    if (!process_->write_line(hello_request())) {
      stop();
      throw std::runtime_error(where + " ended before the hello" + log_tail(options_.log_file));
    }
    std::string line;
    const Subprocess::Read read = process_->read_line(line, options_.hello_timeout);
    if (read != Subprocess::Read::line) {
      const std::string what = read == Subprocess::Read::timeout ? "did not answer the hello within " + seconds(options_.hello_timeout)
                                                                 : "ended without answering the hello (" + process_->exit_description() + ")";
      stop();
      throw std::runtime_error(where + " " + what + log_tail(options_.log_file));
    }
    try {
      return parse_hello_reply(line);
    } catch (const ProtocolError& e) {
      stop();
      throw std::runtime_error(where + ": bad hello reply: " + e.what());
    }
  }

  void stop() {
    if (!process_) return;
    if (process_->running() && process_->write_line(bye_request())) process_->finish(std::chrono::seconds(5));
    process_->kill();
    process_.reset();
  }

  [[noreturn]] void fail_and_restart(const std::string& what) {
    process_->kill();
    const std::string message = "the adapter " + what + " (" + process_->exit_description() + ")" + log_tail(options_.log_file);
    process_.reset();  // started again for the next case
    throw std::runtime_error(message);
  }

  std::vector<double> read_output(const fs::path& path, const std::vector<std::size_t>& shape) const {
    if (!fs::exists(path)) throw std::runtime_error("the adapter answered ok but wrote no " + path.filename().string());
    NpyArray array;
    try {
      array = read_npy(path);
    } catch (const InputError& e) {
      throw std::runtime_error(std::string("the adapter's ") + e.what());
    }
    const auto shape_text = [](const std::vector<std::size_t>& s) {
      std::string text = "[";
      for (std::size_t i = 0; i < s.size(); ++i) text += (i ? ", " : "") + std::to_string(s[i]);
      return text + "]";
    };
    if (array.shape != shape)
      throw std::runtime_error("the adapter's " + path.filename().string() + " has shape " + shape_text(array.shape) +
                               ", expected " + shape_text(shape));
    if (array.dtype == NpyDtype::boolean)
      throw std::runtime_error("the adapter's " + path.filename().string() + " is a bool array, expected <f8, <f4 or <f2");
    const FormatId output = info_.formats.output;
    for (std::size_t i = 0; i < array.values.size(); ++i)
      if (!is_representable(array.values[i], output))
        throw std::runtime_error("the adapter's " + path.filename().string() + " holds " + std::to_string(array.values[i]) +
                                 " at flat index " + std::to_string(i) + ", not a " +
                                 std::string(format_info(output).name) + " value (its declared output format)");
    return std::move(array.values);
  }

  std::string command_;
  ProcessOptions options_;
  bool owns_work_directory_ = false;
  std::optional<Subprocess> process_;
  AdapterInfo info_;
  std::uint64_t last_id_ = 0;
};

std::chrono::milliseconds seconds_from_environment(const char* variable, std::chrono::milliseconds fallback) {
  const char* text = std::getenv(variable);
  if (!text || !*text) return fallback;
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  if (*end != '\0' || !(value > 0))
    throw InputError(variable, "", "expected a number of seconds > 0, got '" + std::string(text) + "'");
  return std::chrono::milliseconds(static_cast<long long>(value * 1000));
}

}  // namespace

std::unique_ptr<Kernel> make_process_kernel(std::string_view command, const ProcessOptions& options) {
  if (command.empty()) throw InputError("--kernel", "", "'cmd:' needs a command after it, e.g. cmd:'python3 my_adapter.py'");
  return std::make_unique<ProcessKernel>(std::string(command), options);
}

ProcessOptions default_process_options() {
  ProcessOptions options;
  options.case_timeout = seconds_from_environment("ATTNSPEC_CASE_TIMEOUT", options.case_timeout);
  options.hello_timeout = seconds_from_environment("ATTNSPEC_HELLO_TIMEOUT", options.hello_timeout);
  return options;
}

}  // namespace attnspec
