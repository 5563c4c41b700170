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

#include "adapters/process/capped_log.hpp"
#include "adapters/process/packed_case.hpp"
#include "adapters/process/protocol.hpp"
#include "adapters/process/subprocess.hpp"
#include "cases/io/case_dir.hpp"
#include "cases/io/input_error.hpp"
#include "cases/io/npy.hpp"
#include "cases/io/printable.hpp"

namespace attnspec {
namespace {

namespace fs = std::filesystem;

// The longest line an adapter may send; a reply is a few hundred bytes.
constexpr std::size_t kMaxProtocolLineBytes = 1 << 20;

std::string seconds(std::chrono::milliseconds t) {
  const long long ms = t.count();
  return ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
}

fs::path make_work_directory() {
  std::string pattern = (fs::temp_directory_path() / "attnspec-process-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) throw std::runtime_error("cannot create a work directory under " + fs::temp_directory_path().string());
  return pattern;
}

std::string shape_text(const std::vector<std::size_t>& s) {
  std::string text = "[";
  for (std::size_t i = 0; i < s.size(); ++i) text += (i ? ", " : "") + std::to_string(s[i]);
  return text + "]";
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
    if (options_.log_file.empty()) {
      options_.log_file = options_.work_directory / "adapter.log";
      owns_log_ = true;
    }
    try {
      log_ = std::make_unique<CappedLog>(options_.log_file);
      info_ = start();
    } catch (...) {
      // Nothing of a failed start is left behind; the message carries the
      // end of the adapter's stderr.
      log_.reset();
      remove_files(/*keep_log=*/false);
      throw;
    }
  }

  ~ProcessKernel() override {
    stop();
    log_.reset();
    // The log stays only where the adapter wrote something and a run
    // failed (end_run) or no run said how it ended: an empty log is no
    // evidence, and one left per failed run would litter the temporary
    // directory.
    const bool keep = bytes_logged_ > 0 && run_failed_.value_or(true);
    remove_files(keep);
  }

  std::string name() const override { return info_.name; }
  KernelFormats formats() const override { return info_.formats; }
  Capabilities capabilities() const override { return info_.capabilities; }
  std::optional<std::filesystem::path> log_file() const override { return options_.log_file; }
  void end_run(bool failed) override { run_failed_ = failed; }

  KernelResult run(const Problem& problem) override {
    ensure_started();
    const fs::path directory = fresh_case_directory();
    save_case(Case{directory, info_.formats.input, problem, {{"generator", "attnspec process kernel"}}, std::nullopt}, directory);
    return exchange("dense", directory, {out_shape(problem), lse_shape(problem), {}, {}}, info_.capabilities.lse);
  }

  // The backward (SPEC 2.6): the dense case with dout.npy, requested with
  // kind "backward"; the gradients come back as dq.npy, dk.npy, dv.npy
  // (and dsink.npy with sinks), in the output format.
  GradientOutputs run_backward(const Problem& problem) override {
    if (!info_.capabilities.backward) return Kernel::run_backward(problem);
    ensure_started();
    const fs::path directory = fresh_case_directory();
    save_case(Case{directory, info_.formats.input, problem, {{"generator", "attnspec process kernel"}}, std::nullopt}, directory);
    const Deadline deadline = request_and_await(kBackwardKind, directory);
    const Dims& d = problem.dims;
    const auto z = [](int x) { return static_cast<std::size_t>(x); };
    const auto read = [&](const char* name, std::vector<std::size_t> shape) {
      return read_output(directory / name, shape, info_.formats.output, "output", {}, deadline);
    };
    GradientOutputs g;
    g.dq = read("dq.npy", {z(d.batch), z(d.q_heads), z(d.q_len), z(d.d_k)});
    g.dk = read("dk.npy", {z(d.batch), z(d.kv_heads), z(d.kv_len), z(d.d_k)});
    g.dv = read("dv.npy", {z(d.batch), z(d.kv_heads), z(d.kv_len), z(d.d_v)});
    if (!problem.sinks.empty()) g.dsink = read("dsink.npy", {problem.sinks.size()});
    return g;
  }

  // The layouts and the merge travel as attnspec-packed/1 directories
  // (packed_case.hpp), requested with their "kind".
  KernelResult run_varlen(const VarlenBatch& batch) override {
    if (!info_.capabilities.varlen) return Kernel::run_varlen(batch);
    ensure_started();
    const fs::path directory = fresh_case_directory();
    const PackedOutputs outputs = save_packed_case(directory, info_.formats.input, batch);
    return exchange(to_string(PackedKind::varlen), directory, outputs, info_.capabilities.lse);
  }

  KernelResult run_kv_cache(const KvCacheBatch& batch) override {
    if (!(batch.paged() ? info_.capabilities.paged_kv_cache : info_.capabilities.kv_cache))
      return Kernel::run_kv_cache(batch);
    ensure_started();
    const fs::path directory = fresh_case_directory();
    const PackedOutputs outputs = save_packed_case(directory, info_.formats.input, batch);
    return exchange(to_string(PackedKind::kv_cache), directory, outputs, info_.capabilities.lse);
  }

  KernelResult merge(const MergeInput& input) override {
    if (!info_.capabilities.merge_partials) return Kernel::merge(input);
    ensure_started();
    const fs::path directory = fresh_case_directory();
    const PackedOutputs outputs = save_packed_case(directory, *info_.capabilities.merge_partials, input);
    return exchange(to_string(PackedKind::merge), directory, outputs, /*with_lse=*/true);
  }

 private:
  // After a fault the adapter is started again, and must describe itself
  // as it did at first.
  void ensure_started() {
    if (process_) return;
    AdapterInfo again;
    try {
      again = start();
    } catch (const std::exception& e) {
      throw KernelFault(std::string("the adapter could not be started again: ") + e.what());
    }
    if (!(again == info_)) {
      stop();
      throw KernelFault("the restarted adapter describes itself differently from its first hello");
    }
  }

  fs::path fresh_case_directory() const {
    const fs::path directory = fs::absolute(options_.work_directory / "case");
    fs::remove_all(directory);
    return directory;
  }

  // Sends the request for the case in `directory`, waits for the answer and
  // reads back out.npy (and lse.npy) in the shapes `outputs` gives.
  KernelResult exchange(std::string_view kind, const fs::path& directory, const PackedOutputs& outputs, bool with_lse) {
    const Deadline deadline = request_and_await(kind, directory);
    KernelResult result;
    result.out = read_output(directory / "out.npy", outputs.out_shape, info_.formats.output, "output", outputs.out_read,
                             deadline);
    // The lse is rounded to the accumulation format (SPEC 6.6), as
    // FlashAttention's float32 lse beside float16 outputs.
    if (with_lse)
      result.lse = read_output(directory / "lse.npy", outputs.lse_shape, info_.formats.accumulate, "accumulation",
                               outputs.lse_read, deadline);
    return result;
  }

  // Sends the request and waits for a successful answer; returns the
  // deadline for reading what the adapter wrote (one for both).
  Deadline request_and_await(std::string_view kind, const fs::path& directory) {
    const std::uint64_t id = ++last_id_;
    const auto deadline = std::chrono::steady_clock::now() + options_.case_timeout;
    if (!process_->write_line(run_request(id, directory, kind))) fail_and_restart("closed its stdin before the case was sent");

    std::string line;
    switch (process_->read_line(line, options_.case_timeout, kMaxProtocolLineBytes)) {
      case Subprocess::Read::timeout:
        fail_and_restart("did not answer within the case timeout of " + seconds(options_.case_timeout) +
                         " (killed; raise it with ATTNSPEC_CASE_TIMEOUT=seconds)");
      case Subprocess::Read::closed:
        fail_and_restart("ended while running the case");
      case Subprocess::Read::too_long:
        fail_and_restart("sent more than " + std::to_string(kMaxProtocolLineBytes) +
                         " bytes without a newline, more than a protocol line may hold");
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
    log_->flush();
    if (!reply.ok && reply.unsupported) throw KernelUnsupported("the adapter declined the case: " + reply.error);
    if (!reply.ok) throw std::runtime_error("the adapter reported an error: " + reply.error);
    return deadline;
  }

  AdapterInfo start() {
    process_.emplace(command_, [this](std::string_view bytes) {
      bytes_logged_ += bytes.size();
      log_->append(bytes);
    });
    const std::string where = "adapter '" + printable(command_, 200) + "'";
    if (!process_->write_line(hello_request())) {
      const std::string what = process_->exit_description();
      stop();
      throw std::runtime_error(where + " ended before the hello (" + what + ")" + log_tail());
    }
    std::string line;
    const Subprocess::Read read = process_->read_line(line, options_.hello_timeout, kMaxProtocolLineBytes);
    if (read != Subprocess::Read::line) {
      const std::string what =
          read == Subprocess::Read::timeout    ? "did not answer the hello within " + seconds(options_.hello_timeout)
          : read == Subprocess::Read::too_long ? "answered the hello with more than " +
                                                     std::to_string(kMaxProtocolLineBytes) + " bytes without a newline"
                                               : "ended without answering the hello (" + process_->exit_description() + ")";
      stop();
      throw std::runtime_error(where + " " + what + log_tail());
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
    if (log_) log_->flush();
  }

  // The last lines of the adapter's stderr, for messages about its failures.
  std::string log_tail() const {
    const std::string recent = log_ ? log_->recent_lines(5) : "";
    if (recent.empty()) return "";
    std::string tail = "; the end of its stderr (" + options_.log_file.string() + "):";
    std::size_t start = 0;
    for (std::size_t end; (end = recent.find('\n', start)) != std::string::npos; start = end + 1)
      tail += "\n    " + recent.substr(start, end - start);
    return tail + "\n    " + recent.substr(start);
  }

  void remove_files(bool keep_log) {
    std::error_code ignored;
    fs::remove_all(options_.work_directory / "case", ignored);
    if (owns_log_ && !keep_log) fs::remove(options_.log_file, ignored);
    if (owns_work_directory_ && (!keep_log || !owns_log_)) fs::remove_all(options_.work_directory, ignored);
  }

  [[noreturn]] void fail_and_restart(const std::string& what) {
    process_->kill();
    const std::string message = "the adapter " + what + " (" + process_->exit_description() + ")" + log_tail();
    process_.reset();  // started again for the next case
    log_->flush();
    throw KernelFault(message);
  }

  // `read`: whether a flat index is read (empty: all); one that is not
  // (a varlen padding row) may hold anything.
  std::vector<double> read_output(const fs::path& path, const std::vector<std::size_t>& shape, FormatId format,
                                  const char* format_role, const std::function<bool(std::size_t)>& read,
                                  Deadline deadline) const {
    std::error_code missing;
    if (!fs::exists(fs::symlink_status(path, missing)))
      throw std::runtime_error("the adapter answered ok but wrote no " + path.filename().string());
    NpyArray array;
    try {
      NpyReadOptions options;
      options.max_elements = 1;
      for (std::size_t extent : shape) options.max_elements *= extent;
      options.limit_reason = "the output's shape is " + shape_text(shape);
      options.shape = shape;
      options.deadline = deadline;
      array = read_npy(path, options);
    } catch (const InputError& e) {
      throw std::runtime_error(std::string("the adapter's ") + e.what());
    }
    if (array.dtype == NpyDtype::boolean)
      throw std::runtime_error("the adapter's " + path.filename().string() + " is a bool array, expected <f8, <f4 or <f2");
    for (std::size_t i = 0; i < array.values.size(); ++i)
      if ((!read || read(i)) && !is_representable(array.values[i], format))
        throw std::runtime_error("the adapter's " + path.filename().string() + " holds " + std::to_string(array.values[i]) +
                                 " at flat index " + std::to_string(i) + ", not a " +
                                 std::string(format_info(format).name) + " value (its declared " + format_role +
                                 " format)");
    return std::move(array.values);
  }

  std::string command_;
  ProcessOptions options_;
  bool owns_work_directory_ = false;
  bool owns_log_ = false;
  std::unique_ptr<CappedLog> log_;
  std::uint64_t bytes_logged_ = 0;
  std::optional<bool> run_failed_;
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
