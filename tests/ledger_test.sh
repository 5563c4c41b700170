#!/usr/bin/env bash
# The checkable ledger (issue 43): a two-seed sweep keeps a seed file per
# seed and enters lines built from them; `scripts/ledger.py verify` passes
# on that ledger and fails on a changed result or a missing line; a
# damaged seed file is bad input (exit 2) naming the file. Usage:
# tests/ledger_test.sh SOURCE_DIR   (env: ATTNSPEC, PYTHON)
set -uo pipefail
source_dir="$1"
python="${PYTHON:-python3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failures=0
check() {  # check NAME COMMAND...; a command's output is kept for `said`
  local name="$1"
  shift
  if "$@" >"$work/out.txt" 2>&1; then echo "ok   $name"; else echo "FAIL $name"; sed 's/^/     /' "$work/out.txt"; failures=$((failures + 1)); fi
  [ "$1" = said ] || cp "$work/out.txt" "$work/said.txt"
}
said() { grep -q -- "$1" "$work/said.txt"; }  # the last command's output has PATTERN
fails_with() {  # fails_with STATUS COMMAND...: the command exits with STATUS
  local want="$1"
  shift
  "$@"
  [ $? -eq "$want" ]
}
ledger="$work/ledger.tsv"
head -n 1 "$source_dir/bench/false_alarm_ledger.tsv" >"$ledger"
verify() { "$python" "$source_dir/scripts/ledger.py" verify --ledger "$ledger" --sweeps "$work/sweeps"; }

check "a two-seed sweep" env LEDGER="$ledger" REPORTS="$work/sweeps" OUT="$work/out" KERNELS="naive-f64" \
  CLAUSES="SCALE ROWSUM" PROFILE=quick PYTHON="$python" bash "$source_dir/scripts/false_alarm.sh" 1 2
check "two seed files kept" test "$(find "$work/sweeps" -name '*.json.gz' | wc -l)" -eq 2
check "two ledger lines" test "$(wc -l <"$ledger")" -eq 3
check "each line built from its reports" grep -q $'naive-f64\tSCALE ROWSUM\t2\t2 passed, 0 failed, 0 skipped$' "$ledger"
check "verify passes" verify
check "and counts them" said "2 of them built from kept reports"
cp "$ledger" "$work/kept.tsv"
sed -i 's/2 passed, 0 failed/1 passed, 1 failed/' "$ledger"
check "a changed result fails verify" fails_with 1 verify
check "naming what the reports say" said "the reports say"
head -n 2 "$work/kept.tsv" >"$ledger"
check "a missing line fails verify" fails_with 1 verify
check "naming the line" said "no line"
cp "$work/kept.tsv" "$ledger"
printf '2026-01-01T00:00Z\tabc\tavx2\tci\tbuiltin\tall\t1\t1 passed, 0 failed, 0 skipped\n' >>"$ledger"
check "an older line without reports passes" verify
check "counted as such" said "1 older lines with no reports"
seed_file="$(find "$work/sweeps" -name '*seed1.json.gz')"
printf 'not gzip' >"$seed_file"
check "a damaged seed file is bad input" fails_with 2 verify
check "named" said "$(basename "$seed_file"): not a gzip-compressed JSON file"

echo "ledger: $failures failure(s)"
[ "$failures" -eq 0 ]
