// Cost of the certified reference per output element, next to a plain
// double implementation (max-shifted softmax, no certification) on the same
// problems: the multiprecision path (BM_certified) and the fast path
// (BM_fast_certified, reference/fast_reference.hpp) with the fraction of
// rows it escalates, per input distribution. Each benchmark reports ns per
// output element and the ratio to plain double, measured in the same
// process. Run: build/bench/reference_bench
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <vector>

#include "reference/certified.hpp"
#include "reference/fast_reference.hpp"

namespace attnspec {
namespace {

enum class Inputs { normal, uniform, outliers, ties, large };
const char* const kInputNames[] = {"normal", "uniform", "outliers", "ties", "large"};

// Inputs rounded to bfloat16 (8 bits), as a bf16 kernel would see them:
// N(0,1); U(-1,1); FlashAttention-3's N(0,1) + N(0,100) Bernoulli(0.001);
// quarter-integers in [-2, 2] (many tied logits); N(0,16) (logits in the
// hundreds).
Problem bench_problem(int L, int S, int d, Inputs inputs = Inputs::normal) {
  std::mt19937_64 random(42);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::bernoulli_distribution rare(0.001);
  Problem p;
  p.dims.q_len = L;
  p.dims.kv_len = S;
  p.dims.d_k = p.dims.d_v = d;
  const auto draw = [&] {
    switch (inputs) {
      case Inputs::uniform: return uniform(random);
      case Inputs::outliers: return normal(random) + (rare(random) ? 10 * normal(random) : 0.0);
      case Inputs::ties: return std::clamp(std::round(normal(random) * 4) / 4, -2.0, 2.0);
      case Inputs::large: return 4 * normal(random);
      case Inputs::normal: break;
    }
    return normal(random);
  };
  const auto fill = [&](std::vector<double>& t, std::size_t n) {
    t.resize(n);
    for (double& x : t) x = round_to_format(draw(), FormatId::bfloat16);
  };
  fill(p.q, static_cast<std::size_t>(L) * d);
  fill(p.k, static_cast<std::size_t>(S) * d);
  fill(p.v, static_cast<std::size_t>(S) * d);
  return p;
}

// The textbook algorithm in double: the yardstick.
std::vector<double> plain_double(const Problem& p) {
  const int L = p.dims.q_len, S = p.dims.kv_len, dk = p.dims.d_k, dv = p.dims.d_v;
  const double scale = 1.0 / std::sqrt(static_cast<double>(dk));
  std::vector<double> out(static_cast<std::size_t>(L) * dv, 0.0), logits(static_cast<std::size_t>(S));
  for (int i = 0; i < L; ++i) {
    double max = -INFINITY;
    for (int j = 0; j < S; ++j) {
      double dot = 0;
      for (int t = 0; t < dk; ++t) dot += p.q[static_cast<std::size_t>(i) * dk + t] * p.k[static_cast<std::size_t>(j) * dk + t];
      logits[static_cast<std::size_t>(j)] = dot * scale;
      max = std::max(max, logits[static_cast<std::size_t>(j)]);
    }
    double sum = 0;
    for (double& x : logits) sum += (x = std::exp(x - max));
    for (double& x : logits) x /= sum;
    for (int j = 0; j < S; ++j)
      for (int t = 0; t < dv; ++t)
        out[static_cast<std::size_t>(i) * dv + t] += logits[static_cast<std::size_t>(j)] * p.v[static_cast<std::size_t>(j) * dv + t];
  }
  return out;
}

double seconds_of_plain_double(const Problem& p) {
  int repetitions = 0;
  const auto start = std::chrono::steady_clock::now();
  double elapsed = 0;
  do {
    benchmark::DoNotOptimize(plain_double(p));
    ++repetitions;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  } while (elapsed < 0.2);
  return elapsed / repetitions;
}

// The counters every reference benchmark reports: ns per output for the
// reference and for plain double on the same problem, and their ratio.
void report_against_plain_double(benchmark::State& state, const Problem& p, double reference_seconds) {
  const double double_seconds = seconds_of_plain_double(p);
  const double outputs = static_cast<double>(p.out_size());
  state.counters["certified_ns_per_out"] = reference_seconds / outputs * 1e9;
  state.counters["double_ns_per_out"] = double_seconds / outputs * 1e9;
  state.counters["ratio"] = reference_seconds / double_seconds;
}

double seconds_per_iteration(const benchmark::State& state, std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
         static_cast<double>(state.iterations());
}

void BM_certified(benchmark::State& state) {
  const Problem p = bench_problem(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)),
                                  static_cast<int>(state.range(2)));
  ReferenceOptions options;
  options.target = static_cast<FormatId>(state.range(3));
  options.weights = false;
  std::size_t refined = 0;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    const ReferenceResult r = certified_attention(p, options);
    refined = r.stats.refined_rows;
    benchmark::DoNotOptimize(r.out.data());
  }
  report_against_plain_double(state, p, seconds_per_iteration(state, start));
  state.counters["refined_rows"] = static_cast<double>(refined);
  state.SetLabel(std::string(format_info(options.target).name));
}

