#!/usr/bin/env bash
# Run every benchmark binary (bench_*) built in the directory given (default: build) and print
# its figures. Benchmarks are not tests: they assert nothing about speed. bench_scale runs up to
# 16,384 GPUs here; its largest cases (65,536 and 131,072 GPUs, minutes and 3.3 GiB) are the
# separate command `build/bench_scale` (docs/performance.md, "Scale").
set -euo pipefail
dir=${1:-build}
found=0
for b in "$dir"/bench_*; do
  [[ -x "$b" ]] || continue
  found=1
  echo "== $(basename "$b")"
  if [[ $(basename "$b") == bench_scale ]]; then "$b" --max-gpus 16384; else "$b"; fi
done
((found)) || { echo "no benchmarks built in $dir" >&2; exit 1; }
