#!/usr/bin/env bash
# test_compression.sh - top-k compression as all-gather and as sparse all-reduce: bytes sent.
# Pins down, on 4 and 8 GPUs with the ring algorithm (options.dp_algorithm "ring") and a model
# of Ψ parameters (from dtsim memory: 2 bytes each in bf16) at ratio r = 0.01, with (index,
# value) pairs of 4 + 2 bytes:
# - all-gather (the default, "method": "allgather"): each GPU sends (d-1) r Ψ (4 + 2) bytes of
#   DP traffic, growing with d;
# - sparse all-reduce ("method": "sparse_allreduce", density kept at r): 2 (d-1)/d r Ψ (4 + 2),
#   so the all-gather sends d/2 times more; both to 1e-9 of the closed form;
# - the selection compute grows by 2 (d-1)/d r Ψ / throughput (the re-selections), exactly;
# - a bad method is exit 2 naming parallel.compression.method.
# Leaves free: step times (the network model's).
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
 "global_batch": $((2 * d)), "options": {"dp_algorithm": "ring"}}
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
sed 's/"sparse_allreduce"/"sparse"/' "$T/c-4-sparse_allreduce.json" > "$T/bad.json"
set +e
"$DTSIM" run "$T/bad.json" 2> "$T/bad.err"; rc=$?
set -e
[[ $rc -eq 2 ]] && grep -q "parallel.compression.method" "$T/bad.err" || fail "bad method: $rc $(cat "$T/bad.err")"
echo ok
