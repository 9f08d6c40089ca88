#!/usr/bin/env bash
# Reproduce this lab's outputs (a few seconds). Usage: run.sh [path/to/dtsim]
set -euo pipefail
cd "$(dirname "$0")"
dtsim=${1:-../../../build/dtsim}
for f in base int8 onebit powersgd topk-ps; do
  "$dtsim" sweep $f.json --out results-$f --fresh --no-progress
done
gnuplot break-even.gp
