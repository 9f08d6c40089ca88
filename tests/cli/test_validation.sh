#!/usr/bin/env bash
# test_validation.sh - `dtsim validate` on the bundled suite, and the CI gate on its errors.
# Pins down: every case of tests/validation runs; the median and worst |error| stay within the
# bounds below (the gate: tightened as the model improves; raised only where a physical correction
# uncovers a compensating error, as docs/validation.md's history table says);
# the JSON summary agrees with its rows (median of |error|, worst case); the error sign
# (+ optimistic) from the rows' measured and predicted values; --case selects; `dtsim report`
# draws the parity plot from the JSON; bad manifests and unknown cases exit 2 naming the path;
# the ungated expert/context-parallel suite (validation-ep-cp) runs and predicts the figures
# docs/validation.md quotes, pinned to 4-5 significant digits; the M cases' untied parameter
# counts match their size labels. The suites of fully stated runs are test_validation_stated.sh.
# Leaves free: the gated suite's per-case predictions (only its median and worst are bounded;
# docs/validation.md shows them).
set -euo pipefail
: "${DTSIM:?}" "${SRC:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# Expert and context parallelism (tests/validation-ep-cp, not gated: docs/validation.md says
# why): every case runs, and predicts what the page quotes (4 significant digits).
"$DTSIM" validate "$SRC/tests/validation-ep-cp" --json > "$tmp/epcp.json" || fail "ep/cp validation cases"
python3 - "$tmp/epcp.json" "$SRC/tests/cli" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
import validation_pins
validation_pins.check(sys.argv[1], {"E-mixtral-8x7b-64-h100": 558.29, "E-qwen3-30b-a3b-8-h100": 21.763,
                                    "N-llama2-7b-32k-cp2": 879.46, "N-llama2-7b-128k-cp4": 795.87})
PY

# The Megatron README cases run untied embeddings because every size label of the table is the
# untied parameter count at its last digit and none is the tied one (docs/validation.md, "Untied
# embeddings, from the size labels"): recount by hand from each scenario's shape, and check that
# dtsim holds exactly the hand count on M-1.7B's one GPU (tp 1, pp 1: no split).
"$DTSIM" run "$SRC/tests/validation/M-1.7B.json" --json >"$tmp/m17.json" || fail "M-1.7B run"
python3 - "$SRC/tests/validation" "$tmp/m17.json" <<'PY'
import json, math, sys
labels = {"M-1.7B": 1.7, "M-16B": 16, "M-32B": 32, "M-70B": 70, "M-177B": 177, "M-462B": 462}
def at_digit(x, label):
    q = 0.1 if label < 10 else 1.0              # the label's last digit
    return math.isclose(round(x / q) * q, label) or math.isclose(math.floor(x / q) * q, label)
for case, label in labels.items():
    m = json.load(open(f"{sys.argv[1]}/{case}.json"))["model"]
    assert m.get("tied_embeddings") is False, case
    L, h, V, s = m["layers"], m["hidden"], m["vocab"], m["seq_len"]
    # 12h^2 weights and 13h biases and norm parameters a layer, the final norm, V*h per matrix,
    # s*h learned positions (or none)
    body = L * (12 * h * h + 13 * h) + 2 * h
    untied = [(body + 2 * V * h + pos) / 1e9 for pos in (0, s * h)]
    tied = [(body + V * h + pos) / 1e9 for pos in (0, s * h)]
    assert any(at_digit(x, label) for x in untied), (case, untied, label)
    assert not any(at_digit(x, label) for x in tied), (case, tied, label)
r = json.load(open(sys.argv[2]))
L, h, V = 24, 2048, 131072   # dtsim counts no biases: 12h^2 + 4h a layer, 2h, 2 V h; bf16
assert r["memory_per_gpu_bytes"]["params"] == 2 * (L * (12 * h * h + 4 * h) + 2 * h + 2 * V * h), r["memory_per_gpu_bytes"]
PY

# The gate (percent). docs/validation.md states the figures they were set from.
MAX_MEDIAN=5
MAX_WORST=19

"$DTSIM" validate "$SRC/tests/validation" --json --max-median $MAX_MEDIAN --max-worst $MAX_WORST \
  >"$tmp/v.json" || fail "validation suite outside median $MAX_MEDIAN % / worst $MAX_WORST %"
