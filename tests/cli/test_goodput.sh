#!/usr/bin/env bash
# test_goodput.sh - `dtsim goodput` end to end.
# Pins down: on a job whose parts fail exponentially and which checkpoints synchronously, the
# simulated goodput at the scenario's interval agrees with the renewal formula (recomputed here
# from the printed checkpoint, restart and MTBF figures) within its 95 % interval; Young's and
# Daly's intervals are the closed forms of the printed MTBF and checkpoint time; the best
# interval found is no worse than Daly's and within its confidence interval of it; tokens/day
# is goodput x tokens per step / step time x 86,400; the same seed prints the same numbers and
# another seed different ones; --plot writes the CSV (and the figure when gnuplot exists);
# the shipped goodput scenario runs; --help exits 0.
set -euo pipefail
: "${DTSIM:?}" "${SRC:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$DTSIM" goodput --help | grep -c -- "--horizon" >/dev/null || fail "goodput --help"

cat > "$tmp/g.json" <<'J'
{"topology": {"generator": "dgx", "nodes": 4, "gpus_per_node": 8},
 "model": {"kind": "synthetic", "layers": 8, "forward_time": "20 ms", "backward_time": "40 ms",
           "params": 2e9, "seq_len": 2048},
 "parallel": {"dp": 32, "micro_batch_size": 4},
 "failures": {"gpu": {"mtbf": "200 h"}, "host": {"mtbf": "100 h"}, "restart": "5 min"},
 "checkpoint": {"interval": {"steps": 200}},
 "storage": {"bandwidth": "10 GB/s", "host_bandwidth": "10 Gb/s", "latency": "2 s"}}
J
"$DTSIM" goodput "$tmp/g.json" --runs 400 --horizon 20d --json > "$tmp/a.json"
"$DTSIM" goodput "$tmp/g.json" --runs 400 --horizon 20d --json > "$tmp/b.json"
cmp -s "$tmp/a.json" "$tmp/b.json" || fail "same seed, different output"
"$DTSIM" goodput "$tmp/g.json" --runs 400 --horizon 20d --json --seed 9 > "$tmp/c.json"
cmp -s "$tmp/a.json" "$tmp/c.json" && fail "--seed changed nothing"
python3 - "$tmp/a.json" <<'PY' || fail "goodput figures"
import json, math, sys
r = json.load(open(sys.argv[1]))
ck, T = r["checkpoint"], r["step_time_s"]
# 32 GPUs of MTBF 200 h and 4 hosts of 100 h: the job fails every 1/(32/200 + 4/100) h = 5 h
M = 3600 / (32 / 200 + 4 / 100)
assert abs(r["system_mtbf_s"] - M) <= 1e-9 * M, r["system_mtbf_s"]
# 2e9 params x 14 B (bf16 weights, fp32 master + Adam m, v) over min(10 GB/s, 4 x 10 Gb/s)
d = 2 + 28e9 / 5e9
assert abs(ck["bytes"] - 28e9) < 1 and abs(ck["blocking_s"] - d) < 1e-6, ck
R = ck["restart_s"] + ck["read_s"]
assert abs(ck["read_s"] - d) < 1e-6 and ck["restart_s"] == 300
assert abs(r["young_s"] - math.sqrt(2 * d * M)) < 1e-6 * M
x = d / (2 * M)
assert abs(r["daly_s"] - (math.sqrt(2 * d * M) * (1 + math.sqrt(x) / 3 + x / 9) - d)) < 1e-6 * M
g = r["given"]
W = 200 * T
assert abs(g["interval_s"] - W) < 1e-9 * W
renewal = W / (M * math.exp(R / M) * math.expm1((W + d) / M))
assert abs(g["renewal"] - renewal) < 1e-9, (g["renewal"], renewal)
assert abs(g["goodput"] - renewal) <= g["goodput_ci95"], (g["goodput"], g["goodput_ci95"], renewal)
b, dl = r["best"], r["daly"]
assert b["goodput"] >= dl["goodput"] and b["goodput"] - dl["goodput"] <= b["goodput_ci95"], (b, dl)
tpd = g["goodput"] * r["tokens_per_step"] / T * 86400
assert abs(g["tokens_per_day"] - tpd) <= 1e-9 * tpd
assert r["tokens_per_step"] == 32 * 4 * 2048
for p in r["points"]:
    s = p["useful_s"] + p["lost_s"] + p["checkpoint_s"] + p["restart_s"]
    assert abs(s - r["horizon_s"]) <= 1e-6 * r["horizon_s"], p
PY
"$DTSIM" goodput "$tmp/g.json" --runs 50 --horizon 2d | grep -c "best - Daly" >/dev/null || fail "human output"
"$DTSIM" goodput "$tmp/g.json" --runs 50 --horizon 2d --no-search --json | python3 -c \
    'import json,sys; r=json.load(sys.stdin); assert "best" not in r and len(r["points"]) == 1' \
    || fail "--no-search"
"$DTSIM" goodput "$tmp/g.json" --runs 50 --horizon 2d --plot "$tmp/plot" --json > /dev/null
head -1 "$tmp/plot/goodput.csv" | grep -c '^steps,interval_s,goodput,goodput_ci95,renewal' >/dev/null || fail "goodput.csv"
if command -v gnuplot >/dev/null; then
    [[ -s $tmp/plot/goodput.png && -s $tmp/plot/goodput.gp ]] || fail "goodput figure"
fi
"$DTSIM" goodput "$SRC/scenarios/gpt3-175b-1024-goodput.json" --runs 100 --horizon 2d --json \
    | python3 -c 'import json,sys; r=json.load(sys.stdin); assert 0.9 < r["best"]["goodput"] < 1' \
    || fail "shipped goodput scenario"
echo PASS
