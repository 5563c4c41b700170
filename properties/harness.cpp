// Shared property machinery. RapidCheck is driven through its programmatic
// entry point with a silent listener, so nothing reaches stdout or stderr;
// the last failing problem RapidCheck tries during shrinking is the
// minimal counterexample.
#include "properties/harness.hpp"

#include <fcntl.h>
#include <rapidcheck.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <mutex>
#include <numeric>
#include <sstream>

#include "cases/io/printable.hpp"
#include "properties/gradient_check.hpp"
#include "reference/fast_reference.hpp"
#include "spec/precision_model.hpp"
#include "spec/tight_bound.hpp"

namespace attnspec {
namespace {

// RapidCheck prints its configuration to stderr the first time it loads
// it; load it once with stderr pointed at /dev/null.
void load_rapidcheck_quietly() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::fflush(stderr);
    std::cerr.flush();
    const int saved = dup(2);
    const int null = open("/dev/null", O_WRONLY);
    if (saved < 0 || null < 0) {
      rc::detail::configuration();
      return;
    }
    dup2(null, 2);
    close(null);
    rc::detail::configuration();
    std::cerr.flush();
    std::fflush(stderr);
    dup2(saved, 2);
    close(saved);
  });
}


}  // namespace

Evaluation evaluate(Kernel& kernel, const Problem& given, FullyMaskedRows rows, ReferencePath path, Tier tier) {
  return evaluate_result(kernel, given, kernel.run(given), rows, path, tier);
}

