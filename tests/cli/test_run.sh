#!/usr/bin/env bash
# test_run.sh - `dtsim run` and `dtsim memory` end to end.
# Pins down: the quickstart runs and prints every JSON key; --steps N prints N step times whose
# first is `dtsim run`'s, mean/p50/p99/max consistent with them, the same for any --jobs and
# when the system starts none of the threads; breakdown sums to the step time;
# a written trace replayed on the same topology prints byte-identical --json (minus wall_s), and
# carries the GEMM shapes (stripped of them, the same FLOPs step faster); a host dispatch floor
# (framework.host_*_per_layer) holds the quickstart to (m + p - 1) stage passes of host time,
# shows its wait (host_wait_s, the "host wait" line) and travels in the trace;
# memory --json says "fits": false for a plan that cannot fit; bad input exits 2 with the path;
# --help exits 0.
set -euo pipefail
: "${DTSIM:?}" "${SRC:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$DTSIM" run --help | grep -c "write-trace" >/dev/null || fail "run --help"
"$DTSIM" memory --help >/dev/null || fail "memory --help"

out=$("$DTSIM" run "$SRC/scenarios/quickstart.json" --json)
for k in step_time_s breakdown_s compute comm_exposed bubble straggler_wait throughput \
         samples_per_s tokens_per_s tflops_per_gpu mfu memory_per_gpu_bytes params grads \
         optimizer activations peak fits events wall_s seed; do
    grep -q "\"$k\"" <<<"$out" || fail "missing key $k"
done
python3 - "$out" <<'PY' || fail "breakdown does not sum to the step time"
import json, sys
r = json.loads(sys.argv[1])
b = r["breakdown_s"]
s = b["compute"] + b["comm_exposed"] + b["bubble"] + b["straggler_wait"]
assert abs(s - r["step_time_s"]) <= 1e-12 * r["step_time_s"] + 2e-12, (s, r["step_time_s"])
assert r["fits"] is True and r["step_time_s"] > 0
PY
"$DTSIM" run "$SRC/scenarios/quickstart.json" | grep -c "step time" >/dev/null || fail "human output"

# written trace -> replay: identical JSON but for wall_s
cat > "$tmp/topo.json" <<'J'
{"generator": "dgx", "nodes": 2, "gpus_per_node": 8, "gpu": "H100-SXM"}
J
"$DTSIM" run "$SRC/scenarios/quickstart.json" --json --write-trace "$tmp/t.json" | grep -v wall_s > "$tmp/a"
"$DTSIM" run --trace "$tmp/t.json" --topology "$tmp/topo.json" --json | grep -v wall_s > "$tmp/b"
cmp "$tmp/a" "$tmp/b" || { diff "$tmp/a" "$tmp/b" >&2; fail "trace replay differs"; }
# the GEMM shapes travel in the trace: without them the same FLOPs run unquantized, faster
grep -q '"gemm_sets"' "$tmp/t.json" || fail "trace lacks gemm_sets"
python3 - "$tmp/t.json" "$tmp/flat.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
del t["gemm_sets"]
for c in t["costs"]:
    c.pop("gemms", None)
json.dump(t, open(sys.argv[2], "w"))
PY
"$DTSIM" run --trace "$tmp/flat.json" --topology "$tmp/topo.json" --json > "$tmp/flat"
python3 - "$tmp/b" "$tmp/flat" <<'PY' || fail "a trace without its GEMM shapes should step faster"
import re, sys
a, b = (float(re.search(r'"step_time_s":\s*([0-9.e+-]+)', open(f).read()).group(1)) for f in sys.argv[1:3])
sys.exit(0 if b < a else 1)
PY
# the same with a framework: TP overlap and link efficiency travel in the trace
python3 - "$SRC/scenarios/quickstart.json" "$tmp/fw.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["topology"] = {"generator": "dgx", "nodes": 2, "gpus_per_node": 8, "gpu": "H100-SXM"}
s["parallel"]["sequence_parallel"] = True
s["framework"] = {"preset": "megatron", "tp_comm_overlap": True, "overlap_grad_reduce": True}
json.dump(s, open(sys.argv[2], "w"))
PY
"$DTSIM" run "$tmp/fw.json" --json --write-trace "$tmp/tf.json" | grep -v wall_s > "$tmp/fa"
grep -q '"inlane_overlap": true' "$tmp/tf.json" && grep -q '"link_efficiency"' "$tmp/tf.json" \
  || fail "trace lacks inlane_overlap / link_efficiency"
