#!/usr/bin/env bash
# test_bad_input.sh - bad input to every sub-command gets a clear error, never a crash.
# One line per case: `t STATUS 'TEXT' LEFTOVER dtsim-arguments...`. Each case must exit with
# STATUS (2 bad input or usage, 1 I/O failure), print TEXT on stderr (for file errors: the file
# name and the JSON path, e.g. "tb.json: links[3].bandwidth"), and leave no LEFTOVER path
# ("-" for none) and no temporary *.tmp* file behind. No case may print an internal error or a
# sanitizer report. Fixtures are written below from the shipped files with one thing broken.
# Leaves free: the wording around TEXT.
set -uo pipefail
: "${DTSIM:?}" "${SRC:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1

python3 - "$SRC" <<'PY' || { echo "FAIL: fixtures" >&2; exit 1; }
import json, sys
src = sys.argv[1]
def load(p): return json.load(open(f"{src}/{p}"))
def w(name, d): open(name, "w").write(d if isinstance(d, str) else json.dumps(d))
def scen(name, **kw):
    d = {"topology": {"generator": "dgx", "nodes": 1, "gpus_per_node": 8},
         "model": {"kind": "transformer", "layers": 4, "hidden": 256, "heads": 8,
                   "seq_len": 128, "vocab": 1000}}
    for k, v in kw.items():
        if v is None: d.pop(k, None)
        elif isinstance(v, dict) and isinstance(d.get(k), dict) and "kind" not in v: d[k].update(v)
        else: d[k] = v
    w(name, d)
scen("ok.json")
scen("type.json", parallel={"tp": "2"})
scen("unknown.json", paralel={"tp": 2})
scen("missing.json", model=None)
scen("unit.json", parallel={"bucket_size": "5 parsecs"})
scen("negative.json", parallel={"bucket_size": "-5 MB"})
scen("host_neg.json", framework={"preset": "megatron", "host_backward_per_layer": "-2 ms"})
scen("host_unit.json", framework={"host_forward_per_layer": "2 jiffies"})
scen("zero.json", model={"layers": 0})
scen("huge_gpus.json", topology={"nodes": 1e300})
scen("mb40.json", parallel={"microbatches": 2**40})
scen("mb30.json", parallel={"microbatches": 2**30})
scen("gb.json", global_batch=1e12)
scen("tpbig.json", parallel={"tp": 65536, "pp": 65536})
scen("cpbig.json", parallel={"tp": 65536, "pp": 65536, "cp": 65536})
moe = {"experts": 8, "top_k": 2}
scen("ep_experts.json", model=moe, parallel={"ep": 3})
scen("ep_dp.json", model=moe, parallel={"tp": 2, "ep": 8})
scen("moe_key.json", model={"router_zipf": 1.5})
scen("moe_cap.json", model=dict(moe, capacity_factor=0.5))
scen("cp_unfused.json", model={"attention": "unfused"}, parallel={"cp": 2})
scen("cp_seq.json", model={"seq_len": 130}, parallel={"cp": 2})
scen("tpheads.json", model={"heads": 12, "hidden": 768}, parallel={"tp": 8})
scen("product.json", parallel={"tp": 2, "pp": 2, "dp": 3})
scen("straggler.json", stragglers=[{"gpu": 99, "slowdown": 2}])
scen("slowdown.json", stragglers=[{"gpu": 1, "slowdown": -2}])
scen("degraded.json", degraded_links=[{"link": 100000, "bandwidth_factor": 0.5}])
scen("params.json", model={"kind": "params", "params": 1e9})
scen("nocal.json", options={"calibration": "nope.json"})
scen("contention.json", options={"comm_contention": {"sms": 0}})
scen("topofile.json", topology="nope-topo.json")
scen("longstep.json", model={"kind": "synthetic", "layers": 2, "forward_time": "5000000 s",
                             "backward_time": "5000000 s", "params": 1})
