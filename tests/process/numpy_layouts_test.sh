#!/usr/bin/env bash
# The layouts and the merge through the process protocol (spec/SPEC.md
# section 8, attnspec-packed/1): the NumPy example adapter passes
# check-adapter and VARLEN, KVCACHE, PAGED, SPLITKV and MERGE in the quick
# profile; copies of it with one layout bug each (a neighbour's first key,
# pages read in pool order, a merge that turns an all-empty row into NaN)
# fail the clause meant to catch the bug, so a PASS here can fail.
# Usage: tests/process/numpy_layouts_test.sh SOURCE_DIR   (env: ATTNSPEC)
source "$1/tests/process/numpy_adapter_tests.sh"
"$ATTNSPEC" check-adapter "$adapter" | tee "$work/check.txt"
for probe in "varlen batch" "KV cache of 5" "paged KV cache" "merge of 3 parts"; do
  grep -q "^PASS  run ($probe" "$work/check.txt" || { echo "check-adapter ran no '$probe' probe"; exit 1; }
done
"$ATTNSPEC" run --kernel "$adapter" --profile quick --save-failures "$work/failures" \
  --clause VARLEN --clause KVCACHE --clause PAGED --clause SPLITKV --clause MERGE

bugged neighbour-key packed_cases.py "slice(cu_k[b], cu_k[b + 1])" "slice(cu_k[b], cu_k[b + 1] + 1)" VARLEN
bugged pages-in-order packed_cases.py "np.asarray(case[\"block_table\"][b], dtype=np.int64)[slots // page_size]" \
  "slots // page_size" PAGED
bugged empty-merge-nan numpy_adapter.py "shift = np.where(empty, dtype(0), largest)" "shift = largest" MERGE
echo "numpy adapter layouts: ok"
