#!/usr/bin/env bash
# The backward pass through the process protocol (spec/SPEC.md section 8,
# kind "backward"): the NumPy example adapter passes GRADPREC, GRADSUM,
# GRADMASK and GRADGQA in the quick profile; copies of it with one
# backward bug each (D left out, the softcap's derivative left out, a kv
# head's dK from its first query head only) fail the clause meant to
# catch the bug, so a PASS here can fail.
# Usage: tests/process/numpy_backward_test.sh SOURCE_DIR   (env: ATTNSPEC)
source "$1/tests/process/numpy_adapter_tests.sh"
"$ATTNSPEC" run --kernel "$adapter" --profile quick --save-failures "$work/failures" \
  --clause GRADPREC --clause GRADSUM --clause GRADMASK --clause GRADGQA

bugged d-left-out numpy_adapter.py "ds = weights * (dp - d)" "ds = weights * dp" GRADSUM
bugged softcap-derivative numpy_adapter.py "ds = ds * (dtype(1) - t * t)" "ds = ds" GRADPREC
bugged gqa-first-head numpy_adapter.py "dk = dk.reshape(b, hkv, group, S, -1).sum(axis=2)" "dk = dk.reshape(b, hkv, group, S, -1)[:, :, 0]" GRADGQA
echo "numpy adapter backward: ok"
