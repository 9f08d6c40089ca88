#!/usr/bin/env bash
# dtsim run --timeline: the trace-event JSON parses; one process per host plus the network;
# every GPU's state track sums to the run's step time; the pipeline run shows idle time
# (bubble); --timeline-gpus keeps only the GPUs asked for, and only the links with an endpoint
# on a host that holds one of them; the text output carries the
# breakdown bar; a bad selection is exit 2 with no file written.
set -euo pipefail
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cat > "$T/s.json" <<'EOF'
{
  "name": "timeline-cli",
  "topology": {"generator": "dgx", "nodes": 2, "gpus_per_node": 4, "gpu": "H100-SXM"},
  "model": {"kind": "transformer", "layers": 8, "hidden": 768, "heads": 12, "seq_len": 1024,
            "vocab": 50257},
  "parallel": {"tp": 2, "pp": 2, "micro_batch_size": 2},
  "global_batch": 32,
  "seed": 1
}
EOF
"$DTSIM" run "$T/s.json" --json --timeline "$T/tl.json" > "$T/run.json"
"$DTSIM" run "$T/s.json" --timeline "$T/tl2.json" --timeline-gpus 0-1,6 > "$T/run.txt"
"$DTSIM" run "$T/s.json" --timeline "$T/tl3.json" --timeline-gpus 0-1 > /dev/null
grep -Eq '^  \[[#=. !]{40}\] # compute [0-9.]+%' "$T/run.txt" || fail "no breakdown bar in: $(cat "$T/run.txt")"
python3 - "$T" <<'EOF'
import json, sys
from collections import defaultdict
T = sys.argv[1]
run = json.load(open(f"{T}/run.json"))
step_us = run["step_time_s"] * 1e6
tl = json.load(open(f"{T}/tl.json"))
ev = tl["traceEvents"]
procs = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
assert procs == {"host0", "host1", "Network links"}, procs
state = defaultdict(float)
idle = defaultdict(float)
names = {}
for e in ev:
    if e["ph"] == "M" and e["name"] == "thread_name":
        names[(e["pid"], e["tid"])] = e["args"]["name"]
    if e.get("cat") == "state":
        state[(e["pid"], e["tid"])] += e["dur"]
        if e["name"] == "idle":
            idle[(e["pid"], e["tid"])] += e["dur"]
assert len(state) == 8, state
for k, v in state.items():
    assert abs(v - step_us) <= 1e-6 * step_us, (names[k], v, step_us)
assert sum(idle.values()) > 0, "a 2-stage pipeline has a bubble"
# Slices on one track never overlap.
tracks = defaultdict(list)
for e in ev:
    if e["ph"] == "X":
        tracks[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
for k, v in tracks.items():
    v.sort()
    for a, b in zip(v, v[1:]):
        assert a[1] <= b[0] + 1e-9, (names.get(k), a, b)
sel = json.load(open(f"{T}/tl2.json"))["traceEvents"]
gpus = {n.split()[1] for n in (e["args"]["name"] for e in sel if e["ph"] == "M" and e["name"] == "thread_name") if n.startswith("GPU ")}
assert gpus == {"0", "1", "6"}, gpus
# Links: GPUs 0-1 are on host node0, so exactly the links with an endpoint on node0 remain
# (its NVSwitch, NICs, and the NIC <-> rail leaf links), none of node1's.
def links(path):
    e = json.load(open(path))["traceEvents"]
    net = {x["pid"] for x in e if x["ph"] == "M" and x["name"] == "process_name"
           and x["args"]["name"] == "Network links"}
    return {x["args"]["name"] for x in e
            if x["ph"] == "M" and x["name"] == "thread_name" and x["pid"] in net}
every = links(f"{T}/tl.json")
host0 = {n for n in every if any(end.startswith("node0.") for end in n.split(" #")[0].split("->"))}
assert 0 < len(host0) < len(every), (host0, every)
assert links(f"{T}/tl3.json") == host0, links(f"{T}/tl3.json") ^ host0
assert links(f"{T}/tl2.json") == every  # GPU 6 is on node1: both hosts' links
EOF
# The same file drawn by dtsim report: one chart row per GPU.
"$DTSIM" report "$T/tl.json" --out "$T/chart" > /dev/null
[[ -s "$T/chart/timeline.png" && -s "$T/chart/timeline.svg" ]] || fail "timeline chart missing"
[[ $(awk '!/^#/ {print $1}' "$T/chart/timeline.dat" | sort -un | wc -l) -eq 8 ]] || fail "chart rows"

set +e
"$DTSIM" run "$T/s.json" --timeline "$T/bad.json" --timeline-gpus 3-1 2> "$T/err.txt"; rc=$?
set -e
[[ $rc -eq 2 ]] || fail "expected exit 2 for a bad GPU selection, got $rc"
[[ ! -e "$T/bad.json" ]] || fail "timeline written despite the error"
echo "ok"
