#!/usr/bin/env bash
# The GPU-only entry points of adapters/pytorch/torch_adapter.py: the
# flash_attn package, and FlexAttention's backward (PyTorch 2.15 has it
# only on a GPU). They are driven through tests/process/fake_torch (NumPy
# standing in for PyTorch 2.5 and the flash_attn package), so that their
# protocol handling and argument plumbing are tested on a machine without
# a GPU; the numerics of real PyTorch are not. The SDPA backends and
# FlexAttention's forward run on real PyTorch in
# tests/process/pytorch_real_test.sh and in the Findings.
# Usage: tests/process/pytorch_adapter_test.sh SOURCE_DIR   (env: ATTNSPEC)
set -euo pipefail
source_dir="$1"
source "$source_dir/tests/process/numpy_python.sh"
adapter="cmd:PYTHONPATH=$source_dir/tests/process/fake_torch $python $source_dir/adapters/pytorch/torch_adapter.py"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
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
# flash_attn's backward (flash_attn_func's own kernel on a GPU; the
# stand-in's textbook gradients here) with its windows, ALiBi and softcap.
"$ATTNSPEC" run --kernel "$adapter --dtype float16 --backend flash_attn" --profile quick --save-failures "$work" \
  --clause GRADPREC --clause GRADSUM --clause GRADGQA
# FlexAttention's backward, which PyTorch 2.15 has only on a GPU (the
# adapter declares none on the CPU), so --device cuda, which the stand-in
# ignores: autograd through flex_mapping.py's score_mod (softcap's
# derivative), windows, ALiBi and masks; the stand-in's textbook gradients.
"$ATTNSPEC" run --kernel "$adapter --dtype float32 --backend flex --device cuda" --profile quick --save-failures "$work" \
  --clause GRADPREC --clause GRADSUM --clause GRADMASK --clause GRADGQA | tee "$work/flex-backward.log"
! grep -q '^SKIP' "$work/flex-backward.log"
echo "pytorch adapter (stand-in): ok"
