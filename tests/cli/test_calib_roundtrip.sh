#!/usr/bin/env bash
# test_calib_roundtrip.sh - calibrate -> collective round trip on this machine.
# Pins down: `dtsim calibrate` (CPU ring, 2 ranks, 64 KiB..2 MiB) writes a calibration that
# `dtsim collective --calibration` applies to a 2-GPU ring topology (and says so); the simulated
# all-reduce reproduces the fitted line alpha + S*beta at every calibrated size (to 0.1 %: the
# mapping from the fit to link latency and bandwidth, exact up to picosecond rounding); and the
# simulated sweep - the six sizes' times summed - is within 10 % of the six measured medians
# summed, in the same calibration run.
# Why the whole sweep and not one size: the CPU ring is not a straight line. Its per-byte cost
# changes where the two ranks' buffers and FIFOs leave L2, and where that cliff falls moves
# between machines and even between runs of one machine (measured on the 2-core development VM,
# five runs: the 128 -> 256 KiB or the 256 -> 512 KiB step costs 2.5-3x its size ratio, the line
# misses single sizes by 18-31 %). A check at one size tested that machine's caches, not dtsim:
# at 512 KiB it failed CI four calibrations in a row at -13 to -17 %. The summed times are
# dominated by the large, bandwidth-bound sizes whose beta the fit is made of; a robust line fitted
# to the samples passes through their bulk (the same five runs: -1.6 to -6.6 %), and a wrong
# mapping or a fit in the wrong units (a factor n or an element size missing) misses it by 50 %
# or more every time.
# Also pins down: whatever calibrate writes, `dtsim collective` applies without refusal: calibrate
# judges alpha (holding noise at 0, refusing a clearly negative one: test_calib_alpha.sh) and R²
# (refusing a line below 0.5: test_calib_r2.sh) by the readers' own rules before it writes.
# A burst of load from other jobs can still spoil one calibration (calibrate then refuses it, or
# its sweep misses by more than 10 %): up to 4 fresh calibrations are tried, the test passes on
# the first that meets the check; retries are for live timing noise alone.
# Leaves free: the absolute figures, and how far the line misses any single size.
set -euo pipefail
: "${DTSIM:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

for attempt in 1 2 3 4; do
  rm -f "$tmp/cal.json"
  # a burst of load can leave a latency fitted clearly below zero or a line that explains little
  # of its medians (R² < 0.5): calibrate refuses it (exit 1, no file), measured again like a miss
  if ! "$DTSIM" calibrate --ranks 2 --sizes 64KiB:2MiB:x2 --repeats 15 --topk-fraction 0 \
    --out "$tmp/cal.json" >/dev/null 2>"$tmp/err.txt"; then
    grep -q -e "a negative latency" -e "does not grow with size" -e "below 0.5" "$tmp/err.txt" ||
      { cat "$tmp/err.txt"; fail "calibrate failed"; }
    [[ ! -e "$tmp/cal.json" ]] || fail "a refused calibration must leave no file"
    echo "attempt $attempt: $(cut -c1-100 "$tmp/err.txt")...; calibrating again"
    continue
  fi
  # what calibrate wrote, the reader applies: any refusal here (latency, R²) fails the test
  "$DTSIM" collective --topology gen:ring:gpus=2 --op allreduce --algo ring --size 64KiB:2MiB:x2 \
    --elem-bytes 4 --calibration "$tmp/cal.json" --json >"$tmp/sim.json" 2>"$tmp/err.txt" ||
    { cat "$tmp/err.txt"; fail "collective refused what calibrate wrote"; }
  "$DTSIM" collective --topology gen:ring:gpus=2 --op allreduce --algo ring --size 512KiB \
    --elem-bytes 4 --calibration "$tmp/cal.json" >"$tmp/sim.txt"
  grep -q "^# calibration: cal.json (cpu ring, 2 ranks" "$tmp/sim.txt" || { cat "$tmp/sim.txt"; fail "no calibration note"; }
  if python3 - "$tmp/cal.json" "$tmp/sim.json" <<'PY'
import json, sys
cal = json.load(open(sys.argv[1]))
rows = json.load(open(sys.argv[2]))
ring = [f for f in cal["fits"] if f["name"] == "ring"][0]
medians = {p["size"]: p["median"] for p in ring["points"]}
assert sorted(medians) == [64 * 1024 << k for k in range(6)], sorted(medians)
assert [r["size_bytes"] for r in rows] == sorted(medians), [r["size_bytes"] for r in rows]
# calibrate writes no negative latency: noise below zero is held at 0 (alpha_free says so)
assert ring["alpha"] >= 0, ring["alpha"]
assert "alpha_free" not in ring or (ring["alpha"] == 0 and ring["alpha_free"]["alpha"] < 0), ring
sim_sum = meas_sum = 0.0
for r in rows:
    assert "calibration" in r and "cal.json" in r["calibration"], r
    size, pred, meas = r["size_bytes"], r["time_s"], medians[r["size_bytes"]]
    line = ring["alpha"] + ring["beta"] * size
    print("%8d B: measured median %8.2f us, simulated %8.2f us (%+.1f%%)" % (size, meas * 1e6, pred * 1e6, 100 * (pred / meas - 1)))
    # the simulator reproduces the fitted line itself (mapping exact up to picosecond rounding)
    assert abs(pred / line - 1) < 1e-3, "simulated time departs from the fitted line at %d B" % size
    sim_sum += pred
    meas_sum += meas
err = sim_sum / meas_sum - 1
print("sweep: measured %.2f us, simulated %.2f us: %+.1f%%" % (meas_sum * 1e6, sim_sum * 1e6, 100 * err))
sys.exit(0 if abs(err) <= 0.10 else 3)
PY
  then
    echo "PASS (attempt $attempt)"
    exit 0
  else
    rc=$?
    [[ $rc -eq 3 ]] || fail "round trip check crashed"
    echo "attempt $attempt: outside 10%, calibrating again"
  fi
done
fail "simulated sweep never within 10% of the measured one in 4 calibrations"
