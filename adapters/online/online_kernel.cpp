// Online softmax over key tiles (Milakov & Gimelshein 2018; FlashAttention's
// forward pass): for each query tile, each key tile updates every row's
// running max m, running sum l and unnormalised output acc; the output is
// acc / l at the end, rounded once to the output format.
#include "adapters/online/online_kernel.hpp"

#include "adapters/merge/merge_states.hpp"
#include "adapters/online/layout_rows.hpp"
#include "adapters/online/online_backward.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace attnspec {
namespace {

constexpr float kMinusInfinity = -std::numeric_limits<float>::infinity();

struct RowState {
  float max = kMinusInfinity;
  float sum = 0;
  std::vector<float> acc;
  bool any_visible = false;  // -inf is also a logit: visibility is tracked apart
  bool nan_logit = false;    // std::max would silently drop a NaN logit
};

class OnlineKernel final : public Kernel {
 public:
  // `applied_weights_scale`: what the kernel multiplies P by before rounding
  // it to formats.weights; a correct kernel applies the declared scale
  // (the fp8 mutants do not).
  OnlineKernel(std::string name, KernelFormats formats, TileSizes tiles, double applied_weights_scale,
               LayoutBug bug = LayoutBug::none, MergeBug merge_bug = MergeBug::none)
      : name_(std::move(name)), formats_(formats), tiles_(tiles), weights_scale_(static_cast<float>(applied_weights_scale)),
        bug_(bug), merge_bug_(merge_bug) {
    if (tiles.queries < 1 || tiles.keys < 1) throw std::invalid_argument("online kernel: tile sizes must be >= 1");
    if (tiles.split_keys < 0 || tiles.split_keys % tiles.keys != 0)
      throw std::invalid_argument("online kernel: split_keys must be 0 or a multiple of the key tile");
    if (formats.accumulate != FormatId::float32) throw std::invalid_argument("online kernel: float32 accumulation only");
    if (const std::string error = formats_error(formats); !error.empty())
      throw std::invalid_argument("online kernel: " + error);
  }

  std::string name() const override { return name_; }

  KernelFormats formats() const override { return formats_; }

  Capabilities capabilities() const override {
    Capabilities c = full_capabilities();
    c.varlen = c.kv_cache = c.paged_kv_cache = true;
    c.merge_partials = FormatId::float32;
    c.backward = backward_;
    return c;
  }

  // FlashAttention 2's backward (adapters/online/online_backward.hpp),
  // from this kernel's own forward output and lse.
  void enable_backward(BackwardBug bug) {
    backward_ = true;
    backward_bug_ = bug;
    if (formats_.input != formats_.accumulate) formats_.gradient_storage = formats_.input;
  }

  GradientOutputs run_backward(const Problem& p) override {
    if (!backward_) return Kernel::run_backward(p);
    return flash_backward(p, run(p), formats_.gradient_storage.value_or(formats_.accumulate), formats_.output,
                          backward_bug_);
  }

  KernelResult merge(const MergeInput& input) override { return merge_states<float>(input, formats_.output, merge_bug_); }

  KernelResult run(const Problem& p) override {
    const Dims& d = p.dims;
    KernelResult result;
    result.out.resize(p.out_size());
    result.lse.resize(p.rows());
    for (int b = 0; b < d.batch; ++b) attend(p, b, DenseRows{p, b}, result);
    return result;
  }

  KernelResult run_varlen(const VarlenBatch& batch) override { return run_sequences<VarlenRows>(batch); }
  KernelResult run_kv_cache(const KvCacheBatch& batch) override { return run_sequences<CacheRows>(batch); }

 private:
  // Each sequence of a layout as its own dense shape (SPEC 2.5), its rows
  // read and its outputs written through the layout's index maps.
  template <class Rows, class Batch>
  KernelResult run_sequences(const Batch& batch) const {
    if (const std::vector<std::string> errors = validate(batch); !errors.empty())
      throw std::invalid_argument(errors.front());
    KernelResult result;
    result.out.resize(output_size(batch));
    result.lse.resize(lse_size(batch));
    for (int s = 0; s < batch.shared.dims.batch; ++s) {
      const Rows rows(batch, s, bug_);
      attend(sequence_shape(batch.shared, s, rows.lengths()), 0, rows, result);
    }
    return result;
  }

