#!/usr/bin/env python3
"""check.py - the attention-dropout derivation of docs/workloads.md ("Attention dropout inside a
fused kernel") and its sizes in docs/validation.md ("Dropout").

The cost of dropout inside a fused attention kernel is counted in integer instructions per score
element (FlashAttention-2's philox.cuh and dropout.h: a 7-round Philox4x32 call per 16 elements,
the mask's compare and select) and turned into clocks per SM at the integer pipe's rate. The
kernel without dropout takes 4d/(F*eff) clocks per element forward, 10d/(F*eff) backward, so in
series the dropout adds n*F*eff/(4d*R) (forward) of the pass's time; overlapped, nothing.

    python3 docs/img/dropout/check.py count    # the instruction tally, per element
    python3 docs/img/dropout/check.py check    # series bound against the measured GB200 and GB10 rows
    python3 docs/img/dropout/check.py whatif   # the gated M cases at the H100's bounds (runs dtsim, ~5 s)

Run from the repository root after building; dtsim is $DTSIM, else build/dtsim.
"""
import json
import os
import subprocess
import sys
import tempfile

DTSIM = os.environ.get("DTSIM", "build/dtsim")

# One Philox call (philox.cuh: six rounds with key bumps, then a last round): per round two
# mul.wide.u32 (IMAD.WIDE, one or two integer-pipe results) and two three-input xors (LOP3);
# six pairs of key additions, which the compiler may hoist (the seed is uniform and the keys do
# not depend on the counter); one counter increment. 16 elements per call.
ROUNDS = 7
PHILOX = (ROUNDS * 2 * 1 + ROUNDS * 2 + 0 + 1, ROUNDS * 2 * 2 + ROUNDS * 2 + 6 * 2 + 1)
# Forward, 16-bit P (dropout.h's packed path), per 16 elements: 8 PRMT (bytes to half-words),
# 8 set.le.u32.f16x2, 8 AND.
APPLY_FWD = 24
# Backward (encode_dropout_in_sign_bit): per element a byte extract and a compare, the sign
# select, and the select in dS = P * (dP - D) (pointwise_mult's p >= 0); the relu on the P fed
# to dV rides on the conversion the kernel makes anyway.
APPLY_BWD = 4 * 16


def per_element():
    f = tuple((p + APPLY_FWD) / 16 for p in PHILOX)
    b = tuple((p + APPLY_BWD) / 16 for p in PHILOX)
    return f, b


R_INT = 64  # 32-bit integer results per clock per SM, cc 8.0 / 9.0 (CUDA C Programming Guide)

# GB10 (cc 12.1, DGX Spark): 48 SMs (6,144 CUDA cores), 31 TFLOP/s FP32 -> 2.52 GHz; 1 PFLOP/s
# FP4 with sparsity -> 125 TFLOP/s dense BF16 -> F = 1,024 FLOP/clk/SM.
GB10 = dict(sms=48, ghz=2.52, F=1024)
# Dao-AILab/flash-attention PR 2439 (SM121a, BF16, p = 0.1, median of 300): sequence, causal, head
# dim, TFLOP/s with dropout forward and backward, time overhead forward and backward.
GB10_ROWS = [
    (1024, 0, 64, 44.0, 39.6, .128, .167), (1024, 1, 64, 24.1, 35.4, .136, .166),
    (2048, 0, 64, 62.4, 49.9, .245, .090), (2048, 1, 64, 41.5, 45.2, .304, .044),
    (4096, 0, 64, 67.6, 53.7, .219, .089), (4096, 1, 64, 46.8, 54.9, .321, .076),
    (2048, 0, 96, 69.9, 49.8, .164, .062), (2048, 1, 96, 59.9, 41.9, -.001, .003),
    (4096, 1, 96, 62.2, 52.7, .077, .058),
    (2048, 0, 128, 70.0, 53.3, .002, .013), (2048, 1, 128, 63.0, 42.7, -.106, .013),
    (4096, 0, 128, 75.5, 56.2, .051, .059), (4096, 1, 128, 64.5, 53.6, -.047, .041),
]
# GB200 (cc 10.0): 148 SMs, 2.5 PFLOP/s dense BF16 -> F = 8,192 FLOP/clk/SM. PR 2597 (FA4,
# p = 0.125): forward at 75-85 %, backward at 60-70 % of the no-dropout TFLOP/s, head dims 64 and
# 128. FA4's no-dropout forward efficiency per head dim from PR 2605's table (causal 1k to
# non-causal 16k); its backward's is not published there: 0.4-0.6 assumed.
GB200 = dict(F=8192, fwd=(1 / .85 - 1, 1 / .75 - 1), bwd=(1 / .70 - 1, 1 / .60 - 1),
             eff_f={64: (0.185, 0.49), 128: (0.33, 0.75)}, eff_b=(0.4, 0.6))


def series(n, F, eff, flops):
    """Fraction of the pass's time n instructions per element add in series."""
    return n * F * eff / (flops * R_INT)


def implied(over, F, eff, flops):
    """Instructions per element a measured overhead stands for, in series."""
    return over * flops / (F * eff) * R_INT


