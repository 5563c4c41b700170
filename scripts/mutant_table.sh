#!/usr/bin/env bash
# The mutant catalogue as a Markdown table for README.md: for each mutant,
# the clauses that fail in the quick profile (without shrinking), and for
# its intended clause the number of cases until the first failure and the
# shape of the shrunk counterexample. Usage: scripts/mutant_table.sh [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
attnspec="${1:-$root/build}/attnspec"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "| mutant | bug | intended clause | cases to first failure | counterexample (B, Hq, Hkv, L, S, d_k, d_v) | all failing clauses (quick) |"
echo "|---|---|---|---|---|---|"
"$attnspec" kernels --mutants | awk '/^mutant-/ {print $1, $4}' | while read -r mutant clause; do
  bug="$("$attnspec" kernels --mutants | awk -v m="$mutant" '$1 == m { $1 = ""; $2 = ""; $3 = ""; $4 = ""; sub(/^ +/, ""); print }')"
  "$attnspec" run --kernel "$mutant" --no-shrink --json "$work/all.json" --save-failures "$work/all" >/dev/null || true
  "$attnspec" run --kernel "$mutant" --clause "$clause" --json "$work/one.json" --save-failures "$work/one" >/dev/null || true
  python3 - "$work" "$mutant" "$clause" "$bug" <<'PY'
import json, sys
work, mutant, clause, bug = sys.argv[1:]
failing = [r["clause"] for r in json.load(open(f"{work}/all.json"))["results"] if r["status"] == "fail"]
one = json.load(open(f"{work}/one.json"))["results"][0]
shape = "-"
if one["counterexample"]:
    c = json.load(open(one["counterexample"] + "/case.json"))
    shape = ", ".join(str(c[k]) for k in ("batch", "q_heads", "kv_heads", "q_len", "kv_len", "d_k", "d_v"))
cases = one["cases"] if one["status"] == "fail" else "escaped"
print(f"| {mutant} | {bug} | {clause} | {cases} | {shape} | {' '.join(failing)} |")
PY
done
