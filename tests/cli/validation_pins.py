"""The ungated validation suites' pinned predictions (test_validation.sh, test_validation_stated.sh).

    sys.path.insert(0, SRC + "/tests/cli"); import validation_pins
    got = validation_pins.check(RESULTS_JSON, {case id: predicted, ...}, metric="step_time")

check() reads `dtsim validate --json` output and asserts that its cases are exactly the pinned
ones, that each ran (status ok), has the metric when one is named, and predicts the pinned
figure within `tol` (relative: 2e-4, the 4-5 significant digits docs/validation.md quotes).
It returns the rows by case id for the caller's own checks.

check_mpt_row() checks one llm-foundry MPT row (the a100, a100-40 and h100-mpt suites) against
the table figures its manifest entry quotes: the measured step is global batch x seq / tokens
per second, NumParams the MPT shape's count, the MFU column the MPT count 6 N + 12 L h s at the
measured rate against the GPU's peak, and dtsim's model FLOPs 72 L h^2 + 12 L h s + 6 V h to the
FLOP.
"""
import json
import re


def check(results_json, want, metric=None, tol=2e-4):
    with open(results_json) as f:
        got = {r["id"]: r for r in json.load(f)["cases"]}
    assert set(got) == set(want), sorted(got)
    for k, v in want.items():
        r = got[k]
        assert r["status"] == "ok", r
        assert metric is None or r["metric"] == metric, r
        assert abs(r["predicted"] / v - 1) < tol, (k, r["predicted"], v)
    return got


def check_mpt_row(k, r, sc, peak, tol=6e-4):
    m, p = sc["model"], sc["parallel"]
    L, h, V, s = m["layers"], m["hidden"], m["vocab"], m["seq_len"]
    row = " ".join(r["assumptions"])
    tps = int(re.search(r"global batch \d+, (\d+) tokens/s", row).group(1))
    mfu = float(re.search(r"MFU ([\d.]+),", row).group(1))
    npar = int(re.search(r"NumParams ([\d,]+)", row).group(1).replace(",", ""))
    gbs = r["gpus"] * p["micro_batch_size"] * p["microbatches"]
    assert f"global batch {gbs}," in row, (k, gbs)
    assert abs(r["measured"] - gbs * s / tps) < tol * r["measured"], (k, r["measured"], gbs * s / tps)
    assert npar == 12 * L * h * h + 13 * L * h + 2 * h + V * h + s * h, (k, npar)
    mpt = 6 * npar + 12 * L * h * s
    assert abs(mpt * tps / r["gpus"] / peak * 100 - mfu) < 0.02, (k, mpt * tps / r["gpus"] / peak * 100, mfu)
    ours = r["tflops_per_gpu"] * 1e12 * r["step_time_s"] * r["gpus"] / (gbs * s)
    dt = 72 * L * h * h + 12 * L * h * s + 6 * V * h
    assert abs(ours / dt - 1) < 1e-9, (k, ours, dt)
    # the MPT count's biases, norms and learned positions, which dtsim's FLOPs leave out
    assert mpt - dt == 6 * (13 * L * h + 2 * h + s * h)
