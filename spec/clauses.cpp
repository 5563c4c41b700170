// The clause table of spec/SPEC.md section 7, one declarative row per
// clause, in the order of the specification.
#include "spec/clauses.hpp"

#include <array>

namespace attnspec {
namespace {

constexpr std::array kClauses = {
    Clause{"SCALE", "the default scale is 1/sqrt(d_k) of the head; an explicit scale replaces it", ClauseKind::semantic, kNeedsNothing},
    Clause{"VAR", "iid N(0,1) components give logits of variance d_k, scaled logits of variance 1", ClauseKind::statistical, kNeedsNothing},
    Clause{"ROWSUM", "each unmasked row's weights are >= 0 and sum to 1", ClauseKind::semantic, kNeedsNothing},
    Clause{"CONVEX", "each output lies within [min, max] of the visible values of its column", ClauseKind::semantic, kNeedsNothing},
    Clause{"UNIFORM", "a zero query, or identical visible keys, gives uniform weights", ClauseKind::semantic, kNeedsNothing},
    Clause{"MASKBOOL", "a blocked key gets no weight; a bool mask equals an additive mask of {0, -inf}", ClauseKind::semantic, kNeedsBoolMask},
    Clause{"MASKADD", "additive mask values are added to the scaled, capped logits before softmax", ClauseKind::semantic, kNeedsAdditiveMask},
    Clause{"MASKNAN", "NaN or Inf at blocked keys and values never reaches the output", ClauseKind::semantic, kNeedsBoolMask},
    Clause{"CAUSAL", "causal masking follows the declared alignment when L != S", ClauseKind::semantic, kNeedsCausal},
    Clause{"WINDOW", "a sliding window equals its band as a bool mask; keys outside it, NaN or not, change nothing", ClauseKind::semantic, kNeedsWindow},
    Clause{"ALIBI", "ALiBi adds -slope |i + off - j| after the scale and softcap, as the same bias given as an additive mask", ClauseKind::semantic, kNeedsAlibi},
    Clause{"SINK", "a sink adds exp(sigma_h) to the denominator and nothing to the output, as one more key of logit sigma_h and value 0", ClauseKind::semantic, kNeedsSinks},
    Clause{"DESCALE", "descale factors are exact scalings of q, k and v per (batch, kv head), read through the kv head", ClauseKind::semantic, kNeedsDescales},
    Clause{"FULLMASK", "a row with every key blocked outputs exactly 0", ClauseKind::semantic, kNeedsMask},
    Clause{"VARLEN", "a packed variable-length batch gives each sequence its own dense result; NaN in other sequences' rows and in padding changes nothing", ClauseKind::semantic, kNeedsVarlen},
    Clause{"KVCACHE", "a KV cache with per-sequence lengths and appended keys gives each sequence the dense problem of its keys; unused slots change nothing", ClauseKind::semantic, kNeedsKvCache},
    Clause{"PAGED", "a paged KV cache, any page size and page order, gives each sequence the dense problem of its keys; unused pages and slots change nothing", ClauseKind::semantic, kNeedsPagedKvCache},
    Clause{"SPLITKV", "the output over all keys equals the exact merge of the kernel's own outputs and lse over a split of them", ClauseKind::semantic, kNeedsLse},
    Clause{"MERGE", "a kernel's merge operator returns the exact merge of partial outputs and lse within its bound; empty parts contribute nothing", ClauseKind::precision, kNeedsMerge},
    Clause{"PERMQ", "permuting query rows permutes output rows", ClauseKind::semantic, kNeedsNothing},
    Clause{"PERMKV", "permuting keys and values together leaves the output unchanged", ClauseKind::semantic, kNeedsNothing},
    Clause{"SHIFT", "a constant added to a row's logits changes nothing; large logits do not overflow", ClauseKind::semantic, kNeedsAdditiveMask},
    Clause{"TEMP", "scale s with cQ equals scale cs with Q; higher temperature, higher entropy", ClauseKind::semantic, kNeedsExplicitScale},
    Clause{"LINV", "the output is linear in V", ClauseKind::semantic, kNeedsNothing},
    Clause{"GQA", "query head h reads kv head h / (Hq/Hkv), as with explicitly repeated K and V", ClauseKind::semantic, kNeedsGqa},
    Clause{"BATCH", "batch entries and heads are independent", ClauseKind::semantic, kNeedsNothing},
    Clause{"SOFTCAP", "softcap c*tanh(x/c) applies after the scale and before the mask", ClauseKind::semantic, kNeedsSoftcap},
    Clause{"NANPROP", "NaN or Inf in a visible input reaches exactly the outputs that depend on it", ClauseKind::semantic, kNeedsNothing},
    Clause{"LSE", "a returned log-sum-exp is within the precision model's bound", ClauseKind::precision, kNeedsLse},
    Clause{"PREC", "every output is within the precision model's bound of the certified reference", ClauseKind::precision, kNeedsNothing},
    Clause{"PRECTIGHT", "every output is within the tight tier's bound of the certified reference", ClauseKind::precision, kNeedsNothing},
    Clause{"PRECREL", "max error at most 2x the naive implementation's in the same formats, plus the rounding floor", ClauseKind::precision, kNeedsNothing},
    Clause{"GRADPREC", "every gradient (dQ, dK, dV, the sinks') is within the backward's bound of the certified gradients", ClauseKind::precision, kNeedsBackward},
    Clause{"GRADREL", "each gradient's max error at most 3x the textbook backward's in the same formats, plus the rounding floor", ClauseKind::precision, kNeedsBackward},
    Clause{"GRADSUM", "a head's key gradients sum to zero and its value gradients to the dO of its rows", ClauseKind::semantic, kNeedsBackward},
    Clause{"GRADLIN", "the gradients are linear in dO", ClauseKind::semantic, kNeedsBackward},
    Clause{"GRADPERM", "permuting query rows and keys permutes the rows of dQ and the keys of dK and dV", ClauseKind::semantic, kNeedsBackward},
    Clause{"GRADMASK", "blocked keys, NaN or not, get exactly zero dK and dV and change no other gradient", ClauseKind::semantic, kNeedsBackward | kNeedsBoolMask},
    Clause{"GRADGQA", "a kv head's dK and dV are the sums over its query heads, as with K and V repeated per query head", ClauseKind::semantic, kNeedsBackward | kNeedsGqa},
    Clause{"GOLDEN", "the golden cases (cases/golden) pass", ClauseKind::golden, kNeedsNothing},
    Clause{"DETERM", "the same inputs give bitwise identical outputs on repeated calls", ClauseKind::informative, kNeedsNothing},
    Clause{"GRADDETERM", "the same inputs give bitwise identical gradients on repeated calls", ClauseKind::informative, kNeedsBackward},
};

}  // namespace

std::string_view to_string(ClauseKind kind) {
  switch (kind) {
    case ClauseKind::semantic: return "semantic";
    case ClauseKind::statistical: return "statistical";
    case ClauseKind::precision: return "precision";
    case ClauseKind::golden: return "golden";
    case ClauseKind::informative: return "informative";
  }
  return "?";
}

std::span<const Clause> clause_table() { return kClauses; }

const Clause* find_clause(std::string_view id) {
  for (const Clause& c : kClauses)
    if (c.id == id) return &c;
  return nullptr;
}

std::string skip_reason(const Clause& clause, const Capabilities& c) {
  std::string reason;
  const auto lacks = [&](unsigned need, bool has, const char* what) {
    if (!(clause.needs & need) || has) return;
    reason += reason.empty() ? "kernel lacks " : ", ";
    reason += what;
  };
  lacks(kNeedsBoolMask, c.bool_mask, "bool masks");
  lacks(kNeedsAdditiveMask, c.additive_mask, "additive masks");
  lacks(kNeedsMask, c.bool_mask || c.additive_mask, "masks");
  lacks(kNeedsCausal, c.causal_top_left || c.causal_bottom_right, "causal masking");
  lacks(kNeedsWindow, c.window_top_left || c.window_bottom_right, "sliding windows");
  lacks(kNeedsAlibi, c.alibi_top_left || c.alibi_bottom_right, "ALiBi");
  lacks(kNeedsSinks, c.sinks, "attention sinks");
  lacks(kNeedsDescales, c.descales, "descale factors");
  lacks(kNeedsGqa, c.gqa, "GQA");
  lacks(kNeedsExplicitScale, c.explicit_scale, "an explicit scale");
  lacks(kNeedsSoftcap, c.softcap, "softcap");
  lacks(kNeedsLse, c.lse, "log-sum-exp output");
  lacks(kNeedsVarlen, c.varlen, "variable-length batches");
  lacks(kNeedsKvCache, c.kv_cache, "KV caches");
  lacks(kNeedsPagedKvCache, c.paged_kv_cache, "paged KV caches");
  lacks(kNeedsMerge, c.merge_partials.has_value(), "a merge operator");
  lacks(kNeedsBackward, c.backward, "a backward pass");
  return reason;
}

}  // namespace attnspec
