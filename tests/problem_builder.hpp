// Small helpers for tests that build problems by hand.
#pragma once

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

}  // namespace attnspec::testing
