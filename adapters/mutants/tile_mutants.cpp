// Mutants whose bug lives where real kernels are tiled: a FlashAttention-
// style float32 kernel with 64-row query tiles, 128-key key tiles and a
// 64-wide head-dimension code path, each with one bug that only shapes
// past a tile boundary or a real head dimension can show. They exist so
// that the generators' tile shape class (spec/SPEC.md section 7.1) is
// proven to reach what it is for: tests/mutants_test.cpp asserts each is
// caught by its clause in the quick profile.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "adapters/mutants/mutants.hpp"

namespace attnspec {
namespace {

constexpr int kQueryTile = 64;
constexpr int kKeyTile = 128;
constexpr int kHeadChunk = 64;
constexpr float kMinusInfinity = -std::numeric_limits<float>::infinity();

enum class TileBug {
  second_query_tile,   // the second query tile reads the first tile's queries (a wrong tile offset)
  value_columns_past_64,  // output columns past 64 never written (one 64-wide chunk of d_v)
  partial_key_tile,    // a partial last key tile is dropped when S > 128
  qk_past_64,          // q.k sums only the first 64 components
  causal_tile_count,   // causal: key tiles to visit counted from the query tile's first row, not its last
  window_tile_start,   // window: the first key tile taken from the query tile's last row, not its first
  head_dim_overread,   // d_k > 32 padded to a multiple of 64 with whatever follows the row in memory
  values_bf16,         // V rounded to bfloat16 under a float32 claim
  // Precision losses that only a tight tier sees on long rows (spec/SPEC.md
  // 6.8): the worst-case bound there is tens of thousands of u wide.
  split_partials_f16,  // split-KV: each 128-key split's normalised partial output stored in float16
  denominator_f16_long,  // the softmax denominator rounded to float16 on rows of more than 200 keys
  scaled_long_rows_bf16,  // a bfloat16 kernel whose outputs are 1.05x too large on rows of more than 21 keys
};

class BlockedKernel final : public Kernel {
 public:
  BlockedKernel(std::string name, TileBug bug) : name_(std::move(name)), bug_(bug) {}
  std::string name() const override { return name_; }
  KernelFormats formats() const override {
    // bfloat16 logits and weights declared (accumulate bfloat16), as the
    // real 16-bit kernels of the Findings declare them.
    if (bug_ == TileBug::scaled_long_rows_bf16) return {FormatId::bfloat16, FormatId::bfloat16, FormatId::bfloat16};
    return {FormatId::float32, FormatId::float32, FormatId::float32};
  }
  Capabilities capabilities() const override {
    Capabilities c = full_capabilities();
    // None of these bugs is about sinks or descales: their draws stay those
    // of a kernel without them.
    c.sinks = false;
    c.descales = false;
    return c;
  }

  KernelResult run(const Problem& p) override {
    const Dims& d = p.dims;
    KernelResult result;
    result.out.assign(p.out_size(), 0.0);
    result.lse.assign(p.rows(), -INFINITY);
    const float scale = p.scale ? static_cast<float>(*p.scale) : 1.0f / std::sqrt(static_cast<float>(d.d_k));
    const int offset = p.causal == Causal::bottom_right ? diagonal_offset(Alignment::bottom_right, d) : 0;
    const int key_tiles = bug_ == TileBug::partial_key_tile && d.kv_len > kKeyTile ? d.kv_len / kKeyTile
                                                                                    : (d.kv_len + kKeyTile - 1) / kKeyTile;
    for (int b = 0; b < d.batch; ++b)
      for (int h = 0; h < d.q_heads; ++h)
        for (int q0 = 0; q0 < d.q_len; q0 += kQueryTile) {
          const int q1 = std::min(q0 + kQueryTile, d.q_len);
          // Causal: tiles past the last row's diagonal hold no visible key.
          int tiles = key_tiles;
          if (p.causal != Causal::none) {
            const int last_row = bug_ == TileBug::causal_tile_count ? q0 : q1 - 1;
            const int last_key = last_row + offset;
            tiles = last_key < 0 ? 0 : std::min(tiles, last_key / kKeyTile + 1);
          }
          // A window's left edge: tiles before the first row's edge hold no
          // visible key (the first row's edge is the leftmost).
          int first_tile = 0;
          if (p.window && p.window->left) {
            const int window_offset = diagonal_offset(p.window->alignment, d);
            const int first_row = bug_ == TileBug::window_tile_start ? q1 - 1 : q0;
            const long first_key = static_cast<long>(first_row) + window_offset - *p.window->left;
            first_tile = first_key <= 0 ? 0 : static_cast<int>(first_key / kKeyTile);
          }
          for (int i = q0; i < q1; ++i) run_row(p, {b, h, i}, first_tile, tiles, scale, result);
        }
    return result;
  }