python3 - "$tmp/v.json" <<'PY'
import json, sys, statistics
d = json.load(open(sys.argv[1]))
assert d["format"] == "dtsim-validation-results"
rows = d["cases"]
assert len(rows) >= 17, len(rows)
errs = []
for r in rows:
    assert r["status"] == "ok", r
    m, p = r["measured"], r["predicted"]
    want = m / p - 1 if r["metric"] == "step_time" else p / m - 1
    assert abs(r["error"] - want) < 1e-9, (r["id"], r["error"], want)
    assert r["source"] and isinstance(r["assumptions"], list)
    # no case has a straggler or jitter: no GPU can wait for a late peer, and a pipelined
    # case's critical GPU (its last stage) waits for the drain as bubble, not straggler wait
    b = r.get("breakdown_s")
    if b is not None:
        assert b["straggler_wait"] == 0, (r["id"], b)
        if r["step_time_s"] > 0:
            assert abs(sum(b.values()) - r["step_time_s"]) < 1e-9 * r["step_time_s"], (r["id"], b)
    errs.append(abs(r["error"]))
s = d["summary"]
assert s["cases"] == len(rows) and s["ran"] == len(rows)
assert abs(s["median_abs_error"] - statistics.median(errs)) < 1e-12
assert abs(s["worst_abs_error"] - max(errs)) < 1e-12
worst = max(rows, key=lambda r: abs(r["error"]))
assert s["worst_case"] == worst["id"]
PY

# --case runs one; the human table names it and prints the summary line
"$DTSIM" validate "$SRC/tests/validation" --case C-H100-8 >"$tmp/one.txt" || fail "--case run failed"
grep -q "^C-H100-8 " "$tmp/one.txt" || fail "case row missing"
grep -q "1 of 1 cases ran" "$tmp/one.txt" || fail "summary line missing"

# parity plot from the JSON
if command -v gnuplot >/dev/null; then
  "$DTSIM" report "$tmp/v.json" --out "$tmp/rep" >/dev/null || fail "report of validate JSON failed"
  [[ -s "$tmp/rep/parity.png" && -s "$tmp/rep/parity.svg" && -s "$tmp/rep/parity.dat" ]] || fail "parity plot missing"
fi

# errors: unknown case, missing manifest, bad manifest entries (path named), exit 2
set +e
"$DTSIM" validate "$SRC/tests/validation" --case nope 2>"$tmp/e1"; st=$?
set -e
[[ $st -eq 2 ]] && grep -q 'no case "nope"' "$tmp/e1" || fail "unknown case: status $st, $(cat "$tmp/e1")"
mkdir "$tmp/bad"
echo '{"format": "dtsim-validation", "version": 1, "cases": [{"id": "x", "scenario": "x.json", "metric": "step_tme", "measured": "1 s", "source": "s"}]}' >"$tmp/bad/manifest.json"
set +e
"$DTSIM" validate "$tmp/bad" 2>"$tmp/e2"; st=$?
set -e
[[ $st -eq 2 ]] && grep -q 'cases\[0\].metric' "$tmp/e2" || fail "bad metric: status $st, $(cat "$tmp/e2")"
echo '{"format": "dtsim-validation", "version": 1, "cases": [{"id": "x", "scenario": "x.json", "collective": {}, "metric": "busbw", "measured": "1 GB/s", "source": "s"}]}' >"$tmp/bad/manifest.json"
set +e
"$DTSIM" validate "$tmp/bad" 2>"$tmp/e3"; st=$?
set -e
[[ $st -eq 2 ]] && grep -q 'exactly one of them' "$tmp/e3" || fail "scenario and collective: status $st, $(cat "$tmp/e3")"
# a case that cannot run is a failed row: exit 1 only with the gate
echo '{"format": "dtsim-validation", "version": 1, "cases": [{"id": "x", "scenario": "missing.json", "metric": "step_time", "measured": "1 s", "source": "s"}]}' >"$tmp/bad/manifest.json"
"$DTSIM" validate "$tmp/bad" >"$tmp/o4" || fail "a failed case without a gate must exit 0"
grep -q "FAILED" "$tmp/o4" || fail "failed row not shown"
set +e
"$DTSIM" validate "$tmp/bad" --max-worst 50 >/dev/null 2>"$tmp/e4"; st=$?
set -e
[[ $st -eq 1 ]] || fail "gate with a failed case: status $st"
echo "ok"
