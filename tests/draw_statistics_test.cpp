// What the generators draw is what spec/SPEC.md section 7.1 and README say
// they draw: a kernel that records the problems PREC gives it, and the
// shares of the shape classes, tile lengths, real head dimensions and
// full-precision inputs, checked in the quick and ci profiles.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "adapters/registry.hpp"
#include "properties/runner.hpp"
#include "recording_kernel.hpp"

namespace attnspec {
namespace {

using testing::RecordingKernel;

// More than 8 significant bits: not representable in bfloat16.
bool has_full_precision_value(const Problem& p) {
  for (const auto* tensor : {&p.q, &p.k, &p.v})
    for (double x : *tensor)
      if (std::isfinite(x) && !is_representable(x, FormatId::bfloat16)) return true;
  return false;
}

struct Shares {
  int cases = 0, small = 0, tile = 0, long_rows = 0;
  int long_queries = 0;     // L >= 65: a second 64-row query tile
  int partial_key_tile = 0; // S > 128 and not a multiple of 128
  int wide_keys = 0;        // d_k >= 32
  int wide_values = 0;      // d_v > 64
  int full_precision = 0;
  int windowed = 0;         // a sliding window
  int window_blocks = 0;    // a window that blocks some key of some row
  int alibi = 0;            // ALiBi biases
  int sinks = 0;            // attention sinks
  int large_sinks = 0;      // a sink of 128 or more: past float32's exp range above the logits
  int descales = 0;         // descale factors
  int uneven_descales = 0;  // factors that differ between the kv heads of one batch entry
};

Shares draw(const char* profile_name) {
  RecordingKernel kernel(make_kernel("online-f32"));
  RunOptions options;
  options.profile = find_profile(profile_name);
  options.clauses = {"PREC"};
  run_conformance(kernel, "online-f32", options);
  Shares s;
  for (const Problem& p : kernel.seen) {
    const Dims& d = p.dims;
    ++s.cases;
    switch (classify_shape(d)) {
      case ShapeClass::small: ++s.small; break;
      case ShapeClass::tile: ++s.tile; break;
      case ShapeClass::long_rows: ++s.long_rows; break;
    }
    s.long_queries += d.q_len >= 65;
    s.partial_key_tile += d.kv_len > 128 && d.kv_len % 128 != 0;
    s.wide_keys += d.d_k >= 32;
    s.wide_values += d.d_v > 64;
    s.full_precision += has_full_precision_value(p);
    s.windowed += p.window.has_value();
    bool blocks = false;
    for (int i = 0; i < d.q_len && p.window && !blocks; ++i)
      for (int j = 0; j < d.kv_len && !blocks; ++j) blocks = !p.in_window({0, 0, i}, j);
    s.window_blocks += blocks;
    s.alibi += p.alibi.has_value();
    s.sinks += !p.sinks.empty();
    s.large_sinks += std::any_of(p.sinks.begin(), p.sinks.end(), [](double sigma) { return sigma >= 128; });
    s.descales += p.descales.has_value();
    bool uneven = false;
    for (int b = 0; b < d.batch && p.descales; ++b)
      for (int g = 1; g < d.kv_heads; ++g)
        uneven = uneven || p.descales->k_of(b, g, d.kv_heads) != p.descales->k_of(b, 0, d.kv_heads);
    s.uneven_descales += uneven;
  }
  std::printf("  %s: %d cases: %d small, %d tile, %d long; L >= 65: %d; partial 128-key tile: %d; d_k >= 32: %d; "
              "d_v > 64: %d; full-precision inputs: %d; windows: %d (%d blocking a key); ALiBi: %d; sinks: %d (%d of "
              "them >= 128); descales: %d (%d uneven over kv heads)\n",
              profile_name, s.cases, s.small, s.tile, s.long_rows, s.long_queries, s.partial_key_tile, s.wide_keys,
              s.wide_values, s.full_precision, s.windowed, s.window_blocks, s.alibi, s.sinks, s.large_sinks, s.descales,
              s.uneven_descales);
  return s;
}

// The figures SPEC 7.1 states (seed 1 gives, in quick: 40 small, 60 tile;
// L >= 65 in 42, a partial 128-key tile in 19, d_k >= 32 in 32, d_v > 64
// in 24, full-precision inputs in 45, a window in 26, 17 of which block a
// key, ALiBi in 33, sinks in 28, 5 of them 128 or more, descales in 28, 16
// of them uneven over kv heads; in ci 30 long of 300), with slack.
TEST(DrawStatistics, QuickProfileReachesTheTileSpace) {
  const Shares s = draw("quick");
  ASSERT_EQ(s.cases, 100);
  EXPECT_GE(s.small, 25);
  EXPECT_GE(s.tile, 45);
  EXPECT_EQ(s.long_rows, 0);
  EXPECT_GE(s.long_queries, 20);
  EXPECT_GE(s.partial_key_tile, 12);
  EXPECT_GE(s.wide_keys, 25);
  EXPECT_GE(s.wide_values, 8);
  EXPECT_GE(s.full_precision, 25);
  EXPECT_GE(s.windowed, 15);
  EXPECT_GE(s.window_blocks, 8);
  EXPECT_GE(s.alibi, 15);
  EXPECT_GE(s.sinks, 15);
  EXPECT_GE(s.large_sinks, 3);
  EXPECT_GE(s.descales, 15);
  EXPECT_GE(s.uneven_descales, 5);
}

TEST(DrawStatistics, CiProfileAddsLongRows) {
  const Shares s = draw("ci");
  ASSERT_EQ(s.cases, 300);
  EXPECT_GE(s.long_rows, 18);
  EXPECT_GE(s.tile, 130);
  EXPECT_GE(s.long_queries, 60);
}

// The quick profile on a few clauses, without shrinking: what the draws
// are, not the counterexamples, is what these tests look at.
RunOptions quick_unshrunk(std::vector<std::string> clauses) {
  RunOptions options;
  options.profile = find_profile("quick");
  options.clauses = std::move(clauses);
  options.shrink = false;
  return options;
}

// A kernel with both restrictions (ONNX Runtime's GroupQueryAttention):
// every problem of every clause that draws has S >= L and windows of right
// side 0, and the tile space is still reached (lengths swapped, not cut).
class RestrictedKernel final : public WrappedKernel {
 public:
  RestrictedKernel() : WrappedKernel(make_kernel("online-f32")) {}
  Capabilities capabilities() const override {
    Capabilities caps = WrappedKernel::capabilities();
    caps.kv_len_at_least_q_len = caps.causal_windows_only = true;
    return caps;
  }
  KernelResult run(const Problem& p) override {
    if (!missing_capabilities(capabilities(), p).empty()) ++outside;
    long_queries += p.dims.q_len >= 65;
    windows += p.window.has_value();
    ++cases;
    return WrappedKernel::run(p);
  }
  int cases = 0, outside = 0, long_queries = 0, windows = 0;
};

TEST(DrawStatistics, RestrictedKernelsGetProblemsWithinTheirRestrictions) {
  RestrictedKernel kernel;
  RunOptions options = quick_unshrunk({"PREC", "WINDOW", "LINV", "CAUSAL", "SINK"});
  run_conformance(kernel, "restricted", options);
  std::printf("  restricted: %d calls, %d outside the restrictions, L >= 65 in %d, windows in %d\n", kernel.cases,
              kernel.outside, kernel.long_queries, kernel.windows);
  EXPECT_GE(kernel.cases, 400);
  EXPECT_EQ(kernel.outside, 0);
  EXPECT_GE(kernel.long_queries, 40);
  EXPECT_GE(kernel.windows, 100);
}

// A kernel that always masks causally, bottom-right, and takes pages of
// 32 rows only (OpenVINO's PagedAttentionExtension on the CPU plugin):
// every problem drawn for it is causal, every page 32 rows; a clause whose
// law needs problems without causal masking gets only declines, so it
// cannot PASS.
class CausalOnlyPagedKernel final : public WrappedKernel {
 public:
  CausalOnlyPagedKernel() : WrappedKernel(make_kernel("online-f32")) {}
  Capabilities capabilities() const override {
    Capabilities caps = WrappedKernel::capabilities();
    caps.causal_top_left = false;
    caps.causal_only = caps.kv_len_at_least_q_len = true;
    caps.page_sizes = {32};
    return caps;
  }
  KernelResult run(const Problem& p) override {
    check(p);
    return WrappedKernel::run(p);
  }
  KernelResult run_kv_cache(const KvCacheBatch& batch) override {
    check(batch.shared);
    if (batch.paged()) page_sizes.insert(batch.page_size);
    return WrappedKernel::run_kv_cache(batch);
  }
  int cases = 0, outside = 0, causal = 0;
  std::set<int> page_sizes;

