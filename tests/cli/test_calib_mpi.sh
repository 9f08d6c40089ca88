#!/usr/bin/env bash
# test_calib_mpi.sh - `dtsim calibrate --backend mpi` under mpirun with 2 and 4 ranks
# (oversubscribed on a small machine): the run verifies MPI_Allreduce and reduce-scatter +
# all-gather against the exact sums, writes a calibration that loads back, and reports the rank
# count mpirun started. Without mpirun or MPI in the build it checks the clear refusal and skips.
# Labelled no-sanitize (kernels/kernels.cmake): Open MPI's own allocations trip LeakSanitizer.
set -euo pipefail
: "${DTSIM:?}" "${SRC:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# Not under mpirun: a clear refusal (DT_EUNSUPPORTED -> exit 1), no output file.
set +e
msg=$("$DTSIM" calibrate --backend mpi --out "$tmp/x.json" 2>&1)
rc=$?
set -e
[[ $rc -eq 1 ]] || fail "expected exit 1 without mpirun, got $rc: $msg"
grep -q -e "mpirun" -e "without MPI" <<<"$msg" || fail "message should say how to launch: $msg"
[[ ! -e "$tmp/x.json" ]] || fail "no output expected on error"

if grep -q "without MPI" <<<"$msg" || ! command -v mpirun >/dev/null; then
  echo "SKIP: no MPI in this build or no mpirun"
  exit 77
fi

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
for np in 2 4; do
  for dt in fp32 bf16; do
    out="$tmp/mpi$np$dt.json"
    # 256 B pins the latency: from 4 KiB up the line is bandwidth-bound and, the curve bending
    # upwards a little, its intercept came out clearly below zero in 4 of 8 runs with 2 ranks,
    # which calibrate refuses (docs/calibration.md, "A negative latency"); with 256 B, 8 of 8
    # fitted 1.6 - 8.8 us. Oversubscribed ranks on a loaded 2-core machine can still time so
    # noisily that the fit finds no growth with size, such a latency or R² below 0.5 (for
    # MPI_Allreduce, the default fit; a poor mpi_rs_ag is kept with a warning); calibrate refuses
    # (exit 1, a message saying so, no file). That is the right answer for such data, not an
    # MPI failure: try again, up to 3 times. (ctest runs this test alone: PROCESSORS 4 in
    # kernels/kernels.cmake; a test beside it used to starve the ranks for all 3 attempts.)
    ok=0
    for attempt in 1 2 3; do
      if mpirun -np $np --oversubscribe "$DTSIM" calibrate --backend mpi --dtype $dt \
        --sizes 256B,4KiB,256KiB,4MiB --repeats 5 --warmup 1 --out "$out" >"$tmp/log" 2>&1; then
        ok=1; break
      fi
      grep -q -e "does not grow with size" -e "a negative latency" -e "below 0.5" "$tmp/log" || break
      [[ ! -e "$out" ]] || fail "a refused fit must leave no file"
      echo "note: noisy timings, no fit (attempt $attempt); retrying"
    done
    ((ok)) || { cat "$tmp/log"; fail "mpirun -np $np ($dt) failed"; }
    grep -q '"backend":[[:space:]]*"mpi"' "$out" || fail "backend not mpi in $out"
    grep -q "\"ranks\":[[:space:]]*$np," "$out" || fail "ranks should be $np in $out"
    grep -q '"name":[[:space:]]*"mpi_allreduce"' "$out" || fail "no mpi_allreduce fit"
    grep -q '"name":[[:space:]]*"mpi_rs_ag"' "$out" || fail "no mpi_rs_ag fit"
    # only rank 0 prints: one table header per algorithm
    [[ $(grep -c '^mpi_allreduce' "$tmp/log") -eq 1 ]] || { cat "$tmp/log"; fail "expected one report (rank 0 only)"; }
  done
done
# The file it wrote is a valid calibration: a 4-rank ring fit gives link figures.
grep -q '"link"' "$tmp/mpi4fp32.json" || fail "no per-link figures"
echo "PASS"