 private:
  float logit(const Problem& p, RowIndex r, int key, float scale) const {
    const int d_k = p.dims.d_k, g = p.kv_head_of(r.head);
    RowIndex source = r;
    if (bug_ == TileBug::second_query_tile && r.query >= kQueryTile && r.query < 2 * kQueryTile) source.query -= kQueryTile;
    const std::size_t q_start = p.row_flat(source) * static_cast<std::size_t>(d_k);
    const std::size_t k_start =
        ((static_cast<std::size_t>(r.batch) * p.dims.kv_heads + g) * p.dims.kv_len + key) * static_cast<std::size_t>(d_k);
    int width = d_k;
    if (bug_ == TileBug::qk_past_64) width = std::min(d_k, kHeadChunk);
    if (bug_ == TileBug::head_dim_overread && d_k > 32) width = (d_k + kHeadChunk - 1) / kHeadChunk * kHeadChunk;
    const auto at = [](const std::vector<double>& x, std::size_t i) { return i < x.size() ? static_cast<float>(x[i]) : 0.0f; };
    float sum = 0;
    for (int t = 0; t < width; ++t) sum += at(p.q, q_start + t) * at(p.k, k_start + t);
    float x = sum * scale;
    if (p.softcap) x = static_cast<float>(*p.softcap) * std::tanh(x / static_cast<float>(*p.softcap));
    return x + static_cast<float>(p.logit_offset(r, key));
  }

  void run_row(const Problem& p, RowIndex r, int first_tile, int tiles, float scale, KernelResult& result) const {
    const Dims& d = p.dims;
    const int g = p.kv_head_of(r.head);
    const std::size_t row = p.row_flat(r);
    const int columns = bug_ == TileBug::value_columns_past_64 ? std::min(d.d_v, kHeadChunk) : d.d_v;
    if (bug_ == TileBug::split_partials_f16 && tiles > 1) return run_split_row(p, r, first_tile, tiles, scale, result);
    float max = kMinusInfinity, sum = 0;
    int visible = 0;
    std::vector<float> acc(static_cast<std::size_t>(d.d_v), 0.0f);
    for (int tile = first_tile; tile < tiles; ++tile) {
      const int key0 = tile * kKeyTile, key1 = std::min(key0 + kKeyTile, d.kv_len);
      std::vector<float> x(static_cast<std::size_t>(key1 - key0), kMinusInfinity);
      float tile_max = kMinusInfinity;
      for (int j = key0; j < key1; ++j) {
        if (!p.visible(r, j)) continue;
        x[static_cast<std::size_t>(j - key0)] = logit(p, r, j, scale);
        tile_max = std::max(tile_max, x[static_cast<std::size_t>(j - key0)]);
      }
      if (tile_max == kMinusInfinity) continue;
      const float new_max = std::max(max, tile_max);
      const float rescale = max == kMinusInfinity ? 0.0f : std::exp(max - new_max);
      sum *= rescale;
      for (float& a : acc) a *= rescale;
      for (int j = key0; j < key1; ++j) {
        if (!p.visible(r, j)) continue;
        const float weight = std::exp(x[static_cast<std::size_t>(j - key0)] - new_max);
        sum += weight;
        ++visible;
        const auto v = p.value_row(r.batch, g, j);
        for (int t = 0; t < columns; ++t) {
          const double value = bug_ == TileBug::values_bf16 ? round_to_format(v[t], FormatId::bfloat16) : v[t];
          acc[static_cast<std::size_t>(t)] += weight * static_cast<float>(value);
        }
      }
      max = new_max;
    }
    if (sum == 0) return;
    result.lse[row] = static_cast<double>(max + std::log(sum));
    if (bug_ == TileBug::denominator_f16_long && visible > 200) sum = static_cast<float>(round_to_format(sum, FormatId::float16));
    if (bug_ != TileBug::scaled_long_rows_bf16) {
      for (int t = 0; t < columns; ++t) result.out[row * d.d_v + t] = acc[static_cast<std::size_t>(t)] / sum;
      return;
    }
    const float factor = visible > 21 ? 1.05f : 1.0f;
    for (int t = 0; t < columns; ++t)
      result.out[row * d.d_v + t] = round_to_format(acc[static_cast<std::size_t>(t)] / sum * factor, FormatId::bfloat16);
  }

