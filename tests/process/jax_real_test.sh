#!/usr/bin/env bash
# adapters/jax/jax_adapter.py on real JAX (PyPI jax and jaxlib in .venv,
# scripts/install-deps.sh): jax.nn.dot_product_attention on the CPU answers
# the hello with what its source says it does, for every format, and four
# deliberately wrong copies of the adapter's glue each fail the clause that
# guards it, so that a mapping bug cannot hide behind a PASS in the
# Findings (issue 42):
#   - a dropped explicit scale fails SCALE;
#   - a bool mask of the wrong polarity fails MASKBOOL;
#   - K's [B, H, S, d] read as JAX's (batch, seq, heads, d) without the
#     transpose fails BATCH;
#   - q taken for dO in the backward fails GRADLIN (GRADPREC, which would
#     catch it too, fails the unmodified adapter in float32: XLA on the CPU
#     flushes subnormal weights, docs/findings/jax-0.10.2.md).
# float16 runs with --fallback-precision: under jax.jit the op raises on
# the CPU, which is checked too, so that a JAX that fixes it is noticed.
# Usage: tests/process/jax_real_test.sh SOURCE_DIR   (env: ATTNSPEC)
set -euo pipefail
source_dir="$1"
python="$source_dir/.venv/bin/python"
[ -x "$python" ] || { echo "no $python: scripts/install-deps.sh makes the virtual environment" >&2; exit 1; }
adapter="$source_dir/adapters/jax/jax_adapter.py"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The hello: formats and capabilities as declared for each format.
for dtype in float64 float32; do
  "$ATTNSPEC" check-adapter "cmd:$python $adapter --dtype $dtype"
done
"$ATTNSPEC" check-adapter "cmd:$python $adapter --dtype float16 --fallback-precision"
if "$ATTNSPEC" check-adapter "cmd:$python $adapter --dtype float16" >"$work/float16-jit.txt" 2>&1 ||
   ! grep -q "The precision 'F16_F16_F32' is not supported by dot_general on CPU" "$work/float16-jit.txt"; then
  cat "$work/float16-jit.txt"
  echo "jax adapter: float16 under jax.jit no longer raises as JAX 0.10.2 does: update finding 33 and the columns" >&2
  exit 1
fi
"$ATTNSPEC" check-adapter "cmd:$python $adapter --dtype bfloat16" | tee "$work/hello.txt"
grep -q "input bfloat16, accumulate float32, output bfloat16" "$work/hello.txt"

# expect_failure NAME CLAUSE SED_EXPRESSION: a copy of the adapter changed
# by the sed expression must fail CLAUSE (exit 1) in float32.
expect_failure() {
  local name="$1" clause="$2" expression="$3"
  mkdir -p "$work/$name"
  cp "$adapter" "$work/$name/"
  sed -i "$expression" "$work/$name/jax_adapter.py"
  if cmp -s "$adapter" "$work/$name/jax_adapter.py"; then
    echo "jax adapter, $name: the sed expression changed nothing" >&2
    exit 1
  fi
  local status=0
  # --no-shrink: each new shape costs JAX a compilation (about a second).
  "$ATTNSPEC" run --kernel "cmd:$python $work/$name/jax_adapter.py --dtype float32" --no-shrink \
    --profile quick --stop-at-first-failure --clause "$clause" --save-failures "$work/$name/failures" >"$work/$name.log" 2>&1 || status=$?
  if [ "$status" -ne 1 ] || ! grep -q "^FAIL  $clause" "$work/$name.log"; then
    cat "$work/$name.log"
    echo "jax adapter, $name: expected $clause to fail (exit 1), got exit $status" >&2
    exit 1
  fi
  echo "jax adapter, $name: $clause fails, as it must"
}
expect_failure dropped-scale SCALE 's/options\["scale"\] = scale/pass/'
expect_failure inverted-bool-mask MASKBOOL 's/mask = jnp.asarray(load("mask"))  #/mask = ~jnp.asarray(load("mask"))  #/'
expect_failure untransposed-keys BATCH 's/q, k, v = (to_btnh(load(name)) for name in ("q", "k", "v"))/q, k, v = (to_btnh(load(name)) for name in ("q", "k", "v")); k = jnp.reshape(jnp.swapaxes(k, 1, 2), k.shape)/'
expect_failure q-for-dout GRADLIN 's/dout = to_btnh(load("dout"))/dout = to_btnh(load("q"))/'
echo "jax adapter (real JAX): ok"
