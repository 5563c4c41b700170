// `attnspec kernels`: the built-in kernels with their formats and
// capabilities.
#include <cstdio>
#include <iostream>
#include <memory>

#include "adapters/registry.hpp"
#include "cli/commands.hpp"

namespace attnspec::cli {

Command add_kernels_command(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("kernels", "List the built-in kernels with their formats and capabilities");
  return {sub, [] {
            for (const KernelEntry& entry : builtin_kernels()) {
              const std::unique_ptr<Kernel> kernel = entry.make();
              const KernelFormats f = kernel->formats();
              std::printf("%-12s input %-9s accumulate %-8s output %-9s %s\n", std::string(entry.name).c_str(),
                          std::string(format_info(f.input).name).c_str(), std::string(format_info(f.accumulate).name).c_str(),
                          std::string(format_info(f.output).name).c_str(), describe(kernel->capabilities()).c_str());
              std::printf("%-12s %s\n", "", std::string(entry.summary).c_str());
            }
            return 0;
          }};
}

}  // namespace attnspec::cli
