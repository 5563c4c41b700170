#!/usr/bin/env bash
# A kernel that computes its ALiBi slopes from the head count (ggml's way,
# the restriction alibi_paper_slopes_only): check-adapter's ALiBi probes
# and ALIBI's draws must give it the ALiBi paper's slopes. The NumPy
# adapter made into such a kernel (own_slopes_adapter.py) is within the
# bound in both; the same kernel without the declaration, which then
# receives other slopes, is outside it in both (ALIBI fails), so the PASS
# can fail.
# Usage: tests/process/own_slopes_test.sh SOURCE_DIR   (env: ATTNSPEC)
source "$1/tests/process/numpy_adapter_tests.sh"
own="cmd:$python $source_dir/tests/process/own_slopes_adapter.py --dtype float32"
"$ATTNSPEC" check-adapter "$own" | tee "$work/check.txt"
for alignment in top_left bottom_right; do
  grep -q "^PASS  run (ALiBi $alignment): a well-formed output, within the precision bound" "$work/check.txt" ||
    { echo "no ALiBi $alignment probe within the precision bound"; exit 1; }
done
"$ATTNSPEC" run --kernel "$own" --profile quick --no-shrink --clause ALIBI --save-failures "$work/failures"

# Undeclared: the same kernel, told nothing, receives the probes' own slopes.
cp "$source_dir/tests/process/own_slopes_adapter.py" "$work/undeclared.py"
sed -i 's|os.path.dirname(os.path.abspath(__file__)), "..", "..", "adapters"|"'"$source_dir"'", "adapters"|; s|    reply\["capabilities"\]\["alibi_paper_slopes_only"\] = True|    pass|' "$work/undeclared.py"
grep -q '    pass' "$work/undeclared.py" || { echo "could not remove the declaration"; exit 1; }
undeclared="cmd:$python $work/undeclared.py --dtype float32"
# check-adapter checks the protocol and shows the numerics (attnspec run
# judges them): its ALiBi probes must be outside the bound here.
"$ATTNSPEC" check-adapter "$undeclared" >"$work/undeclared-check.txt" 2>&1 || true
if [ "$(grep -c "^PASS  run (ALiBi .*numerics (judged by attnspec run)" "$work/undeclared-check.txt")" -ne 2 ]; then
  cat "$work/undeclared-check.txt"; echo "check-adapter's ALiBi probes did not show the ignored slopes"; exit 1
fi
status=0
"$ATTNSPEC" run --kernel "$undeclared" --profile quick --no-shrink --stop-at-first-failure --clause ALIBI >"$work/undeclared-run.txt" 2>&1 || status=$?
if [ "$status" -ne 1 ] || ! grep -q "^FAIL  ALIBI " "$work/undeclared-run.txt"; then
  cat "$work/undeclared-run.txt"; echo "ALIBI passed a kernel that ignores the slopes it is given (exit $status)"; exit 1
fi
echo "own slopes: ok"
