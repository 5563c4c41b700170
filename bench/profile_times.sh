#!/usr/bin/env bash
# Wall time of `attnspec run` per built-in kernel in the quick and ci
# profiles (goals: under 30 s and under 5 minutes per kernel on the 2-core
# development machine). PROFILES (default "quick ci") chooses the profiles,
# JOBS passes --jobs (default: attnspec's, one worker process per core).
# Usage: [PROFILES=quick] [JOBS=1] bench/profile_times.sh [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
attnspec="${1:-$root/build}/attnspec"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
profiles="${PROFILES:-quick ci}"
jobs=()
[ -n "${JOBS:-}" ] && jobs=(--jobs "$JOBS")
header="| kernel |" rule="|---|"
for profile in $profiles; do header+=" $profile (s) |" rule+="---|"; done
printf '%s result |\n%s---|\n' "$header" "$rule"
for kernel in $("$attnspec" kernels | awk 'NF > 2 && $2 == "input" {print $1}'); do
  row="| $kernel |"
  verdicts=""
  for profile in $profiles; do
    start=$(date +%s.%N)
    if "$attnspec" run --kernel "$kernel" --profile "$profile" "${jobs[@]}" --save-failures "$work" >"$work/out.txt"; then :; fi
    end=$(date +%s.%N)
    row+=" $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }') |"
    verdicts+="$profile: $(tail -n 1 "$work/out.txt"); "
  done
  echo "$row $verdicts |"
done
