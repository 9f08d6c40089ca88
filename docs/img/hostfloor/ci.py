#!/usr/bin/env python3
"""ci.py - the tables of docs/validation.md, "Host time of the tiny Megatron-LM CI models".

NVIDIA/Megatron-LM's functional tests train a 12-layer GPT (hidden 512, 8 heads, sequence 1,024,
micro batch 4, global batch 32, GPT-2 vocabulary) on one 8-GPU box and store the measured
`iteration-time` of every step in golden-value files. Each row below is one such file: the
median of its steady steps (the warm-up steps and, for the checkpoint-resume test, the steps
around its save and reload left out), transcribed here with the repository path and the stored
commit it was read at. dtsim's step for the same plan comes from a scenario written by this
script (`scenario()`), on the preset of the file's GPU.

    python3 docs/img/hostfloor/ci.py table      # measured step, dtsim's step, excess per layer pass
    python3 docs/img/hostfloor/ci.py fit        # least-squares host time per layer pass, per GPU
    python3 docs/img/hostfloor/ci.py pair       # one recomputed forward per layer, measured and dtsim
    python3 docs/img/hostfloor/ci.py whatif     # the gated M cases under that host time (slow, ~2 min)

n, the layer passes on a stage's critical path when the host sets the pace: a stage of L/p
layers runs each microbatch's forward and backward once, and a 1F1B pipeline's critical path is
m + p - 1 microbatch slots (the interleaved schedule's m + (p - 1)/v): n = (L/p)(m + p - 1).

Run from the repository root after building; dtsim is $DTSIM, else build/dtsim.
"""
import json
import os
import subprocess
import sys
import tempfile

DTSIM = os.environ.get("DTSIM", "build/dtsim")
TMP = tempfile.mkdtemp()
REPO = "NVIDIA/Megatron-LM"
T = "tests/functional_tests/test_cases/gpt/"

# id, plan (tp, pp, dp, microbatches, virtual stages, ZeRO, attention, overlap, impl[, recompute]),
# then per GPU platform: (golden-value file, commit read, median step in ms, steps used)
CASES = [
    ("te-tp1-pp1", (1, 1, 8, 1, 1, 1, "unfused", False, "TE"),
     "gpt3_mcore_te_tp1_pp1_dist_optimizer_no_mmap_bin_files/", [
         ("H100-SXM", "dgx_h100", "golden_values_dev_dgx_h100.json", "073db759", 59.6, "4-50"),
         ("H100-SXM", "dgxh100_coreweave", "golden_values_dev_dgxh100_coreweave.json", "ed51768b", 63.1, "4-50"),
         ("A100-SXM", "dgx_a100 (lts)", "golden_values_lts_dgx_a100.json", "16a985fc", 86.8, "4-50")]),
    ("te-tp4-pp1", (4, 1, 2, 4, 1, 1, "unfused", True, "TE"),
     "gpt3_mcore_te_tp4_pp1_dist_optimizer_overlap_grad_reduce_param_gather/", [
         ("H100-SXM", "dgx_h100", "golden_values_dev_dgx_h100.json", "08165aba", 227.8, "4-50"),
         ("H100-SXM", "dgxh100_eos", "golden_values_dev_dgxh100_eos.json", "2c7f4d68", 248.2, "4-50"),
         ("H100-SXM", "dgxh100_coreweave", "golden_values_dev_dgxh100_coreweave.json", "b2316a90", 216.0, "4-50"),
         ("A100-SXM", "dgx_a100 (lts)", "golden_values_lts_dgx_a100.json", "06ecac39", 319.4, "4-50")]),
    ("te-tp2-pp2", (2, 2, 2, 4, 1, 0, "flash", False, "TE"),
     "gpt3_mcore_te_tp2_pp2_resume_torch_dist/", [
         ("H100-SXM", "dgx_h100", "golden_values_dev_dgx_h100.json", "08165aba", 135.0, "4-50, 56-100"),
         ("A100-SXM", "dgx_a100 (lts)", "golden_values_lts_dgx_a100.json", "1bc066da", 189.5, "9-50, 57-100")]),
    ("te-tp1-pp4-v3", (1, 4, 2, 4, 3, 0, "unfused", False, "TE"),
     "gpt3_mcore_te_tp1_pp4_vp1/", [
         ("H100-SXM", "dgx_h100", "golden_values_dev_dgx_h100.json", "08165aba", 95.1, "4-50"),
         ("A100-SXM", "dgx_a100 (lts)", "golden_values_lts_dgx_a100.json", "346696ae", 135.7, "4-50")]),
    ("local-tp1-pp2", (1, 2, 4, 2, 1, 0, "unfused", False, "local"),
     "gpt3_345m_nightly_dgx_a100_1N8G_mcore_tp1_pp2/", [
         ("H100-SXM", "dgx_h100", "golden_values_dev_dgx_h100.json", "6910259b", 86.9, "10-50 by 5")]),
    ("local-tp1-pp4", (1, 4, 2, 4, 1, 0, "unfused", False, "local"),
     "gpt3_345m_nightly_dgx_a100_1N8G_mcore_tp1_pp4/", [
         ("H100-SXM", "dgx_h100", "golden_values_dev_dgx_h100.json", "062fa08e", 123.0, "3-50")]),
]


