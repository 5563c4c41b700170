// One row at a time: evaluate every result as an interval at the working
// precision, keep the results whose interval rounds to a single value, and
// re-evaluate the rest at twice the precision. After the first miss the
// row's exact rational forms are computed; a rational result is then
// enclosed from its exact value, which settles exact midpoints that no
// interval of the computed kind could ever exclude.
#include "reference/certified.hpp"

#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "reference/exact_row.hpp"
#include "reference/multiprecision.hpp"
#include "reference/row_exponentials.hpp"

namespace attnspec {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Enclosures of one row's results at the current working precision.
struct RowIntervals {
  std::vector<Interval> weights;  // per visible key
  std::vector<Interval> out;      // per value column
  Interval lse;
  // A key whose logit certainly exceeds the reference key's, if any.
  std::optional<std::size_t> heavier_key;
};

RowIntervals evaluate(const Problem& p, const ExactRow& row, bool want_weights, const std::vector<char>& wanted_column) {
  const std::size_t n = row.visible.size(), groups = row.representative.size();
  const RowExponentials exponentials = row_exponentials(p, row);
  const std::vector<Interval>& u = exponentials.per_group;
  const Interval& sum_u = exponentials.sum;

  RowIntervals result;
  result.heavier_key = exponentials.heavier_key;
  if (want_weights) {
    result.weights.resize(n);
    for (std::size_t j = 0; j < n; ++j) result.weights[j] = u[row.group_of[j]] / sum_u;
  }
  result.out.resize(static_cast<std::size_t>(p.dims.d_v));
  for (int t = 0; t < p.dims.d_v; ++t) {
    if (!wanted_column[static_cast<std::size_t>(t)]) continue;
    Interval numerator = 0;
    for (std::size_t g = 0; g < groups; ++g) {
      const Interval values = row.group_size[g] == 1 ? Interval(row.value(p, row.representative[g], t))
                                                     : enclose(row.value_sums[g][static_cast<std::size_t>(t)]);
      numerator += u[g] * values;
    }
    result.out[static_cast<std::size_t>(t)] = numerator / sum_u;
  }
  result.lse = reference_logit(p, row) + log(sum_u);
  return result;
}

bool column_is_finite(const Problem& p, const ExactRow& row, int t) {
  for (std::size_t j = 0; j < row.visible.size(); ++j)
    if (!std::isfinite(row.value(p, j, t))) return false;
  return true;
}

// One result of a row awaiting its correctly rounded value.
struct Pending {
  double* destination;
  enum class Kind { weight, out, lse } kind;
  std::size_t position;  // visible-key index or column
};

}  // namespace

int starting_precision(FormatId target) {
  return std::max(64, format_info(target).precision + 40);
}

