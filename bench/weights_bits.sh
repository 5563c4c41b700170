#!/usr/bin/env bash
# The tight tier's sensitivity table's data: build/bench/weights_bits for
# b = 24 down to 16 (weights rounded to b significant bits before P V; 24
# is a correct float32 kernel), one profile and seed, JOBS values of b at
# a time, into docs/results/weights-bits-PROFILE-seedSEED.tsv (replaced
# only when every b finished). scripts/weights_bits_table.py turns the
# files there into docs/tight-tier.md.
# Usage: bench/weights_bits.sh [PROFILE] [SEED]   (default quick 1; env BUILD, JOBS)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
profile="${1:-quick}" seed="${2:-1}"
program="${BUILD:-$root/build}/bench/weights_bits"
[ -x "$program" ] || { echo "weights_bits.sh: $program not built (cmake --build build --target weights_bits)" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
seq 16 24 | xargs -P "${JOBS:-2}" -I{} sh -c '"$0" "$1" "$2" {} > "$3/{}.tsv" && echo "weights_bits: b = {} done" >&2' \
  "$program" "$profile" "$seed" "$work"
out="$root/docs/results/weights-bits-$profile-seed$seed.tsv"
mkdir -p "$(dirname "$out")"
{
  head -n 1 "$work/24.tsv"
  for b in $(seq 24 -1 16); do tail -n +2 "$work/$b.tsv"; done
} >"$out.partial"
mv "$out.partial" "$out"
echo "weights_bits.sh: $out"
