// Judging a kernel's backward pass (spec/SPEC.md sections 2.6 and 6.11):
// its dQ, dK, dV and sink gradients against the certified gradients, each
// within the worst-case bound of its kernel class. GRADPREC, the gradient
// laws and the backward kernels' tests share it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "adapters/kernel.hpp"
#include "properties/generators.hpp"
#include "properties/harness.hpp"
#include "reference/fast_gradients.hpp"
#include "reference/gradients.hpp"
#include "spec/gradient_bound.hpp"

namespace attnspec {

// A backward run with what its bounds need.
struct GradientEvaluation {
  GradientOutputs got;
  std::vector<ForwardRow> forward;  // the certified forward of every row
  GradientBounds bounds;            // the kernel class's (SPEC 6.11 step 7; step 8 when compared)
};

// One gradient tensor of an evaluation, with each value's bound before the
// output rounding and its units' scale, named by the letter
// gradient_element_name takes: 'Q', 'K', 'V', or 'S' for the sinks'.
struct GradientTensor {
  char name;
  const std::vector<double>& got;
  const std::vector<double>& before;
  const std::vector<double>& scale;
};
inline constexpr char kGradientTensors[] = {'Q', 'K', 'V', 'S'};
GradientTensor gradient_tensor(const GradientEvaluation& e, char name);

// One tensor, by the same letter, of a kernel's gradients, of the
// certified ones, and of the fast enclosure (values and their radii).
const std::vector<double>& gradient_values(const GradientOutputs& g, char name);
const std::vector<double>& gradient_values(const GradientResult& g, char name);
struct EnclosedTensor {
  const std::vector<double>& approx;
  const std::vector<double>& radius;
};
EnclosedTensor enclosed_tensor(const GradientEnclosure& g, char name);

// The kernel class of a kernel's backward: its forward's formats and its
// declared storage format for P and dS.
GradientClass gradient_class(const Kernel& kernel);

// What the gradient clauses draw: dO with every other feature the kernel
// has, but no descales (the backward's inputs are plain values, SPEC 2.6);
// rows with no visible key only where the kernel declares
// fully_masked_rows (rows that other rules empty are discarded:
// discard_rows_not_declared).
Features backward_features(const Kernel& kernel);

// Runs the kernel's backward on p (which carries dO) and computes the
// bounds; throws std::runtime_error when a gradient has the wrong size.
GradientEvaluation evaluate_gradients(Kernel& kernel, const Problem& p);

// The exact gradients of p as the verdicts take them: each value within a
// radius of an approximation, from the long double enclosure
// (reference/fast_gradients.hpp), or from the multiprecision gradients
// (taken once, when first needed) where the enclosure has no finite value
// or cannot decide. Refers to p and e, which must outlive it.
class ExactGradients {
 public:
  ExactGradients(const Problem& p, const GradientEvaluation& e);
  struct Value {
    double approx, radius;
    bool certified;  // from the multiprecision gradients (radius half a float64 ulp)
  };
  Value enclosed(char tensor, std::size_t i);   // the enclosure's where finite, else certified
  Value certified(char tensor, std::size_t i);  // the multiprecision gradients' float64 rounding

 private:
  const Problem& problem_;
  GradientEnclosure enclosure_;
  std::optional<GradientResult> certified_;
};

// "" when every gradient value is within its bound of the certified one,
// else the first that is not. The long double enclosure
// (reference/fast_gradients.hpp) decides what it can; the multiprecision
// gradients the rest.
std::string gradients_outside_bound(const Problem& p, const GradientEvaluation& e, FormatId output,
                                    ErrorStats& stats);

// Throws NothingChecked (the case is discarded and counted) when p has a
// row with no visible key and the kernel does not declare
// fully_masked_rows: the forward's deviation there (FULLMASK's) spoils
// the gradients of every key the row's head reads (NaN weights times dO),
// so the gradient clauses judge such kernels on the other problems.
void discard_rows_not_declared(const Kernel& kernel, const Problem& p);

// The bound on a computed value `got` (section 6.11 step 8) without the
// exact value: its magnitude is at most |got| plus the bound itself.
double bound_around(double before, double got, FormatId output);

// GRADREL's rounding floor of a gradient whose exact value is `exact`:
// FlashAttention's (rounding_floor), or one ulp of the exact value in the
// output format where that is more. Gradients reach magnitudes (10^5 in
// bfloat16 in the ci draws) where r + 0.3 rounds back to r and
// FlashAttention's floor vanishes, while the output rounding alone may
// cost half an ulp and each stored P and dS as much again.
double gradient_floor(double exact, FormatId output);

// "dK (b=0, g=1, j=5, t=2)" for the flat index of a gradient tensor.
std::string gradient_element_name(const Problem& p, char tensor, std::size_t flat);

}  // namespace attnspec
