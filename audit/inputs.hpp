// The input distributions of `attnspec audit`: random Q, K and V drawn from
// a named distribution and rounded to the kernel's input format. The
// generator is our own (SplitMix-seeded mt19937_64 and Box-Muller), not
// std::normal_distribution, whose algorithm differs between standard
// libraries: the same seed gives the same audit everywhere, so the README's
// figures can be reproduced.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string_view>

#include "formats/format.hpp"
#include "reference/problem.hpp"

namespace attnspec {

enum class InputDistribution {
  normal,    // Q, K, V iid N(0, 1)
  uniform,   // iid U(-1, 1)
  outliers,  // N(0,1) + N(0,100) Bernoulli(0.001): FlashAttention-3's Table 3 (sd 10 outliers)
  ties,      // keys drawn from 4 base vectors plus small noise: logits nearly tie
  large,     // Q and K with standard deviation 10: scaled logits in the hundreds
};

std::string_view to_string(InputDistribution distribution);
std::optional<InputDistribution> parse_distribution(std::string_view name);
std::string_view distribution_names();  // "normal|uniform|outliers|ties|large"
// One sentence for reports: what the distribution draws.
std::string_view describe(InputDistribution distribution);

// Reproducible draws (see the file comment).
class InputRandom {
 public:
  explicit InputRandom(std::uint64_t seed);
  double uniform01();  // in [0, 1), 53 random bits
  double normal();     // N(0, 1)
  std::uint64_t below(std::uint64_t n);  // uniform integer in [0, n)

 private:
  std::mt19937_64 engine_;
  std::optional<double> spare_normal_;
};

// One draw of the distribution for Q, K and V (ties and large differ
// between tensors; this is the plain per-value law of normal, uniform and
// outliers), before rounding.
double draw_value(InputDistribution distribution, InputRandom& random);

// An unmasked problem with the default scale: Q [B, Hq, L, d_k], K and V
// [B, Hkv, S, d_k / d_v], every value rounded to `input`. Throws
// std::invalid_argument for dims that do not validate.
Problem make_audit_problem(const Dims& dims, InputDistribution distribution, FormatId input, std::uint64_t seed);

}  // namespace attnspec
