// Attention composed from oneDNN primitives, on one CPU engine and stream,
// as a framework would build it for each (batch, query head):
//
//   logits  = matmul(Q, K^T)  with the scale as the matmul's output scale,
//             the softcap (if any) as eltwise post-ops linear(1/c) and
//             tanh scaled by c, and then the mask as a binary_add post-op,
//             so the cap comes before the mask as the spec orders them;
//   weights = softmax_v2 forward, softmax_accurate, over the last axis;
//   out     = matmul(weights, V).
//
// "onednn-f32" keeps everything in f32. "onednn-bf16" takes bf16 inputs and
// stores logits, weights and output in bf16, as a bf16 model would (oneDNN
// accumulates inside each primitive in f32, but every intermediate is
// rounded to bf16 between primitives, hence accumulate = bfloat16).
//
// Glue the adapter adds (oneDNN has no attention op): the additive mask
// handed to binary_add is built here, in the kernel's input format, from the
// problem's visibility: -inf at every blocked key (bool mask false, additive
// -inf, causal top_left or bottom_right), the additive mask value elsewhere.
// GQA maps query head h to kv head h / (Hq/Hkv) by pointing the K and V
// memories at that head's rows. The default scale 1/sqrt(d_k) is computed
// here and rounded to f32 like any explicit one. Nothing else is changed: a
// row with every key blocked gets whatever softmax_v2 makes of all -inf
// logits, a NaN or infinity in a blocked key still meets its -inf in an
// addition, and one in a blocked value meets its 0 weight in P V.
// No log-sum-exp: softmax_v2 does not return it.
#include "adapters/onednn/onednn_kernel.hpp"

#include "adapters/cpu.hpp"

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <oneapi/dnnl/dnnl.hpp>
#include <type_traits>
#include <unordered_map>

namespace attnspec {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

// bf16 as its 16 bits: oneDNN's bf16 type is not in the public C++ API.
struct Bf16 {
  std::uint16_t bits;
};

float to_float(double x) { return static_cast<float>(x); }

Bf16 to_bf16(double x) {
  const float f = static_cast<float>(x);
  std::uint32_t bits = std::bit_cast<std::uint32_t>(f);
  // Inputs are bf16 values already, so this only drops zero bits; NaN is
  // kept quiet so that truncation cannot turn it into infinity.
  if (std::isnan(f)) return Bf16{static_cast<std::uint16_t>((bits >> 16) | 0x0040u)};
  bits += 0x7fffu + ((bits >> 16) & 1u);  // nearest, ties to even
  return Bf16{static_cast<std::uint16_t>(bits >> 16)};
}

double to_double(float x) { return static_cast<double>(x); }
double to_double(Bf16 x) { return static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(x.bits) << 16)); }

template <typename Element>
Element from_double(double x) {
  if constexpr (std::is_same_v<Element, float>) return to_float(x);
  else return to_bf16(x);
}

template <typename Element>
std::vector<Element> converted(const std::vector<double>& values) {
  std::vector<Element> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = from_double<Element>(values[i]);
  return out;
}

// The additive mask given to binary_add, shaped like the problem's mask
// ([mask_batch, mask_heads, L, S]) or [1, 1, L, S] for causal masking alone;
// empty when nothing is masked.
template <typename Element>
std::vector<Element> additive_mask(const Problem& p) {
  if (p.every_key_visible()) return {};
  const Dims& d = p.dims;
  const int batches = p.mask_kind == MaskKind::none ? 1 : p.mask_batch;
  const int heads = p.mask_kind == MaskKind::none ? 1 : p.mask_heads;
  std::vector<Element> mask;
  mask.reserve(static_cast<std::size_t>(batches) * heads * d.q_len * d.kv_len);
  const double minus_infinity = -std::numeric_limits<double>::infinity();
  for (int b = 0; b < batches; ++b)
    for (int h = 0; h < heads; ++h)
      for (int i = 0; i < d.q_len; ++i)
        for (int j = 0; j < d.kv_len; ++j) {
          const RowIndex r{b, h, i};
          mask.push_back(from_double<Element>(p.visible(r, j) ? p.mask_value(r, j) : minus_infinity));
        }
  return mask;
}

template <typename Element>
class OnednnKernel final : public Kernel {
 public:
  static constexpr bool kBf16 = std::is_same_v<Element, Bf16>;
  static constexpr memory::data_type kType = kBf16 ? memory::data_type::bf16 : memory::data_type::f32;
  static constexpr FormatId kFormat = kBf16 ? FormatId::bfloat16 : FormatId::float32;

  OnednnKernel() : engine_((apply_onednn_isa_policy(), dnnl::engine(dnnl::engine::kind::cpu, 0))), stream_(engine_) {}

  std::string name() const override { return kBf16 ? "onednn-bf16" : "onednn-f32"; }

  KernelFormats formats() const override { return {kFormat, kFormat, kFormat}; }