  // Every head and query tile of batch entry b of p (a dense problem, or a
  // sequence's shape with b = 0), its rows read through `rows`.
  template <class Rows>
  void attend(const Problem& p, int b, const Rows& rows, KernelResult& result) const {
    const Dims& d = p.dims;
    const float scale = p.scale ? static_cast<float>(*p.scale) : 1.0f / std::sqrt(static_cast<float>(d.d_k));
    for (int h = 0; h < d.q_heads; ++h)
      for (int first = 0; first < d.q_len; first += tiles_.queries)
        run_query_tile(p, b, h, first, std::min(first + tiles_.queries, d.q_len), scale, rows, result);
  }

  template <class Rows>
  void run_query_tile(const Problem& p, int b, int h, int first, int last, float scale, const Rows& source,
                      KernelResult& result) const {
    const Dims& d = p.dims;
    const int g = p.kv_head_of(h);
    // FlashAttention 3's descales: q's and k's folded into the scale (so the
    // lse includes them), v's applied to the normalised output.
    float v_descale = 1;
    if (p.descales) {
      scale = scale * static_cast<float>(p.descales->q_of(b, g, d.kv_heads)) *
              static_cast<float>(p.descales->k_of(b, g, d.kv_heads));
      v_descale = static_cast<float>(p.descales->v_of(b, g, d.kv_heads));
    }
    std::vector<RowState> rows(static_cast<std::size_t>(last - first));
    for (RowState& row : rows) row.acc.assign(static_cast<std::size_t>(d.d_v), 0.0f);
    std::vector<float> logits(static_cast<std::size_t>(tiles_.keys));
    std::vector<char> visible(static_cast<std::size_t>(tiles_.keys));
    std::vector<float> tile_acc(static_cast<std::size_t>(d.d_v));
    // The online softmax of `states` over the keys [from, to], key tile by
    // key tile.
    const auto accumulate = [&](std::vector<RowState>& states, int from, int to) {
    for (int key0 = from / tiles_.keys * tiles_.keys; key0 <= to; key0 += tiles_.keys) {
      const int key_begin = std::max(key0, from), key1 = std::min({key0 + tiles_.keys, d.kv_len, to + 1});
      for (int i = first; i < last; ++i) {
        const RowIndex r{b, h, i};
        RowState& row = states[static_cast<std::size_t>(i - first)];
        float tile_max = kMinusInfinity;
        bool tile_visible = false;
        for (int j = key_begin; j < key1; ++j) {
          float& x = logits[static_cast<std::size_t>(j - key0)];
          visible[static_cast<std::size_t>(j - key0)] = source.visible(p, r, j);
          if (!visible[static_cast<std::size_t>(j - key0)]) continue;
          tile_visible = true;
          x = dot(source.query(h, i), source.key(g, j)) * scale;
          if (p.softcap) x = static_cast<float>(*p.softcap) * std::tanh(x / static_cast<float>(*p.softcap));
          x += static_cast<float>(p.logit_offset(r, j));
          if (std::isnan(x)) row.nan_logit = true;
          tile_max = std::max(tile_max, x);
        }
        if (!tile_visible) continue;
        const float new_max = std::max(row.max, tile_max);
        const float rescale = row.any_visible ? std::exp(row.max - new_max) : 0.0f;
        row.any_visible = true;
        // The tile's own sums first (FlashAttention's per-tile P V product),
        // then folded into the rescaled running state: blocked summation.
        float tile_sum = 0;
        std::fill(tile_acc.begin(), tile_acc.end(), 0.0f);
        for (int j = key_begin; j < key1; ++j) {
          if (!visible[static_cast<std::size_t>(j - key0)]) continue;
          const float weight = std::exp(logits[static_cast<std::size_t>(j - key0)] - new_max);
          tile_sum += weight;  // the denominator from P before any rounding (FlashAttention 3)
          const float factor = formats_.weights ? stored_weight(weight) : weight;
          const auto v = source.value(g, j);
          for (int t = 0; t < d.d_v; ++t) tile_acc[static_cast<std::size_t>(t)] += factor * static_cast<float>(v[t]);
        }
        row.sum = row.sum * rescale + tile_sum;
        for (int t = 0; t < d.d_v; ++t)
          row.acc[static_cast<std::size_t>(t)] = row.acc[static_cast<std::size_t>(t)] * rescale + tile_acc[static_cast<std::size_t>(t)];
        row.max = new_max;
      }
    }
    };
    const auto [low, high] = key_range(p, first, last);
    if (tiles_.split_keys > 0) {
      finish_splits(p, b, h, first, last, low, high, v_descale, accumulate, source, result);
      return;
    }
    accumulate(rows, low, high);
    for (int i = first; i < last; ++i) {
      RowState& row = rows[static_cast<std::size_t>(i - first)];
      const std::size_t flat = source.out_row(h, i), lse_at = source.lse_index(h, i);
      if (row.nan_logit) {
        for (int t = 0; t < d.d_v; ++t) result.out[flat * d.d_v + t] = std::numeric_limits<double>::quiet_NaN();
        result.lse[lse_at] = std::numeric_limits<double>::quiet_NaN();
        continue;
      }
      const std::optional<double> sink = p.sink({b, h, i});
      if (!row.any_visible) {
        for (int t = 0; t < d.d_v; ++t) result.out[flat * d.d_v + t] = 0.0;
        result.lse[lse_at] = sink ? *sink : -std::numeric_limits<double>::infinity();
        continue;
      }
      if (sink) {
        // The sink joins the finished row as one more term with no value,
        // inside the running maximum (FlashAttention 4's learnable sink).
        const float sigma = static_cast<float>(*sink), new_max = std::max(row.max, sigma);
        const float rescale = std::exp(row.max - new_max);
        row.sum = row.sum * rescale + std::exp(sigma - new_max);
        for (float& a : row.acc) a *= rescale;
        row.max = new_max;
      }
      for (int t = 0; t < d.d_v; ++t)
        result.out[flat * d.d_v + t] = round_to_format(
            static_cast<double>(row.acc[static_cast<std::size_t>(t)] / (row.sum * weights_scale_) * v_descale),
            formats_.output);
      result.lse[lse_at] = static_cast<double>(row.max + std::log(row.sum));
    }
  }

