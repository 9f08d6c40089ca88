#!/usr/bin/env bash
# A sweep killed with SIGKILL part-way loses nothing: re-running the same command runs only the
# missing points, and results.csv/json are byte-identical to an uninterrupted run's.
set -euo pipefail
T=$(mktemp -d)
pid=
trap '[[ -n "$pid" ]] && kill -9 "$pid" 2>/dev/null; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# 40 points of a 32-GPU pipeline run with jitter (seeded): half a second with one thread.
cat > "$T/s.json" <<'EOF'
{
  "name": "resume",
  "topology": {"generator": "dgx", "nodes": 4, "gpus_per_node": 8, "gpu": "H100-SXM"},
  "model": {"kind": "transformer", "layers": 24, "hidden": 2048, "heads": 16, "seq_len": 2048,
            "vocab": 50257},
  "parallel": {"tp": 2, "pp": 4, "micro_batch_size": 1},
  "global_batch": 1024,
  "seed": 1,
  "jitter": {"distribution": "lognormal", "sigma": 0.05},
  "sweep": {"axes": [{"path": "seed", "range": [1, 40]}]}
}
EOF
total=40

"$DTSIM" sweep "$T/s.json" --out "$T/killed" --jobs 1 --no-progress > /dev/null 2>&1 &
pid=$!
for _ in $(seq 1 2000); do
  n=$( (find "$T/killed/points" -name '*.json' 2>/dev/null || true) | wc -l)
  ((n >= 3)) && break
  sleep 0.01
done
kill -9 "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
pid=
done_before=$(find "$T/killed/points" -name '*.json' | wc -l)
((done_before >= 3)) || fail "no points appeared before the kill"
((done_before < total)) || fail "the sweep finished before it could be killed ($done_before points)"
[[ ! -e "$T/killed/results.csv" ]] || fail "results.csv exists after a kill"

"$DTSIM" sweep "$T/s.json" --out "$T/killed" --jobs 1 --json > "$T/resume.json"
python3 - "$T/resume.json" "$done_before" "$total" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
before, total = int(sys.argv[2]), int(sys.argv[3])
# A record renamed into place just before the kill counts as done; none is lost or redone.
assert d["resumed"] >= before and d["resumed"] + d["ran"] == total, (d, before)
EOF

"$DTSIM" sweep "$T/s.json" --out "$T/whole" --jobs 2 --no-progress > /dev/null
cmp "$T/killed/results.csv" "$T/whole/results.csv" || fail "resumed CSV differs from an uninterrupted run"
cmp "$T/killed/results.json" "$T/whole/results.json" || fail "resumed JSON differs from an uninterrupted run"
[[ $(wc -l < "$T/whole/results.csv") -eq $((total + 1)) ]] || fail "row count"
echo "ok: killed after $done_before of $total points, resumed identically"
