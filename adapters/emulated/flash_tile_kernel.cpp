// FlashAttention-2/3's forward pass as its GPU kernels round it: per key
// tile, float32 logits (16-bit inputs, float32 accumulation, as tensor-core
// GEMMs do) and float32 softmax statistics (running max m, running sum l),
// but the unnormalised weight tile P = exp(S - m) is converted to the 16-bit
// format before the P V product, because the tensor-core GEMM takes 16-bit
// operands; P V accumulates in float32, and acc / l is rounded once to the
// output format. The built-in online-f16 keeps P in float32 instead.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "adapters/emulated/emulated_kernels.hpp"

namespace attnspec {
namespace {

constexpr float kMinusInfinity = -std::numeric_limits<float>::infinity();

class FlashTileKernel final : public Kernel {
 public:
  FlashTileKernel(FormatId io, int tile_keys) : io_(io), tile_keys_(tile_keys) {}

  std::string name() const override { return io_ == FormatId::float16 ? "flash-f16" : "flash-bf16"; }

  // The weights reach P V in the 16-bit format, so the precision model's
  // accumulation format is that format (as for composed-f16), not float32.
  KernelFormats formats() const override { return {io_, io_, io_}; }

  Capabilities capabilities() const override {
    Capabilities c;
    c.gqa = c.explicit_scale = c.dv_ne_dk = true;
    return c;
  }

  KernelResult run(const Problem& p) override {
    if (const auto missing = missing_capabilities(capabilities(), p); !missing.empty()) throw KernelUnsupported(missing.front());
    const Dims& d = p.dims;
    KernelResult result;
    result.out.resize(p.out_size());
    const float scale = p.scale ? static_cast<float>(*p.scale) : 1.0f / std::sqrt(static_cast<float>(d.d_k));
    std::vector<float> logits(static_cast<std::size_t>(tile_keys_)), acc(static_cast<std::size_t>(d.d_v));
    for (std::size_t flat = 0; flat < p.rows(); ++flat) {
      const RowIndex r = p.row_index(flat);
      const int g = p.kv_head_of(r.head);
      const auto q = p.query_row(r);
      float max = kMinusInfinity, sum = 0;
      bool nan_logit = false;
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int key0 = 0; key0 < d.kv_len; key0 += tile_keys_) {
        const int key1 = std::min(key0 + tile_keys_, d.kv_len);
        float tile_max = kMinusInfinity;
        for (int j = key0; j < key1; ++j) {
          const auto k = p.key_row(r.batch, g, j);
          float dot = 0;
          for (int t = 0; t < d.d_k; ++t) dot += static_cast<float>(q[t]) * static_cast<float>(k[t]);
          float& x = logits[static_cast<std::size_t>(j - key0)];
          x = dot * scale;
          nan_logit = nan_logit || std::isnan(x);
          tile_max = std::max(tile_max, x);
        }
        const float new_max = std::max(max, tile_max);
        const float rescale = max == kMinusInfinity ? 0.0f : std::exp(max - new_max);
        sum *= rescale;
        for (float& a : acc) a *= rescale;
        for (int j = key0; j < key1; ++j) {
          const float weight = std::exp(logits[static_cast<std::size_t>(j - key0)] - new_max);
          sum += weight;  // l from the float32 weights, as FlashAttention's row sum
          const auto stored = static_cast<float>(round_to_format(weight, io_));
          const auto v = p.value_row(r.batch, g, j);
          for (int t = 0; t < d.d_v; ++t) acc[static_cast<std::size_t>(t)] += stored * static_cast<float>(v[t]);
        }
        max = new_max;
      }
      for (int t = 0; t < d.d_v; ++t)
        result.out[flat * static_cast<std::size_t>(d.d_v) + static_cast<std::size_t>(t)] =
            nan_logit ? std::numeric_limits<double>::quiet_NaN() : round_to_format(acc[static_cast<std::size_t>(t)] / sum, io_);
    }
    return result;
  }

 private:
  FormatId io_;
  int tile_keys_;
};

}  // namespace

std::unique_ptr<Kernel> make_flash_f16() { return std::make_unique<FlashTileKernel>(FormatId::float16, kFlashTileKeys); }
std::unique_ptr<Kernel> make_flash_bf16() { return std::make_unique<FlashTileKernel>(FormatId::bfloat16, kFlashTileKeys); }

}  // namespace attnspec