  Capabilities capabilities() const override {
    Capabilities c;
    c.bool_mask = c.additive_mask = true;  // both become one binary_add operand
    c.causal_top_left = c.causal_bottom_right = true;
    c.gqa = true;
    c.explicit_scale = true;
    c.softcap = true;
    c.dv_ne_dk = true;
    c.lse = false;  // softmax_v2 gives the weights only
    // softmax_v2 turns a row of all -inf logits into NaN (max -inf, then
    // -inf - -inf); the adapter passes that on rather than writing 0.
    c.fully_masked_rows = false;
    return c;
  }

  KernelResult run(const Problem& p) override {
    const Dims& d = p.dims;
    const memory::dim L = d.q_len, S = d.kv_len, dk = d.d_k, dv = d.d_v;

    std::vector<Element> q = converted<Element>(p.q);
    std::vector<Element> k = converted<Element>(p.k);
    std::vector<Element> v = converted<Element>(p.v);
    std::vector<Element> mask = additive_mask<Element>(p);
    std::vector<Element> logits(static_cast<std::size_t>(L * S));
    std::vector<Element> weights(static_cast<std::size_t>(L * S));
    std::vector<Element> out(p.out_size());

    const memory::desc q_md({L, dk}, kType, Tag::ab);
    const memory::desc k_transposed_md({dk, S}, kType, Tag::ba);  // K is [S, d_k] row-major
    const memory::desc logits_md({L, S}, kType, Tag::ab);
    const memory::desc v_md({S, dv}, kType, Tag::ab);
    const memory::desc out_md({L, dv}, kType, Tag::ab);

    const float scale = p.scale ? static_cast<float>(*p.scale) : static_cast<float>(1.0 / std::sqrt(static_cast<double>(d.d_k)));
    dnnl::primitive_attr logits_attr;
    logits_attr.set_output_scales(0, {scale});
    dnnl::post_ops logits_post_ops;
    if (p.softcap) {
      const auto cap = static_cast<float>(*p.softcap);
      // The multiplication by c is the tanh post-op's own output scale: a
      // second eltwise_linear in the chain is applied with the first one's
      // alpha by oneDNN 2.6's matmul (brgemm on AVX-512, gemm:jit on AVX2):
      // linear(1/c), tanh, linear(c) yields tanh(x/c)/c, so that spelling
      // would be wrong here.
      logits_post_ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_linear, 1.0f / cap, 0.0f);
      logits_post_ops.append_eltwise(cap, dnnl::algorithm::eltwise_tanh, 0.0f, 0.0f);
    }
    const int mask_post_op = logits_post_ops.len();
    if (!mask.empty()) logits_post_ops.append_binary(dnnl::algorithm::binary_add, logits_md);
    logits_attr.set_post_ops(logits_post_ops);

    const dnnl::matmul logits_matmul(
        dnnl::matmul::primitive_desc(dnnl::matmul::desc(q_md, k_transposed_md, logits_md), logits_attr, engine_));
    const dnnl::softmax_v2_forward softmax(dnnl::softmax_v2_forward::primitive_desc(
        dnnl::softmax_v2_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::softmax_accurate, logits_md,
                                       logits_md, /*softmax_axis=*/1),
        engine_));
    const dnnl::matmul output_matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(logits_md, v_md, out_md), engine_));

    memory logits_memory(logits_md, engine_, logits.data());
    memory weights_memory(logits_md, engine_, weights.data());
    for (int b = 0; b < d.batch; ++b) {
      for (int h = 0; h < d.q_heads; ++h) {
        const auto kv_head = static_cast<memory::dim>(b) * d.kv_heads + p.kv_head_of(h);
        const auto q_head = static_cast<memory::dim>(b) * d.q_heads + h;
        memory q_memory(q_md, engine_, q.data() + q_head * L * dk);
        memory k_memory(k_transposed_md, engine_, k.data() + kv_head * S * dk);
        memory v_memory(v_md, engine_, v.data() + kv_head * S * dv);
        memory out_memory(out_md, engine_, out.data() + q_head * L * dv);

        std::unordered_map<int, memory> logits_args{
            {DNNL_ARG_SRC, q_memory}, {DNNL_ARG_WEIGHTS, k_memory}, {DNNL_ARG_DST, logits_memory}};
        if (!mask.empty()) {
          const auto mask_b = static_cast<memory::dim>(p.mask_kind == MaskKind::none || p.mask_batch == 1 ? 0 : b);
          const auto mask_h = static_cast<memory::dim>(p.mask_kind == MaskKind::none || p.mask_heads == 1 ? 0 : h);
          const memory::dim mask_heads = p.mask_kind == MaskKind::none ? 1 : p.mask_heads;
          logits_args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(mask_post_op) | DNNL_ARG_SRC_1,
                              memory(logits_md, engine_, mask.data() + (mask_b * mask_heads + mask_h) * L * S));
        }
        logits_matmul.execute(stream_, logits_args);
        softmax.execute(stream_, {{DNNL_ARG_SRC, logits_memory}, {DNNL_ARG_DST, weights_memory}});
        output_matmul.execute(stream_,
                              {{DNNL_ARG_SRC, weights_memory}, {DNNL_ARG_WEIGHTS, v_memory}, {DNNL_ARG_DST, out_memory}});
      }
    }
    stream_.wait();

    KernelResult result;
    result.out.resize(out.size());
    for (std::size_t i = 0; i < out.size(); ++i) result.out[i] = to_double(out[i]);
    return result;
  }

 private:
  dnnl::engine engine_;
  dnnl::stream stream_;
};

