// The spec's ALiBi slopes onto ggml's max_bias (alibi_slopes.hpp says how
// ggml computes its slopes and why the adapter writes bias / slope into the
// mask).
#include "adapters/ggml/alibi_slopes.hpp"

#include <bit>
#include <cmath>
#include <string>

#include "adapters/kernel.hpp"

namespace attnspec {

std::vector<float> ggml_alibi_slopes(float max_bias, int heads) {
  std::vector<float> slopes(static_cast<std::size_t>(heads), 1.0f);
  if (!(max_bias > 0.0f)) return slopes;
  // float operations in ggml's order: the quotient by n is a float one.
  const auto n = static_cast<float>(std::bit_floor(static_cast<unsigned>(heads)));
  const float m0 = std::pow(2.0f, -max_bias / n);
  const float m1 = std::pow(2.0f, -(max_bias / 2.0f) / n);
  for (int h = 0; h < heads; ++h)
    slopes[static_cast<std::size_t>(h)] = static_cast<float>(h) < n ? std::pow(m0, static_cast<float>(h + 1))
                                                                     : std::pow(m1, static_cast<float>(2 * (h - static_cast<int>(n)) + 1));
  return slopes;
}

GgmlAlibi plan_ggml_alibi(const std::optional<Alibi>& alibi, int batch, int heads) {
  GgmlAlibi plan;
  if (!alibi) {
    plan.divisors.assign(static_cast<std::size_t>(heads), 1.0);
    return plan;
  }
  const auto H = static_cast<std::size_t>(heads);
  std::vector<double> slopes(alibi->slopes.begin(), alibi->slopes.begin() + static_cast<std::ptrdiff_t>(H));
  if (alibi->per_batch)
    for (std::size_t b = 1; b < static_cast<std::size_t>(batch); ++b)
      for (std::size_t h = 0; h < H; ++h)
        if (alibi->slopes[b * H + h] != slopes[h])
          throw KernelUnsupported("ggml's ALiBi slopes are one per head; these differ between batch entries");
  for (double s : slopes)
    if (!std::isfinite(s) || s < 0.0) throw KernelUnsupported("ggml takes no negative or non-finite ALiBi slope");
  // Slopes of ALiBi's formula for some max_bias (the paper's: 8), rounded
  // to float: ggml is given that max_bias and judged on the slopes it
  // computes from it (powf, which can miss the rounded formula by an ulp
  // or two). Head 0's slope is 2^(-max_bias / n); the candidates are that
  // max_bias in float and rounded to 1/1024 (a slope rounded to float
  // moves the logarithm off a round max_bias).
  if (slopes[0] > 0.0) {
    const unsigned n = std::bit_floor(static_cast<unsigned>(heads));
    const double exact = -std::log2(slopes[0]) * n;
    for (const double candidate : {exact, std::round(exact * 1024.0) / 1024.0}) {
      const auto max_bias = static_cast<float>(candidate);
      if (!(max_bias > 0.0f)) continue;
      const double m = static_cast<double>(max_bias);
      bool formula = true;
      for (unsigned h = 0; formula && h < H; ++h) {
        const double exponent = h < n ? -m * (h + 1) / n : -(m / 2) * (2 * (h - n) + 1) / n;
        formula = static_cast<double>(static_cast<float>(std::exp2(exponent))) == slopes[h];
      }
      if (formula) {
        plan.max_bias = max_bias;
        plan.formula = true;
        plan.divisors = slopes;
        return plan;
      }
    }
  }
  // Otherwise slopes that are powers of two: m0 = 1/2 (or 1/4 and m1 = 1/2
  // where Hq is not a power of two).
  const unsigned n = std::bit_floor(static_cast<unsigned>(heads));
  plan.max_bias = static_cast<float>(n == static_cast<unsigned>(heads) ? n : 2 * n);
  const std::vector<float> ggml = ggml_alibi_slopes(plan.max_bias, heads);
  plan.divisors.assign(ggml.begin(), ggml.end());
  return plan;
}

}  // namespace attnspec