  // Split-KV (FlashAttention's num_splits, FlashInfer's and vLLM's split
  // kernels): the keys in splits of tiles_.split_keys from key 0, each an
  // online softmax of its own that yields a float32 partial output, its
  // running maximum and its sum per row, reduced as vLLM's paged attention
  // v2 does (max_logits, exp_sums): weights exp(m_i - m) l_i over the
  // largest maximum m. Merging through float32 lse instead (FlashAttention's
  // combine, the kernel's own merge operator) rounds lse_i = m_i + log l_i
  // to float32, an absolute error of u |lse_i| that becomes a relative
  // error of each part's weight: with logits near 6000 (quick profile,
  // seed 16) that kernel's error was 2.7 times the naive kernel's, and
  // PRECREL failed it. A sink is one more part (maximum sigma, sum 1, no
  // value, SPEC 2.3), so it is in exactly one part.
  template <class Rows, class Accumulate>
  void finish_splits(const Problem& p, int b, int h, int first, int last, int low, int high, float v_descale,
                     const Accumulate& accumulate, const Rows& source, KernelResult& result) const {
    const Dims& d = p.dims;
    const int split = tiles_.split_keys, rows = last - first;
    const auto dv = static_cast<std::size_t>(d.d_v);
    // Per row: each part's maximum, sum and normalised float32 output.
    struct Part {
      float max, sum;
      std::vector<float> out;
    };
    std::vector<std::vector<Part>> parts(static_cast<std::size_t>(rows));
    std::vector<char> nan_row(static_cast<std::size_t>(rows), 0);
    for (int split0 = low / split * split; split0 <= high; split0 += split) {
      std::vector<RowState> states(static_cast<std::size_t>(rows));
      for (RowState& state : states) state.acc.assign(dv, 0.0f);
      accumulate(states, std::max(split0, low), std::min(split0 + split - 1, high));
      for (std::size_t r = 0; r < states.size(); ++r) {
        const RowState& state = states[r];
        // A NaN logit, or an infinite one (exp(inf - inf) is NaN), makes
        // the row NaN, as in one pass.
        if (state.nan_logit || (state.any_visible && (std::isnan(state.sum) || std::isinf(state.max)))) nan_row[r] = 1;
        if (!state.any_visible || nan_row[r]) continue;  // a part the row sees no key of adds nothing
        Part part{state.max, state.sum, std::vector<float>(dv)};
        for (std::size_t t = 0; t < dv; ++t) part.out[t] = state.acc[t] / (state.sum * weights_scale_);
        parts[r].push_back(std::move(part));
      }
    }
    const std::optional<double> sink = p.sink({b, h, first});
    for (int i = first; i < last; ++i) {
      const auto row = static_cast<std::size_t>(i - first);
      const std::size_t flat = source.out_row(h, i), lse_at = source.lse_index(h, i);
      if (nan_row[row]) {
        for (std::size_t t = 0; t < dv; ++t) result.out[flat * dv + t] = std::numeric_limits<double>::quiet_NaN();
        result.lse[lse_at] = std::numeric_limits<double>::quiet_NaN();
        continue;
      }
      std::vector<Part>& row_parts = parts[row];
      if (sink) row_parts.push_back({static_cast<float>(*sink), 1.0f, std::vector<float>(dv, 0.0f)});
      if (row_parts.empty()) {  // no visible key, no sink
        for (std::size_t t = 0; t < dv; ++t) result.out[flat * dv + t] = 0.0;
        result.lse[lse_at] = -std::numeric_limits<double>::infinity();
        continue;
      }
      float largest = kMinusInfinity;
      for (const Part& part : row_parts) largest = std::max(largest, part.max);
      float total = 0;
      std::vector<float> out(dv, 0.0f);
      for (const Part& part : row_parts) {
        const float weight = std::exp(part.max - largest) * part.sum;
        total += weight;
        for (std::size_t t = 0; t < dv; ++t) out[t] += weight * part.out[t];
      }
      for (std::size_t t = 0; t < dv; ++t)
        result.out[flat * dv + t] = round_to_format(static_cast<double>(out[t] / total * v_descale), formats_.output);
      result.lse[lse_at] = static_cast<double>(largest + std::log(total));
    }
  }

