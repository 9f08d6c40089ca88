#!/usr/bin/env bash
# test_chakra.sh - Chakra execution traces: `dtsim run --trace-chakra` and `--write-chakra`.
# Pins down:
#  - hand-built traces, written in protobuf text format and encoded by protoc (Google's own
#    protobuf, not dtsim's writer), replay to their closed forms on hand-written topologies with
#    free reductions, in both network models:
#      8-rank all-reduce microbenchmark: compute (one rank slow), an all-reduce of 8 MiB on every
#      rank, compute after: max(compute) + 2(n-1)(a + S/(n B)) + after;
#      2-stage GPipe pipeline with sends and receives, 2 microbatches:
#      (m + p - 1)(f + b) + 2(p - 1)(a + S/B) (transfers shorter than a forward);
#  - a trace dtsim writes for the quickstart scenario reads back as the same op graph (the
#    dtsim trace written from it is byte for byte the scenario's) and replays to the step time
#    of `dtsim run`
#    (same --json figures except wall time); protoc decodes every file dtsim wrote; the
#    communicator-group file lists the groups the collectives name; a replay can write the
#    graph back as a dtsim trace, which replays to the same step time; the same for a step with
#    context parallelism (ring attention's sends as send/receive nodes) and one with expert
#    parallelism (all-to-alls);
#  - errors name the file, the node and the byte offset, exit 2, and leave no output: a missing
#    rank file, two traces in one directory, an unknown node type, a receive without a send, a
#    group whose members disagree, a truncated file, a file that is not protobuf; unknown
#    attributes are warnings naming the first node and the count.
# Leaves free: message wording around the quoted parts.
set -euo pipefail
: "${DTSIM:?}" "${SRC:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v protoc >/dev/null || fail "protoc not found (scripts/deps.sh --test installs protobuf-compiler)"
proto_dir=$SRC/models/workload

# mket OUT: read messages in text format from stdin, separated by lines "---", the first a
# GlobalMetadata, the rest Nodes; encode each with protoc and frame it (varint length).
cat >"$tmp/mket.py" <<'PY'
import subprocess, sys
out, proto_dir = sys.argv[1], sys.argv[2]
parts = sys.stdin.read().split("\n---\n")
buf = bytearray()
for i, text in enumerate(parts):
    kind = "ChakraProtoMsg.GlobalMetadata" if i == 0 else "ChakraProtoMsg.Node"
    p = subprocess.run(["protoc", "--encode=" + kind, "-I" + proto_dir, "chakra_et.proto"],
                       input=text.encode(), capture_output=True)
    if p.returncode:
        sys.exit("protoc: " + p.stderr.decode())
    n = len(p.stdout)
    while True:
        b = n & 0x7F
        n >>= 7
        buf.append(b | (0x80 if n else 0))
        if not n: break
    buf += p.stdout
open(out, "wb").write(bytes(buf))
PY
mket() { python3 "$tmp/mket.py" "$1" "$proto_dir"; }
meta='version: "0.0.4" attr { name: "schema" string_val: "hand-built" }'

# ---- topologies: GPUs with free reductions, so the closed forms hold exactly
python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
gpu = {"preset": "H100-SXM", "reduce_bw": 0}
ring = {"format": "dtsim-topology", "version": 1, "name": "ring8", "gpu": gpu, "gpu_forwarding": True,
        "nodes": [{"name": f"g{i}", "kind": "gpu"} for i in range(8)],
        "links": [{"src": f"g{i}", "dst": f"g{(i + 1) % 8}", "bandwidth": "100 GB/s", "latency": "1 us"}
                  for i in range(8)]}
pair = {"format": "dtsim-topology", "version": 1, "name": "pair", "gpu": gpu,
        "nodes": [{"name": "g0", "kind": "gpu"}, {"name": "g1", "kind": "gpu"}],
        "links": [{"src": "g0", "dst": "g1", "bandwidth": "10 GB/s", "latency": "5 us"}]}
json.dump(ring, open(f"{d}/ring8.json", "w"))
json.dump(pair, open(f"{d}/pair.json", "w"))
PY

# ---- 8-rank all-reduce microbenchmark
mkdir "$tmp/ar"
for r in 0 1 2 3 4 5 6 7; do
  dur=100; [[ $r -eq 3 ]] && dur=250   # rank 3 is the straggler everyone waits for
  mket "$tmp/ar/ar.$r.et" <<EOF