Evaluation evaluate_result(const Kernel& kernel, const Problem& given, KernelResult got, FullyMaskedRows rows,
                           ReferencePath path, Tier tier) {
  Evaluation e;
  e.got = std::move(got);
  // The kernel sees its inputs and the descales; everything below, the real
  // inputs (SPEC 2.4).
  std::optional<Problem> storage;
  const Problem& p = real_problem(given, storage);
  if (e.got.out.size() != p.out_size())
    throw std::runtime_error("kernel returned " + std::to_string(e.got.out.size()) + " outputs, expected " +
                             std::to_string(p.out_size()));
  if (kernel.capabilities().lse && e.got.lse.size() != p.rows())
    throw std::runtime_error("kernel returned " + std::to_string(e.got.lse.size()) + " lse values, expected " +
                             std::to_string(p.rows()));
  if (rows == FullyMaskedRows::as_declared && !kernel.capabilities().fully_masked_rows) {
    const auto dv = static_cast<std::size_t>(p.dims.d_v);
    for (std::size_t row = 0; row < p.rows(); ++row) {
      const RowIndex r = p.row_index(row);
      bool any_visible = false;
      for (int j = 0; j < p.dims.kv_len && !any_visible; ++j) any_visible = p.visible(r, j);
      if (any_visible) continue;
      std::fill_n(e.got.out.begin() + static_cast<std::ptrdiff_t>(row * dv), dv, 0.0);
      if (!e.got.lse.empty()) e.got.lse[row] = p.sink(r).value_or(-INFINITY);
    }
  }
  const auto S = static_cast<std::size_t>(p.dims.kv_len), dv = static_cast<std::size_t>(p.dims.d_v);
  e.ref.out.resize(p.out_size());
  e.ref.lse.resize(p.rows());
  e.ref.weights.resize(p.weights_size());
  e.ref_low.assign(p.out_size(), 0.0);
  e.ref_error.assign(p.out_size(), 0.0);
  e.ref_lse_error.assign(p.rows(), 0.0);
  e.bound.resize(p.out_size());
  if (tier == Tier::tight) e.tight.resize(p.out_size());
  e.scale.resize(p.out_size());
  e.lse_bound.resize(p.rows());
  const FormatClass formats = format_class(kernel.formats());
  const bool judge_lse = kernel.capabilities().lse;
  const auto offset = [](std::size_t i) { return static_cast<std::ptrdiff_t>(i); };
  for (std::size_t row = 0; row < p.rows(); ++row) {
    const RowIndex r = p.row_index(row);
    const auto take_bound = [&] {
      const RowBound b = precision_bound(p, r, formats, std::span(e.ref.weights).subspan(row * S, S),
                                         std::span(e.ref.out).subspan(row * dv, dv), e.ref.lse[row]);
      std::copy(b.out.begin(), b.out.end(), e.bound.begin() + offset(row * dv));
      std::copy(b.scale.begin(), b.scale.end(), e.scale.begin() + offset(row * dv));
      e.lse_bound[row] = b.lse;
      if (tier == Tier::tight) {
        const std::vector<double> t = tight_bound(p, r, formats, std::span(e.ref.weights).subspan(row * S, S),
                                                  std::span(e.ref.out).subspan(row * dv, dv), b);
        std::copy(t.begin(), t.end(), e.tight.begin() + offset(row * dv));
      }
    };
    const auto take_exact = [&] {
      ReferenceOptions options;
      const RowResult exact = certified_row(p, r, options);
      std::copy(exact.out.begin(), exact.out.end(), e.ref.out.begin() + offset(row * dv));
      std::copy(exact.weights.begin(), exact.weights.end(), e.ref.weights.begin() + offset(row * S));
      std::fill_n(e.ref_error.begin() + offset(row * dv), dv, 0.0);
      std::fill_n(e.ref_low.begin() + offset(row * dv), dv, 0.0);
      e.ref.lse[row] = exact.lse;
      e.ref_lse_error[row] = 0;
      ++e.escalated_rows;
      take_bound();
    };
    if (path == ReferencePath::multiprecision) {
      take_exact();
      continue;
    }
    const FastRow fast = enclosed_row(
        p, r, path == ReferencePath::extended ? EnclosurePrecision::extended : EnclosurePrecision::binary64);
    std::copy(fast.out_double.begin(), fast.out_double.end(), e.ref.out.begin() + offset(row * dv));
    std::copy(fast.weights.begin(), fast.weights.end(), e.ref.weights.begin() + offset(row * S));
    e.ref.lse[row] = fast.lse;
    take_bound();
    // Rows from the exact path already (non-finite inputs, large error
    // terms) and rows with no visible key (exact zeros) are settled.
    if (fast.escalated) ++e.escalated_rows;
    if (fast.escalated || fast.lse == -INFINITY) continue;
    // Whether some verdict of this row is left open by the enclosure in
    // e's reference columns. (NaN results are exact: NANPROP judges them.)
    const auto any_open = [&] {
      if (judge_lse && !std::isnan(e.ref.lse[row]) &&
          !within_bound(e.got.lse[row], e.ref.lse[row], e.ref_lse_error[row], e.lse_bound[row]))
        return true;
      for (std::size_t t = 0; t < dv; ++t) {
        const std::size_t i = row * dv + t;
        const auto decided = [&](double bound) {
          return within_bound(e.got.out[i], e.ref.out[i], e.ref_error[i], bound, e.ref_low[i]);
        };
        if (!std::isnan(e.ref.out[i]) && (!decided(e.bound[i]) || (tier == Tier::tight && !decided(e.tight[i]))))
          return true;
      }
      return false;
    };
    const auto take_enclosure = [&](const FastRow& enclosure) {
      std::copy(enclosure.out_double.begin(), enclosure.out_double.end(), e.ref.out.begin() + offset(row * dv));
      std::copy(enclosure.out_low.begin(), enclosure.out_low.end(), e.ref_low.begin() + offset(row * dv));
      std::copy(enclosure.out_error.begin(), enclosure.out_error.end(), e.ref_error.begin() + offset(row * dv));
      e.ref.lse[row] = enclosure.lse;
      e.ref_lse_error[row] = enclosure.lse_error;
    };
    take_enclosure(fast);
    if (path == ReferencePath::extended || !any_open()) continue;
    // The extended rung: the same evaluation about 2^11 times narrower
    // (what a float64 kernel's bounds of a few ulps need); the bounds stay
    // those computed from the double enclosure.
    const FastRow extended = enclosed_row(p, r, EnclosurePrecision::extended);
    if (!extended.escalated) {
      take_enclosure(extended);
      if (!any_open()) {
        ++e.extended_rows;
        continue;
      }
    }
    take_exact();
  }
  return e;
}

std::optional<bool> within_bound(double got, double reference, double reference_error, double bound,
                                 double reference_low) {
  if (!std::isfinite(reference) || (reference_error == 0 && reference_low == 0))
    return std::fabs(got - reference) <= bound;
  // |got - (reference + low)| in extended precision: two roundings of at
  // most 2^-64 relative each, covered by the slack.
  const long double error = std::fabs((static_cast<long double>(got) - reference) - reference_low);
  if (std::isnan(error)) return false;         // NaN: outside any bound
  if (std::isinf(error)) return std::isinf(bound);  // outside any finite bound
  const long double slack = error * 0x1p-62L;
  if (error + slack + reference_error <= bound) return true;
  if (error - slack - reference_error > bound) return false;
  return std::nullopt;
}

