// The law mutants: online-f32 with a bug that PREC, judging one drawn
// problem at a time, cannot see, and that only one law's own clause
// catches (spec/SPEC.md section 7.4). Five make the result depend on more
// than the problem in hand: on the call's parity (a reduction order that
// changes between calls: DETERM, GRADDETERM), or on an earlier call (a
// plan or a calibration made from one call and reused for another:
// PERMQ, PERMKV, LINV). Two need an input PREC never draws: more (batch,
// head) pairs than a launch covers (VAR), a whole query tile of zeros
// (UNIFORM).
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "adapters/mutants/mutants.hpp"
#include "adapters/online/online_kernel.hpp"
#include "adapters/wrapped_kernel.hpp"

namespace attnspec {
namespace {

// Keys in reverse order, with their values and mask columns: the same
// function (SPEC's PERMKV), other rounding. Only for problems whose logits
// do not depend on key positions.
bool has_position_rules(const Problem& p) { return p.causal != Causal::none || p.window || p.alibi; }

void reverse_rows(std::vector<double>& t, std::size_t rows_per_block, std::size_t width) {
  for (std::size_t block = 0; block * rows_per_block * width < t.size(); ++block)
    for (std::size_t i = 0, j = rows_per_block - 1; i < j; ++i, --j)
      for (std::size_t c = 0; c < width; ++c)
        std::swap(t[(block * rows_per_block + i) * width + c], t[(block * rows_per_block + j) * width + c]);
}

Problem keys_reversed(const Problem& p) {
  Problem r = p;
  const auto S = static_cast<std::size_t>(p.dims.kv_len);
  reverse_rows(r.k, S, static_cast<std::size_t>(p.dims.d_k));
  reverse_rows(r.v, S, static_cast<std::size_t>(p.dims.d_v));
  if (p.mask_kind != MaskKind::none)
    for (std::size_t row = 0; row * S < r.mask.size(); ++row)
      std::reverse(r.mask.begin() + static_cast<std::ptrdiff_t>(row * S),
                   r.mask.begin() + static_cast<std::ptrdiff_t>((row + 1) * S));
  return r;
}

// Every other call sums the keys in reverse order, as a kernel whose
// split count or atomic order follows the load does (FlashAttention's
// num_splits heuristic; atomics in its backward).
class OrderPerCall : public WrappedKernel {
 public:
  OrderPerCall(std::string name, bool backward) : WrappedKernel(make_online_f32()), name_(std::move(name)), backward_(backward) {}
  std::string name() const override { return name_; }
  KernelResult run(const Problem& p) override {
    if (backward_ || !flip(p)) return WrappedKernel::run(p);
    return WrappedKernel::run(keys_reversed(p));  // rows are where they were
  }
  GradientOutputs run_backward(const Problem& p) override {
    if (!backward_ || !flip(p)) return WrappedKernel::run_backward(p);
    GradientOutputs g = WrappedKernel::run_backward(keys_reversed(p));
    const auto S = static_cast<std::size_t>(p.dims.kv_len);
    reverse_rows(g.dk, S, static_cast<std::size_t>(p.dims.d_k));  // back to the caller's key order
    reverse_rows(g.dv, S, static_cast<std::size_t>(p.dims.d_v));
    return g;
  }

