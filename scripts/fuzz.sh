#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang, ASan+UBSan) in build-fuzz/ and
# runs each for a fixed time, as many at once as there are cores, on a fresh copy of its seed
# corpus (fuzz/corpus/<target>, never written to), replaying any saved
# reproducers in fuzz/regressions/<target> first. Prints the executions per
# target and a summary table; exits 1 on any crash, leak, timeout or OOM,
# naming the reproducer libFuzzer wrote.
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET]   (default 60)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${1:-60}"
build="$root/build-fuzz"
jobs="$(nproc 2>/dev/null || echo 2)"
targets=(npy case_json expected_json protocol)

mkdir -p "$build"
start=$(date +%s)
cmake -S "$root/fuzz" -B "$build" -DCMAKE_CXX_COMPILER="${CXX_FUZZ:-clang++}" >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log"; exit 1; }
cmake --build "$build" -j "$jobs"
echo "fuzz: build took $(( $(date +%s) - start )) s"

# One target: its report lines go to $build/$t.report and its summary row
# to $build/$t.row (targets run side by side, one per core).
fuzz_one() {
  local t="$1"
  local work="$build/corpus/$t" artifacts="$build/artifacts/$t/" log="$build/$t.log"
  local scratch="$build/tmp/$t"  # the target's scratch directory (libFuzzer may exit without atexit)
  rm -rf "$work" "$artifacts" "$scratch"
  mkdir -p "$work" "$artifacts" "$scratch"
  cp -R "$root/fuzz/corpus/$t/." "$work/"
  local dirs=("$work")
  [ -d "$root/fuzz/regressions/$t" ] && dirs+=("$root/fuzz/regressions/$t")
  {
    echo "== fuzz $t for ${seconds} s (log: $log)"
    local status=0
    TMPDIR="$scratch" "$build/${t}_fuzz" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$artifacts" "${dirs[@]}" >"$log" 2>&1 || status=$?
    rm -rf "$scratch"
    local execs rate cov result=ok
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1) || true
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1) || true
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2) || true
    if [ "$status" -ne 0 ]; then
      result="FAIL($status)"
      grep -E '^==[0-9]+==ERROR|^SUMMARY|runtime error|unexpected exception|ALARM|out-of-memory|deadly signal' "$log" | head -5 || true
      grep -E 'Test unit written to|^artifact_prefix' "$log" || echo "fuzz: no reproducer written; see $log"
      for unit in "$artifacts"*; do  # a saved regression that still fails: name it
        for known in "$root/fuzz/regressions/$t"/*; do
          [ -f "$unit" ] && [ -f "$known" ] && cmp -s "$unit" "$known" && echo "fuzz: known regression $known still fails"
        done
      done
    fi
    echo "$t: ${execs:-?} executions, ${rate:-?} exec/s, coverage ${cov:-?}, $result"
    printf '%-14s %12s %9s %6s  %s\n' "$t" "${execs:-?}" "${rate:-?}" "${cov:-?}" "$result" >"$build/$t.row"
  } >"$build/$t.report" 2>&1
}

running=0
for t in "${targets[@]}"; do
  rm -f "$build/$t.row" "$build/$t.report"
  fuzz_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait

summary=()
failed=0
for t in "${targets[@]}"; do
  cat "$build/$t.report"
  row="$(cat "$build/$t.row" 2>/dev/null || printf '%-14s %12s %9s %6s  %s' "$t" ? ? ? "FAIL(no result)")"
  case "$row" in *FAIL*) failed=1 ;; esac
  summary+=("$row")
done

echo "== fuzz summary (${seconds} s per target)"
printf '%-14s %12s %9s %6s  %s\n' target executions exec/s cov result
printf '%s\n' "${summary[@]}"
[ "$failed" -eq 0 ] && echo "fuzz: no findings" || echo "fuzz: FINDINGS; reproducers under $build/artifacts"
exit "$failed"
