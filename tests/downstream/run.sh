#!/usr/bin/env bash
# Installs the built attnspec into a scratch prefix, builds the downstream
# project against it with find_package(attnspec), and runs it.
# Usage: run.sh SOURCE_DIR BUILD_DIR WORK_DIR
set -euo pipefail
source_dir="$1" build_dir="$2" work="$3"
rm -rf "$work"
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
cmake -S "$source_dir/tests/downstream" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" >"$work.log" 2>&1 ||
  { cat "$work.log"; exit 1; }
cmake --build "$work/build" >>"$work.log" 2>&1 || { cat "$work.log"; exit 1; }
output="$("$work/build/downstream")"
echo "downstream: $output"
# bfloat16 of the weights 0.3302 and 0.6698: 169 and 171 units of 2^-9 and 2^-8
[ "$output" = "0.330078 0.667969" ]
# The user's kernel through the conformance suite; its missing capabilities skip.
"$work/build/my_kernel_conformance" --gtest_brief=1 >"$work/conformance.log" 2>&1 || { cat "$work/conformance.log"; exit 1; }
tail -n 3 "$work/conformance.log"
grep -q "MyKernel.PREC" "$work/build/conformance-list.txt" 2>/dev/null || "$work/build/my_kernel_conformance" --gtest_list_tests | grep -q "PREC"
