#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs the certified
# reference on the bundled golden cases (cases/golden), comparing each with
# its independently computed expected.json, in float64 and bfloat16.
# Results go to build/golden-ref/. Exit status 0 when every case agrees.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install-deps.sh"
TARGETS=attnspec_cli "$root/scripts/build.sh" "$root/build" >/dev/null
cases=("$root"/cases/golden/*/)
status=0
summary=""
for format in float64 bfloat16; do
  echo "== attnspec reference --format $format on ${#cases[@]} golden cases"
  log="$root/build/golden-ref/$format.log"
  mkdir -p "$(dirname "$log")"
  "$root/build/attnspec" reference --format "$format" --out-dir "$root/build/golden-ref/$format" "${cases[@]}" \
    >"$log" || status=1
  sed "s|$root/||g" "$log"
  agreeing=$(grep -c "agree ->" "$log" || true)
  summary+="$format: $agreeing/${#cases[@]} golden cases agree bit for bit with expected.json. "
done
echo "== $summary"
exit $status
