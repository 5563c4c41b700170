// Every built-in kernel against the certified reference and the precision
// model (spec/SPEC.md section 6): each output and lse within its a priori
// bound on random problems of every feature, fully masked rows exactly 0.
// The kernel's name is part of each test's name. A kernel with the wrong
// scale shows that the bound is not vacuous.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "adapters/naive/naive_kernel.hpp"
#include "adapters/registry.hpp"
#include "reference/certified.hpp"
#include "spec/precision_model.hpp"

namespace attnspec {
namespace {

struct Worst {
  double ratio = 0;     // error / bound, largest seen
  double error_u = 0;   // error in units of u_out * |P||V|
  double bound_u = 0;
  std::size_t elements = 0;
};

// Random problem of the given shape, inputs N(0, spread^2) rounded to the
// kernel's input format, with a random mix of features.
Problem random_problem(std::mt19937_64& random, Dims dims, FormatId input, double spread) {
  std::normal_distribution<double> normal(0.0, spread);
  Problem p;
  p.dims = dims;
  const auto fill = [&](std::vector<double>& t, std::size_t n) {
    t.resize(n);
    for (double& x : t) x = round_to_format(normal(random), input);
  };
  const std::size_t B = dims.batch, S = dims.kv_len;
  fill(p.q, p.rows() * dims.d_k);
  fill(p.k, B * dims.kv_heads * S * dims.d_k);
  fill(p.v, B * dims.kv_heads * S * dims.d_v);
  std::uniform_int_distribution<int> pick(0, 5);
  if (pick(random) == 0) p.scale = 0.3;
  if (pick(random) == 0) p.softcap = 3.0;
  const int causal = pick(random);
  p.causal = causal == 1 ? Causal::top_left : causal == 2 ? Causal::bottom_right : Causal::none;
  const int mask = pick(random);
  if (mask <= 1) {
    p.mask_kind = mask == 0 ? MaskKind::boolean : MaskKind::additive;
    p.mask.resize(static_cast<std::size_t>(dims.q_len) * S);
    std::uniform_real_distribution<double> uniform(0, 1);
    for (double& m : p.mask) {
      const bool blocked = uniform(random) < 0.3;
      m = mask == 0 ? (blocked ? 0.0 : 1.0) : (blocked ? -INFINITY : round_to_format(normal(random), input));
    }
  }
  return p;
}

Worst check_kernel(Kernel& kernel, const Problem& p) {
  Worst worst;
  const KernelResult got = kernel.run(p);
  const ReferenceResult ref = certified_attention(p);
  const FormatClass formats = format_class(kernel.formats());
  const double u_out = format_info(formats.output).unit_roundoff;
  const auto S = static_cast<std::size_t>(p.dims.kv_len), dv = static_cast<std::size_t>(p.dims.d_v);
  for (std::size_t row = 0; row < p.rows(); ++row) {
    const RowIndex r = p.row_index(row);
    const RowBound bound = precision_bound(p, r, formats, std::span(ref.weights).subspan(row * S, S),
                                           std::span(ref.out).subspan(row * dv, dv), ref.lse[row]);
    for (std::size_t t = 0; t < dv; ++t) {
      const double error = std::fabs(got.out[row * dv + t] - ref.out[row * dv + t]);
      EXPECT_LE(error, bound.out[t]) << kernel.name() << " row " << row << " column " << t << ": kernel "
                                     << got.out[row * dv + t] << ", reference " << ref.out[row * dv + t];
      ++worst.elements;
      if (bound.out[t] > 0) worst.ratio = std::max(worst.ratio, error / bound.out[t]);
      if (bound.scale[t] > 0) {
        worst.error_u = std::max(worst.error_u, error / (u_out * bound.scale[t]));
        worst.bound_u = std::max(worst.bound_u, bound.out[t] / (u_out * bound.scale[t]));
      }
    }
    if (ref.lse[row] == -INFINITY) {
      EXPECT_EQ(got.lse[row], -INFINITY) << kernel.name() << " row " << row;
    } else {
      EXPECT_LE(std::fabs(got.lse[row] - ref.lse[row]), bound.lse) << kernel.name() << " lse of row " << row;
    }
  }
  return worst;
}

class BuiltinKernel : public ::testing::TestWithParam<KernelEntry> {};

TEST_P(BuiltinKernel, WithinThePrecisionModelBoundOfTheCertifiedReference) {
  const std::unique_ptr<Kernel> kernel = GetParam().make();
  std::mt19937_64 random(2026);
  std::uniform_int_distribution<int> size(1, 6), group(1, 3);
  Worst overall;
  for (int trial = 0; trial < 30; ++trial) {
    Dims dims;
    dims.batch = size(random) % 2 + 1;
    dims.kv_heads = group(random) % 2 + 1;
    dims.q_heads = dims.kv_heads * group(random);
    dims.q_len = size(random);
    dims.kv_len = trial % 5 == 4 ? 70 + size(random) : size(random);  // several key tiles
    dims.d_k = size(random);
    dims.d_v = size(random);
    const Problem p = random_problem(random, dims, kernel->formats().input, trial % 3 == 2 ? 4.0 : 1.0);
    const Worst w = check_kernel(*kernel, p);
    overall.ratio = std::max(overall.ratio, w.ratio);
    overall.error_u = std::max(overall.error_u, w.error_u);
    overall.bound_u = std::max(overall.bound_u, w.bound_u);
    overall.elements += w.elements;
  }
  RecordProperty("max_error_over_bound", std::to_string(overall.ratio));
  std::printf("  %s: %zu outputs, max error %.3g u, max bound %.3g u, max error/bound %.3g\n",
              kernel->name().c_str(), overall.elements, overall.error_u, overall.bound_u, overall.ratio);
}

TEST_P(BuiltinKernel, FullyMaskedRowsAreExactlyZero) {
  const std::unique_ptr<Kernel> kernel = GetParam().make();
  std::mt19937_64 random(5);
  Problem p = random_problem(random, {1, 2, 1, 5, 3, 4, 2}, kernel->formats().input, 1.0);
  p.causal = Causal::bottom_right;  // L = 5 > S = 3: rows 0 and 1 see nothing
  p.mask_kind = MaskKind::none;
  p.mask.clear();
  const KernelResult got = kernel->run(p);
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 2; ++i) {
      const std::size_t row = p.row_flat({0, h, i});
      EXPECT_EQ(got.out[row * 2], 0.0);
      EXPECT_EQ(got.out[row * 2 + 1], 0.0);
      EXPECT_EQ(got.lse[row], -INFINITY);
    }
}
// With sinks: an empty row outputs 0 with lse the sink; a row whose
// logits are all -inf because its query is infinite is NaN (SPEC 2.3),
// though a finite sink in the maximum would make its weights 0 (the
// false-alarm sweep at commit 8a0a8d1, seed 2, caught the naive kernels so).
TEST_P(BuiltinKernel, SinksInEmptyAndInfiniteRows) {
  const std::unique_ptr<Kernel> kernel = GetParam().make();
  std::mt19937_64 random(6);
  Problem p = random_problem(random, {1, 2, 1, 3, 2, 1, 1}, kernel->formats().input, 1.0);
  p.causal = Causal::bottom_right;  // L = 3 > S = 2: row 0 sees nothing
  p.mask_kind = MaskKind::none;
  p.mask.clear();
  p.sinks = {0.5, -INFINITY};
  p.k = {-1.0, -0.5};
  p.q[p.row_flat({0, 0, 2})] = INFINITY;  // q.k = -inf at both keys
  const KernelResult got = kernel->run(p);
  EXPECT_EQ(got.out[p.row_flat({0, 0, 0})], 0.0);
  EXPECT_EQ(got.lse[p.row_flat({0, 0, 0})], 0.5);
  EXPECT_EQ(got.out[p.row_flat({0, 1, 0})], 0.0);
  EXPECT_EQ(got.lse[p.row_flat({0, 1, 0})], -INFINITY);
  EXPECT_TRUE(std::isnan(got.out[p.row_flat({0, 0, 2})]));
  EXPECT_TRUE(std::isnan(got.lse[p.row_flat({0, 0, 2})]));
}

INSTANTIATE_TEST_SUITE_P(Builtins, BuiltinKernel, ::testing::ValuesIn(builtin_kernels().begin(), builtin_kernels().end()),
                         [](const auto& info) {
                           std::string name(info.param.name);
                           for (char& c : name)
                             if (c == '-') c = '_';
                           return name;
                         });

// The bound has teeth: scaling by 1/sqrt(d_model) instead of 1/sqrt(d_k)
// (seed 000's warning; adapters/mutants) is far outside it.
TEST(PrecisionModel, CatchesAScaleBySqrtOfModelWidth) {
  const std::unique_ptr<Kernel> mutant = make_kernel("mutant-scale-dmodel");
  Kernel& kernel = *mutant;
  std::mt19937_64 random(9);
  const Problem p = random_problem(random, {1, 4, 4, 3, 5, 8, 2}, FormatId::float32, 1.0);
  const ReferenceResult ref = certified_attention(p);
  const KernelResult got = kernel.run(p);
  std::size_t outside = 0;
  for (std::size_t row = 0; row < p.rows(); ++row) {
    const RowBound bound = precision_bound(p, p.row_index(row), FormatClass{FormatId::float32, FormatId::float32, std::nullopt, 1},
                                           std::span(ref.weights).subspan(row * 5, 5),
                                           std::span(ref.out).subspan(row * 2, 2), ref.lse[row]);
    for (std::size_t t = 0; t < 2; ++t)
      if (std::fabs(got.out[row * 2 + t] - ref.out[row * 2 + t]) > bound.out[t]) ++outside;
  }
  EXPECT_GT(outside, p.out_size() / 2);
}

// FlashAttention 3's fp8 path rounds P (times 256) to e4m3 for P V: its
// errors are of e4m3's unit roundoff, 2^-4, which the bound covers only
// with the term of the declared weights format (SPEC 6.4), and within it.
TEST(PrecisionModel, WeightsRoundedToE4m3NeedTheirTerm) {
  const std::unique_ptr<Kernel> kernel = make_kernel("online-fp8");
  std::mt19937_64 random(10);
  Problem p = random_problem(random, {1, 2, 1, 4, 96, 16, 8}, FormatId::float8_e4m3fn, 1.0);
  p.descales = Descales{{0.5}, {0.75}, {0x1.8p-3}, false};
  const ReferenceResult ref = certified_attention(p);
  const KernelResult got = kernel->run(p);
  const Problem real = apply_descales(p);
  FormatClass declared = format_class(kernel->formats()), unrounded = declared;
  unrounded.weights.reset();
  std::size_t outside_declared = 0, outside_unrounded = 0;
  const std::size_t S = 96, dv = 8;
  for (std::size_t row = 0; row < p.rows(); ++row) {
    const auto weights = std::span(ref.weights).subspan(row * S, S);
    const auto out = std::span(ref.out).subspan(row * dv, dv);
    const RowBound with = precision_bound(real, p.row_index(row), declared, weights, out, ref.lse[row]);
    const RowBound without = precision_bound(real, p.row_index(row), unrounded, weights, out, ref.lse[row]);
    for (std::size_t t = 0; t < dv; ++t) {
      const double error = std::fabs(got.out[row * dv + t] - ref.out[row * dv + t]);
      outside_declared += error > with.out[t];
      outside_unrounded += error > without.out[t];
    }
  }
  EXPECT_EQ(outside_declared, 0u);
  EXPECT_GT(outside_unrounded, p.out_size() / 4);
}

// PRECREL's second yardstick sums each q.k as one running float32 sum in
// index order. Key 0's q.k = 2^24 + 1 - 2^24 = 1 exactly, but that order
// rounds 2^24 + 1 to 2^24 and gives 0; key 1's is 0. With equal logits the
// output is the mean of the two values, (2 + 4) / 2, and no other outcome
// is that order's.
TEST(NaiveYardstick, RunningSumTakesEachQkInIndexOrder) {
  Problem p;
  p.dims = {1, 1, 1, 1, 2, 3, 1};
  p.scale = 1.0;
  p.q = {0x1p24, 1, -0x1p24};
  p.k = {1, 1, 1, 0, 0, 0};
  p.v = {2, 4};
  const KernelFormats f32{FormatId::float32, FormatId::float32, FormatId::float32};
  EXPECT_EQ(make_naive_kernel(f32, LogitProduct::running_sum)->run(p).out, std::vector<double>{3.0});
  // The exact logits (1 and 0) give (2e + 4) / (e + 1), which the
  // certified reference rounds to about 2.5379.
  EXPECT_NEAR(certified_attention(p).out[0], (2 * std::exp(1.0) + 4) / (std::exp(1.0) + 1), 1e-12);
}

}  // namespace
}  // namespace attnspec