"$DTSIM" run --trace "$tmp/tf.json" --topology "$tmp/topo.json" --json | grep -v wall_s > "$tmp/fb"
cmp "$tmp/fa" "$tmp/fb" || { diff "$tmp/fa" "$tmp/fb" >&2; fail "framework trace replay differs"; }
cmp -s "$tmp/a" "$tmp/fa" && fail "the framework changed nothing"
# the host dispatch floor (framework.host_*_per_layer): a run without it has no host_wait_s; with
# 5 + 10 ms per layer the quickstart's 6-layer stages take at least (m + p - 1) x 6 x 15 ms, the
# GPU's wait shows under compute in both outputs, and the floor travels in the trace
grep -q '"host_wait_s"' "$tmp/a" && fail "host_wait_s without a floor"
python3 - "$SRC/scenarios/quickstart.json" "$tmp/host.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["framework"] = {"preset": "megatron", "host_forward_per_layer": "5 ms",
                  "host_backward_per_layer": "10 ms"}
json.dump(s, open(sys.argv[2], "w"))
PY
"$DTSIM" run "$tmp/host.json" --json --write-trace "$tmp/th.json" > "$tmp/hj"
grep -v wall_s "$tmp/hj" > "$tmp/ha"
python3 - "$tmp/hj" <<'PY' || fail "host floor: step or host_wait_s"
import json, sys
r = json.load(open(sys.argv[1]))
m = 128 // 4 // 4  # global batch / micro batch / dp: 8 microbatches per replica
floor = (m + 2 - 1) * 6 * 0.015
assert floor <= r["step_time_s"] < floor * 1.1, (floor, r["step_time_s"])
assert 0.5 * floor < r["host_wait_s"] <= r["breakdown_s"]["compute"], r["host_wait_s"]
PY
grep -q '"host": 0.029999999999999999' "$tmp/th.json" || fail "trace lacks the backward's floor"
"$DTSIM" run --trace "$tmp/th.json" --topology "$tmp/topo.json" --json | grep -v wall_s > "$tmp/hb"
cmp "$tmp/ha" "$tmp/hb" || { diff "$tmp/ha" "$tmp/hb" >&2; fail "host floor trace replay differs"; }
"$DTSIM" run "$tmp/host.json" | grep -q "^    host wait .* of it the GPU waiting for the host" \
  || fail "no host wait line"
# Megatron-Core's overlapped pipeline sends (interleaved, bf16: overlap_p2p_comm) travel in the
# trace as its dependencies: the replay is the run; blocking sends give another step
for blk in "" ', "pp_blocking_sends": true'; do
    python3 - "$SRC/scenarios/quickstart.json" "$tmp/il.json" "$blk" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["parallel"].update({"schedule": "interleaved", "virtual_stages": 3})
s["framework"] = json.loads('{"preset": "megatron"' + sys.argv[3] + '}')
json.dump(s, open(sys.argv[2], "w"))
PY
    "$DTSIM" run "$tmp/il.json" --json --write-trace "$tmp/ti.json" | grep -v wall_s > "$tmp/ia${blk:+b}"
    "$DTSIM" run --trace "$tmp/ti.json" --topology "$tmp/topo.json" --json | grep -v wall_s > "$tmp/ib"
    cmp "$tmp/ia${blk:+b}" "$tmp/ib" || { diff "$tmp/ia${blk:+b}" "$tmp/ib" >&2; fail "interleaved trace replay differs ($blk)"; }
