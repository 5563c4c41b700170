// The textbook composition, with Eigen: Q K^T, scale, softcap, mask,
// max-shifted softmax, P V, all in one floating-point type. naive-f64 and
// naive-f32; also the yardstick of the PRECREL clause.
#pragma once

#include <memory>

#include "adapters/kernel.hpp"

namespace attnspec {

std::unique_ptr<Kernel> make_naive_f64();
std::unique_ptr<Kernel> make_naive_f32();
// The naive composition in another kernel's formats, the yardstick of
// PRECREL: float64 arithmetic for a float64 accumulator, float32 for any
// other; with a narrower accumulator (bfloat16, float16, float8) the
// logits, weights and output are stored in it between the steps, as a
// framework composing 16-bit tensor operations does; the result rounded
// to `output`.
std::unique_ptr<Kernel> make_naive_kernel(FormatId accumulate, FormatId output);

// The order of each q.k sum. `blocked`: Eigen's product, whose order is
// Eigen's: for a head of one query row (a matrix-vector product) several
// partial sums, so it errs about as little as any order; for several rows
// (built as this project builds, without FMA) mostly each sum in index
// order, the running sum's. `running_sum`: one running sum in index order,
// the plainest order a kernel may take. PRECREL's yardstick is the worse
// of the two at each output (spec/SPEC.md, PRECREL).
enum class LogitProduct { blocked, running_sum };

// The same, for a kernel that also declares a weights format (spec/SPEC.md
// 6.4): the unnormalised weights times the scale rounded to it for P V, the
// denominator from the weights before that rounding, as FlashAttention 3's
// own reference of its fp8 path does not but its kernel does.
std::unique_ptr<Kernel> make_naive_kernel(const KernelFormats& formats,
                                          LogitProduct product = LogitProduct::blocked);

}  // namespace attnspec
