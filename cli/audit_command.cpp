// `attnspec audit`: how precise a kernel is (audit/audit.hpp), as a
// self-contained HTML report with plots, optional JSON and Markdown, the
// Markdown summary on stdout, and the worst row saved as a case directory
// next to the HTML. Exit status 0, 1 when an element is outside the
// precision model's bound, 2 for bad options (nothing written).
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "adapters/emulated/emulated_kernels.hpp"
#include "adapters/registry.hpp"
#include "audit/audit.hpp"
#include "audit/html_report.hpp"
#include "audit/report.hpp"
#include "cases/io/input_error.hpp"
#include "cases/io/npy.hpp"
#include "cli/commands.hpp"
#include "cli/options.hpp"

namespace attnspec::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDefaultShape = "1,8,2,512,512,64,64";
constexpr double kMaxValues = 0x1p31;  // 16 GiB of doubles

struct AuditArgs {
  std::string kernel;
  std::string dtype;
  std::string distribution = "normal";
  std::string shape = kDefaultShape;
  std::string sweep;
  std::string causal, window, alibi;
  std::optional<double> sink;
  std::string descales;
  bool backward = false;
  int rows = 0;
  std::uint64_t seed = 1;
  unsigned threads = 0;
  std::string html, json, md;
};

// One comma-separated integer field in [low, high], else InputError with
// `expected` for `option`.
long parse_field(const std::string& option, const std::string& field, long low, long high, const std::string& expected) {
  std::size_t used = 0;
  long value = 0;
  try {
    value = std::stol(field, &used);
  } catch (const std::exception&) {
    throw InputError(option, "", expected);
  }
  if (used != field.size() || value < low || value > high) throw InputError(option, "", expected);
  return value;
}

Dims parse_shape(const std::string& text) {
  const std::string expected =
      "expected B,Hq,Hkv,L,S,Dk,Dv: seven integers >= 1 separated by commas, Hq a multiple of Hkv (e.g. " +
      std::string(kDefaultShape) + "); got '" + text + "'";
  std::vector<long> values;
  std::istringstream in(text);
  std::string field;
  while (std::getline(in, field, ',')) values.push_back(parse_field("--shape", field, 1, 1L << 24, expected));
  if (values.size() != 7 || text.back() == ',' || values[1] % values[2] != 0) throw InputError("--shape", "", expected);
  Dims d;
  d.batch = static_cast<int>(values[0]);
  d.q_heads = static_cast<int>(values[1]);
  d.kv_heads = static_cast<int>(values[2]);
  d.q_len = static_cast<int>(values[3]);
  d.kv_len = static_cast<int>(values[4]);
  d.d_k = static_cast<int>(values[5]);
  d.d_v = static_cast<int>(values[6]);
  // Q, K, V and the output are held as doubles: refuse what cannot fit
  // rather than fail on allocation after the inputs are drawn.
  const double values_needed = static_cast<double>(d.batch) * (static_cast<double>(d.q_heads) * d.q_len * (d.d_k + d.d_v) +
                                                               static_cast<double>(d.kv_heads) * d.kv_len * (d.d_k + d.d_v));
  if (values_needed > kMaxValues) {
    char gib[32];
    std::snprintf(gib, sizeof gib, "%.0f", values_needed * 8 / 0x1p30);
    throw InputError("--shape", "", "'" + text + "' needs " + gib + " GiB for its tensors (at most 16 GiB)");
  }
  return d;
}

Alignment parse_alignment(const std::string& option, const std::string& text) {
  if (text == "top_left") return Alignment::top_left;
  if (text == "bottom_right") return Alignment::bottom_right;
  throw InputError(option, "", "unknown alignment '" + text + "' (expected top_left or bottom_right)");
}