done
cmp -s "$tmp/ia" "$tmp/iab" && fail "overlap_p2p_comm changed nothing"
"$DTSIM" run "$SRC/scenarios/quickstart.json" --json --network analytic | grep -v wall_s > "$tmp/c"
cmp -s "$tmp/a" "$tmp/c" && fail "--network analytic changed nothing"
# options.ps_servers travels with the trace (environment.ps_servers): the replay is the run
cat > "$tmp/ps.json" <<'J'
{"topology": {"generator": "switch", "gpus": 8},
 "model": {"kind": "synthetic", "layers": 2, "forward_time": "1 ms", "backward_time": "2 ms", "params": 1e8},
 "parallel": {"bucket_size": "10 GB", "overlap_dp": false},
 "options": {"dp_algorithm": "ps", "ps_servers": 4}}
J
echo '{"generator": "switch", "gpus": 8}' > "$tmp/sw.json"
"$DTSIM" run "$tmp/ps.json" --json --write-trace "$tmp/ps-t.json" | grep -v wall_s > "$tmp/a"
grep -q '"ps_servers": 4' "$tmp/ps-t.json" || fail "trace lacks ps_servers"
"$DTSIM" run --trace "$tmp/ps-t.json" --topology "$tmp/sw.json" --json | grep -v wall_s > "$tmp/b"
cmp "$tmp/a" "$tmp/b" || { diff "$tmp/a" "$tmp/b" >&2; fail "ps trace replay differs"; }

# memory: a plan that cannot fit
cat > "$tmp/big.json" <<'J'
{"topology": {"generator": "dgx", "nodes": 1, "gpus_per_node": 8},
 "model": {"kind": "params", "params": 175e9}}
J
"$DTSIM" memory "$tmp/big.json" --json | grep -c '"fits":[[:space:]]*false' >/dev/null || fail "fits false"
"$DTSIM" memory "$tmp/big.json" | grep -c "DOES NOT FIT" >/dev/null || fail "loud no-fit"

# bad input: exit 2, file and path named, no trace file left behind
cat > "$tmp/bad.json" <<'J'
{"topology": {"generator": "dgx", "nodes": 1, "gpus_per_node": 8},
 "model": {"kind": "synthetic", "layers": 4, "forward_time": "1 ms", "backward_time": "2 ms", "params": 0},
 "parallel": {"zero": 5}}
J
set +e
err=$("$DTSIM" run "$tmp/bad.json" --write-trace "$tmp/never.json" 2>&1 >/dev/null); rc=$?
set -e
[ "$rc" = 2 ] || fail "bad input exit $rc"
grep -q "bad.json: parallel.zero" <<<"$err" || fail "error lacks path: $err"
[ ! -e "$tmp/never.json" ] || fail "trace written on error"
set +e
"$DTSIM" run --network warp "$SRC/scenarios/quickstart.json" 2>/dev/null; rc=$?
set -e
[ "$rc" = 2 ] || fail "bad flag exit $rc"
# calibration: a CPU calibration (a file `dtsim calibrate --ranks 2 --sizes 4KiB,64KiB,1MiB
# --repeats 3` wrote, committed so that the check does not hang on this machine's noise: a
# calibration measured under load can fit a line with R² < 0.5, which run then refuses;
# test_calib_roundtrip.sh owns the live calibrate -> apply path) applied to the quickstart's links
cp "$SRC/tests/data/calib/cpu-2ranks.json" "$tmp/cal.json"
python3 - "$SRC/scenarios/quickstart.json" "$tmp/qcal.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["options"] = {"calibration": "cal.json"}
json.dump(s, open(sys.argv[2], "w"))
PY
"$DTSIM" run "$tmp/qcal.json" --json | grep -c '"calibration":.*links set to' >/dev/null || fail "calibration note"
# a scenario carrying a "sweep" runs as written (the base point), identical to it without one
python3 - "$SRC/scenarios/quickstart.json" "$tmp/qsweep.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["sweep"] = {"axes": [{"path": "parallel.dp", "values": [2, 4]}]}
json.dump(s, open(sys.argv[2], "w"))
PY
a=$("$DTSIM" run "$SRC/scenarios/quickstart.json" --json | grep -v wall_s)
b=$("$DTSIM" run "$tmp/qsweep.json" --json | grep -v wall_s)
[ "$a" = "$b" ] || fail "a scenario with a sweep should run its base point"

