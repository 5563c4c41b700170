// `attnspec check CASE_DIR --kernel NAME`: runs one kernel on one case and
// checks it against the certified reference within the precision model's
// bound (outputs, NaN propagation, lse). It reproduces the counterexamples
// that `attnspec run` saves: each is a problem the kernel gets wrong alone.
#include <iostream>
#include <memory>

#include "adapters/registry.hpp"
#include "cases/io/case_dir.hpp"
#include "cases/io/input_error.hpp"
#include "cases/io/printable.hpp"
#include "cli/commands.hpp"
#include "properties/harness.hpp"
#include "properties/layout_check.hpp"
#include "properties/merge_check.hpp"

namespace attnspec::cli {
namespace {

struct CheckArgs {
  std::string case_dir;
  std::string kernel;
};

// A merge case (spec/SPEC.md section 6.10) through the kernel's merge
// operator: "" or the failure.
std::string check_merge_case(const CheckArgs& args, Kernel& kernel, const Case& c, ErrorStats& stats) {
  const std::optional<FormatId> partials = kernel.capabilities().merge_partials;
  if (!partials)
    throw InputError(args.case_dir, "merge", "kernel " + args.kernel + " cannot run this case: it has no merge operator");
  for (double x : c.problem.v)
    if (!is_representable(x, *partials))
      throw InputError(args.case_dir, "dtype",
                       "the parts' outputs are not all representable in the kernel's merge partials format " +
                           std::string(format_info(*partials).name));
  for (double x : c.problem.k)
    if (!is_representable(x, FormatId::float32))
      throw InputError(args.case_dir, "dtype", "the parts' lse are not all float32 values");
  return check_merge_against_reference(kernel, c.problem, stats);
}

// The verdict line, the failure, and the kernel told the run is over.
int report(const CheckArgs& args, Kernel& kernel, const Case& c, const std::string& failure, const ErrorStats& stats) {
  // Provenance is free-form: a "clause" that is not a string is not one.
  const auto found = c.provenance.find("clause");
  const std::string clause = found != c.provenance.end() && found->is_string() ? printable(found->get<std::string>(), 40) : "";
  std::cout << (failure.empty() ? "PASS" : "FAIL") << "  " << args.case_dir << " on " << args.kernel;
  if (!clause.empty()) std::cout << " (saved by clause " << clause << ")";
  if (stats.max_error_u >= 0) std::cout << ": max error " << stats.max_error_u << " u, bound " << stats.bound_u << " u";
  if (!c.problem.dout.empty()) std::cout << " (the gradients judged too)";
  std::cout << "\n";
  if (!failure.empty()) std::cout << "  " << failure << "\n";
  kernel.end_run(!failure.empty());
  return failure.empty() ? 0 : 1;
}

int check(const CheckArgs& args) {
  std::unique_ptr<Kernel> kernel = make_kernel(args.kernel);
  if (!kernel) throw InputError("--kernel", "", "unknown kernel '" + args.kernel + "' (see attnspec kernels)");
  const Case c = load_case(args.case_dir);
  ErrorStats stats;
  if (c.merge) return report(args, *kernel, c, check_merge_case(args, *kernel, c, stats), stats);
  const auto missing = missing_capabilities(kernel->capabilities(), c.problem);
  if (!missing.empty()) throw InputError(args.case_dir, "", "kernel " + args.kernel + " cannot run this case: " + missing.front());
  const FormatId input = kernel->formats().input;
  for (const auto* values : {&c.problem.q, &c.problem.k, &c.problem.v, &c.problem.dout})
    for (double x : *values)
      if (!is_representable(x, input))
        throw InputError(args.case_dir, "dtype",
                         "case values (" + std::string(format_info(c.dtype).name) + ") are not all representable in the kernel's input format " +
                             std::string(format_info(input).name));
  if (c.layout) {
    const Capabilities caps = kernel->capabilities();
    const bool paged = c.layout->kind == LayoutKind::kv_cache && c.layout->cache.page_size > 0;
    const bool takes = c.layout->kind == LayoutKind::varlen ? caps.varlen : paged ? caps.paged_kv_cache : caps.kv_cache;
    if (!takes)
      throw InputError(args.case_dir, "layout",
                       "kernel " + args.kernel + " cannot run this case: it takes no " +
                           (c.layout->kind == LayoutKind::varlen ? "variable-length batches" : paged ? "paged KV caches" : "KV caches"));
  }
  const std::string failure = c.layout ? check_layout_against_reference(*kernel, c.problem, *c.layout, stats)
                                       : check_against_reference(*kernel, c.problem, stats);
  return report(args, *kernel, c, failure, stats);
}

}  // namespace

Command add_check_command(CLI::App& app) {
  auto args = std::make_shared<CheckArgs>();
  CLI::App* sub = app.add_subcommand("check", "Run a kernel on one case directory and check it against the certified reference");
  sub->footer(
      "Checks every output within the precision model's bound of the certified reference (spec/SPEC.md\n"
      "section 6), NaN exactly where a non-finite input reaches, and the lse if the kernel returns it.\n"
      "A case with a \"layout\" (spec/SPEC.md sections 2.5 and 4) runs laid out, each sequence checked;\n"
      "one with \"merge\": true through the kernel's merge operator (section 6.10).\n"
      "Exit status 0 pass, 1 fail, 2 bad input. Reproduces the counterexamples `attnspec run` saves.");
  sub->add_option("CASE_DIR", args->case_dir, "an attnspec-case/1 directory")->required()->check(CLI::ExistingDirectory);
  sub->add_option("--kernel", args->kernel, "kernel to run (see: attnspec kernels)")->required();
  return {sub, [args] { return check(*args); }};
}

}  // namespace attnspec::cli