// LEFT,RIGHT[,ALIGNMENT]; -1 leaves a side unbounded (FlashAttention's
// window_size convention); the alignment defaults to bottom_right.
Window parse_window(const std::string& text) {
  const std::string expected =
      "expected LEFT,RIGHT[,ALIGNMENT]: integers >= 0, or -1 for an unbounded side, and top_left or bottom_right "
      "(default bottom_right), e.g. 128,0; got '" + text + "'";
  std::vector<std::string> fields;
  std::istringstream in(text);
  for (std::string field; std::getline(in, field, ',');) fields.push_back(field);
  if (fields.size() < 2 || fields.size() > 3 || text.back() == ',') throw InputError("--window", "", expected);
  Window window;
  const auto side = [&](const std::string& field) -> std::optional<int> {
    const long value = parse_field("--window", field, -1, 1L << 30, expected);
    if (value == -1) return std::nullopt;
    return static_cast<int>(value);
  };
  window.left = side(fields[0]);
  window.right = side(fields[1]);
  if (fields.size() == 3) window.alignment = parse_alignment("--window", fields[2]);
  return window;
}

// Q,K,V: three float32 values > 0.
std::array<double, 3> parse_descales(const std::string& text) {
  const std::string expected =
      "expected Q,K,V: three float32 values > 0 (such as 0.0625,0.125,0.5); got '" + text + "'";
  std::vector<std::string> fields;
  std::istringstream in(text);
  for (std::string field; std::getline(in, field, ',');) fields.push_back(field);
  if (fields.size() != 3 || text.back() == ',') throw InputError("--descales", "", expected);
  std::array<double, 3> factors{};
  for (std::size_t i = 0; i < 3; ++i) {
    char* end = nullptr;
    const double value = std::strtod(fields[i].c_str(), &end);
    if (fields[i].empty() || *end != '\0' || !(value > 0) || !std::isfinite(value) ||
        static_cast<double>(static_cast<float>(value)) != value)
      throw InputError("--descales", "", expected);
    factors[i] = value;
  }
  return factors;
}

std::unique_ptr<Kernel> find_kernel(const std::string& name) {
  if (std::unique_ptr<Kernel> kernel = make_kernel(name)) return kernel;
  std::string known;
  for (const KernelEntry& entry : builtin_kernels()) known += std::string(known.empty() ? "" : ", ") + std::string(entry.name);
  for (const KernelEntry& entry : registered_kernels()) known += ", " + std::string(entry.name);
  for (const KernelEntry& entry : emulated_kernels()) known += ", " + std::string(entry.name);
  throw InputError("--kernel", "", "unknown kernel '" + name + "' (known: " + known +
                                       "; or cmd:COMMAND for a process adapter; see attnspec kernels)");
}

// The worst row's case directory: next to the HTML report, named after it.
fs::path worst_case_directory(const fs::path& html) {
  fs::path directory = html;
  directory.replace_filename(html.stem().string() + "_worst_case");
  return directory;
}

fs::path partial_path(const fs::path& path) {
  fs::path partial = path;
  partial += "." + std::to_string(getpid()) + ".partial";
  return partial;
}