 private:
  bool flip(const Problem& p) { return (calls_++ % 2 == 1) && !has_position_rules(p); }
  std::string name_;
  bool backward_;
  long calls_ = 0;
};

// A launch grid of at most kHeadBlocks (batch, head) blocks: the rest are
// never computed and their outputs stay as allocated, zero. The class of
// CUDA's 65,535 limit on a grid's y and z extent, scaled down as the tile
// mutants' tiles are: the property clauses draw at most 32 (batch, head)
// pairs, VAR's statistical problem 1024.
constexpr int kHeadBlocks = 512;

class HeadsPastLaunchLimit : public WrappedKernel {
 public:
  explicit HeadsPastLaunchLimit(std::string name) : WrappedKernel(make_online_f32()), name_(std::move(name)) {}
  std::string name() const override { return name_; }
  KernelResult run(const Problem& p) override {
    KernelResult r = WrappedKernel::run(p);
    const auto rows_per_head = static_cast<std::size_t>(p.dims.q_len);
    const auto first_lost_row = static_cast<std::size_t>(kHeadBlocks) * rows_per_head;
    const auto dv = static_cast<std::size_t>(p.dims.d_v);
    for (std::size_t row = first_lost_row; row < p.rows(); ++row) {
      std::fill_n(r.out.begin() + static_cast<std::ptrdiff_t>(row * dv), dv, 0.0);
      if (row < r.lse.size()) r.lse[row] = 0.0;
    }
    return r;
  }

 private:
  std::string name_;
};

// A full query tile (16 rows of one head, online-f32's tile) whose
// queries are all zero is taken for padding and skipped: its rows stay
// as allocated, zero, where the weights are uniform and the output the
// mean of the visible values. PREC draws such a tile with probability
// about 17^-16; UNIFORM's zero query is one at every tile-sized shape.
constexpr int kQueryTile = 16;

class ZeroQueryTileSkipped : public WrappedKernel {
 public:
  explicit ZeroQueryTileSkipped(std::string name) : WrappedKernel(make_online_f32()), name_(std::move(name)) {}
  std::string name() const override { return name_; }
  KernelResult run(const Problem& p) override {
    KernelResult r = WrappedKernel::run(p);
    const auto L = static_cast<std::size_t>(p.dims.q_len), dk = static_cast<std::size_t>(p.dims.d_k),
               dv = static_cast<std::size_t>(p.dims.d_v), tile = static_cast<std::size_t>(kQueryTile);
    for (std::size_t head = 0; head * L < p.rows(); ++head)
      for (std::size_t first = 0; first + tile <= L; first += tile) {
        const auto q = p.q.begin() + static_cast<std::ptrdiff_t>((head * L + first) * dk);
        if (!std::all_of(q, q + static_cast<std::ptrdiff_t>(tile * dk), [](double x) { return x == 0; })) continue;
        std::fill_n(r.out.begin() + static_cast<std::ptrdiff_t>((head * L + first) * dv), tile * dv, 0.0);
        for (std::size_t row = head * L + first; row < head * L + first + tile && row < r.lse.size(); ++row) r.lse[row] = 0;
      }
    return r;
  }

