// The backward reference's evaluation: per row, the weights and the logit
// gradients dD_j = scale * cap'_j * w_j (dP_j - D) as intervals at the
// working precision; then dQ, dK, dV and dsigma as sums of them. Values
// whose interval rounds to one value are kept; the others are evaluated
// again at twice the precision (only the rows they read), and after the
// first miss settled from their exact form when they have one
// (gradient_exact.hpp). Non-finite inputs follow spec/SPEC.md section 2.6.
#include "reference/gradients.hpp"

#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>

#include "reference/gradient_exact.hpp"
#include "reference/row_exponentials.hpp"

namespace attnspec {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

enum class Tensor { dq, dk, dv, dsink };
constexpr const char* kTensorNames[] = {"dq", "dk", "dv", "dsink"};

// One row's contribution to the gradients at the working precision.
struct RowTerms {
  std::vector<Interval> weight;      // w_j, per visible key
  std::vector<Interval> logit_grad;  // dD_j, per visible key (unused for the sink)
  Interval sink_term;                // -w_sigma D, 0 without a sink
};

RowTerms evaluate_row(const Problem& p, ExactRow& row, const std::vector<Real>& dp) {
  RowExponentials e = row_exponentials(p, row);
  // Re-centre on a certainly larger logit: each step strictly raises x_r.
  while (e.heavier_key) {
    row.reference_key = *e.heavier_key;
    e = row_exponentials(p, row);
  }
  const std::size_t n = row.visible.size();
  std::vector<Interval> group_dp(e.per_group.size(), Interval(0));
  std::vector<Interval> dp_interval(n);
  for (std::size_t j = 0; j < n; ++j) {
    dp_interval[j] = enclose(dp[j]);
    group_dp[row.group_of[j]] += dp_interval[j];
  }
  Interval weighted = 0;
  for (std::size_t g = 0; g < e.per_group.size(); ++g) weighted += e.per_group[g] * group_dp[g];
  const Interval d = weighted / e.sum;
  const Interval scale = scale_interval(p);
  RowTerms terms;
  terms.sink_term = 0;
  terms.weight.resize(n);
  terms.logit_grad.resize(n);
  for (std::size_t j = 0; j < n; ++j) {
    terms.weight[j] = e.per_group[row.group_of[j]] / e.sum;
    if (row.visible[j] == kSinkKey) {
      terms.sink_term = -terms.weight[j] * d;
      continue;
    }
    Interval factor = scale;
    if (p.softcap) {
      // d/ds of c tanh(s/c) is 1 - tanh^2(s/c) = 1 / cosh^2(s/c).
      const Interval c = cosh(scale * enclose(row.dot[j]) / Interval(*p.softcap));
      factor /= c * c;
    }
    terms.logit_grad[j] = factor * terms.weight[j] * (dp_interval[j] - d);
  }
  return terms;
}

// The values of one tensor still awaiting their correctly rounded value.
struct Pending {
  Tensor tensor;
  std::size_t index;
};

}  // namespace

