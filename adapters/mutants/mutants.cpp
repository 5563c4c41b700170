// The mutant kernels. Two float32 implementations, a row-at-a-time
// composition and a tiled online-softmax one, each written with the bug's
// line in place of the correct one; the bug is named where it happens.
// Sources of the bug classes: shared/ANCHORS.md sections 2 and 3 and the
// seeds (scale by the head width).
#include "adapters/mutants/mutants.hpp"

#include "adapters/online/online_kernel.hpp"

#include <array>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <numbers>
#include <optional>
#include <vector>

namespace attnspec {
namespace {

constexpr float kMinusInfinity = -std::numeric_limits<float>::infinity();

enum class Bug {
  scale_dmodel,         // 1/sqrt(Hq * d_k): the model width instead of the head width (seed 000)
  scale_ignored,        // an explicit scale argument is dropped
  scale_inverted,       // multiplies by sqrt(d_k)
  softmax_query_axis,   // softmax over the queries instead of the keys (seed 004)
  no_max_shift,         // exp of unshifted logits overflows
  fp16_denominator,     // the row sum accumulated in float16 (sonos/tract#2586)
  mask_after_softmax,   // masked weights zeroed after the softmax, no renormalisation
  nan_leak,             // P V over every key: 0 * NaN at blocked values (pytorch#101967)
  fullmask_nan,         // a row with no visible key becomes NaN (pytorch#103963)
  causal_swapped,       // bottom_right computed for top_left and the reverse
  window_left_exclusive,  // a window's left edge exclusive: cuDNN's left bound read as FlashAttention's
  window_top_left,      // every window aligned top-left: wrong in decode (ROCm flash-attention#158)
  alibi_before_scale,   // the ALiBi bias scaled with the logits (slopes not divided by the softmax scale)
  alibi_signed,         // -slope (i + off - j) for keys right of the diagonal too: right under causal only
  alibi_top_left,       // every ALiBi bias aligned top-left, also when declared bottom_right
  alibi_kv_head,        // the slope of the kv head (h / group), not of the query head
  sink_scaled,          // the sink multiplied by the softmax scale, as if it were q.k
  sink_kv_head,         // the sink of the kv head (h / group), not of the query head
  sink_lse_missing,     // lse of the keys alone, the sink left out (flash-attention #1973 class)
  sink_empty_row,       // a row with no visible key returns lse -inf, not its sink (flash-attention #2752 class)
  lse_base_2,           // the lse returned in base 2, as FlashAttention keeps it (exp2 of log2(e)-scaled logits)
  sink_outside_max,     // the sink left out of the running maximum: exp(sigma - m) overflows past 88
  sink_every_tile,      // split-KV: every 32-key split adds the sink, not just one (FlashInfer adds it to the first)
  gqa_modulo,           // kv head h % Hkv (ONNX before v1.20)
  softcap_after_mask,   // the cap applied to masked logits (onnx#7865)
  weights_bf16,         // weights rounded to bfloat16 before P V in an fp32 kernel
  layout_mixup,         // output written head-major, [Hq, B, L, d_v]
  drop_last_tile,       // tiled loop stops before a partial last tile
  no_rescale,           // online softmax forgets to rescale the output when the max grows
  descale_v_dropped,    // v's descale never applied (flashinfer#1023: fp8 scales ignored by one backend)
  descale_query_head,   // descales read as if [B, Hq]: entry b Hq + h, not (b, h / group)
  none,                 // no bug: the held-out kernel of make_weights_rounded_kernel
};

// Visibility with a bug's causal alignment and window (the mask as in the
// problem).
bool visible_under(const Problem& p, RowIndex r, int key, Bug bug) {
  Causal causal = p.causal;
  if (bug == Bug::causal_swapped && causal != Causal::none)
    causal = causal == Causal::top_left ? Causal::bottom_right : Causal::top_left;
  const bool causal_ok = causal == Causal::none        ? true
                         : causal == Causal::top_left ? key <= r.query
                                                       : key <= r.query + diagonal_offset(Alignment::bottom_right, p.dims);
  std::optional<Window> window = p.window;
  if (window && bug == Bug::window_left_exclusive && window->left) window->left = *window->left - 1;
  if (window && bug == Bug::window_top_left) window->alignment = Alignment::top_left;
  // A left of -1 (0 made exclusive) leaves keys right of the diagonal only.
  const bool window_ok = !window || window_contains(*window, p.dims, r.query, key);
  return p.mask_allows(r, key) && window_ok && causal_ok;
}

// The mask value plus the ALiBi bias as the bug computes it.
double offset_under(const Problem& p, RowIndex r, int key, Bug bug, float scale) {
  if (!p.alibi) return p.mask_value(r, key);
  const Alibi& alibi = *p.alibi;
  const Dims& d = p.dims;
  const int head = bug == Bug::alibi_kv_head ? p.kv_head_of(r.head) : r.head;
  const double slope = alibi.slopes[static_cast<std::size_t>(alibi.per_batch ? r.batch * d.q_heads + head : head)];
  const bool top_left = alibi.alignment == Alignment::top_left || bug == Bug::alibi_top_left;
  const long signed_distance =
      static_cast<long>(r.query) + diagonal_offset(top_left ? Alignment::top_left : Alignment::bottom_right, d) - key;
  const double bias = -slope * static_cast<double>(bug == Bug::alibi_signed ? signed_distance : std::labs(signed_distance));
  return p.mask_value(r, key) + (bug == Bug::alibi_before_scale ? bias * scale : bias);
}

bool is_sink_bug(Bug bug) {
  return bug == Bug::sink_scaled || bug == Bug::sink_kv_head || bug == Bug::sink_lse_missing ||
         bug == Bug::sink_empty_row || bug == Bug::sink_outside_max || bug == Bug::sink_every_tile;
}

bool is_descale_bug(Bug bug) { return bug == Bug::descale_v_dropped || bug == Bug::descale_query_head; }

// Query head h's descale factors (q, k, v) as the bug reads them; 1 without
// descales. The [B, Hq] reading wraps round the [B, Hkv] array, as a
// kernel reading past it would read something.
std::array<float, 3> descales_under(const Problem& p, int batch, int head, Bug bug) {
  if (!p.descales) return {1, 1, 1};
  const Dims& d = p.dims;
  const Descales& f = *p.descales;
  std::size_t index = static_cast<std::size_t>(batch) * d.kv_heads + p.kv_head_of(head);
  if (bug == Bug::descale_query_head)
    index = (static_cast<std::size_t>(batch) * d.q_heads + head) % (static_cast<std::size_t>(d.batch) * d.kv_heads);
  return {static_cast<float>(f.q[index]), static_cast<float>(f.k[index]),
          bug == Bug::descale_v_dropped ? 1.0f : static_cast<float>(f.v[index])};
}

// The row's sink as the bug reads it (nullopt: none).
std::optional<float> sink_under(const Problem& p, RowIndex r, Bug bug, float scale) {
  if (p.sinks.empty()) return std::nullopt;
  const int head = bug == Bug::sink_kv_head ? p.kv_head_of(r.head) : r.head;
  const double sigma = p.sinks[static_cast<std::size_t>(head)];
  if (sigma == -INFINITY) return std::nullopt;
  return static_cast<float>(bug == Bug::sink_scaled ? sigma * scale : sigma);
}

float dot(std::span<const double> a, std::span<const double> b) {
  float sum = 0;
  for (std::size_t t = 0; t < a.size(); ++t) sum += static_cast<float>(a[t]) * static_cast<float>(b[t]);
  return sum;
}

float scale_of(const Problem& p, Bug bug) {
  const float dk = static_cast<float>(p.dims.d_k);
  if (p.scale && bug != Bug::scale_ignored) return static_cast<float>(*p.scale);
  if (bug == Bug::scale_dmodel) return 1.0f / std::sqrt(dk * static_cast<float>(p.dims.q_heads));
  if (bug == Bug::scale_inverted) return std::sqrt(dk);
  return 1.0f / std::sqrt(dk);
}

class MutantBase : public Kernel {
 public:
  MutantBase(std::string name, Bug bug) : name_(std::move(name)), bug_(bug) {}
  std::string name() const override { return name_; }
  KernelFormats formats() const override { return {FormatId::float32, FormatId::float32, FormatId::float32}; }
  // Sinks only where the bug is one: the other mutants' draws stay those
  // of a kernel without them.
  Capabilities capabilities() const override {
    Capabilities c = full_capabilities();
    c.sinks = is_sink_bug(bug_);
    c.descales = is_descale_bug(bug_);
    return c;
  }

