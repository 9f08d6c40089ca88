#!/usr/bin/env bash
# Regenerate calib-side-{cpu,tcp,mpi}.json, calib-backends.dat and calib-backends.png: the same
# all-reduce calibrated on this machine by three transports side by side - threads over shared
# memory (cpu), processes over loopback TCP (tcp, Gloo's ring), Open MPI ranks (mpi) - 2 ranks,
# fp32, 4 KiB .. 4 MiB, 20 repeats. NCCL joins the table where a machine has 2 or more GPUs
# (`dtsim calibrate --backend nccl`); this one has none.
# usage: docs/img/calib-backends.sh [path/to/dtsim]   (run from the source root; a few seconds)
set -euo pipefail
dtsim=${1:-build/dtsim}
out=docs/img
common=(--ranks 2 --sizes 4KiB:4MiB:x2 --repeats 20 --topk-fraction 0)
"$dtsim" calibrate --backend cpu "${common[@]}" --out "$out/calib-side-cpu.json" >/dev/null
"$dtsim" calibrate --backend tcp "${common[@]}" --out "$out/calib-side-tcp.json" >/dev/null
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -np 2 --oversubscribe \
  "$dtsim" calibrate --backend mpi --sizes 4KiB:4MiB:x2 --repeats 20 --out "$out/calib-side-mpi.json" >/dev/null
python3 - "$out" >"$out/calib-backends.dat" <<'PY'
import json, sys
d = sys.argv[1]
series = [("cpu", "ring"), ("tcp", "tcp_ring"), ("mpi", "mpi_rs_ag"), ("mpi", "mpi_allreduce")]
fits = {}
for b, name in series:
    c = json.load(open(f"{d}/calib-side-{b}.json"))
    fits[name] = [f for f in c["fits"] if f["name"] == name][0]
print("# size_bytes " + " ".join(f"{n}_median_s {n}_fit_s" for _, n in series))
for i, p in enumerate(fits["ring"]["points"]):
    s = p["size"]
    cols = []
    for _, n in series:
        f = fits[n]
        cols += [f"{f['points'][i]['median']:.6e}", f"{f['alpha'] + f['beta'] * s:.6e}"]
    print(int(s), " ".join(cols))
PY
gnuplot "$out/calib-backends.gp"
