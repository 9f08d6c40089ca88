#!/usr/bin/env bash
# Reproduce this lab's outputs (a few seconds). Usage: run.sh [path/to/dtsim]
set -euo pipefail
cd "$(dirname "$0")"
dtsim=${1:-../../../build/dtsim}

# 1. Bubble vs microbatches m, stages p and schedule (96 exact points).
"$dtsim" sweep bubble-sweep.json --out results --fresh --no-progress
# 2. Peak activation memory vs m for each schedule (32 points).
"$dtsim" sweep memory-sweep.json --out results-memory --fresh --no-progress
# 3. Measured against the closed forms: bubbles.png, memory.png.
gnuplot bubbles.gp
gnuplot memory.gp
# 4. One step of each schedule, p = 4, m = 8: summary, Perfetto timeline, per-GPU state chart.
for s in gpipe 1f1b interleaved; do
  "$dtsim" run timeline-$s.json --timeline step-$s.perfetto.json --timeline-gpus 0-3 > run-$s.txt
  "$dtsim" report step-$s.perfetto.json --out state-$s
  # dtsim's chart has a generic title: name the schedule, then redraw from the kept .gp.
  sed -i "s/^set title .*/set title \"Per-GPU state over one step: $s, p = 4 stages, m = 8 microbatches\"/" state-$s/timeline.gp
  (cd state-$s && gnuplot timeline.gp)
done
