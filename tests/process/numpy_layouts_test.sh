#!/usr/bin/env bash
# The layouts and the merge through the process protocol (spec/SPEC.md
# section 8, attnspec-packed/1): the NumPy example adapter passes
# check-adapter and VARLEN, KVCACHE, PAGED, SPLITKV and MERGE in the quick
# profile; copies of it with one layout bug each (a neighbour's first key,
# pages read in pool order, a merge that turns an all-empty row into NaN)
# fail the clause meant to catch the bug, so a PASS here can fail.
# Usage: tests/process/numpy_layouts_test.sh SOURCE_DIR   (env: ATTNSPEC)
set -euo pipefail
source_dir="$1"
source "$source_dir/tests/process/numpy_python.sh"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

adapter="cmd:$python $source_dir/adapters/python/numpy_adapter.py --dtype float32"
"$ATTNSPEC" check-adapter "$adapter" | tee "$work/check.txt"
for probe in "varlen batch" "KV cache of 5" "paged KV cache" "merge of 3 parts"; do
  grep -q "^PASS  run ($probe" "$work/check.txt" || { echo "check-adapter ran no '$probe' probe"; exit 1; }
done
"$ATTNSPEC" run --kernel "$adapter" --profile quick --save-failures "$work/failures" \
  --clause VARLEN --clause KVCACHE --clause PAGED --clause SPLITKV --clause MERGE

# bugged NAME FILE PYTHON_FIND PYTHON_REPLACE CLAUSE: a copy of the adapter
# with one line changed must fail CLAUSE.
bugged() {
  local name="$1" file="$2" find="$3" replace="$4" clause="$5" copy="$work/$1"
  mkdir -p "$copy"
  cp "$source_dir/adapters/python/numpy_adapter.py" "$source_dir/adapters/python/packed_cases.py" "$copy/"
  "$python" - "$copy/$file" "$find" "$replace" <<'PY'
import sys
path, find, replace = sys.argv[1:]
text = open(path).read()
assert text.count(find) == 1, "the line to change is not in " + path + ": " + find
open(path, "w").write(text.replace(find, replace))
PY
  local status=0
  "$ATTNSPEC" run --kernel "cmd:$python $copy/numpy_adapter.py --dtype float32" --profile quick --no-shrink \
    --save-failures "$work/failures-$name" --clause "$clause" >"$work/$name.txt" 2>&1 || status=$?
  if [ "$status" -ne 1 ] || ! grep -q "^FAIL  $clause " "$work/$name.txt"; then
    cat "$work/$name.txt"
    echo "the adapter with bug '$name' was not caught by $clause (exit $status)"
    exit 1
  fi
  echo "bug '$name': FAIL $clause, as it should"
}
bugged neighbour-key packed_cases.py "slice(cu_k[b], cu_k[b + 1])" "slice(cu_k[b], cu_k[b + 1] + 1)" VARLEN
bugged pages-in-order packed_cases.py "np.asarray(case[\"block_table\"][b], dtype=np.int64)[slots // page_size]" \
  "slots // page_size" PAGED
bugged empty-merge-nan numpy_adapter.py "shift = np.where(empty, dtype(0), largest)" "shift = largest" MERGE
echo "numpy adapter layouts: ok"