void shapes(benchmark::internal::Benchmark* b) {
  for (auto target : {FormatId::float64, FormatId::float32, FormatId::bfloat16})
    for (auto [L, S, d] : {std::tuple{16, 16, 16}, std::tuple{64, 64, 64}, std::tuple{32, 256, 128}})
      b->Args({L, S, d, static_cast<long>(target)});
  b->ArgNames({"L", "S", "d", "format"})->Unit(benchmark::kMillisecond);
}
BENCHMARK(BM_certified)->Apply(shapes);

void BM_fast_certified(benchmark::State& state) {
  const auto inputs = static_cast<Inputs>(state.range(4));
  const Problem p = bench_problem(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)),
                                  static_cast<int>(state.range(2)), inputs);
  const auto target = static_cast<FormatId>(state.range(3));
  std::size_t escalated = 0, escalated_outputs = 0;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    const FastReferenceResult r = fast_certified_attention(p, target);
    escalated = r.escalated_rows;
    escalated_outputs = r.escalated_outputs;
    benchmark::DoNotOptimize(r.out.data());
  }
  report_against_plain_double(state, p, seconds_per_iteration(state, start));
  const double outputs = static_cast<double>(p.out_size());
  state.counters["escalated_rows_pct"] = 100.0 * static_cast<double>(escalated) / static_cast<double>(p.rows());
  state.counters["escalated_outputs_pct"] = 100.0 * static_cast<double>(escalated_outputs) / outputs;
  state.SetLabel(std::string(format_info(target).name) + " " + kInputNames[state.range(4)]);
}

void fast_shapes(benchmark::internal::Benchmark* b) {
  for (auto target : {FormatId::float32, FormatId::bfloat16, FormatId::float16})
    for (auto [L, S, d] : {std::tuple{64, 64, 64}, std::tuple{32, 256, 128}, std::tuple{16, 4096, 128}})
      b->Args({L, S, d, static_cast<long>(target), static_cast<long>(Inputs::normal)});
  for (long inputs = 1; inputs <= 4; ++inputs)
    for (auto target : {FormatId::float32, FormatId::bfloat16, FormatId::float16})
      b->Args({32, 256, 128, static_cast<long>(target), inputs});
  // float64 targets: decided on the extended rung where it can.
  for (auto [L, S, d] : {std::tuple{64, 64, 64}, std::tuple{32, 256, 128}, std::tuple{16, 4096, 128}})
    b->Args({L, S, d, static_cast<long>(FormatId::float64), static_cast<long>(Inputs::normal)});
  b->ArgNames({"L", "S", "d", "format", "inputs"})->Unit(benchmark::kMillisecond);
}
BENCHMARK(BM_fast_certified)->Apply(fast_shapes);

// How often the fast path escalates for a float32 target, and what that
// costs on average: 40 problems of 32 x 256 x 128 with N(0,1) inputs
// (seeds 1-40), outputs counted, total time against plain double's.
void BM_fast_escalation_rate(benchmark::State& state) {
  std::size_t outputs = 0, escalated = 0;
  double fast_seconds = 0, double_seconds = 0;
  for (auto _ : state) {
    outputs = escalated = 0;
    for (unsigned seed = 1; seed <= 40; ++seed) {
      std::mt19937_64 random(seed);
      std::normal_distribution<double> normal(0.0, 1.0);
      Problem p;
      p.dims.q_len = 32;
      p.dims.kv_len = 256;
      p.dims.d_k = p.dims.d_v = 128;
      for (auto* tensor : {&p.q, &p.k, &p.v}) {
        tensor->resize(tensor == &p.q ? 32 * 128 : 256 * 128);
        for (double& x : *tensor) x = round_to_format(normal(random), FormatId::bfloat16);
      }
      const auto start = std::chrono::steady_clock::now();
      const FastReferenceResult r = fast_certified_attention(p, FormatId::float32);
      fast_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      double_seconds += seconds_of_plain_double(p);
      outputs += r.out.size();
      escalated += r.escalated_outputs;
    }
  }
  state.counters["outputs"] = static_cast<double>(outputs);
  state.counters["escalated_outputs"] = static_cast<double>(escalated);
  state.counters["ratio"] = fast_seconds / double_seconds;
}
BENCHMARK(BM_fast_escalation_rate)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
}  // namespace attnspec

BENCHMARK_MAIN();
