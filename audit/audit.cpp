// The audit's run: problem, kernel, sampled reference rows, yardsticks,
// measures, sweeps and growth fits; see audit.hpp.
#include "audit/audit.hpp"

#include <mpfr.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "adapters/naive/naive_kernel.hpp"
#include "reference/fast_reference.hpp"
#include "spec/precision_model.hpp"

namespace attnspec {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr std::size_t kTopKeys = 8;
// Keeps the row sample's stream apart from the inputs' stream of the same seed.
constexpr std::uint64_t kSampleStream = 0x5a3b1e5eedULL;
constexpr double kProgressSeconds = 5;

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// What the reference and the precision model say about one checked row.
struct CheckedRow {
  RowIndex index;
  std::vector<double> correctly_rounded, exact, exact_error, abs_scale, bound;
  bool escalated = false;
};

CheckedRow check_row(const Problem& p, RowIndex r, const KernelFormats& formats) {
  FastRow fast = fast_certified_row(p, r, formats.output);
  const RowBound bound =
      precision_bound(p, r, format_class(formats), fast.weights, fast.out_double, fast.lse);
  return CheckedRow{r, std::move(fast.out), std::move(fast.out_double), std::move(fast.out_error),
                    std::move(fast.abs_scale), bound.out, fast.escalated};
}

// The rows in parallel. The multiprecision escalation path (MPFR) is used
// from several threads only where MPFR was built thread-safe, and then one
// escalation at a time (fast_reference.hpp).
std::vector<CheckedRow> check_rows(const Problem& p, const std::vector<RowIndex>& rows, const KernelFormats& formats,
                                   unsigned threads, const std::function<void(const std::string&)>& progress) {
  std::vector<CheckedRow> checked(rows.size());
  std::atomic<std::size_t> next{0}, done{0};
  std::exception_ptr failure;
  std::atomic<bool> failed{false};
  const auto work = [&](bool reporter) {
    auto last_report = Clock::now();
    for (std::size_t i = next++; i < rows.size() && !failed; i = next++) {
      try {
        checked[i] = check_row(p, rows[i], formats);
      } catch (...) {
        if (!failed.exchange(true)) failure = std::current_exception();
        return;
      }
      const std::size_t finished = ++done;
      if (reporter && progress && seconds_since(last_report) >= kProgressSeconds) {
        last_report = Clock::now();
        progress("  reference: " + std::to_string(finished) + " of " + std::to_string(rows.size()) + " rows");
      }
    }
  };
  std::vector<std::thread> helpers;
  // MPFR keeps caches (constants such as log 2) per thread; a helper that
  // escalated a row frees its own before it ends.
  for (unsigned t = 1; t < threads; ++t)
    helpers.emplace_back([&] {
      work(false);
      mpfr_free_cache2(MPFR_FREE_LOCAL_CACHE);
    });
  work(true);
  for (std::thread& helper : helpers) helper.join();
  if (failure) std::rethrow_exception(failure);
  return checked;
}

// Gives `sub`, whose rows are p's `rows` in order, p's positions: causal
// masking, window and ALiBi (which depend on a row's index and on L) become
// an explicit additive mask of -inf or the exact bias, [B, Hq, L, S] of sub.
void keep_positions(Problem& sub, const Problem& p, const std::vector<RowIndex>& rows) {
  if (p.every_key_visible() && !p.alibi) return;
  sub.causal = Causal::none;
  sub.window.reset();
  sub.alibi.reset();
  sub.mask_kind = MaskKind::additive;
  sub.mask_batch = sub.dims.batch;
  sub.mask_heads = sub.dims.q_heads;
  sub.mask.clear();
  for (const RowIndex& r : rows)
    for (int j = 0; j < p.dims.kv_len; ++j) sub.mask.push_back(p.visible(r, j) ? p.logit_offset(r, j) : -INFINITY);
}

using NaiveYardstick = std::array<std::unique_ptr<Kernel>, 2>;

// The sampled query rows as a problem of their own, with their positions
// kept: what the naive yardstick runs on.
Problem sampled_subproblem(const Problem& p, const std::vector<std::vector<int>>& sample, int rows) {
  Problem sub = p;
  sub.dims.q_len = rows;
  sub.q.clear();
  std::vector<RowIndex> order;
  for (int b = 0; b < p.dims.batch; ++b)
    for (int h = 0; h < p.dims.q_heads; ++h)
      for (int i : sample[static_cast<std::size_t>(b * p.dims.q_heads + h)]) {
        const auto q = p.query_row({b, h, i});
        sub.q.insert(sub.q.end(), q.begin(), q.end());
        order.push_back({b, h, i});
      }
  keep_positions(sub, p, order);
  return sub;
}

KernelResult run_checked(Kernel& kernel, const Problem& p, const std::string& who) {
  KernelResult result = kernel.run(p);
  if (result.out.size() != p.out_size())
    throw std::runtime_error(who + " returned " + std::to_string(result.out.size()) + " outputs, expected " +
                             std::to_string(p.out_size()));
  return result;
}

// The worst row alone: its query, its kv head's keys and values.
Problem single_row_problem(const Problem& p, RowIndex r) {
  Problem single;
  single.dims = p.dims;
  single.dims.batch = single.dims.q_heads = single.dims.kv_heads = single.dims.q_len = 1;
  single.scale = p.scale;
  single.softcap = p.softcap;
  const auto q = p.query_row(r);
  single.q.assign(q.begin(), q.end());
  const int g = p.kv_head_of(r.head);
  for (int j = 0; j < p.dims.kv_len; ++j) {
    const auto k = p.key_row(r.batch, g, j);
    const auto v = p.value_row(r.batch, g, j);
    single.k.insert(single.k.end(), k.begin(), k.end());
    single.v.insert(single.v.end(), v.begin(), v.end());
  }
  keep_positions(single, p, {r});
  if (const std::optional<double> sink = p.sink(r)) single.sinks = {*sink};
  if (p.descales) {
    const int Hkv = p.dims.kv_heads;
    single.descales = Descales{{p.descales->q_of(r.batch, g, Hkv)},
                               {p.descales->k_of(r.batch, g, Hkv)},
                               {p.descales->v_of(r.batch, g, Hkv)},
                               p.descales->applied};
  }
  return single;
}

// p: the real problem (weights, reference); given: what the kernel saw (the
// query and values shown in the input format's bits, and the saved case).
WorstElement describe_worst(const Problem& p, const Problem& given, const CheckedRow& row, int column, double got,
                            const KernelFormats& f) {
  WorstElement w;
  const auto t = static_cast<std::size_t>(column);
  w.row = row.index;
  w.column = column;
  w.got = got;
  w.exact = row.exact[t];
  w.exact_error = row.exact_error[t];
  w.correctly_rounded = row.correctly_rounded[t];
  w.abs_scale = row.abs_scale[t];
  w.bound = row.bound[t];
  w.componentwise = componentwise_error(got, w.exact, w.abs_scale, format_info(f.output).unit_roundoff);
  w.ulps = ulps_error(got, w.correctly_rounded, f.output);
  const auto q = given.query_row(row.index);
  w.query.assign(q.begin(), q.end());
  const FastRow fast = fast_certified_row(p, row.index, f.output);  // once more, for its weights
  std::vector<int> keys(static_cast<std::size_t>(p.dims.kv_len));
  for (std::size_t j = 0; j < keys.size(); ++j) keys[j] = static_cast<int>(j);
  const std::size_t top = std::min(kTopKeys, keys.size());
  std::partial_sort(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(top), keys.end(),
                    [&](int a, int b) { return fast.weights[static_cast<std::size_t>(a)] > fast.weights[static_cast<std::size_t>(b)]; });
  const int g = p.kv_head_of(row.index.head);
  for (std::size_t k = 0; k < top; ++k)
    w.top_keys.push_back(
        {keys[k], fast.weights[static_cast<std::size_t>(keys[k])], given.value_row(row.index.batch, g, keys[k])[t]});
  w.case_problem = single_row_problem(given, row.index);
  return w;
}

// The yardstick is the naive composition with each q.k summed in two orders
// (`naive[0]` blocked, `naive[1]` a running sum), the worse counting at each
// output, as PRECREL judges (spec/SPEC.md, PRECREL).
AuditPoint audit_point(Kernel& kernel, const NaiveYardstick& naive, const Dims& shape, const AuditOptions& options, unsigned threads) {
  const KernelFormats formats = kernel.formats();
  const auto report = [&](const std::string& line) {
    if (options.progress) options.progress(line);
  };
  AuditPoint point;
  point.shape = shape;
  Problem p = make_audit_problem(shape, options.distribution, formats.input, options.seed);
  const Problem positions = audit_positions(shape, options);
  p.causal = positions.causal;
  p.window = positions.window;
  p.alibi = positions.alibi;
  p.sinks = positions.sinks;
  p.descales = positions.descales;

  report("  kernel " + kernel.name() + " on the full problem (" + std::to_string(p.rows()) + " query rows)");
  auto start = Clock::now();
  const KernelResult got = run_checked(kernel, p, "kernel " + kernel.name());
  point.kernel_seconds = seconds_since(start);
  report("  kernel: " + std::to_string(point.kernel_seconds) + " s");

  point.rows_per_head = rows_per_head(options, shape.q_len);
  const auto sample = sample_rows(shape, point.rows_per_head, options.seed);
  std::vector<RowIndex> rows;
  for (int b = 0; b < shape.batch; ++b)
    for (int h = 0; h < shape.q_heads; ++h)
      for (int i : sample[static_cast<std::size_t>(b * shape.q_heads + h)]) rows.push_back({b, h, i});
  point.checked_rows = rows.size();

  report("  reference: " + std::to_string(rows.size()) + " sampled rows, " + std::to_string(threads) + " thread(s)");
  start = Clock::now();
  std::optional<Problem> storage;
  const Problem& real = real_problem(p, storage);
  const std::vector<CheckedRow> checked = check_rows(real, rows, formats, threads, options.progress);
  point.reference_seconds = seconds_since(start);
  report("  reference: " + std::to_string(point.reference_seconds) + " s");

  report("  naive yardstick on the sampled rows");
  const Problem sub = sampled_subproblem(p, sample, point.rows_per_head);
  start = Clock::now();
  const std::array<KernelResult, 2> naive_got{run_checked(*naive[0], sub, "the naive yardstick (blocked q.k)"),
                                              run_checked(*naive[1], sub, "the naive yardstick (q.k as a running sum)")};
  point.naive_seconds = seconds_since(start);

  const auto dv = static_cast<std::size_t>(shape.d_v);
  const double u_out = format_info(formats.output).unit_roundoff;
  MeasureAccumulator kernel_errors(formats.output), naive_errors(formats.output), floor_errors(formats.output);
  double worst_error = -1;
  std::size_t worst_row = 0, worst_column = 0;
  BoundAccumulator bound;
  for (std::size_t i = 0; i < checked.size(); ++i) {
    const CheckedRow& row = checked[i];
    point.escalated_rows += row.escalated;
    const std::span<const double> kernel_row(got.out.data() + p.row_flat(row.index) * dv, dv);
    // Sub-problem rows are in the order of `rows`, which is the order of `checked`.
    std::vector<double> naive_row(dv);
    for (std::size_t t = 0; t < dv; ++t) {
      const double blocked = naive_got[0].out[i * dv + t], running = naive_got[1].out[i * dv + t];
      const auto error = [&](double value) { return std::isfinite(value) ? std::fabs(value - row.exact[t]) : kInfinity; };
      naive_row[t] = error(running) > error(blocked) ? running : blocked;
    }
    kernel_errors.add_row(kernel_row, row.exact, row.correctly_rounded, row.abs_scale);
    naive_errors.add_row(naive_row, row.exact, row.correctly_rounded, row.abs_scale);
    floor_errors.add_row(row.correctly_rounded, row.exact, row.correctly_rounded, row.abs_scale);
    for (std::size_t t = 0; t < dv; ++t) {
      point.flash_floor = std::max(point.flash_floor, flash_attention_floor(row.correctly_rounded[t], formats.output));
      const double error = std::isfinite(kernel_row[t]) ? std::fabs(kernel_row[t] - row.exact[t]) : kInfinity;
      const double componentwise = componentwise_error(kernel_row[t], row.exact[t], row.abs_scale[t], u_out);
      if (componentwise > worst_error) {
        worst_error = componentwise;
        worst_row = i;
        worst_column = t;
      }
      bound.add(error, row.exact_error[t], row.bound[t], u_out * row.abs_scale[t]);
    }
  }
  point.bound = bound.finish();
  if (options.backward) {  // the whole problem with a dO: every row adds to every dK and dV
    report("  backward of kernel " + kernel.name() + ", the textbook ways and the certified gradients");
    Problem with_dout = p;
    with_dout.dout = draw_dout(p, options.distribution, formats.input, options.seed);
    point.gradients = audit_gradients(kernel, with_dout);
    report("  backward: kernel " + std::to_string(point.gradients->kernel_seconds) + " s, reference and yardstick " +
           std::to_string(point.gradients->reference_seconds) + " s");
  }

  point.checked_elements = checked.size() * dv;
  point.kernel = kernel_errors.finish();
  point.naive = naive_errors.finish();
  point.floor = floor_errors.finish();
  point.kernel_naive_ratio = point.naive.max_abs > 0 ? point.kernel.max_abs / point.naive.max_abs
                                                     : (point.kernel.max_abs == 0 ? 1 : kInfinity);
  const std::span<const double> all_series[] = {kernel_errors.componentwise(), naive_errors.componentwise(),
                                                floor_errors.componentwise()};
  const std::vector<double> edges = log_bin_edges(all_series);
  point.kernel_histogram = histogram(kernel_errors.componentwise(), edges);
  point.naive_histogram = histogram(naive_errors.componentwise(), edges);
  point.floor_histogram = histogram(floor_errors.componentwise(), edges);
  if (!checked.empty()) {
    const CheckedRow& row = checked[worst_row];
    point.worst = describe_worst(real, p, row, static_cast<int>(worst_column),
                                 got.out[p.row_flat(row.index) * dv + worst_column], formats);
  }
  return point;
}

// The yardstick's name does not say where it stores intermediates; this does.
std::string naive_description(const KernelFormats& f) {
  const std::string output = std::string(format_info(f.output).name);
  const std::string orders = ", q.k blocked or as a running sum, the worse per element";
  if (f.accumulate == FormatId::float64 || f.accumulate == FormatId::float32)
    return "naive composition in " + std::string(format_info(f.accumulate).name) + ", output " + output + orders;
  return "naive composition, float32 arithmetic, logits and weights stored in " +
         std::string(format_info(f.accumulate).name) + ", output " + output + orders;
}

std::vector<NamedFit> growth_fits(const std::vector<AuditPoint>& points, SweepAxis axis) {
  std::vector<double> x;
  for (const AuditPoint& point : points) x.push_back(axis == SweepAxis::kv_len ? point.shape.kv_len : point.shape.d_k);
  const auto fit = [&](const std::string& series, double (*value)(const AuditPoint&)) {
    std::vector<double> y;
    for (const AuditPoint& point : points) y.push_back(value(point));
    return NamedFit{series, fit_growth(x, y)};
  };
  return {
      fit("kernel componentwise max", [](const AuditPoint& a) { return a.kernel.componentwise.max; }),
      fit("kernel componentwise rms", [](const AuditPoint& a) { return a.kernel.componentwise.rms; }),
      fit("kernel rmse", [](const AuditPoint& a) { return a.kernel.rmse; }),
      fit("naive componentwise max", [](const AuditPoint& a) { return a.naive.componentwise.max; }),
      fit("naive rmse", [](const AuditPoint& a) { return a.naive.rmse; }),
      fit("floor rmse", [](const AuditPoint& a) { return a.floor.rmse; }),
      fit("bound median", [](const AuditPoint& a) { return a.bound.median_bound_u; }),
  };
}

}  // namespace

