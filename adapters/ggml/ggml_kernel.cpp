// The "ggml-<variant>-kv-f16" and "ggml-<variant>-kv-f32" kernels: llama.cpp's
// ggml_flash_attn_ext from the npm package's prebuilt CPU libraries, loaded
// with dlopen, with the glue described in ggml_kernel.hpp.
#include "adapters/ggml/ggml_kernel.hpp"

#include "adapters/ggml/alibi_slopes.hpp"

#include <dlfcn.h>
#include <ggml-cpu.h>
#include <ggml.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace attnspec {
namespace {

#ifndef ATTNSPEC_GGML_LIB_DIR
#error "ATTNSPEC_GGML_LIB_DIR: the folder of libggml-base.so and the libggml-cpu-*.so variants"
#endif
#ifndef ATTNSPEC_GGML_PACKAGE_VERSION
#define ATTNSPEC_GGML_PACKAGE_VERSION "unknown"
#endif

// What the adapter calls: ggml's core (libggml-base.so) and the CPU
// variant's compute and initialisation; a variant's ggml_backend_score()
// is 0 where this CPU lacks an instruction set it was built for.
struct GgmlLibrary {
  std::string error;  // why it could not be loaded; empty when it was
  decltype(&ggml_init) init = nullptr;
  decltype(&ggml_free) free = nullptr;
  decltype(&ggml_new_tensor_4d) new_tensor_4d = nullptr;
  decltype(&ggml_flash_attn_ext) flash_attn_ext = nullptr;
  decltype(&ggml_flash_attn_ext_add_sinks) add_sinks = nullptr;
  decltype(&ggml_new_graph) new_graph = nullptr;
  decltype(&ggml_build_forward_expand) build_forward_expand = nullptr;
  decltype(&ggml_tensor_overhead) tensor_overhead = nullptr;
  decltype(&ggml_graph_overhead) graph_overhead = nullptr;
  decltype(&ggml_fp32_to_fp16) fp32_to_fp16 = nullptr;
  decltype(&ggml_fp16_to_fp32) fp16_to_fp32 = nullptr;
  decltype(&ggml_cpu_init) cpu_init = nullptr;
  decltype(&ggml_graph_compute_with_ctx) compute = nullptr;
  int (*score)() = nullptr;
};

template <typename Function>
void bind(void* handle, const char* symbol, Function& slot, std::string& error) {
  slot = reinterpret_cast<Function>(dlsym(handle, symbol));
  if (slot == nullptr && error.empty()) error = std::string("symbol ") + symbol + " not found";
}

// Loaded once per variant and kept for the process's life (ggml keeps
// global tables; unloading them is not worth the risk).
const GgmlLibrary& library(const std::string& variant) {
  static std::mutex mutex;
  static std::map<std::string, GgmlLibrary> loaded;
  std::lock_guard lock(mutex);
  auto found = loaded.find(variant);
  if (found != loaded.end()) return found->second;
  GgmlLibrary& lib = loaded[variant];
  const std::string dir = ATTNSPEC_GGML_LIB_DIR;
  void* base = dlopen((dir + "/libggml-base.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  if (base == nullptr) {
    lib.error = std::string("dlopen libggml-base.so: ") + dlerror();
    return lib;
  }
  const std::string cpu_path = dir + "/libggml-cpu-" + variant + ".so";
  void* cpu = dlopen(cpu_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (cpu == nullptr) {
    lib.error = "dlopen " + cpu_path + ": " + dlerror();
    return lib;
  }
  bind(base, "ggml_init", lib.init, lib.error);
  bind(base, "ggml_free", lib.free, lib.error);
  bind(base, "ggml_new_tensor_4d", lib.new_tensor_4d, lib.error);
  bind(base, "ggml_flash_attn_ext", lib.flash_attn_ext, lib.error);
  bind(base, "ggml_flash_attn_ext_add_sinks", lib.add_sinks, lib.error);
  bind(base, "ggml_new_graph", lib.new_graph, lib.error);
  bind(base, "ggml_build_forward_expand", lib.build_forward_expand, lib.error);
  bind(base, "ggml_tensor_overhead", lib.tensor_overhead, lib.error);
  bind(base, "ggml_graph_overhead", lib.graph_overhead, lib.error);
  bind(base, "ggml_fp32_to_fp16", lib.fp32_to_fp16, lib.error);
  bind(base, "ggml_fp16_to_fp32", lib.fp16_to_fp32, lib.error);
  bind(cpu, "ggml_cpu_init", lib.cpu_init, lib.error);
  bind(cpu, "ggml_graph_compute_with_ctx", lib.compute, lib.error);
  bind(cpu, "ggml_backend_score", lib.score, lib.error);
  if (lib.error.empty() && lib.score() == 0) lib.error = "this CPU lacks an instruction set the " + variant + " build needs";
  if (lib.error.empty()) lib.cpu_init();  // its F16 tables, before any compute
  return lib;
}

// Frees a ggml context on every path out of a run.
struct ContextDeleter {
  const GgmlLibrary* lib;
  void operator()(ggml_context* context) const { lib->free(context); }
};

template <std::size_t N>
struct Name {
  char text[N];
  constexpr Name(const char (&s)[N]) { std::copy_n(s, N, text); }
};

enum class KvType { f16, f32 };

class GgmlKernel final : public Kernel {
 public:
  GgmlKernel(std::string variant, KvType kv, GgmlGlueFault fault = GgmlGlueFault::none)
      : variant_(std::move(variant)), kv_(kv), fault_(fault) {}

  std::string name() const override {
    return "ggml-" + variant_ + (kv_ == KvType::f16 ? "-kv-f16" : "-kv-f32");
  }

  // F16 keys: Q is converted to F16 for the dot products (float sums),
  // the softmax runs in float32 and P V is summed in an F16 accumulator
  // (ops.cpp, VKQ16 and ggml_vec_mad_f16), divided in float32; F32 keys:
  // float32 throughout. The output tensor is float32 in both.
  KernelFormats formats() const override {
    if (kv_ == KvType::f16) return {FormatId::float16, FormatId::float16, FormatId::float32};
    return {FormatId::float32, FormatId::float32, FormatId::float32};
  }

  Capabilities capabilities() const override {
    Capabilities c;
    c.bool_mask = true;
    c.additive_mask = kv_ == KvType::f16;  // F16 mask values are exact only for F16 inputs' masks
    c.causal_top_left = c.causal_bottom_right = true;  // folded into the mask
    c.window_top_left = c.window_bottom_right = true;  // likewise
    // ALiBi: max_bias, with the distances in the mask (run() and
    // alibi_slopes.hpp); ggml computes the slopes, so the paper's only.
    c.alibi_top_left = c.alibi_bottom_right = true;
    c.alibi_paper_slopes_only = true;
    // ggml_flash_attn_ext_add_sinks exists, but its sink step computes
    // expf(s - M) with M = -inf in a row with no visible key, which is
    // NaN for the spec's "no sink" of -inf (docs/findings/ggml-3.22.1.md, finding 17): declared
    // missing until that is settled, so that one known NaN does not fail
    // every clause that draws sinks.
    c.sinks = false;
    c.gqa = true;
    c.explicit_scale = true;
    c.softcap = true;
    c.dv_ne_dk = true;
    c.fully_masked_rows = true;  // ggml divides by S only where S != 0
    return c;
  }

  KernelResult run(const Problem& p) override {
    const GgmlLibrary& lib = library(variant_);
    if (!lib.error.empty()) throw std::runtime_error(name() + ": " + lib.error);
    const Dims& d = p.dims;
    const auto B = static_cast<std::int64_t>(d.batch), Hq = static_cast<std::int64_t>(d.q_heads),
               Hkv = static_cast<std::int64_t>(d.kv_heads), L = static_cast<std::int64_t>(d.q_len),
               S = static_cast<std::int64_t>(d.kv_len), Dk = static_cast<std::int64_t>(d.d_k),
               Dv = static_cast<std::int64_t>(d.d_v);
    // ALiBi's max_bias (declined here, before anything is allocated, where
    // ggml cannot take the slopes); its distances go into the mask.
    const GgmlAlibi alibi = plan_ggml_alibi(p.alibi, d.batch, d.q_heads);
    const bool masked = !p.every_key_visible() || p.alibi.has_value();
    const std::size_t kv_size = kv_ == KvType::f16 ? 2 : 4;
    const std::size_t data_bytes = static_cast<std::size_t>(B * Hq * L * Dk) * 4 +
                                   static_cast<std::size_t>(B * Hkv * S * (Dk + Dv)) * kv_size +
                                   (masked ? static_cast<std::size_t>(B * Hq * L * S) * 2 : 0) +
                                   static_cast<std::size_t>(B * Hq * L * Dv) * 4 + static_cast<std::size_t>(Hq) * 4;
    // The work buffer ggml_graph_compute_with_ctx takes from the context:
    // per thread a row of Q, two of V and a cache line on the one-row path;
    // the tiled path's 64 x 64 tiles of logits and mask and 64-row buffers
    // of Q, K and V (under 1 MB up to d = 512) fit in the 1 MB added.
    const std::size_t work_bytes = static_cast<std::size_t>(4 * (Dk + 2 * Dv) + 1024) * 4 + (1 << 20);
    ggml_init_params params{};
    params.mem_size = data_bytes + work_bytes + 16 * lib.tensor_overhead() + lib.graph_overhead() + (1 << 20);
    params.mem_buffer = nullptr;
    params.no_alloc = false;
    std::unique_ptr<ggml_context, ContextDeleter> context(lib.init(params), ContextDeleter{&lib});
    if (!context) throw std::runtime_error(name() + ": ggml_init failed");
    ggml_context* ctx = context.get();

    const ggml_type kv_type = kv_ == KvType::f16 ? GGML_TYPE_F16 : GGML_TYPE_F32;
    ggml_tensor* q = lib.new_tensor_4d(ctx, GGML_TYPE_F32, Dk, L, Hq, B);
    ggml_tensor* k = lib.new_tensor_4d(ctx, kv_type, Dk, S, Hkv, B);
    ggml_tensor* v = lib.new_tensor_4d(ctx, kv_type, Dv, S, Hkv, B);
    // The spec's [B, H, rows, d] in C order is ggml's [d, rows, H, B].
    auto* q_data = static_cast<float*>(q->data);
    for (std::size_t i = 0; i < p.q.size(); ++i) q_data[i] = static_cast<float>(p.q[i]);
    if (fault_ == GgmlGlueFault::transposed_keys) {
      fill(lib, k, keys_with_rows_and_heads_swapped(p));
    } else {
      fill(lib, k, p.k);
    }
    fill(lib, v, p.v);

    ggml_tensor* mask = nullptr;
    // The visibility and ALiBi biases the mask is built from (the glue
    // faults read a copy: inverted_bool_mask with the bool mask flipped,
    // alibi_top_left with the ALiBi distances from the top-left diagonal).
    Problem altered;
    const Problem& seen = fault_ == GgmlGlueFault::inverted_bool_mask && p.mask_kind == MaskKind::boolean
                              ? (altered = flipped_bool_mask(p))
                          : fault_ == GgmlGlueFault::alibi_top_left && p.alibi ? (altered = top_left_alibi(p))
                                                                              : p;
    if (masked) {
      mask = lib.new_tensor_4d(ctx, GGML_TYPE_F16, S, L, Hq, B);
      auto* m = static_cast<ggml_fp16_t*>(mask->data);
      const ggml_fp16_t blocked = lib.fp32_to_fp16(-std::numeric_limits<float>::infinity());
      for (int b = 0; b < d.batch; ++b)
        for (int h = 0; h < d.q_heads; ++h)
          for (int i = 0; i < d.q_len; ++i)
            for (int j = 0; j < d.kv_len; ++j) {
              const RowIndex r{b, h, i};
              const std::size_t at = p.row_flat(r) * static_cast<std::size_t>(S) + static_cast<std::size_t>(j);
              if (!seen.visible(r, j)) {
                m[at] = blocked;
                continue;
              }
              // ggml adds its slope for the head times the mask value: the
              // mask holds the additive mask's value plus the ALiBi bias,
              // over the divisor (alibi_slopes.hpp).
              const double bias = (p.mask_kind == MaskKind::additive ? p.mask_value(r, j) : 0.0) + seen.alibi_bias(r, j);
              const double divisor = alibi.divisors[static_cast<std::size_t>(h)];
              m[at] = lib.fp32_to_fp16(static_cast<float>(bias / divisor));
              if (static_cast<double>(lib.fp16_to_fp32(m[at])) * divisor != bias)
                throw KernelUnsupported(name() + ": mask value " + std::to_string(bias) +
                                        (p.alibi ? " (with ALiBi) over " + std::to_string(divisor) : std::string()) +
                                        " is not a float16 number (ggml's mask is F16)");
            }
    }

    const double default_scale = 1.0 / std::sqrt(static_cast<double>(d.d_k));
    const double scale = p.scale && fault_ != GgmlGlueFault::dropped_scale ? *p.scale : default_scale;
    ggml_tensor* out = lib.flash_attn_ext(ctx, q, k, v, mask, static_cast<float>(scale), alibi.max_bias,
                                          p.softcap ? static_cast<float>(*p.softcap) : 0.0f);
    if (!p.sinks.empty()) {
      ggml_tensor* sinks = lib.new_tensor_4d(ctx, GGML_TYPE_F32, Hq, 1, 1, 1);
      auto* s = static_cast<float*>(sinks->data);
      for (std::size_t h = 0; h < p.sinks.size(); ++h) s[h] = static_cast<float>(p.sinks[h]);
      lib.add_sinks(out, sinks);
    }
    ggml_cgraph* graph = lib.new_graph(ctx);
    lib.build_forward_expand(graph, out);
    if (lib.compute(ctx, graph, 1) != GGML_STATUS_SUCCESS) throw std::runtime_error(name() + ": graph compute failed");

    // out is [d_v, Hq, L, B]: element (b, h, i, t) at ((b L + i) Hq + h) d_v + t.
    const auto* o = static_cast<const float*>(out->data);
    KernelResult result;
    result.out.resize(p.out_size());
    for (int b = 0; b < d.batch; ++b)
      for (int h = 0; h < d.q_heads; ++h)
        for (int i = 0; i < d.q_len; ++i) {
          const std::size_t to = p.row_flat({b, h, i}) * static_cast<std::size_t>(Dv);
          const std::size_t from = ((static_cast<std::size_t>(b) * static_cast<std::size_t>(L) + static_cast<std::size_t>(i)) *
                                        static_cast<std::size_t>(Hq) + static_cast<std::size_t>(h)) * static_cast<std::size_t>(Dv);
          for (std::int64_t t = 0; t < Dv; ++t) result.out[to + static_cast<std::size_t>(t)] = static_cast<double>(o[from + static_cast<std::size_t>(t)]);
        }
    return result;
  }

 private:
  // Inputs are values of the kernel's input format held as doubles: the
  // conversions to F16 or F32 are exact.
  void fill(const GgmlLibrary& lib, ggml_tensor* tensor, const std::vector<double>& values) const {
    if (kv_ == KvType::f16) {
      auto* data = static_cast<ggml_fp16_t*>(tensor->data);
      for (std::size_t i = 0; i < values.size(); ++i) data[i] = lib.fp32_to_fp16(static_cast<float>(values[i]));
    } else {
      auto* data = static_cast<float*>(tensor->data);
      for (std::size_t i = 0; i < values.size(); ++i) data[i] = static_cast<float>(values[i]);
    }
  }

  static Problem top_left_alibi(const Problem& p) {
    Problem realigned = p;
    realigned.alibi->alignment = Alignment::top_left;
    return realigned;
  }

  static Problem flipped_bool_mask(const Problem& p) {
    Problem flipped = p;
    for (double& entry : flipped.mask) entry = 1.0 - entry;
    return flipped;
  }

  // The glue fault transposed_keys: K's [B, Hkv, S, d_k] values laid out
  // as if they were [B, S, Hkv, d_k].
  static std::vector<double> keys_with_rows_and_heads_swapped(const Problem& p) {
    const Dims& d = p.dims;
    std::vector<double> swapped(p.k.size());
    const std::size_t H = static_cast<std::size_t>(d.kv_heads), S = static_cast<std::size_t>(d.kv_len),
                      D = static_cast<std::size_t>(d.d_k);
    for (std::size_t b = 0; b < static_cast<std::size_t>(d.batch); ++b)
      for (std::size_t h = 0; h < H; ++h)
        for (std::size_t j = 0; j < S; ++j)
          for (std::size_t t = 0; t < D; ++t)
            swapped[((b * S + j) * H + h) * D + t] = p.k[((b * H + h) * S + j) * D + t];
    return swapped;
  }

  std::string variant_;
  KvType kv_;
  GgmlGlueFault fault_;
};

template <Name Variant, KvType Kv>
std::unique_ptr<Kernel> make_ggml() {
  return std::make_unique<GgmlKernel>(Variant.text, Kv);
}

template <Name Variant>
KernelPlatform ggml_platform() {
  KernelPlatform platform;
  const GgmlLibrary& lib = library(Variant.text);
  if (!lib.error.empty()) platform.unavailable = lib.error;
  platform.code_path = std::string("libggml-cpu-") + Variant.text + ".so (ggml_backend_score " +
                       (lib.score ? std::to_string(lib.score()) : std::string("?")) + ")";
  return platform;
}

// The variants registered: the baseline, each x86-64 step that changes
// ggml's vector code on the CPUs of this project's machines (SSE4.2, AVX,
// AVX2 with FMA, AVX-512, AVX-512 with bf16/VNNI, AMX), as the package
// names them. The package's other builds (ivybridge, piledriver, cannonlake,
// cascadelake, cooperlake, icelake, alderlake) differ from these in
// instruction sets ggml's attention does not use differently.
#define ATTNSPEC_GGML_VARIANT(variant, summary)                                                              \
  KernelEntry{"ggml-" variant "-kv-f16", "llama.cpp ggml_flash_attn_ext, libggml-cpu-" variant ".so, F16 K/V (" summary ")", \
              make_ggml<variant, KvType::f16>, ggml_platform<variant>},                                     \
      KernelEntry {                                                                                          \
    "ggml-" variant "-kv-f32", "llama.cpp ggml_flash_attn_ext, libggml-cpu-" variant ".so, F32 K/V (" summary ")", \
        make_ggml<variant, KvType::f32>, ggml_platform<variant>                                              \
  }

const std::array kGgmlKernels = {
    ATTNSPEC_GGML_VARIANT("x64", "baseline x86-64"),
    ATTNSPEC_GGML_VARIANT("sse42", "SSE4.2"),
    ATTNSPEC_GGML_VARIANT("sandybridge", "AVX"),
    ATTNSPEC_GGML_VARIANT("haswell", "AVX2, FMA, F16C"),
    ATTNSPEC_GGML_VARIANT("skylakex", "AVX-512"),
    ATTNSPEC_GGML_VARIANT("zen4", "AVX-512 with bf16 and VNNI"),
    ATTNSPEC_GGML_VARIANT("sapphirerapids", "AVX-512 with AMX"),
};
#undef ATTNSPEC_GGML_VARIANT

}  // namespace

std::span<const KernelEntry> ggml_kernels() { return kGgmlKernels; }

std::unique_ptr<Kernel> make_ggml_kernel(const std::string& variant, bool kv_f16, GgmlGlueFault fault) {
  return std::make_unique<GgmlKernel>(variant, kv_f16 ? KvType::f16 : KvType::f32, fault);
}

std::string ggml_version() {
  return std::string("llama.cpp ggml (npm @node-llama-cpp/linux-x64 ") + ATTNSPEC_GGML_PACKAGE_VERSION + ")";
}

}  // namespace attnspec
