// Running and judging a kernel on the layouts of spec/SPEC.md section 2.5.
#include "properties/layout_check.hpp"

#include <cmath>
#include <string>

namespace attnspec {
namespace {

std::string list(const std::vector<int>& values) {
  std::string text = "[";
  for (std::size_t i = 0; i < values.size(); ++i) text += (i ? ", " : "") + std::to_string(values[i]);
  return text + "]";
}

Outputs outputs_of(KernelResult result, bool lse) {
  return Outputs{std::move(result.out), lse ? std::move(result.lse) : std::vector<double>{}};
}

}  // namespace

LayoutRun run_layout(Kernel& kernel, const VarlenBatch& batch) {
  LayoutRun run;
  run.shared = batch.shared;
  run.sequences = sequences_of(batch);
  run.parts = split_result(batch, outputs_of(kernel.run_varlen(batch), kernel.capabilities().lse));
  run.where = "varlen batch, cu_seqlens_q " + list(batch.cu_seqlens_q) + ", cu_seqlens_k " + list(batch.cu_seqlens_k) +
              ", " + std::to_string(batch.q_rows - batch.cu_seqlens_q.back()) + " + " +
              std::to_string(batch.k_rows - batch.cu_seqlens_k.back()) + " NaN padding rows";
  return run;
}

LayoutRun run_layout(Kernel& kernel, const KvCacheBatch& batch) {
  LayoutRun run;
  run.shared = batch.shared;
  run.sequences = sequences_of(batch);
  run.parts = split_result(batch, outputs_of(kernel.run_kv_cache(batch), kernel.capabilities().lse));
  run.where = (batch.paged() ? "paged KV cache, page size " + std::to_string(batch.page_size) + ", " +
                                   std::to_string(batch.pages) + " pages, block table " + list(batch.block_table)
                             : "KV cache of " + std::to_string(batch.slots) + " slots") +
              ", cache_seqlens " + list(batch.cache_seqlens) + ", " + std::to_string(batch.new_len) +
              " new keys, unused slots NaN";
  return run;
}

LayoutRun run_layout(Kernel& kernel, const Problem& dense, const LayoutRecipe& recipe) {
  return recipe.kind == LayoutKind::varlen ? run_layout(kernel, lay_out_varlen(dense, recipe))
                                           : run_layout(kernel, lay_out_kv_cache(dense, recipe));
}

std::string judge_sequences(const Kernel& kernel, const LayoutRun& run, ErrorStats& stats, LayoutJudgement judgement,
                            std::vector<std::optional<Evaluation>>* kept) {
  const double u_out = output_unit(kernel);
  const Capabilities caps = kernel.capabilities();
  if (kept) kept->assign(run.sequences.size(), std::nullopt);
  for (std::size_t b = 0; b < run.sequences.size(); ++b) {
    const Sequence& s = run.sequences[b];
    const Outputs& part = run.parts[b];
    const std::string which = run.where + ", sequence " + std::to_string(b) + " (L_b = " +
                              std::to_string(s.lengths.q_len) + ", S_b = " + std::to_string(s.lengths.kv_len) + ")";
    if (!s.problem) {
      // No keys: every row has no visible key (SPEC 2.3), output 0 and lse
      // the sink's or -inf; no rows: nothing. Judged where rows with no
      // visible key are (as everywhere else).
      if (judgement == LayoutJudgement::clause && !caps.fully_masked_rows) continue;
      for (double x : part.out)
        if (x != 0) return which + ": a row with no keys output " + std::to_string(x) + ", expected 0";
      const auto L = static_cast<std::size_t>(std::max(1, s.lengths.q_len));
      for (std::size_t row = 0; row < part.lse.size(); ++row) {
        const double sink = run.shared.sinks.empty() ? -INFINITY : run.shared.sinks[row / L];
        if (!(part.lse[row] == sink))
          return which + ": a row with no keys has lse " + std::to_string(part.lse[row]) + ", expected " +
                 std::to_string(sink);
      }
      continue;
    }
    KernelResult got{part.out, part.lse};
    if (judgement == LayoutJudgement::check) {
      if (std::string f = check_result_against_reference(kernel, *s.problem, std::move(got), stats); !f.empty())
        return which + ": " + f;
      continue;
    }
    Evaluation e = evaluate_result(kernel, *s.problem, std::move(got));
    if (std::string f = outside_bound(*s.problem, e, u_out, stats); !f.empty()) return which + ": " + f;
    if (caps.lse)
      if (std::string f = lse_outside_bound(e); !f.empty()) return which + ": " + f;
    if (kept) (*kept)[b] = std::move(e);
  }
  return "";
}

std::string check_layout_against_reference(Kernel& kernel, const Problem& dense, const LayoutRecipe& recipe,
                                           ErrorStats& stats) {
  return judge_sequences(kernel, run_layout(kernel, dense, recipe), stats, LayoutJudgement::check);
}

}  // namespace attnspec