  // The keys [low, high] any row of query tile [first, last) can see under
  // causal masking and the window: the key tiles outside it are skipped,
  // as FlashAttention bounds its key loop (n_block_min, n_block_max); the
  // per-key test does the rest. Empty when low > high.
  static std::pair<int, int> key_range(const Problem& p, int first, int last) {
    const Dims& d = p.dims;
    std::int64_t low = 0, high = d.kv_len - 1;
    if (p.causal != Causal::none)
      high = std::min<std::int64_t>(high, last - 1 + (p.causal == Causal::bottom_right ? diagonal_offset(Alignment::bottom_right, d) : 0));
    if (p.window) {
      const int offset = diagonal_offset(p.window->alignment, d);
      if (p.window->left) low = std::max<std::int64_t>(low, std::int64_t{first} + offset - *p.window->left);
      if (p.window->right) high = std::min<std::int64_t>(high, std::int64_t{last} - 1 + offset + *p.window->right);
    }
    if (low > high) return {0, -1};
    return {static_cast<int>(low), static_cast<int>(high)};
  }

  // In 8 independent float32 lanes, then pairwise, as a SIMD or tensor-core
  // kernel accumulates q.k: a single running sum loses about sqrt(d_k / 8)
  // times more on wide heads, enough to fail PRECREL against the naive
  // composition's blocked GEMM on long rows of large logits (seed 24 of
  // the ci profile: 28 times its error at d_k = 160, S = 4178).
  static float dot(std::span<const double> a, std::span<const double> b) {
    float lanes[8] = {};
    std::size_t t = 0;
    for (; t + 8 <= a.size(); t += 8)  // component t in lane t % 8
      for (std::size_t l = 0; l < 8; ++l) lanes[l] += static_cast<float>(a[t + l]) * static_cast<float>(b[t + l]);
    for (std::size_t l = 0; t < a.size(); ++t, ++l) lanes[l] += static_cast<float>(a[t]) * static_cast<float>(b[t]);
    for (std::size_t width = 4; width >= 1; width /= 2)
      for (std::size_t l = 0; l < width; ++l) lanes[l] += lanes[l + width];
    return lanes[0];
  }

