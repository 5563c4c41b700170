// The subcommands of the `attnspec` command line. Each registers itself and
// its options on the app; its runner returns the exit status: 0 success,
// 1 a check failed, 2 usage or bad input, 3 a kernel this machine cannot run.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace attnspec::cli {

inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;
// Not a usage error: the kernel exists, but its library has no code path
// for this CPU or build (KernelUnavailable), so nothing was judged.
inline constexpr int kExitUnavailable = 3;

struct Command {
  CLI::App* app;
  std::function<int()> run;
};

Command add_reference_command(CLI::App& app);
Command add_run_command(CLI::App& app);
Command add_check_command(CLI::App& app);
Command add_kernels_command(CLI::App& app);
Command add_check_adapter_command(CLI::App& app);
Command add_audit_command(CLI::App& app);
Command add_merge_command(CLI::App& app);

}  // namespace attnspec::cli
