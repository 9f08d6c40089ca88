#!/usr/bin/env bash
# test_probe.sh - `dtsim probe` (docs/calibration.md, "Compute probe").
# Pins down, on the hand-made measurement tests/data/probe/synthetic-h100.json (its README):
#  - --from reports without a GPU, in the lean dtsim (no hand-off to dtsim-full): 8192^3 at
#    800 TFLOP/s burst is 1.191 x dtsim's 671.7 (989.5 x 0.7 x 32/33) and implies 0.834 of peak
#    per full wave; sustained 790 -> 720 TFLOP/s, 0.9 of the burst, implies 0.750; the suggested
#    spec is {"preset": "H100-SXM", "efficiency": {"matmul": 0.75}, "memory_eff": 0.896};
#  - --gpu compares with another preset (A100-SXM: 312 TFLOP/s, 108 SMs, with a warning that
#    the device's 132 SMs are not the spec's); the report read back gives the same report;
#  - the suggested spec is a GPU spec dtsim accepts (a scenario built on it runs);
#  - the standalone probe's JSON writer (built with CUDA) gives the same report, byte for byte;
#  - usage and input errors exit 2 naming the file and JSON path; without a CUDA device the live
#    probe exits 1 saying so and writes nothing.
# Leaves free: the table's layout.
set -euo pipefail
: "${DTSIM:?}" "${SRC:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
m="$SRC/tests/data/probe/synthetic-h100.json"

DTSIM_FULL=/nonexistent "$DTSIM" probe --from "$m" --json >"$tmp/r.json" || fail "--from needed dtsim-full"
python3 - "$tmp/r.json" <<'PY' || fail "report figures"
import json, sys
r = json.load(open(sys.argv[1]))
def near(a, b, rel=1e-9):
    assert abs(a - b) <= rel * abs(b), (a, b)
sq = r["gemms"][0]
q = 32 / 33
near(sq["burst_tflops"], 800)
near(sq["dtsim"]["quantization"], q)
near(sq["dtsim"]["predicted_tflops"], 989.5 * 0.7 * q, 1e-6)
near(sq["dtsim"]["burst"]["measured_over_predicted"], 800 / (989.5 * 0.7 * q), 1e-6)
near(sq["dtsim"]["burst"]["implied_matmul_eff"], 800 / (989.5 * q))
near(sq["sustained"]["first_tflops"], 790)
near(sq["sustained"]["last_tflops"], 720)
near(sq["sustained"]["last_over_burst"], 0.9)
near(sq["dtsim"]["sustained_last"]["implied_matmul_eff"], 720 / (989.5 * q))
assert r["gemms"][2]["dtsim"]["bound"] == "memory"
near(r["hbm"]["copy_gbs"], 2900)
assert r["suggested_spec"] == {"preset": "H100-SXM", "efficiency": {"matmul": 0.75}, "memory_eff": 0.896}, r["suggested_spec"]
json.dump(r["suggested_spec"], open(sys.argv[1] + ".spec", "w"))
PY

"$DTSIM" probe --from "$m" >"$tmp/t.txt"
grep -q '^sq .* 800.0 .* 790.0 .* 720.0' "$tmp/t.txt" || fail "table: $(cat "$tmp/t.txt")"
grep -q 'suggested GPU spec: {"preset":"H100-SXM"' "$tmp/t.txt" || fail "table lacks the suggestion"

# another preset, and the report read back
"$DTSIM" probe --from "$m" --gpu A100-SXM --out "$tmp/a.json" >/dev/null
python3 -c "
import json; r = json.load(open('$tmp/a.json'))
assert r['dtsim']['spec'] == 'A100-SXM' and r['dtsim']['peak_bf16_tflops'] == 312, r['dtsim']
assert '132 SMs' in r['dtsim']['warning'] and '108' in r['dtsim']['warning']
" || fail "--gpu A100-SXM"
"$DTSIM" probe --from "$tmp/r.json" --json >"$tmp/r2.json"
cmp -s "$tmp/r.json" "$tmp/r2.json" || fail "a report read back gives another report"

