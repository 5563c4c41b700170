// `attnspec audit`: how precise a kernel is, on one shape or a sweep over
// S or d_k. The kernel runs on the full problem; the fast certified
// reference (reference/fast_reference.hpp) checks a seeded random sample of
// query rows per (batch, head); each checked element is measured
// (audit/measures.hpp) against three yardsticks: the precision model's a
// priori bound (spec/SPEC.md section 6), the naive implementation in the
// same formats on the same rows (the FlashAttention criterion), and the
// correctly rounded value itself (the output-rounding floor).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/kernel.hpp"
#include "audit/inputs.hpp"
#include "audit/gradient_audit.hpp"
#include "audit/measures.hpp"
#include "reference/problem.hpp"

namespace attnspec {

enum class SweepAxis { none, kv_len, d_k };
std::optional<SweepAxis> parse_sweep_axis(std::string_view name);  // "S" or "Dk"
std::string_view to_string(SweepAxis axis);                         // "none", "S", "Dk"

// The sweep's values of S or d_k up to `full`: powers of two from 128 (S)
// or 16 (d_k) below it, then `full`; when that gives fewer than 3 values,
// full/4, full/2, full (duplicates and zeros dropped).
std::vector<int> sweep_values(SweepAxis axis, int full);

// Query rows checked per (batch, head) when --rows is not given: every row
// up to this length, else kDefaultSampledRows.
constexpr int kAllRowsUpTo = 256;
constexpr int kDefaultSampledRows = 64;

struct AuditOptions {
  Dims shape;
  InputDistribution distribution = InputDistribution::normal;
  std::uint64_t seed = 1;
  int rows_per_head = 0;  // 0: the default above
  SweepAxis sweep = SweepAxis::none;
  // Where the rows sit (spec/SPEC.md section 2.2, 2.3): causal masking, a
  // sliding window, ALiBi with the paper's slopes; and sinks. The sampled rows keep
  // their positions: the naive yardstick and the worst-row case get them
  // as an explicit additive mask.
  Causal causal = Causal::none;
  std::optional<Window> window;
  std::optional<Alignment> alibi;
  std::optional<double> sink;  // an attention sink of this logit (a float32 value) for every query head
  // Descale factors of q, k and v (float32 values > 0) for every (batch, kv
  // head): the kernel's inputs are the drawn values, the real ones their
  // products (spec/SPEC.md section 2.4).
  std::optional<std::array<double, 3>> descales;
  bool backward = false;  // also the gradients, with a drawn dO (audit/gradient_audit.hpp)
  unsigned threads = 0;   // reference threads; 0: one per core
  std::function<void(const std::string&)> progress;  // one line per step, for stderr
};

struct WorstKey {
  int index = 0;
  double weight = 0;  // approximate
  double value = 0;   // V[index][column]
};

// The element with the largest componentwise error, with what produced it.
struct WorstElement {
  RowIndex row;
  int column = 0;
  double got = 0;
  double exact = 0;        // within exact_error of the exact value
  double exact_error = 0;
  double correctly_rounded = 0;
  double abs_scale = 0;    // |P||V|
  double bound = 0;        // B_t, absolute
  double componentwise = 0;
  double ulps = 0;
  std::vector<double> query;        // the row's q
  std::vector<WorstKey> top_keys;   // the most heavily weighted keys, heaviest first
  Problem case_problem;             // the row alone (B = Hq = Hkv = L = 1), for a case directory
};

struct AuditPoint {
  Dims shape;
  int rows_per_head = 0;
  std::size_t checked_rows = 0;
  std::size_t checked_elements = 0;
  std::size_t escalated_rows = 0;  // decided by the multiprecision reference
  double kernel_seconds = 0;
  double naive_seconds = 0;
  double reference_seconds = 0;
  ErrorMeasures kernel, naive, floor;
  double kernel_naive_ratio = 0;   // max abs error, kernel / naive (FlashAttention: <= 2)
  double flash_floor = 0;          // max of FlashAttention's rounding floor over the elements
  BoundComparison bound;
  std::optional<GradientAudit> gradients;  // with --backward
  Histogram kernel_histogram, naive_histogram, floor_histogram;  // componentwise errors, shared edges
  WorstElement worst;
};

struct NamedFit {
  std::string series;  // e.g. "kernel componentwise max"
  GrowthFit fit;
};

// The audit's problem apart from its tensors: shape and positions.
Problem audit_positions(const Dims& shape, const AuditOptions& options);

// "causal bottom_right; window (128, 0) bottom_right; ALiBi bottom_right",
// or "none".
std::string positions_text(const AuditOptions& options);

struct AuditResult {
  std::string kernel;  // as named on the command line
  std::string naive;   // what the yardstick is (its formats and storage)
  KernelFormats formats;
  InputDistribution distribution = InputDistribution::normal;
  std::uint64_t seed = 1;
  SweepAxis sweep = SweepAxis::none;
  Dims shape;                       // as given; a sweep varies one of its fields
  std::vector<AuditPoint> points;   // one per sweep value, ascending; one without a sweep
  std::vector<NamedFit> fits;       // with a sweep: growth exponents of the main series
  unsigned threads = 1;
  std::string positions = "none";  // positions_text of the options
};

// The rows checked in each (batch, head) of a problem with L query rows.
int rows_per_head(const AuditOptions& options, int q_len);

// The sampled query indices of each (batch, head), ascending: all of them
// when rows >= L, else `rows` distinct ones drawn uniformly (seeded).
std::vector<std::vector<int>> sample_rows(const Dims& shape, int rows, std::uint64_t seed);

// Throws std::invalid_argument for a bad shape or option (naming it), and
// whatever the kernel throws.
AuditResult run_audit(Kernel& kernel, const std::string& kernel_name, const AuditOptions& options);

// True when some checked element is outside its a priori bound.
bool exceeds_bound(const AuditResult& result);

}  // namespace attnspec