# failures, checkpoints, storage, input (dtsim goodput, dtsim run)
FAIL = {"gpu": {"mtbf": "1000 h"}, "restart": "10 min"}
STOR = {"bandwidth": "100 GB/s"}
scen("gp_ok.json", failures=FAIL, checkpoint={"interval": "1 h"}, storage=STOR)
scen("gp_nofail.json", checkpoint={"interval": "1 h"}, storage=STOR)
scen("gp_nockpt.json", failures=FAIL)
scen("gp_unit.json", failures={"gpu": {"mtbf": "3 fortnights"}, "restart": 60})
scen("gp_shape.json", failures={"gpu": {"mtbf": "1000 h", "distribution": "weibull"}, "restart": 60})
scen("gp_nostor.json", failures=FAIL, checkpoint={"interval": "1 h"})
scen("gp_iv.json", failures=FAIL, checkpoint={"interval": "-1 h"}, storage=STOR)
scen("gp_node.json", failures=FAIL, checkpoint={}, storage={"node": "nas"})
scen("in_nostor.json", input={"bytes_per_sample": "1 MB"})
scen("backup.json", parallel={"backup_workers": 8})
scen("stale.json", parallel={"staleness": 2, "zero": 1})
scen("balance.json", parallel={"balance": "fastest"})
scen("placement.json", parallel={"placement": "bandwith"})
scen("placement_big.json", topology={"nodes": 1024}, parallel={"placement": "bandwidth", "dp": 8192})
scen("fed_cloud.json", federated={"cloud": 99})
scen("fed_ok.json", federated={"cloud": 0})
scen("fed_edges.json", federated={"cloud": 0, "edges": [{"server": 1, "clients": [2, 2]}]})
scen("balance_zero.json", parallel={"balance": "speed", "zero": 3})
scen("balance_sl.json", parallel={"balance": "speed", "pp": 2, "stage_layers": [2, 2]})
scen("balance_cp.json", parallel={"balance": "speed", "cp": 2})
scen("in_size.json", input={"bytes_per_sample": "1 MBq"}, storage=STOR)
w("empty.json", "")
w("trailing.json", '{"topology": "x"} x')
w("dupkey.json", '{"seed": 1, "seed": 2}')
w("array.json", "[1, 2]")
w("notafile", "not a directory")

# topologies
t = load("topologies/ring-8.json")
def topo(name, f):
    d = json.loads(json.dumps(t)); f(d); w(name, d)
topo("tb_neg.json", lambda d: d["links"][3].update(bandwidth="-5 GB/s"))
topo("tb_unit.json", lambda d: d["links"][3].update(bandwidth="5 GB"))
topo("tb_node.json", lambda d: d["links"][3].update(dst="gpu99"))
topo("tb_dup.json", lambda d: d["nodes"][2].update(name="gpu1"))
topo("tb_typo.json", lambda d: d["links"][3].update(bandwith=1))
topo("tb_self.json", lambda d: d["links"][3].update(dst="gpu3"))
topo("tb_cut.json", lambda d: d.update(links=d["links"][:3]))
topo("tb_slow.json", lambda d: d["links"][3].update(bandwidth=1e-300))
topo("tb_version.json", lambda d: d.update(version=2))

# traces
def trace(name, ops, **kw):
    d = {"format": "dtsim-trace", "version": 1, "gpus": 2, "ops": ops}; d.update(kw); w(name, d)
trace("cycle.json", [{"gpu": 0, "kind": "compute", "duration": "1 ms", "deps": [1]},
                     {"gpu": 1, "kind": "compute", "duration": "1 ms", "deps": [0]}])
trace("missdep.json", [{"gpu": 0, "kind": "compute", "duration": "1 ms", "deps": [5]}])
trace("selfdep.json", [{"gpu": 0, "kind": "compute", "duration": "1 ms", "deps": [0]}])
trace("cpring.json", [{"gpu": 0, "kind": "compute", "duration": "1 ms"}],
      context_parallel={"cp": 2, "next": [0, 1]})
trace("toomany.json", [{"gpu": 0, "kind": "compute", "duration": "1 ms"}], gpus=16)
trace("shared.json", [{"lane": 0, "kind": "collective", "collective": 0},
                      {"lane": 1, "kind": "collective", "collective": 0}],
      lanes=[[0], [0]], collectives=[{"op": "allreduce", "bytes": "1 MB"}])
trace("nocoll.json", [{"gpu": 0, "kind": "collective", "collective": 3}])
trace("twicecoll.json", [{"gpu": 0, "kind": "collective", "collective": 0},
                         {"gpu": 1, "kind": "collective", "collective": 0},
                         {"gpu": 0, "kind": "collective", "collective": 0, "stream": "tp"}],
      collectives=[{"op": "allgather", "bytes": "8 MB"}])
trace("sr3.json", [{"gpu": g, "kind": "collective", "collective": 0} for g in range(3)],
      gpus=3, collectives=[{"op": "sendrecv", "bytes": "8 MB"}])