// Everything is validated before the (possibly long) audit runs.
AuditOptions parse_options(const AuditArgs& args, const Kernel& kernel) {
  AuditOptions options;
  options.shape = parse_shape(args.shape);
  const auto distribution = parse_distribution(args.distribution);
  if (!distribution)
    throw InputError("--dist", "", "unknown distribution '" + args.distribution + "' (expected " +
                                       std::string(distribution_names()) + ")");
  options.distribution = *distribution;
  if (!args.sweep.empty()) {
    const auto axis = parse_sweep_axis(args.sweep);
    if (!axis) throw InputError("--sweep", "", "unknown sweep '" + args.sweep + "' (expected S or Dk)");
    options.sweep = *axis;
  }
  if (!args.causal.empty()) {
    if (args.causal == "top_left") options.causal = Causal::top_left;
    else if (args.causal == "bottom_right") options.causal = Causal::bottom_right;
    else throw InputError("--causal", "", "unknown alignment '" + args.causal + "' (expected top_left or bottom_right)");
  }
  if (!args.window.empty()) options.window = parse_window(args.window);
  if (!args.alibi.empty()) options.alibi = parse_alignment("--alibi", args.alibi);
  if (args.sink) {
    if (!std::isfinite(*args.sink) || static_cast<double>(static_cast<float>(*args.sink)) != *args.sink)
      throw InputError("--sink", "", "expected a finite float32 value (such as 0.5 or -2), got " + std::to_string(*args.sink));
    options.sink = args.sink;
  }
  if (!args.descales.empty()) options.descales = parse_descales(args.descales);
  options.rows_per_head = args.rows;
  options.seed = args.seed;
  options.threads = args.threads;
  options.backward = args.backward;
  if (!args.dtype.empty()) {
    const auto format = parse_format(args.dtype);
    if (!format) throw InputError("--dtype", "", "unknown format '" + args.dtype + "' (expected " + std::string(format_names()) + ")");
    if (*format != kernel.formats().input)
      throw InputError("--dtype", "", "kernel " + args.kernel + " takes " + std::string(format_info(kernel.formats().input).name) +
                                          " inputs, not " + args.dtype);
  }
  for (const auto& [option, path] : {std::pair{"--html", args.html}, {"--json", args.json}, {"--md", args.md}}) {
    if (path.empty()) continue;
    const fs::path parent = fs::absolute(path).parent_path();
    if (!fs::is_directory(parent))
      throw InputError(option, "", "the directory of '" + path + "' does not exist (expected a file in an existing directory)");
    if (fs::is_directory(path)) throw InputError(option, "", "'" + path + "' is a directory (expected a file name)");
  }
  return options;
}

int audit(const AuditArgs& args) {
  std::unique_ptr<Kernel> kernel = find_kernel(args.kernel);
  AuditOptions options = parse_options(args, *kernel);
  if (const auto missing = missing_capabilities(kernel->capabilities(), audit_positions(options.shape, options));
      !missing.empty()) {
    const std::string option = missing.front().find("causal") != std::string::npos ? "--causal"
                               : missing.front().find("window") != std::string::npos ? "--window"
                               : missing.front().find("ALiBi") != std::string::npos  ? "--alibi"
                               : missing.front().find("sinks") != std::string::npos  ? "--sink"
                               : missing.front().find("descale") != std::string::npos ? "--descales"
                                                                                     : "--shape";
    throw InputError(option, "", "kernel " + args.kernel + " cannot run this problem: " + missing.front());
  }
  check_html_generator();
  options.progress = [](const std::string& line) { std::cerr << line << "\n" << std::flush; };

  AuditResult result;
  try {
    result = run_audit(*kernel, args.kernel, options);
  } catch (const KernelUnsupported& e) {
    throw InputError("--kernel", "", "kernel " + args.kernel + " declined the audit's problem: " + e.what());
  }

  // Rendered to temporary files first; renamed into place only when all of
  // them are complete.
  const fs::path html = args.html, case_dir = worst_case_directory(html);
  const nlohmann::json document = audit_json(result, case_dir.string());
  const std::string markdown = audit_markdown(result, case_dir.string());
  const fs::path json_for_html = partial_path(html.string() + ".json"), html_partial = partial_path(html);
  try {
    write_file_atomically(json_for_html, document.dump(1) + "\n");
    render_html(json_for_html, html_partial);
    fs::remove(json_for_html);
    save_worst_case(result, case_dir);
    if (!args.json.empty()) write_file_atomically(args.json, document.dump(1) + "\n");
    if (!args.md.empty()) write_file_atomically(args.md, markdown);
    fs::rename(html_partial, html);
  } catch (...) {
    fs::remove(json_for_html);
    fs::remove(html_partial);
    throw;
  }
  std::cout << markdown << "\nReport: " << html.string() << "\n";
  return exceeds_bound(result) ? 1 : 0;
}

}  // namespace