$meta
---
id: 10 name: "compute" type: COMP_NODE duration_micros: $dur
---
id: 11 name: "allreduce" type: COMM_COLL_NODE data_deps: 10
attr { name: "comm_type" int64_val: 0 } attr { name: "comm_size" int64_val: 8388608 }
---
id: 12 name: "after" type: COMP_NODE duration_micros: 50 data_deps: 11
EOF
done
for net in flow analytic; do
  "$DTSIM" run --trace-chakra "$tmp/ar" --topology "$tmp/ring8.json" --network $net --json >"$tmp/ar-$net.json"
done
python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
n, S, a, B = 8, 8388608, 1e-6, 100e9
want = 250e-6 + 2 * (n - 1) * (a + S / n / B) + 50e-6
for net in ("flow", "analytic"):
    r = json.load(open(f"{d}/ar-{net}.json"))
    got = r["step_time_s"]
    print("all-reduce microbenchmark, %s: %.6f us, closed form %.6f us" % (net, got * 1e6, want * 1e6))
    assert abs(got / want - 1) < 1e-9, (net, got, want)
    assert r["gpus"] == 8
PY

# ---- 2-stage GPipe pipeline, 2 microbatches: forward 100 us, backward 200 us, 0.5 MB per send
mkdir "$tmp/pp"
mket "$tmp/pp/pp.0.et" <<EOF
$meta
---
id: 1 name: "F0" type: COMP_NODE duration_micros: 100
---
id: 2 name: "send A0" type: COMM_SEND_NODE data_deps: 1
attr { name: "comm_src" int32_val: 0 } attr { name: "comm_dst" int32_val: 1 } attr { name: "comm_tag" int32_val: 0 }
attr { name: "comm_size" int64_val: 500000 }
---
id: 3 name: "F1" type: COMP_NODE duration_micros: 100 data_deps: 1
---
id: 4 name: "send A1" type: COMM_SEND_NODE data_deps: 3
attr { name: "comm_src" int32_val: 0 } attr { name: "comm_dst" int32_val: 1 } attr { name: "comm_tag" int32_val: 1 }
attr { name: "comm_size" int64_val: 500000 }
---
id: 5 name: "recv G1" type: COMM_RECV_NODE
attr { name: "comm_src" int32_val: 1 } attr { name: "comm_dst" int32_val: 0 } attr { name: "comm_tag" int32_val: 11 }
attr { name: "comm_size" int64_val: 500000 }
---
id: 6 name: "B1" type: COMP_NODE duration_micros: 200 data_deps: 5 data_deps: 3
---
id: 7 name: "recv G0" type: COMM_RECV_NODE
attr { name: "comm_src" int32_val: 1 } attr { name: "comm_dst" int32_val: 0 } attr { name: "comm_tag" int32_val: 10 }
attr { name: "comm_size" int64_val: 500000 }
---
id: 8 name: "B0" type: COMP_NODE duration_micros: 200 data_deps: 7 ctrl_deps: 6
EOF
mket "$tmp/pp/pp.1.et" <<EOF
$meta
---
id: 1 name: "recv A0" type: COMM_RECV_NODE
attr { name: "comm_src" int32_val: 0 } attr { name: "comm_dst" int32_val: 1 } attr { name: "comm_tag" int32_val: 0 }
attr { name: "comm_size" int64_val: 500000 }
---
id: 2 name: "F0" type: COMP_NODE duration_micros: 100 data_deps: 1
---
id: 3 name: "recv A1" type: COMM_RECV_NODE
attr { name: "comm_src" int32_val: 0 } attr { name: "comm_dst" int32_val: 1 } attr { name: "comm_tag" int32_val: 1 }
attr { name: "comm_size" int64_val: 500000 }
---
id: 4 name: "F1" type: COMP_NODE duration_micros: 100 data_deps: 3
---
id: 5 name: "B1" type: COMP_NODE duration_micros: 200 data_deps: 4
---
id: 6 name: "send G1" type: COMM_SEND_NODE data_deps: 5
attr { name: "comm_src" int32_val: 1 } attr { name: "comm_dst" int32_val: 0 } attr { name: "comm_tag" int32_val: 11 }
attr { name: "comm_size" int64_val: 500000 }
---
id: 7 name: "B0" type: COMP_NODE duration_micros: 200 data_deps: 5 data_deps: 2
---
id: 8 name: "send G0" type: COMM_SEND_NODE data_deps: 7
attr { name: "comm_src" int32_val: 1 } attr { name: "comm_dst" int32_val: 0 } attr { name: "comm_tag" int32_val: 10 }
attr { name: "comm_size" int64_val: 500000 }
EOF
for net in flow analytic; do
  "$DTSIM" run --trace-chakra "$tmp/pp/pp" --topology "$tmp/pair.json" --network $net --json >"$tmp/pp-$net.json"