# A pair of the same plan (TE, tp 1, pp 1, attention backend left to Transformer Engine) with
# and without full recompute of every layer (--recompute-granularity full --recompute-method
# uniform --recompute-num-layers 1); the plain one also runs the distributed optimizer and the
# asynchronous checkpoint worker. Both checkpoint-resume tests: steps 4-100 without 51-56.
PAIR = [
    ("te-tp1-pp1-dist-opt", (1, 1, 8, 1, 1, 1, "flash", False, "TE"),
     "gpt3_mcore_te_tp1_pp1_resume_torch_dist_dist_optimizer/",
     ("H100-SXM", "dgx_h100", "golden_values_dev_dgx_h100.json", "3c13e613", 57.7, "4-50, 57-100")),
    ("te-tp1-pp1-recompute", (1, 1, 8, 1, 1, 0, "flash", False, "TE", "full"),
     "gpt3_mcore_te_tp1_pp1_resume_torch_dist_uniform_full_recompute/",
     ("H100-SXM", "dgx_h100", "golden_values_dev_dgx_h100.json", "08165aba", 79.6, "4-50, 57-100")),
]


def dtsim(*args):
    return subprocess.run([DTSIM, *args], capture_output=True, text=True, check=True).stdout


def scenario(name, plan, gpu):
    """The CI run as a dtsim scenario: one DGX box, Megatron's vocabulary padding (50,257 up to a
    multiple of 128 x tp), tied embeddings (the GPT default), the distributed optimizer as ZeRO-1,
    and --no-gradient-accumulation-fusion, which every one of these configs runs."""
    tp, pp, dp, m, v, zero, attn, overlap, _ = plan[:9]
    q = 128 * tp
    par = {"tp": tp, "pp": pp, "dp": dp, "micro_batch_size": 4, "microbatches": m, "zero": zero}
    if v > 1:
        par.update({"schedule": "interleaved", "virtual_stages": v})
    if len(plan) > 9:
        par["activation_checkpointing"] = plan[9]
    fw = {"preset": "megatron", "gradient_accumulation_fusion": False}
    if overlap:
        fw.update({"overlap_grad_reduce": True, "overlap_param_gather": True})
    return {"name": name,
            "topology": {"generator": "dgx", "nodes": 1, "gpus_per_node": 8, "gpu": gpu,
                         "nic": "400 Gb/s" if gpu.startswith("H100") else "200 Gb/s"},
            "model": {"kind": "transformer", "name": "ci-gpt-12l-h512", "layers": 12, "hidden": 512,
                      "heads": 8, "seq_len": 1024, "vocab": (50257 + q - 1) // q * q,
                      "attention": attn, "tied_embeddings": True},
            "parallel": par, "framework": fw, "precision": "bf16", "optimizer": "adam"}


