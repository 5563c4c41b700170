#!/usr/bin/env bash
# The backward pass through the process protocol (spec/SPEC.md section 8,
# kind "backward"): the NumPy example adapter passes GRADPREC, GRADSUM,
# GRADMASK and GRADGQA in the quick profile; copies of it with one
# backward bug each (D left out, the softcap's derivative left out, a kv
# head's dK from its first query head only) fail the clause meant to
# catch the bug, so a PASS here can fail; check-adapter's backward probe
# passes it and fails a copy whose dK is not summed over a GQA group.
# Usage: tests/process/numpy_backward_test.sh SOURCE_DIR   (env: ATTNSPEC)
source "$1/tests/process/numpy_adapter_tests.sh"
"$ATTNSPEC" run --kernel "$adapter" --profile quick --save-failures "$work/failures" \
  --clause GRADPREC --clause GRADSUM --clause GRADMASK --clause GRADGQA

# check-adapter's backward probe: dq, dk and dv well-formed and within
# their bound; a copy that returns dK per query head (unsummed under GQA:
# the wrong shape) fails it.
"$ATTNSPEC" check-adapter "$adapter" | tee "$work/check-adapter.txt"
grep -q "^PASS  run (backward with dO)" "$work/check-adapter.txt"
mkdir -p "$work/unsummed"
cp "$source_dir/adapters/python/numpy_adapter.py" "$source_dir/adapters/python/packed_cases.py" "$work/unsummed/"
sed -i 's/    dk = dk.reshape(b, hkv, group, S, -1).sum(axis=2)/    pass/' "$work/unsummed/numpy_adapter.py"
! grep -q "dk = dk.reshape" "$work/unsummed/numpy_adapter.py"
if "$ATTNSPEC" check-adapter "cmd:$python $work/unsummed/numpy_adapter.py --dtype float32" >"$work/unsummed.txt" 2>&1 ||
  ! grep -q "^FAIL  run (backward with dO)" "$work/unsummed.txt"; then
  cat "$work/unsummed.txt"
  echo "check-adapter passed an adapter whose dK is not summed over the GQA group"
  exit 1
fi

bugged d-left-out numpy_adapter.py "ds = weights * (dp - d)" "ds = weights * dp" GRADSUM
bugged softcap-derivative numpy_adapter.py "ds = ds * (dtype(1) - t * t)" "ds = ds" GRADPREC
bugged gqa-first-head numpy_adapter.py "dk = dk.reshape(b, hkv, group, S, -1).sum(axis=2)" "dk = dk.reshape(b, hkv, group, S, -1)[:, :, 0]" GRADGQA
echo "numpy adapter backward: ok"
