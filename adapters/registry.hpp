// The kernels by name: the built-in ones, those registered at start-up (the
// third-party adapters of adapters/third_party.hpp), the mutants, the
// emulated kernel styles (adapters/emulated), and 'cmd:COMMAND' for a
// kernel in another process (adapters/process).
// Adding a built-in kernel: its own folder with a factory function, plus one
// line in registry.cpp.
#pragma once

#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "adapters/kernel.hpp"

namespace attnspec {

struct KernelEntry {
  std::string_view name;
  std::string_view summary;
  std::unique_ptr<Kernel> (*make)();
};

std::span<const KernelEntry> builtin_kernels();

// Adds kernels to those make_kernel finds (entries must outlive the
// process; names must be new). Programs that link the third-party adapters
// call this once at start-up.
void register_kernels(std::span<const KernelEntry> entries);
// The kernels added by register_kernels, in registration order.
std::vector<KernelEntry> registered_kernels();

// A built-in, registered or mutant kernel by name, or a process kernel for
// "cmd:COMMAND" (which starts COMMAND); nullptr if the name is unknown.
std::unique_ptr<Kernel> make_kernel(std::string_view name);

}  // namespace attnspec