RowResult certified_row(const Problem& p, RowIndex r, const ReferenceOptions& options) {
  require_real_inputs(p, "certified_row");
  const int S = p.dims.kv_len;
  RowResult result;
  result.out.assign(static_cast<std::size_t>(p.dims.d_v), 0.0);
  if (options.weights) result.weights.assign(static_cast<std::size_t>(S), 0.0);
  // -inf in the target format: NaN in float8_e4m3fn, which has no infinity.
  result.lse = round_to_format(-std::numeric_limits<double>::infinity(), options.target);

  ExactRow row = prepare_row(p, r);
  // Fully masked without a sink: exact zeros, lse -inf. (With a sink the
  // evaluation below gives exact zeros and lse = sigma.)
  if (row.visible.empty()) return result;
  if (row.nonfinite_logits) {
    for (double& o : result.out) o = kNaN;
    for (int j : row.visible)
      if (options.weights && j != kSinkKey) result.weights[static_cast<std::size_t>(j)] = kNaN;
    result.lse = kNaN;
    return result;
  }

  std::vector<Pending> pending;
  if (options.weights)
    for (std::size_t j = 0; j < row.visible.size(); ++j)
      if (row.visible[j] != kSinkKey)
        pending.push_back({&result.weights[static_cast<std::size_t>(row.visible[j])], Pending::Kind::weight, j});
  std::vector<char> wanted_column(static_cast<std::size_t>(p.dims.d_v), options.columns.empty());
  for (int t : options.columns) wanted_column.at(static_cast<std::size_t>(t)) = 1;
  for (int t = 0; t < p.dims.d_v; ++t) {
    if (!wanted_column[static_cast<std::size_t>(t)]) continue;
    if (!column_is_finite(p, row, t)) {
      result.out[static_cast<std::size_t>(t)] = kNaN;
      continue;
    }
    pending.push_back({&result.out[static_cast<std::size_t>(t)], Pending::Kind::out, static_cast<std::size_t>(t)});
  }
  pending.push_back({&result.lse, Pending::Kind::lse, 0});

  std::optional<ExactForms> forms;
  const int first_bits = options.start_precision_bits > 0 ? options.start_precision_bits : starting_precision(options.target);
  for (int bits = first_bits;; bits *= 2) {
    if (bits > options.max_precision_bits)
      throw ReferenceError("certified reference: row (batch " + std::to_string(r.batch) + ", head " +
                           std::to_string(r.head) + ", query " + std::to_string(r.query) +
                           ") still undecided at " + std::to_string(bits / 2) + " bits");
    WorkingPrecision precision(bits);
    ++result.attempts;
    result.precision_bits = bits;
    const RowIntervals intervals = evaluate(p, row, options.weights, wanted_column);
    std::vector<Pending> undecided;
    for (const Pending& item : pending) {
      const std::optional<Rational>* exact = nullptr;
      const Interval* computed = nullptr;
      switch (item.kind) {
        case Pending::Kind::weight:
          if (forms) exact = &forms->weight;
          computed = &intervals.weights[item.position];
          break;
        case Pending::Kind::out:
          if (forms) exact = &forms->out[item.position];
          computed = &intervals.out[item.position];
          break;
        case Pending::Kind::lse:
          if (forms) exact = &forms->lse;
          computed = &intervals.lse;
          break;
      }
      const bool use_exact = exact && exact->has_value();
      const std::optional<double> value =
          decide(use_exact ? enclose(**exact) : *computed, options.target);
      if (value) {
        *item.destination = *value;
        if (use_exact) ++result.exact_values;
      } else {
        undecided.push_back(item);
      }
    }
    pending = std::move(undecided);
    if (pending.empty()) return result;
    // The rough choice of reference key can miss the largest logit when two
    // huge logits agree to 70 bits; then exp(x_j - x_r) may overflow MPFR's
    // exponent range at any precision. Re-centre on the heavier key.
    if (intervals.heavier_key) row.reference_key = *intervals.heavier_key;
    if (!forms) forms = exact_forms(p, row);
  }
}

ReferenceResult certified_attention(const Problem& given, const ReferenceOptions& options) {
  std::optional<Problem> storage;
  const Problem& p = real_problem(given, storage);
  ReferenceResult result;
  result.target = options.target;
  const std::size_t rows = p.rows();
  const auto dv = static_cast<std::size_t>(p.dims.d_v);
  const auto S = static_cast<std::size_t>(p.dims.kv_len);
  result.out.resize(rows * dv);
  result.lse.resize(rows);
  if (options.weights) result.weights.resize(rows * S);
  result.stats.rows = rows;
  result.stats.start_precision_bits =
      options.start_precision_bits > 0 ? options.start_precision_bits : starting_precision(options.target);
  for (std::size_t flat = 0; flat < rows; ++flat) {
    const RowResult row = certified_row(p, p.row_index(flat), options);
    std::copy(row.out.begin(), row.out.end(), result.out.begin() + static_cast<std::ptrdiff_t>(flat * dv));
    if (options.weights)
      std::copy(row.weights.begin(), row.weights.end(), result.weights.begin() + static_cast<std::ptrdiff_t>(flat * S));
    result.lse[flat] = row.lse;
    if (row.attempts > 1) ++result.stats.refined_rows;
    result.stats.exact_values += row.exact_values;
    result.stats.max_precision_bits = std::max(result.stats.max_precision_bits, row.precision_bits);
    if (options.progress) options.progress(flat + 1, rows);
  }
  return result;
}

}  // namespace attnspec
