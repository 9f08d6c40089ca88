#!/usr/bin/env bash
# Build the libFuzzer targets (tests/fuzz/fuzz_*.c) with clang in build-fuzz/ and run each for a
# short fixed time from its seed corpus (tests/fuzz/corpus/<target>/). Exit 1 if any target
# finds a crash, sanitizer report, timeout or out-of-memory; the input is left in
# build-fuzz/artifacts/ (reproduce: build-fuzz/<target> build-fuzz/artifacts/<file>).
#
# Usage: tests/fuzz/run.sh [seconds per target, default 15]
# The libFuzzer seed is fixed (DTSIM_FUZZ_SEED, default 1) so that a CI run explores the same
# inputs every time and a failure reproduces; DTSIM_FUZZ_SEED=0 draws a fresh seed per run (the
# long nightly runs of docs/reliability.md use that).
# New inputs found go to build-fuzz/corpus/<target>/ (kept between runs, never into the source
# tree); add an interesting one to tests/fuzz/corpus/ by hand.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-15}
command -v clang >/dev/null || { echo "fuzz: clang not found (scripts/deps.sh --test)" >&2; exit 1; }

# Warnings are the gcc builds' job; here only the sanitizers' verdict counts. CUDA off: nvcc's
# host link step would not take -fsanitize=fuzzer, and no fuzz target reaches the kernels.
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DDTSIM_FUZZ=ON -DDTSIM_WERROR=OFF -DDTSIM_CUDA=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
if ! cmake --build build-fuzz --target fuzzers -j2 >build-fuzz/build.log 2>&1; then
  tail -30 build-fuzz/build.log >&2
  echo "fuzz: build failed (build-fuzz/build.log)" >&2
  exit 1
fi

mkdir -p build-fuzz/artifacts
status=0
for src in tests/fuzz/fuzz_*.c; do
  name=$(basename "$src" .c)
  corpus=build-fuzz/corpus/$name
  mkdir -p "$corpus"
  seeds=tests/fuzz/corpus/$name
  [[ -d $seeds ]] || seeds=
  log=build-fuzz/$name.log
  # traces and calibrations written by dtsim are a few KB even when small
  case $name in fuzz_trace | fuzz_calib | fuzz_nccl_tests | fuzz_chakra) max_len=8192 ;; *) max_len=4096 ;; esac
  if UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
      "build-fuzz/$name" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=$max_len \
      -seed="${DTSIM_FUZZ_SEED:-1}" -print_final_stats=1 -artifact_prefix=build-fuzz/artifacts/"$name"- \
      "$corpus" $seeds >"$log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
    echo "fuzz: $name ok (${runs:-?} runs in ${secs}s, $cov, corpus $(ls "$corpus" | wc -l))"
  else
    echo "fuzz: $name FAILED; log $log, input in build-fuzz/artifacts/:" >&2
    grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$log" | head -8 >&2 || true
    status=1
  fi
done
exit $status
