#!/usr/bin/env bash
# adapters/pytorch/torch_adapter.py on a machine without PyTorch: driven
# through tests/process/fake_torch (NumPy standing in for PyTorch 2.5 and
# the flash_attn package), so
# that its protocol handling and argument plumbing are tested here; the
# numerics of real PyTorch are not.
# Usage: tests/process/pytorch_adapter_test.sh SOURCE_DIR   (env: ATTNSPEC)
set -euo pipefail
source_dir="$1"
source "$source_dir/tests/process/numpy_python.sh"
adapter="cmd:PYTHONPATH=$source_dir/tests/process/fake_torch $python $source_dir/adapters/pytorch/torch_adapter.py"
"$ATTNSPEC" check-adapter "$adapter --dtype float32 --backend math"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$ATTNSPEC" run --kernel "$adapter --dtype float32 --backend math" --profile quick --save-failures "$work" \
  --clause SCALE --clause MASKBOOL --clause MASKADD --clause CAUSAL --clause FULLMASK --clause GQA --clause PREC
# FlexAttention (--backend flex): windows, ALiBi, softcap and the lse go
# through flex_mapping.py's score_mod and mask_mod into the stand-in's
# flex_attention, which follows PyTorch 2.5's documented semantics.
"$ATTNSPEC" check-adapter "$adapter --dtype float32 --backend flex"
"$ATTNSPEC" run --kernel "$adapter --dtype float32 --backend flex" --profile quick --save-failures "$work" \
  --clause WINDOW --clause ALIBI --clause SOFTCAP --clause LSE --clause CAUSAL --clause MASKADD --clause MASKBOOL \
  --clause FULLMASK --clause GQA --clause PREC
# The flash_attn package (--backend flash_attn, float16 here; bfloat16 on a
# real GPU): bottom-right causal masking, windows and ALiBi, softcap and
# its float32 lse through flash_attn_mapping.py into the stand-in's
# flash_attn_func.
"$ATTNSPEC" check-adapter "$adapter --dtype float16 --backend flash_attn"
"$ATTNSPEC" run --kernel "$adapter --dtype float16 --backend flash_attn" --profile quick --save-failures "$work" \
  --clause WINDOW --clause ALIBI --clause SOFTCAP --clause LSE --clause CAUSAL --clause GQA --clause PREC
# Its layouts: flash_attn_varlen_func and flash_attn_with_kvcache through
# flash_attn_mapping.py (PAGED is INCOMPLETE: FlashAttention 2's pages are
# multiples of 256 rows, and the draws' page sizes mostly are not).
"$ATTNSPEC" run --kernel "$adapter --dtype float16 --backend flash_attn" --profile quick --save-failures "$work" \
  --clause VARLEN --clause KVCACHE --clause SPLITKV
# The backward of the SDPA backends (torch.autograd.grad with dO): the
# stand-in's textbook gradients through the adapter's plumbing (dout.npy
# read, dq/dk/dv.npy written, GQA's sums over query heads); a copy that
# takes q for dO must fail GRADPREC, so the PASS above can fail.
"$ATTNSPEC" run --kernel "$adapter --dtype float32 --backend math" --profile quick --save-failures "$work" \
  --clause GRADPREC --clause GRADSUM --clause GRADMASK --clause GRADGQA --clause GRADLIN
# flash_attn's backward (flash_attn_func's own kernel on a GPU; the
# stand-in's textbook gradients here) with its windows, ALiBi and softcap.
"$ATTNSPEC" run --kernel "$adapter --dtype float16 --backend flash_attn" --profile quick --save-failures "$work" \
  --clause GRADPREC --clause GRADSUM --clause GRADGQA
# FlexAttention's backward: autograd through flex_mapping.py's score_mod
# (softcap's derivative), windows, ALiBi and masks; the stand-in's textbook
# gradients here.
"$ATTNSPEC" run --kernel "$adapter --dtype float32 --backend flex" --profile quick --save-failures "$work" \
  --clause GRADPREC --clause GRADSUM --clause GRADMASK --clause GRADGQA
cp -r "$source_dir/adapters/pytorch" "$work/bugged"
sed -i 's/dout = load("dout")/dout = load("q")/' "$work/bugged/torch_adapter.py"
! grep -q 'load("dout")' "$work/bugged/torch_adapter.py"
status=0
"$ATTNSPEC" run --kernel "cmd:PYTHONPATH=$source_dir/tests/process/fake_torch $python $work/bugged/torch_adapter.py --dtype float32 --backend math" \
  --profile quick --clause GRADPREC --save-failures "$work/bugged-failures" >"$work/bugged.log" 2>&1 || status=$?
if [ "$status" -ne 1 ]; then
  cat "$work/bugged.log"
  echo "pytorch adapter taking q for dO: expected GRADPREC to fail (exit 1), got exit $status" >&2
  exit 1
fi
echo "pytorch adapter (stand-in): ok"
