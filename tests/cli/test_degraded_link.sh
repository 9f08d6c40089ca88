#!/usr/bin/env bash
# test_degraded_link.sh - a degraded link given as scenario `degraded_links` and the same link
# written at the same rate into the topology file are one input.
# Pins down: on 4 DGX boxes (32 GPUs, 8 rings per rail, the stragglers lab's step), with the
# link node0.gpu5 -> node0.nic5 at half its 50 GB/s:
#  (1) `degraded_links` on that one directed link and a topology file whose duplex link is split
#      into two one-way links with only that direction at 25 GB/s give the same `dtsim run
#      --json` (every field but wall_s), in the step and in the fluid ring model;
#  (2) the same for both directions: `degraded_links` naming gpu5 -> nic5 and nic5 -> gpu5, and
#      the duplex link written as 25 GB/s (one edit of a duplex entry slows both directions);
#  (3) the two are different inputs: in the step model one direction gives a shorter step than
#      both (the reverse direction slows a second ring, the one whose wrap-around edge, box 3 to
#      box 0 through a spine and the ring's longest latency, enters box 0 at GPU 5);
#  (4) `dtsim collective` all-reduce of 100 MB over the one-direction file: fluid and steps within
#      0.5 % (the fluid ring charged every step the largest edge latency and was 8 % longer).
# Leaves free: the step times themselves (docs/collectives.md, "Ring models").
set -euo pipefail
: "${DTSIM:?}" "${SRC:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$DTSIM" topo gen dgx --nodes 4 --gpus-per-node 8 --gpu H100-SXM -o "$tmp/t.json" >/dev/null \
  || fail "topo gen"
python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
t = json.load(open(f"{d}/t.json"))
def split(both):
    out, hit = [], 0
    for l in t["links"]:
        if l["src"] == "node0.gpu5" and l["dst"] == "node0.nic5":
            assert l.get("duplex", True) and l["bandwidth"] == "50 GB/s", l
            hit += 1
            if both:
                out.append(dict(l, bandwidth="25 GB/s"))
            else:
                out.append(dict(l, bandwidth="25 GB/s", duplex=False))
                out.append(dict(l, src=l["dst"], dst=l["src"], duplex=False))
        else:
            out.append(l)
    assert hit == 1
    return dict(t, links=out)
json.dump(split(False), open(f"{d}/one.json", "w"))
json.dump(split(True), open(f"{d}/both.json", "w"))
base = {"topology": "t.json",
        "model": {"kind": "synthetic", "name": "toy-24-layer", "layers": 24, "forward_time": "2 ms",
                  "backward_time": "4 ms", "params": 5e7, "activation_bytes": "200 MB"},
        "parallel": {"dp": 32, "microbatches": 1, "bucket_size": "100 MB", "overlap_dp": False},
        "optimizer": "adam", "options": {"dp_algorithm": "ring"}, "seed": 1}
fwd = {"link": {"src": "node0.gpu5", "dst": "node0.nic5"}, "bandwidth_factor": 0.5}
rev = {"link": {"src": "node0.nic5", "dst": "node0.gpu5"}, "bandwidth_factor": 0.5}
for model in ("steps", "fluid"):
    def sc(name, topo, deg):
        s = json.loads(json.dumps(base))
        s["topology"] = topo
        s["options"]["ring_model"] = model
        if deg:
            s["degraded_links"] = deg
        json.dump(s, open(f"{d}/{name}-{model}.json", "w"))
    sc("deg1", "t.json", [fwd])
    sc("file1", "one.json", None)
    sc("deg2", "t.json", [fwd, rev])
    sc("file2", "both.json", None)
PY
for m in steps fluid; do
  for s in deg1 file1 deg2 file2; do
    "$DTSIM" run "$tmp/$s-$m.json" --json >"$tmp/$s-$m.out" || fail "run $s-$m"
  done
done
python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
def load(n):
    r = json.load(open(f"{d}/{n}.out"))
    r.pop("wall_s", None)
    return r
for m in ("steps", "fluid"):
    for k in ("1", "2"):
        a, b = load(f"deg{k}-{m}"), load(f"file{k}-{m}")
        assert a == b, (m, k, a["step_time_s"], b["step_time_s"])
one, both = load("deg1-steps")["step_time_s"], load("deg2-steps")["step_time_s"]
assert one < both, (one, both)
PY
for m in steps fluid; do
  "$DTSIM" collective --topology "$tmp/one.json" --op allreduce --algo ring --size 100MB \
    --ring-model "$m" --json >"$tmp/coll-$m.json" || fail "collective $m"
done
python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
st = json.load(open(f"{d}/coll-steps.json"))["time_s"]
fl = json.load(open(f"{d}/coll-fluid.json"))["time_s"]
assert abs(fl - st) <= 0.005 * st, (st, fl)
PY
echo "ok"
