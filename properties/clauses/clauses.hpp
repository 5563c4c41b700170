// The property of each clause (one function per clause ID), registered in
// properties/registry.cpp.
#pragma once

#include "properties/property.hpp"

namespace attnspec {

ClauseOutcome check_scale(PropertyContext& context);
ClauseOutcome check_var(PropertyContext& context);
ClauseOutcome check_rowsum(PropertyContext& context);
ClauseOutcome check_convex(PropertyContext& context);
ClauseOutcome check_uniform(PropertyContext& context);
ClauseOutcome check_maskbool(PropertyContext& context);
ClauseOutcome check_maskadd(PropertyContext& context);
ClauseOutcome check_masknan(PropertyContext& context);
ClauseOutcome check_causal(PropertyContext& context);
ClauseOutcome check_window(PropertyContext& context);
ClauseOutcome check_alibi(PropertyContext& context);
ClauseOutcome check_sink(PropertyContext& context);
ClauseOutcome check_descale(PropertyContext& context);
ClauseOutcome check_fullmask(PropertyContext& context);
ClauseOutcome check_varlen(PropertyContext& context);
ClauseOutcome check_kvcache(PropertyContext& context);
ClauseOutcome check_paged(PropertyContext& context);
ClauseOutcome check_splitkv(PropertyContext& context);
ClauseOutcome check_merge(PropertyContext& context);
ClauseOutcome check_permq(PropertyContext& context);
ClauseOutcome check_permkv(PropertyContext& context);
ClauseOutcome check_shift(PropertyContext& context);
ClauseOutcome check_temp(PropertyContext& context);
ClauseOutcome check_linv(PropertyContext& context);
ClauseOutcome check_gqa(PropertyContext& context);
ClauseOutcome check_batch(PropertyContext& context);
ClauseOutcome check_softcap(PropertyContext& context);
ClauseOutcome check_nanprop(PropertyContext& context);
ClauseOutcome check_lse(PropertyContext& context);
ClauseOutcome check_prec(PropertyContext& context);
ClauseOutcome check_prectight(PropertyContext& context);
ClauseOutcome check_precrel(PropertyContext& context);
ClauseOutcome check_gradprec(PropertyContext& context);
ClauseOutcome check_gradsum(PropertyContext& context);
ClauseOutcome check_gradmask(PropertyContext& context);
ClauseOutcome check_gradgqa(PropertyContext& context);
ClauseOutcome check_gradrel(PropertyContext& context);
ClauseOutcome check_gradlin(PropertyContext& context);
ClauseOutcome check_gradperm(PropertyContext& context);
ClauseOutcome check_graddeterm(PropertyContext& context);
ClauseOutcome check_golden(PropertyContext& context);
ClauseOutcome check_determ(PropertyContext& context);

}  // namespace attnspec
