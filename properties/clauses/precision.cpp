// PREC, PRECTIGHT, LSE and PRECREL: the kernel against the certified reference, with
// the precision model's bounds (spec/SPEC.md sections 6 and 7).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <optional>
#include <span>
#include <vector>

#include "adapters/naive/naive_kernel.hpp"
#include "properties/clauses/clauses.hpp"
#include "properties/generators.hpp"
#include "properties/harness.hpp"

namespace attnspec {

ClauseOutcome check_prec(PropertyContext& context) {
  const double u_out = output_unit(context.kernel);
  return run_property(context, [&](Problem& p, ErrorStats& stats) {
    p = draw_problem(context.kernel, context.profile, Features{});
    return outside_bound(p, evaluate(context.kernel, p), u_out, stats);
  });
}

// Problems drawn as PREC draws them, judged by the tight tier (SPEC 6.8),
// which also judges the elements PREC's worst-case bound leaves unjudged.
ClauseOutcome check_prectight(PropertyContext& context) {
  const double u_out = output_unit(context.kernel);
  return run_property(context, [&](Problem& p, ErrorStats& stats) {
    p = draw_problem(context.kernel, context.profile, Features{});
    const Evaluation e = evaluate(context.kernel, p, FullyMaskedRows::as_declared, ReferencePath::fast, Tier::tight);
    return outside_bound(p, e, u_out, stats, Tier::tight);
  });
}

ClauseOutcome check_lse(PropertyContext& context) {
  return run_property(context, [&](Problem& p, ErrorStats&) -> std::string {
    p = draw_problem(context.kernel, context.profile, Features{});
    return lse_outside_bound(evaluate(context.kernel, p));
  });
}

namespace {
// What two kernels whose exp and tanh both meet assumption A2 (relative
// error at most 4u each, SPEC 6.1) may differ by at each output of a row,
// to first order: their weights may differ by 8u relative, their softcapped
// logits by 8u c (|c tanh| <= c), and a perturbation of weight j by
// delta_j moves o_t by sum_j w_j delta_j (v_jt - o_t). So
// 8u (1 + c) sum_j w_j |v_jt - o_t|, with a factor 1.25 for the first
// order. u is that of the arithmetic the functions are evaluated in
// (float32 for narrower accumulators, as in the yardstick).
std::vector<double> elementary_function_allowance(const Problem& p, const Evaluation& e, std::size_t row,
                                                  double u) {
  const auto S = static_cast<std::size_t>(p.dims.kv_len), dv = static_cast<std::size_t>(p.dims.d_v);
  const RowIndex r = p.row_index(row);
  const int g = p.kv_head_of(r.head);
  std::vector<double> spread(dv, 0.0);
  for (std::size_t j = 0; j < S; ++j) {
    const double w = e.ref.weights[row * S + j];
    if (!(w > 0)) continue;
    const std::span<const double> v = p.value_row(r.batch, g, static_cast<int>(j));
    for (std::size_t t = 0; t < dv; ++t) spread[t] += w * std::fabs(v[t] - e.ref.out[row * dv + t]);
  }
  if (const std::optional<double> sink = p.sink(r)) {  // a term of value 0, weight exp(sigma - lse)
    const double w = std::exp(*sink - e.ref.lse[row]);
    for (std::size_t t = 0; t < dv; ++t) spread[t] += w * std::fabs(e.ref.out[row * dv + t]);
  }
  const double factor = 1.25 * 8 * u * (1 + (p.softcap ? std::fabs(*p.softcap) : 0.0));
  for (double& x : spread) x *= factor;
  return spread;
}
}  // namespace

// The FlashAttention criterion compares maxima over whole test tensors; on
// one tiny problem both maxima are a rounding or two and their ratio is
// noise. So the maxima are taken over all of the run's problems of one
// shape class (spec/SPEC.md section 7.1): the errors of long rows would
// otherwise hide those of short ones. The problem with the kernel's largest
// error in a failing class is the counterexample.
ClauseOutcome check_precrel(PropertyContext& context) {
  const KernelFormats formats = context.kernel.formats();
  // The naive composition with each q.k summed in two orders: the
  // yardstick at each output is the worse of them (spec/SPEC.md, PRECREL).
  const std::array<std::unique_ptr<Kernel>, 2> naive{make_naive_kernel(formats, LogitProduct::blocked),
                                                      make_naive_kernel(formats, LogitProduct::running_sum)};
  struct ClassMaxima {
    double kernel_error = 0, naive_error = 0, floor = 0;
    // The same maxima with each error moved by its enclosure's width, to
    // the kernel's advantage, and the kernel's by what its elementary
    // functions may add under A2: only a certain excess fails.
    double kernel_error_low = 0, naive_error_high = 0;
    int problems = 0;
    std::optional<Problem> worst;
  };
  std::array<ClassMaxima, kShapeClasses> maxima;
  ClauseOutcome outcome = run_property(context, [&](Problem& p, ErrorStats&) -> std::string {
    p = draw_problem(context.kernel, context.profile, Features{});
    // Against float64 outputs the double enclosure (a few float64 ulps)
    // is not negligible: those kernels are measured against the extended
    // one (pairs ref + low, about 2^11 times narrower); either way each
    // error is known to within its enclosure's width ref_error.
    const Evaluation e = evaluate(context.kernel, p, FullyMaskedRows::as_declared,
                                  formats.output == FormatId::float64 ? ReferencePath::extended : ReferencePath::fast);
    const std::array<KernelResult, 2> baseline{naive[0]->run(p), naive[1]->run(p)};
    ClassMaxima& m = maxima[static_cast<std::size_t>(classify_shape(p.dims))];
    ++m.problems;
    const double function_unit = format_info(formats.accumulate == FormatId::float64 ? FormatId::float64
                                                                                      : FormatId::float32).unit_roundoff;
    std::vector<double> allowance;
    std::optional<Problem> storage;
    const Problem& real = real_problem(p, storage);  // the values times v's descales
    const auto error_of = [&](double got, std::size_t i) {
      return static_cast<double>(std::fabs((static_cast<long double>(got) - e.ref.out[i]) - e.ref_low[i]));
    };
    const auto dv = static_cast<std::size_t>(p.dims.d_v);
    for (std::size_t i = 0; i < e.ref.out.size(); ++i) {
      if (i % dv == 0) allowance = elementary_function_allowance(real, e, i / dv, function_unit);
      const double want = e.ref.out[i];
      if (!std::isfinite(want)) continue;
      const double error = error_of(e.got.out[i], i);
      if (error > m.kernel_error) {
        m.kernel_error = error;
        m.worst = p;
      }
      const double naive_error = std::max(error_of(baseline[0].out[i], i), error_of(baseline[1].out[i], i));
      m.naive_error = std::max(m.naive_error, naive_error);
      m.kernel_error_low = std::max(m.kernel_error_low, error - e.ref_error[i] - allowance[i % dv]);
      m.naive_error_high = std::max(m.naive_error_high, naive_error + e.ref_error[i]);
      m.floor = std::max(m.floor, rounding_floor(want, formats.output));
    }
    return "";
  });
  if (outcome.status != Status::pass) return outcome;
  // Every class is judged: the first that misses the yardstick is
  // described and its worst problem saved, the others named.
  std::string others;
  for (int c = 0; c < kShapeClasses; ++c) {
    const ClassMaxima& m = maxima[static_cast<std::size_t>(c)];
    if (m.kernel_error_low <= 2 * m.naive_error_high + m.floor) continue;
    const std::string shape(to_string(static_cast<ShapeClass>(c)));
    outcome.signatures.push_back("shape:" + shape);
    if (outcome.status == Status::fail) {
      others += (others.empty() ? "" : ", ") + shape;
      continue;
    }
    outcome.status = Status::fail;
    outcome.counterexample = m.worst;
    char text[240];
    std::snprintf(text, sizeof text,
                  "%s problems: max error %.3g over %d problems exceeds 2 x the naive kernel's %.3g + the rounding floor %.3g",
                  shape.c_str(), m.kernel_error, m.problems, m.naive_error, m.floor);
    outcome.reason = text;
  }
  if (!others.empty()) outcome.reason += "; also in the " + others + " problems";
  std::sort(outcome.signatures.begin(), outcome.signatures.end());
  return outcome;
}

}  // namespace attnspec
