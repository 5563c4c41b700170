#!/usr/bin/env bash
# The mutant catalogue as a Markdown table for README.md: for each mutant,
# its intended clause, the number of cases until the first failure and the
# shape of the shrunk counterexample (quick profile, seed 1); with ALL=1
# also every clause that fails in the quick profile without shrinking
# (about a minute per mutant); ONLY=REGEX limits the rows to the mutants
# whose names match. Usage: [ALL=1] [ONLY=REGEX] scripts/mutant_table.sh [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
attnspec="${1:-$root/build}/attnspec"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
all="${ALL:-0}"
if [ "$all" = 1 ]; then
  echo "| mutant | bug | intended clause | cases to first failure | counterexample (B, Hq, Hkv, L, S, d_k, d_v) | all failing clauses (quick) |"
  echo "|---|---|---|---|---|---|"
else
  echo "| mutant | bug | intended clause | cases to first failure | counterexample (B, Hq, Hkv, L, S, d_k, d_v) |"
  echo "|---|---|---|---|---|"
fi
"$attnspec" kernels --mutants | awk -v only="${ONLY:-.}" '/^mutant-/ && $1 ~ only {print $1, $4}' | while read -r mutant clause; do
  bug="$("$attnspec" kernels --mutants | awk -v m="$mutant" '$1 == m { $1 = ""; $2 = ""; $3 = ""; $4 = ""; sub(/^ +/, ""); print }')"
  if [ "$all" = 1 ]; then
    "$attnspec" run --kernel "$mutant" --no-shrink --json "$work/all.json" --save-failures "$work/all" >/dev/null || true
  fi
  "$attnspec" run --kernel "$mutant" --clause "$clause" --json "$work/one.json" --save-failures "$work/one" >/dev/null || true
  python3 - "$work" "$mutant" "$clause" "$bug" "$all" <<'PY'
import json, sys
work, mutant, clause, bug, all_clauses = sys.argv[1:]
failing = None
if all_clauses == "1":
    failing = [r["clause"] for r in json.load(open(f"{work}/all.json"))["results"] if r["status"] == "fail"]
one = json.load(open(f"{work}/one.json"))["results"][0]
shape = "-"
if one["counterexample"]:
    c = json.load(open(one["counterexample"] + "/case.json"))
    shape = ", ".join(str(c[k]) for k in ("batch", "q_heads", "kv_heads", "q_len", "kv_len", "d_k", "d_v"))
# The case that failed first (a failing clause goes on to judge every case).
cases = (one.get("first_failing_case") or one["cases"]) if one["status"] == "fail" else "escaped"
row = f"| {mutant} | {bug} | {clause} | {cases} | {shape} |"
print(row + (f" {' '.join(failing)} |" if failing is not None else ""))
PY
done
