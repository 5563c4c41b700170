// The textbook backward pass (spec/SPEC.md section 2.6) in one
// floating-point type, as a framework's autograd composes it from the
// forward's operations (PyTorch's math path): P recomputed as the forward
// computes it, dV = P^T dO, dP = dO V^T, D = rowsum(P * dP), dS = P * (dP -
// D) times the softcap's derivative and the scale, dQ = dS K, dK = dS^T Q,
// and each sink's -sum P_sink D. The backward of naive-f64 and naive-f32.
#pragma once

#include "adapters/kernel.hpp"

namespace attnspec {

// Gradients computed in Scalar (float or double), rounded to `output`.
template <typename Scalar>
GradientOutputs naive_gradients(const Problem& p, FormatId output);

}  // namespace attnspec
