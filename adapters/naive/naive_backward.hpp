// The backward of naive-f64 and naive-f32: the textbook gradients of
// reference/textbook_gradients.hpp (PyTorch's math path composed from the
// forward's operations) in the kernel's arithmetic.
#pragma once

#include "adapters/kernel.hpp"

namespace attnspec {

// Gradients computed in Scalar (float or double), rounded to `output`.
template <typename Scalar>
GradientOutputs naive_gradients(const Problem& p, FormatId output);

}  // namespace attnspec
