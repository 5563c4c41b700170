// `attnspec kernels`: the built-in kernels with their formats and
// capabilities; with --mutants, the mutant catalogue too.
#include <cstdio>
#include <iostream>
#include <memory>

#include "adapters/mutants/mutants.hpp"
#include "adapters/registry.hpp"
#include "cli/commands.hpp"

namespace attnspec::cli {

Command add_kernels_command(CLI::App& app) {
  auto mutants = std::make_shared<bool>(false);
  CLI::App* sub = app.add_subcommand("kernels", "List the built-in kernels with their formats and capabilities");
  sub->add_flag("--mutants", *mutants, "also list the mutant kernels: one realistic bug each, and the clause meant to catch it");
  return {sub, [mutants] {
            for (const KernelEntry& entry : builtin_kernels()) {
              const std::unique_ptr<Kernel> kernel = entry.make();
              const KernelFormats f = kernel->formats();
              std::printf("%-12s input %-9s accumulate %-8s output %-9s %s\n", std::string(entry.name).c_str(),
                          std::string(format_info(f.input).name).c_str(), std::string(format_info(f.accumulate).name).c_str(),
                          std::string(format_info(f.output).name).c_str(), describe(kernel->capabilities()).c_str());
              std::printf("%-12s %s\n", "", std::string(entry.summary).c_str());
            }
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