 private:
  std::string name_;
};

// What a plan or a calibration is keyed on: the shapes, not the contents
// (a wrapper re-plans when the problem's shape changes).
using ShapeKey = std::tuple<int, int, int, int, int, int, int, MaskKind, int, int>;
ShapeKey shape_key(const Problem& p) {
  const Dims& d = p.dims;
  return {d.batch, d.q_heads, d.kv_heads, d.q_len, d.kv_len, d.d_k, d.d_v, p.mask_kind, p.mask_batch, p.mask_heads};
}

void block(Problem& p, std::size_t index) { p.mask[index] = p.mask_kind == MaskKind::boolean ? 0.0 : -INFINITY; }
bool blocked(const Problem& p, std::size_t index) {
  return p.mask_kind == MaskKind::boolean ? p.mask[index] == 0.0 : p.mask[index] == -INFINITY;
}

// FNV-1a over a double's bits: one row's hash.
std::uint64_t mix(std::uint64_t h, double x) {
  const auto bits = std::bit_cast<std::uint64_t>(x);
  for (int byte = 0; byte < 8; ++byte) h = (h ^ ((bits >> (8 * byte)) & 0xff)) * 1099511628211ull;
  return h;
}

// A block-sparse plan made from the mask and cached under a digest of the
// inputs that combines per-position hashes with XOR, an order-blind
// combination: the same rows in another order collide, and run() reuses a
// plan made for another mask, as FlashInfer's run() reuses the mask its
// plan() was given. `key_map`: a plan per query batch (Q kept whole, the
// keys' positions hashed with their values and mask columns) records
// which keys no row of a mask slice sees and skips them; otherwise a plan
// per KV cache (K and V kept whole, the query positions hashed with their
// mask rows) records which rows see no key and writes them as empty.
class StalePlan : public WrappedKernel {
 public:
  StalePlan(std::string name, bool key_map) : WrappedKernel(make_online_f32()), name_(std::move(name)), key_map_(key_map) {}
  std::string name() const override { return name_; }
  KernelResult run(const Problem& p) override {
    if (p.mask_kind == MaskKind::none) return WrappedKernel::run(p);
    const auto S = static_cast<std::size_t>(p.dims.kv_len), L = static_cast<std::size_t>(p.dims.q_len);
    const auto dk = static_cast<std::size_t>(p.dims.d_k), dv = static_cast<std::size_t>(p.dims.d_v);
    const std::size_t slices = p.mask.size() / (L * S);
    std::uint64_t digest = 0;
    for (std::size_t position = 0; position < (key_map_ ? S : L); ++position) {
      std::uint64_t h = 14695981039346656037ull;
      if (key_map_) {
        for (std::size_t head = 0; head * S < p.k.size() / dk; ++head) {
          for (std::size_t c = 0; c < dk; ++c) h = mix(h, p.k[(head * S + position) * dk + c]);
          for (std::size_t c = 0; c < dv; ++c) h = mix(h, p.v[(head * S + position) * dv + c]);
        }
        for (std::size_t row = 0; row < slices * L; ++row) h = mix(h, p.mask[row * S + position]);
      } else {
        for (std::size_t head = 0; head * L < p.rows(); ++head)
          for (std::size_t c = 0; c < dk; ++c) h = mix(h, p.q[(head * L + position) * dk + c]);
        for (std::size_t slice = 0; slice < slices; ++slice)
          for (std::size_t j = 0; j < S; ++j) h = mix(h, p.mask[(slice * L + position) * S + j]);
      }
      digest ^= h;
    }
    const PlanKey key{shape_key(p), digest, key_map_ ? p.q : p.k, key_map_ ? std::vector<double>{} : p.v};
    if (!plan_ || plan_->first != key) {  // plan this mask
      std::vector<bool> empty(key_map_ ? slices * S : slices * L, true);
      for (std::size_t slice = 0; slice < slices; ++slice)
        for (std::size_t i = 0; i < L; ++i)
          for (std::size_t j = 0; j < S; ++j)
            if (!blocked(p, (slice * L + i) * S + j)) empty[key_map_ ? slice * S + j : slice * L + i] = false;
      plan_.emplace(key, std::move(empty));
    }
    Problem planned = p;
    const std::vector<bool>& empty = plan_->second;
    for (std::size_t slice = 0; slice < slices; ++slice)
      for (std::size_t i = 0; i < L; ++i)
        for (std::size_t j = 0; j < S; ++j)
          if (empty[key_map_ ? slice * S + j : slice * L + i]) block(planned, (slice * L + i) * S + j);
    return WrappedKernel::run(planned);
  }

 private:
  using PlanKey = std::tuple<ShapeKey, std::uint64_t, std::vector<double>, std::vector<double>>;
  std::string name_;
  bool key_map_;
  std::optional<std::pair<PlanKey, std::vector<bool>>> plan_;
};

// V's range calibrated once per set of keys and kept: a later call with
// the same keys and larger finite values saturates them, as vLLM's fp8
// KV scales computed from the first batch (calculate_kv_scales) clip later
// values, and as a cache keyed on the keys alone takes V to follow from
// them. Here without the fp8 rounding, so only the saturation is wrong.
class FrozenValueRange : public WrappedKernel {
 public:
  explicit FrozenValueRange(std::string name) : WrappedKernel(make_online_f32()), name_(std::move(name)) {}
  std::string name() const override { return name_; }
  KernelResult run(const Problem& p) override {
    if (!range_ || range_->first != std::make_pair(shape_key(p), p.k)) {
      double largest = 0;
      for (double v : p.v)
        if (std::isfinite(v)) largest = std::max(largest, std::fabs(v));
      range_.emplace(std::make_pair(shape_key(p), p.k), largest);
    }
    Problem clipped = p;
    for (double& v : clipped.v)
      if (std::isfinite(v) && std::fabs(v) > range_->second) v = std::copysign(range_->second, v);
    return WrappedKernel::run(clipped);
  }

