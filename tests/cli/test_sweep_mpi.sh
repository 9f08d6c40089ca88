#!/usr/bin/env bash
# `mpirun -np 2 dtsim sweep` divides the points between two ranks and rank 0 writes the same
# results.csv/json, byte for byte, as a local sweep; resuming under MPI after losing some points
# also matches. Exit 77 (skipped) when this build has no MPI or mpirun is missing.
set -euo pipefail
if ! grep -q DTSIM_HAVE_MPI "$BUILD/CMakeFiles/libdtsim.dir/flags.make" 2>/dev/null ||
   ! command -v mpirun > /dev/null; then
  echo "skipped: no MPI in this build"
  exit 77
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mpi() { timeout 120 mpirun -np "$1" --oversubscribe "${@:2}"; }

cat > "$T/s.json" <<'EOF'
{
  "name": "mpi-sweep",
  "topology": {"generator": "dgx", "nodes": 2, "gpus_per_node": 4, "gpu": "H100-SXM"},
  "model": {"kind": "transformer", "layers": 12, "hidden": 768, "heads": 12, "seq_len": 1024,
            "vocab": 50257},
  "parallel": {"tp": 1, "pp": 2, "micro_batch_size": 2},
  "global_batch": 64,
  "seed": 3,
  "sweep": {"axes": [{"zip": [{"path": "parallel.tp", "values": [1, 2, 4]},
                              {"path": "parallel.micro_batch_size", "values": [1, 2, 4]}]},
                     {"path": "global_batch", "range": [32, 256], "step": "x2"}]}
}
EOF

"$DTSIM" sweep "$T/s.json" --out "$T/local" --jobs 2 --no-progress > /dev/null
mpi 2 "$DTSIM" sweep "$T/s.json" --out "$T/mpi" --jobs 1 --json > "$T/mpi.json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["ranks"]==2 and d["points"]==12 and d["ran"]==12, d' "$T/mpi.json" \
  || fail "summary: $(cat "$T/mpi.json")"
cmp "$T/local/results.csv" "$T/mpi/results.csv" || fail "MPI CSV differs from the local sweep"
cmp "$T/local/results.json" "$T/mpi/results.json" || fail "MPI JSON differs from the local sweep"

# Lose a few points and resume under MPI.
rm -f "$T/mpi/points/00000001.json" "$T/mpi/points/00000004.json" "$T/mpi/points/00000011.json" "$T/mpi/results.csv"
mpi 2 "$DTSIM" sweep "$T/s.json" --out "$T/mpi" --json > "$T/mpi2.json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["resumed"]==9 and d["ran"]==3, d' "$T/mpi2.json" \
  || fail "resume summary: $(cat "$T/mpi2.json")"
cmp "$T/local/results.csv" "$T/mpi/results.csv" || fail "MPI resume CSV differs"
echo "ok"
