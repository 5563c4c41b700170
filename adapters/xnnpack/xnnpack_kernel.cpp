// The "xnnpack-f32" kernel: attention composed from XNNPACK's fully-connected
// and softmax f32 operators, with the glue described in xnnpack_kernel.hpp.
#include "adapters/xnnpack/xnnpack_kernel.hpp"

#include <xnnpack.h>

#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "adapters/cpu.hpp"

namespace attnspec {
namespace {

// XNNPACK's micro-kernels may read up to XNN_EXTRA_BYTES past the last
// element of an input; every buffer handed to it is padded by that much.
constexpr std::size_t kPaddingFloats = (XNN_EXTRA_BYTES + sizeof(float) - 1) / sizeof(float);

std::string status_name(xnn_status status) {
  switch (status) {
    case xnn_status_success: return "xnn_status_success";
    case xnn_status_uninitialized: return "xnn_status_uninitialized";
    case xnn_status_invalid_parameter: return "xnn_status_invalid_parameter";
    case xnn_status_invalid_state: return "xnn_status_invalid_state";
    case xnn_status_unsupported_parameter: return "xnn_status_unsupported_parameter";
    case xnn_status_unsupported_hardware: return "xnn_status_unsupported_hardware";
    case xnn_status_out_of_memory: return "xnn_status_out_of_memory";
  }
  return "xnn_status " + std::to_string(static_cast<int>(status));
}

void check(xnn_status status, const char* call) {
  if (status != xnn_status_success) throw std::runtime_error(std::string("XNNPACK: ") + call + " failed: " + status_name(status));
}

// Once per process; the library stays initialised until exit.
void initialize_xnnpack() {
  static const xnn_status status = xnn_initialize(nullptr);
  check(status, "xnn_initialize");
}

std::vector<float> padded_floats(std::size_t count) { return std::vector<float>(count + kPaddingFloats, 0.0f); }

// The inputs are float32 values held as doubles, so the conversion is exact.
std::vector<float> to_padded_floats(const std::vector<double>& values) {
  std::vector<float> floats = padded_floats(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) floats[i] = static_cast<float>(values[i]);
  return floats;
}

// Owns one operator. close() deletes it and checks the status; the
// destructor only cleans up after an exception, where a second error
// could not be reported anyway.
class Operator {
 public:
  Operator() = default;
  Operator(const Operator&) = delete;
  Operator& operator=(const Operator&) = delete;
  ~Operator() {
    if (op_ != nullptr) xnn_delete_operator(op_);
  }

  xnn_operator_t* receive() { return &op_; }
  xnn_operator_t get() const { return op_; }

  void close() {
    if (xnn_operator_t op = std::exchange(op_, nullptr)) check(xnn_delete_operator(op), "xnn_delete_operator");
  }

 private:
  xnn_operator_t op_ = nullptr;
};

constexpr float kNoClampLow = -std::numeric_limits<float>::infinity();
constexpr float kNoClampHigh = std::numeric_limits<float>::infinity();

class XnnpackF32Kernel final : public Kernel {
 public:
  std::string name() const override { return "xnnpack-f32"; }

  KernelFormats formats() const override { return {FormatId::float32, FormatId::float32, FormatId::float32}; }

  Capabilities capabilities() const override {
    Capabilities c = full_capabilities();
    c.lse = false;  // XNNPACK's softmax returns the weights only
    // Its softmax of a row of -inf is -inf, not the spec's 0: FULLMASK
    // reports that, the other clauses leave such rows out.
    c.fully_masked_rows = false;
    // XNNPACK has no attention, so no window either: one would be this
    // adapter's glue alone (MASKNAN already judges how its P V treats
    // blocked keys).
    c.window_top_left = c.window_bottom_right = false;
    c.alibi_top_left = c.alibi_bottom_right = false;  // likewise
    c.sinks = false;                                   // likewise
    c.descales = false;
    return c;
  }

