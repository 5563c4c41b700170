// Small helpers for tests that build problems by hand.
#pragma once

#include <cmath>
#include <random>
#include <vector>

#include "formats/format.hpp"
#include "reference/problem.hpp"

namespace attnspec::testing {

// One batch, one head: Q [L x d_k], K [S x d_k], V [S x d_v], row-major.
inline Problem single_head(std::vector<std::vector<double>> q, std::vector<std::vector<double>> k,
                           std::vector<std::vector<double>> v) {
  Problem p;
  p.dims.q_len = static_cast<int>(q.size());
  p.dims.kv_len = static_cast<int>(k.size());
  p.dims.d_k = static_cast<int>(q.front().size());
  p.dims.d_v = static_cast<int>(v.front().size());
  for (const auto& row : q) p.q.insert(p.q.end(), row.begin(), row.end());
  for (const auto& row : k) p.k.insert(p.k.end(), row.begin(), row.end());
  for (const auto& row : v) p.v.insert(p.v.end(), row.begin(), row.end());
  return p;
}

// Small integers times powers of two, exactly representable in `format`.
inline double random_value(std::mt19937_64& random, FormatId format) {
  std::uniform_int_distribution<int> mantissa(-7, 7), exponent(-3, 2);
  return round_to_format(std::ldexp(mantissa(random), exponent(random)), format);
}

inline Problem random_problem(std::mt19937_64& random, Dims dims, FormatId format) {
  Problem p;
  p.dims = dims;
  const auto fill = [&](std::vector<double>& t, std::size_t n) {
    t.resize(n);
    for (double& x : t) x = random_value(random, format);
  };
  const std::size_t B = dims.batch, S = dims.kv_len;
  fill(p.q, p.rows() * dims.d_k);
  fill(p.k, B * dims.kv_heads * S * dims.d_k);
  fill(p.v, B * dims.kv_heads * S * dims.d_v);
  return p;
}

inline Problem with_dout(Problem p, std::mt19937_64& random, FormatId format) {
  p.dout.resize(p.out_size());
  for (double& x : p.dout) x = random_value(random, format);
  return p;
}

// The features section 2.6 carries through, one problem each, plus plain ones.
inline Problem featured_problem(int index, std::mt19937_64& random) {
  const Dims dims{index % 2 + 1, 4, index % 3 == 0 ? 4 : 2, 3 + index % 3, 4 + index % 4, 3 + index % 2, 2 + index % 2};
  Problem p = random_problem(random, dims, FormatId::float32);
  switch (index % 8) {
    case 1: p.causal = Causal::bottom_right; break;
    case 2: p.window = Window{1, 0, Alignment::top_left}; break;
    case 3: p.softcap = 2.5; break;
    case 4: p.sinks = {0.5, -INFINITY, -1.25, 2.0}; break;
    case 5: p.alibi = Alibi{alibi_paper_slopes(4), false, Alignment::bottom_right}; break;
    case 6: {
      p.mask_kind = MaskKind::additive;
      p.mask.resize(static_cast<std::size_t>(dims.q_len * dims.kv_len));
      for (double& m : p.mask) m = random_value(random, FormatId::float32);
      break;
    }
    case 7: p.scale = 0.375; p.softcap = 1.5; p.sinks = {1.0, 0.0, -0.5, 0.25}; break;
    default: break;
  }
  return with_dout(std::move(p), random, FormatId::float32);
}

}  // namespace attnspec::testing
