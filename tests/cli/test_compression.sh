#!/usr/bin/env bash
# test_compression.sh - gradient compression as deployed: bytes sent and compute.
# Pins down, on 4 and 8 GPUs with the ring algorithm (options.dp_algorithm "ring") and a model
# of Ψ parameters (from dtsim memory: 2 bytes each in bf16) at ratio r = 0.01, with (index,
# value) pairs of 4 + 2 bytes:
# - all-gather (the default, "method": "allgather"): each GPU sends (d-1) r Ψ (4 + 2) bytes of
#   DP traffic, growing with d;
# - sparse all-reduce ("method": "sparse_allreduce", density kept at r): 2 (d-1)/d r Ψ (4 + 2),
#   so the all-gather sends d/2 times more; both to 1e-9 of the closed form;
# - the selection compute grows by 2 (d-1)/d r Ψ / throughput (the re-selections), exactly;
# - quantised all-reduce with error feedback ("int8", "fp8", "onebit"): 2 (d-1)/d Ψ b/8 bytes
#   per GPU (b = 8, 8, 1 bits) against 2 (d-1)/d Ψ 2 uncompressed, and 2 Ψ / throughput more
#   compute (quantise, dequantise); a ratio given with them is exit 2;
# - a bad method is exit 2 naming parallel.compression.method;
# - top-k through parameter servers and PowerSGD: bytes per GPU of their closed forms.
# Leaves free: step times (the network model's). The scenarios turn options.comm_contention off:
# the selection compute is pinned as it costs alone, and with contention the buckets' all-reduces
# (whose bytes differ between the methods) would also slow the backward they overlap.
set -euo pipefail
: "${DTSIM:?}"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

for d in 4 8; do
  for m in allgather sparse_allreduce; do
    cat > "$T/c-$d-$m.json" <<J
{"topology": {"generator": "switch", "gpus": $d, "gpu": "H100-SXM"},
 "model": {"kind": "transformer", "layers": 4, "hidden": 1024, "heads": 16, "seq_len": 512, "vocab": 32000},
 "parallel": {"dp": $d, "compression": {"ratio": 0.01, "throughput": 1e9, "method": "$m"}},
 "global_batch": $((2 * d)), "options": {"dp_algorithm": "ring", "comm_contention": false}}
J
    "$DTSIM" run "$T/c-$d-$m.json" --json > "$T/r-$d-$m.json"
  done
done
"$DTSIM" memory "$T/c-4-allgather.json" --json > "$T/mem.json"
python3 - "$T" <<'PY'
import json, sys
T = sys.argv[1]
psi = json.load(open(f"{T}/mem.json"))["memory_per_gpu_bytes"]["params"] / 2  # bf16
r, pair = 0.01, 4 + 2
for d in (4, 8):
    ag = json.load(open(f"{T}/r-{d}-allgather.json"))
    sa = json.load(open(f"{T}/r-{d}-sparse_allreduce.json"))
    b_ag, b_sa = ag["bytes_sent_per_gpu"]["dp"], sa["bytes_sent_per_gpu"]["dp"]
    want_ag = (d - 1) * r * psi * pair
    want_sa = 2 * (d - 1) / d * r * psi * pair
    assert abs(b_ag / want_ag - 1) < 1e-9, (d, b_ag, want_ag)
    assert abs(b_sa / want_sa - 1) < 1e-9, (d, b_sa, want_sa)
    assert abs(b_ag / b_sa - d / 2) < 1e-9
    # compute: the selection over Ψ elements at 1e9/s, plus 2 (d-1)/d r Ψ re-selected
    extra = sa["breakdown_s"]["compute"] - ag["breakdown_s"]["compute"]
    assert abs(extra - 2 * (d - 1) / d * r * psi / 1e9) < 1e-9 + 1e-6 * extra, (d, extra)
    print("d %d: all-gather %.4g MB, sparse all-reduce %.4g MB per GPU (x%.1f)" % (d, b_ag / 1e6, b_sa / 1e6, b_ag / b_sa))
PY
# Quantised all-reduce with error feedback: 2 (d-1)/d Ψ b/8 bytes per GPU (b = 8 for int8 and
# fp8, 1 for onebit), against 2 (d-1)/d Ψ 2 uncompressed; quantise + dequantise 2 Ψ / throughput
# of compute; "ratio" is refused with a quantising method.
for m in none int8 fp8 onebit; do
  comp=', "compression": {"method": "'$m'", "throughput": 1e9}'
  [[ $m == none ]] && comp=""
  cat > "$T/q-$m.json" <<J
{"topology": {"generator": "switch", "gpus": 8, "gpu": "H100-SXM"},
 "model": {"kind": "transformer", "layers": 4, "hidden": 1024, "heads": 16, "seq_len": 512, "vocab": 32000},
 "parallel": {"dp": 8, "bucket_size": "1 GB"$comp},
 "global_batch": 16, "options": {"dp_algorithm": "ring"}}
