#!/usr/bin/env bash
# Configures and builds attnspec in a build folder (default: build/).
# Usage: scripts/build.sh [BUILD_DIR] [extra cmake -D options...] ; TARGETS env picks targets.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build_dir="${1:-$root/build}"
shift || true
jobs="$(nproc 2>/dev/null || echo 2)"
mkdir -p "$build_dir"
cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" "$@" >"$build_dir/configure.log" 2>&1 ||
  { cat "$build_dir/configure.log"; exit 1; }
cmake --build "$build_dir" -j "$jobs" ${TARGETS:+--target $TARGETS}