  // Split-KV (FlashDecoding) on rows of more than one key tile: each tile
  // is a split with its own normalised output and lse, merged with
  // weights exp(lse_s - max lse).
  void run_split_row(const Problem& p, RowIndex r, int first_tile, int tiles, float scale, KernelResult& result) const {
    const Dims& d = p.dims;
    const int g = p.kv_head_of(r.head);
    const std::size_t row = p.row_flat(r);
    std::vector<float> lse_of_split;
    std::vector<std::vector<float>> out_of_split;
    for (int tile = first_tile; tile < tiles; ++tile) {
      const int key0 = tile * kKeyTile, key1 = std::min(key0 + kKeyTile, d.kv_len);
      std::vector<float> x;
      std::vector<int> keys;
      float max = kMinusInfinity;
      for (int j = key0; j < key1; ++j) {
        if (!p.visible(r, j)) continue;
        keys.push_back(j);
        x.push_back(logit(p, r, j, scale));
        max = std::max(max, x.back());
      }
      if (max == kMinusInfinity) continue;
      float sum = 0;
      std::vector<float> acc(static_cast<std::size_t>(d.d_v), 0.0f);
      for (std::size_t i = 0; i < keys.size(); ++i) {
        const float weight = std::exp(x[i] - max);
        sum += weight;
        const auto v = p.value_row(r.batch, g, keys[i]);
        for (int t = 0; t < d.d_v; ++t) acc[static_cast<std::size_t>(t)] += weight * static_cast<float>(v[t]);
      }
      for (float& a : acc) a = static_cast<float>(round_to_format(a / sum, FormatId::float16));
      lse_of_split.push_back(max + std::log(sum));
      out_of_split.push_back(std::move(acc));
    }
    if (lse_of_split.empty()) return;
    const float top = *std::max_element(lse_of_split.begin(), lse_of_split.end());
    float total = 0;
    std::vector<float> merged(static_cast<std::size_t>(d.d_v), 0.0f);
    for (std::size_t s = 0; s < lse_of_split.size(); ++s) {
      const float w = std::exp(lse_of_split[s] - top);
      total += w;
      for (int t = 0; t < d.d_v; ++t) merged[static_cast<std::size_t>(t)] += w * out_of_split[s][static_cast<std::size_t>(t)];
    }
    for (int t = 0; t < d.d_v; ++t) result.out[row * d.d_v + t] = merged[static_cast<std::size_t>(t)] / total;
    result.lse[row] = static_cast<double>(top + std::log(total));
  }

