// The layout mutants: online-f32 reading the layouts of spec/SPEC.md
// section 2.5 with one bug each, of the classes serving kernels have had
// (shared/ANCHORS.md, issue 13): offsets off by one, causal alignment of
// the packed batch, a cache length ignored, appended keys a slot late, a
// block table read one entry too far, a page size taken for 16; and the
// merge mutants, whose merge operator (spec/SPEC.md section 6.10) has the
// bug. Their dense path is online-f32's, correct: only the layout clauses
// and MERGE can see them.
#include <array>

#include "adapters/mutants/mutants.hpp"
#include "adapters/online/online_kernel.hpp"

namespace attnspec {
namespace {

// Counterexamples of up to four sequences (the clauses draw that many),
// a few rows, keys and components each.
constexpr Dims kFewSequences{4, 4, 2, 4, 40, 4, 4};
// A page-size bug needs a sequence longer than its first page.
constexpr Dims kPagedSequences{4, 4, 2, 4, 40, 4, 4};

// A merge counterexample (its attention form, reference/merge.hpp): rows
// as batch entries, parts as keys.
constexpr Dims kMergeInputs{4, 1, 1, 1, 4, 1, 4};

#define ATTNSPEC_MERGE_MUTANT(BUG, NAME, TEXT) \
  MutantEntry { NAME, TEXT, "MERGE", [] { return make_online_f32_with_merge_bug(NAME, MergeBug::BUG); }, kMergeInputs }

#define ATTNSPEC_LAYOUT_MUTANT(BUG, NAME, TEXT, CLAUSE, LARGEST) \
  MutantEntry { NAME, TEXT, CLAUSE, [] { return make_online_f32_with_layout_bug(NAME, LayoutBug::BUG); }, LARGEST }

}  // namespace

std::span<const MutantEntry> layout_mutant_kernels() {
  static const std::array kLayoutMutants = {
    ATTNSPEC_LAYOUT_MUTANT(varlen_neighbour_key, "mutant-varlen-neighbour-key",
                           "varlen: sequence b reads keys through cu_seqlens_k[b + 1], its neighbour's first", "VARLEN",
                           kFewSequences),
    ATTNSPEC_LAYOUT_MUTANT(varlen_packed_alignment, "mutant-varlen-packed-alignment",
                           "varlen: bottom-right causal offset of the packed totals, not of each sequence", "VARLEN",
                           kFewSequences),
    ATTNSPEC_LAYOUT_MUTANT(cache_length_ignored, "mutant-cache-length-ignored",
                           "KV cache: every slot attended, cache_seqlens ignored", "KVCACHE", kFewSequences),
    ATTNSPEC_LAYOUT_MUTANT(appended_one_slot_late, "mutant-appended-one-slot-late",
                           "KV cache: new keys read from one slot past cache_seqlens (a stale slot; the last one lost)",
                           "KVCACHE", kFewSequences),
    ATTNSPEC_LAYOUT_MUTANT(block_table_one_page_far, "mutant-block-table-one-page-far",
                           "paged: a sequence's last page read from the next block-table entry", "PAGED", kPagedSequences),
    ATTNSPEC_LAYOUT_MUTANT(page_size_assumed_16, "mutant-page-size-16",
                           "paged: slot t read from page t / 16, row t % 16, whatever the page size", "PAGED",
                           kPagedSequences),
    ATTNSPEC_MERGE_MUTANT(no_max_shift, "mutant-merge-no-max-shift",
                          "merge: exp(lse_i) without subtracting the largest lse, which overflows float32 past lse 88.7"),
    ATTNSPEC_MERGE_MUTANT(empty_split_nan, "mutant-merge-empty-split-nan",
                          "merge: a row no part saw a key of gives NaN (exp(-inf - (-inf))), FlashInfer #4451"),
  };
  return kLayoutMutants;
}

#undef ATTNSPEC_LAYOUT_MUTANT
#undef ATTNSPEC_MERGE_MUTANT

}  // namespace attnspec
