"""The ungated validation suites' pinned predictions (test_validation.sh, test_validation_stated.sh).

    sys.path.insert(0, SRC + "/tests/cli"); import validation_pins
    got = validation_pins.check(RESULTS_JSON, {case id: predicted, ...}, metric="step_time")

check() reads `dtsim validate --json` output and asserts that its cases are exactly the pinned
ones, that each ran (status ok), has the metric when one is named, and predicts the pinned
figure within `tol` (relative: 2e-4, the 4-5 significant digits docs/validation.md quotes).
It returns the rows by case id for the caller's own checks.
"""
import json


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