trace("srlane.json", [{"lane": 0, "kind": "compute", "cost": 0}], gpus=3, lanes=[[0, 1, 2]],
      costs=[{"duration": "1 ms", "inlane": [{"op": "sendrecv", "bytes": "1 MB"}]}])
trace("noformat.json", [], format="dtsim-trail")
trace("bigflops.json", [{"gpu": 0, "kind": "compute", "cost": 0}],
      costs=[{"flops": {"matmul": 1e41}}])
trace("twoexact.json", [{"gpu": 0, "kind": "compute", "cost": 0, "duration": "1 ms"}],
      costs=[{"duration": "1 ms"}])

# calibrations
c = load("tests/fuzz/corpus/fuzz_calib/cpu-small.json")
def cal(name, f):
    d = json.loads(json.dumps(c)); f(d); w(name, d)
cal("cal_ok.json", lambda d: None)
cal("cal_beta.json", lambda d: d["fits"][0].update(beta=-1))
cal("cal_bw.json", lambda d: d["fits"][0].update(bandwidth=3e9))
cal("cal_median.json", lambda d: d["fits"][0]["points"][1].update(median=1))
cal("cal_version.json", lambda d: d.update(version=2))
cal("cal_nofits.json", lambda d: d.update(fits=[]))
cal("cal_date.json", lambda d: d.update(date="yesterday"))

# sweeps
q = load("scenarios/quickstart.json")
def sweep(name, s):
    d = json.loads(json.dumps(q)); d["sweep"] = s; w(name, d)
sweep("sw_path.json", {"axes": [{"path": "parallel.dq", "values": [1, 2]}]})
sweep("sw_index.json", {"axes": [{"path": "degraded_links[5].link", "values": [1]}]})
sweep("sw_empty.json", {"axes": [{"path": "parallel.dp", "values": []}]})
sweep("sw_step.json", {"axes": [{"path": "parallel.dp", "range": [1, 8], "step": "x1"}]})
sweep("sw_mode.json", {"mode": "diagonal", "axes": [{"path": "seed", "values": [1]}]})
sweep("sw_zip.json", {"axes": [{"zip": [{"path": "parallel.tp", "values": [1, 2]},
                                        {"path": "parallel.pp", "values": [1]}]}]})
sweep("sw_self.json", {"axes": [{"path": "sweep.axes", "values": [1]}]})
sweep("sw_ok.json", {"axes": [{"path": "seed", "values": [1, 2]}]})
w("report_obj.json", {"a": 1})
w("empty.csv", "")
w("ragged.csv", "gpus,tokens_per_s\n8,1\n16\n")
PY
mkdir -p adir

