#!/usr/bin/env bash
# The certified reference against an independent implementation: random
# cases from scripts/independent_reference.py (Python decimal, its own
# rounding in integer arithmetic), every format, compared bit for bit;
# laid-out cases (varlen, KV caches, paged: spec/SPEC.md section 2.5) in
# their layout's arrangement, each sequence computed on its own; cases
# with dO (spec/SPEC.md section 2.6) with their gradients too.
# Usage: tests/cross_check.sh SOURCE_DIR   (env: ATTNSPEC, PYTHON, COUNT, LAYOUTS, BACKWARD, SEED)
set -euo pipefail
source_dir="$1"
python="${PYTHON:-python3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$python" "$source_dir/scripts/independent_reference.py" random "$work/cases" --count "${COUNT:-24}" \
  --layouts "${LAYOUTS:-12}" --backward "${BACKWARD:-12}" --seed "${SEED:-1}" >/dev/null
compared=0
failed=0
for format in float64 float32 float16 bfloat16 float8_e4m3fn float8_e5m2; do
  "$ATTNSPEC" reference --quiet --format "$format" --out-dir "$work/ref-$format" "$work"/cases/*/
  for case_dir in "$work"/cases/*/; do
    name="$(basename "$case_dir")"
    gradients=()
    if [ -f "$case_dir/dout.npy" ]; then gradients=(--gradients); fi
    if "$python" "$source_dir/scripts/independent_reference.py" compare "$case_dir" --format "$format" \
        --ref "$work/ref-$format/$name/ref.npy" --ref-lse "$work/ref-$format/$name/ref_lse.npy" "${gradients[@]}" \
        >"$work/compare.txt"; then
      compared=$((compared + 1))
    else
      cat "$work/compare.txt"
      failed=$((failed + 1))
    fi
  done
done
echo "cross-check: $compared passed, $failed failed (case x format, bit for bit)"
[ "$failed" -eq 0 ]
