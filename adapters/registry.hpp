// The built-in kernels by name. Adding a kernel: its own folder with a
// factory function, plus one line in registry.cpp.
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "adapters/kernel.hpp"

namespace attnspec {

struct KernelEntry {
  std::string_view name;
  std::string_view summary;
  std::unique_ptr<Kernel> (*make)();
};

std::span<const KernelEntry> builtin_kernels();
// A built-in or mutant kernel (adapters/mutants) by name; nullptr if unknown.
std::unique_ptr<Kernel> make_kernel(std::string_view name);

}  // namespace attnspec