void ErrorStats::add(double error, double bound, double scale, double u_out) {
  ++elements;
  if (!std::isfinite(bound)) ++unbounded;
  // Elements whose |P||V| is (nearly) zero have no meaningful units; they
  // are still checked against their bounds.
  if (!(scale * u_out > 1e-300) || !std::isfinite(error) || !(bound > 0) || !std::isfinite(bound)) return;
  // Nor where a finite bound over a tiny |P||V| overflows in units: an
  // infinite bound_u would read "of bound inf u" and be written to the
  // JSON report as null beside a number, which a --jobs parent refuses.
  const double error_u = error / (u_out * scale), bound_in_u = bound / (u_out * scale);
  if (!std::isfinite(error_u) || !std::isfinite(bound_in_u)) return;
  const double ratio = error / bound;
  if (ratio > max_ratio) {
    max_ratio = ratio;
    max_error_u = error_u;
    bound_u = bound_in_u;
  }
}

void ErrorStats::merge(const ErrorStats& other) {
  elements += other.elements;
  unbounded += other.unbounded;
  if (other.max_ratio > max_ratio) {
    max_ratio = other.max_ratio;
    max_error_u = other.max_error_u;
    bound_u = other.bound_u;
  }
}

double output_unit(const Kernel& kernel) { return format_info(kernel.formats().output).unit_roundoff; }

Problem repeat_kv_heads(const Problem& p) {
  Problem repeated = p;
  const int Hq = p.dims.q_heads, S = p.dims.kv_len;
  repeated.dims.kv_heads = Hq;
  repeated.k.clear();
  repeated.v.clear();
  for (int b = 0; b < p.dims.batch; ++b)
    for (int h = 0; h < Hq; ++h)
      for (int j = 0; j < S; ++j) {
        const auto k = p.key_row(b, p.kv_head_of(h), j);
        const auto v = p.value_row(b, p.kv_head_of(h), j);
        repeated.k.insert(repeated.k.end(), k.begin(), k.end());
        repeated.v.insert(repeated.v.end(), v.begin(), v.end());
      }
  if (p.descales) {  // each query head's copy keeps its kv head's factors
    Descales per_query_head{{}, {}, {}, p.descales->applied};
    for (int b = 0; b < p.dims.batch; ++b)
      for (int h = 0; h < Hq; ++h) {
        const int g = p.kv_head_of(h), Hkv = p.dims.kv_heads;
        per_query_head.q.push_back(p.descales->q_of(b, g, Hkv));
        per_query_head.k.push_back(p.descales->k_of(b, g, Hkv));
        per_query_head.v.push_back(p.descales->v_of(b, g, Hkv));
      }
    repeated.descales = std::move(per_query_head);
  }
  return repeated;
}

std::string number_text(double x) {
  std::ostringstream s;
  s.precision(17);
  s << x;
  return s.str();
}

double rounding_floor(double exact, FormatId format) {
  const double r = round_to_format(exact, format), c = round_to_format(0.3, format);
  return 2 * std::fabs(round_to_format(round_to_format(r + c, format) - c, format) - r);
}

std::string element_name(const Problem& p, std::size_t flat_output) {
  const auto dv = static_cast<std::size_t>(p.dims.d_v);
  const RowIndex r = p.row_index(flat_output / dv);
  return "output (b=" + std::to_string(r.batch) + ", h=" + std::to_string(r.head) + ", i=" + std::to_string(r.query) +
         ", t=" + std::to_string(flat_output % dv) + ")";
}

std::string outside_bound(const Problem& p, const Evaluation& e, double u_out, ErrorStats& stats, Tier tier) {
  const std::vector<double>& bound = tier == Tier::tight ? e.tight : e.bound;
  for (std::size_t i = 0; i < e.got.out.size(); ++i) {
    const double got = e.got.out[i], want = e.ref.out[i];
    if (std::isnan(want)) continue;  // NaN semantics are NANPROP's
    const double error = std::fabs(got - want);
    stats.add(error, bound[i], e.scale[i], u_out);
    if (!within_bound(got, want, e.ref_error[i], bound[i], e.ref_low[i]).value_or(false))
      return element_name(p, i) + " is " + number_text(got) + ", the certified reference " + number_text(want) +
             ": error " + number_text(error) + " exceeds the " + (tier == Tier::tight ? "tight bound " : "bound ") +
             number_text(bound[i]);
  }
  return "";
}