def passes(plan):
    tp, pp, dp, m, v, *_ = plan
    return 12 / pp * (m + (pp - 1) / v)


def rows():
    out = []
    for cid, plan, path, runs in CASES:
        steps = {}
        for gpu, platform, golden, commit, measured, used in runs:
            if gpu not in steps:
                p = os.path.join(TMP, f"{cid}-{gpu}.json")
                json.dump(scenario(cid, plan, gpu), open(p, "w"))
                steps[gpu] = json.loads(dtsim("run", p, "--json"))["step_time_s"] * 1e3
            out.append((cid, plan, path, gpu, platform, golden, commit, measured, used, steps[gpu]))
    return out


def table():
    print("| case | platform | plan | measured step | dtsim step | n | (measured - dtsim)/n | measured/n |")
    print("|---|---|---|---|---|---|---|---|")
    for cid, plan, path, gpu, platform, golden, commit, measured, used, step in rows():
        tp, pp, dp, m, v, zero, attn, overlap, impl = plan
        desc = f"{impl}, tp {tp} pp {pp}{f' v {v}' if v > 1 else ''} dp {dp}, m {m}, {attn}"
        n = passes(plan)
        print(f"| {cid} | {platform} | {desc} | {measured:.1f} ms | {step:.1f} ms | {n:g} | "
              f"{(measured - step) / n:.2f} ms | {measured / n:.2f} ms |")


def lsq(xs, ys):
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    h = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return my - h * mx, h


def fit():
    """Two readings of the same rows (the DGX H100 and DGX A100 platforms, Transformer Engine
    rows; then with the local rows): the host and the GPU take turns (measured - dtsim = C + n H)
    or the host alone sets the pace (measured = C + n H). C is the per-step host time."""
    rs = rows()
    print("| platform | rows | reading | C | H per layer pass | residuals |")
    print("|---|---|---|---|---|---|")
    for platform in ("dgx_h100", "dgx_a100 (lts)"):
        for label, keep in (("TE", lambda r: r[1][8] == "TE"), ("TE + local", lambda r: True)):
            sel = [r for r in rs if r[4] == platform and keep(r)]
            if label != "TE" and all(r[1][8] == "TE" for r in sel):
                continue
            n = [passes(r[1]) for r in sel]
            for reading, y in (("sum", [r[7] - r[9] for r in sel]), ("max", [r[7] for r in sel])):
                c, h = lsq(n, y)
                res = ", ".join(f"{yy - c - h * x:+.1f}" for x, yy in zip(n, y))
                print(f"| {platform} | {label} ({len(sel)}) | {reading} | {c:.1f} ms | {h:.2f} ms | {res} |")


def pair():
    """The recompute pair: what one more forward of each of the 12 layers costs, measured and in
    dtsim, per layer."""
    print("| case | measured step | dtsim step |")
    print("|---|---|---|")
    got = []
    for cid, plan, path, (gpu, platform, golden, commit, measured, used) in PAIR:
        p = os.path.join(TMP, f"{cid}.json")
        json.dump(scenario(cid, plan, gpu), open(p, "w"))
        step = json.loads(dtsim("run", p, "--json"))["step_time_s"] * 1e3
        got.append((measured, step))
        print(f"| {cid} | {measured:.1f} ms | {step:.1f} ms |")
    dm, dd = got[1][0] - got[0][0], got[1][1] - got[0][1]
    print(f"| recompute less plain, per layer | {dm / 12:.2f} ms | {dd / 12:.2f} ms |")


def layer_ops(sc_path):
    """dtsim's forward and backward time of one layer (the shortest layer op on GPU 0's compute
    track of the run's timeline: the first layer's carries the embedding, the last the logits, and
    the first microbatch's forward runs beside the parameter all-gathers), and its TFLOP/s."""
    tl = os.path.join(TMP, "timeline.json")
    run = json.loads(dtsim("run", sc_path, "--json", "--timeline", tl))
    t = json.load(open(tl))
    best = {}
    for e in t["traceEvents"]:
        if (e.get("ph") == "X" and e.get("pid") == 1 and e.get("tid") == 256
                and e["name"] in ("forward", "backward") and "layer" in e.get("args", {})):
            best[e["name"]] = min(best.get(e["name"], e["dur"]), e["dur"])
    return best["forward"] / 1e3, best["backward"] / 1e3, run


