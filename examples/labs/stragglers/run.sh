#!/usr/bin/env bash
# Reproduce this lab's outputs (a few seconds). Usage: run.sh [path/to/dtsim]
set -euo pipefail
cd "$(dirname "$0")"
dtsim=${1:-../../../build/dtsim}

# 1. One slow GPU, slowdown 1.0 to 2.0 (11 points).
"$dtsim" sweep slowdown-sweep.json --out results-slowdown --fresh --no-progress
# 2. Lognormal jitter on every GPU, sigma 0 to 0.1 x 32 seeds (224 points).
"$dtsim" sweep jitter-sweep.json --out results-jitter --fresh --no-progress
# 3. One GPU-NIC link at 100% down to 5% of its bandwidth (8 points).
"$dtsim" sweep link-sweep.json --out results-link --fresh --no-progress
# 4. Everything against the expected values: stragglers.png.
gnuplot stragglers.gp
# 5. One step with GPU 5 at 1.5x, as dtsim run prints it.
"$dtsim" run straggler-1.5.json > run-straggler-1.5.txt
