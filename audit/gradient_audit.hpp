// The backward's part of `attnspec audit --backward`: the kernel's dQ, dK,
// dV and sink gradients on the audit's whole problem (with a drawn dO)
// against the certified gradients, with the forward's measures (spec/SPEC.md
// 6.11's units: u_out times each value's terms' magnitudes), SPEC 6.11's
// bound, and GRADREL's yardstick and criterion on this one problem.
#pragma once

#include <cstdint>
#include <vector>

#include "adapters/kernel.hpp"
#include "audit/inputs.hpp"
#include "audit/measures.hpp"

namespace attnspec {

struct GradientTensorAudit {
  char tensor = 'Q';  // 'Q', 'K', 'V', or 'S' for the sinks' gradient
  std::size_t values = 0;
  // The textbook backward in the kernel's formats, P from the softmax and
  // D from P dP: the first of GRADREL's four ways.
  ErrorMeasures kernel, textbook;
  // GRADREL on this one problem, as the clause judges a shape class
  // (properties/gradient_yardstick.hpp), over the values where the
  // yardstick is finite; the others are counted.
  double yardstick_max_abs = 0;        // the largest max abs error of the four ways
  double floor = 0;                    // the rounding floor
  double ratio = 0;                    // the kernel's max abs error there / yardstick_max_abs
  bool within_gradrel = true;          // the criterion met
  std::size_t gradrel_not_judged = 0;  // values where the yardstick overflows
  BoundComparison bound;         // against SPEC 6.11 (units u_out x the terms' magnitudes)
};

struct GradientAudit {
  std::vector<GradientTensorAudit> tensors;  // dQ, dK, dV, and the sinks' where the problem has sinks
  double kernel_seconds = 0, reference_seconds = 0;
};

// dO for `p`: values of `distribution`'s plain law from their own stream
// of `seed`, rounded to `input`.
std::vector<double> draw_dout(const Problem& p, InputDistribution distribution, FormatId input, std::uint64_t seed);

// p carries dO and no descales; the kernel has a backward.
GradientAudit audit_gradients(Kernel& kernel, const Problem& p);

}  // namespace attnspec
