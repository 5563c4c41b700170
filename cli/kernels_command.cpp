// `attnspec kernels`: the built-in and third-party kernels with their
// formats and capabilities; with --mutants, the mutant catalogue too.
#include <cstdio>
#include <iostream>
#include <memory>

#include "adapters/cpu.hpp"
#include "adapters/emulated/emulated_kernels.hpp"
#include "adapters/mutants/mutants.hpp"
#include "adapters/process/process_kernel.hpp"
#include "adapters/registry.hpp"
#include "adapters/third_party.hpp"
#include "cases/io/input_error.hpp"
#include "cli/commands.hpp"

namespace attnspec::cli {
namespace {

void print_entry(const KernelEntry& entry) {
  const KernelPlatform platform = platform_of(entry);
  if (!platform.unavailable.empty()) {
    std::printf("%-18s NOT AVAILABLE on this machine: %s\n", std::string(entry.name).c_str(), platform.unavailable.c_str());
    std::printf("%-18s %s\n", "", std::string(entry.summary).c_str());
    return;
  }
  const std::unique_ptr<Kernel> kernel = entry.make();
  const KernelFormats f = kernel->formats();
  std::printf("%-18s input %-9s accumulate %-8s output %-9s %s\n", std::string(entry.name).c_str(),
              std::string(format_info(f.input).name).c_str(), std::string(format_info(f.accumulate).name).c_str(),
              std::string(format_info(f.output).name).c_str(), describe(kernel->capabilities()).c_str());
  std::printf("%-18s %s\n", "", std::string(entry.summary).c_str());
  if (f.weights) std::printf("%-18s P V: %s\n", "", describe_weights(f).substr(2).c_str());
  if (!platform.code_path.empty()) std::printf("%-18s code path here: %s\n", "", platform.code_path.c_str());
}

// A process adapter's declaration: its hello, as attnspec run reads it.
int print_adapters(const std::vector<std::string>& adapters) {
  for (const std::string& argument : adapters) {
    if (!argument.starts_with(kProcessKernelPrefix))
      throw InputError("--adapter", "", "expected cmd:COMMAND, got '" + argument + "'");
    const std::unique_ptr<Kernel> kernel = make_kernel(argument);  // throws, naming the field, on a bad hello
    const KernelFormats f = kernel->formats();
    std::printf("%s\n  command: %s\n  input %s, accumulate %s, output %s%s\n  capabilities: %s\n", kernel->name().c_str(),
                argument.substr(kProcessKernelPrefix.size()).c_str(), std::string(format_info(f.input).name).c_str(),
                std::string(format_info(f.accumulate).name).c_str(), std::string(format_info(f.output).name).c_str(),
                describe_weights(f).c_str(), describe(kernel->capabilities()).c_str());
    kernel->end_run(false);
  }
  return 0;
}

}  // namespace

Command add_kernels_command(CLI::App& app) {
  auto mutants = std::make_shared<bool>(false);
  auto adapters = std::make_shared<std::vector<std::string>>();
  CLI::App* sub = app.add_subcommand("kernels", "List the kernels with their formats and capabilities");
  sub->add_flag("--mutants", *mutants, "also list the mutant kernels: one realistic bug each, and the clause meant to catch it");
  sub->add_option("--adapter", *adapters,
                  "cmd:COMMAND: start this process adapter and show what it declares (its hello) instead of the "
                  "list; repeatable");
  sub->footer("A kernel in another process (any language) is tested as --kernel cmd:COMMAND; see spec/SPEC.md\n"
              "section 8 and adapters/python/ for an example. A third-party kernel whose library has no code\n"
              "path for this CPU is listed as NOT AVAILABLE with the reason; `attnspec run` reports it as not\n"
              "available (exit status 3) instead of judging it. Its code path here (oneDNN's ISA, capped by\n"
              "ONEDNN_MAX_CPU_ISA; ATen's CPU capability, capped by ATEN_CPU_CAPABILITY; XNNPACK's\n"
              "micro-kernels, which nothing caps) is named under it.");
  return {sub, [mutants, adapters] {
            if (!adapters->empty()) return print_adapters(*adapters);
            std::printf("CPU: %s\n\nBuilt-in:\n", describe(this_cpu()).c_str());
            for (const KernelEntry& entry : builtin_kernels()) print_entry(entry);
            std::printf("\nThird-party, in process:");
            const std::vector<std::string> libraries = third_party_libraries();
            if (libraries.empty()) std::printf(" none compiled in (scripts/install-deps.sh, then rebuild)");
            for (std::size_t i = 0; i < libraries.size(); ++i) std::printf("%s %s", i ? "," : "", libraries[i].c_str());
            std::printf("\n");
            for (const KernelEntry& entry : registered_kernels()) print_entry(entry);
            std::printf("\nEmulated kernel styles, for reproducing papers' tables (not in --kernel builtin):\n");
            for (const KernelEntry& entry : emulated_kernels()) print_entry(entry);
            if (*mutants) {
              std::printf("\nMutants (float32 in, out and accumulation; every capability declared):\n");
              for (const MutantEntry& entry : mutant_kernels())
                std::printf("%-27s caught by %-9s %s\n", std::string(entry.name).c_str(), std::string(entry.clause).c_str(),
                            std::string(entry.bug).c_str());
            }
            return 0;
          }};
}

}  // namespace attnspec::cli
