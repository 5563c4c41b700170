// The emulated kernels: the naive composition with 16-bit storage between
// operations (adapters/naive, the PRECREL yardstick for 16-bit kernels)
// under names that say what they stand for.
#include "adapters/emulated/emulated_kernels.hpp"

#include <array>
#include <string>

#include "adapters/naive/naive_kernel.hpp"
#include "adapters/wrapped_kernel.hpp"

namespace attnspec {
namespace {

// Another kernel under a name of its own; everything else is the inner one's.
class RenamedKernel final : public WrappedKernel {
 public:
  RenamedKernel(std::string name, std::unique_ptr<Kernel> inner)
      : WrappedKernel(std::move(inner)), name_(std::move(name)) {}
  std::string name() const override { return name_; }

 private:
  std::string name_;
};

const std::array kEmulated = {
    KernelEntry{"composed-f16",
                "FlashAttention-3's fp16 baseline: textbook composition, float32 arithmetic, logits, weights and output "
                "stored in float16",
                make_composed_f16},
    KernelEntry{"composed-bf16",
                "the same composition with bfloat16 storage (logits, weights and output in bfloat16)", make_composed_bf16},
    KernelEntry{"flash-f16",
                "FlashAttention-2/3 as on GPUs: online softmax over 128-key tiles in float32, the weight tile "
                "converted to float16 for P V, float32 accumulation, float16 output",
                make_flash_f16},
    KernelEntry{"flash-bf16", "the same with bfloat16 inputs, weight tiles and output", make_flash_bf16},
};

}  // namespace

std::span<const KernelEntry> emulated_kernels() { return kEmulated; }

std::unique_ptr<Kernel> make_composed_f16() {
  return std::make_unique<RenamedKernel>("composed-f16", make_naive_kernel(FormatId::float16, FormatId::float16));
}

std::unique_ptr<Kernel> make_composed_bf16() {
  return std::make_unique<RenamedKernel>("composed-bf16", make_naive_kernel(FormatId::bfloat16, FormatId::bfloat16));
}

}  // namespace attnspec
