// `attnspec reference`: the certified reference on case directories. All
// cases are loaded and checked before anything is computed or written, so
// bad input exits with status 2 and leaves no file behind.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <unistd.h>

#include "cases/io/case_dir.hpp"
#include "cases/io/expected.hpp"
#include "cases/io/input_error.hpp"
#include "cases/io/npy.hpp"
#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "reference/certified.hpp"

namespace attnspec::cli {
namespace {

namespace fs = std::filesystem;

struct ReferenceArgs {
  std::vector<std::string> case_dirs;
  std::string format = "float64";
  std::string out;
  std::string out_dir;
  bool weights = false;
  bool quiet = false;
};

// The last component of the directory's path, also for "dir/" and ".".
std::string case_name(const fs::path& case_dir) {
  fs::path normal = fs::absolute(case_dir).lexically_normal();
  if (normal.filename().empty()) normal = normal.parent_path();
  return normal.filename().string();
}

struct Destination {
  fs::path out, lse, weights;
};

Destination destination_for(const ReferenceArgs& args, const fs::path& case_dir) {
  fs::path out;
  if (!args.out.empty()) out = args.out;
  else if (!args.out_dir.empty()) out = fs::path(args.out_dir) / case_name(case_dir) / "ref.npy";
  else out = case_dir / "ref.npy";
  const fs::path stem = out.parent_path() / out.stem();
  return {out, fs::path(stem.string() + "_lse.npy"), fs::path(stem.string() + "_weights.npy")};
}

std::string describe(const Problem& p) {
  const Dims& d = p.dims;
  std::ostringstream s;
  s << "B=" << d.batch << " Hq=" << d.q_heads << " Hkv=" << d.kv_heads << " L=" << d.q_len << " S=" << d.kv_len
    << " dk=" << d.d_k << " dv=" << d.d_v;
  return s.str();
}

std::string duration_text(double seconds) {
  char text[32];
  if (seconds < 1) std::snprintf(text, sizeof text, "%.2f ms", seconds * 1e3);
  else std::snprintf(text, sizeof text, "%.2f s", seconds);
  return text;
}

// Progress on stderr for long runs: at most one line every two seconds, and
// only once the run has taken two seconds.
class Progress {
 public:
  explicit Progress(std::string label) : label_(std::move(label)), start_(Clock::now()), last_(start_) {}
  void operator()(std::size_t done, std::size_t total) {
    const auto now = Clock::now();
    if (now - last_ < std::chrono::seconds(2) && done != total) return;
    if (now - start_ < std::chrono::seconds(2)) return;
    last_ = now;
    std::cerr << "  " << label_ << ": " << done << "/" << total << " rows\n";
  }

 private:
  using Clock = std::chrono::steady_clock;
  std::string label_;
  Clock::time_point start_, last_;
};

int run_reference(const ReferenceArgs& args) {
  const std::optional<FormatId> target = parse_format(args.format);
  if (!target)
    throw InputError("--format", "", "unknown format '" + args.format + "' (expected " + std::string(format_names()) + ")");
  if (!args.out.empty() && args.case_dirs.size() != 1)
    throw InputError("--out", "", "names one file, but " + std::to_string(args.case_dirs.size()) +
                                      " case directories were given (use --out-dir)");

  std::vector<Case> cases;
  std::vector<std::optional<ExpectedValues>> expected;
  for (const std::string& dir : args.case_dirs) {
    cases.push_back(load_case(dir));
    // A laid-out case's answer is its sequences' (SPEC 2.5), not its dense
    // arrays' as they stand.
    if (cases.back().layout)
      throw InputError(dir, "layout",
                       "the case is laid out (spec/SPEC.md section 2.5); attnspec reference computes dense cases only "
                       "(use attnspec check to judge a kernel on it)");
    expected.push_back(load_expected(dir));
  }

  int status = 0;
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const Case& item = cases[c];
    ReferenceOptions options;
    options.target = *target;
    options.weights = args.weights || expected[c].has_value();
    auto progress = std::make_shared<Progress>(item.directory.string());
    options.progress = [progress](std::size_t done, std::size_t total) { (*progress)(done, total); };
    const auto start = std::chrono::steady_clock::now();
    const ReferenceResult result = certified_attention(item.problem, options);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    const Destination to = destination_for(args, item.directory);
    if (!to.out.parent_path().empty()) fs::create_directories(to.out.parent_path());
    write_npy(to.out, {NpyDtype::float64, out_shape(item.problem), result.out});
    write_npy(to.lse, {NpyDtype::float64, lse_shape(item.problem), result.lse});
    if (args.weights) {
      auto shape = lse_shape(item.problem);
      shape.push_back(static_cast<std::size_t>(item.problem.dims.kv_len));
      write_npy(to.weights, {NpyDtype::float64, shape, result.weights});
    }

    std::string verdict;
    if (expected[c]) {
      const Agreement agreement = compare_with_expected(*expected[c], result);
      verdict = "; expected.json: " + std::to_string(agreement.agree) + "/" + std::to_string(agreement.total) + " agree";
      if (!agreement.ok()) {
        verdict += " (FIRST MISMATCH " + agreement.first_mismatch + ")";
        status = 1;
      }
    }
    if (!args.quiet || status != 0) {
      const ReferenceStats& s = result.stats;
      std::cout << item.directory.string() << " [" << format_info(*target).name << ", " << describe(item.problem)
                << "]: " << result.out.size() << " outputs, " << result.lse.size() << " lse; " << s.refined_rows << "/"
                << s.rows << " rows refined (" << s.start_precision_bits << " -> " << s.max_precision_bits
                << " bits), " << s.exact_values << " exact; " << duration_text(seconds) << verdict << " -> " << to.out.string()
                << "\n";
    }
  }
  return status;
}

}  // namespace

Command add_reference_command(CLI::App& app) {
  auto args = std::make_shared<ReferenceArgs>();
  CLI::App* sub = app.add_subcommand(
      "reference", "Certified reference: correctly rounded outputs and lse of case directories");
  sub->footer(
      "For each case directory, writes ref.npy [B,Hq,L,dv] and ref_lse.npy [B,Hq,L]: float64 arrays\n"
      "holding the correctly rounded values, in --format, of the exact attention result (spec/SPEC.md\n"
      "section 5), and prints a one-line summary. A case with expected.json (the golden cases) is also\n"
      "compared with it bit for bit; a mismatch gives exit status 1. Bad input gives exit status 2,\n"
      "with the file and field named, and writes nothing.\n\n"
      "Example: attnspec reference cases/golden/seed_matrix --format bfloat16 --out-dir /tmp/ref");
  sub->add_option("CASE_DIR", args->case_dirs, "attnspec-case/1 directories (spec/SPEC.md section 4)")
      ->required()
      ->check(CLI::ExistingDirectory);
  sub->add_option("--format", args->format,
                  "target format of the rounding: " + std::string(format_names()) + " (default float64)");
  sub->add_option("--out", args->out, "output file instead of CASE_DIR/ref.npy (one case only); lse goes to FILE_lse.npy")
      ->check(writable_file());
  sub->add_option("--out-dir", args->out_dir, "write DIR/<case name>/ref.npy and ref_lse.npy instead")
      ->excludes("--out")
      ->check(creatable_directory());
  sub->add_flag("--weights", args->weights, "also certify and write the attention weights, ref_weights.npy [B,Hq,L,S]");
  sub->add_flag("-q,--quiet", args->quiet, "print only failures");
  return {sub, [args] { return run_reference(*args); }};
}

}  // namespace attnspec::cli
