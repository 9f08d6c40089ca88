#!/usr/bin/env bash
# test_calib_alpha.sh - `dtsim calibrate` never writes a latency its readers refuse.
# Pins down, on hand-made nccl-tests sendrecv logs whose two samples per size (out-of-place,
# in-place) sit at +-e around a known line a + S b, so that the free fit is (a, b) exactly (up to
# the log's 0.01 us printing):
#  - a = +3 us: written as fitted, no "alpha_free";
#  - a = -1 us, e = 5 %: the 95 % interval (+-1.49 us) reaches 0, so the latency is noise: the
#    file holds alpha 0 (alpha_ci95 0) and the free fit under "alpha_free", beta refitted through
#    the origin (between the 64 KiB point's own slope and b); `dtsim collective` applies it
#    without complaint and its sendrecv of 1 MiB takes beta x 1 MiB (alpha 0) to 1e-6;
#  - a = -1 us, e = 1 %: the interval (+-0.30 us) stays below 0: refused, exit 2, a message with
#    the log, the collective and the figures, no file written;
#  - a file whose alpha_free was edited into a clearly negative latency is refused by its reader
#    with the file and JSON path, exit 2.
# The same rule (cal_alpha_judge) decides for the live kernels (tests/unit/kernels/test_cal_fit.c).
# Leaves free: the wording around the quoted parts.
set -euo pipefail
: "${DTSIM:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# gen A B E FILE: an nccl-tests sendrecv table, 64 KiB .. 2 MiB, times (A + S B)(1 +- E) in us
gen() {
  python3 "$SRC/tests/cli/nccl_log.py" "$4" sendrecv 1 "$1" "$2" "$3" 0 65536 131072 262144 524288 1048576 2097152
}

# ---- a positive latency: the free fit
gen 3e-6 2e-10 0.05 "$tmp/pos.sendrecv_perf.log"
"$DTSIM" calibrate --from-nccl-tests "$tmp/pos.sendrecv_perf.log" --out "$tmp/pos.json" >/dev/null 2>&1 ||
  fail "positive latency refused"
python3 - "$tmp/pos.json" <<'PY' || fail "positive latency fit"
import json, sys
f = json.load(open(sys.argv[1]))["fits"][0]
assert "alpha_free" not in f, f
assert abs(f["alpha"] / 3e-6 - 1) < 0.01 and abs(f["beta"] / 2e-10 - 1) < 1e-3, (f["alpha"], f["beta"])
PY

# ---- a negative latency within its interval: held at 0, beta refitted, applied
gen -1e-6 2e-10 0.05 "$tmp/noisy.sendrecv_perf.log"
"$DTSIM" calibrate --from-nccl-tests "$tmp/noisy.sendrecv_perf.log" --out "$tmp/noisy.json" >"$tmp/noisy.txt" 2>/dev/null ||
  fail "noisy-zero latency refused"
grep -q "alpha = 0 ps ± 0 ps, held at 0 (the free fit's -1.002 us ± 1.485 us reaches 0" "$tmp/noisy.txt" ||
  { cat "$tmp/noisy.txt"; fail "the table does not say alpha was held"; }
"$DTSIM" collective --topology gen:ring:gpus=2 --op sendrecv --size 1MiB --calibration "$tmp/noisy.json" \
  --json >"$tmp/noisy-sim.json" 2>"$tmp/noisy-sim.err" || { cat "$tmp/noisy-sim.err"; fail "collective refused the calibration"; }
python3 - "$tmp/noisy.json" "$tmp/noisy-sim.json" <<'PY' || fail "noisy-zero latency fit"
import json, sys
f = json.load(open(sys.argv[1]))["fits"][0]
sim = json.load(open(sys.argv[2]))
assert f["alpha"] == 0 and f["alpha_ci95"] == 0, f
h = f["alpha_free"]
assert abs(h["alpha"] / -1e-6 - 1) < 0.01 and 1.4e-6 < h["alpha_ci95"] < 1.6e-6, h
lo = (-1e-6 + 2e-10 * 65536) / 65536          # the 64 KiB point's own slope
assert lo < f["beta"] < 2e-10, f["beta"]
assert f["link"]["latency"] == 0, f["link"]
assert abs(sim["time_s"] / (f["beta"] * 1048576) - 1) < 1e-6, (sim["time_s"], f["beta"] * 1048576)
print("held: free alpha %.3f us +- %.3f, beta %.4g s/B (free 2e-10), 1 MiB sendrecv %.3f us"
      % (h["alpha"] * 1e6, h["alpha_ci95"] * 1e6, f["beta"], sim["time_s"] * 1e6))
PY

# ---- a hand edit the rule would not have made: alpha_free that is not noise, a located error
python3 - "$tmp/noisy.json" "$tmp/edited.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["fits"][0]["alpha_free"]["alpha_ci95"] = 0.5e-6     # -1 us +- 0.5 us: clearly negative
json.dump(d, open(sys.argv[2], "w"))
PY
set +e
"$DTSIM" collective --topology gen:ring:gpus=2 --op sendrecv --size 1MiB --calibration "$tmp/edited.json" >/dev/null 2>"$tmp/edited.err"
rc=$?
set -e
[[ $rc -eq 2 ]] || { cat "$tmp/edited.err"; fail "edited alpha_free: expected exit 2, got $rc"; }
grep -q "edited.json: fits\[0\].alpha_free.alpha: expected a negative latency whose 95 % interval reaches 0" "$tmp/edited.err" ||
  { cat "$tmp/edited.err"; fail "edited alpha_free: no located error"; }

# ---- a clearly negative latency: refused, nothing written
gen -1e-6 2e-10 0.01 "$tmp/neg.sendrecv_perf.log"
set +e
"$DTSIM" calibrate --from-nccl-tests "$tmp/neg.sendrecv_perf.log" --out "$tmp/neg.json" >/dev/null 2>"$tmp/neg.err"
rc=$?
set -e
[[ $rc -eq 2 ]] || { cat "$tmp/neg.err"; fail "clearly negative latency: expected exit 2, got $rc"; }
[[ ! -e "$tmp/neg.json" ]] || fail "a refused fit must leave no file"
grep -q "neg.sendrecv_perf.log: sendrecv_perf: a negative latency (-9.9[0-9]*e-07 s) whose 95 % interval (+-2.9[0-9]*e-07 s) does not reach 0 (beta 2e-10 s/B" "$tmp/neg.err" ||
  { cat "$tmp/neg.err"; fail "the refusal does not name the log, the collective and the figures"; }
echo "PASS"