Command add_audit_command(CLI::App& app) {
  auto args = std::make_shared<AuditArgs>();
  CLI::App* sub = app.add_subcommand("audit", "Precision audit of a kernel: error measures, yardsticks, sweeps, HTML report");
  sub->footer(
      "Runs the kernel on the full problem and checks a seeded random sample of query rows per (batch, head)\n"
      "against the certified reference. Per checked element: componentwise error in units of u_out |P||V|\n"
      "(spec/SPEC.md 6.7), ulps of the output format against the correctly rounded value, per-row normwise\n"
      "relative error, RMSE and max absolute error; each next to three yardsticks: the precision model's a\n"
      "priori bound, the naive implementation in the same formats on the same rows (FlashAttention's\n"
      "criterion; as PRECREL, q.k summed blocked and as a running sum, the worse at each element), and the\n"
      "output-rounding floor (the correctly rounded value's own error). The HTML report\n"
      "is self-contained (plots drawn by audit/report_html.py with matplotlib, embedded); the worst row is\n"
      "saved next to it as a case directory (FILE_worst_case) for `attnspec check`. The Markdown summary is\n"
      "also printed. Exit status: 0, 1 an element outside its a priori bound, 2 usage error or bad input.\n\n"
      "Example: attnspec audit --kernel online-bf16 --dist outliers --sweep S --html audit.html");
  sub->add_option("--kernel", args->kernel, "kernel to audit (see: attnspec kernels), or cmd:COMMAND for a process adapter")->required();
  sub->add_option("--dtype", args->dtype, "input format; must be the kernel's (" + std::string(format_names()) + ")");
  sub->add_option("--dist", args->distribution,
                  "input distribution (" + std::string(distribution_names()) +
                      "; default normal): outliers is FlashAttention-3's N(0,1) + N(0,100) Bernoulli(0.001), ties draws "
                      "keys from 4 base vectors plus small noise, large gives scaled logits of standard deviation 100");
  sub->add_option("--shape", args->shape, "B,Hq,Hkv,L,S,Dk,Dv (default " + std::string(kDefaultShape) + ")");
  sub->add_option("--sweep", args->sweep,
                  "S or Dk: audit at a series of S (128, 256, ... up to the shape's S) or d_k (16, 32, ...; d_v follows "
                  "when equal) and fit the error's growth exponent");
  sub->add_option("--causal", args->causal, "causal masking, top_left or bottom_right (default: none)");
  sub->add_option("--window", args->window,
                  "sliding window LEFT,RIGHT[,ALIGNMENT]: keys i + off - LEFT .. i + off + RIGHT, -1 for an unbounded "
                  "side, alignment top_left or bottom_right (default), e.g. 128,0");
  sub->add_option("--alibi", args->alibi,
                  "ALiBi with the paper's slopes per query head, aligned top_left or bottom_right (default: none)");
  sub->add_option("--sink", args->sink,
                  "an attention sink of this logit for every query head, a float32 value (default: none)");
  sub->add_option("--descales", args->descales,
                  "descale factors Q,K,V (float32 values > 0) for every (batch, kv head), e.g. 0.0625,0.125,0.5: the "
                  "kernel's inputs times these are the real ones, as FlashAttention 3's q/k/v_descale (default: none)");
  sub->add_flag("--backward", args->backward,
                "also the gradients: dO drawn from the inputs' law, the kernel's backward on the whole problem "
                "against the certified gradients, with the same measures, SPEC 6.11's bound and GRADREL's yardstick");
  sub->add_option("--rows", args->rows,
                  "query rows checked per (batch, head), sampled at random (default: all when L <= " +
                      std::to_string(kAllRowsUpTo) + ", else " + std::to_string(kDefaultSampledRows) + ")")
      ->check(CLI::Range(1, 1 << 24));
  sub->add_option("--seed", args->seed, "seed of the inputs and of the row sample (default 1)")->check(unsigned_64());
  sub->add_option("--threads", args->threads, "threads for the reference (default: one per core)")->check(CLI::Range(1, 256));
  sub->add_option("--html", args->html, "write the HTML report to FILE (and the worst row to FILE's stem + _worst_case/)")
      ->required()
      ->check(writable_file());
  sub->add_option("--json", args->json, "write the attnspec-audit/1 JSON report (every figure) to FILE")->check(writable_file());
  sub->add_option("--md", args->md, "write the Markdown summary to FILE")->check(writable_file());
  return {sub, [args] { return audit(*args); }};
}

}  // namespace attnspec::cli