std::optional<SweepAxis> parse_sweep_axis(std::string_view name) {
  if (name == "S") return SweepAxis::kv_len;
  if (name == "Dk") return SweepAxis::d_k;
  return std::nullopt;
}

std::string_view to_string(SweepAxis axis) {
  switch (axis) {
    case SweepAxis::none: return "none";
    case SweepAxis::kv_len: return "S";
    case SweepAxis::d_k: return "Dk";
  }
  return "?";
}

std::vector<int> sweep_values(SweepAxis axis, int full) {
  if (axis == SweepAxis::none || full < 1) return {full};
  const int first = axis == SweepAxis::kv_len ? 128 : 16;
  std::vector<int> values;
  for (int v = first; v < full; v *= 2) values.push_back(v);
  values.push_back(full);
  if (values.size() < 3) values = {full / 4, full / 2, full};
  values.erase(std::remove(values.begin(), values.end(), 0), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

int rows_per_head(const AuditOptions& options, int q_len) {
  const int wanted = options.rows_per_head > 0 ? options.rows_per_head
                     : q_len <= kAllRowsUpTo  ? q_len
                                              : kDefaultSampledRows;
  return std::min(wanted, q_len);
}

std::vector<std::vector<int>> sample_rows(const Dims& shape, int rows, std::uint64_t seed) {
  InputRandom random(seed ^ kSampleStream);
  std::vector<std::vector<int>> sample(static_cast<std::size_t>(shape.batch) * static_cast<std::size_t>(shape.q_heads));
  std::vector<int> all(static_cast<std::size_t>(shape.q_len));
  for (auto& chosen : sample) {
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
    const std::size_t count = std::min(all.size(), static_cast<std::size_t>(std::max(rows, 0)));
    for (std::size_t i = 0; i < count; ++i)  // partial Fisher-Yates: the first `count` are a uniform sample
      std::swap(all[i], all[i + random.below(all.size() - i)]);
    chosen.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(count));
    std::sort(chosen.begin(), chosen.end());
  }
  return sample;
}

Problem audit_positions(const Dims& shape, const AuditOptions& options) {
  Problem p;
  p.dims = shape;
  p.causal = options.causal;
  p.window = options.window;
  if (options.alibi) p.alibi = Alibi{alibi_paper_slopes(shape.q_heads), false, *options.alibi};
  if (options.sink) p.sinks.assign(static_cast<std::size_t>(shape.q_heads), *options.sink);
  if (options.descales) {
    const auto entries = static_cast<std::size_t>(shape.batch) * static_cast<std::size_t>(shape.kv_heads);
    const auto& [q, k, v] = *options.descales;
    p.descales = Descales{std::vector<double>(entries, q), std::vector<double>(entries, k),
                          std::vector<double>(entries, v), false};
  }
  return p;
}

std::string positions_text(const AuditOptions& options) {
  std::string text;
  const auto add = [&](const std::string& part) { text += (text.empty() ? "" : "; ") + part; };
  if (options.causal != Causal::none) add("causal " + std::string(to_string(options.causal)));
  if (options.window) {
    const auto side = [](const std::optional<int>& s) { return s ? std::to_string(*s) : std::string("unbounded"); };
    add("window (" + side(options.window->left) + ", " + side(options.window->right) + ") " +
        std::string(to_string(options.window->alignment)));
  }
  if (options.alibi) add("ALiBi (the paper's slopes) " + std::string(to_string(*options.alibi)));
  if (options.sink) {
    std::ostringstream sink;
    sink << "sink " << *options.sink << " for every head";
    add(sink.str());
  }
  if (options.descales) {
    std::ostringstream descales;
    descales << "descales q " << (*options.descales)[0] << ", k " << (*options.descales)[1] << ", v "
             << (*options.descales)[2] << " for every (batch, kv head)";
    add(descales.str());
  }
  return text.empty() ? "none" : text;
}

AuditResult run_audit(Kernel& kernel, const std::string& kernel_name, const AuditOptions& options) {
  const Dims& s = options.shape;
  if (s.batch < 1 || s.q_heads < 1 || s.kv_heads < 1 || s.q_len < 1 || s.kv_len < 1 || s.d_k < 1 || s.d_v < 1)
    throw std::invalid_argument("--shape: every size must be >= 1");
  if (s.q_heads % s.kv_heads != 0) throw std::invalid_argument("--shape: Hq must be a multiple of Hkv");
  if (const auto missing = missing_capabilities(kernel.capabilities(), audit_positions(s, options)); !missing.empty())
    throw std::invalid_argument("kernel " + kernel_name + " cannot run the audit's problem: " + missing.front());
  if (options.backward && !kernel.capabilities().backward)
    throw std::invalid_argument("--backward: kernel " + kernel_name + " has no backward pass");
  if (options.backward && options.descales)
    throw std::invalid_argument("--backward takes no --descales: the backward's inputs are plain values (spec/SPEC.md 2.6)");

  AuditResult result;
  result.kernel = kernel_name;
  result.formats = kernel.formats();
  result.distribution = options.distribution;
  result.seed = options.seed;
  result.sweep = options.sweep;
  result.shape = s;
  result.positions = positions_text(options);
  const NaiveYardstick naive{make_naive_kernel(result.formats, LogitProduct::blocked),
                             make_naive_kernel(result.formats, LogitProduct::running_sum)};
  result.naive = naive_description(result.formats);
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  result.threads = mpfr_buildopt_tls_p() ? (options.threads ? options.threads : cores) : 1;

  const int full = options.sweep == SweepAxis::d_k ? s.d_k : s.kv_len;
  const std::vector<int> values = sweep_values(options.sweep, full);
  for (int value : values) {
    Dims shape = s;
    if (options.sweep == SweepAxis::kv_len) shape.kv_len = value;
    if (options.sweep == SweepAxis::d_k) {
      shape.d_k = value;
      if (s.d_v == s.d_k) shape.d_v = value;  // keep d_v = d_k, which every kernel supports
    }
    if (options.progress)
      options.progress("audit " + kernel_name + ": shape " + std::to_string(shape.batch) + "," + std::to_string(shape.q_heads) +
                       "," + std::to_string(shape.kv_heads) + "," + std::to_string(shape.q_len) + "," +
                       std::to_string(shape.kv_len) + "," + std::to_string(shape.d_k) + "," + std::to_string(shape.d_v));
    result.points.push_back(audit_point(kernel, naive, shape, options, result.threads));
  }
  if (options.sweep != SweepAxis::none) result.fits = growth_fits(result.points, options.sweep);
  return result;
}

bool exceeds_bound(const AuditResult& result) {
  for (const AuditPoint& point : result.points)
    if (point.bound.outside > 0) return true;
  return false;
}

}  // namespace attnspec
