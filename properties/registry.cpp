// One registration line per clause; tests/clause_table_test.cpp checks that
// this list, the clause table and SPEC.md name the same clauses.
#include "properties/registry.hpp"

#include <array>

#include "properties/clauses/clauses.hpp"

namespace attnspec {
namespace {

constexpr std::array kProperties = {
    RegisteredProperty{"SCALE", check_scale},       RegisteredProperty{"VAR", check_var},
    RegisteredProperty{"ROWSUM", check_rowsum},     RegisteredProperty{"CONVEX", check_convex},
    RegisteredProperty{"UNIFORM", check_uniform},   RegisteredProperty{"MASKBOOL", check_maskbool},
    RegisteredProperty{"MASKADD", check_maskadd},   RegisteredProperty{"MASKNAN", check_masknan},
    RegisteredProperty{"CAUSAL", check_causal},     RegisteredProperty{"WINDOW", check_window},
    RegisteredProperty{"ALIBI", check_alibi},       RegisteredProperty{"SINK", check_sink},
    RegisteredProperty{"DESCALE", check_descale},   RegisteredProperty{"FULLMASK", check_fullmask},
    RegisteredProperty{"VARLEN", check_varlen},     RegisteredProperty{"KVCACHE", check_kvcache},
    RegisteredProperty{"PAGED", check_paged},       RegisteredProperty{"SPLITKV", check_splitkv},
    RegisteredProperty{"MERGE", check_merge},
    RegisteredProperty{"PERMQ", check_permq},       RegisteredProperty{"PERMKV", check_permkv},
    RegisteredProperty{"SHIFT", check_shift},       RegisteredProperty{"TEMP", check_temp},
    RegisteredProperty{"LINV", check_linv},         RegisteredProperty{"GQA", check_gqa},
    RegisteredProperty{"BATCH", check_batch},       RegisteredProperty{"SOFTCAP", check_softcap},
    RegisteredProperty{"NANPROP", check_nanprop},   RegisteredProperty{"LSE", check_lse},
    RegisteredProperty{"PREC", check_prec},         RegisteredProperty{"PRECTIGHT", check_prectight},
    RegisteredProperty{"PRECREL", check_precrel},
    RegisteredProperty{"GRADPREC", check_gradprec}, RegisteredProperty{"GRADREL", check_gradrel},
    RegisteredProperty{"GRADSUM", check_gradsum},   RegisteredProperty{"GRADLIN", check_gradlin},
    RegisteredProperty{"GRADPERM", check_gradperm}, RegisteredProperty{"GRADMASK", check_gradmask},
    RegisteredProperty{"GRADGQA", check_gradgqa},   RegisteredProperty{"GOLDEN", check_golden},
    RegisteredProperty{"DETERM", check_determ},     RegisteredProperty{"GRADDETERM", check_graddeterm},
};

}  // namespace

std::span<const RegisteredProperty> registered_properties() { return kProperties; }

PropertyFunction find_property(std::string_view clause) {
  for (const RegisteredProperty& p : kProperties)
    if (p.clause == clause) return p.check;
  return nullptr;
}

}  // namespace attnspec
