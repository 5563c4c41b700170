// The machinery every property shares: running the kernel next to the
// certified reference and the precision model's bounds, the two tolerance
// rules of spec/SPEC.md section 7 (within B of the reference; two related
// runs within B1 + B2 of each other), and the RapidCheck loop that finds and
// shrinks counterexamples.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "properties/property.hpp"
#include "reference/certified.hpp"

namespace attnspec {

// One kernel run with its reference and bounds.
// The reference is the fast path's enclosure (reference/fast_reference.hpp):
// each exact output lies within ref_error of ref.out + ref_low, each exact
// lse within ref_lse_error of ref.lse. Where a double enclosure is too wide
// to tell whether the kernel's value is within its bound, `evaluate`
// evaluates the row again in extended precision (ref_low then holds what
// the double ref.out lacks), and where that too leaves a verdict open, it
// takes the row from the multiprecision reference (correctly rounded
// float64, error 0 here: the bound already allows for its half ulp), so
// every verdict is decided.
struct Evaluation {
  KernelResult got;
  ReferenceResult ref;        // float64 approximations of the exact results, with weights
  std::vector<double> ref_low;        // 0 except on rows of the extended rung
  std::vector<double> ref_error;      // |ref.out + ref_low - exact| <= ref_error, per output
  std::vector<double> ref_lse_error;  // |ref.lse - exact| <= ref_lse_error, per row
  std::vector<double> bound;  // B_t per output element
  std::vector<double> tight;  // T_t per output element (spec/tight_bound.hpp), with Tier::tight only
  std::vector<double> scale;  // |P||V| per output element
  std::vector<double> lse_bound;
  std::size_t extended_rows = 0;   // rows settled by the extended-precision enclosure
  std::size_t escalated_rows = 0;  // rows settled by the multiprecision reference
};

// Which rows with no visible key are judged: all of them (`attnspec check`,
// FULLMASK), or only where the kernel declares it handles them
// (Capabilities::fully_masked_rows); unjudged rows get the spec's values
// (0, lse -inf) in place of the kernel's.
enum class FullyMaskedRows { as_declared, judged };

// Runs the kernel (throws std::runtime_error if its output has the wrong
// size) and the reference, and computes the bounds. ReferencePath::
// multiprecision takes every row from the multiprecision path (for the
// test that both paths give the same verdicts). ReferencePath::extended
// takes every row from the extended-precision enclosure and settles no
// verdict: for measurements of error (PRECREL) against float64 outputs,
// not for bounds.
enum class ReferencePath { fast, extended, multiprecision };
// Which tier of the precision model judges: the worst-case bound B_t (SPEC
// 6.5) or, besides it, the tight tier T_t (SPEC 6.8). The fast reference's
// open verdicts are settled for the tier asked for.
enum class Tier { worst_case, tight };
Evaluation evaluate(Kernel& kernel, const Problem& p, FullyMaskedRows rows = FullyMaskedRows::as_declared,
                    ReferencePath path = ReferencePath::fast, Tier tier = Tier::worst_case);

// evaluate for a result the kernel has already returned (a sequence of a
// layout, spec/SPEC.md section 2.5).
Evaluation evaluate_result(const Kernel& kernel, const Problem& p, KernelResult got,
                           FullyMaskedRows rows = FullyMaskedRows::as_declared, ReferencePath path = ReferencePath::fast,
                           Tier tier = Tier::worst_case);

// "" when every lse of e is within its bound of the reference (exactly
// -inf where the row has no visible key and no sink), else the first that
// is not. NaN references are NANPROP's.
std::string lse_outside_bound(const Evaluation& e);

// Whether |got - exact| <= bound, where exact is known only to lie within
// reference_error of reference + reference_low: nullopt when the enclosure
// cannot tell.
std::optional<bool> within_bound(double got, double reference, double reference_error, double bound,
                                 double reference_low = 0);

// The element that used the largest fraction of its bound, with its error
// and bound in units of u_out * |P||V| (SPEC 6.7). Reporting the largest
// raw error instead would show ill-conditioned elements (huge logits,
// huge bounds) whose error says nothing about the kernel.
// Every compared element is counted, and those whose bound is infinite (the
// model gives none) are counted as not judged (spec/SPEC.md section 7).
struct ErrorStats {
  double max_error_u = -1;  // at the element with the largest error / bound
  double bound_u = 0;
  double max_ratio = -1;
  std::uint64_t elements = 0, unbounded = 0;
  void add(double error, double bound, double scale, double u_out);
  void merge(const ErrorStats& other);
};

double output_unit(const Kernel& kernel);  // u of the kernel's output format

// "" when every output is within its bound of the reference (and rows with
// no visible key are exactly 0), else a description of the first that is
// not; Tier::tight judges with e.tight (evaluated with Tier::tight).
std::string outside_bound(const Problem& p, const Evaluation& e, double u_out, ErrorStats& stats,
                          Tier tier = Tier::worst_case);

// An index_in_b entry for an output of a that the relation says nothing
// about (a row the transformation may rightly change).
inline constexpr std::size_t kNotCompared = static_cast<std::size_t>(-1);

// "" when a.got.out[i] and b.got.out[index_in_b[i]] agree within
// a.bound[i] + b.bound[index_in_b[i]] for every i (but kNotCompared
// ones), else a description.
std::string disagree(const Evaluation& a, const Evaluation& b, std::span<const std::size_t> index_in_b,
                     const std::string& relation, double u_out, ErrorStats& stats);

// `disagree` for the problems behind a and b. On failure `drawn` becomes
// whichever of them is outside its own bound (one must be, since their
// exact results agree), so the saved counterexample fails on its own.
std::string related(Problem& drawn, const Problem& pa, const Evaluation& a, const Problem& pb, const Evaluation& b,
                    std::span<const std::size_t> index_in_b, const std::string& relation, double u_out,
                    ErrorStats& stats);

// The whole single-case check of `attnspec check`: "" when every output is
// within its bound of both tiers, non-finite exactly where the reference is
// NaN, the lse (if the kernel returns one) within its bound, and, for a
// case with dO and a kernel with a backward pass, every gradient within
// its bound (GRADPREC's rule).
std::string check_against_reference(Kernel& kernel, const Problem& p, ErrorStats& stats);
// The same for a result the kernel has already returned.
std::string check_result_against_reference(const Kernel& kernel, const Problem& p, KernelResult got, ErrorStats& stats);

// The identity index map for `disagree`.
std::vector<std::size_t> same_index(std::size_t n);

// A property body draws its problem into `drawn` (with *gen) and returns ""
// or a failure description. A body that finds nothing to check in the
// drawn problem throws NothingChecked: the case is discarded, not passed.
class NothingChecked : public std::runtime_error {
 public:
  explicit NothingChecked(const std::string& why);
};
using PropertyBody = std::function<std::string(Problem& drawn, ErrorStats& stats)>;

// Runs the body for the profile's number of cases, shrinks the first
// failure (within a time budget), and reports the shrunk problem as the
// counterexample. A passing clause is INCOMPLETE when the kernel declined
// more than kMaxDeclinedShare of the cases or no judged case belonged to
// one of context.expected_shapes.
ClauseOutcome run_property(PropertyContext& context, const PropertyBody& body);

// p with every query head given its own copy of its kv head's K, V (and
// descale factors): the same function without GQA (GQA, GRADGQA).
Problem repeat_kv_heads(const Problem& p);

// x with 17 significant digits (the double exactly), for messages.
std::string number_text(double x);

// FlashAttention's floor of PRECREL and GRADREL, 2 |(r + 0.3 - 0.3) - r|
// in `format` with r the exact value rounded to it: a few roundings at the
// value's own magnitude.
double rounding_floor(double exact, FormatId format);

// "row (b, h, i) column t" for messages.
std::string element_name(const Problem& p, std::size_t flat_output);

}  // namespace attnspec
