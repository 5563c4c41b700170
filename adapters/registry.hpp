// The kernels by name: the built-in ones, those registered at start-up (the
// third-party adapters of adapters/third_party.hpp), the mutants, the
// emulated kernel styles (adapters/emulated), and 'cmd:COMMAND' for a
// kernel in another process (adapters/process).
// Adding a built-in kernel: its own folder with a factory function, plus one
// line in registry.cpp.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/kernel.hpp"

namespace attnspec {

// Where a kernel stands on this machine. A library kernel can lack a code
// path for this CPU (oneDNN 2.6 has no bf16 matmul without AVX-512) or take
// one of several (AVX2 or AVX-512 micro-kernels): its verdicts hold for the
// path it was measured on, which reports name.
struct KernelPlatform {
  std::string unavailable;  // why it cannot run here; empty when it can
  std::string code_path;    // e.g. "oneDNN ISA avx2"; empty for portable C++
};

struct KernelEntry {
  std::string_view name;
  std::string_view summary;
  std::unique_ptr<Kernel> (*make)();
  KernelPlatform (*platform)() = nullptr;  // nullptr: portable C++, runs anywhere
};

// make_kernel's answer for a kernel this machine cannot run: the message
// names the kernel and the reason. Not a usage error: the same command
// runs it on another CPU.
struct KernelUnavailable : std::runtime_error {
  KernelUnavailable(const std::string& kernel, const std::string& reason);
  std::string reason;
};

KernelPlatform platform_of(const KernelEntry& entry);

std::span<const KernelEntry> builtin_kernels();

// Adds kernels to those make_kernel finds (entries must outlive the
// process; names must be new). Programs that link the third-party adapters
// call this once at start-up.
void register_kernels(std::span<const KernelEntry> entries);
// The kernels added by register_kernels, in registration order.
std::vector<KernelEntry> registered_kernels();

// The entry of a built-in, registered, mutant or emulated kernel; nullopt
// for an unknown name or a "cmd:" kernel.
std::optional<KernelEntry> find_kernel_entry(std::string_view name);

// A built-in, registered or mutant kernel by name, or a process kernel for
// "cmd:COMMAND" (which starts COMMAND); nullptr if the name is unknown.
// Throws KernelUnavailable for a kernel this machine cannot run.
std::unique_ptr<Kernel> make_kernel(std::string_view name);

}  // namespace attnspec
