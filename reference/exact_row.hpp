// What the reference knows about one query row before choosing a working
// precision: which keys are visible, their dot products computed exactly,
// and, when asked, the exact rational value of each result that is rational
// (spec/SPEC.md §5, step 4).
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "reference/multiprecision.hpp"
#include "reference/problem.hpp"

namespace attnspec {

// A row's sink (spec/SPEC.md section 2.3) is one more term of its
// softmax: exactly a key with q . k = 0 (so a logit of 0 whatever the scale
// and softcap), additive term sigma and a value row of zeros, whose weight
// is not an output. The row holds it as such a key, after the real ones,
// at position kSinkKey; everything below then needs no case of its own.
inline constexpr int kSinkKey = -1;

struct ExactRow {
  RowIndex index;
  int kv_head = 0;
  std::vector<int> visible;   // key positions, ascending; then kSinkKey if the row has a sink
  std::vector<Real> dot;      // exact q . k_j for each visible key
  std::vector<Real> additive;  // each visible key's mask value plus ALiBi bias, exactly
  bool nonfinite_logits = false;   // a NaN or infinity in q or a visible key
  std::size_t reference_key = 0;   // index into `visible` of a largest logit

  // Keys with equal dot products and additive terms have equal logits; the
  // evaluation treats each such group as one term, with its values summed
  // exactly, so that tied keys cancel exactly instead of within rounding.
  std::vector<std::size_t> group_of;        // per visible key
  std::vector<std::size_t> representative;  // per group: its first visible key
  std::vector<long> group_size;
  std::vector<std::vector<Real>> value_sums;  // per group of two or more: exact column sums

  // V[visible[j]][t], or 0 for the sink.
  double value(const Problem& p, std::size_t j, int t) const {
    return visible[j] == kSinkKey ? 0.0 : p.value_row(index.batch, kv_head, visible[j])[static_cast<std::size_t>(t)];
  }
};

ExactRow prepare_row(const Problem& p, RowIndex r);

// The exact dot product of two double vectors, at a precision that covers
// the whole exponent span of the products; NaN if an input is not finite.
Real exact_dot(std::span<const double> a, std::span<const double> b);

// A logit's exact identity: (r * x, 0) when the logits are rational (scale
// 1/r or an explicit one, no softcap), else (q . k, mask + bias).
using LogitKey = std::pair<Rational, Rational>;

// A row's visible keys (the sink included) by exactly equal logits.
struct LogitClasses {
  std::vector<std::size_t> of;   // per visible key: its class
  std::vector<LogitKey> key;     // per class, ascending
  std::vector<long> size;        // per class
  // Without softcap keys are linear in the logits: x_a + x_b = x_c + x_d
  // iff key_a + key_b = key_c + key_d (the backward's pair sums need it).
  bool keys_add_like_logits = false;
};

LogitClasses exact_logit_classes(const Problem& p, const ExactRow& row);

// The scale as an exact rational: an explicit scale, or 1/sqrt(d_k) for a
// perfect square d_k; nullopt when it is irrational.
std::optional<Rational> rational_scale(const Problem& p);

struct ExactForms {
  std::optional<Rational> weight;            // the common weight 1/n of every visible key
  std::vector<std::optional<Rational>> out;  // per value column
  std::optional<Rational> lse;
};

ExactForms exact_forms(const Problem& p, const ExactRow& row);

}  // namespace attnspec