std::string disagree(const Evaluation& a, const Evaluation& b, std::span<const std::size_t> index_in_b,
                     const std::string& relation, double u_out, ErrorStats& stats) {
  for (std::size_t i = 0; i < index_in_b.size(); ++i) {
    const std::size_t j = index_in_b[i];
    if (j == kNotCompared) continue;
    const double x = a.got.out[i], y = b.got.out[j];
    const double tolerance = a.bound[i] + b.bound[j];
    const double difference = std::fabs(x - y);
    stats.add(difference, tolerance, std::max(a.scale[i], b.scale[j]), u_out);
    if (!(difference <= tolerance))
      return relation + ": output " + std::to_string(i) + " is " + number_text(x) + " and " + number_text(y) +
             " after the transformation; they differ by " + number_text(difference) + ", more than B1 + B2 = " +
             number_text(tolerance);
  }
  return "";
}

std::string related(Problem& drawn, const Problem& pa, const Evaluation& a, const Problem& pb, const Evaluation& b,
                    std::span<const std::size_t> index_in_b, const std::string& relation, double u_out,
                    ErrorStats& stats) {
  std::string failure = disagree(a, b, index_in_b, relation, u_out, stats);
  if (failure.empty()) return failure;
  ErrorStats ignored;
  if (!outside_bound(pa, a, u_out, ignored).empty()) {
    drawn = pa;
    return failure + " (the first problem is outside its bound; saved)";
  }
  drawn = pb;
  return failure + " (the second problem is outside its bound; saved)";
}

std::string check_against_reference(Kernel& kernel, const Problem& p, ErrorStats& stats) {
  if (std::string f = check_result_against_reference(kernel, p, kernel.run(p), stats); !f.empty()) return f;
  // A case with dO judges the backward too, GRADPREC's rule, where the
  // kernel has one.
  if (p.dout.empty() || !kernel.capabilities().backward) return "";
  ErrorStats gradient_stats;
  return gradients_outside_bound(p, evaluate_gradients(kernel, p), kernel.formats().output, gradient_stats);
}

std::string check_result_against_reference(const Kernel& kernel, const Problem& p, KernelResult got, ErrorStats& stats) {
  const Evaluation e = evaluate_result(kernel, p, std::move(got), FullyMaskedRows::judged, ReferencePath::fast, Tier::tight);
  for (std::size_t i = 0; i < e.got.out.size(); ++i)
    if (std::isnan(e.ref.out[i]) && std::isfinite(e.got.out[i]))
      return element_name(p, i) + " should be NaN (a non-finite input it depends on) but is " + number_text(e.got.out[i]);
  if (std::string f = outside_bound(p, e, output_unit(kernel), stats); !f.empty()) return f;
  ErrorStats tight_stats;
  if (std::string f = outside_bound(p, e, output_unit(kernel), tight_stats, Tier::tight); !f.empty())
    return f + " (the tight tier, PRECTIGHT)";
  if (!kernel.capabilities().lse) return "";
  return lse_outside_bound(e);
}

std::string lse_outside_bound(const Evaluation& e) {
  for (std::size_t row = 0; row < e.ref.lse.size(); ++row) {
    const double got = e.got.lse[row], want = e.ref.lse[row];
    if (std::isnan(want)) continue;
    const std::string where = "lse of row " + std::to_string(row) + " is " + number_text(got);
    if (want == -INFINITY) {
      if (got != -INFINITY) return where + ", expected -inf (no visible key)";
    } else if (!within_bound(got, want, e.ref_lse_error[row], e.lse_bound[row]).value_or(false)) {
      return where + ", the certified reference " + number_text(want) + ": error exceeds the bound " +
             number_text(e.lse_bound[row]);
    }
  }
  return "";
}

std::vector<std::size_t> same_index(std::size_t n) {
  std::vector<std::size_t> index(n);
  std::iota(index.begin(), index.end(), 0);
  return index;
}