done
python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
m, p, f, b, c = 2, 2, 100e-6, 200e-6, 5e-6 + 500000 / 10e9
want = (m + p - 1) * (f + b) + 2 * (p - 1) * c
for net in ("flow", "analytic"):
    r = json.load(open(f"{d}/pp-{net}.json"))
    got = r["step_time_s"]
    print("2-stage GPipe pipeline, %s: %.6f us, closed form %.6f us" % (net, got * 1e6, want * 1e6))
    assert abs(got / want - 1) < 1e-9, (net, got, want)
PY

# ---- the quickstart written by dtsim, replayed
"$DTSIM" topo gen dgx --nodes 2 --gpus-per-node 8 -o "$tmp/dgx.json" >/dev/null
"$DTSIM" run "$SRC/scenarios/quickstart.json" --write-chakra "$tmp/qs" --write-trace "$tmp/qs-direct.json" \
  --json >"$tmp/qs-run.json"
[[ -f "$tmp/qs.0.et" && -f "$tmp/qs.15.et" && ! -e "$tmp/qs.16.et" && -f "$tmp/qs.comm_groups.json" ]] ||
  fail "--write-chakra files"
! ls "$tmp"/qs.*.tmp* >/dev/null 2>&1 || fail "temporary files left"
"$DTSIM" run --trace-chakra "$tmp/qs" --topology "$tmp/dgx.json" --write-trace "$tmp/qs-trace.json" \
  --json >"$tmp/qs-replay.json"
"$DTSIM" run --trace "$tmp/qs-trace.json" --topology "$tmp/dgx.json" --json >"$tmp/qs-replay2.json"
# export then import is the identity on the op graph: the graph read back from the Chakra files
# writes the very trace the scenario's graph wrote
cmp -s "$tmp/qs-direct.json" "$tmp/qs-trace.json" || fail "the op graph read back from Chakra differs from the one written"
python3 - "$tmp" "$proto_dir" <<'PY'
import json, subprocess, sys
d, proto_dir = sys.argv[1:]
a, b, c = (json.load(open(f"{d}/{n}.json")) for n in ("qs-run", "qs-replay", "qs-replay2"))
for x in (a, b, c):
    x.pop("wall_s")
print("quickstart: dtsim run %.9f s, Chakra replay %.9f s" % (a["step_time_s"], b["step_time_s"]))
assert a == b, "the Chakra replay differs from the run"
assert b == c, "the trace written from the Chakra replay differs"
groups = json.load(open(f"{d}/qs.comm_groups.json"))
assert all(isinstance(v, list) and v for v in groups.values()) and "1" in groups
# every file decodes with Google's protobuf; the collectives name groups of the file
names = set()
for r in range(16):
    data, pos, k = open(f"{d}/qs.{r}.et", "rb").read(), 0, 0
    while pos < len(data):
        n, s = 0, 0
        while True:
            byte = data[pos]; pos += 1
            n |= (byte & 0x7F) << s; s += 7
            if not byte & 0x80: break
        kind = "ChakraProtoMsg.GlobalMetadata" if k == 0 else "ChakraProtoMsg.Node"
        p = subprocess.run(["protoc", "--decode=" + kind, "-I" + proto_dir, "chakra_et.proto"],
                           input=data[pos:pos + n], capture_output=True)
        assert p.returncode == 0, (r, k, p.stderr)
        text = p.stdout.decode()
        for line in text.splitlines():
            if 'string_val: "' in line and k and "pg_name" in prev:
                names.add(line.split('"')[1])
            prev = line
        pos += n
        k += 1
        if r > 1 and k > 40: break   # a sample of every file, the whole of the first two
assert names and names <= set(groups), (names, set(groups))
PY