def with_floor(sc, fwd_ms, bwd_ms, name):
    """The scenario sc with dtsim's host floor set (framework.host_forward_per_layer and
    host_backward_per_layer, in seconds), written under TMP; its path."""
    sc = json.loads(json.dumps(sc))
    fw = sc.get("framework", {})
    fw = dict(fw) if isinstance(fw, dict) else {"preset": fw}
    fw.update({"host_forward_per_layer": fwd_ms * 1e-3, "host_backward_per_layer": bwd_ms * 1e-3})
    sc["framework"] = fw
    p = os.path.join(TMP, name)
    json.dump(sc, open(p, "w"))
    return p


def whatif():
    """The gated H100 Megatron cases' layer ops against a host floor of h ms per layer pass (h the
    mean of (measured - dtsim)/n over the DGX H100 Transformer Engine rows of the table), split
    1:2 (forward:backward, as the GPU work splits) or 1:1. By hand: the step grows by at most n
    (m + p - 1 slots of L/p layers) times the layer's growth: longer compute can only hide more
    of the communication beside it. The dtsim columns run the same floor with the option set
    (framework.host_*_per_layer): a demonstration of the option, not a validation, since h comes
    from the CI rows above, not from these runs. The error is dtsim's TFLOP/s against the
    measured, as in the table."""
    sel = [(r[7] - r[9]) / passes(r[1]) for r in rows() if r[4] == "dgx_h100" and r[1][8] == "TE"]
    h = sum(sel) / len(sel)
    man = json.load(open("tests/validation/manifest.json"))["cases"]
    print(f"| case (h = {h:.2f} ms) | layer forward | layer backward | error now | at 1:2 | at 1:1 "
          "| dtsim at 1:2 | dtsim at 1:1 |")
    print("|---|---|---|---|---|---|---|---|")
    for c in man:
        if "scenario" not in c:
            continue
        path = os.path.join("tests/validation", c["scenario"])
        sc = json.load(open(path))
        fw = sc.get("framework", {})
        preset = fw.get("preset") if isinstance(fw, dict) else fw
        if preset != "megatron" or sc.get("topology", {}).get("gpu") != "H100-SXM":
            continue
        f, b, run = layer_ops(path)
        p = sc["parallel"]
        n = sc["model"]["layers"] / p.get("pp", 1) * (p.get("microbatches", 1) + p.get("pp", 1) - 1)
        step, tf = run["step_time_s"] * 1e3, run["throughput"]["tflops_per_gpu"]
        meas = float(c["measured"].split()[0])
        cells = []
        for sf in (1 / 3, 1 / 2):
            g = n * (max(f, h * sf) - f + max(b, h * (1 - sf)) - b)
            cells.append(f"+{g:.0f} ms, {100 * (tf * step / (step + g) / meas - 1):+.1f} %")
        for sf in (1 / 3, 1 / 2):
            hp = with_floor(sc, h * sf, h * (1 - sf), f"{c['id']}-host.json")
            r = json.loads(dtsim("run", hp, "--json"))
            g = r["step_time_s"] * 1e3 - step
            cells.append(f"+{g:.0f} ms, {100 * (r['throughput']['tflops_per_gpu'] / meas - 1):+.1f} %")
        print(f"| {c['id']} | {f:.2f} ms | {b:.2f} ms | {100 * (tf / meas - 1):+.1f} % | "
              + " | ".join(cells) + " |")


if __name__ == "__main__":
    {"table": table, "fit": fit, "pair": pair, "whatif": whatif}[sys.argv[1] if len(sys.argv) > 1 else "table"]()
