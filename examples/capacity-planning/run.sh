#!/usr/bin/env bash
# Reproduce this walkthrough's outputs (a few seconds on 2 cores). Usage: run.sh [path/to/dtsim]
set -euo pipefail
cd "$(dirname "$0")"
dtsim=${1:-../../build/dtsim}

# 1. Which plan, on how many GPUs? Best tokens per dollar, then fastest, keeping 8 GiB spare.
"$dtsim" plan scenario.json --gpus 32 --max-gpus 128 --objective tokens-per-dollar \
  --memory-limit "72 GiB" --top 5 > plan-tokens-per-dollar.txt
"$dtsim" plan scenario.json --gpus 32 --max-gpus 128 --objective time \
  --memory-limit "72 GiB" --top 5 > plan-time.txt

# 2. How does it scale? 1 to 16 nodes x tensor parallel 1, 2, 4 (15 points).
"$dtsim" sweep scaling-sweep.json --out results --fresh --no-progress
# 3. Plots: results/report/{scaling,breakdown,memory}.{png,svg,dat,gp}, index.md, index.html.
"$dtsim" report results

# 4. One step with a pipeline and a straggler, as a Perfetto timeline (open in ui.perfetto.dev).
"$dtsim" run timeline-scenario.json --timeline step-timeline.json > run.txt
# 5. The same timeline as a picture: per-GPU state over the step (timeline/timeline.png).
"$dtsim" report step-timeline.json --out timeline