 private:
  void check(const Problem& p) {
    ++cases;
    causal += p.causal == Causal::bottom_right;
    if (missing_capabilities(capabilities(), p).empty()) return;
    ++outside;
    throw KernelUnsupported("outside the restrictions");
  }
};

TEST(DrawStatistics, CausalOnlyKernelsGetCausalProblemsAndTheirPageSizes) {
  CausalOnlyPagedKernel kernel;
  RunOptions options = quick_unshrunk({"PREC", "ROWSUM", "PAGED"});
  const RunReport report = run_conformance(kernel, "causal-only", options);
  for (const ClauseReport& r : report.results) EXPECT_EQ(r.outcome.status, Status::pass) << r.clause;
  std::printf("  causal only: %d calls, %d causal, %d outside the restrictions, page sizes %zu\n", kernel.cases,
              kernel.causal, kernel.outside, kernel.page_sizes.size());
  EXPECT_GE(kernel.cases, 300);
  EXPECT_EQ(kernel.causal, kernel.cases);
  EXPECT_EQ(kernel.outside, 0);
  EXPECT_EQ(kernel.page_sizes, std::set<int>{32});
  // PERMKV permutes keys, which causal masking does not allow: declined,
  // never a PASS.
  options.clauses = {"PERMKV"};
  const RunReport permuted = run_conformance(kernel, "causal-only", options);
  EXPECT_NE(permuted.results.front().outcome.status, Status::pass);
  EXPECT_GT(kernel.outside, 0);
}

// A kernel that computes its ALiBi slopes (alibi_paper_slopes_only):
// every problem the generators draw with ALiBi has the paper's slopes for
// its head count, in every batch entry.
class PaperSlopesKernel final : public WrappedKernel {
 public:
  PaperSlopesKernel() : WrappedKernel(make_kernel("online-f32")) {}
  Capabilities capabilities() const override {
    Capabilities caps = WrappedKernel::capabilities();
    caps.alibi_paper_slopes_only = true;
    return caps;
  }
  KernelResult run(const Problem& p) override {
    if (p.alibi) {
      ++with_alibi;
      const std::vector<double> paper = alibi_paper_slopes(p.dims.q_heads);
      const std::size_t H = paper.size();
      bool all_paper = true;
      for (std::size_t i = 0; i < p.alibi->slopes.size(); ++i) all_paper = all_paper && p.alibi->slopes[i] == paper[i % H];
      paper_slopes += all_paper;
    }
    return WrappedKernel::run(p);
  }
  int with_alibi = 0, paper_slopes = 0;
};

TEST(DrawStatistics, PaperSlopesOnlyKernelsGetThePapersSlopes) {
  PaperSlopesKernel kernel;
  const RunReport report = run_conformance(kernel, "paper-slopes", quick_unshrunk({"ALIBI"}));
  EXPECT_EQ(report.results.front().outcome.status, Status::pass);
  std::printf("  paper slopes only: %d calls with ALiBi, %d with the paper's slopes\n", kernel.with_alibi,
              kernel.paper_slopes);
  EXPECT_GE(kernel.with_alibi, 100);
  EXPECT_EQ(kernel.paper_slopes, kernel.with_alibi);
}

// What the layout clauses draw (README and spec/SPEC.md section 7, VARLEN,
// KVCACHE, PAGED): several sequences of different lengths, empty ones,
// NaN padding, decode steps, new keys, every page size, shuffled pages,
// and sequences long enough to cross key tiles.
class LayoutRecordingKernel final : public WrappedKernel {
 public:
  LayoutRecordingKernel() : WrappedKernel(make_kernel("online-f32")) {}
  KernelResult run_varlen(const VarlenBatch& batch) override {
    ++varlen;
    std::set<int> lengths;
    for (std::size_t b = 0; b + 1 < batch.cu_seqlens_k.size(); ++b) {
      const int q = batch.cu_seqlens_q[b + 1] - batch.cu_seqlens_q[b], k = batch.cu_seqlens_k[b + 1] - batch.cu_seqlens_k[b];
      lengths.insert(k);
      empty_sequences += q == 0 || k == 0;
      long_sequences += k >= 129;
    }
    uneven += lengths.size() >= 2;
    padded += batch.q_rows > batch.cu_seqlens_q.back() || batch.k_rows > batch.cu_seqlens_k.back();
    return WrappedKernel::run_varlen(batch);
  }
  KernelResult run_kv_cache(const KvCacheBatch& batch) override {
    ++caches;
    decode += batch.shared.dims.q_len == 1;
    appended += batch.new_len > 0;
    if (batch.paged()) {
      page_sizes.insert(batch.page_size);
      for (std::size_t i = 0; i < batch.block_table.size(); ++i) shuffled_pages += batch.block_table[i] != static_cast<int>(i);
    }
    for (int length : batch.cache_seqlens) long_sequences += length + batch.new_len >= 129;
    return WrappedKernel::run_kv_cache(batch);
  }
  int varlen = 0, uneven = 0, empty_sequences = 0, padded = 0, caches = 0, decode = 0, appended = 0,
      shuffled_pages = 0, long_sequences = 0;
  std::set<int> page_sizes;
};

TEST(DrawStatistics, LayoutClausesDrawWhatTheyClaim) {
  LayoutRecordingKernel kernel;
  RunOptions options = quick_unshrunk({"VARLEN", "KVCACHE", "PAGED"});
  const RunReport report = run_conformance(kernel, "layouts", options);
  for (const ClauseReport& r : report.results) EXPECT_EQ(r.outcome.status, Status::pass) << r.clause;
  std::printf("  layouts: %d varlen batches (%d of uneven lengths, %d padded), %d empty sequences, %d caches (%d decode, "
              "%d with new keys), %zu page sizes, %d long sequences\n",
              kernel.varlen, kernel.uneven, kernel.padded, kernel.empty_sequences, kernel.caches, kernel.decode,
              kernel.appended, kernel.page_sizes.size(), kernel.long_sequences);
  EXPECT_GE(kernel.varlen, 100);
  EXPECT_GE(kernel.uneven, 30);
  EXPECT_GE(kernel.padded, 30);
  EXPECT_GE(kernel.empty_sequences, 30);
  EXPECT_GE(kernel.caches, 200);
  EXPECT_GE(kernel.decode, 50);
  EXPECT_GE(kernel.appended, 50);
  EXPECT_EQ(kernel.page_sizes, (std::set<int>{1, 2, 3, 5, 8, 16, 32, 64, 128, 256}));
  EXPECT_GE(kernel.shuffled_pages, 30);
  EXPECT_GE(kernel.long_sequences, 30);
}

// SPLITKV splits into 2-4 parts, and some parts leave a row no visible
// key (lse -inf): the empty split a merge must survive.
class LseRecordingKernel final : public WrappedKernel {
 public:
  LseRecordingKernel() : WrappedKernel(make_kernel("online-f32")) {}
  KernelResult run(const Problem& p) override {
    KernelResult result = WrappedKernel::run(p);
    ++calls;
    empty_rows += std::count(result.lse.begin(), result.lse.end(), -INFINITY) > 0;
    return result;
  }
  int calls = 0, empty_rows = 0;
};

TEST(DrawStatistics, SplitKvDrawsSplitsWithEmptyParts) {
  LseRecordingKernel kernel;
  RunOptions options = quick_unshrunk({"SPLITKV"});
  const RunReport report = run_conformance(kernel, "splits", options);
  EXPECT_EQ(report.results.front().outcome.status, Status::pass);
  std::printf("  SPLITKV: %d kernel calls for 100 cases, %d with a row that sees no key\n", kernel.calls, kernel.empty_rows);
  EXPECT_GE(kernel.calls, 300);  // the whole and at least two parts a case
  EXPECT_GE(kernel.empty_rows, 10);
}

}  // namespace
}  // namespace attnspec
