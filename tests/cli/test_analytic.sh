#!/usr/bin/env bash
# test_analytic.sh - the analytic time end to end.
# Pins down: `dtsim collective --analytic-time --json` reports analytic_time_s (and plain --json
# does not: it is computed only on request), equal to the flow time_s within
# 0.5% for an uncontended hier and hd all-reduce on 2 DGX boxes (the rule's pick and forced), 1.5 % for the
# ring (8 rings per rail with reductions); the
# help names it; `dtsim run --network analytic` on a 4-box data-parallel step gives the flow
# step time within 1e-6 (the rule runs hier in both modes).
# Leaves free: wall_s, events (analytic mode has far fewer), contended cases.
set -euo pipefail
: "${DTSIM:?}" "${SRC:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$DTSIM" collective --help | grep -c "analytic_time_s" >/dev/null || fail "help lacks analytic_time_s"
for algo in rule ring hd; do
  "$DTSIM" collective --topology gen:dgx:nodes=2,gpus_per_node=8 --op allreduce --algo $algo \
    --size 256MiB --chunk 1GiB --analytic-time --json >"$tmp/$algo.json" || fail "$algo run failed"
done
"$DTSIM" collective --topology gen:dgx:nodes=2,gpus_per_node=8 --op allreduce --size 256MiB \
  --json >"$tmp/plain.json" || fail "plain run failed"
python3 - "$tmp" <<'PY'
import json, sys
assert "analytic_time_s" not in json.load(open(f"{sys.argv[1]}/plain.json"))
for algo in ("rule", "ring", "hd"):
    d = json.load(open(f"{sys.argv[1]}/{algo}.json"))
    assert d["algo"] == ("hier" if algo == "rule" else algo), d
    # the ring runs 8 rings of one chunk (one per rail) whose reductions stagger on each GPU's
    # reduction unit in the step model: 1.04 % here, within 1.5 % (docs/collectives.md, "Rings per rail")
    tol = 0.015 if algo == "ring" else 0.005
    assert abs(d["analytic_time_s"] - d["time_s"]) <= tol * d["time_s"], d
PY

cat >"$tmp/dp.json" <<'EOF2'
{"topology": {"generator": "dgx", "nodes": 4, "gpus_per_node": 8},
 "model": {"kind": "synthetic", "layers": 2, "forward_time": "1 ms", "backward_time": "2 ms",
           "params": 1e8},
 "parallel": {"bucket_size": "1 GB"}, "options": {"dp_algorithm": "rule"}}
EOF2
"$DTSIM" run "$tmp/dp.json" --json >"$tmp/flow.json" || fail "flow run failed"
"$DTSIM" run "$tmp/dp.json" --network analytic --json >"$tmp/an.json" || fail "analytic run failed"
python3 - "$tmp/flow.json" "$tmp/an.json" <<'PY'
import json, sys
fl, an = (json.load(open(p)) for p in sys.argv[1:])
assert fl["breakdown_s"]["comm_exposed"] > 1e-4, fl
assert abs(an["step_time_s"] - fl["step_time_s"]) <= 1e-6 * fl["step_time_s"], (an, fl)
assert an["events"] < fl["events"], (an["events"], fl["events"])
PY
echo ok