fails=0
# t STATUS TEXT LEFTOVER ARGS...
t() {
    local want=$1 text=$2 left=$3 err rc
    shift 3
    err=$(timeout 120 "$DTSIM" "$@" 2>&1 >/dev/null)
    rc=$?
    local why=""
    [[ $rc == "$want" ]] || why="exit $rc, expected $want"
    [[ -n $why ]] || grep -cF -- "$text" <<<"$err" >/dev/null || why="message lacks '$text'"
    [[ -n $why ]] || ! grep -qE 'internal error|Sanitizer|runtime error' <<<"$err" || why="crash report"
    [[ -n $why || $left == - || ! -e $left ]] || why="left $left behind"
    [[ -n $why ]] || ! compgen -G '*.tmp*' >/dev/null || why="left $(compgen -G '*.tmp*') behind"
    if [[ -n $why ]]; then
        echo "FAIL: dtsim $*: $why" >&2
        echo "      stderr: ${err:0:400}" >&2
        fails=$((fails + 1))
        rm -rf ./*.tmp* "$left"
    fi
}

# ---- run / memory: scenario files
t 2 'type.json: parallel.tp: expected an integer' never.json run type.json --write-trace never.json
t 2 'unknown.json: paralel: unknown key (did you mean "parallel"?)' never.json run unknown.json --timeline never.json
t 2 'missing.json: model: required' - memory missing.json
t 2 'unit.json: parallel.bucket_size: unknown size unit "parsecs"' - run unit.json
t 2 'negative.json: parallel.bucket_size: expected a positive size' - memory negative.json
t 2 'host_neg.json: framework.host_backward_per_layer: expected a non-negative time, found "-2 ms"' - run host_neg.json
t 2 'host_unit.json: framework.host_forward_per_layer: unknown time unit "jiffies"' - run host_unit.json
t 2 'zero.json: model.layers: expected an integer from 1' - run zero.json
t 2 'huge_gpus.json: topology.nodes: expected an integer from 1 to' - memory huge_gpus.json
t 2 'mb40.json: parallel.microbatches: expected an integer from 1 to' - run mb40.json
t 2 'mb30.json: parallel.microbatches: the step' never.json run mb30.json --write-trace never.json
t 2 'gb.json: global_batch: gives' - memory gb.json
t 2 'tpbig.json: parallel: tp x pp = 4294967296 must divide' - memory tpbig.json
t 2 'cpbig.json: parallel: tp x pp x cp = 281474976710656 must divide' - memory cpbig.json
t 2 "ep_experts.json: parallel.ep: must divide the model's experts" - run ep_experts.json
t 2 'ep_dp.json: parallel.ep: must divide dp (4)' - memory ep_dp.json
t 2 'moe_key.json: model.router_zipf: needs a mixture of experts' - run moe_key.json
t 2 'moe_cap.json: model.capacity_factor: 0 (dropless) or at least 1' - memory moe_cap.json
t 2 'cp_unfused.json: model.attention: context parallelism needs "flash"' - run cp_unfused.json
t 2 'cp_seq.json: parallel.cp: 2 x cp must divide seq_len' - run cp_seq.json
t 2 'tpheads.json: parallel.tp: must divide the model' - run tpheads.json
t 2 'product.json: parallel: dp x tp x pp = 3 x 2 x 2 = 12 must equal' - run product.json
t 2 'straggler.json: stragglers[0].gpu: the topology has GPUs 0..7, found 99' - run straggler.json
t 2 'slowdown.json: stragglers[0].slowdown' - run slowdown.json
t 2 'degraded.json: degraded_links[0].link' - run degraded.json
t 2 'params.json: model.kind' never.json run params.json --timeline never.json
t 2 'nocal.json: options.calibration' - run nocal.json
t 2 'contention.json: options.comm_contention.sms' - run contention.json
t 2 'topofile.json: topology: topology file "nope-topo.json": cannot open' - run topofile.json
t 2 'longstep.json: the step would take longer than the simulated clock' never.json run longstep.json --write-trace never.json
t 2 'empty.json:1:1: JSON syntax error' - run empty.json
t 2 'trailing.json:1:' - memory trailing.json
t 2 'dupkey.json' - run dupkey.json
t 2 'array.json: (top level): expected an object, found an array' - run array.json
t 1 'adir: cannot read: Is a directory' - run adir
t 1 '/dev/zero: cannot read: a character device, not a regular file' - memory /dev/zero
t 1 'nope.json: cannot open' - memory nope.json
t 1 'notafile/t.json: cannot write' - run ok.json --write-trace notafile/t.json
t 2 '--timeline-gpus' never.json run ok.json --timeline never.json --timeline-gpus 5-2
t 2 '--seed' - run ok.json --seed -1
t 2 '--network' - run ok.json --network fast
t 2 'unknown option' - run ok.json --bogus
t 2 'needs --topology' - run --trace cycle.json
t 2 '--steps expects 1 to 1000000' - run ok.json --steps 0
t 2 '--jobs expects 1 to 1024' - run ok.json --steps 4 --jobs x
t 2 '--steps needs a scenario' - run --trace cycle.json --topology "$SRC/topologies/ring-8.json" --steps 4
t 2 'backup.json: parallel.backup_workers: must be below dp' - run backup.json --steps 4
t 2 'stale.json: parallel.staleness: needs zero 0' - run stale.json
t 2 'balance.json: parallel.balance' - run balance.json
t 2 'placement_big.json: parallel.placement: "bandwidth" searches over pairs of GPUs: at most 4096 GPUs, found 8192' - run placement_big.json
t 2 'placement.json: parallel.placement: expected an order of tp, pp, dp such as "dp,pp,tp" (outermost first) or "bandwidth"' - memory placement.json
t 2 'fed_cloud.json: federated.cloud: expected a GPU index 0..7' - federated fed_cloud.json
t 2 'fed_edges.json: federated.edges[0].clients[1]: GPU 2' - federated fed_edges.json --json
t 2 'fed_ok.json: federated: a federated scenario' - run fed_ok.json
t 2 'ok.json: federated: required' - federated ok.json
t 2 'dtsim federated: --rounds needs a whole number' - federated fed_ok.json --rounds 0
t 2 'dtsim federated: missing the scenario file' - federated
t 2 'balance_zero.json: parallel.balance: "speed" gives replicas different microbatches; ZeRO-3' - memory balance_zero.json
t 2 'balance_sl.json: parallel.balance: "speed" computes the layers' - run balance_sl.json
t 2 'balance_cp.json: parallel.balance: "speed" balances pipeline stages and data-parallel replicas; it does not yet split work over context- or expert-parallel ranks (cp 2' - run balance_cp.json
# ---- failures, checkpoints, storage, input; dtsim goodput
t 2 'gp_nofail.json: failures: required by dtsim goodput' gpp goodput gp_nofail.json --plot gpp
t 2 'gp_nockpt.json: checkpoint: required by dtsim goodput' - goodput gp_nockpt.json
t 2 'gp_unit.json: failures.gpu.mtbf: unknown time unit "fortnights"' - goodput gp_unit.json
t 2 'gp_shape.json: failures.gpu.shape: required' - run gp_shape.json
t 2 'gp_nostor.json: checkpoint: needs a "storage" section' - goodput gp_nostor.json
t 2 'gp_iv.json: checkpoint.interval: expected a positive time' - goodput gp_iv.json
t 2 'gp_node.json: storage.node: no node named "nas"' - goodput gp_node.json
t 2 'in_nostor.json: input: needs a "storage" section' - run in_nostor.json
t 2 'in_size.json: input.bytes_per_sample: unknown size unit' - memory in_size.json
t 2 '--horizon' - goodput gp_ok.json --horizon 5parsecs
t 2 '--runs expects 1 to 1000000' - goodput gp_ok.json --runs 0
t 2 '--max-interval is below --min-interval' - goodput gp_ok.json --min-interval 2h --max-interval 1h
t 1 'notafile/p: cannot create directory' - goodput gp_ok.json --runs 10 --plot notafile/p
# ---- run --trace: trace files
t 2 'cycle.json: ops[0]: op 0 (compute, lane 0) never ran' never.json run --trace cycle.json --topology "$SRC/topologies/ring-8.json" --timeline never.json
t 2 'missdep.json: ops[0].deps[0]: expected the id of another op' - run --trace missdep.json --topology "$SRC/topologies/ring-8.json"
t 2 'selfdep.json: ops[0].deps[0]' - run --trace selfdep.json --topology "$SRC/topologies/ring-8.json"
t 2 'cpring.json: context_parallel.next[0]: expected the index of another lane' - run --trace cpring.json --topology "$SRC/topologies/ring-8.json"
t 2 'the trace uses 16 GPUs but the topology has 8' - run --trace toomany.json --topology "$SRC/topologies/ring-8.json"
t 2 'shared.json: lanes[1][0]: GPU 0 is already in lanes[0]' - run --trace shared.json --topology "$SRC/topologies/ring-8.json"
t 2 'nocoll.json: ops[0].collective' - run --trace nocoll.json --topology "$SRC/topologies/ring-8.json"
t 2 'twicecoll.json: ops[2].collective: collective 0 already has ops[0] on lane 0' - run --trace twicecoll.json --topology "$SRC/topologies/ring-8.json"
t 2 'sr3.json: collectives[0].op: a sendrecv is between two lanes; ops on 3 lanes name it' - run --trace sr3.json --topology "$SRC/topologies/ring-8.json"
t 2 'srlane.json: costs[0].inlane[0].op: a sendrecv inside a lane is between its two GPUs; the lanes have 3' - run --trace srlane.json --topology "$SRC/topologies/ring-8.json"
t 2 'noformat.json: format: expected "dtsim-trace"' - run --trace noformat.json --topology "$SRC/topologies/ring-8.json"
t 2 'bigflops.json: the step would take longer' - run --trace bigflops.json --topology "$SRC/topologies/ring-8.json"
t 2 'twoexact.json: ops[0].cost: a compute op needs exactly one' - run --trace twoexact.json --topology "$SRC/topologies/ring-8.json"
t 2 'tb_neg.json: links[3].bandwidth' - run --trace cycle.json --topology tb_neg.json
t 2 'empty.json:1:1: JSON syntax error' - run --trace empty.json --topology "$SRC/topologies/ring-8.json"
t 1 'adir: cannot read: Is a directory' - run --trace cycle.json --topology adir
# ---- topo
t 2 'tb_neg.json: links[3].bandwidth: expected a positive bandwidth' - topo validate tb_neg.json
t 2 'tb_unit.json: links[3].bandwidth: unknown bandwidth unit "GB"' - topo info tb_unit.json
t 2 'tb_node.json: links[3].dst: unknown node "gpu99"' - topo validate tb_node.json
t 2 'tb_dup.json: nodes[2].name: duplicate node name' - topo validate tb_dup.json
t 2 'tb_typo.json: links[3].bandwith: unknown key (did you mean "bandwidth"?)' - topo validate tb_typo.json
t 2 'tb_self.json: links[3].dst: self-loop' - topo validate tb_self.json
t 2 'tb_cut.json: nodes[0]: GPU "gpu0" cannot reach' - topo info tb_cut.json
t 2 'tb_version.json: version' - topo validate tb_version.json
t 2 'empty.json:1:1: JSON syntax error' - topo validate empty.json
t 1 'adir: cannot read' - topo info adir
t 2 '--gpus: expected an integer from 1 to' out.json topo gen ring --gpus 0 -o out.json
t 2 '--gpus: expected an integer from 1 to' out.json topo gen ring --gpus 1e300 -o out.json
t 2 '--latency: expected a latency below 1 s' out.json topo gen ring --gpus 8 --latency 10s -o out.json
t 2 '--bandwidth: expected a positive bandwidth' out.json topo gen ring --gpus 8 --bandwidth 0 -o out.json
t 2 '--dims' out.json topo gen torus --dims 65536x65536 -o out.json
t 2 'unknown value "bogus"' - topo gen bogus
t 1 'notafile/t.json: cannot write' - topo gen ring --gpus 8 -o notafile/t.json
# ---- collective
t 2 'size: expected a size >= 0' - collective --topology gen:ring:gpus=8 --op allreduce --size -1MB
t 2 'would take longer than the simulated clock' - collective --topology gen:ring:gpus=8 --op allreduce --size 1e300
t 2 'tb_slow.json: links[3].bandwidth: expected a bandwidth of at least 1 B/s' - collective --topology tb_slow.json --op allreduce --size 1MB
t 2 "--chunk: expected a positive size, found '0'" - collective --topology gen:ring:gpus=8 --op allreduce --size 1MB --chunk 0
t 2 '--reduce-bw: expected a bandwidth >= 0' - collective --topology gen:ring:gpus=8 --op allreduce --size 1MB --reduce-bw -5
t 2 'GPU 0 appears twice' - collective --topology gen:ring:gpus=8 --op allreduce --size 1MB --group 0,0
t 2 'outside 0-7' - collective --topology gen:ring:gpus=8 --op allreduce --size 1MB --group 0-100
t 2 'root: expected a group index in 0..7, found 9' - collective --topology gen:ring:gpus=8 --op broadcast --size 1MB --root 9
t 2 "--op: unknown collective 'bogus'" - collective --topology gen:ring:gpus=8 --op bogus --size 1MB
t 2 "bad value '1e300' for gpus" - collective --topology gen:ring:gpus=1e300 --op allreduce --size 1MB
t 2 "unknown generator key 'gpuz'" - collective --topology gen:ring:gpuz=8 --op allreduce --size 1MB
t 2 'tb_node.json: links[3].dst' - collective --topology tb_node.json --op allreduce --size 1MB
t 2 '--topology is required' - collective --op allreduce --size 1MB
# ---- calibration files (through collective --calibration and scenarios)
t 2 'cal_beta.json: fits[0].beta' - collective --topology gen:ring:gpus=8 --op allreduce --size 1MB --calibration cal_beta.json
t 2 'cal_bw.json: fits[0].bandwidth' - collective --topology gen:ring:gpus=8 --op allreduce --size 1MB --calibration cal_bw.json
t 2 'cal_median.json: fits[0].points[1].median' - collective --topology gen:ring:gpus=8 --op allreduce --size 1MB --calibration cal_median.json
t 2 'cal_version.json: version' - collective --topology gen:ring:gpus=8 --op allreduce --size 1MB --calibration cal_version.json
t 2 'cal_nofits.json: fits' - collective --topology gen:ring:gpus=8 --op allreduce --size 1MB --calibration cal_nofits.json
t 2 'cal_date.json: date' - collective --topology gen:ring:gpus=8 --op allreduce --size 1MB --calibration cal_date.json
t 2 'ok.json: topology: unknown key' - collective --topology gen:ring:gpus=8 --op allreduce --size 1MB --calibration ok.json
t 2 'empty.json:1:1: JSON syntax error' - collective --topology gen:ring:gpus=8 --op allreduce --size 1MB --calibration empty.json
t 1 'adir: cannot read' - collective --topology gen:ring:gpus=8 --op allreduce --size 1MB --calibration adir
# ---- calibrate (flags only: nothing is timed)
t 2 '--ranks: expected an integer from 2' c.json calibrate --ranks 0 --out c.json
t 2 '--sizes: expected a size of at least 1 B' c.json calibrate --sizes 0:1:x2 --out c.json
t 2 '--dtype: expected fp32, bf16 or fp16, found "fp64"' c.json calibrate --dtype fp64 --out c.json
t 2 '--repeats: expected an integer from 1' c.json calibrate --repeats 0 --out c.json
t 2 '--topk-fraction: expected a number from 0 to 1' c.json calibrate --topk-fraction 2 --out c.json
t 2 '--out FILE is required' - calibrate
# ---- sweep
t 2 'sw_path.json: parallel.dq: unknown key' swp sweep sw_path.json --out swp --jobs 1
t 2 'sw_index.json: degraded_links: sweep path "degraded_links[5].link": no element [5]' swi sweep sw_index.json --out swi --jobs 1
t 2 'sw_empty.json: sweep.axes[0].values: expected at least one value' swe sweep sw_empty.json --out swe
t 2 'sw_step.json: sweep.axes[0].step' sws sweep sw_step.json --out sws
t 2 'sw_mode.json: sweep.mode' swm sweep sw_mode.json --out swm
t 2 'sw_zip.json: sweep.axes[0]: zipped axes must have as many values' swz sweep sw_zip.json --out swz
t 2 'sw_self.json: sweep.axes[0].path' swf sweep sw_self.json --out swf
t 2 'ok.json: sweep: this scenario has no "sweep"' swn sweep ok.json --out swn
t 2 '--jobs expects a count' swj sweep sw_ok.json --out swj --jobs 0
t 1 'notafile: not a directory' - sweep sw_ok.json --out notafile
t 2 'empty.json:1:1: JSON syntax error' swy sweep empty.json --out swy
# ---- plan
t 2 'unknown.json: paralel: unknown key' - plan unknown.json --gpus 8
t 2 'empty.json:1:1: JSON syntax error' - plan empty.json --gpus 8
t 2 '--gpus expects an integer from 1 to' - plan ok.json --gpus 0
t 2 '--gpus expects an integer from 1 to' - plan ok.json --gpus 1e300
t 2 '--objective expects time, cost or tokens-per-dollar' - plan ok.json --gpus 8 --objective fast
t 2 '--memory-limit' - plan ok.json --gpus 8 --memory-limit -5GB
t 2 '--max-gpus: must be at least --gpus (16), found 8' - plan ok.json --gpus 16 --max-gpus 8
# ---- report
t 1 'nodir/results.csv: cannot open' - report nodir
t 2 'empty.json:1:1: JSON syntax error' rep report empty.json --out rep
t 2 'report_obj.json: expected an array of objects' rep report report_obj.json --out rep
t 2 'empty.csv: empty file: expected a CSV header' rep report empty.csv --out rep
t 2 'ragged.csv: record 3 has 1 fields, the header 2' rep report ragged.csv --out rep
# ---- usage
t 2 'unknown' - bogus-command
t 2 'unknown sub-command' - topo bogus

# Text from the user's data goes into gnuplot scripts quoted: an algorithm name must not run a
# shell command when the plot is drawn (it did: title '%s' written raw).
printf '[{"size_bytes": 1, "busbw_GBps": 2, "algo": "a\x27; system(\x27touch %s\x27); print \x27"},
  {"size_bytes": 2, "busbw_GBps": 3, "algo": "b\\n\\"; system(\\"touch %s\\")"}]\n' \
    "$tmp/pwned" "$tmp/pwned" > inject.json
if command -v gnuplot >/dev/null; then
    "$DTSIM" report inject.json --out inj >/dev/null 2>&1
    [[ ! -e $tmp/pwned ]] || { echo "FAIL: report ran a command from the data" >&2; fails=$((fails + 1)); }
fi

if ((fails)); then
    echo "FAIL: $fails bad-input case(s)" >&2
    exit 1
fi
echo "PASS"
