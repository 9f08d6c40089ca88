#!/usr/bin/env python3
"""classes.py - the tables of docs/validation.md, "Megatron-LM CI runs (not gated)".

Each case of tests/validation-mcore-ci is split by op class as docs/img/h100-mpt/classes.py
splits the MPT rows (its `split`: the step's op graph from `dtsim run --write-trace`, one lane's
compute ops replayed on one GPU of the case's type once per class), but on the lane of every
pipeline stage, because a stage's work differs (the first holds the embedding, the last the
output layer and the loss): the table reports the stage with the most compute, the one the
step waits for.

    python3 docs/img/mcore-ci/classes.py table     # error, the busiest stage's classes
    python3 docs/img/mcore-ci/classes.py pairs     # H100 against A100 on the same plan

Run from the repository root after building; dtsim is $DTSIM, else build/dtsim.
"""
import importlib.util
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("mpt_classes", os.path.join(HERE, "..", "h100-mpt", "classes.py"))
mpt = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mpt)
SUITE = "tests/validation-mcore-ci"
mpt.CASES.update(mpt.manifest(SUITE))
IDS = [c["id"] for c in json.load(open(os.path.join(SUITE, "manifest.json")))["cases"]]
PEAK = {"H100-SXM": (989.5e12, 3.35e12), "A100-SXM": (312e12, 2.039e12)}


def busiest(cid):
    """The case split on the lane of each pipeline stage of data-parallel rank 0 (dtsim's default
    placement dp,pp,tp: stage i's first GPU is i x tp); the stage with the most class time."""
    sc = mpt.split(cid, False)["scenario"]["parallel"]
    lanes = [i * sc.get("tp", 1) for i in range(sc.get("pp", 1))]
    rs = [(mpt.split(cid, True, lane), lane) for lane in lanes]
    r, lane = max(rs, key=lambda x: sum(x[0]["time"].values()))
    return {**r, "stage": lanes.index(lane), "stages": len(lanes)}


def table():
    print("| case | GPU | plan (8 GPUs; micro batch × microbatches) | measured | dtsim | error | stage | matmul "
          "| attention | elementwise | optimizer | rest |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for cid in IDS:
        r = busiest(cid)
        t, step = r["time"], r["step"]
        p = r["scenario"]["parallel"]
        att = t["attention"] + t["attention_bwd"]
        rest = step - sum(t.values())
        plan = f"tp {p['tp']} × pp {p['pp']} × dp {p['dp']}, {p['micro_batch_size']} × {p['microbatches']}"
        if p.get("virtual_stages", 1) > 1:
            plan += f", v {p['virtual_stages']}"
        stage = f"{r['stage'] + 1} of {r['stages']}"
        print(f"| {cid} | {r['gpu']} | {plan} | {r['measured']:.4g} s | {step:.4g} s | {mpt.pct(r['measured'] / step - 1)} "
              f"| {stage} | {mpt.share(t['matmul'] / step)} | {mpt.share(att / step)} "
              f"| {mpt.share(t['elementwise'] / step)} | {mpt.share(t['optimizer'] / step)} | {mpt.share(rest / step)} |")


def pairs():
    """Per pair: the measured and dtsim's H100/A100 speed-up, and per class dtsim's own H100/A100
    time ratio on the busiest stage, and the factor by which that class alone would have to run
    slower on the H100 for the H100 case to show the A100 case's error."""
    print("| plan | speed-up measured | dtsim | dtsim / measured | class | A100 time | H100 time | A100 / H100 "
          "| H100 class slower by, for the A100's error |")
    print("|---|---|---|---|---|---|---|---|---|")
    for cid in IDS:
        if not cid.endswith("-H100"):
            continue
        H, A = busiest(cid), busiest(cid[:-4] + "A100")
        theirs, ours = A["measured"] / H["measured"], A["step"] / H["step"]
        need = H["measured"] * A["step"] / A["measured"]  # dtsim's H100 step at the A100's error
        first = True
        for k in ("matmul", "attention", "attention_bwd", "elementwise", "optimizer"):
            th, ta = H["time"][k], A["time"][k]
            if not th:
                continue
            lead = (f"| {cid[6:-5]} | {theirs:.3f} | {ours:.3f} | {ours / theirs:.3f} " if first else "| | | | ")
            first = False
            print(f"{lead}| {k} | {ta * 1e3:,.1f} ms | {th * 1e3:,.1f} ms | {ta / th:.2f} "
                  f"| {(th + need - H['step']) / th:.2f} |")


if __name__ == "__main__":
    try:
        if sys.argv[1:2] == ["table"]:
            table()
        elif sys.argv[1:2] == ["pairs"]:
            pairs()
        else:
            sys.exit(__doc__)
    finally:
        subprocess.run(["rm", "-rf", mpt.TMP])
