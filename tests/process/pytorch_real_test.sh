#!/usr/bin/env bash
# adapters/pytorch/torch_adapter.py on real PyTorch 2 (PyPI torch in .venv,
# scripts/install-deps.sh): the SDPA backends on the CPU answer the hello
# with what their source says they do, and five deliberately wrong copies
# of the adapter's glue each fail the clause that guards it, so that a
# mapping bug cannot hide behind a PASS in the Findings (issue 42):
#   - a dropped explicit scale fails SCALE;
#   - a bool mask of the wrong polarity fails MASKBOOL;
#   - K read as (batch, keys, heads, d) instead of (batch, heads, keys, d)
#     fails BATCH;
#   - q taken for dO in the backward fails GRADPREC;
#   - FlexAttention's bottom-right causal offset dropped fails CAUSAL;
#   - FlexAttention's ALiBi slopes kept in float32 for float64 inputs fail
#     a kept float64 ALiBi case (tests/cases/flex_float64_alibi_slopes,
#     the withdrawn finding 25), which the right glue passes.
# Usage: tests/process/pytorch_real_test.sh SOURCE_DIR   (env: ATTNSPEC)
set -euo pipefail
source_dir="$1"
python="$source_dir/.venv/bin/python"
[ -x "$python" ] || { echo "no $python: scripts/install-deps.sh makes the virtual environment" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The hello: formats and capabilities as declared for each backend.
for backend in math flash flex; do
  "$ATTNSPEC" check-adapter "cmd:$python $source_dir/adapters/pytorch/torch_adapter.py --dtype float32 --backend $backend"
done
"$ATTNSPEC" check-adapter "cmd:$python $source_dir/adapters/pytorch/torch_adapter.py --dtype bfloat16 --backend flash" \
  | tee "$work/hello.txt"
grep -q "input bfloat16, accumulate float32, output bfloat16" "$work/hello.txt"

# expect_failure NAME CLAUSE SED_EXPRESSION [FILE [BACKEND]]: a copy of
# the adapter with FILE (default torch_adapter.py) changed by the sed
# expression must fail CLAUSE (exit 1) on BACKEND (default math).
expect_failure() {
  local name="$1" clause="$2" expression="$3" file="${4:-torch_adapter.py}" backend="${5:-math}"
  mkdir -p "$work/$name"
  cp "$source_dir"/adapters/pytorch/*.py "$work/$name/"
  sed -i "$expression" "$work/$name/$file"
  if cmp -s "$source_dir/adapters/pytorch/$file" "$work/$name/$file"; then
    echo "pytorch adapter, $name: the sed expression changed nothing" >&2
    exit 1
  fi
  local status=0
  "$ATTNSPEC" run --kernel "cmd:$python $work/$name/torch_adapter.py --dtype float32 --backend $backend" \
    --profile quick --stop-at-first-failure --clause "$clause" --save-failures "$work/$name/failures" >"$work/$name.log" 2>&1 || status=$?
  if [ "$status" -ne 1 ] || ! grep -q "^FAIL  $clause" "$work/$name.log"; then
    cat "$work/$name.log"
    echo "pytorch adapter, $name: expected $clause to fail (exit 1), got exit $status" >&2
    exit 1
  fi
  echo "pytorch adapter, $name: $clause fails, as it must"
}
expect_failure dropped-scale SCALE 's/options\["scale"\] = case\["scale"\]/pass/'
expect_failure inverted-bool-mask MASKBOOL 's/values = np.load(os.path.join(directory, "mask.npy"))/values = np.load(os.path.join(directory, "mask.npy")); values = ~values if values.dtype == bool else values/'
expect_failure transposed-keys BATCH 's/q, k, v = (load(name).to(dtype) for name in ("q", "k", "v"))/q, k, v = (load(name).to(dtype) for name in ("q", "k", "v")); k = k.reshape(k.shape[0], k.shape[2], k.shape[1], k.shape[3]).transpose(1, 2)/'
expect_failure q-for-dout GRADPREC 's/dout = load("dout")/dout = load("q")/'
# FlexAttention's mapping (flex_mapping.py): bottom-right causal read as top-left.
expect_failure flex-causal-alignment CAUSAL 's/return case\["kv_len"\] - case\["q_len"\] if alignment == "bottom_right" else 0/return 0/' \
  flex_mapping.py flex
# The ALiBi bias in the scores' type: one kept case (L = 4, S = 2, d = 1)
# passes with the adapter and fails with the slopes left in float32.
flex64="--backend flex --dtype float64"
"$ATTNSPEC" check "$source_dir/tests/cases/flex_float64_alibi_slopes" \
  --kernel "cmd:$python $source_dir/adapters/pytorch/torch_adapter.py $flex64"
mkdir -p "$work/flex-alibi-float32"
cp "$source_dir"/adapters/pytorch/*.py "$work/flex-alibi-float32/"
sed -i 's/.to(torch.float64 if float64_inputs else torch.float32) if case.get("alibi")/.to(torch.float32) if case.get("alibi")/' \
  "$work/flex-alibi-float32/flex_mapping.py"
if cmp -s "$source_dir/adapters/pytorch/flex_mapping.py" "$work/flex-alibi-float32/flex_mapping.py"; then
  echo "pytorch adapter, flex-alibi-float32: the sed expression changed nothing" >&2
  exit 1
fi
status=0
"$ATTNSPEC" check "$source_dir/tests/cases/flex_float64_alibi_slopes" \
  --kernel "cmd:$python $work/flex-alibi-float32/torch_adapter.py $flex64" >"$work/flex-alibi.log" 2>&1 || status=$?
if [ "$status" -ne 1 ]; then
  cat "$work/flex-alibi.log"
  echo "pytorch adapter, flex-alibi-float32: expected the kept ALiBi case to fail (exit 1), got exit $status" >&2
  exit 1
fi
echo "pytorch adapter, flex-alibi-float32: the kept float64 ALiBi case fails, as it must"
echo "pytorch adapter (real PyTorch): ok"
