// One registration line per built-in kernel.
#include "adapters/registry.hpp"

#include <array>

#include "adapters/mutants/mutants.hpp"
#include "adapters/naive/naive_kernel.hpp"
#include "adapters/online/online_kernel.hpp"

namespace attnspec {
namespace {

const std::array kBuiltins = {
    KernelEntry{"naive-f64", "textbook composition with Eigen, all in float64", make_naive_f64},
    KernelEntry{"naive-f32", "textbook composition with Eigen, all in float32", make_naive_f32},
    KernelEntry{"online-f32", "tiled online softmax, float32 in and out, float32 accumulation", make_online_f32},
    KernelEntry{"online-bf16", "tiled online softmax, bfloat16 in and out, float32 accumulation", make_online_bf16},
    KernelEntry{"online-f16", "tiled online softmax, float16 in and out, float32 accumulation", make_online_f16},
};

}  // namespace

std::span<const KernelEntry> builtin_kernels() { return kBuiltins; }

std::unique_ptr<Kernel> make_kernel(std::string_view name) {
  for (const KernelEntry& entry : kBuiltins)
    if (entry.name == name) return entry.make();
  for (const MutantEntry& entry : mutant_kernels())
    if (entry.name == name) return entry.make();
  return nullptr;
}

}  // namespace attnspec
