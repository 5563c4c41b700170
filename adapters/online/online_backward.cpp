// Row by row and key by key over visible pairs, float32 throughout. The
// order of the sums is free (SPEC 6.1, A3); what makes this FlashAttention
// 2's and not the textbook's is where P and D come from and where values
// are stored narrower.
#include "adapters/online/online_backward.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace attnspec {
namespace {

float to_storage(float x, FormatId storage) {
  return storage == FormatId::float32 ? x : static_cast<float>(round_to_format(x, storage));
}

// q . k in 8 float32 lanes, as the forward sums it.
float dot(std::span<const double> q, std::span<const double> k) {
  float lanes[8] = {};
  std::size_t t = 0;
  for (; t + 8 <= q.size(); t += 8)
    for (std::size_t l = 0; l < 8; ++l) lanes[l] += static_cast<float>(q[t + l]) * static_cast<float>(k[t + l]);
  for (; t < q.size(); ++t) lanes[0] += static_cast<float>(q[t]) * static_cast<float>(k[t]);
  return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
}

constexpr int kFirstKeyTile = 32;  // the tile whose maximum the stale-max mutant keeps

}  // namespace

GradientOutputs flash_backward(const Problem& p, const KernelResult& forward, FormatId storage, FormatId output,
                               BackwardBug bug) {
  const Dims& d = p.dims;
  const auto dk_w = static_cast<std::size_t>(d.d_k), dv_w = static_cast<std::size_t>(d.d_v);
  const auto S = static_cast<std::size_t>(d.kv_len), Hkv = static_cast<std::size_t>(d.kv_heads);
  const std::size_t key_values = static_cast<std::size_t>(d.batch) * Hkv * S;
  std::vector<float> dq(p.rows() * dk_w, 0), dk(key_values * dk_w, 0), dv(key_values * dv_w, 0),
      dsink(p.sinks.size(), 0);
  // The last-head mutant's dK, per query head, copied over its kv head's.
  std::vector<float> head_dk;
  const float scale = p.scale ? static_cast<float>(*p.scale) : 1.0f / std::sqrt(static_cast<float>(d.d_k));
  const bool capped = p.softcap.has_value();
  const float cap = capped ? static_cast<float>(*p.softcap) : 1.0f;
  const auto add = [bug](float& sum, float term) {
    sum += term;
    if (bug == BackwardBug::accumulate_bf16) sum = static_cast<float>(round_to_format(sum, FormatId::bfloat16));
  };
  Problem without_causal;
  if (bug == BackwardBug::causal_missing) {
    without_causal = p;
    without_causal.causal = Causal::none;
  }
  const Problem& seen = bug == BackwardBug::causal_missing ? without_causal : p;
  const int group = d.q_heads / d.kv_heads;
  std::vector<float> logit, cap_prime;
  std::vector<int> keys;
  std::vector<char> blocked;
  for (int b = 0; b < d.batch; ++b)
    for (int h = 0; h < d.q_heads; ++h) {
      const int g = p.kv_head_of(h);
      const std::size_t block0 = (static_cast<std::size_t>(b) * Hkv + static_cast<std::size_t>(g)) * S;
      const bool last_head_only = bug == BackwardBug::dk_last_query_head && group > 1;
      if (last_head_only) head_dk.assign(S * dk_w, 0.0f);
      for (int i = 0; i < d.q_len; ++i) {
        const RowIndex r{b, h, i};
        const std::size_t row = p.row_flat(r);
        const auto q = p.query_row(r);
        const std::span<const double> dout(p.dout.data() + row * dv_w, dv_w);
        keys.clear();
        logit.clear();
        cap_prime.clear();
        float max = -std::numeric_limits<float>::infinity(), first_tile_max = max;
        blocked.clear();
        for (int j = 0; j < d.kv_len; ++j) {
          const bool visible = seen.visible(r, j);
          if (!visible && bug != BackwardBug::blocked_keys_read) continue;
          blocked.push_back(!visible);
          const float s = dot(q, p.key_row(b, g, j)) * scale;
          float x = s;
          float derivative = 1;
          if (capped) {
            const float t = std::tanh(s / cap);
            x = cap * t;
            derivative = 1 - t * t;
          }
          x += static_cast<float>(p.logit_offset(r, j));
          keys.push_back(j);
          logit.push_back(x);
          cap_prime.push_back(bug == BackwardBug::softcap_derivative_missing ? 1.0f : derivative);
          if (!visible) continue;  // the read-blocked mutant's: P = 0 below
          max = std::max(max, x);
          if (j < kFirstKeyTile) first_tile_max = std::max(first_tile_max, x);
        }
        if (std::find(blocked.begin(), blocked.end(), 0) == blocked.end()) continue;  // no visible key
        float lse = static_cast<float>(forward.lse[row]);
        if (bug == BackwardBug::stale_max && std::isfinite(first_tile_max)) lse = lse - max + first_tile_max;
        // D from dO and the stored output.
        float big_d = 0;
        for (std::size_t t = 0; t < dv_w; ++t) big_d += static_cast<float>(dout[t]) * static_cast<float>(forward.out[row * dv_w + t]);
        if (bug == BackwardBug::d_left_out) big_d = 0;
        if (const std::optional<double> sink = p.sink(r))
          dsink[static_cast<std::size_t>(h)] -= std::exp(static_cast<float>(*sink) - lse) * big_d;
        for (std::size_t a = 0; a < keys.size(); ++a) {
          const int j = keys[a];
          const float weight =
              blocked[a] ? 0.0f : std::exp(logit[a] - (bug == BackwardBug::dv_unnormalised ? max : lse));
          const float stored_p = to_storage(weight, storage);
          const auto v = p.value_row(b, g, j);
          float dp = 0;
          for (std::size_t t = 0; t < dv_w; ++t) dp += static_cast<float>(dout[t]) * static_cast<float>(v[t]);
          const float normalised_p = bug == BackwardBug::dv_unnormalised ? std::exp(logit[a] - lse) : weight;
          // (normalised_p is 0 at the read-blocked mutant's blocked keys, and dP
          // NaN where their values are.) dS is formed from P before P's
          // storage rounding, as FlashAttention 2 does: rounding P first cost
          // up to 5x the textbook's dQ error on long float16 rows (ci seed 21).
          float ds = normalised_p * (dp - big_d) * cap_prime[a];
          if (bug != BackwardBug::ds_without_scale) ds *= scale;
          ds = to_storage(ds, storage);
          const std::size_t block = block0 + static_cast<std::size_t>(j);
          const auto k = p.key_row(b, g, j);
          for (std::size_t t = 0; t < dk_w; ++t) {
            add(dq[row * dk_w + t], ds * static_cast<float>(k[t]));
            float& target = last_head_only ? head_dk[static_cast<std::size_t>(j) * dk_w + t] : dk[block * dk_w + t];
            add(target, ds * static_cast<float>(q[t]));
          }
          for (std::size_t t = 0; t < dv_w; ++t) add(dv[block * dv_w + t], stored_p * static_cast<float>(dout[t]));
        }
      }
      if (last_head_only)
        std::copy(head_dk.begin(), head_dk.end(), dk.begin() + static_cast<std::ptrdiff_t>(block0 * dk_w));
    }
  const auto rounded = [output](const std::vector<float>& values) {
    std::vector<double> result(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) result[i] = round_to_format(values[i], output);
    return result;
  };
  return {rounded(dq), rounded(dk), rounded(dv), rounded(dsink)};
}

}  // namespace attnspec
