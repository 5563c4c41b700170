// The adapter passes the problem to libtorch as it stands: Q, K, V as
// [B, H, L, d] tensors of the kernel's format, the mask as libtorch takes
// it (bool: true attends; additive: a tensor added to the scaled logits),
// is_causal for top-left causal masking. libtorch 1.13's entry points have
// no scale argument and no grouped-query heads, so those capabilities are
// declared missing rather than emulated. It refuses a mask together with
// is_causal, so with a mask the causal blocks are folded into the mask:
// the only glue. It gives
// NaN for rows with no visible key, so it does not declare
// fully_masked_rows (FULLMASK reports the deviation).
#include "adapters/libtorch/libtorch_kernel.hpp"

#ifdef ATTNSPEC_HAVE_ONEDNN
#include "adapters/onednn/onednn_kernel.hpp"
#endif

#include <ATen/ATen.h>
#include <ATen/Version.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/version.h>

#include <array>
#include <cmath>
#include <cstdlib>

#include "adapters/cpu.hpp"

namespace attnspec {
namespace {


at::Tensor to_tensor(const std::vector<double>& values, std::vector<int64_t> shape, at::ScalarType type) {
  // from_blob does not copy; .to() does, so the double buffer may go away.
  return at::from_blob(const_cast<double*>(values.data()), shape, at::kDouble).to(type);
}

class LibtorchKernel final : public Kernel {
 public:
  LibtorchKernel(at::ScalarType type, FormatId format) : type_(type), format_(format) {}

  std::string name() const override { return "libtorch-sdpa-" + short_name(format_); }

  // bfloat16 tensors store the logits and weights in bfloat16 between the
  // operations, so that is the accumulation format the bounds must assume.
  KernelFormats formats() const override { return {format_, format_, format_}; }

  Capabilities capabilities() const override {
    Capabilities c;
    c.bool_mask = true;
    c.additive_mask = true;
    c.causal_top_left = true;  // is_causal: key j visible to query i iff j <= i
    c.dv_ne_dk = true;
    c.backward = true;  // autograd (run_backward)
    return c;
  }

  KernelResult run(const Problem& p) override {
    Inputs in = inputs(p, /*with_grad=*/false);
    const at::Tensor result = attend(in).to(at::kDouble).contiguous();
    KernelResult r;
    r.out.assign(result.data_ptr<double>(), result.data_ptr<double>() + result.numel());
    return r;
  }

  // libtorch's own backward: autograd through the forward's operations
  // (1.13's _scaled_dot_product_attention is composite on the CPU: bmm,
  // softmax, bmm), each gradient in the tensors' type.
  GradientOutputs run_backward(const Problem& p) override {
    Inputs in = inputs(p, /*with_grad=*/true);
    const Dims& d = p.dims;
    const at::Tensor out = attend(in);
    const at::Tensor dout = to_tensor(p.dout, {d.batch, d.q_heads, d.q_len, d.d_v}, type_);
    std::vector<at::Tensor> grads;
    try {
      grads = torch::autograd::grad({out}, {in.q, in.k, in.v}, {dout});
    } catch (const c10::Error& e) {
      throw std::runtime_error(std::string("libtorch backward: ") + e.what_without_backtrace());
    }
    const auto values = [](const at::Tensor& t) {
      const at::Tensor flat = t.to(at::kDouble).contiguous();
      return std::vector<double>(flat.data_ptr<double>(), flat.data_ptr<double>() + flat.numel());
    };
    return {values(grads[0]), values(grads[1]), values(grads[2]), {}};
  }

 private:
  struct Inputs {
    at::Tensor q, k, v;
    c10::optional<at::Tensor> mask;
    bool causal = false;
    std::vector<double> mask_values;  // outlives the call: a float64 tensor may view it
  };

  Inputs inputs(const Problem& p, bool with_grad) const {
    const Dims& d = p.dims;
    Inputs in;
    in.q = to_tensor(p.q, {d.batch, d.q_heads, d.q_len, d.d_k}, type_);
    in.k = to_tensor(p.k, {d.batch, d.kv_heads, d.kv_len, d.d_k}, type_);
    in.v = to_tensor(p.v, {d.batch, d.kv_heads, d.kv_len, d.d_v}, type_);
    if (with_grad)
      for (at::Tensor* t : {&in.q, &in.k, &in.v}) t->set_requires_grad(true);
    // libtorch 1.13 refuses an attn_mask together with is_causal: with a
    // mask, the causal blocks are folded into it (the one piece of glue).
    in.causal = p.causal == Causal::top_left;
    if (p.mask_kind != MaskKind::none) {
      in.mask_values = p.mask;
      if (in.causal) {
        const auto L = static_cast<std::size_t>(d.q_len), S = static_cast<std::size_t>(d.kv_len);
        for (std::size_t i = 0; i < in.mask_values.size(); ++i) {
          const std::size_t query = (i / S) % L, key = i % S;
          if (key > query) in.mask_values[i] = p.mask_kind == MaskKind::boolean ? 0.0 : -INFINITY;
        }
        in.causal = false;
      }
      const std::vector<int64_t> shape = {p.mask_batch, p.mask_heads, d.q_len, d.kv_len};
      in.mask = to_tensor(in.mask_values, shape, p.mask_kind == MaskKind::boolean ? at::kBool : type_);
    }
    return in;
  }

