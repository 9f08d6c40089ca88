#!/usr/bin/env bash
# test_diagnostics.sh - what `dtsim run` says about where communication goes.
# Pins down: the exposed communication's parts (tp, pp, dp, zero, ep, cp) sum to comm_exposed on every
# bundled scenario that has communication, in both network modes, and none exceeds its in-flight
# time; bytes_sent_per_gpu of a pure data-parallel ring all-reduce of 2 GB over 8 GPUs is
# 2(n-1)/n x 2 GB per GPU exactly; its most loaded links are the 16 GPU-switch links at
# 2(n-1)/n x 2 GB each, busy for bytes / bandwidth (alone on the link), utilisation =
# bytes / (bandwidth x step), used by dp_allreduce (dp); --links 0 lists none.
# Leaves free: which fabric links a GPT-3 step loads most (ECMP hashing decides).
set -euo pipefail
: "${DTSIM:?}" "${SRC:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

for s in quickstart llama3-8b-64-h100 zero3-13b-64-a100 gpt3-175b-1024-h100 lab-pipeline-bubble \
         mixtral-8x7b-1024-h100 llama3-8b-128k-cp-h100; do
  for net in flow analytic; do
    "$DTSIM" run "$SRC/scenarios/$s.json" --json --network "$net" > "$tmp/$s-$net.json" \
      || fail "run $s --network $net"
  done
done

cat > "$tmp/dp.json" <<'EOF'
{"name": "dp8", "topology": {"generator": "switch", "gpus": 8, "bandwidth": "100 GB/s", "latency": "1 us"},
 "model": {"kind": "synthetic", "layers": 4, "forward_time": "1 ms", "backward_time": "2 ms", "params": 1e9},
 "parallel": {"dp": 8, "bucket_size": "4 GB", "overlap_dp": false}}
EOF
"$DTSIM" run "$tmp/dp.json" --json --links 3 > "$tmp/dp-out.json" || fail "run dp"
"$DTSIM" run "$tmp/dp.json" --json --links 0 > "$tmp/dp-nolinks.json" || fail "run dp --links 0"
"$DTSIM" run "$tmp/dp.json" | grep -c "gpu0->switch0 (+7 alike)" >/dev/null || fail "human link table"

python3 - "$tmp" <<'PY'
import glob, json, sys
d = sys.argv[1]
def close(a, b, tol, what):
    if abs(a - b) > tol * max(1e-12, abs(b)):
        sys.exit(f"FAIL: {what}: dtsim {a!r}, expected {b!r}")
n = 0
for f in sorted(glob.glob(f"{d}/*-flow.json") + glob.glob(f"{d}/*-analytic.json")):
    r = json.load(open(f))
    parts, inflight = r["comm_exposed_by_kind_s"], r["comm_in_flight_by_kind_s"]
    # ep and cp only where the run has them: a dense run keeps the four keys it always had
    extra = {"ep"} if "mixtral" in f else ({"cp"} if "128k" in f else set())
    assert set(parts) == {"tp", "pp", "dp", "zero"} | extra, (f, parts)
    close(sum(parts.values()), r["breakdown_s"]["comm_exposed"], 1e-9, f"{f}: parts sum")
    for k, v in parts.items():
        assert v <= inflight[k] * (1 + 1e-12) + 1e-15, f"{f}: {k} exposed {v} > in flight {inflight[k]}"
    bs = r["bytes_sent_per_gpu"]
    close(bs["total"], sum(v for k, v in bs.items() if k != "total"), 1e-12, f"{f}: bytes total")
    n += 1
assert n == 14, n
# GPT-3: every kind is there
g = json.load(open(f"{d}/gpt3-175b-1024-h100-flow.json"))
assert all(v > 0 for v in g["comm_exposed_by_kind_s"].values()), g["comm_exposed_by_kind_s"]

r = json.load(open(f"{d}/dp-out.json"))
S, n, bw = 2e9, 8, 100e9
per = 2 * (n - 1) / n * S
close(r["bytes_sent_per_gpu"]["dp"], per, 1e-12, "bytes sent per GPU, ring all-reduce")
close(r["bytes_sent_per_gpu"]["total"], per, 1e-12, "bytes sent, total")
top = r["links"][0]
assert r["links_loaded"] == 16, r["links_loaded"]
# links in one role with the same load are one row: the 8 uplinks, the 8 downlinks
assert top["alike"] == 7 and len(r["links"]) == 2 and r["links"][1]["alike"] == 7, r["links"]
assert r["links"][1]["link"].startswith("switch0->gpu"), r["links"][1]
close(top["bytes"], per, 1e-12, "link bytes")
close(top["busy_s"], per / bw, 1e-9, "link busy")
close(top["utilisation"], per / bw / r["step_time_s"], 1e-9, "link utilisation")
assert top["used_by"] == [{"op": "dp_allreduce", "comm": "dp", "bytes": per}], top["used_by"]
assert top["where"] == "fabric", top
assert "links" not in json.load(open(f"{d}/dp-nolinks.json"))
PY
echo "ok"