 protected:
  std::string name_;
  Bug bug_;
};

// w rounded to `bits` significant bits, to nearest, ties to even (24 or
// more: w itself).
float round_to_bits(float w, int bits) {
  if (bits >= 24 || w == 0 || !std::isfinite(w)) return w;
  int exponent = 0;
  const double fraction = std::frexp(static_cast<double>(w), &exponent);  // in [0.5, 1)
  return static_cast<float>(std::ldexp(std::nearbyint(std::ldexp(fraction, bits)), exponent - bits));
}

// One head at a time: the logit matrix, a softmax per row, then P V.
class RowKernel final : public MutantBase {
 public:
  using MutantBase::MutantBase;
  // The held-out kernel of the tight tier's sensitivity: weights rounded
  // to `bits` significant bits before P V, no bug otherwise.
  RowKernel(std::string name, int weight_bits) : MutantBase(std::move(name), Bug::none), weight_bits_(weight_bits) {}

  KernelResult run(const Problem& p) override {
    const Dims& d = p.dims;
    KernelResult result;
    result.out.assign(p.out_size(), 0.0);
    result.lse.assign(p.rows(), -INFINITY);
    const float scale = scale_of(p, bug_);
    const auto L = static_cast<std::size_t>(d.q_len), S = static_cast<std::size_t>(d.kv_len);
    for (int b = 0; b < d.batch; ++b) {
      for (int h = 0; h < d.q_heads; ++h) {
        const int g = bug_ == Bug::gqa_modulo ? h % d.kv_heads : p.kv_head_of(h);
        // Descales as FlashAttention 3 applies them: q's and k's in the
        // scale, v's on the output.
        const auto [q_descale, k_descale, v_descale] = descales_under(p, b, h, bug_);
        const float logit_scale = scale * q_descale * k_descale;
        std::vector<float> x(L * S);
        std::vector<char> seen(L * S);
        for (int i = 0; i < d.q_len; ++i) {
          const RowIndex r{b, h, i};
          for (int j = 0; j < d.kv_len; ++j) {
            const bool visible = visible_under(p, r, j, bug_);
            float logit = dot(p.query_row(r), p.key_row(b, g, j)) * logit_scale;
            const float cap = p.softcap ? static_cast<float>(*p.softcap) : 0.0f;
            if (p.softcap && bug_ != Bug::softcap_after_mask) logit = cap * std::tanh(logit / cap);
            const auto offset = static_cast<float>(offset_under(p, r, j, bug_, scale));
            if (bug_ == Bug::mask_after_softmax) logit += visible ? offset : 0.0f;
            else logit = visible ? logit + offset : kMinusInfinity;
            if (p.softcap && bug_ == Bug::softcap_after_mask) logit = cap * std::tanh(logit / cap);
            x[i * S + j] = logit;
            seen[i * S + j] = visible;
          }
        }
        if (bug_ == Bug::softmax_query_axis) normalise_columns(x, L, S);
        for (int i = 0; i < d.q_len; ++i) {
          const std::size_t row = bug_ == Bug::layout_mixup
                                      ? (static_cast<std::size_t>(h) * d.batch + b) * L + i
                                      : p.row_flat({b, h, i});
          float* w = &x[i * S];
          bool any = false;
          for (std::size_t j = 0; j < S; ++j) any = any || seen[i * S + j];
          const std::optional<float> sink = sink_under(p, {b, h, i}, bug_, scale);
          if (!any && bug_ != Bug::fullmask_nan) {  // exactly 0, lse -inf or the sink's
            if (sink && bug_ != Bug::sink_empty_row) result.lse[row] = *sink;
            continue;
          }
          if (bug_ != Bug::softmax_query_axis) normalise_row(w, S, seen.data() + i * S, sink, result.lse[row]);
          for (std::size_t j = 0; j < S; ++j) {
            if (!seen[i * S + j] && bug_ != Bug::nan_leak) continue;
            const float weight = weight_bits_ ? round_to_bits(w[j], weight_bits_)
                                 : bug_ == Bug::weights_bf16 ? static_cast<float>(round_to_format(w[j], FormatId::bfloat16))
                                                             : w[j];
            const auto v = p.value_row(b, g, static_cast<int>(j));
            for (int t = 0; t < d.d_v; ++t) result.out[row * d.d_v + t] += weight * static_cast<float>(v[t]);
          }
          for (int t = 0; t < d.d_v; ++t)
            result.out[row * d.d_v + t] = static_cast<float>(result.out[row * d.d_v + t]) * v_descale;
        }
      }
    }
    return result;
  }