  std::string name_;
  TileBug bug_;
};

template <TileBug B>
std::unique_ptr<Kernel> make(const char* name) {
  return std::make_unique<BlockedKernel>(name, B);
}

#define ATTNSPEC_TILE_MUTANT(BUG, NAME, TEXT, CLAUSE, LARGEST) \
  MutantEntry { NAME, TEXT, CLAUSE, [] { return make<TileBug::BUG>(NAME); }, LARGEST }

// The largest shrunk counterexample each may leave: the bug's threshold
// on the axis it needs (with some room where a cut from the drawn size
// can stop above it), a few elements on every other axis.
constexpr Dims kLongQueries{1, 2, 2, 65, 4, 4, 4};
constexpr Dims kWideValues{1, 2, 2, 4, 4, 4, 80};
constexpr Dims kLongKeys{1, 2, 2, 4, 129, 4, 4};
constexpr Dims kWideKeys{1, 2, 2, 4, 4, 80, 4};
constexpr Dims kCausalTiles{1, 2, 2, 129, 257, 4, 4};
constexpr Dims kWindowTiles{1, 2, 2, 257, 257, 4, 4};
constexpr Dims kPaddedKeys{1, 2, 2, 4, 4, 111, 4};
constexpr Dims kTwoSplits{1, 2, 2, 4, 257, 4, 4};
constexpr Dims kLongRows{1, 2, 2, 4, 257, 4, 4};
constexpr Dims kRowsPast21{1, 2, 2, 4, 32, 4, 4};

}  // namespace

// A function-local table: the tests take it during static initialisation,
// possibly before this file's namespace-scope objects exist.
std::span<const MutantEntry> tile_mutant_kernels() {
  static const std::array kTileMutants = {
    ATTNSPEC_TILE_MUTANT(second_query_tile, "mutant-second-query-tile", "query rows 64-127 read rows 0-63's queries",
                         "PREC", kLongQueries),
    ATTNSPEC_TILE_MUTANT(value_columns_past_64, "mutant-value-columns-past-64", "output columns past 64 never written",
                         "PREC", kWideValues),
    ATTNSPEC_TILE_MUTANT(partial_key_tile, "mutant-partial-key-tile", "a partial last 128-key tile dropped when S > 128",
                         "PREC", kLongKeys),
    ATTNSPEC_TILE_MUTANT(qk_past_64, "mutant-qk-past-64", "q.k sums only the first 64 components", "PREC", kWideKeys),
    ATTNSPEC_TILE_MUTANT(causal_tile_count, "mutant-causal-tile-count",
                         "causal key tiles counted from a query tile's first row: a diagonal crossing a tile loses keys",
                         "CAUSAL", kCausalTiles),
    ATTNSPEC_TILE_MUTANT(window_tile_start, "mutant-window-tile-start",
                         "a window's first key tile taken from a query tile's last row: an edge crossing a tile loses keys",
                         "WINDOW", kWindowTiles),
    ATTNSPEC_TILE_MUTANT(head_dim_overread, "mutant-head-dim-overread",
                         "d_k > 32 padded to a multiple of 64 with the memory after the row", "PREC", kPaddedKeys),
    ATTNSPEC_TILE_MUTANT(values_bf16, "mutant-values-bf16", "V rounded to bfloat16, float32 claimed", "PREC",
                         kSmallCounterexample),
    ATTNSPEC_TILE_MUTANT(split_partials_f16, "mutant-split-partials-f16",
                         "split-KV partial outputs (128-key splits) stored in float16", "PRECTIGHT", kTwoSplits),
    ATTNSPEC_TILE_MUTANT(denominator_f16_long, "mutant-denominator-f16-long",
                         "softmax denominator rounded to float16 on rows of more than 200 keys", "PRECTIGHT", kLongRows),
    ATTNSPEC_TILE_MUTANT(scaled_long_rows_bf16, "mutant-scaled-long-rows-bf16",
                         "bfloat16 kernel: outputs 1.05x too large on rows of more than 21 keys", "PRECTIGHT", kRowsPast21),
  };
  return kTileMutants;
}

#undef ATTNSPEC_TILE_MUTANT

}  // namespace attnspec
