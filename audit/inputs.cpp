// Input distributions of the audit; see inputs.hpp.
#include "audit/inputs.hpp"

#include <array>
#include <cmath>
#include <numbers>
#include <stdexcept>

namespace attnspec {
namespace {

struct DistributionName {
  InputDistribution distribution;
  std::string_view name;
  std::string_view description;
};

constexpr std::array kDistributions = {
    DistributionName{InputDistribution::normal, "normal", "Q, K and V iid N(0, 1)"},
    DistributionName{InputDistribution::uniform, "uniform", "Q, K and V iid U(-1, 1)"},
    DistributionName{InputDistribution::outliers, "outliers",
                     "Q, K and V iid N(0, 1) + N(0, 100) * Bernoulli(0.001) (FlashAttention-3, Table 3; the outliers "
                     "have standard deviation 10)"},
    DistributionName{InputDistribution::ties, "ties",
                     "Q and V iid N(0, 1); each key one of 4 base vectors (iid N(0, 1), per batch and kv head) plus "
                     "iid N(0, 1/64^2) noise, so logits nearly tie in groups"},
    DistributionName{InputDistribution::large, "large",
                     "Q and K iid N(0, 100), V iid N(0, 1): scaled logits with standard deviation 100"},
};

// Per-key noise of `ties`: small next to the base vectors, so logits of the
// same group nearly tie, yet mostly above the input format's spacing (about
// 2^-8 relative for bfloat16), so not every tie is exact.
constexpr double kTieNoise = 1.0 / 64;
constexpr int kTieGroups = 4;
constexpr double kLargeSpread = 10;  // standard deviation of Q and K under `large`

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

std::string_view to_string(InputDistribution distribution) {
  for (const auto& entry : kDistributions)
    if (entry.distribution == distribution) return entry.name;
  return "?";
}

std::optional<InputDistribution> parse_distribution(std::string_view name) {
  for (const auto& entry : kDistributions)
    if (entry.name == name) return entry.distribution;
  return std::nullopt;
}

std::string_view distribution_names() { return "normal|uniform|outliers|ties|large"; }

std::string_view describe(InputDistribution distribution) {
  for (const auto& entry : kDistributions)
    if (entry.distribution == distribution) return entry.description;
  return "";
}

InputRandom::InputRandom(std::uint64_t seed) : engine_(splitmix64(seed)) {}

double InputRandom::uniform01() { return static_cast<double>(engine_() >> 11) * 0x1p-53; }

double InputRandom::normal() {
  if (spare_normal_) {
    const double x = *spare_normal_;
    spare_normal_.reset();
    return x;
  }
  // Box-Muller; 1 - uniform01() is in (0, 1], so the log is finite.
  const double radius = std::sqrt(-2 * std::log(1 - uniform01()));
  const double angle = 2 * std::numbers::pi * uniform01();
  spare_normal_ = radius * std::sin(angle);
  return radius * std::cos(angle);
}

std::uint64_t InputRandom::below(std::uint64_t n) {
  if (n == 0) throw std::invalid_argument("InputRandom::below(0)");
  // Rejection of the top partial block keeps every value equally likely.
  const std::uint64_t limit = std::numeric_limits<std::uint64_t>::max() - std::numeric_limits<std::uint64_t>::max() % n;
  std::uint64_t x = engine_();
  while (x >= limit) x = engine_();
  return x % n;
}

double draw_value(InputDistribution distribution, InputRandom& random) {
  switch (distribution) {
    case InputDistribution::uniform: return 2 * random.uniform01() - 1;
    case InputDistribution::outliers: {
      const double x = random.normal();
      // Bernoulli(0.001) decides whether a N(0, 100) term (sd 10) is added.
      return random.uniform01() < 0.001 ? x + 10 * random.normal() : x;
    }
    case InputDistribution::normal:
    case InputDistribution::ties:
    case InputDistribution::large: return random.normal();
  }
  return 0;
}

Problem make_audit_problem(const Dims& dims, InputDistribution distribution, FormatId input, std::uint64_t seed) {
  Problem p;
  p.dims = dims;
  const auto B = static_cast<std::size_t>(dims.batch), Hq = static_cast<std::size_t>(dims.q_heads),
             Hkv = static_cast<std::size_t>(dims.kv_heads), L = static_cast<std::size_t>(dims.q_len),
             S = static_cast<std::size_t>(dims.kv_len), dk = static_cast<std::size_t>(dims.d_k),
             dv = static_cast<std::size_t>(dims.d_v);
  p.q.resize(B * Hq * L * dk);
  p.k.resize(B * Hkv * S * dk);
  p.v.resize(B * Hkv * S * dv);
  if (const auto errors = validate(p); !errors.empty()) throw std::invalid_argument(errors.front());

  InputRandom random(seed);
  const double qk_spread = distribution == InputDistribution::large ? kLargeSpread : 1;
  for (double& x : p.q) x = round_to_format(qk_spread * draw_value(distribution, random), input);
  if (distribution == InputDistribution::ties) {
    std::vector<double> bases(kTieGroups * dk);
    for (std::size_t head = 0; head < B * Hkv; ++head) {
      for (double& x : bases) x = random.normal();
      for (std::size_t j = 0; j < S; ++j) {
        const std::size_t group = random.below(kTieGroups);
        for (std::size_t t = 0; t < dk; ++t)
          p.k[(head * S + j) * dk + t] = round_to_format(bases[group * dk + t] + kTieNoise * random.normal(), input);
      }
    }
  } else {
    for (double& x : p.k) x = round_to_format(qk_spread * draw_value(distribution, random), input);
  }
  const InputDistribution value_law = distribution == InputDistribution::outliers  ? InputDistribution::outliers
                                      : distribution == InputDistribution::uniform ? InputDistribution::uniform
                                                                                   : InputDistribution::normal;
  for (double& x : p.v) x = round_to_format(draw_value(value_law, random), input);
  return p;
}

}  // namespace attnspec
