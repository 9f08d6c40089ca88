#!/usr/bin/env python3
"""classes.py - the tables of docs/validation.md, "H100 MPT rows over size and sequence".

Each case's step is split by op class: `dtsim run CASE --write-trace` writes the step's op graph;
lane 0's compute ops are replayed on one GPU of the case's type (`dtsim run --trace`), once per
class with only that class's work kept (matmul FLOPs with their GEMM shapes, attention forward
and backward FLOPs at the kernel's curve, elementwise and optimizer bytes), so each class's time
is dtsim's own cost of it (an op's classes add up: docs/formats.md, `costs[i].flops`). "rest" is
dtsim's step less the sum: exposed communication and compute slowed by the collectives beside it.

    python3 docs/img/h100-mpt/classes.py table            # every H100 row: error and class shares
    python3 docs/img/h100-mpt/classes.py pairs            # the same rows on H100 and A100
    python3 docs/img/h100-mpt/classes.py detail ID...     # work, rate and time per class

Run from the repository root after building; dtsim is $DTSIM, else build/dtsim.
"""
import json
import os
import subprocess
import sys
import tempfile

DTSIM = os.environ.get("DTSIM", "build/dtsim")
SUITE = "tests/validation-h100-mpt"
GATED = "tests/validation"
CLASSES = ("matmul", "attention", "attention_bwd", "elementwise", "optimizer")
TMP = tempfile.mkdtemp()


def dtsim(*args):
    return subprocess.run([DTSIM, *args], capture_output=True, text=True, check=True).stdout


def manifest(d):
    return {c["id"]: (d, c) for c in json.load(open(os.path.join(d, "manifest.json")))["cases"]}


CASES = {**manifest(SUITE), **manifest(GATED), **manifest("tests/validation-a100")}


def topology(gpu):
    path = os.path.join(TMP, gpu + ".json")
    if not os.path.exists(path):
        dtsim("topo", "gen", "dgx", "--nodes", "1", "--gpus-per-node", "1", "--gpu", gpu, "-o", path)
    return path


def split(cid, classes=True, lane=0):
    """dtsim's step and measured figure for a case, and (classes) one lane's compute per class
    (lane 0 unless told: a pipeline's stages differ, docs/img/mcore-ci/classes.py asks for each)."""
    d, c = CASES[cid]
    sc = os.path.join(d, c["scenario"])
    gpu = json.load(open(sc))["topology"]["gpu"]
    trace = os.path.join(TMP, cid + ".trace.json")
    run = json.loads(dtsim("run", sc, "--json", "--write-trace", trace))
    measured = float(c["measured"].split()[0])
    r = {"id": cid, "gpu": gpu, "scenario": json.load(open(sc)), "step": run["step_time_s"],
         "measured": measured, "tflops": run["throughput"]["tflops_per_gpu"]}
    if not classes:
        return r
    tr = json.load(open(trace))
    ops = [o for o in tr["ops"] if o["lane"] == lane and o["kind"] == "compute"]
    work = dict.fromkeys(CLASSES, 0.0)
    for o in ops:
        cost = tr["costs"][o["cost"]]
        for k in CLASSES:
            work[k] += cost.get("flops", {}).get(k, 0) + cost.get("bytes", {}).get(k, 0)
    time = {}
    for k in CLASSES:
        if not work[k]:
            time[k] = 0.0
            continue
        t = {"format": "dtsim-trace", "version": 1, "gpus": 1, "precision": tr["precision"],
             "environment": {"network": "analytic"}, "gemm_sets": tr.get("gemm_sets", []), "costs": [], "ops": []}
        for o in ops:
            cost = tr["costs"][o["cost"]]
            kept = {"duration": 0}
            for kind in ("flops", "bytes"):
                if k in cost.get(kind, {}):
                    kept[kind] = {k: cost[kind][k]}
            if k == "matmul" and "gemms" in cost:
                kept["gemms"] = cost["gemms"]
            if "attention" in cost:
                kept["attention"] = cost["attention"]
            t["costs"].append(kept)
            t["ops"].append({"gpu": 0, "kind": "compute", "cost": len(t["costs"]) - 1})
        path = os.path.join(TMP, f"{cid}.{lane}.{k}.json")
        json.dump(t, open(path, "w"))
        time[k] = json.loads(dtsim("run", "--trace", path, "--topology", topology(gpu), "--json"))["step_time_s"]
    return {**r, "work": work, "time": time}


def pct(x):
    v = round(x * 100, 1)
    return f"{v:+.1f} %".replace("-", "−") if v else "0.0 %"


def share(x):
    return f"{x * 100:.1f} %"


def size(n):
    return f"{n:,}"


def plan(s):
    p, m = s["parallel"], s["model"]
    full = "full" if p.get("activation_checkpointing") == "full" else "none"
    return f"{p['dp']}; {full}; {size(m['seq_len'])}; {p['micro_batch_size']} × {p['microbatches']}"