  KernelResult run(const Problem& p) override {
    initialize_xnnpack();
    const Dims& d = p.dims;
    const auto queries = static_cast<std::size_t>(d.q_len);
    const auto keys = static_cast<std::size_t>(d.kv_len);
    const auto d_k = static_cast<std::size_t>(d.d_k);
    const auto d_v = static_cast<std::size_t>(d.d_v);

    const std::vector<float> q = to_padded_floats(p.q);
    const std::vector<float> k = to_padded_floats(p.k);
    const std::vector<float> v = to_padded_floats(p.v);
    std::vector<float> logits = padded_floats(queries * keys);
    std::vector<float> weights = padded_floats(queries * keys);
    std::vector<float> out = padded_floats(queries * d_v);

    const float scale = static_cast<float>(p.scale ? *p.scale : 1.0 / std::sqrt(static_cast<double>(d.d_k)));
    const bool capped = p.softcap.has_value();
    const float cap = capped ? static_cast<float>(*p.softcap) : 0.0f;
    const bool additive = p.mask_kind == MaskKind::additive;

    Operator softmax;
    check(xnn_create_softmax_nc_f32(keys, keys, keys, 0, softmax.receive()), "xnn_create_softmax_nc_f32");

    KernelResult result;
    result.out.resize(p.out_size());
    for (int b = 0; b < d.batch; ++b) {
      for (int g = 0; g < d.kv_heads; ++g) {
        const std::size_t kv_offset = static_cast<std::size_t>(b * d.kv_heads + g) * keys;
        // The weights are packed when the operator is created, so one pair
        // of operators serves every query head reading this kv head.
        Operator q_kt;
        check(xnn_create_fully_connected_nc_f32(d_k, keys, d_k, keys, &k[kv_offset * d_k], nullptr, kNoClampLow,
                                                kNoClampHigh, 0, q_kt.receive()),
              "xnn_create_fully_connected_nc_f32 (Q K^T)");
        Operator p_v;
        check(xnn_create_fully_connected_nc_f32(keys, d_v, keys, d_v, &v[kv_offset * d_v], nullptr, kNoClampLow,
                                                kNoClampHigh, XNN_FLAG_TRANSPOSE_WEIGHTS, p_v.receive()),
              "xnn_create_fully_connected_nc_f32 (P V)");

        for (int h = 0; h < d.q_heads; ++h) {
          if (p.kv_head_of(h) != g) continue;
          const std::size_t first_row = p.row_flat({b, h, 0});
          check(xnn_setup_fully_connected_nc_f32(q_kt.get(), queries, &q[first_row * d_k], logits.data(), nullptr),
                "xnn_setup_fully_connected_nc_f32 (Q K^T)");
          check(xnn_run_operator(q_kt.get(), nullptr), "xnn_run_operator (Q K^T)");

          apply_scale_softcap_mask(p, {b, h, 0}, scale, capped, cap, additive, logits);

          check(xnn_setup_softmax_nc_f32(softmax.get(), queries, logits.data(), weights.data(), nullptr),
                "xnn_setup_softmax_nc_f32");
          check(xnn_run_operator(softmax.get(), nullptr), "xnn_run_operator (softmax)");

          check(xnn_setup_fully_connected_nc_f32(p_v.get(), queries, weights.data(), out.data(), nullptr),
                "xnn_setup_fully_connected_nc_f32 (P V)");
          check(xnn_run_operator(p_v.get(), nullptr), "xnn_run_operator (P V)");

          for (std::size_t t = 0; t < queries * d_v; ++t) result.out[first_row * d_v + t] = static_cast<double>(out[t]);
        }
        p_v.close();
        q_kt.close();
      }
    }
    softmax.close();
    return result;
  }

 private:
  // The glue between the two operators, in float32 and in the order of
  // spec section 2.3: scale, softcap, then mask. A blocked key's logit is
  // set, not added to, so that it is -inf whatever Q K^T gave there.
  static void apply_scale_softcap_mask(const Problem& p, RowIndex first, float scale, bool capped, float cap,
                                       bool additive, std::vector<float>& logits) {
    const auto keys = static_cast<std::size_t>(p.dims.kv_len);
    for (int i = 0; i < p.dims.q_len; ++i) {
      const RowIndex r{first.batch, first.head, i};
      for (int j = 0; j < p.dims.kv_len; ++j) {
        float& x = logits[static_cast<std::size_t>(i) * keys + static_cast<std::size_t>(j)];
        if (!p.visible(r, j)) {
          x = -std::numeric_limits<float>::infinity();
          continue;
        }
        x *= scale;
        if (capped) x = cap * std::tanh(x / cap);
        if (additive) x += static_cast<float>(p.mask_value(r, j));
      }
    }
  }
};

std::unique_ptr<Kernel> make_xnnpack_f32() { return std::make_unique<XnnpackF32Kernel>(); }

// XNNPACK picks its f32 micro-kernels once, in xnn_initialize, from
// cpuinfo's CPUID reading: AVX-512F, else FMA3, else AVX, else SSE. No
// environment variable caps it, so a run measures this CPU's path only.
KernelPlatform xnnpack_platform() {
  static const KernelPlatform cached = [] {
    KernelPlatform p;
    const xnn_status status = xnn_initialize(nullptr);
    if (status != xnn_status_success) {
      p.unavailable = "xnn_initialize failed on this CPU: " + status_name(status);
      return p;
    }
    const CpuDescription& cpu = this_cpu();
    const char* path = cpu.has("avx512f") ? "avx512f" : cpu.has("fma") ? "fma3" : cpu.has("avx") ? "avx" : "sse";
    p.code_path = std::string("XNNPACK f32 micro-kernels ") + path + " (chosen from CPUID; no cap)";
    return p;
  }();
  return cached;
}

const std::array kXnnpackKernels = {
    KernelEntry{"xnnpack-f32",
                "XNNPACK f32 fully-connected (Q K^T), softmax, fully-connected (P V); scale, softcap, mask, GQA as "
                "float32 glue",
                make_xnnpack_f32, xnnpack_platform},
};

}  // namespace

std::span<const KernelEntry> xnnpack_kernels() { return kXnnpackKernels; }

std::string xnnpack_version() {
#ifdef ATTNSPEC_XNNPACK_DEBIAN_VERSION
  return std::string("XNNPACK (Debian libxnnpack0 ") + ATTNSPEC_XNNPACK_DEBIAN_VERSION + ")";
#else
  return "XNNPACK (Debian libxnnpack-dev)";
#endif
}

}  // namespace attnspec
