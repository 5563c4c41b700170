// SCALE, ROWSUM, CONVEX, UNIFORM, SHIFT, TEMP and SOFTCAP: laws of the
// scaled softmax, each checked against the certified reference or between
// two related runs (spec/SPEC.md section 7).
#include <rapidcheck.h>

#include <cmath>

#include "properties/clauses/clauses.hpp"
#include "properties/generators.hpp"
#include "properties/harness.hpp"

namespace attnspec {
namespace {

// V = identity on the first S value columns (d_v >= S): outputs reveal the
// weights. Returns false when d_v < S.
bool set_identity_values(Problem& p) {
  const auto S = static_cast<std::size_t>(p.dims.kv_len), dv = static_cast<std::size_t>(p.dims.d_v);
  if (dv < S) return false;
  std::fill(p.v.begin(), p.v.end(), 0.0);
  for (std::size_t block = 0; block < p.v.size() / (S * dv); ++block)
    for (std::size_t j = 0; j < S; ++j) p.v[(block * S + j) * dv + j] = 1.0;
  return true;
}

// Room for V = identity: d_v = S, and d_k = S too if the kernel needs d_v == d_k.
std::function<void(Dims&)> values_as_wide_as_keys(const Kernel& kernel) {
  const bool dv_free = kernel.capabilities().dv_ne_dk;
  const bool keys_cover_rows = kernel.capabilities().kv_len_at_least_q_len;
  return [dv_free, keys_cover_rows](Dims& d) {
    d.kv_len = std::min(d.kv_len, 16);
    if (keys_cover_rows) d.q_len = std::min(d.q_len, d.kv_len);
    d.d_v = d.kv_len;
    if (!dv_free) d.d_k = d.kv_len;
  };
}

bool all_representable(const std::vector<double>& values, FormatId format) {
  for (double x : values)
    if (!is_representable(x, format)) return false;
  return true;
}

// -y ln y, and the largest change of it for y within `bound` of w.
double entropy_term(double y) { return y > 0 ? -y * std::log(y) : 0.0; }
double entropy_term_change(double w, double bound) {
  const double low = std::max(0.0, w - bound), high = std::min(1.0, w + bound);
  double change = std::max(std::fabs(entropy_term(low) - entropy_term(w)), std::fabs(entropy_term(high) - entropy_term(w)));
  const double peak = 1 / std::exp(1.0);  // -y ln y is largest at 1/e
  if (low < peak && peak < high) change = std::max(change, std::fabs(entropy_term(peak) - entropy_term(w)));
  return change;
}

// "" unless the kernel's weights at scale s/2 have less entropy than at s by
// more than the two runs' entropy errors allow.
std::string entropy_falls(Kernel& kernel, Problem p, Problem& drawn) {
  // Logits not proportional to the scale, or a sink (which the scale
  // does not touch) in the distribution.
  if (p.softcap || p.mask_kind == MaskKind::additive || p.alibi || !p.sinks.empty()) return "";
  if (p.dims.kv_len > 64) return "";                               // V = identity would be too wide
  p.dims.d_v = p.dims.kv_len;
  if (p.dims.d_v != p.dims.d_k && !kernel.capabilities().dv_ne_dk) return "";
  p.v.assign(static_cast<std::size_t>(p.dims.batch) * p.dims.kv_heads * p.dims.kv_len * p.dims.d_v, 0.0);
  set_identity_values(p);
  if (p.descales) std::fill(p.descales->v.begin(), p.descales->v.end(), 1.0);  // outputs: the weights themselves
  const double s = p.scale ? *p.scale : 1.0 / std::sqrt(static_cast<double>(p.dims.d_k));
  Problem cooler = p, warmer = p;
  cooler.scale = s;
  warmer.scale = s / 2;
  const Evaluation a = evaluate(kernel, cooler), b = evaluate(kernel, warmer);
  const auto S = static_cast<std::size_t>(p.dims.kv_len);
  for (std::size_t row = 0; row < p.rows(); ++row) {
    double h_cool = 0, h_warm = 0, slack = 0;
    for (std::size_t j = 0; j < S; ++j) {
      const std::size_t i = row * S + j;
      h_cool += entropy_term(a.got.out[i]);
      h_warm += entropy_term(b.got.out[i]);
      slack += entropy_term_change(a.ref.out[i], a.bound[i]) + entropy_term_change(b.ref.out[i], b.bound[i]);
    }
    if (!(h_warm >= h_cool - slack)) {
      ErrorStats ignored;  // one of the two runs must be outside its bound: save that one
      drawn = outside_bound(cooler, a, output_unit(kernel), ignored).empty() ? warmer : cooler;
      return "row " + std::to_string(row) + ": entropy " + std::to_string(h_warm) + " at scale " + std::to_string(s / 2) +
             " is below " + std::to_string(h_cool) + " at scale " + std::to_string(s) + " by more than " +
             std::to_string(slack);
    }
  }
  return "";
}

}  // namespace

ClauseOutcome check_scale(PropertyContext& context) {
  const double u_out = output_unit(context.kernel);
  const bool gqa = context.kernel.capabilities().gqa;
  return run_property(context, [&](Problem& p, ErrorStats& stats) {
    // Several query heads: sqrt(d_model) = sqrt(Hq d_k) differs from sqrt(d_k).
    p = draw_problem(context.kernel, context.profile, Features{}, [gqa](Dims& d) {
      if (d.q_heads < 2) {
        d.kv_heads = gqa ? 1 : 2;
        d.q_heads = 2;
      }
    });
    return outside_bound(p, evaluate(context.kernel, p), u_out, stats);
  });
}

ClauseOutcome check_rowsum(PropertyContext& context) {
  const double u_out = output_unit(context.kernel);
  // V = identity caps S at 16 (spec/SPEC.md section 7.1): no long rows.
  std::erase(context.expected_shapes, ShapeClass::long_rows);
  Features sinkless;  // a sink takes its share of the weights: they sum to 1 - w_sink (SINK's)
  sinkless.sinks = false;
  return run_property(context, [&](Problem& p, ErrorStats& stats) -> std::string {
    p = draw_problem(context.kernel, context.profile, sinkless, values_as_wide_as_keys(context.kernel));
    std::fill(p.v.begin(), p.v.end(), 1.0);  // every output of a row with a visible key is exactly 1
    if (std::string f = outside_bound(p, evaluate(context.kernel, p), u_out, stats); !f.empty()) return "V = ones: " + f;
    if (!set_identity_values(p)) return "";
    const Evaluation e = evaluate(context.kernel, p);
    for (std::size_t i = 0; i < e.got.out.size(); ++i)
      if (!(e.got.out[i] >= 0)) return "V = identity: weight at " + element_name(p, i) + " is " + std::to_string(e.got.out[i]);
    return outside_bound(p, e, u_out, stats);
  });
}

ClauseOutcome check_convex(PropertyContext& context) {
  const double u_out = output_unit(context.kernel);
  return run_property(context, [&](Problem& p, ErrorStats& stats) -> std::string {
    p = draw_problem(context.kernel, context.profile, Features{});
    const Evaluation e = evaluate(context.kernel, p);
    std::optional<Problem> storage;
    const Problem& real = real_problem(p, storage);  // the values times v's descales
    const auto dv = static_cast<std::size_t>(p.dims.d_v);
    for (std::size_t row = 0; row < p.rows(); ++row) {
      const RowIndex r = p.row_index(row);
      for (std::size_t t = 0; t < dv; ++t) {
        double low = INFINITY, high = -INFINITY;
        for (int j = 0; j < p.dims.kv_len; ++j) {
          if (!p.visible(r, j)) continue;
          const double v = real.value_row(r.batch, p.kv_head_of(r.head), j)[t];
          low = std::min(low, v);
          high = std::max(high, v);
        }
        if (low > high) continue;  // no visible key: FULLMASK's
        if (p.sink(r)) {  // the sink is one more term, with value 0
          low = std::min(low, 0.0);
          high = std::max(high, 0.0);
        }
        const std::size_t i = row * dv + t;
        const double got = e.got.out[i];
        stats.add(std::max({0.0, low - got, got - high}), e.bound[i], e.scale[i], u_out);
        if (!(got >= low - e.bound[i] && got <= high + e.bound[i]))
          return element_name(p, i) + " is " + std::to_string(got) + ", outside [" + std::to_string(low) + ", " +
                 std::to_string(high) + "] widened by the bound " + std::to_string(e.bound[i]);
      }
    }
    return "";
  });
}

ClauseOutcome check_uniform(PropertyContext& context) {
  const double u_out = output_unit(context.kernel);
  // Finite additive mask values or ALiBi biases would make the logits
  // unequal, and a sink unequal to them the weights non-uniform.
  Features plain;
  plain.additive_mask = plain.alibi = plain.sinks = false;
  return run_property(context, [&](Problem& p, ErrorStats& stats) -> std::string {
    p = draw_problem(context.kernel, context.profile, plain);
    const Problem original = p;
    std::fill(p.q.begin(), p.q.end(), 0.0);  // a zero query
    if (std::string f = outside_bound(p, evaluate(context.kernel, p), u_out, stats); !f.empty()) return "zero query: " + f;
    p = original;  // identical keys: key 0 of each kv head everywhere
    const auto dk = static_cast<std::size_t>(p.dims.d_k), S = static_cast<std::size_t>(p.dims.kv_len);
    for (std::size_t head = 0; head < p.k.size() / (S * dk); ++head)
      for (std::size_t j = 1; j < S; ++j)
        std::copy_n(p.k.begin() + static_cast<std::ptrdiff_t>(head * S * dk), dk,
                    p.k.begin() + static_cast<std::ptrdiff_t>((head * S + j) * dk));
    if (std::string f = outside_bound(p, evaluate(context.kernel, p), u_out, stats); !f.empty()) return "identical keys: " + f;
    return "";
  });
}

ClauseOutcome check_shift(PropertyContext& context) {
  const double u_out = output_unit(context.kernel);
  const FormatInfo& acc = format_info(context.kernel.formats().accumulate);
  Features unmasked = Features{};
  unmasked.bool_mask = unmasked.additive_mask = false;
  unmasked.sinks = false;  // a sink does not move with the row's logits
  return run_property(context, [&](Problem& p, ErrorStats& stats) -> std::string {
    p = draw_problem(context.kernel, context.profile, unmasked);
    const Problem plain = p;
    const Evaluation base = evaluate(context.kernel, plain);
    // A constant per row, through a full-shape additive mask.
    p.mask_kind = MaskKind::additive;
    p.mask_batch = p.dims.batch;
    p.mask_heads = p.dims.q_heads;
    p.mask.resize(p.rows() * static_cast<std::size_t>(p.dims.kv_len));
    for (std::size_t row = 0; row < p.rows(); ++row) {
      const double shift = std::ldexp(draw_in(-8, 8), draw_in(-2, 6));
      std::fill_n(p.mask.begin() + static_cast<std::ptrdiff_t>(row * p.dims.kv_len), p.dims.kv_len, shift);
    }
    const Problem shifted_problem = p;
    const Evaluation shifted = evaluate(context.kernel, shifted_problem);
    if (std::string f = related(p, plain, base, shifted_problem, shifted, same_index(p.out_size()), "row shift", u_out, stats);
        !f.empty())
      return f;
    // Large logits: scale the queries by a power of two until the largest
    // logit nears 4 ln(max finite) of the accumulation format.
    p = plain;
    const double s = p.scale ? *p.scale : 1.0 / std::sqrt(static_cast<double>(p.dims.d_k));
    double largest = 0;
    std::optional<Problem> storage;
    const Problem& real = real_problem(p, storage);  // the logits of the real inputs
    for (std::size_t row = 0; row < p.rows(); ++row) {
      const RowIndex r = p.row_index(row);
      for (int j = 0; j < p.dims.kv_len; ++j) {
        double dot = 0;
        const auto q = real.query_row(r);
        const auto k = real.key_row(r.batch, p.kv_head_of(r.head), j);
        for (int t = 0; t < p.dims.d_k; ++t) dot += q[t] * k[t];
        largest = std::max(largest, std::fabs(s * dot));
      }
    }
    if (largest == 0 || p.softcap) return "";
    const int exponent = static_cast<int>(std::floor(std::log2(4 * std::log(acc.max_finite) / largest)));
    for (double& x : p.q) x = std::ldexp(x, exponent);
    if (!all_representable(p.q, context.kernel.formats().input)) return "";
    if (std::string f = outside_bound(p, evaluate(context.kernel, p), u_out, stats); !f.empty())
      return "large logits: " + f;
    return "";
  });
}

ClauseOutcome check_temp(PropertyContext& context) {
  const double u_out = output_unit(context.kernel);
  const FormatId input = context.kernel.formats().input;
  return run_property(context, [&](Problem& p, ErrorStats& stats) -> std::string {
    p = draw_problem(context.kernel, context.profile, Features{});
    const double s = std::ldexp(draw_in(1, 8), draw_in(-4, 0));
    const int power = draw_in(-2, 2);
    Problem scaled_query = p;
    scaled_query.scale = s;
    for (double& x : scaled_query.q) x = std::ldexp(x, power);
    if (!all_representable(scaled_query.q, input)) throw NothingChecked("2^k Q is not representable in the input format");
    p.scale = std::ldexp(s, power);
    const Problem rescaled = p;
    const Evaluation a = evaluate(context.kernel, scaled_query), b = evaluate(context.kernel, rescaled);
    if (std::string f = related(p, scaled_query, a, rescaled, b, same_index(p.out_size()),
                                "scale s with 2^" + std::to_string(power) + " Q against scale 2^" +
                                    std::to_string(power) + " s",
                                u_out, stats);
        !f.empty())
      return f;
    // Entropy: with V = identity the outputs are the weights; halving the
    // scale must not lower the entropy, beyond what the bounds allow.
    if (std::string f = entropy_falls(context.kernel, p, p); !f.empty()) return f;
    // The limits: a huge scale gives the argmax, a tiny one uniform weights,
    // each as the certified reference says.
    for (const double limit : {std::ldexp(1.0, 12), std::ldexp(1.0, -24)}) {
      p.scale = limit;
      p.softcap.reset();
      if (std::string f = outside_bound(p, evaluate(context.kernel, p), u_out, stats); !f.empty())
        return "scale " + std::to_string(limit) + ": " + f;
    }
    return "";
  });
}

ClauseOutcome check_softcap(PropertyContext& context) {
  const double u_out = output_unit(context.kernel);
  return run_property(context, [&](Problem& p, ErrorStats& stats) {
    p = draw_problem(context.kernel, context.profile, Features{});
    p.softcap = std::ldexp(draw_in(1, 8), draw_in(-2, 1));  // logits well past the cap
    return outside_bound(p, evaluate(context.kernel, p), u_out, stats);
  });
}

}  // namespace attnspec