# ZeRO-2 with a 4-stage 1F1B pipeline in flow mode: a send op and the collective instance with
# the same number once shared one in-flight counter in the replay, so the step hung ("op 348
# never ran"). It must finish, near the uncontended analytic time (2.7% apart when fixed).
python3 - "$SRC/scenarios/quickstart.json" "$tmp/z2.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["parallel"] = {"tp": 1, "pp": 4, "dp": 4, "zero": 2, "activation_checkpointing": "full",
                 "micro_batch_size": 2}
json.dump(s, open(sys.argv[2], "w"))
PY
"$DTSIM" run "$tmp/z2.json" --json >"$tmp/z2f.out" || fail "ZeRO-2 pipeline step (flow) failed"
"$DTSIM" run "$tmp/z2.json" --json --network analytic >"$tmp/z2a.out" || fail "analytic failed"
python3 - "$tmp/z2f.out" "$tmp/z2a.out" <<'PY' || fail "ZeRO-2 flow vs analytic"
import json, sys
f, a = (json.load(open(p))["step_time_s"] for p in sys.argv[1:3])
assert a > 0 and 0.95 * a <= f <= 1.10 * a, (f, a)
PY
# --steps: the distribution over many steps, the same for any thread count; step 0 is the run
cat > "$tmp/jit.json" <<'J'
{"topology": {"generator": "dgx", "nodes": 1, "gpus_per_node": 8},
 "model": {"kind": "synthetic", "layers": 4, "forward_time": "1 ms", "backward_time": "2 ms", "params": 1e8},
 "parallel": {"dp": 8}, "jitter": {"sigma": 0.2}}
J
"$DTSIM" run "$tmp/jit.json" --json > "$tmp/one.out"
"$DTSIM" run "$tmp/jit.json" --json --steps 200 --jobs 1 > "$tmp/s1.out"
"$DTSIM" run "$tmp/jit.json" --json --steps 200 --jobs 3 > "$tmp/s3.out"
cmp -s <(grep -v wall_s "$tmp/s1.out") <(grep -v wall_s "$tmp/s3.out") || fail "--steps depends on --jobs"
python3 - "$tmp/one.out" "$tmp/s1.out" <<'PY' || fail "--steps statistics"
import json, statistics, sys
one = json.load(open(sys.argv[1]))
r = json.load(open(sys.argv[2]))
s = r["steps"]
t = s["step_times_s"]
assert len(t) == s["n"] == 200
assert t[0] == one["step_time_s"] == r["step_time_s"]
assert abs(s["mean_s"] - statistics.mean(t)) <= 1e-12 * s["mean_s"]
assert s["max_s"] == max(t) and s["min_s"] == min(t)
assert s["min_s"] <= s["p50_s"] <= s["p99_s"] <= s["max_s"]
assert abs(s["p50_s"] - statistics.median(t)) <= 1e-12
assert len(set(t)) > 100  # each step its own draws
PY
"$DTSIM" run "$tmp/jit.json" --steps 20 | grep -c "p99" >/dev/null || fail "--steps human output"
# Threads the system will not start: as an unprivileged user limited to one process (no thread
# can start), --jobs 3 gives the same steps as --jobs 1 (a thread that did not start had left its
# third of the steps at 0 s, exit 0). Where it can run: nobody.sh.
. "$(dirname "$0")/nobody.sh"
chmod 755 "$tmp"
if nobody_can_run && as_nobody test -r "$tmp/jit.json"; then
    as_nobody prlimit --nproc=1 "$DTSIM" run "$tmp/jit.json" --json --steps 200 --jobs 3 \
        > "$tmp/s3n.out" || fail "--steps under a process limit of 1"
    cmp -s <(grep -v wall_s "$tmp/s1.out") <(grep -v wall_s "$tmp/s3n.out") \
        || fail "--steps with threads that could not start differs from --jobs 1"
else
    echo "skipped: the unstarted-threads check ($NOBODY_SKIP)"
fi
echo ok
