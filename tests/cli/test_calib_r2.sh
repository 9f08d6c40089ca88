#!/usr/bin/env bash
# test_calib_r2.sh - `dtsim calibrate` never writes a file whose default fit its readers refuse
# for its R² (cal_check_link_fits and the readers share cal_r2_judge).
# Pins down, on hand-made nccl-tests logs at 1, 2, 3, 4 MiB (fitted with --fit-range 1MiB:4MiB),
# two samples per size at +-1 % around medians (a + S b)(1 + q d), a = 10 us, b = 1/(5 GB/s),
# q = (+1, -1, -1, +1) - the samples of tests/unit/kernels/test_cal_fit.c's R² gate:
#  - d = 40 % (R² 0.13, the unit test's figure), the only fit: refused, exit 2, nothing written,
#    a message naming the collective and the figures (R², sizes, samples, the line);
#  - the same poor sendrecv beside a good all-reduce (d = 1 %, 4 ranks): written (the all-reduce
#    is what readers apply by default), a warning naming the poor fit; `dtsim collective` applies
#    the all-reduce, and refuses the sendrecv when it is chosen (exit 2, fits[1].r2, the same
#    words and R²);
#  - a poor all-reduce beside a good sendrecv: the default is poor, refused, nothing written.
# Leaves free: the wording around the quoted parts.
set -euo pipefail
: "${DTSIM:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# gen OP FACTOR D FILE: an nccl-tests table at 1..4 MiB, medians (a + S b)(1 + q d) with a = 10 us,
# b = 2e-10 s/B, q = (+1, -1, -1, +1), +-1 % pairs; FACTOR is busbw/algbw (sendrecv 1, all-reduce
# over 4 ranks 1.5)
gen() {
  python3 "$SRC/tests/cli/nccl_log.py" "$4" "$1" "$2" 10e-6 2e-10 0.01 "$3" 1048576 2097152 3145728 4194304
}
cal() { "$DTSIM" calibrate --fit-range 1MiB:4MiB --out "$@"; }
coll() { "$DTSIM" collective --topology gen:switch:gpus=4 --size 1MiB "$@"; }

gen sendrecv 1 0.40 "$tmp/poor.sendrecv_perf.log"
gen sendrecv 1 0.01 "$tmp/good.sendrecv_perf.log"
gen all_reduce 1.5 0.40 "$tmp/poor.all_reduce_perf.log"
gen all_reduce 1.5 0.01 "$tmp/good.all_reduce_perf.log"

# ---- the only fit is poor: refused, nothing written
set +e
cal "$tmp/a.json" --from-nccl-tests "$tmp/poor.sendrecv_perf.log" >/dev/null 2>"$tmp/a.err"
rc=$?
set -e
[[ $rc -eq 2 ]] || { cat "$tmp/a.err"; fail "poor sendrecv alone: expected exit 2, got $rc"; }
[[ ! -e "$tmp/a.json" ]] || fail "a refused fit must leave no file"
grep -q 'fit "nccltests_sendrecv" has R² = 0.13, below 0.5 (sendrecv, 4 sizes 1 MiB - 4 MiB, 8 samples; alpha [0-9.]* us, beta [0-9.e-]* s/B): its line T = α + S·β does not describe its own measurements; every reader would refuse it, so nothing is written' "$tmp/a.err" ||
  { cat "$tmp/a.err"; fail "the refusal does not name the collective and its figures"; }

# ---- a poor sendrecv beside a good all-reduce (the default): written, the poor one kept and named
cal "$tmp/b.json" --from-nccl-tests "$tmp/good.all_reduce_perf.log" "$tmp/poor.sendrecv_perf.log" >/dev/null 2>"$tmp/b.err" ||
  { cat "$tmp/b.err"; fail "a good default with a poor second fit was refused"; }
grep -q 'warning: fit "nccltests_sendrecv" has R² = 0.13, below 0.5 .*kept, but not applied by default: a reader given --calibration-fit nccltests_sendrecv refuses it' "$tmp/b.err" ||
  { cat "$tmp/b.err"; fail "no warning naming the poor fit"; }
coll --op allreduce --algo ring --calibration "$tmp/b.json" --json >"$tmp/b-ar.json" 2>"$tmp/b-ar.err" ||
  { cat "$tmp/b-ar.err"; fail "the default fit was not applied"; }
set +e
coll --op sendrecv --calibration "$tmp/b.json" --calibration-fit nccltests_sendrecv >/dev/null 2>"$tmp/b-sr.err"
rc=$?
set -e
[[ $rc -eq 2 ]] || { cat "$tmp/b-sr.err"; fail "the chosen poor fit: expected exit 2, got $rc"; }
grep -q 'b.json: fits\[1\].r2: fit "nccltests_sendrecv" has R² = 0.13, below 0.5 (sendrecv, 4 sizes 1 MiB - 4 MiB, 8 samples; .*does not describe its own measurements' "$tmp/b-sr.err" ||
  { cat "$tmp/b-sr.err"; fail "the reader's refusal is not the writer's rule and words"; }
python3 - "$tmp/b.json" "$tmp/b-ar.json" <<'PY' || fail "the written file"
import json, sys
fits = {f["name"]: f for f in json.load(open(sys.argv[1]))["fits"]}
ar, sr = fits["nccltests_allreduce"], fits["nccltests_sendrecv"]
# R² is the definition's: 1 - SS_res / SS_tot of the medians against the line written
def r2(f):
    pts = [p for p in f["points"] if 1048576 <= p["size"] <= 4194304]
    m = [p["median"] for p in pts]
    mean = sum(m) / len(m)
    res = sum((p["median"] - f["alpha"] - f["beta"] * p["size"]) ** 2 for p in pts)
    return 1 - res / sum((x - mean) ** 2 for x in m)
assert abs(sr["r2"] - r2(sr)) < 1e-9 and 0.125 < sr["r2"] < 0.135, (sr["r2"], r2(sr))
assert abs(ar["r2"] - r2(ar)) < 1e-9 and ar["r2"] > 0.99, (ar["r2"], r2(ar))
row = json.load(open(sys.argv[2]))
row = row[0] if isinstance(row, list) else row
assert "nccltests_allreduce" in row["calibration"], row["calibration"]
print("kept: sendrecv R² %.4f (recomputed %.4f), applied: all-reduce R² %.4f" % (sr["r2"], r2(sr), ar["r2"]))
PY

# ---- a poor default (all-reduce) beside a good sendrecv: refused, nothing written
set +e
cal "$tmp/c.json" --from-nccl-tests "$tmp/poor.all_reduce_perf.log" "$tmp/good.sendrecv_perf.log" >/dev/null 2>"$tmp/c.err"
rc=$?
set -e
[[ $rc -eq 2 ]] || { cat "$tmp/c.err"; fail "poor default: expected exit 2, got $rc"; }
[[ ! -e "$tmp/c.json" ]] || fail "a refused default must leave no file"
grep -q 'fit "nccltests_allreduce" has R² = 0.1[0-9]*, below 0.5 (allreduce, 4 sizes 1 MiB - 4 MiB, 8 samples;' "$tmp/c.err" ||
  { cat "$tmp/c.err"; fail "the refusal does not name the default fit"; }
echo "PASS"
