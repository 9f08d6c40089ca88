#!/usr/bin/env bash
# Regenerate collectives_busbw.dat and .png: simulated all-reduce busbw vs size on a 64-GPU
# dgx topology (8 boxes x 8 GPUs, defaults: NVLink 450 GB/s, 50 GB/s NIC per GPU), flow model.
# usage: docs/img/collectives_busbw.sh [path/to/dtsim]   (run from the source root)
set -euo pipefail
dtsim=${1:-build/dtsim}
out=docs/img
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for a in ring tree hd hier; do
  "$dtsim" collective --topology gen:dgx:nodes=8,gpus_per_node=8 --op allreduce --algo "$a" \
    --size 1KiB:4GiB:x2 --json >"$tmp/$a.json"
done
python3 - "$tmp" >"$out/collectives_busbw.dat" <<'PY'
import json, sys
d = sys.argv[1]
algos = ["ring", "tree", "hd", "hier"]
rows = {a: json.load(open(f"{d}/{a}.json")) for a in algos}
print("# size_bytes " + " ".join(f"{a}_busbw_GBps" for a in algos))
for i, r in enumerate(rows["ring"]):
    print(int(r["size_bytes"]), " ".join(f"{rows[a][i]['busbw_GBps']:.4f}" for a in algos))
PY
gnuplot "$out/collectives_busbw.gp"
