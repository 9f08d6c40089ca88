#!/usr/bin/env bash
# Reproduce this lab's outputs (a few seconds). Usage: run.sh [path/to/dtsim]
set -euo pipefail
cd "$(dirname "$0")"
dtsim=${1:-../../../build/dtsim}

# 1. ZeRO stages 0-3 x 8, 16, 32, 64 A100s for a 13B GPT (16 points), and what memory says.
"$dtsim" sweep zero-sweep.json --out results-zero --fresh --no-progress
gnuplot zero.gp
# 2. Top-k compression: without (2 points) and with it (bandwidth x selection speed x ratio, 24).
"$dtsim" sweep compression-base.json --out results-base --fresh --no-progress
"$dtsim" sweep compression-topk.json --out results-topk --fresh --no-progress
gnuplot compression.gp
