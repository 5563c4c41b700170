// The merge of split results as an attention problem (reference/merge.hpp).
#include "reference/merge.hpp"

#include <cmath>
#include <stdexcept>

namespace attnspec {

std::string validate(const MergeInput& in) {
  if (in.rows < 0 || in.parts < 1 || in.d_v < 1)
    return "merge input: rows >= 0, parts >= 1 and d_v >= 1 expected";
  const std::size_t lse_size = static_cast<std::size_t>(in.parts) * static_cast<std::size_t>(in.rows);
  if (in.lse.size() != lse_size) return "merge input: lse has " + std::to_string(in.lse.size()) + " values, expected " + std::to_string(lse_size);
  if (in.out.size() != lse_size * static_cast<std::size_t>(in.d_v))
    return "merge input: out has " + std::to_string(in.out.size()) + " values, expected " +
           std::to_string(lse_size * static_cast<std::size_t>(in.d_v));
  for (int part = 0; part < in.parts; ++part)
    for (int row = 0; row < in.rows; ++row) {
      const double lse = in.lse[in.lse_index(part, row)];
      const std::string where = "part " + std::to_string(part) + " row " + std::to_string(row);
      if (std::isnan(lse) || lse == INFINITY) return "merge input: lse of " + where + " must be finite or -inf";
      for (int t = 0; t < in.d_v; ++t) {
        const double o = in.out[in.out_index(part, row, t)];
        if (!std::isfinite(o)) return "merge input: output of " + where + " must be finite";
        if (lse == -INFINITY && o != 0) return "merge input: " + where + " has no visible key (lse -inf) but outputs not 0";
      }
    }
  return "";
}

Problem merge_as_attention(const MergeInput& in) {
  if (const std::string error = validate(in); !error.empty()) throw std::invalid_argument(error);
  Problem p;
  p.dims = Dims{in.rows, 1, 1, 1, in.parts, 1, in.d_v};
  p.scale = 1.0;
  p.mask_kind = MaskKind::boolean;
  p.mask_batch = in.rows;
  p.q.assign(static_cast<std::size_t>(in.rows), 1.0);
  for (int row = 0; row < in.rows; ++row)
    for (int part = 0; part < in.parts; ++part) {
      const double lse = in.lse[in.lse_index(part, row)];
      p.k.push_back(lse == -INFINITY ? 0.0 : lse);
      p.mask.push_back(lse == -INFINITY ? 0.0 : 1.0);
      for (int t = 0; t < in.d_v; ++t) p.v.push_back(in.out[in.out_index(part, row, t)]);
    }
  return p;
}

MergeInput merge_input_of(const Problem& p) {
  const Dims& d = p.dims;
  const bool merge_form = d.q_heads == 1 && d.kv_heads == 1 && d.q_len == 1 && d.d_k == 1 && p.scale == 1.0 &&
                          !p.softcap && p.causal == Causal::none && !p.window && !p.alibi && p.sinks.empty() &&
                          !p.descales && p.mask_kind == MaskKind::boolean && p.mask_batch == d.batch && p.mask_heads == 1;
  if (!merge_form) throw std::invalid_argument("merge_input_of: not a merge's attention problem");
  for (const double q : p.q)
    if (q != 1.0) throw std::invalid_argument("merge_input_of: a merge's queries are 1");
  MergeInput in;
  in.rows = d.batch;
  in.parts = d.kv_len;
  in.d_v = d.d_v;
  in.out.assign(static_cast<std::size_t>(in.parts) * static_cast<std::size_t>(in.rows) * static_cast<std::size_t>(in.d_v), 0.0);
  in.lse.assign(static_cast<std::size_t>(in.parts) * static_cast<std::size_t>(in.rows), 0.0);
  for (int row = 0; row < in.rows; ++row)
    for (int part = 0; part < in.parts; ++part) {
      const std::size_t key = static_cast<std::size_t>(row) * static_cast<std::size_t>(in.parts) + static_cast<std::size_t>(part);
      const bool visible = p.mask[key] != 0;
      in.lse[in.lse_index(part, row)] = visible ? p.k[key] : -INFINITY;
      for (int t = 0; t < in.d_v; ++t)
        in.out[in.out_index(part, row, t)] = visible ? p.v[key * static_cast<std::size_t>(in.d_v) + static_cast<std::size_t>(t)] : 0.0;
    }
  return in;
}

}  // namespace attnspec
