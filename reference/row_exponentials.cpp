// See row_exponentials.hpp.
#include "reference/row_exponentials.hpp"

namespace attnspec {
namespace {

// Softcapped difference c*tanh(a) - c*tanh(b) with a = s*d_j/c, b = s*d_r/c.
// For moderate arguments tanh(a) - tanh(b) = sinh(a-b) / (cosh a cosh b)
// avoids the cancellation of two nearly equal tanh values; for huge ones
// cosh overflows and tanh is saturated anyway, so subtract directly.
Interval capped_difference(const Interval& scale, const Interval& cap, const Real& dot_j, const Real& dot_r) {
  const Interval a = scale * enclose(dot_j) / cap;
  const Interval b = scale * enclose(dot_r) / cap;
  const Interval a_minus_b = scale * enclose_difference(dot_j, dot_r) / cap;
  const double limit = 64;  // cosh(64) ~ e^64: cheap; beyond, tanh is saturated to 2^-180
  if (abs(upper(a)) < limit && abs(upper(b)) < limit && abs(lower(a)) < limit && abs(lower(b)) < limit)
    return cap * sinh(a_minus_b) / (cosh(a) * cosh(b));
  return cap * (tanh(a) - tanh(b));
}

}  // namespace

Interval scale_interval(const Problem& p) {
  return p.scale ? Interval(*p.scale) : Interval(1) / sqrt(Interval(p.dims.d_k));
}

RowExponentials row_exponentials(const Problem& p, const ExactRow& row) {
  const std::size_t groups = row.representative.size();
  const std::size_t r = row.reference_key;
  const Interval scale = scale_interval(p);
  const std::optional<Interval> cap = p.softcap ? std::optional<Interval>(Interval(*p.softcap)) : std::nullopt;
  RowExponentials result;
  result.per_group.resize(groups);
  result.sum = 0;
  for (std::size_t g = 0; g < groups; ++g) {
    const std::size_t j = row.representative[g];
    Interval delta = cap ? capped_difference(scale, *cap, row.dot[j], row.dot[r])
                         : scale * enclose_difference(row.dot[j], row.dot[r]);
    delta += enclose_difference(row.additive[j], row.additive[r]);
    result.per_group[g] = exp(delta);
    result.sum += result.per_group[g] * Interval(row.group_size[g]);
  }
  for (std::size_t g = 0; g < groups; ++g) {
    const Interval& u = result.per_group[g];
    if (lower(u) > 1 && (!result.heavier_key || lower(u) > lower(result.per_group[row.group_of[*result.heavier_key]])))
      result.heavier_key = row.representative[g];
  }
  return result;
}

Interval reference_logit(const Problem& p, const ExactRow& row) {
  Interval x = scale_interval(p) * enclose(row.dot[row.reference_key]);
  if (p.softcap) x = Interval(*p.softcap) * tanh(x / Interval(*p.softcap));
  return x + enclose(row.additive[row.reference_key]);
}

}  // namespace attnspec
