// What the backward reference knows exactly, whatever the working
// precision: each row's visible keys and exact dP = dO . V_j, and, on
// demand, which gradient values are exactly zero or rational (spec/SPEC.md
// section 5, step 6). An interval never decides an exact zero (its sign stays
// open) nor a rational on a rounding boundary; these forms settle both.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <vector>

#include "reference/exact_row.hpp"
#include "reference/multiprecision.hpp"
#include "reference/problem.hpp"

namespace attnspec {

struct BackwardRow {
  ExactRow exact;        // visible keys, the sink last
  std::vector<Real> dp;  // dO . V_j exactly, per visible key (0 for the sink)
  bool has_sink = false;
  bool has_real_key = false;
  // A non-finite logit or dP: the row's dQ and its keys' dK are NaN.
  bool poisoned = false;
};

// One entry per row of p (flat order); p must carry dout.
std::vector<BackwardRow> prepare_backward_rows(const Problem& p);

// The position of key j in a row's visible list, if the row sees it.
std::optional<std::size_t> visible_position(const ExactRow& row, int key);

class GradientExactForms {
 public:
  GradientExactForms(const Problem& p, const std::vector<BackwardRow>& rows);

  // The exact value when it is known to be rational (zero included), else
  // nullopt. Indices as in GradientResult.
  std::optional<Rational> dq(std::size_t row, int t);
  std::optional<Rational> dk(int batch, int kv_head, int key, int t);
  std::optional<Rational> dv(int batch, int kv_head, int key, int t);
  std::optional<Rational> dsink(int head);

 private:
  // Exact facts of one row, or of identical rows (same batch, kv head,
  // query, visible keys, additive terms and sink) with their dO summed:
  // their contributions to dK, dV and dsigma then add as one row's do.
  struct Facts {
    LogitClasses classes;
    // The dP fields are empty when a dP is not finite (then only dV is asked).
    std::vector<Rational> dp;        // per visible key
    std::vector<Rational> class_dp;  // per class: the sum of its dP
    bool single_class = false;
    std::vector<char> dx_zero;       // per visible key: dX_j = 0 exactly
    bool d_zero = false;             // D = 0 exactly
    std::vector<Rational> dx;        // per visible key, when single_class
    std::vector<Rational> dout;      // the (summed) dO row
  };
  Facts facts_of(const std::vector<std::size_t>& members) const;
  const Facts& row_facts(std::size_t row);
  // Rows of (batch, kv head) that see `key`, grouped as identical rows.
  std::vector<const Facts*> groups_seeing(int batch, int kv_head, int key, std::vector<std::size_t>* representatives);
  // The value scale * T, exactly when it is rational.
  std::optional<Rational> scaled(const Rational& t) const;

  const Problem& p_;
  const std::vector<BackwardRow>& rows_;
  std::optional<Rational> scale_;
  std::map<std::size_t, Facts> row_facts_;
  // Per (batch, kv head): identical-row groups, each with its facts.
  std::map<std::size_t, std::vector<std::pair<std::vector<std::size_t>, Facts>>> blocks_;
};

}  // namespace attnspec