 private:
  std::string name_;
  std::optional<std::pair<std::pair<ShapeKey, std::vector<double>>, double>> range_;
};

// A bug between calls shrinks less far: each candidate the shrinker tries
// runs after the one before it, whose plan it may meet. Up to the small
// class's 8 rows and keys.
constexpr Dims kStatefulCounterexample{2, 4, 2, 8, 40, 4, 4};

}  // namespace

std::span<const MutantEntry> law_mutant_kernels() {
  static const std::array kCallMutants = {
      MutantEntry{"mutant-order-per-call",
                  "keys summed in reverse order on every other call (a split count or atomic order that follows the load)",
                  "DETERM", []() -> std::unique_ptr<Kernel> { return std::make_unique<OrderPerCall>("mutant-order-per-call", false); },
                  kSmallCounterexample, Witness::repeated_calls},
      MutantEntry{"mutant-backward-order-per-call",
                  "backward: keys' gradients accumulated in reverse order on every other call (atomics)", "GRADDETERM",
                  []() -> std::unique_ptr<Kernel> {
                    return std::make_unique<OrderPerCall>("mutant-backward-order-per-call", true);
                  },
                  kSmallCounterexample, Witness::repeated_calls},
      MutantEntry{"mutant-heads-past-launch-limit",
                  "(batch, head) pairs past 512 never computed: a launch grid capped (CUDA's 65,535, scaled down)", "VAR",
                  []() -> std::unique_ptr<Kernel> { return std::make_unique<HeadsPastLaunchLimit>("mutant-heads-past-launch-limit"); },
                  kSmallCounterexample, Witness::statistical},
      MutantEntry{"mutant-zero-query-tile-skipped",
                  "a full 16-row query tile of zeros skipped as padding: its rows left 0, not the mean of the values",
                  "UNIFORM", []() -> std::unique_ptr<Kernel> { return std::make_unique<ZeroQueryTileSkipped>("mutant-zero-query-tile-skipped"); },
                  Dims{2, 4, 2, 16, 40, 4, 4}},
      MutantEntry{"mutant-plan-stale-key-map",
                  "keys no row sees, from a plan cached under an order-blind (XOR) digest of the keys: permuted keys reuse it (FlashInfer's plan holds the mask)",
                  "PERMKV", []() -> std::unique_ptr<Kernel> { return std::make_unique<StalePlan>("mutant-plan-stale-key-map", true); },
                  kStatefulCounterexample, Witness::after_an_earlier_call},
      MutantEntry{"mutant-plan-stale-empty-rows",
                  "rows that see no key, from a plan cached under an order-blind (XOR) digest of the query rows: permuted rows reuse it, others written empty", "PERMQ",
                  []() -> std::unique_ptr<Kernel> {
                    return std::make_unique<StalePlan>("mutant-plan-stale-empty-rows", false);
                  },
                  kStatefulCounterexample, Witness::after_an_earlier_call},
      MutantEntry{"mutant-value-range-frozen",
                  "V's range calibrated once per set of keys (vLLM's kv scales from the first batch): larger values with the same keys saturate",
                  "LINV", []() -> std::unique_ptr<Kernel> { return std::make_unique<FrozenValueRange>("mutant-value-range-frozen"); },
                  kStatefulCounterexample, Witness::after_an_earlier_call},
  };
  return kCallMutants;
}

}  // namespace attnspec
