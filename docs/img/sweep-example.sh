#!/usr/bin/env bash
# sweep-example.sh - the example of docs/sweeps.md ("Example: GPU generation x straggler x
# network"): scenarios/quickstart.json with GPU 3 as a straggler and the three axes the page
# shows, swept; prints the columns and rows the page quotes. Its block there is checked by
# scripts/docfigs.sh (docs/contributing.md). Run from anywhere after building:
#   bash docs/img/sweep-example.sh        (dtsim: $DTSIM, else build/dtsim)
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
dtsim=${DTSIM:-$src/build/dtsim}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$src/scenarios/quickstart.json" "$tmp/s.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["stragglers"] = [{"gpu": 3, "slowdown": 1.0}]
s["sweep"] = {"axes": [
    {"path": "topology.gpu", "values": ["A100-SXM", "H100-SXM"]},
    {"path": "stragglers[0].slowdown", "values": [1.0, 1.2, 1.5]},
    {"path": "topology.bandwidth", "values": ["100 Gb/s", "400 Gb/s"]}]}
json.dump(s, open(sys.argv[2], "w"))
PY
"$dtsim" sweep "$tmp/s.json" --out "$tmp/r" --no-progress > /dev/null
python3 - "$tmp/r/results.csv" <<'PY'
import csv, sys
cols = ["point", "topology.gpu", "stragglers[0].slowdown", "topology.bandwidth", "status",
        "step_time_s", "max_straggler_wait_s"]
print(",".join(cols))
for r in csv.DictReader(open(sys.argv[1])):
    if r["point"] in ("0", "2", "6", "7", "11"):
        print(",".join(r[c] for c in cols))
PY
