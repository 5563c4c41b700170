// `attnspec check-adapter 'cmd:COMMAND'`: checks that a process adapter
// speaks attnspec-process/1 (spec/SPEC.md section 8) before a long
// conformance run depends on it: the hello reply against the schema, one
// small case per declared feature answered with a well-formed output, and a
// clean exit after "bye". Numerical agreement is shown but judged by
// `attnspec run`, not here.
#include <cmath>
#include <iostream>

#include "adapters/process/process_kernel.hpp"
#include "adapters/process/protocol.hpp"
#include "adapters/process/subprocess.hpp"
#include "cases/io/input_error.hpp"
#include "cli/commands.hpp"
#include "properties/harness.hpp"
#include "properties/layout_check.hpp"
#include "properties/merge_check.hpp"

namespace attnspec::cli {
namespace {

// B=batch, Hq=2, L=3, S=5 with values k/4, representable in every format.
Problem probe_problem(const Capabilities& caps, FormatId input, int batch = 1) {
  Problem p;
  p.dims = Dims{batch, 2, caps.gqa ? 1 : 2, 3, 5, 4, caps.dv_ne_dk ? 3 : 4};
  const auto fill = [&](std::vector<double>& values, std::size_t n, int seed) {
    values.resize(n);
    for (std::size_t i = 0; i < n; ++i) values[i] = round_to_format(static_cast<double>((i * 7 + seed) % 9) / 4 - 1, input);
  };
  fill(p.q, p.rows() * p.dims.d_k, 1);
  const auto keys = static_cast<std::size_t>(batch) * p.dims.kv_heads * p.dims.kv_len;
  fill(p.k, keys * p.dims.d_k, 2);
  fill(p.v, keys * p.dims.d_v, 3);
  // A kernel that always masks causally gets causal probes only.
  if (caps.causal_only) p.causal = caps.causal_bottom_right ? Causal::bottom_right : Causal::top_left;
  return p;
}

struct Probe {
  Probe(std::string what_, Problem problem_, std::optional<LayoutRecipe> layout_ = std::nullopt, bool merge_ = false)
      : what(std::move(what_)), problem(std::move(problem_)), layout(std::move(layout_)), merge(merge_) {}
  std::string what;
  Problem problem;
  std::optional<LayoutRecipe> layout;  // sent laid out (SPEC 2.5)
  bool merge = false;                  // a merge's attention form, sent to the merge operator
};

// Two sequences of their own lengths, one with padding or spare room
// after it, so that a kernel reading past a sequence would meet NaN.
std::vector<Probe> layout_probes(const Capabilities& caps, FormatId input) {
  const Problem two = probe_problem(caps, input, 2);
  std::vector<Probe> list;
  if (caps.varlen) {
    LayoutRecipe varlen{LayoutKind::varlen, {3, 1}, {5, 2}, 1, 1, 0, {}};
    list.push_back({"varlen batch, lengths (3, 5) and (1, 2)", two, varlen});
  }
  // A kernel whose keys hold the queries' own (kv_len_at_least_q_len)
  // appends one key per query.
  const int appended = caps.kv_len_at_least_q_len ? two.dims.q_len : 1;
  if (caps.kv_cache) {
    LayoutRecipe cache{LayoutKind::kv_cache, {}, {5, 3}, 0, 0, appended, CacheLayout{0, 2, 0, {}}};
    list.push_back({"KV cache of 5 and 3 keys, " + std::to_string(appended) + " appended", two, cache});
  }
  if (caps.paged_kv_cache) {
    const int page_size = caps.page_sizes.empty() ? 2 : caps.page_sizes.front();
    LayoutRecipe paged{LayoutKind::kv_cache, {}, {5, 3}, 0, 0, appended, CacheLayout{page_size, 0, 1, {}}};
    for (int page = pool_pages(paged) - 1; page >= 0; --page) paged.cache.page_order.push_back(page);
    list.push_back({"paged KV cache, pages of " + std::to_string(page_size) + " in reverse order", two, paged});
  }
  if (caps.merge_partials) {
    // Two rows of three parts, one part of row 1 empty (lse -inf).
    MergeInput input{2, 3, 4, {}, {0.5, -1.0, 2.0, 0.25, 3.0, -INFINITY}};
    input.out.resize(static_cast<std::size_t>(3 * 2 * 4));
    for (std::size_t i = 0; i < input.out.size(); ++i)
      input.out[i] = round_to_format(static_cast<double>((i * 5) % 7) / 4 - 0.75, *caps.merge_partials);
    for (int t = 0; t < 4; ++t) input.out[input.out_index(2, 1, t)] = 0;
    list.push_back({"merge of 3 parts, one empty", merge_as_attention(input), std::nullopt, true});
  }
  return list;
}

std::vector<Probe> probes(const Capabilities& caps, FormatId input) {
  const Problem base = probe_problem(caps, input);
  std::vector<Probe> list = {{"plain attention", base}};
  if (caps.bool_mask) {
    Probe probe{"bool mask", base};
    probe.problem.mask_kind = MaskKind::boolean;
    probe.problem.mask.assign(15, 1.0);
    probe.problem.mask[4] = probe.problem.mask[7] = 0.0;
    list.push_back(probe);
  }
  if (caps.additive_mask) {
    Probe probe{"additive mask", base};
    probe.problem.mask_kind = MaskKind::additive;
    probe.problem.mask.assign(15, 0.5);
    probe.problem.mask[3] = -INFINITY;
    list.push_back(probe);
  }
  if (caps.causal_top_left) list.push_back({"causal top_left", base}), list.back().problem.causal = Causal::top_left;
  if (caps.causal_bottom_right)
    list.push_back({"causal bottom_right", base}), list.back().problem.causal = Causal::bottom_right;
  // Windows that block keys on both sides of a row's diagonal.
  if (caps.window_top_left)
    list.push_back({"sliding window (1, 1) top_left", base}),
        list.back().problem.window = Window{1, 1, Alignment::top_left};
  if (caps.window_bottom_right)
    list.push_back({"sliding window (1, 0) bottom_right", base}),
        list.back().problem.window = Window{1, 0, Alignment::bottom_right};
  // Slopes 1/2 and 1/4 (the ALiBi paper's first two for 8 heads): exact
  // in every format; the paper's for the probe's 2 heads (2^-4, 2^-8) for
  // a kernel that computes its slopes (alibi_paper_slopes_only).
  for (const Alignment alignment : {Alignment::top_left, Alignment::bottom_right}) {
    if (!(alignment == Alignment::top_left ? caps.alibi_top_left : caps.alibi_bottom_right)) continue;
    list.push_back({"ALiBi " + std::string(to_string(alignment)), base});
    const std::vector<double> slopes =
        caps.alibi_paper_slopes_only ? alibi_paper_slopes(base.dims.q_heads) : std::vector<double>{0.5, 0.25};
    list.back().problem.alibi = Alibi{slopes, false, alignment};
  }
  // One sink per query head (the probe has 2): one near the logits, one absent.
  if (caps.sinks) list.push_back({"sinks (1, -inf)", base}), list.back().problem.sinks = {1.0, -INFINITY};
  // Powers of two, the same for every (batch, kv head): the real inputs are
  // exact in every format, and each of q, k, v has a factor of its own.
  if (caps.descales) {
    const auto per_kv_head = [&](double factor) {
      return std::vector<double>(static_cast<std::size_t>(base.dims.batch) * base.dims.kv_heads, factor);
    };
    list.push_back({"descales (2, 0.5, 0.25)", base});
    list.back().problem.descales = Descales{per_kv_head(2.0), per_kv_head(0.5), per_kv_head(0.25)};
  }
  if (caps.explicit_scale) list.push_back({"explicit scale 0.75", base}), list.back().problem.scale = 0.75;
  if (caps.softcap) list.push_back({"softcap 2", base}), list.back().problem.softcap = 2.0;
  // The backward (kind "backward"): dq, dk and dv back with their shapes
  // (dK and dV per kv head: summed over a GQA group), judged by GRADPREC's
  // rule as well as the forward.
  if (caps.backward) {
    list.push_back({"backward with dO", base});
    Problem& p = list.back().problem;
    p.dout.resize(p.out_size());
    for (std::size_t i = 0; i < p.dout.size(); ++i)
      p.dout[i] = round_to_format(static_cast<double>((i * 5 + 4) % 9) / 4 - 1, input);
  }
  for (Probe& probe : layout_probes(caps, input)) list.push_back(std::move(probe));
  return list;
}

int check_adapter(const std::string& kernel_argument) {
  if (!kernel_argument.starts_with(kProcessKernelPrefix))
    throw InputError("ADAPTER", "", "expected cmd:COMMAND, got '" + kernel_argument + "'");
  const std::string command = kernel_argument.substr(kProcessKernelPrefix.size());
  int failures = 0;
  const auto line = [&](bool ok, const std::string& text) {
    std::cout << (ok ? "PASS  " : "FAIL  ") << text << "\n";
    if (!ok) ++failures;
  };

  std::unique_ptr<Kernel> kernel;
  try {
    kernel = make_process_kernel(command, default_process_options());
  } catch (const std::exception& e) {
    line(false, std::string("hello: ") + e.what());
    return 1;
  }
  const KernelFormats f = kernel->formats();
  line(true, "hello: " + kernel->name() + ", input " + std::string(format_info(f.input).name) + ", accumulate " +
                 std::string(format_info(f.accumulate).name) + ", output " + std::string(format_info(f.output).name) +
                 "; capabilities: " + describe(kernel->capabilities()));
  if (const auto log = kernel->log_file()) std::cout << "      adapter stderr: " << log->string() << "\n";

  for (const Probe& probe : probes(kernel->capabilities(), f.input)) {
    try {
      ErrorStats stats;
      const std::string numerics =
          probe.merge    ? check_merge_against_reference(*kernel, probe.problem, stats)
          : probe.layout ? check_layout_against_reference(*kernel, probe.problem, *probe.layout, stats)
                         : check_against_reference(*kernel, probe.problem, stats);
      line(true, "run (" + probe.what + "): a well-formed output" +
                     (numerics.empty() ? ", within the precision bound" : "; numerics (judged by attnspec run): " + numerics));
    } catch (const KernelUnsupported& e) {
      line(true, "run (" + probe.what + "): declined: " + e.what());
    } catch (const std::exception& e) {
      line(false, "run (" + probe.what + "): " + e.what());
    }
  }
  kernel->end_run(failures > 0);
  kernel.reset();

  // A fresh session to watch the exit: hello, bye, exit status 0 (its
  // stderr is not kept: the first session's log has the adapter's say).
  {
    Subprocess process(command, [](std::string_view) {});
    std::string reply;
    const bool greeted = process.write_line(hello_request()) &&
                         process.read_line(reply, std::chrono::seconds(30), 1 << 20) == Subprocess::Read::line;
    const bool left = greeted && process.write_line(bye_request()) && process.finish(std::chrono::seconds(5));
    const std::string how = left ? process.exit_description() : "did not exit within 5 s of bye";
    line(left && how == "exited with status 0", "bye: " + how);
  }
  std::cout << (failures == 0 ? "adapter speaks attnspec-process/1\n" : std::to_string(failures) + " check(s) failed\n");
  return failures == 0 ? 0 : 1;
}

}  // namespace

Command add_check_adapter_command(CLI::App& app) {
  auto adapter = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand("check-adapter", "Check that a process adapter speaks attnspec-process/1");
  sub->footer(
      "Starts the adapter, checks its hello reply (field by field, as in\n"
      "adapters/process/attnspec-process-1.schema.json), sends one small case per declared feature and\n"
      "checks each answer, out.npy (shape, dtype, values of the declared output format) and lse.npy\n"
      "(values of the declared accumulation format), and for a declared backward dq.npy, dk.npy and\n"
      "dv.npy (shapes, values of the output format, within the gradients' bound), then sends\n"
      "bye and checks for exit status 0. Exit status 0 all checks pass, 1 a check failed, 2 usage.\n\n"
      "Example: attnspec check-adapter 'cmd:python3 adapters/python/numpy_adapter.py'");
  sub->add_option("ADAPTER", *adapter, "cmd:COMMAND, as for attnspec run --kernel")->required();
  return {sub, [adapter] { return check_adapter(*adapter); }};
}

}  // namespace attnspec::cli