# ---- context and expert parallelism: the ring attention's sends and the all-to-alls travel
# through both trace formats. A tp 2 x cp 4 x pp 2 step on two boxes (two of each ring's four
# steps cross the boxes) and a tp 1 x ep 8 x pp 2 MoE step: the scenario's run, the replay of
# its dtsim trace and the replay of its Chakra files print the same --json figures; rank 0's
# Chakra file holds one ring_send and one ring_recv per ring step of its lane (passes x (cp - 1)
# per compute op, read off the dtsim trace's costs[i].ring), protoc decodes them.
cat >"$tmp/cp.json" <<'EOF'
{"topology": {"generator": "dgx", "nodes": 2, "gpus_per_node": 8, "gpu": "H100-SXM"},
 "model": {"kind": "transformer", "layers": 4, "hidden": 1024, "heads": 16, "kv_heads": 4,
           "ffn": 2816, "mlp": "swiglu", "seq_len": 16384, "vocab": 32000},
 "parallel": {"tp": 2, "cp": 4, "pp": 2, "schedule": "1f1b", "zero": 1}, "global_batch": 4}
EOF
cat >"$tmp/ep.json" <<'EOF'
{"topology": {"generator": "dgx", "nodes": 2, "gpus_per_node": 8, "gpu": "H100-SXM"},
 "model": {"kind": "transformer", "layers": 4, "hidden": 1024, "heads": 16, "kv_heads": 4,
           "ffn": 2816, "mlp": "swiglu", "seq_len": 2048, "vocab": 32000, "experts": 8, "top_k": 2},
 "parallel": {"ep": 8, "pp": 2, "schedule": "1f1b", "zero": 1}, "global_batch": 16}
EOF
for c in cp ep; do
  mkdir "$tmp/$c-et"
  "$DTSIM" run "$tmp/$c.json" --write-trace "$tmp/$c-trace.json" --write-chakra "$tmp/$c-et/" --json >"$tmp/$c-run.json"
  "$DTSIM" run --trace "$tmp/$c-trace.json" --topology "$tmp/dgx.json" --json >"$tmp/$c-replay.json"
  "$DTSIM" run --trace-chakra "$tmp/$c-et" --topology "$tmp/dgx.json" --write-trace "$tmp/$c-back.json" \
    --json >"$tmp/$c-chakra.json"
  cmp -s "$tmp/$c-trace.json" "$tmp/$c-back.json" || fail "$c: the op graph read back from Chakra differs"
done
python3 - "$tmp" "$proto_dir" <<'PY'
import json, subprocess, sys
d, proto_dir = sys.argv[1:]
for c in ("cp", "ep"):
    a, b, e = (json.load(open(f"{d}/{c}-{n}.json")) for n in ("run", "replay", "chakra"))
    for x in (a, b, e):
        x.pop("wall_s")
    print("%s: dtsim run %.9f s, trace replay %.9f s, Chakra replay %.9f s, %s bytes per GPU %.6g"
          % (c, a["step_time_s"], b["step_time_s"], e["step_time_s"], c, a["bytes_sent_per_gpu"][c]))
    assert a["bytes_sent_per_gpu"][c] > 0 and a["comm_in_flight_by_kind_s"][c] > 0, (c, a)
    assert a == b, f"{c}: the trace replay differs from the run"
    assert a == e, f"{c}: the Chakra replay differs from the run"
t = json.load(open(f"{d}/cp-trace.json"))
cp = t["context_parallel"]["cp"]
assert cp == 4 and len(t["context_parallel"]["next"]) == len(t["lanes"])
lane0 = next(i for i, l in enumerate(t["lanes"]) if 0 in l)
want = sum(t["costs"][o["cost"]].get("ring", {}).get("count", 0) * (cp - 1)
           for o in t["ops"] if o["lane"] == lane0 and o["kind"] == "compute")
data, pos, k, got = open(f"{d}/cp-et/trace.0.et", "rb").read(), 0, 0, {"ring_send": 0, "ring_recv": 0}
while pos < len(data):
    n, s = 0, 0
    while True:
        byte = data[pos]; pos += 1
        n |= (byte & 0x7F) << s; s += 7
        if not byte & 0x80: break
    if k and b"ring_" in data[pos:pos + n]:
        p = subprocess.run(["protoc", "--decode=ChakraProtoMsg.Node", "-I" + proto_dir, "chakra_et.proto"],
                           input=data[pos:pos + n], capture_output=True)
        assert p.returncode == 0, p.stderr
        for nm in got:
            got[nm] += f'name: "{nm}"' in p.stdout.decode()
    pos += n
    k += 1
print("cp: rank 0 carries %d ring steps (%s)" % (want, got))
assert want > 0 and got == {"ring_send": want, "ring_recv": want}, (want, got)
PY

