// The precision model of spec/SPEC.md section 6: for a kernel class
// (accumulation and output formats) and one query row, the a priori bound
// on the error of each output element and of the lse. Every tolerance of
// the suite comes from here.
#pragma once

#include <cmath>
#include <optional>
#include <span>
#include <vector>

#include "adapters/kernel.hpp"
#include "formats/format.hpp"
#include "reference/problem.hpp"

namespace attnspec {

struct FormatClass {
  FormatId accumulate = FormatId::float32;
  FormatId output = FormatId::float32;
  std::optional<FormatId> weights;  // P rounded to this for P V, times weights_scale (SPEC 6.4)
  double weights_scale = 1;
  // The accumulator is x87 extended precision, not `accumulate`: the
  // reference's own long double evaluations (reference/fast_gradients.hpp)
  // bound themselves with this model (accumulator_arithmetic).
  bool extended_accumulator = false;
};

// u and the smallest normal number of a class's accumulator (0 for the
// x87 format, whose normal range reaches far below any double).
struct Arithmetic {
  double unit_roundoff = 0, min_normal = 0;
};
Arithmetic accumulator_arithmetic(const FormatClass& formats);

// What the model needs of a kernel's declaration.
inline FormatClass format_class(const KernelFormats& f) {
  return FormatClass{f.accumulate, f.output, f.weights, f.weights_scale};
}

struct RowBound {
  std::vector<double> out;    // B_t: absolute bound per output element (SPEC 6.5)
  std::vector<double> scale;  // sum_j w_j |V[j][t]|: the element's |P||V| (SPEC 6.7)
  double lse = 0;             // B_lse (SPEC 6.6)
  double logit_error = 0;     // Delta (SPEC 6.2)
  // Per key (S values, 0 at blocked keys): s sum_t |q_t||k_jt| and the
  // whole logit magnitude s sum|q||k| + c + |m_j| + |b_j| that Delta_j scales,
  // kept for the tight tier (spec/tight_bound.hpp).
  std::vector<double> dot_scale, logit_scale;
  // Sum over the keys whose exact weight underflows in double of a bound
  // on their computed weights (SPEC 6.4): where it is not tiny, the tight
  // tier's first-order model does not hold.
  double underflowed_weights = 0;
  // The sink's exact weight exp(sigma - lse) (0 without one): a term of the
  // normaliser with a value of 0 (SPEC 6.4).
  double sink_weight = 0;
  // Per key (S values, 0 at blocked keys), a bound on |w^_j - w_j| for a
  // weight computed by the softmax of SPEC 6.4: w_j eta_j, or the log-space
  // bound where w_j underflows; infinite where eta_j is. The same for the
  // sink's weight. The backward's bound (spec/gradient_bound.hpp) starts
  // from these.
  std::vector<double> weight_error;
  double sink_weight_error = 0;
};

// The roundings of a logit besides its dot product's d_k (SPEC 6.2): the
// scale 6, a softcap 3, the additive term 1, up to 13 with the product
// and its operands' conversions; ALiBi adds the distance's conversion, the
// product with the slope and one more addition; descales two more (q's and
// k's, folded into the scale or applied to the inputs, SPEC 6.2).
inline int logit_roundings(const Problem& p) { return (p.alibi ? 16 : 13) + (p.descales ? 2 : 0); }

// P rounded to a declared weights format before P V (SPEC 6.4): each
// computed weight errs by at most `relative` times itself (the format's u,
// on a weight within 1 + eta_max of exact) plus half the format's smallest
// subnormal over the scale, `absolute` summed over the row's n terms. The
// output errs by at most error(): the first terms for a denominator summed
// before the rounding, the |o_t| ones for one summed after it (the
// weights renormalised), over what the rounding may take from the
// denominator.
struct WeightsRounding {
  double relative = 0, absolute = 0;
  double error(double abs_scale, double out, double other_error, double largest_value) const {
    if (relative == 0 && absolute == 0) return 0;
    const double room = 1 - relative - absolute;
    if (!(room > 0)) return INFINITY;
    return (relative * (abs_scale + out + other_error) + absolute * (largest_value + out)) / room;
  }
};
WeightsRounding weights_rounding_of(const FormatClass& formats, double n, std::span<const double> eta);

// `exact_weights` (S values) and `exact_out` (d_v values) are the certified
// reference's float64 results for the row, `exact_lse` its lse. The bound
// includes the reference's own float64 rounding (SPEC 6.5).
RowBound precision_bound(const Problem& p, RowIndex r, FormatClass formats, std::span<const double> exact_weights,
                         std::span<const double> exact_out, double exact_lse);

}  // namespace attnspec