 private:
  int weight_bits_ = 0;  // 0: as the bug says

  // Softmax in place over one row's keys, with the sink (if any) one more
  // term of the denominator; sets lse.
  void normalise_row(float* x, std::size_t S, const char* seen, std::optional<float> sink, double& lse) const {
    float max = kMinusInfinity;
    for (std::size_t j = 0; j < S; ++j) max = std::max(max, x[j]);
    if (sink && bug_ != Bug::sink_outside_max) max = std::max(max, *sink);
    if (bug_ == Bug::no_max_shift) max = 0;
    float sum = 0;
    for (std::size_t j = 0; j < S; ++j) {
      x[j] = std::exp(x[j] - max);
      if (bug_ == Bug::fp16_denominator) sum = static_cast<float>(round_to_format(sum + x[j], FormatId::float16));
      else sum += x[j];
    }
    const float keys_sum = sum;
    if (sink) sum += std::exp(*sink - max);
    for (std::size_t j = 0; j < S; ++j) {
      x[j] /= sum;
      if (bug_ == Bug::mask_after_softmax && !seen[j]) x[j] = 0;
    }
    lse = static_cast<double>(max + std::log(bug_ == Bug::sink_lse_missing ? keys_sum : sum));
    if (bug_ == Bug::lse_base_2) lse *= std::numbers::log2e;
  }

