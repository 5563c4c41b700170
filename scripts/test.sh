#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: the full suite in a
# Release build with every third-party adapter (a missing library is an
# error here), including the Findings run of the real kernels, then the
# unit tests again under AddressSanitizer and UndefinedBehaviorSanitizer.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
jobs="$(nproc 2>/dev/null || echo 2)"
"$root/scripts/install-deps.sh"

echo "== Release build and all tests"
"$root/scripts/build.sh" "$root/build" -DATTNSPEC_REQUIRE_THIRD_PARTY=ON
(cd "$root/build" && ctest --output-on-failure -j "$jobs")

echo "== AddressSanitizer + UndefinedBehaviorSanitizer build and unit tests"
BUILD_TYPE=Debug TARGETS="attnspec_tests attnspec_cli" "$root/scripts/build.sh" "$root/build-sanitize" \
  -DATTNSPEC_SANITIZE=ON -DATTNSPEC_BUILD_BENCH=OFF \
  -DATTNSPEC_WITH_LIBTORCH=OFF -DATTNSPEC_WITH_ONEDNN=OFF -DATTNSPEC_WITH_XNNPACK=OFF -DATTNSPEC_WITH_GGML=OFF
# Less the tests that only repeat whole profiles' draws (each runs in the
# Release stage above; under the sanitizers they took 9 of the stage's
# 13 minutes of test time on an AVX2 machine, and CI must stay under 45).
(cd "$root/build-sanitize" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --output-on-failure -j "$jobs" -L unit -E '^(DrawStatistics[.]|Runner[.]ShardsSplitTheClauses$|GradientClauses[.]LawsAndTheYardstickFailKernelsOutsideTheirBounds$)')
echo "== Fuzzing"; bash "$root/scripts/fuzz.sh" "${FUZZ_SECONDS:-60}"
