#!/usr/bin/env bash
# test_lean.sh - the lean `dtsim` and its hand-over to dtsim-full.
# Pins down: dtsim links none of MPI, CUDA, NCCL, hwloc, libstdc++ (ldd); it runs a scenario and
# prints its version; `calibrate --backend mpi|cuda|nccl` and a sweep started by mpirun (its
# environment) replace the process by $DTSIM_FULL (else dtsim-full beside dtsim) with the same
# arguments and environment; when that program is missing: exit 1, a message naming dtsim-full
# and DTSIM_FULL, no output file; --backend cpu and plain sweeps stay in dtsim.
# Leaves free: start-up time (docs/performance.md measures it).
set -euo pipefail
: "${DTSIM:?}" "${SRC:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

if command -v ldd >/dev/null; then
  libs=$(ldd "$DTSIM")
  # the sanitizers' runtimes bring the C++ runtime themselves
  grep -q -E 'libasan|libubsan' <<<"$libs" && libs=$(grep -v 'libstdc++' <<<"$libs")
  if grep -E -i 'libmpi|open-rte|open-pal|nccl|cuda|hwloc|libstdc\+\+' <<<"$libs"; then
    fail "dtsim links a hardware library"
  fi
fi
"$DTSIM" --version | grep -c '^dtsim ' >/dev/null || fail "--version"
"$DTSIM" run "$SRC/scenarios/quickstart.json" --json >"$tmp/run.json" || fail "run failed"
grep -q '"step_time_s"' "$tmp/run.json" || fail "run printed no step time"

# A stand-in for dtsim-full that reports how it was called.
cat >"$tmp/full" <<'SH'
#!/usr/bin/env bash
echo "full: $* | ranks=${OMPI_COMM_WORLD_SIZE:-none}"
SH
chmod +x "$tmp/full"
out=$(DTSIM_FULL="$tmp/full" "$DTSIM" calibrate --backend nccl --out "$tmp/c.json" --sizes 1KiB)
[[ $out == "full: calibrate --backend nccl --out $tmp/c.json --sizes 1KiB | ranks=none" ]] || fail "handed over as: $out"
out=$(DTSIM_FULL="$tmp/full" OMPI_COMM_WORLD_SIZE=2 "$DTSIM" sweep "$tmp/s.json" --out "$tmp/o")
[[ $out == "full: sweep $tmp/s.json --out $tmp/o | ranks=2" ]] || fail "mpirun sweep handed over as: $out"
# --backend cpu is dtsim's own (it fails here on the missing --out value, not by handing over)
out=$(DTSIM_FULL="$tmp/full" "$DTSIM" calibrate --backend cpu 2>&1 || true)
grep -q '^full:' <<<"$out" && fail "--backend cpu was handed over"

set +e
msg=$(DTSIM_FULL="$tmp/missing" "$DTSIM" calibrate --backend mpi --out "$tmp/c.json" 2>&1)
rc=$?
set -e
[[ $rc -eq 1 ]] || fail "missing dtsim-full: expected exit 1, got $rc"
grep -q 'dtsim-full' <<<"$msg" && grep -q 'DTSIM_FULL' <<<"$msg" || fail "message: $msg"
[[ ! -e "$tmp/c.json" ]] || fail "output left behind"
echo ok