  // The softmax_query_axis bug: each key's column normalised over queries.
  static void normalise_columns(std::vector<float>& x, std::size_t L, std::size_t S) {
    for (std::size_t j = 0; j < S; ++j) {
      float max = kMinusInfinity, sum = 0;
      for (std::size_t i = 0; i < L; ++i) max = std::max(max, x[i * S + j]);
      for (std::size_t i = 0; i < L; ++i) sum += (x[i * S + j] = std::exp(x[i * S + j] - max));
      for (std::size_t i = 0; i < L; ++i) x[i * S + j] /= sum;
    }
  }
};

// Online softmax over tiles of 32 keys, one row at a time.
class TiledKernel final : public MutantBase {
 public:
  using MutantBase::MutantBase;
  static constexpr int kTile = 32;

  KernelResult run(const Problem& p) override {
    const Dims& d = p.dims;
    KernelResult result;
    result.out.assign(p.out_size(), 0.0);
    result.lse.assign(p.rows(), -INFINITY);
    const float scale = scale_of(p, bug_);
    for (std::size_t row = 0; row < p.rows(); ++row) {
      const RowIndex r = p.row_index(row);
      const int g = p.kv_head_of(r.head);
      float max = kMinusInfinity, sum = 0;
      bool any = false;
      std::vector<float> acc(static_cast<std::size_t>(d.d_v), 0.0f);
      const std::optional<float> sink = sink_under(p, r, bug_, scale);
      // drop_last_tile: the loop condition only admits whole tiles.
      for (int key0 = 0; bug_ == Bug::drop_last_tile ? key0 + kTile <= d.kv_len : key0 < d.kv_len; key0 += kTile) {
        const int key1 = std::min(key0 + kTile, d.kv_len);
        float tile_max = kMinusInfinity;
        std::vector<float> x(static_cast<std::size_t>(key1 - key0), kMinusInfinity);
        for (int j = key0; j < key1; ++j) {
          if (!p.visible(r, j)) continue;
          any = true;
          float logit = dot(p.query_row(r), p.key_row(r.batch, g, j)) * scale;
          if (p.softcap) logit = static_cast<float>(*p.softcap) * std::tanh(logit / static_cast<float>(*p.softcap));
          x[static_cast<std::size_t>(j - key0)] = logit + static_cast<float>(p.logit_offset(r, j));
          tile_max = std::max(tile_max, x[static_cast<std::size_t>(j - key0)]);
        }
        if (tile_max == kMinusInfinity) continue;
        float new_max = std::max(max, tile_max);
        if (sink && bug_ == Bug::sink_every_tile) new_max = std::max(new_max, *sink);
        const float rescale = max == kMinusInfinity ? 0.0f : std::exp(max - new_max);
        sum *= rescale;
        if (bug_ != Bug::no_rescale)
          for (float& a : acc) a *= rescale;
        for (int j = key0; j < key1; ++j) {
          if (!p.visible(r, j)) continue;
          const float weight = std::exp(x[static_cast<std::size_t>(j - key0)] - new_max);
          sum += weight;
          const auto v = p.value_row(r.batch, g, j);
          for (int t = 0; t < d.d_v; ++t) acc[static_cast<std::size_t>(t)] += weight * static_cast<float>(v[t]);
        }
        if (sink && bug_ == Bug::sink_every_tile) sum += std::exp(*sink - new_max);  // each split its own sink
        max = new_max;
      }
      if (!any && sink) result.lse[row] = *sink;
      if (!any || sum == 0) continue;
      if (sink && bug_ != Bug::sink_every_tile) {  // the sink once, folded in at the end
        const float new_max = std::max(max, *sink), rescale = std::exp(max - new_max);
        sum = sum * rescale + std::exp(*sink - new_max);
        for (float& a : acc) a *= rescale;
        max = new_max;
      }
      for (int t = 0; t < d.d_v; ++t) result.out[row * d.d_v + t] = acc[static_cast<std::size_t>(t)] / sum;
      result.lse[row] = static_cast<double>(max + std::log(sum));
    }
    return result;
  }
};

template <typename K, Bug B>
std::unique_ptr<Kernel> make(const char* name) {
  return std::make_unique<K>(name, B);
}

#define ATTNSPEC_MUTANT(K, BUG, NAME, TEXT, CLAUSE) \
  MutantEntry { NAME, TEXT, CLAUSE, [] { return make<K, Bug::BUG>(NAME); } }

}  // namespace

std::unique_ptr<Kernel> make_weights_rounded_kernel(int bits) {
  return std::make_unique<RowKernel>("weights-rounded-to-" + std::to_string(bits) + "-bits", bits);
}

// A function-local table: the tests take it during static initialisation,
// possibly before this file's namespace-scope objects exist.
std::span<const MutantEntry> mutant_kernels() {
  static const std::array kMutants = {
    ATTNSPEC_MUTANT(RowKernel, scale_dmodel, "mutant-scale-dmodel", "scales by 1/sqrt(Hq d_k), the model width", "SCALE"),
    ATTNSPEC_MUTANT(RowKernel, scale_ignored, "mutant-scale-ignored", "ignores an explicit scale", "SCALE"),
    ATTNSPEC_MUTANT(RowKernel, scale_inverted, "mutant-scale-inverted", "multiplies by sqrt(d_k)", "SCALE"),
    ATTNSPEC_MUTANT(RowKernel, softmax_query_axis, "mutant-softmax-query-axis", "softmax over the query axis", "ROWSUM"),
    ATTNSPEC_MUTANT(RowKernel, no_max_shift, "mutant-no-max-shift", "softmax without subtracting the max", "SHIFT"),
    ATTNSPEC_MUTANT(RowKernel, fp16_denominator, "mutant-fp16-denominator", "softmax denominator summed in float16", "ROWSUM"),
    ATTNSPEC_MUTANT(RowKernel, mask_after_softmax, "mutant-mask-after-softmax", "mask applied after the softmax, no renormalisation", "MASKBOOL"),
    ATTNSPEC_MUTANT(RowKernel, nan_leak, "mutant-nan-leak", "P V over blocked keys too: 0 * NaN", "MASKNAN"),
    ATTNSPEC_MUTANT(RowKernel, fullmask_nan, "mutant-fullmask-nan", "a fully masked row gives NaN", "FULLMASK"),
    ATTNSPEC_MUTANT(RowKernel, causal_swapped, "mutant-causal-swapped", "bottom_right for top_left and the reverse", "CAUSAL"),
    ATTNSPEC_MUTANT(RowKernel, window_left_exclusive, "mutant-window-left-exclusive",
                    "a window's left edge exclusive: one key fewer (cuDNN's bound read as FlashAttention's)", "WINDOW"),
    ATTNSPEC_MUTANT(RowKernel, window_top_left, "mutant-window-top-left", "every window aligned top-left, also when declared bottom_right", "WINDOW"),
    ATTNSPEC_MUTANT(RowKernel, alibi_before_scale, "mutant-alibi-before-scale", "ALiBi bias added before the scale", "ALIBI"),
    ATTNSPEC_MUTANT(RowKernel, alibi_signed, "mutant-alibi-signed",
                    "ALiBi bias -slope (i + off - j), signed: keys right of the diagonal favoured", "ALIBI"),
    ATTNSPEC_MUTANT(RowKernel, alibi_top_left, "mutant-alibi-top-left", "every ALiBi bias aligned top-left", "ALIBI"),
    ATTNSPEC_MUTANT(RowKernel, alibi_kv_head, "mutant-alibi-kv-head", "ALiBi slope of the kv head, not the query head", "ALIBI"),
    ATTNSPEC_MUTANT(RowKernel, sink_scaled, "mutant-sink-scaled", "the sink multiplied by the softmax scale", "SINK"),
    ATTNSPEC_MUTANT(RowKernel, sink_kv_head, "mutant-sink-kv-head", "the sink of the kv head, not the query head", "SINK"),
    ATTNSPEC_MUTANT(RowKernel, sink_lse_missing, "mutant-sink-lse-missing", "lse without the sink's term", "LSE"),
    ATTNSPEC_MUTANT(RowKernel, lse_base_2, "mutant-lse-base-2",
                    "lse returned in base 2, as FlashAttention keeps it internally: a split-KV merge of it is wrong",
                    "SPLITKV"),
    ATTNSPEC_MUTANT(RowKernel, sink_empty_row, "mutant-sink-empty-row",
                    "a row with no visible key returns lse -inf, not its sink", "FULLMASK"),
    ATTNSPEC_MUTANT(RowKernel, sink_outside_max, "mutant-sink-outside-max",
                    "the sink left out of the maximum: exp(sigma - m) overflows", "SINK"),
    ATTNSPEC_MUTANT(TiledKernel, sink_every_tile, "mutant-sink-every-tile", "every 32-key split adds the sink", "SINK"),
    ATTNSPEC_MUTANT(RowKernel, gqa_modulo, "mutant-gqa-modulo", "kv head h % Hkv instead of h / (Hq/Hkv)", "GQA"),
    ATTNSPEC_MUTANT(RowKernel, softcap_after_mask, "mutant-softcap-after-mask", "softcap applied after the mask", "SOFTCAP"),
    ATTNSPEC_MUTANT(RowKernel, weights_bf16, "mutant-weights-bf16", "weights rounded to bfloat16 before P V, fp32 claimed", "PREC"),
    ATTNSPEC_MUTANT(RowKernel, descale_v_dropped, "mutant-descale-v-dropped", "v's descale never applied", "DESCALE"),
    ATTNSPEC_MUTANT(RowKernel, descale_query_head, "mutant-descale-query-head",
                    "descales read as [B, Hq] (entry b Hq + h), not per kv head", "DESCALE"),
    ATTNSPEC_MUTANT(RowKernel, layout_mixup, "mutant-layout-mixup", "output written head-major [Hq, B, L, d_v]", "BATCH"),
    ATTNSPEC_MUTANT(TiledKernel, drop_last_tile, "mutant-drop-last-tile", "tiled loop drops a partial last tile", "PREC"),
    ATTNSPEC_MUTANT(TiledKernel, no_rescale, "mutant-no-rescale", "online softmax does not rescale the output", "PREC"),
    // online-fp8 with P scaled wrongly before its e4m3 rounding.
    // Its bug needs a weight of about e^-7 to e^-11 (e4m3's subnormals
    // without the scale): a logit gap that the drawn small e4m3 values reach
    // only with a few tens of components, which cutting d_k loses.
    MutantEntry{"mutant-fp8-weights-unscaled", "fp8: P rounded to e4m3 without the declared scale 256: small weights underflow",
                "PREC", [] { return make_online_fp8_with_weights_scale("mutant-fp8-weights-unscaled", 1); },
                Dims{2, 4, 2, 4, 40, 32, 4}},
    MutantEntry{"mutant-fp8-weights-overflow",
                "fp8: P times 4096 before e4m3 (flash-attention #2577): weights above 448/4096 become NaN", "PREC",
                [] { return make_online_fp8_with_weights_scale("mutant-fp8-weights-overflow", 4096); }},
  };
  static const std::vector<MutantEntry> all = [] {
    std::vector<MutantEntry> entries(kMutants.begin(), kMutants.end());
    const std::span<const MutantEntry> tiles = tile_mutant_kernels();
    entries.insert(entries.end(), tiles.begin(), tiles.end());
    const std::span<const MutantEntry> layouts = layout_mutant_kernels();
    entries.insert(entries.end(), layouts.begin(), layouts.end());
    const std::span<const MutantEntry> backward = backward_mutant_kernels();
    entries.insert(entries.end(), backward.begin(), backward.end());
    const std::span<const MutantEntry> laws = law_mutant_kernels();
    entries.insert(entries.end(), laws.begin(), laws.end());
    return entries;
  }();
  return all;
}

#undef ATTNSPEC_MUTANT

}  // namespace attnspec
