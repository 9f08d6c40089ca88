#!/usr/bin/env python3
"""Phase sensitivity of the step: how far it moves for tiny physical perturbations.

A real GPU cluster's step time is a continuous function of the NIC's bandwidth, the HBM's
bandwidth or the vocabulary size at this scale: a 0.01 % faster NIC cannot make a step 2 %
slower. This script runs a validation case with such perturbations and prints the spread of the
step (max - min over the variants, relative to the unperturbed step) beside the perturbation's
own size, so that a discontinuity in the model (an event that lands on one side or the other of a
boundary) shows as a spread far larger than the inputs moved.

Perturbations (each one alone, the rest of the scenario unchanged):
  nic  x (1 + e)   the DGX generator's per-GPU NIC bandwidth (topology.nic)
  hbm  x (1 + e)   the GPU's HBM bandwidth (topology.gpu becomes {"preset", "hbm_bw"})
  vocab + k        a few more vocabulary entries (kept a multiple of tp)
with e in {-1e-3, -1e-4, +1e-4, +1e-3} and k in {tp, 2 tp, 8 tp}.

usage: scripts/phase_spread.py [--dtsim build/dtsim] [--network flow|analytic] [--no-contention]
                               [--ring-model steps|fluid|auto|exact]
                               [CASE.json ...]
(default: M-70B, M-32B, M-177B and N-llama2-7b-128k of the two validation suites). Prints one
line per variant and a summary per case; --json for one document. Runs dtsim sequentially.
"""
import argparse
import copy
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_CASES = [
    "tests/validation/M-70B.json",
    "tests/validation/M-32B.json",
    "tests/validation/M-177B.json",
    "tests/validation-ep-cp/N-llama2-7b-128k.json",
]
# The presets' HBM bandwidths, as models/gpu/gpu.c's presets table has them (keep in step).
PRESET_HBM = {"A100-SXM": 2.039e12, "A100-SXM-40GB": 1.555e12, "H100-SXM": 3.35e12, "H200-SXM": 4.8e12, "B200": 7.7e12}
EPS = [-1e-3, -1e-4, 1e-4, 1e-3]


def nic_bps(text):
    m = re.fullmatch(r"\s*([0-9.]+)\s*Gb/s\s*", text)
    if not m:
        raise SystemExit(f"unsupported nic '{text}' (expected 'N Gb/s')")
    return float(m.group(1))


def variants(sc):
    yield "base", sc
    topo = sc["topology"]
    if "nic" in topo:
        g = nic_bps(topo["nic"])
        for e in EPS:
            v = copy.deepcopy(sc)
            v["topology"]["nic"] = f"{g * (1 + e):.9g} Gb/s"
            yield f"nic x(1{e:+g})", v
    gpu = topo.get("gpu")
    if isinstance(gpu, str) and gpu in PRESET_HBM:
        for e in EPS:
            v = copy.deepcopy(sc)
            v["topology"]["gpu"] = {"preset": gpu, "hbm_bw": f"{PRESET_HBM[gpu] * (1 + e) / 1e9:.9g} GB/s"}
            yield f"hbm x(1{e:+g})", v
    tp = sc.get("parallel", {}).get("tp", 1)
    for k in (1, 2, 8):
        v = copy.deepcopy(sc)
        v["model"]["vocab"] = sc["model"]["vocab"] + k * tp
        yield f"vocab +{k * tp}", v


def run(dtsim, sc, network):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(sc, f)
        path = f.name
    try:
        cmd = [dtsim, "run", path, "--json", "--links", "0"]
        if network:
            cmd += ["--network", network]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(path)
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="*")
    ap.add_argument("--dtsim", default=os.path.join(ROOT, "build", "dtsim"))
    ap.add_argument("--network", choices=["flow", "analytic"])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--ring-model", choices=["steps", "fluid", "auto", "exact"],
                    help="set options.ring_model in every variant")
    ap.add_argument("--no-contention", action="store_true",
                    help='run with "options": {"comm_contention": false} (separates the contention model from the network)')
    a = ap.parse_args()
    cases = a.cases or [os.path.join(ROOT, c) for c in DEFAULT_CASES]
    doc = []
    for path in cases:
        with open(path) as f:
            sc = json.load(f)
        if a.no_contention:
            sc.setdefault("options", {})["comm_contention"] = False
        if a.ring_model:
            sc.setdefault("options", {})["ring_model"] = a.ring_model
        rows = []
        for name, v in variants(sc):
            r = run(a.dtsim, v, a.network)
            rows.append({"variant": name, "step_s": r["step_time_s"],
                         "exposed_s": r["breakdown_s"].get("comm_exposed"),
                         "critical_gpu": r["critical_gpu"]})
            if not a.json:
                base = rows[0]["step_s"]
                print(f"{os.path.basename(path):28s} {name:16s} step {r['step_time_s']:.6f} s "
                      f"({(r['step_time_s'] / base - 1) * 100:+.3f} %) critical GPU {r['critical_gpu']}",
                      flush=True)
        steps = [x["step_s"] for x in rows]
        base = steps[0]
        spread = (max(steps) - min(steps)) / base * 100
        summ = {"case": os.path.basename(path), "base_s": base, "min_s": min(steps), "max_s": max(steps),
                "spread_pct": spread, "variants": rows}
        doc.append(summ)
        if not a.json:
            print(f"{os.path.basename(path):28s} spread {spread:.3f} % of {base:.4f} s "
                  f"(min {min(steps):.4f}, max {max(steps):.4f}; inputs moved by at most 0.1 %)\n",
                  flush=True)
    if a.json:
        json.dump(doc, sys.stdout, indent=1)
        print()


if __name__ == "__main__":
    main()