def table():
    ids = [k for k in CASES if k.startswith("F-H100")] + ["P-H100-7b-s2048-g8", "P-H100-70b-s2048-g64"]
    print("| case | plan (GPUs; recompute; seq; micro batch × accumulation) | measured | dtsim | error "
          "| matmul | attention | elementwise | optimizer | rest | error, attention at half |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for cid in ids:
        r = split(cid)
        t, step = r["time"], r["step"]
        att = t["attention"] + t["attention_bwd"]
        rest = step - sum(t.values())
        name = cid + (" (gated)" if cid.startswith("P-") else "")
        print(f"| {name} | {plan(r['scenario'])} | {r['measured']:.4g} s | {step:.4g} s | {pct(r['measured'] / step - 1)} "
              f"| {share(t['matmul'] / step)} | {share(att / step)} | {share(t['elementwise'] / step)} "
              f"| {share(t['optimizer'] / step)} | {share(rest / step)} | {pct(r['measured'] / (step + att) - 1)} |")


PAIRS = [("125m", "F-H100-125m-s2048-g8", "F-A100-125m-s2048-g8"),
         ("350m", "F-H100-350m-s2048-g8", "F-A100-350m-s2048-g8"),
         ("760m", "F-H100-760m-s2048-g8", "F-A100-760m-s2048-g8"),
         ("1b", "F-H100-1b-s2048-g8", "F-A100-1b-s2048-g8"),
         ("7b", "P-H100-7b-s2048-g8", "P-A100-7b-s2048-g8"),
         ("13b", "F-H100-13b-s2048-g8", "F-A100-13b-s2048-g8"),
         ("1b", "F-H100-1b-s16384-g8", "F-A100-1b-s16384-g8"),
         ("3b", "F-H100-3b-s16384-g8", "F-A100-3b-s16384-g8"),
         ("13b", "F-H100-13b-s1024-g8", "F-A100-13b-s1024-g8"),
         ("13b", "F-H100-13b-s4096-g8", "F-A100-13b-s4096-g8"),
         ("7b", "F-H100-7b-s8192-g8", "F-A100-7b-s8192-g8"),
         ("30b", "F-H100-30b-s2048-g8", "P-A100-30b-s2048-g8"),
         ("70b", "F-H100-70b-s2048-g32", "F-A100-70b-s2048-g32"),
         ("70b", "P-H100-70b-s2048-g64", "P-A100-70b-s2048-g64")]


def pairs():
    print("| model | seq | recompute | H100 case | A100 case | H100 error | A100 error "
          "| speed-up measured | dtsim | dtsim / measured |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n, h, a in PAIRS:
        H, A = split(h, False), split(a, False)
        m = H["scenario"]["model"]
        full = "full" if H["scenario"]["parallel"].get("activation_checkpointing") == "full" else "none"
        eh, ea = H["measured"] / H["step"] - 1, A["measured"] / A["step"] - 1
        ours = H["tflops"] / A["tflops"]  # the same model FLOPs per token on both
        theirs = ours * (1 + ea) / (1 + eh)
        print(f"| {n} | {size(m['seq_len'])} | {full} | {h} | {a} | {pct(eh)} | {pct(ea)} "
              f"| {theirs:.2f} | {ours:.2f} | {ours / theirs:.3f} |")


def detail(ids):
    print("| case | class | work | dtsim's time (lane 0) | rate | of peak | share of dtsim's step |")
    print("|---|---|---|---|---|---|---|")
    peak = {"H100-SXM": (989.5e12, 3.35e12), "A100-SXM": (312e12, 2.039e12)}
    for cid in ids:
        r = split(cid)
        fl, bw = peak[r["gpu"]]
        for k in CLASSES:
            w, t = r["work"][k], r["time"][k]
            if not w:
                continue
            flops = k in ("matmul", "attention", "attention_bwd")
            work = f"{w / 1e12:,.1f} TFLOP" if flops else f"{w / 1e9:,.1f} GB"
            rate = f"{w / t / 1e12:,.1f} TFLOP/s" if flops else f"{w / t / 1e9:,.0f} GB/s"
            print(f"| {cid} | {k} | {work} | {t * 1e3:,.1f} ms | {rate} | {w / t / (fl if flops else bw):.3f} "
                  f"| {share(t / r['step'])} |")
        rest = r["step"] - sum(r["time"].values())
        print(f"| {cid} | rest | | {rest * 1e3:,.1f} ms | | | {share(rest / r['step'])} |")


if __name__ == "__main__":
    try:
        if sys.argv[1:2] == ["table"]:
            table()
        elif sys.argv[1:2] == ["pairs"]:
            pairs()
        elif sys.argv[1:2] == ["detail"] and sys.argv[2:]:
            detail(sys.argv[2:])
        else:
            sys.exit(__doc__)
    finally:
        subprocess.run(["rm", "-rf", TMP])
