#!/usr/bin/env bash
# The simulated side of docs/performance.md's expert- and context-parallel table: for each
# scenario its GPUs, plan, simulated step, MFU and events as `dtsim run --json` reports them, as
# the rows of a Markdown table (a scripts/docfigs.sh marker quotes it, so CI catches drift). The
# wall and CPU times beside them are measured, not reproducible, and stay out of it.
# Run from the repository root; `dtsim` is the build's (docfigs puts it first on PATH).
set -euo pipefail
DTSIM=${DTSIM:-build/dtsim}
echo "| scenario | GPUs | plan | simulated step | MFU | events |"
echo "|---|---|---|---|---|---|"
while IFS='|' read -r file plan; do
  "$DTSIM" run "$file" --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
ev, gpus, step, mfu = d["events"], d["gpus"], d["step_time_s"], d["throughput"]["mfu"]
evs = f"{ev / 1e6:.2f} M" if ev >= 1e6 else f"{ev / 1e3:.0f} k"
print(f"| `{sys.argv[1]}` | {gpus:,} | {sys.argv[2]} | {step:.4g} s | {100 * mfu:.1f} % | {evs} |")' "$file" "$plan"
done <<'LIST'
scenarios/mixtral-8x7b-1024-h100.json|pp 4 (interleaved, v 2) x ep 8 x dp 256, flow
scenarios/llama3-8b-128k-cp-h100.json|cp 8 x dp 8, 128k tokens, flow
LIST
