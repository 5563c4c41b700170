// VARLEN, KVCACHE and PAGED: the layouts of spec/SPEC.md section 2.5. A
// dense problem's batch entries become sequences of their own lengths,
// laid out as a serving kernel takes them (packed, in a cache, in pages);
// every sequence's outputs and lse must be within the precision model's
// bounds of the certified reference of its dense problem, and the places
// no sequence reads (padding rows, spare slots and pages) hold NaN, as
// xformers fills its padding, so that reading them shows. The
// counterexample is saved with its layout (a case's "layout").
#include <rapidcheck.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "properties/clauses/clauses.hpp"
#include "properties/generators.hpp"
#include "properties/harness.hpp"
#include "properties/layout_check.hpp"

namespace attnspec {
namespace {

constexpr int kMostSequences = 4;

// The layouts carry no mask and no descales (SPEC 2.5).
Features layout_features() {
  Features f;
  f.bool_mask = f.additive_mask = f.fully_masked_rows = false;
  f.descales = false;
  return f;
}

// At least `sequences` batch entries (a layout of one sequence would not
// show a kernel that mixes sequences up), and L = 1 for a decode step.
std::function<void(Dims&)> layout_shape(int sequences, bool decode) {
  return [sequences, decode](Dims& d) {
    d.batch = std::max(d.batch, sequences);
    if (decode) d.q_len = 1;
  };
}

// Lengths for up to kMostSequences entries, kMostSequences + 1 rolls drawn
// whatever the batch (so later draws keep their places when the batch
// shrinks). Roll 0 keeps the full length, 1 makes it 0 (an empty
// sequence), 2-4 a length in between; shrinking gives every entry its
// full length.
std::vector<int> draw_lengths(int batch, int full) {
  std::array<int, kMostSequences> rolls{};
  for (int& roll : rolls) roll = draw_in(0, 4);
  const int fraction = draw_in(0, 1 << 20);
  std::vector<int> lengths;
  for (int b = 0; b < batch; ++b) {
    const int roll = rolls[static_cast<std::size_t>(b % kMostSequences)];
    lengths.push_back(roll == 0 || full == 0 ? full : roll == 1 ? 0 : 1 + (fraction + 7 * b) % std::max(1, full - 1));
  }
  return lengths;
}

// Runs a layout clause's body, which fills in the recipe of its case; the
// recipe of the last failing case goes with the counterexample.
using LayoutBody = std::function<std::string(Problem&, ErrorStats&, LayoutRecipe&)>;
ClauseOutcome run_layout_property(PropertyContext& context, const LayoutBody& body) {
  std::optional<LayoutRecipe> failing;
  ClauseOutcome outcome = run_property(context, [&](Problem& p, ErrorStats& stats) {
    LayoutRecipe recipe;
    std::string failure;
    try {
      failure = body(p, stats, recipe);
    } catch (const rc::GenerationFailure&) {
      throw;
    } catch (const KernelUnsupported&) {
      throw;
    } catch (const KernelFault&) {
      throw;
    } catch (const ReferenceError&) {
      throw;
    } catch (const NothingChecked&) {
      throw;
    } catch (const std::exception&) {
      if (!context.judging_the_rest) failing = recipe;  // the harness fails the case with the message
      throw;
    }
    if (!failure.empty() && !context.judging_the_rest) failing = recipe;
    return failure;
  });
  if (outcome.counterexample) outcome.counterexample_layout = failing;
  return outcome;
}

// A KV cache recipe for p: entry b keeps all L queries and its drawn key
// count, of which none, min(L, shortest) or one come as new keys. A kernel
// whose keys hold the new queries' own (kv_len_at_least_q_len: ONNX
// Runtime's GroupQueryAttention appends one key per query) gets L new keys
// and at least L keys per entry (p has S >= L for it); the same rolls are
// drawn, so shrinking works alike.
LayoutRecipe draw_cache_recipe(const Problem& p, const Capabilities& caps) {
  LayoutRecipe recipe;
  recipe.kind = LayoutKind::kv_cache;
  recipe.kv_lens = draw_lengths(p.dims.batch, p.dims.kv_len);
  const int new_roll = draw_in(0, 3);
  const int shortest = *std::min_element(recipe.kv_lens.begin(), recipe.kv_lens.end());
  recipe.new_len = new_roll == 0 ? 0 : new_roll == 1 ? std::min(shortest, p.dims.q_len) : std::min(shortest, 1);
  if (caps.kv_len_at_least_q_len) {
    for (int& n : recipe.kv_lens) n = std::max(n, p.dims.q_len);
    recipe.new_len = p.dims.q_len;
  }
  return recipe;
}

}  // namespace

ClauseOutcome check_varlen(PropertyContext& context) {
  const Capabilities caps = context.kernel.capabilities();
  const double u_out = output_unit(context.kernel);
  return run_layout_property(context, [&](Problem& p, ErrorStats& stats, LayoutRecipe& recipe) -> std::string {
    const int sequences = draw_in(1, kMostSequences);
    p = draw_problem(context.kernel, context.profile, layout_features(), layout_shape(sequences, false));
    recipe.kind = LayoutKind::varlen;
    recipe.q_lens = draw_lengths(p.dims.batch, p.dims.q_len);
    recipe.kv_lens = draw_lengths(p.dims.batch, p.dims.kv_len);
    if (caps.kv_len_at_least_q_len)
      for (std::size_t b = 0; b < recipe.q_lens.size(); ++b) recipe.q_lens[b] = std::min(recipe.q_lens[b], recipe.kv_lens[b]);
    recipe.padding_q_rows = draw_in(0, 2);
    recipe.padding_k_rows = draw_in(0, 2);
    const int victim = draw_in(0, kMostSequences - 1) % p.dims.batch;
    VarlenBatch batch = lay_out_varlen(p, recipe);
    std::vector<std::optional<Evaluation>> judged;
    const LayoutRun run = run_layout(context.kernel, batch);
    if (std::string f = judge_sequences(context.kernel, run, stats, LayoutJudgement::clause, &judged); !f.empty()) return f;
    if (p.dims.batch < 2) return "";

    // NaN in one sequence's rows reaches none of the others.
    const Dims& d = p.dims;
    const auto v = static_cast<std::size_t>(victim);
    const auto poison = [](std::vector<double>& values, int first, int last, int width) {
      std::fill(values.begin() + static_cast<std::ptrdiff_t>(first) * width,
                values.begin() + static_cast<std::ptrdiff_t>(last) * width, std::numeric_limits<double>::quiet_NaN());
    };
    poison(batch.q, batch.cu_seqlens_q[v], batch.cu_seqlens_q[v + 1], d.q_heads * d.d_k);
    poison(batch.k, batch.cu_seqlens_k[v], batch.cu_seqlens_k[v + 1], d.kv_heads * d.d_k);
    poison(batch.v, batch.cu_seqlens_k[v], batch.cu_seqlens_k[v + 1], d.kv_heads * d.d_v);
    const LayoutRun again = run_layout(context.kernel, batch);
    for (std::size_t b = 0; b < judged.size(); ++b) {
      if (b == v || !judged[b]) continue;
      Evaluation after = *judged[b];
      after.got.out = again.parts[b].out;
      const std::string relation = run.where + ", sequence " + std::to_string(b) + " with sequence " +
                                   std::to_string(victim) + "'s rows set to NaN";
      if (std::string f = disagree(*judged[b], after, same_index(after.got.out.size()), relation, u_out, stats); !f.empty())
        return f;
    }
    return "";
  });
}

ClauseOutcome check_kvcache(PropertyContext& context) {
  return run_layout_property(context, [&](Problem& p, ErrorStats& stats, LayoutRecipe& recipe) -> std::string {
    const int sequences = draw_in(1, kMostSequences);
    const bool decode = draw_in(0, 1) == 1;
    p = draw_problem(context.kernel, context.profile, layout_features(), layout_shape(sequences, decode));
    recipe = draw_cache_recipe(p, context.kernel.capabilities());
    recipe.cache.spare_slots = draw_in(0, 3);
    return judge_sequences(context.kernel, run_layout(context.kernel, p, recipe), stats);
  });
}

ClauseOutcome check_paged(PropertyContext& context) {
  constexpr std::array kPageSizes = {1, 2, 3, 5, 8, 16, 32, 64, 128, 256};
  return run_layout_property(context, [&](Problem& p, ErrorStats& stats, LayoutRecipe& recipe) -> std::string {
    const int sequences = draw_in(1, kMostSequences);
    const bool decode = draw_in(0, 1) == 1;
    p = draw_problem(context.kernel, context.profile, layout_features(), layout_shape(sequences, decode));
    recipe = draw_cache_recipe(p, context.kernel.capabilities());
    const auto size_roll = static_cast<std::size_t>(draw_in(0, static_cast<int>(kPageSizes.size()) - 1));
    // A kernel that takes some page sizes only gets those, from the same roll.
    const std::vector<int>& allowed = context.kernel.capabilities().page_sizes;
    recipe.cache.page_size = allowed.empty() ? kPageSizes[size_roll] : allowed[size_roll % allowed.size()];
    recipe.cache.spare_pages = draw_in(0, 3);
    // The pool's pages in an order drawn as one roll (0: in order), so that
    // the number of draws does not depend on the pool's size.
    const int order = draw_in(0, 1 << 20);
    if (order != 0) {
      recipe.cache.page_order.resize(static_cast<std::size_t>(pool_pages(recipe)));
      std::iota(recipe.cache.page_order.begin(), recipe.cache.page_order.end(), 0);
      std::uint64_t state = static_cast<std::uint64_t>(order) * 0x9E3779B97F4A7C15ull;
      for (std::size_t i = recipe.cache.page_order.size(); i > 1; --i) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        std::swap(recipe.cache.page_order[i - 1], recipe.cache.page_order[(state >> 33) % i]);
      }
    }
    return judge_sequences(context.kernel, run_layout(context.kernel, p, recipe), stats);
  });
}

}  // namespace attnspec
