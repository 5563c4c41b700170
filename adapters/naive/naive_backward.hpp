// The backward of naive-f64 and naive-f32: the textbook gradients of
// reference/textbook_gradients.hpp (PyTorch's math path composed from the
// forward's operations) in the kernel's arithmetic.
#pragma once

#include <vector>

#include "adapters/kernel.hpp"
#include "reference/textbook_gradients.hpp"

namespace attnspec {

// Gradients computed in Scalar (float or double), rounded to `output`;
// `storage`: the intermediates a 16-bit composition rounds (GRADREL's
// yardstick).
template <typename Scalar>
GradientOutputs naive_gradients(const Problem& p, FormatId output, const TextbookStorage& storage = {});

// GRADREL's yardsticks: the textbook backward in another kernel's
// formats, as make_naive_kernel's forward takes them (float64 arithmetic
// for a float64 accumulator, float32 for any other; a narrower
// accumulator's intermediates stored in it), P and dS also stored in the
// kernel's gradient storage format, the gradients rounded to its output
// format; one for each of spec/SPEC.md 6.11's four ways of taking the
// forward's state (P from the softmax or recomputed from the lse stored in
// the arithmetic's format; D from P dP or from the output stored in the
// output format).
std::vector<GradientOutputs> naive_yardstick_gradients(const KernelFormats& formats, const Problem& p);

}  // namespace attnspec
