#!/usr/bin/env bash
# What context parallelism's ring flows cost in events (docs/workloads.md, "Context
# parallelism"): scenarios/llama3-8b-128k-cp-h100.json widened to 128 boxes (1,024 GPUs, dp 128,
# global batch 1,024), run in flow mode and in analytic mode; prints each mode's simulated step
# and event count (deterministic: a scripts/docfigs.sh marker quotes it). The CPU times beside
# them in the text are measured, not quoted output.
# Run from the repository root; `dtsim` is the build's (docfigs puts it first on PATH).
set -euo pipefail
DTSIM=${DTSIM:-build/dtsim}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for net in flow analytic; do
  python3 - "$net" >"$tmp/s.json" <<'PY'
import json, sys
s = json.load(open("scenarios/llama3-8b-128k-cp-h100.json"))
s["topology"]["nodes"] = 128
s["parallel"]["dp"] = 128
s["global_batch"] = 1024
s["options"] = {"network": sys.argv[1]}
json.dump(s, sys.stdout)
PY
  "$DTSIM" run "$tmp/s.json" --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
gpus, step, ev = d["gpus"], d["step_time_s"], d["events"]
print(f"{sys.argv[1]:9s} {gpus} GPUs: step {step:.4g} s, {ev:,} events")' "$net"
done