std::string isa_name(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::all: return "all";
    case dnnl::cpu_isa::sse41: return "sse41";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx512_mic: return "avx512_mic";
    case dnnl::cpu_isa::avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
  }
  return "isa " + std::to_string(static_cast<int>(isa));
}

// The instruction set oneDNN dispatches to here: the CPU's best, or less
// where ONEDNN_MAX_CPU_ISA (or its old name DNNL_MAX_CPU_ISA) or the AMX
// policy caps it.
std::string effective_isa() {
  apply_onednn_isa_policy();
  std::string text = isa_name(dnnl::get_effective_cpu_isa()) + onednn_isa_policy_note();
  for (const char* variable : {"ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"})
    if (const char* cap = std::getenv(variable); cap && *cap) {
      text += std::string(" (") + variable + "=" + cap + ")";
      break;
    }
  return text;
}

// Whether oneDNN has every primitive the kernel composes, in this element
// type, on this CPU: each is created once on a 2 x 2 problem, with the
// attributes run() gives it. oneDNN 2.6 has no bf16 matmul below AVX-512
// (avx512_core): "could not create a primitive descriptor iterator".
template <typename Element>
KernelPlatform probe_platform() {
  using Composed = OnednnKernel<Element>;
  KernelPlatform platform;
  platform.code_path = "oneDNN ISA " + effective_isa();
  try {
    const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    const memory::desc square({2, 2}, Composed::kType, Tag::ab);
    const memory::desc transposed({2, 2}, Composed::kType, Tag::ba);
    dnnl::primitive_attr attr;
    attr.set_output_scales(0, {0.5f});
    dnnl::post_ops post_ops;
    post_ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_linear, 0.5f, 0.0f);
    post_ops.append_eltwise(2.0f, dnnl::algorithm::eltwise_tanh, 0.0f, 0.0f);
    post_ops.append_binary(dnnl::algorithm::binary_add, square);
    attr.set_post_ops(post_ops);
    (void)dnnl::matmul::primitive_desc(dnnl::matmul::desc(square, transposed, square), attr, engine);
    (void)dnnl::softmax_v2_forward::primitive_desc(
        dnnl::softmax_v2_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::softmax_accurate, square,
                                       square, 1),
        engine);
    (void)dnnl::matmul::primitive_desc(dnnl::matmul::desc(square, square, square), engine);
  } catch (const dnnl::error& e) {
    platform.unavailable = onednn_version() + " has no " + (Composed::kBf16 ? "bf16" : "f32") +
                           " matmul/softmax for this CPU (oneDNN ISA " + effective_isa() +
                           (Composed::kBf16 ? "; its bf16 primitives need AVX-512, avx512_core" : "") + "): " + e.what();
  }
  return platform;
}

template <typename Element>
KernelPlatform platform() {
  static const KernelPlatform cached = probe_platform<Element>();
  return cached;
}

constexpr std::array<KernelEntry, 2> kOnednnKernels{{
    {"onednn-f32", "oneDNN matmul + softmax_v2 + matmul in f32, CPU engine",
     []() -> std::unique_ptr<Kernel> { return std::make_unique<OnednnKernel<float>>(); }, platform<float>},
    {"onednn-bf16", "oneDNN matmul + softmax_v2 + matmul with bf16 inputs, intermediates and output, CPU engine",
     []() -> std::unique_ptr<Kernel> { return std::make_unique<OnednnKernel<Bf16>>(); }, platform<Bf16>},
}};

}  // namespace

namespace {
bool onednn_isa_variable_set() {
  for (const char* variable : {"ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"})
    if (const char* cap = std::getenv(variable); cap && *cap) return true;
  return false;
}

bool onednn_capped_for_amx() {
  static const bool capped = [] {
    if (onednn_isa_variable_set() || !this_cpu().has("amx_tile")) return false;
    return dnnl::set_max_cpu_isa(dnnl::cpu_isa::avx512_core_bf16) == dnnl::status::success;
  }();
  return capped;
}
}  // namespace

void apply_onednn_isa_policy() { (void)onednn_capped_for_amx(); }

std::string onednn_isa_policy_note() {
  return onednn_capped_for_amx() ? " (capped below avx512_core_amx by attnspec: oneDNN 2.6.3's AMX kernels die of SIGILL "
                                   "on this project's AMX machines; ONEDNN_MAX_CPU_ISA overrides)"
                                 : "";
}

std::span<const KernelEntry> onednn_kernels() {
  apply_onednn_isa_policy();
  return kOnednnKernels;
}

std::string onednn_version() {
  const dnnl_version_t* version = dnnl_version();
  return "oneDNN " + std::to_string(version->major) + "." + std::to_string(version->minor) + "." +
         std::to_string(version->patch);
}

}  // namespace attnspec