GradientResult certified_gradients(const Problem& p, const GradientOptions& options) {
  require_real_inputs(p, "certified_gradients");
  if (p.descales) throw std::invalid_argument("certified_gradients: a backward problem carries no descale factors");
  std::vector<BackwardRow> rows = prepare_backward_rows(p);
  const Dims& d = p.dims;
  const auto B = static_cast<std::size_t>(d.batch), Hkv = static_cast<std::size_t>(d.kv_heads),
             S = static_cast<std::size_t>(d.kv_len), dk_width = static_cast<std::size_t>(d.d_k),
             dv_width = static_cast<std::size_t>(d.d_v);
  const auto key_block = [&](std::size_t b, std::size_t g, std::size_t j) { return (b * Hkv + g) * S + j; };

  GradientResult result;
  result.target = options.target;
  result.dq.assign(rows.size() * dk_width, 0.0);
  result.dk.assign(B * Hkv * S * dk_width, 0.0);
  result.dv.assign(B * Hkv * S * dv_width, 0.0);
  if (!p.sinks.empty()) result.dsink.assign(static_cast<std::size_t>(d.q_heads), 0.0);
  std::vector<double>* tensors[] = {&result.dq, &result.dk, &result.dv, &result.dsink};

  // What each value depends on: a value no visible pair reaches is exactly
  // 0; one a poisoned row reaches is NaN; the rest wait for the intervals.
  std::vector<char> dk_seen(B * Hkv * S, 0), dk_nan(B * Hkv * S, 0), dv_nan(result.dv.size(), 0);
  std::vector<char> dsink_reached(result.dsink.size(), 0), dsink_nan(result.dsink.size(), 0);
  std::vector<Pending> pending;
  for (std::size_t flat = 0; flat < rows.size(); ++flat) {
    const BackwardRow& row = rows[flat];
    if (!row.has_real_key) continue;
    const RowIndex r = row.exact.index;
    const auto head = static_cast<std::size_t>(r.head);
    if (row.has_sink) {
      dsink_reached[head] = 1;
      if (row.poisoned) dsink_nan[head] = 1;
    }
    for (std::size_t t = 0; t < dk_width; ++t) {
      if (row.poisoned) result.dq[flat * dk_width + t] = kNaN;
      else pending.push_back({Tensor::dq, flat * dk_width + t});
    }
    for (int j : row.exact.visible) {
      if (j == kSinkKey) continue;
      const std::size_t block = key_block(static_cast<std::size_t>(r.batch), static_cast<std::size_t>(row.exact.kv_head),
                                          static_cast<std::size_t>(j));
      dk_seen[block] = 1;
      if (row.poisoned) dk_nan[block] = 1;
      for (std::size_t t = 0; t < dv_width; ++t)
        if (row.exact.nonfinite_logits || !std::isfinite(p.dout[flat * dv_width + t])) dv_nan[block * dv_width + t] = 1;
    }
  }
  for (std::size_t block = 0; block < dk_seen.size(); ++block) {
    if (!dk_seen[block]) continue;
    for (std::size_t t = 0; t < dk_width; ++t) {
      if (dk_nan[block]) result.dk[block * dk_width + t] = kNaN;
      else pending.push_back({Tensor::dk, block * dk_width + t});
    }
    for (std::size_t t = 0; t < dv_width; ++t) {
      if (dv_nan[block * dv_width + t]) result.dv[block * dv_width + t] = kNaN;
      else pending.push_back({Tensor::dv, block * dv_width + t});
    }
  }
  for (std::size_t h = 0; h < result.dsink.size(); ++h) {
    if (dsink_nan[h]) result.dsink[h] = kNaN;
    else if (dsink_reached[h]) pending.push_back({Tensor::dsink, h});
  }
  result.stats.values = result.dq.size() + result.dk.size() + result.dv.size() + result.dsink.size();
  const std::size_t first_pending = pending.size();
  std::size_t nan_values = 0;
  for (const std::vector<double>* tensor : tensors)
    for (double x : *tensor) nan_values += std::isnan(x) ? 1 : 0;
  result.stats.exact_values = result.stats.values - first_pending - nan_values;

  GradientExactForms exact_forms(p, rows);
  std::vector<std::optional<std::optional<Rational>>> forms;  // per pending value, once asked
  const int first_bits = options.start_precision_bits > 0 ? options.start_precision_bits : starting_precision(options.target);
  for (int bits = first_bits; !pending.empty(); bits *= 2) {
    if (bits > options.max_precision_bits) {
      const Pending& item = pending.front();
      throw ReferenceError("certified gradients: " + std::string(kTensorNames[static_cast<int>(item.tensor)]) + "[" +
                           std::to_string(item.index) + "] (flat index) still undecided at " + std::to_string(bits / 2) +
                           " bits");
    }
    WorkingPrecision precision(bits);
    result.stats.max_precision_bits = bits;

    // The rows the pending values read, and where each value accumulates.
    std::vector<char> needed(rows.size(), 0);
    std::vector<std::vector<long>> slot(4);
    for (int tensor = 0; tensor < 4; ++tensor) slot[tensor].assign(tensors[tensor]->size(), -1);
    std::vector<Interval> sums(pending.size(), Interval(0));
    std::vector<char> block_wanted(dk_seen.size(), 0), head_wanted(result.dsink.size(), 0);
    for (std::size_t idx = 0; idx < pending.size(); ++idx) {
      const Pending& item = pending[idx];
      slot[static_cast<int>(item.tensor)][item.index] = static_cast<long>(idx);
      switch (item.tensor) {
        case Tensor::dq: needed[item.index / dk_width] = 1; break;
        case Tensor::dk: block_wanted[item.index / dk_width] = 1; break;
        case Tensor::dv: block_wanted[item.index / dv_width] = 1; break;
        case Tensor::dsink: head_wanted[item.index] = 1; break;
      }
    }
    for (std::size_t flat = 0; flat < rows.size(); ++flat) {
      const BackwardRow& row = rows[flat];
      if (!row.has_real_key || row.exact.nonfinite_logits) continue;
      if (row.has_sink && head_wanted[static_cast<std::size_t>(row.exact.index.head)]) needed[flat] = 1;
      for (int j : row.exact.visible)
        if (j != kSinkKey && block_wanted[key_block(static_cast<std::size_t>(row.exact.index.batch),
                                                    static_cast<std::size_t>(row.exact.kv_head), static_cast<std::size_t>(j))])
          needed[flat] = 1;
    }

    for (std::size_t flat = 0; flat < rows.size(); ++flat) {
      if (!needed[flat]) continue;
      BackwardRow& row = rows[flat];
      const RowIndex r = row.exact.index;
      const std::span<const double> dout(p.dout.data() + flat * dv_width, dv_width);
      const std::span<const double> q = p.query_row(r);
      // A dP-poisoned row still has finite weights: its dV terms count.
      std::optional<RowTerms> terms;
      if (row.poisoned) {
        std::vector<Real> zeros(row.exact.visible.size());
        for (Real& z : zeros) z = 0;
        terms = evaluate_row(p, row.exact, zeros);
      } else {
        terms = evaluate_row(p, row.exact, row.dp);
      }
      if (row.has_sink && !row.poisoned) {
        const long s = slot[static_cast<int>(Tensor::dsink)].empty() ? -1
                                                                    : slot[static_cast<int>(Tensor::dsink)][static_cast<std::size_t>(r.head)];
        if (s >= 0) sums[static_cast<std::size_t>(s)] += terms->sink_term;
      }
      for (std::size_t j = 0; j < row.exact.visible.size(); ++j) {
        const int key = row.exact.visible[j];
        if (key == kSinkKey) continue;
        const std::size_t block = key_block(static_cast<std::size_t>(r.batch), static_cast<std::size_t>(row.exact.kv_head),
                                            static_cast<std::size_t>(key));
        const std::span<const double> k = p.key_row(r.batch, row.exact.kv_head, key);
        for (std::size_t t = 0; t < dk_width; ++t) {
          if (row.poisoned) break;
          const long in_dq = slot[static_cast<int>(Tensor::dq)][flat * dk_width + t];
          if (in_dq >= 0 && k[t] != 0.0) sums[static_cast<std::size_t>(in_dq)] += terms->logit_grad[j] * Interval(k[t]);
          const long in_dk = slot[static_cast<int>(Tensor::dk)][block * dk_width + t];
          if (in_dk >= 0 && q[t] != 0.0) sums[static_cast<std::size_t>(in_dk)] += terms->logit_grad[j] * Interval(q[t]);
        }
        for (std::size_t t = 0; t < dv_width; ++t) {
          const long in_dv = slot[static_cast<int>(Tensor::dv)][block * dv_width + t];
          if (in_dv >= 0 && dout[t] != 0.0) sums[static_cast<std::size_t>(in_dv)] += terms->weight[j] * Interval(dout[t]);
        }
      }
    }

    const bool first_round = bits == first_bits;
    if (!first_round && forms.empty()) forms.resize(pending.size());
    std::vector<Pending> undecided;
    std::vector<std::optional<std::optional<Rational>>> undecided_forms;
    for (std::size_t idx = 0; idx < pending.size(); ++idx) {
      const Pending& item = pending[idx];
      std::optional<Rational> exact;
      if (!first_round) {
        if (!forms[idx]) {
          switch (item.tensor) {
            case Tensor::dq: forms[idx] = exact_forms.dq(item.index / dk_width, static_cast<int>(item.index % dk_width)); break;
            case Tensor::dk: {
              const std::size_t block = item.index / dk_width;
              forms[idx] = exact_forms.dk(static_cast<int>(block / S / Hkv), static_cast<int>(block / S % Hkv),
                                          static_cast<int>(block % S), static_cast<int>(item.index % dk_width));
              break;
            }
            case Tensor::dv: {
              const std::size_t block = item.index / dv_width;
              forms[idx] = exact_forms.dv(static_cast<int>(block / S / Hkv), static_cast<int>(block / S % Hkv),
                                          static_cast<int>(block % S), static_cast<int>(item.index % dv_width));
              break;
            }
            case Tensor::dsink: forms[idx] = exact_forms.dsink(static_cast<int>(item.index)); break;
          }
        }
        exact = *forms[idx];
      }
      const std::optional<double> value = decide(exact ? enclose(*exact) : sums[idx], options.target);
      if (value) {
        (*tensors[static_cast<int>(item.tensor)])[item.index] = *value;
        if (exact) ++result.stats.exact_values;
        if (!first_round) ++result.stats.refined_values;
      } else {
        undecided.push_back(item);
        if (!first_round) undecided_forms.push_back(forms[idx]);
      }
    }
    pending = std::move(undecided);
    forms = std::move(undecided_forms);
  }
  return result;
}

}  // namespace attnspec
