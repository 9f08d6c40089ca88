#!/usr/bin/env bash
# Build dtsim and run every test: the Check suites and CLI tests through ctest, then the same
# suite under AddressSanitizer + UndefinedBehaviorSanitizer, then a short fuzzing run of the
# loaders. Installs what it needs. Exit status non-zero if anything fails.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh --test
jobs=$(nproc)

echo "== build (release) and test"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs" >/dev/null
(cd build && ctest --output-on-failure -j"$jobs")

echo "== build with ASan+UBSan and test"
cmake -S . -B build-san -DCMAKE_BUILD_TYPE=Debug -DDTSIM_SANITIZE=ON >/dev/null
cmake --build build-san -j"$jobs" >/dev/null
(cd build-san && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --output-on-failure -j"$jobs" -LE no-sanitize)

if [[ -x tests/fuzz/run.sh ]]; then
  echo "== fuzz the loaders briefly"
  bash tests/fuzz/run.sh
fi
echo "== all tests passed"
