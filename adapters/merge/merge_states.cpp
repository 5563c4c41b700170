// The built-in merge operator (adapters/merge/merge_states.hpp).
#include "adapters/merge/merge_states.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace attnspec {

template <class Accumulate>
KernelResult merge_states(const MergeInput& in, FormatId output, MergeBug bug) {
  // Sizes only: the split-KV kernels merge NaN and infinite partials too
  // (NaN in V propagates), which the merge operator's own inputs exclude.
  if (in.lse.size() != static_cast<std::size_t>(in.parts) * static_cast<std::size_t>(in.rows) ||
      in.out.size() != in.lse.size() * static_cast<std::size_t>(in.d_v))
    throw std::invalid_argument("merge_states: sizes do not match rows, parts and d_v");
  using A = Accumulate;
  constexpr A minus_infinity = -std::numeric_limits<A>::infinity();
  KernelResult result;
  result.out.assign(static_cast<std::size_t>(in.rows) * static_cast<std::size_t>(in.d_v), 0.0);
  result.lse.assign(static_cast<std::size_t>(in.rows), 0.0);
  std::vector<A> scaled(static_cast<std::size_t>(in.d_v));
  for (int row = 0; row < in.rows; ++row) {
    const auto lse_of = [&](int part) { return static_cast<A>(in.lse[in.lse_index(part, row)]); };
    // The weights exp(lse_i - c) with c the largest lse (the correct
    // merge) or 0 (no_max_shift), normalised by their computed sum.
    A shift = 0;
    if (bug != MergeBug::no_max_shift) {
      shift = minus_infinity;
      for (int part = 0; part < in.parts; ++part) shift = std::max(shift, lse_of(part));
      if (shift == minus_infinity && bug != MergeBug::empty_split_nan) {
        result.lse[static_cast<std::size_t>(row)] = -std::numeric_limits<double>::infinity();
        continue;  // no part saw a key: the row with no visible key, 0 and -inf
      }
    }
    A sum = 0;
    std::fill(scaled.begin(), scaled.end(), A{0});
    for (int part = 0; part < in.parts; ++part) {
      const A weight = std::exp(lse_of(part) - shift);
      sum += weight;
      for (int t = 0; t < in.d_v; ++t)
        scaled[static_cast<std::size_t>(t)] += weight * static_cast<A>(in.out[in.out_index(part, row, t)]);
    }
    const A lse = shift + std::log(sum);
    for (int t = 0; t < in.d_v; ++t)
      result.out[static_cast<std::size_t>(row) * static_cast<std::size_t>(in.d_v) + static_cast<std::size_t>(t)] =
          round_to_format(static_cast<double>(scaled[static_cast<std::size_t>(t)] / sum), output);
    result.lse[static_cast<std::size_t>(row)] = static_cast<double>(lse);
  }
  return result;
}

template KernelResult merge_states<float>(const MergeInput&, FormatId, MergeBug);
template KernelResult merge_states<double>(const MergeInput&, FormatId, MergeBug);

}  // namespace attnspec
