#!/usr/bin/env bash
# pairs.sh - the pair table of docs/validation.md, "A100 40 GB against 80 GB": for each pair of
# tests/validation-a100-40 (the same MPT run on A100 40 GB and 80 GB, each at its own row's micro
# batch), the measured 80/40 throughput ratio against dtsim's, and the HBM-bound share of dtsim's
# step: lane 0's compute ops in the written trace, each cost's elementwise and optimizer bytes
# (where bytes bound them, not FLOPs), its matmul bytes and any GEMM of its set that its bytes
# bound, timed at the preset's HBM rate x memory_eff 0.8 (models/gpu/gpu.c), over the step.
# Also dtsim's ratio with the 40 GB row on the 80 GB preset (B: what the micro batch alone moves)
# and with the attention classes at about half the FA2 rate (the runs predate FA2).
# Run from the repository root after building: bash docs/img/a100-40/pairs.sh
set -euo pipefail
dtsim=${DTSIM:-build/dtsim}
dir=tests/validation-a100-40
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$dtsim" "$dir" "$tmp" <<'PY'
import copy, json, re, subprocess, sys
dtsim, d, tmp = sys.argv[1:4]
R = 2039e9 / 1555e9                          # 80 GB over 40 GB HBM bandwidth (datasheet)
HBM = {"A100-SXM": 2039e9, "A100-SXM-40GB": 1555e9}
PEAK, EFF_MEM, EFF_EW, EFF_MM = 312e12, 0.8, 0.5, 0.7   # the presets' bf16 peak and defaults
man = {c["id"]: c for c in json.load(open(f"{d}/manifest.json"))["cases"]}

def run(sc, name, trace=False):
    p = f"{tmp}/{name}.json"
    json.dump(sc, open(p, "w"))
    cmd = [dtsim, "run", p, "--json"] + (["--write-trace", f"{tmp}/{name}.trace.json"] if trace else [])
    return json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)["step_time_s"]

def hbm_time(name, gpu):
    t = json.load(open(f"{tmp}/{name}.trace.json"))
    bw = HBM[gpu] * EFF_MEM
    uses = {}
    for op in t["ops"]:
        if op.get("lane") == 0 and op["kind"] == "compute" and "cost" in op:
            uses[op["cost"]] = uses.get(op["cost"], 0) + 1
    x = 0.0
    for i, n in uses.items():
        c = t["costs"][i]
        fl, by = c.get("flops", {}), c.get("bytes", {})
        for cls in ("elementwise", "optimizer"):
            if by.get(cls, 0) / bw > fl.get(cls, 0) / (PEAK * EFF_EW):
                x += n * by[cls] / bw
        x += n * by.get("matmul", 0) / bw
        for g in t["gemm_sets"][c["gemms"]] if "gemms" in c else []:
            f = 2 * g["m"] * g["n"] * g["k"]
            b = 2 * (g["m"] * g["k"] + g["k"] * g["n"] + g["m"] * g["n"])
            if b / bw > f / (PEAK * EFF_MM):
                x += n * g["count"] * b / bw
    return x

def tokens(sc):
    p = sc["parallel"]
    return p["dp"] * p["micro_batch_size"] * p["microbatches"] * sc["model"]["seq_len"]

def tps(cid):
    return int(re.search(r"global batch \d+, (\d+) tokens/s", " ".join(man[cid]["assumptions"])).group(1))

def half_attention(sc):
    sc = copy.deepcopy(sc)
    sc["topology"]["gpu"] = {"preset": sc["topology"]["gpu"],
                             "efficiency": {"attention": 0.240, "attention_bwd": 0.191}}
    return sc

print("| pair (model, seq, GPUs) | micro batch × acc. 40 / 80 | tokens/s 40 / 80 | measured 80/40 | dtsim 80/40 | measured / dtsim | dtsim's HBM-bound share 40 / 80 | B | dtsim 80/40, half attention |")
print("|---|---|---|---|---|---|---|---|---|")
for a40 in [k for k in man if k.startswith("F40-")]:
    a80 = "F80-" + a40[4:]
    s40, s80 = (json.load(open(f"{d}/{man[k]['scenario']}")) for k in (a40, a80))
    n40, n80 = tokens(s40), tokens(s80)
    p40, p80 = run(s40, a40, True), run(s80, a80, True)
    x = copy.deepcopy(s40)
    x["topology"]["gpu"] = "A100-SXM"
    px = run(x, a40 + "-on80")
    q40, q80 = run(half_attention(s40), a40 + "-h"), run(half_attention(s80), a80 + "-h")
    m = tps(a80) / tps(a40)
    dt = (p40 / n40) / (p80 / n80)
    b = (px / n40) / (p80 / n80)
    h40 = hbm_time(a40, "A100-SXM-40GB") / p40
    h80 = hbm_time(a80, "A100-SXM") / p80
    mb = lambda s: f"{s['parallel']['micro_batch_size']} × {s['parallel']['microbatches']}"
    size, seq, g = a40[4:].split("-")
    print(f"| {size}, {seq[1:]}, {g[1:]} | {mb(s40)} / {mb(s80)} | {tps(a40):,} / {tps(a80):,} | "
          f"{m:.3f} | {dt:.3f} | {m / dt:.3f} | {100 * h40:.1f} / {100 * h80:.1f} % | {b:.3f} | "
          f"{(q40 / n40) / (q80 / n80):.3f} |")
PY
