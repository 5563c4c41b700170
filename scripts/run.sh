#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs the conformance
# suite on every built-in kernel, ending with the clause x kernel matrix.
# PROFILE=ci (or full) for the larger profile; SEED=N for another seed.
# Counterexamples of failures go to build/failures/. Exit status 0 when
# every clause passes or is skipped.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install-deps.sh"
TARGETS=attnspec_cli "$root/scripts/build.sh" "$root/build" >/dev/null
exec "$root/build/attnspec" run --kernel all --profile "${PROFILE:-quick}" --seed "${SEED:-1}" \
  --save-failures "$root/build/failures"
