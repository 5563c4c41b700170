// ALiBi onto llama.cpp's ggml_flash_attn_ext, which takes no slopes: it
// computes query head h's slope from its max_bias argument and the head
// count Hq (ggml-cpu/ops.cpp, both the one-row and the tiled path), in
// float with powf:
//   n = the largest power of two <= Hq,
//   m0 = 2^(-max_bias / n), m1 = 2^(-(max_bias / 2) / n),
//   slope_h = m0^(h + 1) for h < n, m1^(2 (h - n) + 1) for the others,
// (1 for every head when max_bias is 0) and adds slope_h times the F16
// mask value to the logit, after the scale and softcap; llama.cpp's caller
// writes -|i - j| into the mask.
//
// The spec's slopes are any per head (SPEC 2.3). Where they are ALiBi's
// formula above for some max_bias, evaluated exactly and rounded to float
// (the paper's slopes are, with max_bias 8), ggml gets that max_bias and
// the mask holds -distance, as llama.cpp's does: ggml's own slopes, powf
// and all, are what is judged. Otherwise ggml's slopes are made powers of
// two (max_bias n, or 2 n when Hq is not a power of two) and the mask
// holds bias / slope_h, exact wherever it is an F16 number; the kernel
// declines a case where it is not.
#pragma once

#include <optional>
#include <vector>

#include "reference/problem.hpp"

namespace attnspec {

// ggml's slope for each of `heads` query heads under `max_bias`, as its
// CPU kernel computes them.
std::vector<float> ggml_alibi_slopes(float max_bias, int heads);

struct GgmlAlibi {
  float max_bias = 0.0f;
  // The problem's slopes are ALiBi's formula for max_bias: the mask holds
  // -distance, as llama.cpp's does, and ggml's own slopes are judged.
  bool formula = false;
  // What each query head's mask values (bias plus any additive mask) are
  // divided by: the problem's slope on the formula's path, ggml's (a power
  // of two) otherwise, 1 without ALiBi.
  std::vector<double> divisors;
};

// The max_bias for a problem's ALiBi (none: 0) over `heads` query heads and
// `batch` entries. Throws KernelUnsupported where ggml cannot take the
// slopes at all: per-batch slopes that differ between entries, or a
// negative or non-finite slope.
GgmlAlibi plan_ggml_alibi(const std::optional<Alibi>& alibi, int batch, int heads);

}  // namespace attnspec