  // P times the scale, rounded to the weights format for P V, as
  // FlashAttention 3 converts its P tile to e4m3 (the 1/scale goes into the
  // final division).
  float stored_weight(float weight) const {
    return static_cast<float>(round_to_format(static_cast<double>(weight * weights_scale_), *formats_.weights));
  }

  std::string name_;
  KernelFormats formats_;
  TileSizes tiles_;
  float weights_scale_;  // 1 without a weights format
  LayoutBug bug_;
  MergeBug merge_bug_;
  bool backward_ = false;
  BackwardBug backward_bug_ = BackwardBug::none;
};

}  // namespace

std::unique_ptr<Kernel> make_online_kernel(FormatId io_format, TileSizes tiles) {
  const std::string name = io_format == FormatId::float32    ? "online-f32"
                           : io_format == FormatId::bfloat16 ? "online-bf16"
                           : io_format == FormatId::float16  ? "online-f16"
                                                             : "online-" + std::string(format_info(io_format).name);
  return std::make_unique<OnlineKernel>(name, KernelFormats{io_format, FormatId::float32, io_format}, tiles, 1.0);
}
std::unique_ptr<Kernel> make_online_f32_splitkv() {
  return std::make_unique<OnlineKernel>("online-f32-splitkv", KernelFormats{FormatId::float32, FormatId::float32, FormatId::float32},
                                        TileSizes{16, 32, 64}, 1.0);
}

std::unique_ptr<Kernel> make_online_f32_with_merge_bug(std::string name, MergeBug bug) {
  return std::make_unique<OnlineKernel>(std::move(name), KernelFormats{FormatId::float32, FormatId::float32, FormatId::float32},
                                        TileSizes{}, 1.0, LayoutBug::none, bug);
}

std::unique_ptr<Kernel> make_online_f32_with_layout_bug(std::string name, LayoutBug bug) {
  return std::make_unique<OnlineKernel>(std::move(name), KernelFormats{FormatId::float32, FormatId::float32, FormatId::float32},
                                        TileSizes{}, 1.0, bug);
}
namespace {
std::unique_ptr<Kernel> with_backward(std::string name, FormatId io_format, BackwardBug bug) {
  auto kernel = std::make_unique<OnlineKernel>(std::move(name), KernelFormats{io_format, FormatId::float32, io_format},
                                               TileSizes{}, 1.0);
  kernel->enable_backward(bug);
  return kernel;
}
}  // namespace

std::unique_ptr<Kernel> make_online_f32() { return with_backward("online-f32", FormatId::float32, BackwardBug::none); }
std::unique_ptr<Kernel> make_online_bf16() { return with_backward("online-bf16", FormatId::bfloat16, BackwardBug::none); }
std::unique_ptr<Kernel> make_online_f16() { return with_backward("online-f16", FormatId::float16, BackwardBug::none); }
std::unique_ptr<Kernel> make_online_f32_with_backward_bug(std::string name, BackwardBug bug) {
  return with_backward(std::move(name), FormatId::float32, bug);
}

KernelFormats fp8_formats() {
  KernelFormats f{FormatId::float8_e4m3fn, FormatId::float32, FormatId::bfloat16};
  f.weights = FormatId::float8_e4m3fn;
  f.weights_scale = 256;
  return f;
}

std::unique_ptr<Kernel> make_online_fp8() {
  return std::make_unique<OnlineKernel>("online-fp8", fp8_formats(), kFlash3Fp8Tiles, 256.0);
}

std::unique_ptr<Kernel> make_online_fp8_with_weights_scale(std::string name, double applied_scale) {
  return std::make_unique<OnlineKernel>(std::move(name), fp8_formats(), kFlash3Fp8Tiles, applied_scale);
}

}  // namespace attnspec
