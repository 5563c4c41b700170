#!/usr/bin/env bash
# The backward pass through the process protocol (spec/SPEC.md section 8,
# kind "backward"): the NumPy example adapter passes GRADPREC, GRADSUM,
# GRADMASK and GRADGQA in the quick profile; copies of it with one
# backward bug each (D left out, the softcap's derivative left out, a kv
# head's dK from its first query head only) fail the clause meant to
# catch the bug, so a PASS here can fail.
# Usage: tests/process/numpy_backward_test.sh SOURCE_DIR   (env: ATTNSPEC)
set -euo pipefail
source_dir="$1"
source "$source_dir/tests/process/numpy_python.sh"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

adapter="cmd:$python $source_dir/adapters/python/numpy_adapter.py --dtype float32"
"$ATTNSPEC" run --kernel "$adapter" --profile quick --save-failures "$work/failures" \
  --clause GRADPREC --clause GRADSUM --clause GRADMASK --clause GRADGQA

# bugged NAME PYTHON_FIND PYTHON_REPLACE CLAUSE: a copy of the adapter with
# one line changed must fail CLAUSE.
bugged() {
  local name="$1" find="$2" replace="$3" clause="$4" copy="$work/$1"
  mkdir -p "$copy"
  cp "$source_dir/adapters/python/numpy_adapter.py" "$source_dir/adapters/python/packed_cases.py" "$copy/"
  "$python" - "$copy/numpy_adapter.py" "$find" "$replace" <<'PY'
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
bugged d-left-out "ds = weights * (dp - d)" "ds = weights * dp" GRADSUM
bugged softcap-derivative "ds = ds * (dtype(1) - t * t)" "ds = ds" GRADPREC
bugged gqa-first-head "dk = dk.reshape(b, hkv, group, S, -1).sum(axis=2)" "dk = dk.reshape(b, hkv, group, S, -1)[:, :, 0]" GRADGQA
echo "numpy adapter backward: ok"
