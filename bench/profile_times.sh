#!/usr/bin/env bash
# Wall time of `attnspec run` per built-in kernel in the quick and ci
# profiles (goals: under 30 s and under 5 minutes per kernel on the 2-core
# development machine). Usage: bench/profile_times.sh [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
attnspec="${1:-$root/build}/attnspec"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
printf '| kernel | quick (s) | ci (s) | result |\n|---|---|---|---|\n'
for kernel in $("$attnspec" kernels | awk 'NF > 2 && $2 == "input" {print $1}'); do
  row="| $kernel |"
  verdicts=""
  for profile in quick ci; do
    start=$(date +%s.%N)
    if "$attnspec" run --kernel "$kernel" --profile "$profile" --save-failures "$work" >"$work/out.txt"; then :; fi
    end=$(date +%s.%N)
    row+=" $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }') |"
    verdicts+="$profile: $(tail -n 1 "$work/out.txt"); "
  done
  echo "$row $verdicts |"
done
