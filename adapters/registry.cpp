// One registration line per built-in kernel; the table of registered ones.
#include "adapters/registry.hpp"

#include <array>
#include <stdexcept>
#include <string>

#include "adapters/emulated/emulated_kernels.hpp"
#include "adapters/mutants/mutants.hpp"
#include "adapters/naive/naive_kernel.hpp"
#include "adapters/online/online_kernel.hpp"
#include "adapters/process/process_kernel.hpp"

namespace attnspec {
namespace {

const std::array kBuiltins = {
    KernelEntry{"naive-f64", "textbook composition with Eigen, all in float64", make_naive_f64},
    KernelEntry{"naive-f32", "textbook composition with Eigen, all in float32", make_naive_f32},
    KernelEntry{"online-f32", "tiled online softmax, float32 in and out, float32 accumulation", make_online_f32},
    KernelEntry{"online-f32-splitkv",
                "online-f32 in split-KV mode: 64-key splits, float32 partial outputs reduced from their maxima and sums",
                make_online_f32_splitkv},
    KernelEntry{"online-bf16", "tiled online softmax, bfloat16 in and out, float32 accumulation", make_online_bf16},
    KernelEntry{"online-f16", "tiled online softmax, float16 in and out, float32 accumulation", make_online_f16},
    KernelEntry{"online-fp8",
                "FlashAttention 3's fp8 forward: e4m3fn inputs with descales, 128x128 tiles, float32 softmax, P times "
                "256 rounded to e4m3fn for P V, bfloat16 output",
                make_online_fp8},
};

std::vector<KernelEntry>& registered() {
  static std::vector<KernelEntry> entries;
  return entries;
}

}  // namespace

std::span<const KernelEntry> builtin_kernels() { return kBuiltins; }

void register_kernels(std::span<const KernelEntry> entries) {
  for (const KernelEntry& entry : entries) {
    for (const KernelEntry& known : kBuiltins)
      if (known.name == entry.name) throw std::logic_error("kernel registered twice: " + std::string(entry.name));
    for (const KernelEntry& known : registered())
      if (known.name == entry.name) throw std::logic_error("kernel registered twice: " + std::string(entry.name));
    registered().push_back(entry);
  }
}

std::vector<KernelEntry> registered_kernels() { return registered(); }

KernelUnavailable::KernelUnavailable(const std::string& kernel, const std::string& reason)
    : std::runtime_error("kernel " + kernel + " is not available on this machine: " + reason), reason(reason) {}

KernelPlatform platform_of(const KernelEntry& entry) { return entry.platform ? entry.platform() : KernelPlatform{}; }

std::optional<KernelEntry> find_kernel_entry(std::string_view name) {
  for (const KernelEntry& entry : kBuiltins)
    if (entry.name == name) return entry;
  for (const KernelEntry& entry : registered())
    if (entry.name == name) return entry;
  for (const MutantEntry& entry : mutant_kernels())
    if (entry.name == name) return KernelEntry{entry.name, entry.bug, entry.make};
  for (const KernelEntry& entry : emulated_kernels())
    if (entry.name == name) return entry;
  return std::nullopt;
}

std::unique_ptr<Kernel> make_kernel(std::string_view name) {
  if (name.starts_with(kProcessKernelPrefix)) return make_process_kernel(name.substr(kProcessKernelPrefix.size()), default_process_options());
  const std::optional<KernelEntry> entry = find_kernel_entry(name);
  if (!entry) return nullptr;
  const KernelPlatform platform = platform_of(*entry);
  if (!platform.unavailable.empty()) throw KernelUnavailable(std::string(name), platform.unavailable);
  return entry->make();
}

}  // namespace attnspec