# ---- errors: located, exit 2, nothing written
bad() { # NAME TEXT dtsim-args...
  local name=$1 text=$2; shift 2
  local rc=0
  "$DTSIM" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" || rc=$?
  [[ $rc -eq 2 ]] || { cat "$tmp/$name.err"; fail "$name: exit $rc, expected 2"; }
  grep -qF -- "$text" "$tmp/$name.err" || { cat "$tmp/$name.err"; fail "$name: message lacks '$text'"; }
}
mkdir "$tmp/gap"; cp "$tmp/ar/ar.0.et" "$tmp/ar/ar.1.et" "$tmp/gap/"; cp "$tmp/ar/ar.3.et" "$tmp/gap/"
bad gap "gap/ar.2.et: missing: ranks run 0..3" run --trace-chakra "$tmp/gap" --topology "$tmp/ring8.json"
mkdir "$tmp/two"; cp "$tmp/ar/ar.0.et" "$tmp/two/"; cp "$tmp/pp/pp.0.et" "$tmp/two/"
bad two "holds two traces" run --trace-chakra "$tmp/two" --topology "$tmp/ring8.json"
mkdir "$tmp/type"; cp "$tmp/pp/pp.1.et" "$tmp/type/t.1.et"
mket "$tmp/type/t.0.et" <<EOF
$meta
---
id: 1 name: "odd" type: 42
EOF
bad type "t.0.et: node 1 (message 1 at byte" run --trace-chakra "$tmp/type/t" --topology "$tmp/pair.json"
grep -q "node type 42 is not in the Chakra schema" "$tmp/type.err" || fail "type: message"
mkdir "$tmp/norecv"; cp "$tmp/pp/pp.0.et" "$tmp/norecv/pp.0.et"
mket "$tmp/norecv/pp.1.et" <<EOF
$meta
---
id: 1 name: "recv" type: COMM_RECV_NODE
attr { name: "comm_src" int32_val: 0 } attr { name: "comm_tag" int32_val: 7 } attr { name: "comm_size" int64_val: 500000 }
EOF
bad norecv "pp.0.et: node 5 (message 5 at byte 208): COMM_RECV_NODE from rank 1 (tag 11)" \
  run --trace-chakra "$tmp/norecv/pp" --topology "$tmp/pair.json"
grep -q "has no matching COMM_SEND_NODE" "$tmp/norecv.err" || fail "norecv: message"
mkdir "$tmp/grp"; for r in 0 1 2 3 4 5 6 7; do cp "$tmp/ar/ar.$r.et" "$tmp/grp/"; done
mket "$tmp/grp/ar.5.et" <<EOF
$meta
---
id: 10 name: "compute" type: COMP_NODE duration_micros: 100
EOF
bad grp "process group \"0\": rank 0 runs 1 collectives on it, rank 5 runs 0" \
  run --trace-chakra "$tmp/grp" --topology "$tmp/ring8.json"
mkdir "$tmp/trunc"; head -c 40 "$tmp/pp/pp.0.et" >"$tmp/trunc/pp.0.et"; cp "$tmp/pp/pp.1.et" "$tmp/trunc/"
bad trunc "pp.0.et: message 1 at byte 31" run --trace-chakra "$tmp/trunc/pp" --topology "$tmp/pair.json"
grep -q "truncated" "$tmp/trunc.err" || fail "trunc: message"
mkdir "$tmp/junk"; printf '{"not": "protobuf"}' >"$tmp/junk/j.0.et"
bad junk "j.0.et: message 0 at byte 0" run --trace-chakra "$tmp/junk/j" --topology "$tmp/pair.json"
bad write "--write-chakra needs" run "$SRC/scenarios/quickstart.json" --write-chakra
# warnings: unknown attribute, counted, with the first node
mkdir "$tmp/warn"; for r in 0 1 2 3 4 5 6 7; do
  mket "$tmp/warn/w.$r.et" <<EOF
$meta
---
id: 10 name: "compute" type: COMP_NODE duration_micros: 100 attr { name: "flavour" string_val: "x" }
EOF
done
"$DTSIM" run --trace-chakra "$tmp/warn/w" --topology "$tmp/ring8.json" --json >/dev/null 2>"$tmp/warn.err"
grep -q "warning: .*w.0.et: node 10 (message 1 at byte [0-9]*): unknown attribute \"flavour\" (ignored) (8 times in all)" \
  "$tmp/warn.err" || { cat "$tmp/warn.err"; fail "unknown attribute warning"; }
echo PASS
