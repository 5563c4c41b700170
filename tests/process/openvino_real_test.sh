#!/usr/bin/env bash
# adapters/openvino/openvino_adapter.py on real OpenVINO (PyPI openvino in
# .venv, scripts/install-deps.sh): each precision hint and path answers the
# hello with what the compiled model runs in, and deliberately wrong copies
# of the adapter's glue each fail the clause that guards it, so that a
# mapping bug cannot hide behind a PASS in the Findings (issue 42):
#   - the explicit scale replaced by the default fails SCALE;
#   - a bool mask of the wrong polarity fails MASKBOOL;
#   - K read as (batch, keys, heads, d) instead of (batch, heads, keys, d)
#     fails BATCH;
#   - the KV-cache path without its past keys in the state (only the last
#     L keys attended) fails CAUSAL;
#   - the paged path handing the op attnspec's page pool [pages, 32, Hkv,
#     d] reshaped instead of transposed to its [pages, Hkv, 32, d] fails
#     PAGED.
# Usage: tests/process/openvino_real_test.sh SOURCE_DIR   (env: ATTNSPEC)
set -euo pipefail
source_dir="$1"
python="$source_dir/.venv/bin/python"
adapter="$source_dir/adapters/openvino/openvino_adapter.py"
[ -x "$python" ] || { echo "no $python: scripts/install-deps.sh makes the virtual environment" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The hello: the precision each hint runs in, as the compiled model says.
for precision in f32 bf16 f16; do
  "$ATTNSPEC" check-adapter "cmd:$python $adapter --precision $precision"
done
"$ATTNSPEC" check-adapter "cmd:$python $adapter --path kvcache" | tee "$work/hello.txt"
grep -q "input float32, accumulate float32, output float32" "$work/hello.txt"
"$ATTNSPEC" check-adapter "cmd:$python $adapter --path paged" | tee "$work/hello-paged.txt"
grep -q "only:causal paged-kv-cache page-sizes:32" "$work/hello-paged.txt"

# expect_failure NAME CLAUSE PATH SED_EXPRESSION: a copy of the adapter
# changed by the sed expression must fail CLAUSE (exit 1) on that path.
expect_failure() {
  local name="$1" clause="$2" path="$3" expression="$4"
  mkdir -p "$work/$name"
  cp "$adapter" "$source_dir/adapters/openvino/paged_attention.py" "$work/$name/"
  sed -i "$expression" "$work/$name/openvino_adapter.py"
  if cmp -s "$adapter" "$work/$name/openvino_adapter.py"; then
    echo "openvino adapter, $name: the sed expression changed nothing" >&2
    exit 1
  fi
  local status=0
  "$ATTNSPEC" run --kernel "cmd:$python $work/$name/openvino_adapter.py --path $path" \
    --profile quick --stop-at-first-failure --clause "$clause" --save-failures "$work/$name/failures" >"$work/$name.log" 2>&1 || status=$?
  if [ "$status" -ne 1 ] || ! grep -q "^FAIL  $clause" "$work/$name.log"; then
    cat "$work/$name.log"
    echo "openvino adapter, $name: expected $clause to fail (exit 1), got exit $status" >&2
    exit 1
  fi
  echo "openvino adapter, $name: $clause fails, as it must"
}
expect_failure default-scale SCALE plain 's/feed\["scale"\] = np.float32(case\["scale"\])/feed["scale"] = np.float32(1 \/ np.sqrt(case["d_k"]))/'
expect_failure inverted-bool-mask MASKBOOL plain 's/mask = np.load(os.path.join(directory, "mask.npy"))/mask = np.load(os.path.join(directory, "mask.npy")); mask = ~mask if mask.dtype == bool else mask/'
expect_failure transposed-keys BATCH plain 's/q, k, v = load("q"), load("k"), load("v")/q, k, v = load("q"), load("k"), load("v"); k = np.ascontiguousarray(k.reshape(k.shape[0], k.shape[2], k.shape[1], k.shape[3]).transpose(0, 2, 1, 3))/'
expect_failure empty-state CAUSAL kvcache 's/        if past > 0:/        if False:/'
expect_failure reshaped-pages PAGED paged 's/load(name).transpose(0, 2, 1, 3)/load(name).reshape(-1, case["kv_heads"], paged_attention.BLOCK, case["d_k"] if name == "k_cache" else case["d_v"])/'
echo "openvino adapter (real OpenVINO): ok"
