#!/usr/bin/env bash
# ecmp.sh - the table of docs/diagnostics.md, "ECMP collisions on an oversubscribed fat-tree":
# dp64.json at oversubscription 1, 2 and 4, per run the leaves' fill, the bytes that cross
# between leaves, the uplinks that carry them, the mean and the largest uplink load and the
# step. Run from the repository root after building: bash docs/img/ecmp/ecmp.sh
set -euo pipefail
dtsim=${DTSIM:-build/dtsim}
here=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for o in 1 2 4; do
  python3 -c "import json,sys; s=json.load(open('$here/dp64.json')); s['topology']['oversubscription']=$o; json.dump(s, open('$tmp/o$o.json','w'))"
  "$dtsim" run "$tmp/o$o.json" --json --links 100000 > "$tmp/r$o.json"
  "$dtsim" topo gen fat-tree --gpus 64 --oversubscription "$o" --bandwidth "400 Gb/s" --json -o "$tmp/t$o.json" > "$tmp/g$o.json"
done
python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
print("| oversubscription asked | GPUs per leaf | uplinks per leaf | bytes crossing leaves | uplinks used | mean uplink load | largest uplink load | largest / mean | balanced time | step (comm exposed) |")
print("|---|---|---|---|---|---|---|---|---|---|")
for o in (1, 2, 4):
    r = json.load(open(f"{d}/r{o}.json"))
    t = json.load(open(f"{d}/t{o}.json"))
    leaf = {}
    for l in t["links"]:
        a, b = l["src"], l["dst"]
        if a.startswith("gpu") and b.startswith("leaf"):
            leaf[b] = leaf.get(b, 0) + 1
    ups = []  # one entry per uplink that carried traffic ("alike" links are listed once)
    for l in r["links"]:
        a, b = l["link"].split("->")
        if a.startswith("leaf") and b.startswith("spine"):
            ups += [l["bytes"]] * (1 + l["alike"])
    g = json.load(open(f"{d}/g{o}.json"))
    tier = g["tiers"][1]
    n_up = tier["links"]
    cross = sum(ups)
    mean = cross / n_up
    big = max(ups)
    bw = tier["up_bandwidth"] / n_up
    print(f"| {o}:1 | {', '.join(str(v) for v in leaf.values())} | {n_up // len(leaf)} | {cross/1e9:.1f} GB | {len(ups)} of {n_up} | {mean/1e9:.2f} GB | {big/1e9:.2f} GB | {big/mean:.2f} | {mean/bw*1e3:.1f} ms | {r['step_time_s']*1e3:.1f} ms ({r['breakdown_s']['comm_exposed']*1e3:.1f} ms) |")
PY
