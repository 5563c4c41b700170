// Judging a kernel on a layout of spec/SPEC.md section 2.5: run it on the
// laid-out batch, cut its result into one per sequence, and judge each
// against the certified reference of the sequence's dense problem. The
// clauses VARLEN, KVCACHE and PAGED, `attnspec check` on a case with a
// "layout", and the mutant tests share it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "properties/harness.hpp"
#include "reference/layouts.hpp"

namespace attnspec {

// A kernel's run on a layout: the sequences' dense problems and the
// kernel's outputs cut to match.
struct LayoutRun {
  SharedOptions shared;
  std::vector<Sequence> sequences;
  std::vector<Outputs> parts;
  std::string where;  // the layout in words, for messages
};

LayoutRun run_layout(Kernel& kernel, const VarlenBatch& batch);
LayoutRun run_layout(Kernel& kernel, const KvCacheBatch& batch);
// `dense` laid out by `recipe` (std::invalid_argument when it cannot be).
LayoutRun run_layout(Kernel& kernel, const Problem& dense, const LayoutRecipe& recipe);

// How a clause judges (the worst-case bound, rows with no visible key as
// the kernel declares; evaluations kept for a later comparison, nullopt
// for sequences with no rows or no keys) or `attnspec check` does (both
// tiers, every row, NaN where the reference is NaN).
enum class LayoutJudgement { clause, check };
std::string judge_sequences(const Kernel& kernel, const LayoutRun& run, ErrorStats& stats,
                            LayoutJudgement judgement = LayoutJudgement::clause,
                            std::vector<std::optional<Evaluation>>* kept = nullptr);

// "" when `dense` laid out by `recipe` passes `attnspec check`, else the
// first failure.
std::string check_layout_against_reference(Kernel& kernel, const Problem& dense, const LayoutRecipe& recipe,
                                           ErrorStats& stats);

}  // namespace attnspec
