// Entry point of the `attnspec` command line: registers the subcommands,
// runs the chosen one and maps errors to exit statuses (2 for usage errors
// and bad input, with nothing written).
#include <malloc.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <vector>

#include "adapters/registry.hpp"
#include "adapters/third_party.hpp"
#include "cli/commands.hpp"

int main(int argc, char** argv) {
  // Every clause allocates and frees tensors of megabytes per problem.
  // glibc serves blocks that large with fresh mmap'ed pages, so each problem
  // paid page faults and the kernel's zeroing again: a third of the ci
  // profile's time on long rows (perf, GRADGQA). Kept in the heap, freed
  // blocks are reused (up to 1 GiB held back between problems).
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  CLI::App app{
      "attnspec: conformance suite and numerical specification for scaled dot-product attention,\n"
      "softmax(Q K^T * scale + mask) V. Definitions: spec/SPEC.md. Exit status: 0 success,\n"
      "1 a check failed, 2 usage error or bad input, 3 the kernel is not available on this machine.\n"};
  attnspec::register_third_party_kernels();
  app.name("attnspec");
  app.require_subcommand(1);
  app.set_version_flag("--version", "attnspec 0.1.0");
  const std::vector<attnspec::cli::Command> commands = {
      attnspec::cli::add_run_command(app), attnspec::cli::add_check_command(app),
      attnspec::cli::add_kernels_command(app), attnspec::cli::add_reference_command(app),
      attnspec::cli::add_check_adapter_command(app), attnspec::cli::add_audit_command(app),
      attnspec::cli::add_merge_command(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help, --version
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  try {
    for (const auto& command : commands)
      if (command.app->parsed()) return command.run();
  } catch (const attnspec::KernelUnavailable& e) {
    std::cerr << "attnspec: " << e.what() << "\n";
    return attnspec::cli::kExitUnavailable;
  } catch (const std::exception& e) {
    std::cerr << "attnspec: error: " << e.what() << "\n";
    return attnspec::cli::kExitUsage;
  }
  return 2;
}
