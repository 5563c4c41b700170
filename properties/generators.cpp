// Problem generators. Small shapes dominate (RapidCheck's size grows during
// a run, and shrinking heads for 1s), but the draws include L = 1, S = 1,
// d_k = 1, L != S both ways, d_v != d_k, GQA groups up to 8, S beyond the
// built-in tile sizes, and S >= 1024 where the profile asks for it.
#include "properties/generators.hpp"

#include <rapidcheck.h>

#include <algorithm>
#include <cmath>

namespace attnspec {
namespace {

// An integer in [low, high] that shrinks towards 0 (RapidCheck's inRange
// shrinks towards `low`), so counterexamples end with simple values. For the
// same reason every optional feature is switched on by a roll's largest
// value: shrinking the roll towards 0 switches the feature off.
int draw_in(int low, int high) {
  if (low >= 0) return *rc::gen::inRange(low, high + 1);
  const int magnitude = *rc::gen::inRange(0, std::max(-low, high) + 1);
  const bool negative = high <= 0 || *rc::gen::arbitrary<bool>();
  return std::clamp(negative ? -magnitude : magnitude, low, high);
}

double draw_value(FormatId format, Distribution distribution) {
  double x = 0;
  switch (distribution) {
    case Distribution::small_integers:
      x = std::ldexp(draw_in(-8, 8), draw_in(-2, 1));
      break;
    case Distribution::uniform:
      x = draw_in(-128, 128) / 64.0;
      break;
    case Distribution::normal:
    case Distribution::near_ties:
      x = (draw_in(-64, 64) + draw_in(-64, 64) + draw_in(-64, 64)) / 64.0;
      break;
    case Distribution::large:
      x = std::ldexp(draw_in(-8, 8), draw_in(0, 3));
      break;
    case Distribution::outliers:
      x = (draw_in(-64, 64) + draw_in(-64, 64) + draw_in(-64, 64)) / 64.0;
      if (*rc::gen::inRange(0, 1000) == 999) x += (draw_in(-64, 64) + draw_in(-64, 64) + draw_in(-64, 64)) / 6.4;
      break;
  }
  return round_to_format(x, format);
}

}  // namespace

Features no_features() {
  Features f;
  f.bool_mask = f.additive_mask = f.causal = f.softcap = f.explicit_scale = false;
  f.gqa = f.dv_ne_dk = f.fully_masked_rows = false;
  return f;
}

Dims draw_dims(const Capabilities& caps, const Profile& profile, const Features& features) {
  Dims d;
  d.batch = draw_in(1, 2);
  d.kv_heads = draw_in(1, 2);
  const int group = features.gqa && caps.gqa ? *rc::gen::element(1, 1, 2, 3, 4, 8) : 1;
  d.q_heads = d.kv_heads * group;
  d.q_len = draw_in(1, 8);
  // Mostly short; sometimes beyond a 32-key tile; in ci and full sometimes long.
  // A roll that shrinks to 0, i.e. to short sequences: 8 in 11 short, 2
  // beyond a tile, 1 long where allowed (else short).
  const int roll = *rc::gen::inRange(0, 11);
  const bool long_allowed = profile.long_sequences && features.long_sequences;
  const int length_class = roll < 8 ? 0 : roll < 10 ? 1 : long_allowed ? 2 : 0;
  d.kv_len = length_class == 0 ? draw_in(1, 8) : length_class == 1 ? draw_in(33, 80) : draw_in(1024, 1100);
  if (length_class == 2) {  // keep the certified reference affordable
    d.batch = 1;
    d.q_len = draw_in(1, 3);
  }
  d.d_k = *rc::gen::element(1, 2, 3, 4, 5, 8, 16);
  d.d_v = features.dv_ne_dk && caps.dv_ne_dk ? *rc::gen::element(1, 2, 3, 4, 7, 8) : d.d_k;
  // Within the kernel's declared size: fewer keys, then fewer rows.
  const auto logits = [&] { return static_cast<std::size_t>(d.batch) * d.q_heads * d.q_len * d.kv_len; };
  while (logits() > caps.max_elements && d.kv_len > 1) d.kv_len = std::max(1, d.kv_len / 2);
  while (logits() > caps.max_elements && d.q_len > 1) d.q_len = std::max(1, d.q_len / 2);
  while (logits() > caps.max_elements && d.batch > 1) --d.batch;
  return d;
}

Distribution draw_distribution() {
  return *rc::gen::element(Distribution::small_integers, Distribution::uniform, Distribution::normal,
                           Distribution::large, Distribution::outliers, Distribution::near_ties);
}

std::vector<double> draw_values(std::size_t count, FormatId format, Distribution distribution) {
  std::vector<double> values(count);
  for (double& x : values) x = draw_value(format, distribution);
  return values;
}

void draw_mask(Problem& p, const Capabilities& caps, const Features& features) {
  const bool can_bool = features.bool_mask && caps.bool_mask;
  const bool can_additive = features.additive_mask && caps.additive_mask;
  const int kind = *rc::gen::element(0, 1, 2);  // none, bool, additive
  if ((kind == 1 && !can_bool) || (kind == 2 && !can_additive) || kind == 0) return;
  p.mask_kind = kind == 1 ? MaskKind::boolean : MaskKind::additive;
  const bool full_shape = *rc::gen::arbitrary<bool>();
  p.mask_batch = full_shape ? p.dims.batch : 1;
  p.mask_heads = full_shape ? p.dims.q_heads : 1;
  const std::size_t rows = static_cast<std::size_t>(p.mask_batch) * p.mask_heads * p.dims.q_len;
  const auto S = static_cast<std::size_t>(p.dims.kv_len);
  p.mask.assign(rows * S, kind == 1 ? 1.0 : 0.0);
  const bool padding = *rc::gen::arbitrary<bool>();
  const std::size_t padded = padding ? static_cast<std::size_t>(draw_in(0, p.dims.kv_len - 1)) : S;
  for (std::size_t row = 0; row < rows; ++row) {
    const bool fully_masked = features.fully_masked_rows && *rc::gen::inRange(0, 8) == 7;
    for (std::size_t j = 0; j < S; ++j) {
      const bool blocked = fully_masked || j >= padded || (!padding && *rc::gen::inRange(0, 4) == 3);
      double& m = p.mask[row * S + j];
      if (kind == 1) m = blocked ? 0.0 : 1.0;
      else m = blocked ? -INFINITY : std::ldexp(draw_in(-8, 8), draw_in(-3, 0));
    }
  }
}

Problem draw_problem(const Kernel& kernel, const Profile& profile, const Features& features,
                     const std::function<void(Dims&)>& adjust) {
  const Capabilities caps = kernel.capabilities();
  const FormatId format = kernel.formats().input;
  Problem p;
  p.dims = draw_dims(caps, profile, features);
  if (adjust) adjust(p.dims);
  const Distribution distribution = draw_distribution();
  const Dims& d = p.dims;
  const auto B = static_cast<std::size_t>(d.batch), S = static_cast<std::size_t>(d.kv_len);
  p.q = draw_values(p.rows() * d.d_k, format, distribution);
  if (distribution == Distribution::near_ties) {
    // Few distinct keys, each repeated and nudged: logits that nearly tie.
    const std::vector<double> base = draw_values(2 * static_cast<std::size_t>(d.d_k), format, Distribution::small_integers);
    p.k.resize(B * d.kv_heads * S * d.d_k);
    for (std::size_t i = 0; i < p.k.size(); ++i) {
      const std::size_t key = i / d.d_k, t = i % d.d_k;
      p.k[i] = round_to_format(base[(key % 2) * d.d_k + t] + std::ldexp(draw_in(-1, 1), -10), format);
    }
  } else {
    p.k = draw_values(B * d.kv_heads * S * d.d_k, format, distribution);
  }
  p.v = draw_values(B * d.kv_heads * S * d.d_v, format, distribution);
  draw_mask(p, caps, features);
  if (features.causal && (caps.causal_top_left || caps.causal_bottom_right) && *rc::gen::inRange(0, 3) == 2)
    p.causal = caps.causal_top_left && (!caps.causal_bottom_right || *rc::gen::arbitrary<bool>()) ? Causal::top_left
                                                                                                   : Causal::bottom_right;
  if (features.explicit_scale && caps.explicit_scale && *rc::gen::inRange(0, 3) == 2)
    p.scale = std::ldexp(draw_in(1, 8), draw_in(-4, 0));
  if (features.softcap && caps.softcap && *rc::gen::inRange(0, 4) == 3) p.softcap = draw_in(1, 30);
  return p;
}

}  // namespace attnspec
