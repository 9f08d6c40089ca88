#!/usr/bin/env bash
# dtsim sweep end to end: point count and CSV columns, crossed axes in point order, failing
# points recorded (not fatal), identical bytes for --jobs 1 and 3, --json summary, a different
# scenario refused in the same --out, bad axes rejected with their JSON path (exit 2).
set -euo pipefail
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cat > "$T/s.json" <<'EOF'
{
  "name": "sweep-cli",
  "topology": {"generator": "dgx", "nodes": 1, "gpus_per_node": 8, "gpu": "H100-SXM"},
  "model": {"kind": "transformer", "layers": 12, "hidden": 768, "heads": 12, "seq_len": 1024,
            "vocab": 50257},
  "parallel": {"tp": 1, "pp": 1, "micro_batch_size": 4},
  "global_batch": 64,
  "seed": 1,
  "sweep": {"axes": [
    {"path": "topology.gpus_per_node", "range": [2, 8], "step": "x2"},
    {"path": "parallel.tp", "values": [1, 2, 5]}
  ]}
}
EOF

"$DTSIM" sweep "$T/s.json" --out "$T/a" --jobs 1 --no-progress > "$T/out.txt" 2> "$T/err.txt"
grep -q "points  9 (9 run, 0 resumed, 3 failed)" "$T/out.txt" || fail "summary: $(cat "$T/out.txt")"
grep -q "3 of 9 points failed .*first point 2: .*must divide" "$T/err.txt" || fail "stderr: $(cat "$T/err.txt")"
csv="$T/a/results.csv"
[[ $(wc -l < "$csv") -eq 10 ]] || fail "expected 9 rows + header"
head -1 "$csv" | grep -qx 'point,topology.gpus_per_node,parallel.tp,status,step_time_s,compute_s,comm_exposed_s,bubble_s,straggler_wait_s,comm_tp_s,comm_pp_s,comm_dp_s,comm_zero_s,max_straggler_wait_s,samples_per_s,tokens_per_s,tflops_per_gpu,mfu,mem_params_bytes,mem_grads_bytes,mem_optimizer_bytes,mem_activations_bytes,mem_peak_bytes,mem_capacity_bytes,fits,n_gpus,cost_per_step_usd,usd_per_hour,tokens_per_usd,events,error' \
  || fail "header: $(head -1 "$csv")"
# Point order: gpus_per_node outer (2, 4, 8), tp inner (1, 2, 5); tp 5 divides none.
cut -d, -f1-4 "$csv" | tail -n +2 | tr '\n' ' ' | grep -q '^0,2,1,ok 1,2,2,ok 2,2,5,error 3,4,1,ok 4,4,2,ok 5,4,5,error 6,8,1,ok 7,8,2,ok 8,8,5,error $' \
  || fail "order: $(cut -d, -f1-4 "$csv" | tr '\n' ' ')"
# n_gpus follows the swept topology; each point equals a plain dtsim run of that scenario.
awk -F, 'NR>1 && $4=="ok" && $26!=$2 {exit 1}' "$csv" || fail "n_gpus does not follow gpus_per_node"
python3 - "$T" <<'EOF'
import json, sys, subprocess, os
T = sys.argv[1]
s = json.load(open(f"{T}/s.json"))
del s["sweep"]
s["topology"]["gpus_per_node"] = 4
s["parallel"]["tp"] = 2
json.dump(s, open(f"{T}/p4.json", "w"))
run = json.loads(subprocess.check_output([os.environ["DTSIM"], "run", f"{T}/p4.json", "--json"]))
res = json.load(open(f"{T}/a/results.json"))
p = res["points"][4]
assert p["axes"] == {"topology.gpus_per_node": 4, "parallel.tp": 2}, p["axes"]
assert p["metrics"]["step_time_s"] == run["step_time_s"], (p["metrics"]["step_time_s"], run["step_time_s"])
assert p["metrics"]["mem_peak_bytes"] == run["memory_per_gpu_bytes"]["peak"]
assert len(res["points"]) == 9 and res["points_total"] == 9
assert "must divide" in res["points"][2]["error"], res["points"][2]
EOF

# --list: the expansion only, nothing run or written.
"$DTSIM" sweep "$T/s.json" --list > "$T/list.txt"
[[ $(wc -l < "$T/list.txt") -eq 10 ]] || fail "--list: $(cat "$T/list.txt")"
sed -n 6p "$T/list.txt" | grep -cx '4,4,2' >/dev/null || fail "--list point 4: $(sed -n 6p "$T/list.txt")"

# Same bytes with more threads.
"$DTSIM" sweep "$T/s.json" --out "$T/b" --jobs 3 --json > "$T/b.json"
cmp "$T/a/results.csv" "$T/b/results.csv" || fail "CSV differs between --jobs 1 and 3"
cmp "$T/a/results.json" "$T/b/results.json" || fail "JSON differs between --jobs 1 and 3"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["points"]==9 and d["failed"]==3 and d["ran"]==9 and d["first_failure"]["point"]==2, d' "$T/b.json"

# Re-running a finished sweep runs nothing.
"$DTSIM" sweep "$T/s.json" --out "$T/b" --json > "$T/b2.json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["resumed"]==9 and d["ran"]==0, d' "$T/b2.json"
cmp "$T/a/results.csv" "$T/b/results.csv" || fail "CSV changed after a no-op resume"

# Another scenario into the same directory is refused; --fresh starts over.
sed 's/"seed": 1/"seed": 2/' "$T/s.json" > "$T/s2.json"
set +e
"$DTSIM" sweep "$T/s2.json" --out "$T/b" 2> "$T/err2.txt"; rc=$?
set -e
[[ $rc -eq 2 ]] || fail "expected exit 2 for another scenario, got $rc"
grep -q "holds results of another scenario" "$T/err2.txt" || fail "$(cat "$T/err2.txt")"
"$DTSIM" sweep "$T/s2.json" --out "$T/b" --fresh > /dev/null 2>&1

# Bad axes: the JSON path is named, exit 2, no results written.
sed 's/"range": \[2, 8\], "step": "x2"/"range": [8, 2]/' "$T/s.json" > "$T/bad.json"
set +e
"$DTSIM" sweep "$T/bad.json" --out "$T/c" 2> "$T/err3.txt"; rc=$?
set -e
[[ $rc -eq 2 ]] || fail "expected exit 2 for a bad range, got $rc"
grep -q "sweep.axes\[0\].range" "$T/err3.txt" || fail "$(cat "$T/err3.txt")"
[[ ! -e "$T/c/results.csv" ]] || fail "results written for a bad sweep"
echo "ok"
