// The textbook backward pass (spec/SPEC.md section 2.6) in one
// floating-point type, as a framework's autograd composes it from the
// forward's operations (PyTorch's math path): P recomputed as the forward
// computes it, dV = P^T dO, dP = dO V^T, D = rowsum(P * dP), dS = P * (dP -
// D) times the softcap's derivative and the scale, dQ = dS K, dK = dS^T Q,
// and each sink's -sum P_sink D. In float and double it is the backward of
// naive-f64 and naive-f32 (adapters/naive/naive_backward.hpp); in long
// double it is the reference's fast path (reference/fast_gradients.hpp),
// which bounds its error with spec/SPEC.md section 6.11.
//
// Row by row over visible keys only: a blocked key's key and value are never
// read, so NaN there cannot leak through 0 * NaN. A non-finite visible logit
// makes the row's weights NaN (as in the forward), and IEEE arithmetic then
// carries NaN or infinity into exactly the sums section 2.6 names.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <span>
#include <vector>

#include "reference/problem.hpp"

namespace attnspec {

template <typename Scalar>
struct TextbookGradients {
  std::vector<Scalar> dq, dk, dv, dsink;  // the layouts of GradientResult
};

template <typename Scalar>
TextbookGradients<Scalar> textbook_gradients(const Problem& p) {
  const Dims& d = p.dims;
  const auto dk_w = static_cast<std::size_t>(d.d_k), dv_w = static_cast<std::size_t>(d.d_v);
  const auto S = static_cast<std::size_t>(d.kv_len), Hkv = static_cast<std::size_t>(d.kv_heads);
  std::vector<Scalar> dq(p.rows() * dk_w, 0), dk(static_cast<std::size_t>(d.batch) * Hkv * S * dk_w, 0),
      dv(static_cast<std::size_t>(d.batch) * Hkv * S * dv_w, 0), dsink(p.sinks.size(), 0);
  const Scalar scale = p.scale ? static_cast<Scalar>(*p.scale) : Scalar(1) / std::sqrt(static_cast<Scalar>(d.d_k));
  const bool capped = p.softcap.has_value();
  const Scalar cap = capped ? static_cast<Scalar>(*p.softcap) : Scalar(1);
  std::vector<int> keys;
  std::vector<Scalar> scaled, weight, dp;
  for (std::size_t row = 0; row < p.rows(); ++row) {
    const RowIndex r = p.row_index(row);
    const int g = p.kv_head_of(r.head);
    const auto q = p.query_row(r);
    keys.clear();
    scaled.clear();
    weight.clear();
    Scalar max = -std::numeric_limits<Scalar>::infinity();
    bool nonfinite = false;
    for (int j = 0; j < d.kv_len; ++j) {
      if (!p.visible(r, j)) continue;
      const auto k = p.key_row(r.batch, g, j);
      Scalar dot = 0;
      for (std::size_t t = 0; t < dk_w; ++t) dot += static_cast<Scalar>(q[t]) * static_cast<Scalar>(k[t]);
      const Scalar s = dot * scale;
      Scalar x = capped ? cap * std::tanh(s / cap) : s;
      x += static_cast<Scalar>(p.logit_offset(r, j));
      nonfinite = nonfinite || !std::isfinite(x);
      keys.push_back(j);
      scaled.push_back(s);
      weight.push_back(x);
      max = std::max(max, x);
    }
    if (keys.empty()) continue;  // no term anywhere; a lone sink has D = 0
    const std::optional<double> sink = p.sink(r);
    if (sink) max = std::max(max, static_cast<Scalar>(*sink));
    if (nonfinite) max = std::numeric_limits<Scalar>::quiet_NaN();
    Scalar sum = sink ? std::exp(static_cast<Scalar>(*sink) - max) : Scalar(0);
    for (Scalar& x : weight) {
      x = std::exp(x - max);
      sum += x;
    }
    for (Scalar& x : weight) x /= sum;
    const std::span<const double> dout(p.dout.data() + row * dv_w, dv_w);
    dp.assign(keys.size(), 0);
    Scalar big_d = 0;
    for (std::size_t a = 0; a < keys.size(); ++a) {
      const auto v = p.value_row(r.batch, g, keys[a]);
      for (std::size_t t = 0; t < dv_w; ++t) dp[a] += static_cast<Scalar>(dout[t]) * static_cast<Scalar>(v[t]);
      big_d += weight[a] * dp[a];
    }
    if (sink) dsink[static_cast<std::size_t>(r.head)] -= std::exp(static_cast<Scalar>(*sink) - max) / sum * big_d;
    for (std::size_t a = 0; a < keys.size(); ++a) {
      Scalar ds = weight[a] * (dp[a] - big_d);
      if (capped) {
        const Scalar t = std::tanh(scaled[a] / cap);
        ds *= 1 - t * t;
      }
      ds *= scale;
      const std::size_t block = (static_cast<std::size_t>(r.batch) * Hkv + static_cast<std::size_t>(g)) * S +
                                static_cast<std::size_t>(keys[a]);
      const auto k = p.key_row(r.batch, g, keys[a]);
      for (std::size_t t = 0; t < dk_w; ++t) {
        dq[row * dk_w + t] += ds * static_cast<Scalar>(k[t]);
        dk[block * dk_w + t] += ds * static_cast<Scalar>(q[t]);
      }
      for (std::size_t t = 0; t < dv_w; ++t) dv[block * dv_w + t] += weight[a] * static_cast<Scalar>(dout[t]);
    }
  }
  return {std::move(dq), std::move(dk), std::move(dv), std::move(dsink)};
}

}  // namespace attnspec
