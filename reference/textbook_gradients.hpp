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
//
// TextbookStorage rounds intermediates as a 16-bit composition does: the
// yardstick of GRADREL for kernels whose formats are narrower than their
// arithmetic.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <span>
#include <vector>

#include "formats/format.hpp"
#include "reference/problem.hpp"

namespace attnspec {

// Where the composition rounds its intermediates to a narrower format than
// its arithmetic (none: the reference's and naive-f64/f32's backward).
struct TextbookStorage {
  // Every intermediate tensor (logits, weights, dP, D, dS), as a framework
  // composing 16-bit tensor operations stores them: a narrow accumulator.
  std::optional<FormatId> tensors;
  // P and dS before the products that take them (dV = P^T dO, dQ = dS K,
  // dK = dS^T Q): spec/SPEC.md 6.11's storage format F_s.
  std::optional<FormatId> products;
  // 6.11's other ways of taking the forward's state: P recomputed as
  // exp(x_j - lse) from the row's lse stored in this format (a
  // FlashAttention-style kernel's saved lse) ...
  std::optional<FormatId> saved_lse;
  // ... and D = dO . O from the row's output stored in this format (the
  // forward's returned O) instead of sum_j P_j dP_j.
  std::optional<FormatId> saved_output;
};

template <typename Scalar>
Scalar stored_in(Scalar x, std::optional<FormatId> format) {
  return format ? static_cast<Scalar>(round_to_format(static_cast<double>(x), *format)) : x;
}

template <typename Scalar>
struct TextbookGradients {
  std::vector<Scalar> dq, dk, dv, dsink;  // the layouts of GradientResult
};

template <typename Scalar>
TextbookGradients<Scalar> textbook_gradients(const Problem& p, const TextbookStorage& storage = {}) {
  const Dims& d = p.dims;
  const auto dk_w = static_cast<std::size_t>(d.d_k), dv_w = static_cast<std::size_t>(d.d_v);
  const auto S = static_cast<std::size_t>(d.kv_len), Hkv = static_cast<std::size_t>(d.kv_heads);
  std::vector<Scalar> dq(p.rows() * dk_w, 0), dk(static_cast<std::size_t>(d.batch) * Hkv * S * dk_w, 0),
      dv(static_cast<std::size_t>(d.batch) * Hkv * S * dv_w, 0), dsink(p.sinks.size(), 0);
  const Scalar scale = p.scale ? static_cast<Scalar>(*p.scale) : Scalar(1) / std::sqrt(static_cast<Scalar>(d.d_k));
  const bool capped = p.softcap.has_value();
  const Scalar cap = capped ? static_cast<Scalar>(*p.softcap) : Scalar(1);
  std::vector<int> keys;
  std::vector<Scalar> scaled, logit, weight, dp;
  const auto tensor = [&storage](Scalar x) { return stored_in(x, storage.tensors); };
  const auto product = [&storage, &tensor](Scalar x) { return stored_in(tensor(x), storage.products); };
  for (std::size_t row = 0; row < p.rows(); ++row) {
    const RowIndex r = p.row_index(row);
    const int g = p.kv_head_of(r.head);
    const auto q = p.query_row(r);
    keys.clear();
    scaled.clear();
    logit.clear();
    Scalar max = -std::numeric_limits<Scalar>::infinity();
    bool nonfinite = false;
    for (int j = 0; j < d.kv_len; ++j) {
      if (!p.visible(r, j)) continue;
      const auto k = p.key_row(r.batch, g, j);
      Scalar dot = 0;
      for (std::size_t t = 0; t < dk_w; ++t) dot += static_cast<Scalar>(q[t]) * static_cast<Scalar>(k[t]);
      const Scalar s = tensor(dot * scale);
      Scalar x = capped ? tensor(cap * std::tanh(s / cap)) : s;
      x = tensor(x + static_cast<Scalar>(p.logit_offset(r, j)));
      nonfinite = nonfinite || !std::isfinite(x);
      keys.push_back(j);
      scaled.push_back(s);
      logit.push_back(x);
      max = std::max(max, x);
    }
    if (keys.empty()) continue;  // no term anywhere; a lone sink has D = 0
    const std::optional<double> sink = p.sink(r);
    if (sink) max = std::max(max, static_cast<Scalar>(*sink));
    if (nonfinite) max = std::numeric_limits<Scalar>::quiet_NaN();
    Scalar sum = sink ? std::exp(static_cast<Scalar>(*sink) - max) : Scalar(0);
    weight.resize(keys.size());
    for (std::size_t a = 0; a < keys.size(); ++a) {
      weight[a] = std::exp(logit[a] - max);
      sum += weight[a];
    }
    for (Scalar& x : weight) x = tensor(x / sum);
    const std::span<const double> dout(p.dout.data() + row * dv_w, dv_w);
    // D from the forward's output P V (the softmax's weights), stored.
    Scalar saved_d = 0;
    if (storage.saved_output)
      for (std::size_t t = 0; t < dv_w; ++t) {
        Scalar o = 0;
        for (std::size_t a = 0; a < keys.size(); ++a)
          o += weight[a] * static_cast<Scalar>(p.value_row(r.batch, g, keys[a])[t]);
        saved_d += static_cast<Scalar>(dout[t]) * stored_in(o, storage.saved_output);
      }
    // The sink's weight, and with a saved lse every weight, from it.
    Scalar sink_weight = sink ? std::exp(static_cast<Scalar>(*sink) - max) / sum : Scalar(0);
    if (storage.saved_lse) {
      const Scalar lse = stored_in(max + std::log(sum), storage.saved_lse);
      for (std::size_t a = 0; a < keys.size(); ++a) weight[a] = tensor(std::exp(logit[a] - lse));
      if (sink) sink_weight = std::exp(static_cast<Scalar>(*sink) - lse);
    }
    dp.assign(keys.size(), 0);
    Scalar big_d = 0;
    for (std::size_t a = 0; a < keys.size(); ++a) {
      const auto v = p.value_row(r.batch, g, keys[a]);
      for (std::size_t t = 0; t < dv_w; ++t) dp[a] += static_cast<Scalar>(dout[t]) * static_cast<Scalar>(v[t]);
      dp[a] = tensor(dp[a]);
      big_d += weight[a] * dp[a];
    }
    if (storage.saved_output) big_d = saved_d;
    big_d = tensor(big_d);
    if (sink) dsink[static_cast<std::size_t>(r.head)] -= sink_weight * big_d;
    for (std::size_t a = 0; a < keys.size(); ++a) {
      Scalar ds = weight[a] * (dp[a] - big_d);
      if (capped) {
        const Scalar t = std::tanh(scaled[a] / cap);
        ds *= 1 - t * t;
      }
      ds = product(ds * scale);
      const Scalar p_stored = product(weight[a]);
      const std::size_t block = (static_cast<std::size_t>(r.batch) * Hkv + static_cast<std::size_t>(g)) * S +
                                static_cast<std::size_t>(keys[a]);
      const auto k = p.key_row(r.batch, g, keys[a]);
      for (std::size_t t = 0; t < dk_w; ++t) {
        dq[row * dk_w + t] += ds * static_cast<Scalar>(k[t]);
        dk[block * dk_w + t] += ds * static_cast<Scalar>(q[t]);
      }
      for (std::size_t t = 0; t < dv_w; ++t) dv[block * dv_w + t] += p_stored * static_cast<Scalar>(dout[t]);
    }
  }
  return {std::move(dq), std::move(dk), std::move(dv), std::move(dsink)};
}

}  // namespace attnspec