J
  "$DTSIM" run "$T/q-$m.json" --json > "$T/rq-$m.json"
done
python3 - "$T" <<'PY'
import json, sys
T = sys.argv[1]
psi = json.load(open(f"{T}/mem.json"))["memory_per_gpu_bytes"]["params"] / 2
d = 8
r = {m: json.load(open(f"{T}/rq-{m}.json")) for m in ("none", "int8", "fp8", "onebit")}
for m, bits in (("none", 16), ("int8", 8), ("fp8", 8), ("onebit", 1)):
    got = r[m]["bytes_sent_per_gpu"]["dp"]
    want = 2 * (d - 1) / d * psi * bits / 8
    assert abs(got / want - 1) < 1e-9, (m, got, want)
for m in ("int8", "onebit"):
    extra = r[m]["breakdown_s"]["compute"] - r["none"]["breakdown_s"]["compute"]
    assert abs(extra - 2 * psi / 1e9) < 1e-9 + 1e-6 * extra, (m, extra, 2 * psi / 1e9)
print("d 8: bf16 %.4g MB, int8 %.4g MB, 1-bit %.4g MB per GPU" % tuple(
    r[m]["bytes_sent_per_gpu"]["dp"] / 1e6 for m in ("none", "int8", "onebit")))
PY
sed 's/"method": "int8"/"method": "int8", "ratio": 0.1/' "$T/q-int8.json" > "$T/badq.json"
set +e
"$DTSIM" run "$T/badq.json" 2> "$T/badq.err"; rcq=$?
set -e
[[ $rcq -eq 2 ]] && grep -q "parallel.compression.ratio: applies to top-k" "$T/badq.err" || fail "ratio with int8: $rcq $(cat "$T/badq.err")"

sed 's/"sparse_allreduce"/"sparse"/' "$T/c-4-sparse_allreduce.json" > "$T/bad.json"
set +e
"$DTSIM" run "$T/bad.json" 2> "$T/bad.err"; rc=$?
set -e
[[ $rc -eq 2 ]] && grep -q "parallel.compression.method" "$T/bad.err" || fail "bad method: $rc $(cat "$T/bad.err")"

# Top-k through a parameter server on 8 GPUs, 2 servers: (d-1)/d (r Ψ 6 + min(u Ψ 6, 2 Ψ)) bytes
# per GPU, u = 1 - (1-r)^d; refused (exit 2, located) without dp_algorithm "ps". PowerSGD rank
# 4: 1,444,352 bytes per GPU, the final LayerNorm's 2h = 2,048 uncompressed elements included
# (tests/unit/workload/test_compression_deployed.c derives it).
sed 's/"method": "sparse_allreduce"/"method": "ps"/; s/"dp_algorithm": "ring"/"dp_algorithm": "ps", "ps_servers": 2/' \
  "$T/c-8-sparse_allreduce.json" > "$T/ps.json"
sed 's/"compression": {[^}]*}/"compression": {"method": "powersgd", "rank": 4}/' "$T/c-8-sparse_allreduce.json" > "$T/lr.json"
"$DTSIM" run "$T/ps.json" --json > "$T/r-ps.json"
"$DTSIM" run "$T/lr.json" --json > "$T/r-lr.json"
python3 - "$T" <<'PY'
import json, sys
T = sys.argv[1]
psi = json.load(open(f"{T}/mem.json"))["memory_per_gpu_bytes"]["params"] / 2
d, r = 8, 0.01
u = 1 - (1 - r) ** d
got = json.load(open(f"{T}/r-ps.json"))["bytes_sent_per_gpu"]["dp"]
want = (d - 1) / d * (r * psi * 6 + min(u * psi * 6, 2 * psi))
assert abs(got / want - 1) < 1e-9, (got, want)
lr = json.load(open(f"{T}/r-lr.json"))["bytes_sent_per_gpu"]["dp"]
assert abs(lr - 1444352) < 1e-3, lr
print("d 8: top-k via 2 parameter servers %.4g MB, PowerSGD rank 4 %.4g MB per GPU" % (got / 1e6, lr / 1e6))
PY
sed 's/"dp_algorithm": "ps", "ps_servers": 2/"dp_algorithm": "ring"/' "$T/ps.json" > "$T/badps.json"
set +e
"$DTSIM" run "$T/badps.json" 2> "$T/badps.err"; rc=$?
set -e
[[ $rc -eq 2 ]] && grep -q "parallel.compression.method: \"ps\" pushes" "$T/badps.err" || fail "ps without dp_algorithm ps: $rc $(cat "$T/badps.err")"
echo ok