  static at::Tensor attend(const Inputs& in) {
    try {
      return std::get<0>(at::_scaled_dot_product_attention(in.q, in.k, in.v, in.mask, 0.0, false, in.causal));
    } catch (const c10::Error& e) {
      throw std::runtime_error(std::string("libtorch: ") + e.what_without_backtrace());
    }
  }

  static std::string short_name(FormatId format) {
    switch (format) {
      case FormatId::float64: return "f64";
      case FormatId::bfloat16: return "bf16";
      default: return "f32";
    }
  }

  at::ScalarType type_;
  FormatId format_;
};

template <FormatId format>
std::unique_ptr<Kernel> make() {
  constexpr at::ScalarType type = format == FormatId::float64 ? at::kDouble
                                  : format == FormatId::bfloat16 ? at::kBFloat16
                                                                 : at::kFloat;
  return std::make_unique<LibtorchKernel>(type, format);
}

// ATen's vectorised kernels (softmax, conversions) dispatch on the CPU
// capability it detected, capped by ATEN_CPU_CAPABILITY; show_config()
// names it ("CPU capability usage: AVX2").
std::string aten_cpu_capability() {
  const std::string config = at::show_config();
  const std::string key = "CPU capability usage: ";
  const auto at = config.find(key);
  if (at == std::string::npos) return "unknown";
  const auto end = config.find('\n', at);
  std::string capability = config.substr(at + key.size(), end == std::string::npos ? std::string::npos : end - at - key.size());
  if (const char* cap = std::getenv("ATEN_CPU_CAPABILITY"); cap && *cap) capability += std::string(" (ATEN_CPU_CAPABILITY=") + cap + ")";
  return capability;
}

// libtorch's bf16 products run in the process's one libdnnl, capped on AMX
// machines by the oneDNN adapter's policy where that adapter is compiled in.
std::string libtorch_onednn_note() {
#ifdef ATTNSPEC_HAVE_ONEDNN
  apply_onednn_isa_policy();
  return onednn_isa_policy_note().empty() ? "" : " capped at avx512_core_bf16 (AMX: see oneDNN's code path)";
#else
  return "";
#endif
}

// Which code the products take: float32 and float64 matrix products go to
// the BLAS behind libblas.so.3 (or ATen's own loop for tiny ones); bfloat16
// products go to oneDNN where ATen's mkldnn_bf16_device_check holds
// (AVX-512 BW, VL and DQ), else to ATen's own bfloat16 gemm.
template <FormatId format>
KernelPlatform platform() {
  static const KernelPlatform cached = [] {
    KernelPlatform p;
    p.code_path = "ATen CPU capability " + aten_cpu_capability();
    const CpuDescription& cpu = this_cpu();
    if (format == FormatId::bfloat16)
      p.code_path += cpu.has("avx512bw") && cpu.has("avx512vl") && cpu.has("avx512dq")
                         ? "; bf16 matmul by oneDNN" + libtorch_onednn_note()
                         : "; bf16 matmul by ATen's gemm";
    else
      p.code_path += "; matmul by BLAS (libblas.so.3)";
    return p;
  }();
  return cached;
}

// float16 is left out: libtorch 1.13 has no CPU bmm for Half.
const std::array kKernels = {
    KernelEntry{"libtorch-sdpa-f32", "libtorch 1.13 at::_scaled_dot_product_attention, float32, CPU",
                make<FormatId::float32>, platform<FormatId::float32>},
    KernelEntry{"libtorch-sdpa-f64", "libtorch 1.13 at::_scaled_dot_product_attention, float64, CPU",
                make<FormatId::float64>, platform<FormatId::float64>},
    KernelEntry{"libtorch-sdpa-bf16", "libtorch 1.13 at::_scaled_dot_product_attention, bfloat16, CPU",
                make<FormatId::bfloat16>, platform<FormatId::bfloat16>},
};

}  // namespace

std::span<const KernelEntry> libtorch_kernels() { return kKernels; }

std::string libtorch_version() { return "libtorch " TORCH_VERSION; }

}  // namespace attnspec