def num(x, digits, sign=True):
    """x with digits decimals (and its sign if sign); a value that rounds to zero never reads -0."""
    t = ("%+.*f" if sign else "%.*f") % (digits, x)
    if float(t) == 0:
        t = t.replace("-", "+" if sign else "")
    return t


def pct(lo, hi, digits=0):
    return num(100 * lo, digits) + " … " + num(100 * hi, digits) + " %"


def rng(lo, hi, digits=1):
    return num(lo, digits, False) + " … " + num(hi, digits, False)


def cmd_count():
    f, b = per_element()
    print("Philox4x32-%d call: %d-%d instructions per 16 elements" % (ROUNDS, *PHILOX))
    print("forward:  %.1f-%.1f per element" % f)
    print("backward: %.1f-%.1f per element" % b)


def cmd_check():
    nf, nb = per_element()
    print("| GPU, pass, head dim | measured | in series (R = %d) | instructions per element the"
          " measurement implies |" % R_INT)
    print("|---|---|---|---|")
    g = GB200
    for d in (64, 128):
        s = [series(n, g["F"], e, 4 * d) for n in nf for e in g["eff_f"][d]]
        i = [implied(o, g["F"], e, 4 * d) for o in g["fwd"] for e in g["eff_f"][d]]
        print("| GB200, forward, %d | %s | %s | %s |" % (d, pct(*g["fwd"]), pct(min(s), max(s)),
                                                          rng(min(i), max(i))))
    for d in (64, 128):
        s = [series(n, g["F"], e, 10 * d) for n in nb for e in g["eff_b"]]
        i = [implied(o, g["F"], e, 10 * d) for o in g["bwd"] for e in g["eff_b"]]
        print("| GB200, backward, %d | %s | %s | %s |" % (d, pct(*g["bwd"]), pct(min(s), max(s)),
                                                           rng(min(i), max(i))))
    peak = GB10["sms"] * GB10["ghz"] * 1e9 * GB10["F"] / 1e12
    for name, col, n_, k in (("forward", 3, nf, 4), ("backward", 4, nb, 10)):
        for d in (64, 96, 128):
            rows = [r for r in GB10_ROWS if r[2] == d]
            meas, ser, imp = [], [], []
            for r in rows:
                over = r[col + 2]
                eff = r[col] * (1 + over) / peak  # no-dropout efficiency: time ratio = rate ratio
                meas.append(over)
                ser += [series(n, GB10["F"], eff, k * d) for n in n_]
                imp.append(implied(over, GB10["F"], eff, k * d))
            print("| GB10, %s, %d | %s | %s | %s |" % (name, d, pct(min(meas), max(meas), 1),
                                                       pct(min(ser), max(ser)),
                                                       rng(min(imp), max(imp))))


# The gated suite's Megatron README runs: cuDNN, head dim 128, s = 4,096 on H100 SXM5
# (F = 4,096: 989.4 TFLOP/s = 132 SMs x 1.83 GHz x 4,096); its curves give 0.524 and 0.429.
M_CASES = ["M-1.7B", "M-16B", "M-32B", "M-70B", "M-177B", "M-462B"]
H100 = dict(F=4096, eff_f=0.524, eff_b=0.429)
FA4_ASIS = (0.419, 0.279)  # PR 2597's ratios applied to cuDNN's H100 efficiencies, as is


def run_case(case, eff):
    s = json.load(open("tests/validation/%s.json" % case))
    if eff is not None:
        s["topology"]["gpu"] = {"preset": "H100-SXM",
                                "efficiency": {"attention": eff[0], "attention_bwd": eff[1]}}
    fd, path = tempfile.mkstemp(suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(s, f)
    out = subprocess.run([DTSIM, "run", path, "--json"], capture_output=True, text=True,
                         check=True).stdout
    os.unlink(path)
    return json.loads(out)["throughput"]["tflops_per_gpu"]


def cmd_whatif():
    nf, nb = per_element()
    h = H100
    bounds = []
    for i in (0, 1):
        f = h["eff_f"] / (1 + series(nf[i], h["F"], h["eff_f"], 4 * 128))
        b = h["eff_b"] / (1 + series(nb[i], h["F"], h["eff_b"], 10 * 128))
        bounds.append((round(f, 3), round(b, 3)))
    man = {c["id"]: c for c in json.load(open("tests/validation/manifest.json"))["cases"]}
    print("| case | measured TFLOP/s | dtsim | series bound, H100 (%.3f, %.3f … %.3f, %.3f) |"
          " FA4 on a GB200 taken as is (%.3f, %.3f) |" % (*bounds[0], *bounds[1], *FA4_ASIS))
    print("|---|---|---|---|---|")
    for c in M_CASES:
        m = float(man[c]["measured"].split()[0])
        err = [run_case(c, e) / m - 1 for e in (None, bounds[0], bounds[1], FA4_ASIS)]
        print("| %s | %.1f | %s %% | %s | %s %% |" % (c, m, num(100 * err[0], 1),
                                                      pct(err[1], err[2], 1), num(100 * err[3], 1)))


if __name__ == "__main__":
    cmds = {"count": cmd_count, "check": cmd_check, "whatif": cmd_whatif}
    if len(sys.argv) != 2 or sys.argv[1] not in cmds:
        sys.exit(__doc__)
    cmds[sys.argv[1]]()
