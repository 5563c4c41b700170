// Sub-problems cut from a problem (properties/cuts.hpp).
#include "properties/cuts.hpp"

#include <algorithm>
#include <array>
#include <cstddef>

namespace attnspec {
namespace {

AxisRange fit_range(AxisRange r, int length) {
  r.end = std::clamp(r.end, 1, length);
  r.begin = std::clamp(r.begin, 0, r.end - 1);
  return r;
}

int length(const AxisRange& r) { return r.end - r.begin; }

// The axes of a cut, in the order smaller_cuts reduces them: keys and rows
// first (where a failing element usually sits), the head dimensions last.
std::array<AxisRange Cut::*, 7> axes() {
  return {&Cut::keys, &Cut::rows, &Cut::batch, &Cut::kv_heads, &Cut::group, &Cut::key_dims, &Cut::value_dims};
}

}  // namespace

Cut fit_cut(const Cut& cut, const Dims& d) {
  Cut fitted = cut;  // the options as they are
  fitted.batch = fit_range(cut.batch, d.batch);
  fitted.kv_heads = fit_range(cut.kv_heads, d.kv_heads);
  fitted.group = fit_range(cut.group, d.q_heads / d.kv_heads);
  fitted.rows = fit_range(cut.rows, d.q_len);
  fitted.keys = fit_range(cut.keys, d.kv_len);
  fitted.key_dims = fit_range(cut.key_dims, d.d_k);
  fitted.value_dims = fit_range(cut.value_dims, d.d_v);
  return fitted;
}

Dims cut_dims(const Cut& cut, const Dims& d) {
  const Cut c = fit_cut(cut, d);
  Dims out;
  out.batch = length(c.batch);
  out.kv_heads = length(c.kv_heads);
  out.q_heads = out.kv_heads * length(c.group);
  out.q_len = length(c.rows);
  out.kv_len = length(c.keys);
  out.d_k = length(c.key_dims);
  out.d_v = length(c.value_dims);
  return out;
}

Problem cut_problem(const Problem& p, const Cut& cut) {
  const Dims& d = p.dims;
  const Cut c = fit_cut(cut, d);
  Problem out;
  out.dims = cut_dims(c, d);
  if (c.scale) out.scale = p.scale;
  if (c.softcap) out.softcap = p.softcap;
  if (c.causal) out.causal = p.causal;
  if (c.window) out.window = p.window;
  out.mask_kind = c.mask ? p.mask_kind : MaskKind::none;
  out.mask_batch = out.mask_kind == MaskKind::none || p.mask_batch == 1 ? 1 : out.dims.batch;
  out.mask_heads = out.mask_kind == MaskKind::none || p.mask_heads == 1 ? 1 : out.dims.q_heads;
  const int group = d.q_heads / d.kv_heads;
  const auto at = [](std::size_t i0, std::size_t n1, std::size_t i1, std::size_t n2, std::size_t i2, std::size_t n3,
                     std::size_t i3) { return ((i0 * n1 + i1) * n2 + i2) * n3 + i3; };
  const auto z = [](int x) { return static_cast<std::size_t>(x); };
  // The query heads kept, in order: each kept kv head's kept group members.
  std::vector<int> q_heads;
  for (int g = c.kv_heads.begin; g < c.kv_heads.end; ++g)
    for (int r = c.group.begin; r < c.group.end; ++r) q_heads.push_back(g * group + r);
  for (int b = c.batch.begin; b < c.batch.end; ++b) {
    for (int h : q_heads)
      for (int i = c.rows.begin; i < c.rows.end; ++i)
        for (int t = c.key_dims.begin; t < c.key_dims.end; ++t)
          out.q.push_back(p.q[at(z(b), z(d.q_heads), z(h), z(d.q_len), z(i), z(d.d_k), z(t))]);
    for (int g = c.kv_heads.begin; g < c.kv_heads.end; ++g)
      for (int j = c.keys.begin; j < c.keys.end; ++j)
        for (int t = c.key_dims.begin; t < c.key_dims.end; ++t)
          out.k.push_back(p.k[at(z(b), z(d.kv_heads), z(g), z(d.kv_len), z(j), z(d.d_k), z(t))]);
    for (int g = c.kv_heads.begin; g < c.kv_heads.end; ++g)
      for (int j = c.keys.begin; j < c.keys.end; ++j)
        for (int t = c.value_dims.begin; t < c.value_dims.end; ++t)
          out.v.push_back(p.v[at(z(b), z(d.kv_heads), z(g), z(d.kv_len), z(j), z(d.d_v), z(t))]);
    if (!p.dout.empty())  // dO has the output's shape
      for (int h : q_heads)
        for (int i = c.rows.begin; i < c.rows.end; ++i)
          for (int t = c.value_dims.begin; t < c.value_dims.end; ++t)
            out.dout.push_back(p.dout[at(z(b), z(d.q_heads), z(h), z(d.q_len), z(i), z(d.d_v), z(t))]);
  }
  if (out.mask_kind != MaskKind::none) {
    std::vector<int> mask_batches, mask_heads;
    for (int b = c.batch.begin; b < c.batch.end && (p.mask_batch > 1 || b == c.batch.begin); ++b)
      mask_batches.push_back(p.mask_batch == 1 ? 0 : b);
    if (p.mask_heads == 1) mask_heads.push_back(0);
    else mask_heads = q_heads;
    for (int mb : mask_batches)
      for (int mh : mask_heads)
        for (int i = c.rows.begin; i < c.rows.end; ++i)
          for (int j = c.keys.begin; j < c.keys.end; ++j)
            out.mask.push_back(p.mask[at(z(mb), z(p.mask_heads), z(mh), z(d.q_len), z(i), z(d.kv_len), z(j))]);
  }
  if (p.alibi && c.alibi) {
    Alibi alibi = *p.alibi;
    alibi.slopes.clear();
    for (int b = c.batch.begin; b < c.batch.end && (p.alibi->per_batch || b == c.batch.begin); ++b)
      for (int h : q_heads)
        alibi.slopes.push_back(p.alibi->slopes[(p.alibi->per_batch ? z(b) * z(d.q_heads) : 0) + z(h)]);
    out.alibi = std::move(alibi);
  }
  if (!p.sinks.empty() && c.sinks)
    for (int h : q_heads) out.sinks.push_back(p.sinks[z(h)]);
  if (p.descales && c.descales) {
    Descales descales;
    for (int b = c.batch.begin; b < c.batch.end; ++b)
      for (int g = c.kv_heads.begin; g < c.kv_heads.end; ++g) {
        descales.q.push_back(p.descales->q_of(b, g, d.kv_heads));
        descales.k.push_back(p.descales->k_of(b, g, d.kv_heads));
        descales.v.push_back(p.descales->v_of(b, g, d.kv_heads));
      }
    descales.applied = p.descales->applied;
    out.descales = std::move(descales);
  }
  return out;
}

std::vector<Cut> smaller_cuts(const Cut& cut, const Problem& p, HeadDims head_dims) {
  const Cut fitted = fit_cut(cut, p.dims);
  const bool together = head_dims == HeadDims::together && fitted.key_dims == fitted.value_dims;
  std::vector<Cut> cuts;
  const auto add = [&](AxisRange Cut::*axis, int begin, int end) {
    Cut smaller = fitted;
    smaller.*axis = {begin, end};
    if (together && axis == &Cut::key_dims) smaller.value_dims = smaller.key_dims;
    if (together && axis == &Cut::value_dims) return;
    if (std::find(cuts.begin(), cuts.end(), smaller) == cuts.end()) cuts.push_back(smaller);
  };
  // Most bugs need no particular head dimension, and halving 256
  // components takes eight accepted cuts, each after the failed cuts of
  // the axes before it: on a long problem that spent the whole shrink
  // budget (a ci PAGED failure stopped at S = 2094, d_v = 256). One
  // component is tried first; a bug that needs more loses one candidate.
  for (auto axis : {&Cut::key_dims, &Cut::value_dims}) {
    const AxisRange r = fitted.*axis;
    if (length(r) > 2) add(axis, r.begin, r.begin + 1);
  }
  for (auto axis : axes()) {
    const AxisRange r = fitted.*axis;
    if (length(r) < 2) continue;
    const int middle = r.begin + length(r) / 2;
    add(axis, r.begin, middle);
    add(axis, middle, r.end);
  }
  // Then ever smaller chunks off either end, so that a failure that
  // needs most of an axis still loses the rest in a few steps.
  for (auto axis : axes()) {
    const AxisRange r = fitted.*axis;
    if (length(r) < 3) continue;  // of two, either end is a half
    for (int chunk = std::max(1, length(r) / 4);; chunk /= 2) {
      add(axis, r.begin, r.end - chunk);
      add(axis, r.begin + chunk, r.end);
      if (chunk == 1) break;
    }
  }
  const auto drop = [&](bool Cut::*option, bool present) {
    if (!present || !(fitted.*option)) return;
    Cut smaller = fitted;
    smaller.*option = false;
    cuts.push_back(smaller);
  };
  drop(&Cut::mask, p.mask_kind != MaskKind::none);
  drop(&Cut::causal, p.causal != Causal::none);
  drop(&Cut::window, p.window.has_value());
  drop(&Cut::alibi, p.alibi.has_value());
  drop(&Cut::sinks, !p.sinks.empty());
  drop(&Cut::descales, p.descales.has_value());
  drop(&Cut::softcap, p.softcap.has_value());
  drop(&Cut::scale, p.scale.has_value());
  return cuts;
}

}  // namespace attnspec
