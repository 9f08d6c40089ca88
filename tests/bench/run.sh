#!/usr/bin/env bash
# Run every benchmark binary (bench_*) built in the directory given (default: build) and print
# its figures. Benchmarks are not tests: they assert nothing about speed.
set -euo pipefail
dir=${1:-build}
found=0
for b in "$dir"/bench_*; do
  [[ -x "$b" ]] || continue
  found=1
  echo "== $(basename "$b")"
  "$b"
done
((found)) || { echo "no benchmarks built in $dir" >&2; exit 1; }
