#!/usr/bin/env bash
# Reproduce this lab's outputs (about a second). Usage: run.sh [path/to/dtsim]
set -euo pipefail
cd "$(dirname "$0")"
dtsim=${1:-../../../build/dtsim}

# 1. Router skew: Zipf exponent 0 to 2, dropless and capacity 1.25 (18 points).
"$dtsim" sweep zipf-sweep.json --out results --fresh --no-progress
# 2. Against the closed form: moe.png.
gnuplot moe.gp
# 3. One step at Zipf 1 with the EP group inside one box, and across 8 boxes.
"$dtsim" run box.json > run-box.txt
"$dtsim" run rails.json > run-rails.txt
