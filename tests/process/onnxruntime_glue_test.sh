#!/usr/bin/env bash
# adapters/onnxruntime on real ONNX Runtime 1.30 (npm onnxruntime-node and
# onnxruntime-web, scripts/install-deps.sh): the MultiHeadAttention glue
# (mha_op.js) is guarded by the suite, so that a mapping bug cannot hide
# behind a PASS in the Findings (issue 42). Each deliberately wrong copy
# must fail the clause that guards it, in the quick profile:
#   - a dropped explicit scale fails SCALE;
#   - an inverted bool mask (key_padding_mask 1 where the case blocks)
#     fails MASKBOOL;
#   - q, k, v passed in the case's [B, H, T, d] order instead of
#     [B, T, H*d] fails BATCH;
#   - through --runtime web (onnxruntime-web's WASM build), the inverted
#     mask fails MASKBOOL too: the web columns run the same glue.
# The hellos must also name the runtime the switch picked.
# Usage: tests/process/onnxruntime_glue_test.sh SOURCE_DIR   (env: ATTNSPEC)
set -euo pipefail
source_dir="$1"
adapter_dir="$source_dir/adapters/onnxruntime"
[ -d "$adapter_dir/node_modules/onnxruntime-web" ] ||
  { echo "no $adapter_dir/node_modules/onnxruntime-web: scripts/install-deps.sh installs it" >&2; exit 1; }
node="$(command -v node)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

for runtime in node web; do
  "$ATTNSPEC" check-adapter "cmd:$node $adapter_dir/adapter.js --op multi_head_attention --runtime $runtime" \
    | tee "$work/hello-$runtime.txt"
done
grep -q "onnxruntime-1.30-mha-float32" "$work/hello-node.txt"
grep -q "onnxruntime-web-1.30-mha-float32" "$work/hello-web.txt"

# expect_failure NAME CLAUSE RUNTIME SED_EXPRESSION: a copy of the adapter
# whose mha_op.js the sed expression changed must fail CLAUSE (exit 1).
expect_failure() {
  local name="$1" clause="$2" runtime="$3" expression="$4"
  mkdir -p "$work/$name"
  cp "$adapter_dir"/*.js "$work/$name/"
  ln -s "$adapter_dir/node_modules" "$work/$name/node_modules"
  sed -i "$expression" "$work/$name/mha_op.js"
  if cmp -s "$adapter_dir/mha_op.js" "$work/$name/mha_op.js"; then
    echo "onnxruntime adapter, $name: the sed expression changed nothing" >&2
    exit 1
  fi
  local status=0
  "$ATTNSPEC" run --kernel "cmd:$node $work/$name/adapter.js --op multi_head_attention --runtime $runtime" \
    --profile quick --stop-at-first-failure --clause "$clause" --save-failures "$work/$name/failures" >"$work/$name.log" 2>&1 || status=$?
  if [ "$status" -ne 1 ] || ! grep -q "^FAIL  $clause" "$work/$name.log"; then
    cat "$work/$name.log"
    echo "onnxruntime adapter, $name: expected $clause to fail (exit 1), got exit $status" >&2
    exit 1
  fi
  echo "onnxruntime adapter, $name: $clause fails, as it must"
}
expect_failure dropped-scale SCALE node 's/if (plan.scale !== null) attribute.push/if (false) attribute.push/'
expect_failure inverted-mask MASKBOOL node 's/band(Math.floor(x \/ S), x % S)) ? 1 : 0;/band(Math.floor(x \/ S), x % S)) ? 0 : 1;/'
expect_failure untransposed-layout BATCH node 's/to = ((b \* T + t) \* H + h) \* d;/to = ((b * H + h) * T + t) * d;/'
expect_failure web-inverted-mask MASKBOOL web 's/band(Math.floor(x \/ S), x % S)) ? 1 : 0;/band(Math.floor(x \/ S), x % S)) ? 0 : 1;/'
echo "onnxruntime adapter (MultiHeadAttention glue, node and web): ok"