namespace {

// Thrown from the listener once the shrink budget is spent: it ends
// RapidCheck's search at once, whatever the size of the shrink tree left.
struct ShrinkBudgetSpent {};

class ShrinkListener final : public rc::detail::TestListener {
 public:
  explicit ShrinkListener(const std::function<bool()>& spent) : spent_(spent) {}
  void onTestCaseFinished(const rc::detail::CaseDescription&) override {}
  void onShrinkTried(const rc::detail::CaseDescription&, bool) override {
    if (spent_()) throw ShrinkBudgetSpent{};
  }
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}

 private:
  std::function<bool()> spent_;
};

}  // namespace

NothingChecked::NothingChecked(const std::string& why) : std::runtime_error(why) {}

ClauseOutcome run_property(PropertyContext& context, const PropertyBody& body) {
  constexpr int kFaultsBeforeGivingUp = 20;
  load_rapidcheck_quietly();
  ClauseOutcome outcome;
  ErrorStats stats;
  std::optional<Problem> last_failure;
  std::string last_message;
  int undecidable = 0, nothing_checked = 0;
  std::string first_declined;
  int faulted = 0, judged = 0;
  const auto gave_up_on_faults = [&] { return faulted >= kFaultsBeforeGivingUp && faulted > judged; };
  std::string first_fault;
  std::optional<Problem> first_faulted_problem;
  rc::detail::TestParams params;
  params.seed = context.seed;
  params.maxSuccess = context.profile.cases;
  params.maxSize = context.profile.max_size;
  params.disableShrinking = !context.shrink;
  rc::detail::TestMetadata metadata;
  // Shrinking stops when its budget is spent: the listener ends the
  // search, and the smallest failure found so far is the counterexample.
  // The budget is this process's CPU time, so that a loaded machine (a
  // test run beside a sweep) shrinks as far as an idle one; the wall-clock
  // cap bounds it where the work is elsewhere (a process adapter's child,
  // whose time this process does not see).
  using Clock = std::chrono::steady_clock;
  std::optional<Clock::time_point> first_failure;
  std::clock_t first_failure_cpu = 0;
  const int shrink_cpu_seconds = context.shrink_cpu_seconds;
  const int shrink_wall_seconds = std::max(60, 6 * shrink_cpu_seconds);
  const auto budget_spent = [&] {
    if (!first_failure) return false;
    const double cpu_seconds = static_cast<double>(std::clock() - first_failure_cpu) / CLOCKS_PER_SEC;
    return cpu_seconds > shrink_cpu_seconds || Clock::now() - *first_failure > std::chrono::seconds(shrink_wall_seconds);
  };
  ShrinkListener listener(budget_spent);
  // Every drawn case is judged, also after the first failure, so that a
  // known failure cannot hide another (spec/SPEC.md section 7.1): the
  // search below stops at the first failure and shrinks it; a second
  // search with the same seed then replays the cases up to it without
  // running the kernel (drawn_outcomes: RapidCheck's draws depend only on
  // the seed and on which earlier cases it counted or discarded) and
  // judges the rest.
  std::vector<bool> drawn_outcomes;  // up to the first failure: counted (true) or discarded
  int failed_cases = 0;
  std::array<int, kShapeClasses> failed_by_shape{};
  // One case: a drawn one (drawing), or a shrink candidate, whose
  // declines, discards and errors are not the run's. Returns the failure
  // message, "" for a pass; a case not judged ends in RC_DISCARD.
  const auto judge = [&](Problem& drawn, bool drawing) -> std::string {
    // A kernel whose machinery fails more often than not (an adapter
    // that crashes on every case) is not tried a thousand times.
    if (gave_up_on_faults()) RC_DISCARD("stopped: most cases were lost to kernel faults");
    std::string failure;
    ErrorStats case_stats;
    try {
      failure = body(drawn, case_stats);
    } catch (const rc::GenerationFailure&) {
      throw;
    } catch (const KernelUnsupported& e) {
      // The kernel turned this problem down (spec/SPEC.md section 8):
      // counted and reported; too many make the clause INCOMPLETE.
      if (drawing && outcome.declined++ == 0) first_declined = printable(e.what());
      RC_DISCARD("the kernel declined this case");
    } catch (const KernelFault& e) {
      // Lost to the kernel's machinery (an adapter crash, hang or
      // protocol break): counted, and the clause fails for it at the
      // end, but its other cases are still judged.
      if (faulted++ == 0) {
        first_fault = printable(e.what(), 2000);
        first_faulted_problem = drawn;
      }
      RC_DISCARD("the kernel's machinery failed on this case");
    } catch (const ReferenceError&) {
      // The reference cannot judge this case (a result within 2^-40000
      // of a rounding boundary, SPEC.md section 5): neither pass nor fail.
      if (drawing) ++undecidable;
      RC_DISCARD("the certified reference could not decide this case");
    } catch (const NothingChecked&) {
      if (drawing) ++nothing_checked;
      RC_DISCARD("the drawn case left nothing to check");
    } catch (const std::exception& e) {
      failure = std::string("exception: ") + printable(e.what(), 2000);
    }
    if (drawing) {
      stats.merge(case_stats);  // what the drawn cases judged, not the shrink candidates
      ++judged;
      const auto shape = static_cast<std::size_t>(classify_shape(drawn.dims));
      ++outcome.judged_by_shape[shape];
      if (!failure.empty()) {
        ++failed_cases;
        ++failed_by_shape[shape];
      }
    }
    return failure;
  };
  const auto testable = [&] {
    if (budget_spent()) return;
    const bool drawing = !first_failure;
    if (drawing) drawn_outcomes.push_back(false);
    Problem drawn;
    const std::string failure = judge(drawn, drawing);
    if (drawing) drawn_outcomes.back() = true;
    if (!failure.empty()) {
      if (!first_failure) {
        first_failure = Clock::now();
        first_failure_cpu = std::clock();
        outcome.first_failing_case = judged;
      }
      last_failure = drawn;
      last_message = failure;
      RC_FAIL(failure);
    }
  };
  std::optional<rc::detail::TestResult> result;
  try {
    result = rc::detail::checkTestable(testable, metadata, params, listener);
  } catch (const ShrinkBudgetSpent&) {
    // Ended during shrinking: the failure stands, with the smallest
    // problem found within the budget.
  }
  const bool found_failure = first_failure.has_value();
  if (found_failure && context.judge_every_case) {
    std::size_t invocation = 0;
    const auto the_rest = [&] {
      const std::size_t i = invocation++;
      if (i < drawn_outcomes.size()) {
        if (drawn_outcomes[i]) return;  // judged in the first search (the failure among them)
        RC_DISCARD("discarded in the first search");
      }
      Problem drawn;
      judge(drawn, true);
    };
    rc::detail::TestParams rest_params = params;
    rest_params.disableShrinking = true;
    ShrinkListener quiet([] { return false; });
    context.judging_the_rest = true;
    rc::detail::checkTestable(the_rest, metadata, rest_params, quiet);
    context.judging_the_rest = false;
  }

  rc::detail::SuccessResult success;
  rc::detail::FailureResult failure;
  rc::detail::GaveUpResult gave_up;
  rc::detail::Error error;
  if (!result) {
    outcome.status = Status::fail;
    outcome.cases = judged;
    outcome.counterexample = last_failure;
    outcome.reason = last_message + " (shrinking stopped: its budget of " + std::to_string(shrink_cpu_seconds) +
                     " s of CPU time or " + std::to_string(shrink_wall_seconds) + " s in all was spent)";
  } else if (result->match(success)) {
    outcome.status = Status::pass;
    outcome.cases = success.numSuccess;
  } else if (result->match(failure)) {
    outcome.status = Status::fail;
    outcome.cases = failure.numSuccess + 1;
    outcome.counterexample = last_failure;
    outcome.reason = last_message;
  } else if (result->match(gave_up)) {
    outcome.cases = gave_up.numSuccess;
    if (gave_up_on_faults()) {
      outcome.status = Status::pass;  // what was judged passed; the faults below fail the clause
    } else if (gave_up.numSuccess == 0 && outcome.declined > 0) {
      outcome.status = Status::incomplete;
      outcome.reason = "the kernel declined every case (" + std::to_string(outcome.declined) + "): " + first_declined;
    } else {
      outcome.status = Status::incomplete;
      outcome.reason = "gave up: " + gave_up.description;
    }
  } else if (result->match(error)) {
    outcome.status = Status::fail;
    outcome.reason = "RapidCheck error: " + error.description;
  }
  if (found_failure && outcome.status == Status::fail) {
    // Every drawn case was judged: how many failed, in which shape classes.
    outcome.cases = judged;
    std::string classes;
    for (std::size_t c = 0; c < failed_by_shape.size(); ++c) {
      if (failed_by_shape[c] == 0) continue;
      const std::string shape(to_string(static_cast<ShapeClass>(c)));
      outcome.signatures.push_back("shape:" + shape);
      classes += (classes.empty() ? "" : ", ") + shape + " " + std::to_string(failed_by_shape[c]);
    }
    std::sort(outcome.signatures.begin(), outcome.signatures.end());
    if (context.judge_every_case)
      outcome.reason += "; " + std::to_string(failed_cases) + " of " + std::to_string(judged) +
                        " judged drawn case(s) fail (" + classes + ")";
    else
      outcome.reason += "; judging stopped at this first failure (--stop-at-first-failure)";
  }
  outcome.discarded = undecidable + nothing_checked;
  outcome.size_limit = context.kernel.capabilities().max_elements < kMaxTensorElements
                           ? context.kernel.capabilities().max_elements
                           : 0;
  const auto note = [&](const std::string& text) {
    if (!outcome.reason.empty()) outcome.reason += "; ";
    outcome.reason += text;
  };
  if (undecidable > 0)
    note(std::to_string(undecidable) + " generated case(s) discarded: the certified reference could not decide them");
  if (nothing_checked > 0) note(std::to_string(nothing_checked) + " generated case(s) discarded: nothing to check");
  if (outcome.declined > 0 && outcome.cases > 0)
    note(std::to_string(outcome.declined) + " case(s) declined by the kernel (first: " + first_declined + ")");
  if (outcome.status == Status::pass) {
    // Incomplete is not PASS: too many declines, or a shape class the
    // profile draws that no judged case belonged to.
    std::string missing;
    if (outcome.declined_share() > kMaxDeclinedShare) {
      char share[64];
      std::snprintf(share, sizeof share, "%.0f%%", 100 * outcome.declined_share());
      missing = std::string("the kernel declined ") + share + " of the cases (more than " +
                std::to_string(static_cast<int>(100 * kMaxDeclinedShare)) + "%)";
    }
    for (const ShapeClass shape : context.expected_shapes)
      if (outcome.judged_by_shape[static_cast<std::size_t>(shape)] == 0) {
        if (!missing.empty()) missing += "; ";
        missing += "no " + std::string(to_string(shape)) + " case was judged";
        if (outcome.size_limit) missing += " (the kernel's max_elements is " + std::to_string(outcome.size_limit) + ")";
      }
    if (!missing.empty()) {
      outcome.status = Status::incomplete;
      outcome.reason = missing + (outcome.reason.empty() ? "" : "; " + outcome.reason);
    }
  }
  if (faulted > 0) {
    // Never a pass: the lost cases were not judged. Their count, the first
    // one's message and problem (for `attnspec check`) are the report.
    outcome.signatures.push_back("faults");
    std::sort(outcome.signatures.begin(), outcome.signatures.end());
    std::string lost = std::to_string(faulted) + " case(s) lost to kernel faults (first: " + first_fault + ")";
    if (gave_up_on_faults()) lost += "; stopped there, with more cases lost than judged";
    if (outcome.status == Status::fail) {
      outcome.reason += "; " + lost;
      if (!outcome.counterexample) outcome.counterexample = first_faulted_problem;
    } else {
      const bool none_judged = outcome.cases == 0;
      outcome.status = Status::fail;
      outcome.reason = lost + "; the other " + std::to_string(outcome.cases) + " case(s) " +
                       (none_judged ? "were not judged" : "passed") + (outcome.reason.empty() ? "" : "; " + outcome.reason);
      outcome.counterexample = first_faulted_problem;
    }
  }
  outcome.elements = stats.elements;
  outcome.unbounded_elements = stats.unbounded;
  if (stats.unbounded > 0)
    note(std::to_string(stats.unbounded) + " of " + std::to_string(stats.elements) +
         " compared elements not judged: the precision model gives them no finite bound");
  if (stats.max_error_u >= 0) {
    outcome.max_error_u = stats.max_error_u;
    outcome.bound_u = stats.bound_u;
    outcome.bound_used = stats.max_ratio;
  }
  return outcome;
}

}  // namespace attnspec
