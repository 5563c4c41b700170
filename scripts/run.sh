#!/usr/bin/env bash
# The main job: installs what is missing, builds, runs the conformance suite
# on every built-in kernel (ending with the clause x kernel matrix), then
# the Findings run of the real third-party kernels and the Python example
# adapter (scripts/findings.py, quick profile; the columns CI runs unless
# FINDINGS=all), which checks that each fails
# exactly its known clauses. PROFILE=ci (or full) for the built-in kernels'
# larger profiles; SEED=N for another seed. Counterexamples go to build/failures/ and
# build/findings/failures/. Exit status 0 when every built-in kernel passes
# every clause and the real kernels fail only their known clauses.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install-deps.sh"
TARGETS=attnspec_cli "$root/scripts/build.sh" "$root/build" >/dev/null
"$root/build/attnspec" run --kernel builtin --profile "${PROFILE:-quick}" --seed "${SEED:-1}" \
  --save-failures "$root/build/failures"
echo
# The Findings in the quick profile (README, Findings); FINDINGS_PROFILE=ci
# for the longer run, which adds XNNPACK's flushed subnormals (SHIFT). By
# default the columns CI runs (--ci, about 20 minutes on 2 cores);
# FINDINGS=all for every column (OpenVINO, JAX, FlexAttention, every ggml
# build, ONNX Runtime's MultiHeadAttention and WASM build too: several
# hours on 2 cores, docs/findings/).
ci_only=--ci
[ "${FINDINGS:-ci}" = all ] && ci_only=
python3 "$root/scripts/findings.py" --profile "${FINDINGS_PROFILE:-quick}" --seed "${SEED:-1}" $ci_only
