// `attnspec reference`: the certified reference on case directories. All
// cases are loaded and checked before anything is computed or written, so
// bad input exits with status 2 and leaves no file behind.
#include <algorithm>
#include <chrono>
#include <cmath>
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
#include "reference/gradients.hpp"
#include "reference/layouts.hpp"

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
  fs::path stem;  // FILE_dq.npy, FILE_dk.npy, ... for the gradients
};

Destination destination_for(const ReferenceArgs& args, const fs::path& case_dir) {
  fs::path out;
  if (!args.out.empty()) out = args.out;
  else if (!args.out_dir.empty()) out = fs::path(args.out_dir) / case_name(case_dir) / "ref.npy";
  else out = case_dir / "ref.npy";
  const fs::path stem = out.parent_path() / out.stem();
  return {out, fs::path(stem.string() + "_lse.npy"), fs::path(stem.string() + "_weights.npy"), stem};
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

// A laid-out case (spec/SPEC.md section 2.5): the layout built from the
// dense arrays and its recipe, each sequence's dense problem (the layout
// maps) certified, the results joined into the layout's arrangement, as a
// kernel returns them: varlen out [rows, Hq, d_v] and lse [Hq, rows]
// (padding rows NaN), KV caches out [B, L, Hq, d_v] and lse [B, Hq, L]. A
// sequence with queries but no keys has rows with no visible key.
template <class Batch>
ReferenceResult certify_sequences(const Batch& batch, const ReferenceOptions& options) {
  const Dims& d = batch.shared.dims;
  ReferenceResult total;
  total.target = options.target;
  std::vector<Outputs> parts;
  for (const Sequence& s : sequences_of(batch)) {
    Outputs part;
    if (s.problem) {
      ReferenceResult r = certified_attention(*s.problem, options);
      part = {std::move(r.out), std::move(r.lse)};
      total.stats.rows += r.stats.rows;
      total.stats.refined_rows += r.stats.refined_rows;
      total.stats.exact_values += r.stats.exact_values;
      total.stats.start_precision_bits = r.stats.start_precision_bits;
      total.stats.max_precision_bits = std::max(total.stats.max_precision_bits, r.stats.max_precision_bits);
    } else {
      const auto rows = static_cast<std::size_t>(d.q_heads) * static_cast<std::size_t>(s.lengths.q_len);
      part.out.assign(rows * static_cast<std::size_t>(d.d_v), 0.0);
      for (int h = 0; h < d.q_heads; ++h)
        for (int i = 0; i < s.lengths.q_len; ++i)
          part.lse.push_back(round_to_format(batch.shared.sinks.empty() ? -INFINITY : batch.shared.sinks[static_cast<std::size_t>(h)],
                                             options.target));
    }
    parts.push_back(std::move(part));
  }
  Outputs joined = join_results(batch, parts);
  total.out = std::move(joined.out);
  total.lse = std::move(joined.lse);
  return total;
}

ReferenceResult laid_out_reference(const Problem& dense, const LayoutRecipe& recipe, ReferenceOptions options,
                                   std::vector<std::size_t>& shape_out, std::vector<std::size_t>& shape_lse) {
  options.weights = false;
  options.progress = {};
  const Dims& d = dense.dims;
  const auto Hq = static_cast<std::size_t>(d.q_heads), dv = static_cast<std::size_t>(d.d_v);
  if (recipe.kind == LayoutKind::varlen) {
    const VarlenBatch batch = lay_out_varlen(dense, recipe);
    shape_out = {static_cast<std::size_t>(batch.q_rows), Hq, dv};
    shape_lse = {Hq, static_cast<std::size_t>(batch.q_rows)};
    return certify_sequences(batch, options);
  }
  const KvCacheBatch batch = lay_out_kv_cache(dense, recipe);
  shape_out = {static_cast<std::size_t>(d.batch), static_cast<std::size_t>(d.q_len), Hq, dv};
  shape_lse = {static_cast<std::size_t>(d.batch), Hq, static_cast<std::size_t>(d.q_len)};
  return certify_sequences(batch, options);
}

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
    expected.push_back(load_expected(dir));
    // A laid-out case's answer is its sequences' (SPEC 2.5) in the
    // layout's arrangement: there are no dense weights or expected values.
    if (cases.back().layout && args.weights)
      throw InputError("--weights", "", "case " + dir + " is laid out (spec/SPEC.md section 2.5): it has no dense weights");
    if (cases.back().layout && expected.back())
      throw InputError(dir, "expected.json", "a laid-out case has no expected.json (its results are its sequences')");
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
    std::vector<std::size_t> shape_out = out_shape(item.problem), shape_lse = lse_shape(item.problem);
    const ReferenceResult result = item.layout ? laid_out_reference(item.problem, *item.layout, options, shape_out, shape_lse)
                                               : certified_attention(item.problem, options);
    // A case with dO (spec/SPEC.md section 2.6) asks for its gradients too.
    std::optional<GradientResult> gradients;
    if (!item.problem.dout.empty()) gradients = certified_gradients(item.problem, {.target = *target});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    const Destination to = destination_for(args, item.directory);
    if (!to.out.parent_path().empty()) fs::create_directories(to.out.parent_path());
    write_npy(to.out, {NpyDtype::float64, shape_out, result.out});
    write_npy(to.lse, {NpyDtype::float64, shape_lse, result.lse});
    if (args.weights) {
      auto shape = lse_shape(item.problem);
      shape.push_back(static_cast<std::size_t>(item.problem.dims.kv_len));
      write_npy(to.weights, {NpyDtype::float64, shape, result.weights});
    }
    if (gradients) {
      const Dims& d = item.problem.dims;
      const auto B = static_cast<std::size_t>(d.batch), Hq = static_cast<std::size_t>(d.q_heads),
                 Hkv = static_cast<std::size_t>(d.kv_heads), L = static_cast<std::size_t>(d.q_len),
                 S = static_cast<std::size_t>(d.kv_len), dk = static_cast<std::size_t>(d.d_k),
                 dv = static_cast<std::size_t>(d.d_v);
      const std::string stem = to.stem.string();
      write_npy(stem + "_dq.npy", {NpyDtype::float64, {B, Hq, L, dk}, gradients->dq});
      write_npy(stem + "_dk.npy", {NpyDtype::float64, {B, Hkv, S, dk}, gradients->dk});
      write_npy(stem + "_dv.npy", {NpyDtype::float64, {B, Hkv, S, dv}, gradients->dv});
      if (!gradients->dsink.empty()) write_npy(stem + "_dsink.npy", {NpyDtype::float64, {Hq}, gradients->dsink});
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
                << " bits), " << s.exact_values << " exact; ";
      if (gradients) {
        const GradientStats& g = gradients->stats;
        std::cout << "gradients: " << g.values << " values, " << g.refined_values << " refined (up to "
                  << g.max_precision_bits << " bits), " << g.exact_values << " exact; ";
      }
      std::cout << duration_text(seconds) << verdict << " -> " << to.out.string() << "\n";
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
      "section 5), and prints a one-line summary. A laid-out case (\"layout\", spec/SPEC.md section 2.5)\n"
      "gets its sequences' results in the layout's arrangement, as a kernel returns them: varlen\n"
      "ref.npy [rows,Hq,dv] and ref_lse.npy [Hq,rows] (padding rows NaN); KV caches [B,L,Hq,dv] and\n"
      "[B,Hq,L]. A case with dO (\"backward\": true, dout.npy; spec/SPEC.md section 2.6) also gets\n"
      "its certified gradients: ref_dq.npy [B,Hq,L,dk], ref_dk.npy [B,Hkv,S,dk], ref_dv.npy\n"
      "[B,Hkv,S,dv] and, with sinks, ref_dsink.npy [Hq]. A case with expected.json (the golden cases) is also\n"
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
