#!/usr/bin/env bash
# How long a failing run takes with shrinking on: every mutant kernel
# through its intended clause in the given profile (default ci), wall time
# and the shrunk counterexample's shape. Shrinking stops after 10 s of CPU
# time from the first failure whatever the problem's size, so on an idle
# machine no row should exceed the time to the first failure plus about
# 10 s plus one case.
# Usage: bench/shrink_times.sh [BUILD_DIR] [PROFILE]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
attnspec="${1:-$root/build}/attnspec"
profile="${2:-ci}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
printf '| mutant | clause | seconds | counterexample (B, Hq, Hkv, L, S, d_k, d_v) |\n|---|---|---|---|\n'
"$attnspec" kernels --mutants | awk '/^mutant-/ {print $1, $4}' | while read -r mutant clause; do
  start=$(date +%s.%N)
  "$attnspec" run --kernel "$mutant" --clause "$clause" --profile "$profile" --json "$work/one.json" \
    --save-failures "$work/failures" >/dev/null || true
  end=$(date +%s.%N)
  shape="$(python3 - "$work/one.json" <<'PY'
import json, sys
one = json.load(open(sys.argv[1]))["results"][0]
if one["counterexample"]:
    c = json.load(open(one["counterexample"] + "/case.json"))
    print(", ".join(str(c[k]) for k in ("batch", "q_heads", "kv_heads", "q_len", "kv_len", "d_k", "d_v")))
else:
    print("escaped")
PY
)"
  printf '| %s | %s | %.1f | %s |\n' "$mutant" "$clause" "$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')" "$shape"
done
