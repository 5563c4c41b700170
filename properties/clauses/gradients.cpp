// GRADPREC, GRADSUM and GRADGQA: the backward pass (spec/SPEC.md sections 2.6 and
// 6.11), against the certified gradients and against the laws every exact
// gradient obeys.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "properties/clauses/clauses.hpp"
#include "properties/generators.hpp"
#include "properties/gradient_check.hpp"

namespace attnspec {
ClauseOutcome check_gradprec(PropertyContext& context) {
  const FormatId output = context.kernel.formats().output;
  return run_property(context, [&](Problem& p, ErrorStats& stats) {
    p = draw_problem(context.kernel, context.profile, backward_features(context.kernel));
    discard_rows_not_declared(context.kernel, p);
    return gradients_outside_bound(p, evaluate_gradients(context.kernel, p), output, stats);
  });
}

// Without a softcap and sinks, each row's logit gradients sum to zero
// (sum_j w_j (dP_j - D) = D - D), so a kv head's key gradients, scale
// times sums of them times the rows' queries, sum to zero in every
// column; its value gradients sum to the dO of the rows that see a key,
// since each such row's weights sum to one. Both sums of exact gradients;
// the kernel's are within the sum of their bounds, plus this check's own
// long double summation error.
ClauseOutcome check_gradsum(PropertyContext& context) {
  const FormatId output = context.kernel.formats().output;
  const double u_out = format_info(output).unit_roundoff;
  Features features = backward_features(context.kernel);
  features.softcap = false;
  features.sinks = false;
  return run_property(context, [&](Problem& p, ErrorStats& stats) -> std::string {
    p = draw_problem(context.kernel, context.profile, features);
    discard_rows_not_declared(context.kernel, p);
    const GradientEvaluation e = evaluate_gradients(context.kernel, p);
    const Dims& d = p.dims;
    const auto S = static_cast<std::size_t>(d.kv_len), dk_w = static_cast<std::size_t>(d.d_k),
               dv_w = static_cast<std::size_t>(d.d_v);
    const int group = d.q_heads / d.kv_heads;
    constexpr long double kSumU = 0x1p-63L;  // long double sums, counted as in reference/fast_gradients.cpp
    for (int b = 0; b < d.batch; ++b)
      for (int g = 0; g < d.kv_heads; ++g) {
        const std::size_t first_key = (static_cast<std::size_t>(b) * d.kv_heads + static_cast<std::size_t>(g)) * S;
        const auto where = [&](const char* what, std::size_t t) {
          return std::string(what) + " of batch " + std::to_string(b) + ", kv head " + std::to_string(g) +
                 ", column " + std::to_string(t);
        };
        // sum_j dK_j = 0.
        for (std::size_t t = 0; t < dk_w; ++t) {
          long double sum = 0, magnitude = 0, tolerance = 0;
          for (std::size_t j = 0; j < S; ++j) {
            const std::size_t i = (first_key + j) * dk_w + t;
            sum += e.got.dk[i];
            magnitude += std::fabs(e.got.dk[i]);
            tolerance += bound_around(e.bounds.dk[i], e.got.dk[i], output);
          }
          tolerance += static_cast<long double>(S) * kSumU * magnitude * 2;
          const double off = static_cast<double>(std::fabs(sum));
          double scale = 0;
          for (std::size_t j = 0; j < S; ++j) scale += e.bounds.dk_scale[(first_key + j) * dk_w + t];
          stats.add(off, static_cast<double>(tolerance), scale, u_out);
          if (!(std::isfinite(static_cast<double>(tolerance)))) continue;  // not judged
          if (!(off <= tolerance))
            return "the key gradients sum to " + number_text(static_cast<double>(sum)) + ", not 0, in " +
                   where("dK", t) + ": more than the sum of their bounds, " +
                   number_text(static_cast<double>(tolerance));
        }
        // sum_j dV_j = sum of dO over the group's rows that see a key.
        std::vector<long double> want(dv_w, 0), want_magnitude(dv_w, 0);
        for (int h = g * group; h < (g + 1) * group; ++h)
          for (int i = 0; i < d.q_len; ++i) {
            const RowIndex r{b, h, i};
            bool sees = false;
            for (int j = 0; j < d.kv_len && !sees; ++j) sees = p.visible(r, j);
            if (!sees) continue;
            const std::size_t row = p.row_flat(r);
            for (std::size_t t = 0; t < dv_w; ++t) {
              want[t] += p.dout[row * dv_w + t];
              want_magnitude[t] += std::fabs(p.dout[row * dv_w + t]);
            }
          }
        for (std::size_t t = 0; t < dv_w; ++t) {
          long double sum = 0, magnitude = 0, tolerance = 0;
          double scale = 0;
          for (std::size_t j = 0; j < S; ++j) {
            const std::size_t i = (first_key + j) * dv_w + t;
            sum += e.got.dv[i];
            magnitude += std::fabs(e.got.dv[i]);
            tolerance += bound_around(e.bounds.dv[i], e.got.dv[i], output);
            scale += e.bounds.dv_scale[i];
          }
          tolerance += static_cast<long double>(S + static_cast<std::size_t>(d.q_len * group)) * kSumU *
                       (magnitude + want_magnitude[t]) * 2;
          const double off = static_cast<double>(std::fabs(sum - want[t]));
          stats.add(off, static_cast<double>(tolerance), scale, u_out);
          if (!(std::isfinite(static_cast<double>(tolerance)))) continue;
          if (!(off <= tolerance))
            return "the value gradients sum to " + number_text(static_cast<double>(sum)) + ", the rows' dO to " +
                   number_text(static_cast<double>(want[t])) + ", in " + where("dV", t) +
                   ": they differ by more than the sum of the bounds, " + number_text(static_cast<double>(tolerance));
        }
      }
    return "";
  });
}

// Under GQA a kv head's dK and dV are the sums over its query heads (SPEC
// 2.6): the grouped problem's against K and V repeated per query head,
// whose dK and dV are per query head; dQ and the sinks' gradients are the
// same values. Each compared value of the kernel is within its bound of
// the common exact one, so they differ by at most the sum of the bounds.
ClauseOutcome check_gradgqa(PropertyContext& context) {
  const FormatId output = context.kernel.formats().output;
  const double u_out = format_info(output).unit_roundoff;
  return run_property(context, [&](Problem& p, ErrorStats& stats) -> std::string {
    // A group of at least two query heads: one kv head read by one query
    // head has nothing to sum.
    p = draw_problem(context.kernel, context.profile, backward_features(context.kernel), [](Dims& d) {
      const int group = std::max(2, d.q_heads / d.kv_heads);
      d.q_heads = d.kv_heads * group;
    });
    discard_rows_not_declared(context.kernel, p);
    const Problem repeated = repeat_kv_heads(p);
    const GradientEvaluation grouped = evaluate_gradients(context.kernel, p);
    const GradientEvaluation apart = evaluate_gradients(context.kernel, repeated);
    const Dims& d = p.dims;
    const auto S = static_cast<std::size_t>(d.kv_len);
    const int group = d.q_heads / d.kv_heads;
    // The failing problem saved is the one outside its own bounds (one
    // must be: their exact gradients agree).
    const auto fail = [&](const std::string& what) {
      ErrorStats ignored;
      if (gradients_outside_bound(p, grouped, output, ignored).empty()) p = repeated;
      return what + " (grouped heads against K and V repeated per query head)";
    };
    for (const char name : kGradientTensors) {
      const GradientTensor mine = gradient_tensor(grouped, name), other = gradient_tensor(apart, name);
      // dQ and dsink have the same layout in both problems; key (b, g, j)
      // of the grouped problem's dK and dV is key (b, g group + c, j) of
      // the repeated one's for c < group.
      const bool per_key = name == 'K' || name == 'V';
      const auto width = static_cast<std::size_t>(name == 'V' ? d.d_v : d.d_k);
      for (std::size_t i = 0; i < mine.got.size(); ++i) {
        std::size_t first = i, stride = 0;
        int count = 1;
        if (per_key) {
          const std::size_t t = i % width, j = i / width % S, kv = i / width / S % static_cast<std::size_t>(d.kv_heads),
                            b = i / width / S / static_cast<std::size_t>(d.kv_heads);
          first = ((b * static_cast<std::size_t>(d.q_heads) + kv * static_cast<std::size_t>(group)) * S + j) * width + t;
          stride = S * width;
          count = group;
        }
        long double sum = 0, magnitude = 0;
        double tolerance = bound_around(mine.before[i], mine.got[i], output), other_size = 0;
        for (int c = 0; c < count; ++c) {
          const std::size_t o = first + static_cast<std::size_t>(c) * stride;
          sum += other.got[o];
          magnitude += std::fabs(other.got[o]);
          tolerance += bound_around(other.before[o], other.got[o], output);
          other_size += other.scale[o];
        }
        tolerance += static_cast<double>(2 * count * 0x1p-63L * magnitude);
        const double difference = static_cast<double>(std::fabs(static_cast<long double>(mine.got[i]) - sum));
        stats.add(difference, tolerance, mine.scale[i] + other_size, u_out);
        if (!std::isfinite(tolerance) || difference <= tolerance) continue;
        return fail(gradient_element_name(p, name, i) + " is " + number_text(mine.got[i]) + " grouped and sums to " +
                    number_text(static_cast<double>(sum)) + " over the repeated heads: they differ by " +
                    number_text(difference) + ", more than the bounds' " + number_text(tolerance));
      }
    }
    return "";
  });
}

}  // namespace attnspec