# the suggestion is a GPU spec dtsim takes: the quickstart on it runs, and faster than on the
# preset (matmul 0.75 against 0.7)
python3 - "$SRC/scenarios/quickstart.json" "$tmp/r.json.spec" "$tmp/s.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); s["topology"]["gpu"] = json.load(open(sys.argv[2]))
json.dump(s, open(sys.argv[3], "w"))
PY
"$DTSIM" run "$tmp/s.json" --json >"$tmp/s.out" 2>"$tmp/e" || fail "the suggested spec is refused: $(cat "$tmp/e")"
"$DTSIM" run "$SRC/scenarios/quickstart.json" --json >"$tmp/q.out"
python3 -c "
import json; a = json.load(open('$tmp/s.out')); b = json.load(open('$tmp/q.out'))
assert a['step_time_s'] < b['step_time_s'], (a['step_time_s'], b['step_time_s'])
" || fail "the suggested spec did not speed the step up"

# the standalone probe's writer (kern_probe.cu built alone, as on a GPU machine): its
# --format-check prints the hand-made figures of synthetic-h100.json, and the report on it is
# the report on that file, byte for byte
if [[ -x "${BUILD:-}/kern_probe" ]]; then
  "$BUILD/kern_probe" --format-check >"$tmp/fc.json" || fail "kern_probe --format-check"
  "$DTSIM" probe --from "$tmp/fc.json" --json >"$tmp/fc.rep" || fail "dtsim refuses the standalone probe's JSON"
  cmp -s "$tmp/fc.rep" "$tmp/r.json" || fail "the standalone writer's figures differ: $(diff "$tmp/fc.rep" "$tmp/r.json" | head)"
else
  echo "note: this build has no standalone kern_probe (no CUDA): its writer is not checked"
fi

# bad usage and input: exit 2, file and path named
bad() { set +e; "$DTSIM" probe "$@" >/dev/null 2>"$tmp/e"; rc=$?; set -e; [[ $rc -eq 2 ]] || fail "$*: exit $rc, expected 2: $(cat "$tmp/e")"; }
bad --from "$m" --sustain 5
bad --sustain -1
bad --repeats 0
bad --hbm 12
bad --bogus
bad --from "$m" --gpu H100-PCIE
grep -q 'H100' "$tmp/e" || fail "unknown preset message: $(cat "$tmp/e")"
echo '[{"name": "a", "m": 4096, "n": 2048, "k": 2048, "layout": "backward"}]' >"$tmp/bad.json"
bad --shapes "$tmp/bad.json" --sustain 0
grep -q 'bad.json.*\[0\]\.layout.*backward' "$tmp/e" || fail "shape error: $(cat "$tmp/e")"
python3 -c "import json; d = json.load(open('$m')); d['gemms'][0]['window_tflops'][2] = 'fast'; json.dump(d, open('$tmp/m.json', 'w'))"
bad --from "$tmp/m.json"
grep -q 'gemms\[0\]\.window_tflops\[2\]' "$tmp/e" || fail "measurement error: $(cat "$tmp/e")"

# the live probe without a device: exit 1, said, nothing written
set +e; "$DTSIM" probe --sustain 1 --out "$tmp/live.json" 2>"$tmp/e"; rc=$?; set -e
if [[ $rc -eq 0 ]]; then
  echo "note: a CUDA device is present; the probe ran"
else
  [[ $rc -eq 1 ]] || fail "live probe without a device: exit $rc: $(cat "$tmp/e")"
  grep -q -e "no CUDA device" -e "without CUDA" "$tmp/e" || fail "unclear message: $(cat "$tmp/e")"
  [[ ! -e "$tmp/live.json" ]] || fail "a failed probe left a file"
fi
echo PASS
