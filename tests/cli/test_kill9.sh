#!/usr/bin/env bash
# test_kill9.sh - kill -9 at any point of a command leaves either all of its outputs, complete, or
# none of them (only its hidden temporaries), and the next run of the same command into the same
# place cleans those up and writes what a clean run writes (docs/reliability.md, "Outputs: all or
# nothing" and "Sweeps survive crashes").
#
# For each of `run --timeline --write-trace` (llama3-8b-64-h100, about 0.3 s), `calibrate
# --from-nccl-tests --out --plot` (a PNG drawn by gnuplot), `report` (two plots of a sweep's
# results.csv) and `sweep` (12 points): a clean run gives the reference outputs and the run time
# T; then for 12 delays from a fixed-seed sequence over 0 .. 1.5 T the command is started in a
# fresh directory and sent SIGKILL after that delay; tests/cli/kill9.py drives this and checks:
#  - status 137 (killed) or 0 (it finished first; then every output is there, nothing else);
#  - every visible file has the bytes of the clean run's (none is ever half-written); anything
#    else is a temporary of the killed PID (.NAME.tmp.PID.N, a sweep's NAME.tmp.PID);
#  - outputs all or none; the one exception, a kill landing between two renames of the commit
#    (microseconds: POSIX renames one path at a time), must show every missing output whole in
#    its temporary, i.e. the commit point had been passed;
#  - the helpers (gnuplot) end with dtsim (the process group empties);
# then (if it was killed) the same command, uninterrupted, into the same directory: exit 0 and
# the directory holds exactly the clean run's files, byte for byte, no temporary (dead-PID
# cleanup). For sweep the second run is the resume: it reruns no recorded point and assembles
# the same results.csv/json.
# Leaves free: where in the run each delay lands (load moves it; every assertion holds at any
# point), so which outcome each delay gives. Calibration files are compared without their date.
# KILL9_DEBUG=1 prints, for each kill, the delay, the status and what the directory held.
# Time (2 shared cores): 9 s release and 23 s ASan at load 2-3; 19 s and 37 s at load 4-6.
set -uo pipefail
: "${DTSIM:?}" "${SRC:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
# kill_case NAME OUTPUTS [--sweep DIR POINTS] -- dtsim-arguments (kill9.py says what it checks)
kill_case() {
    local name=$1 outs=$2
    shift 2
    local -a opt=()
    if [[ $1 == --sweep ]]; then
        opt=("$1" "$2" "$3")
        shift 3
    fi
    shift
    python3 -S "$SRC/tests/cli/kill9.py" case "$name" "$outs" "${opt[@]}" -- "$DTSIM" "$@" ||
        fails=$((fails + 1))
}

cat > sweep.json << 'EOF'
{
  "name": "kill9",
  "topology": {"generator": "dgx", "nodes": 4, "gpus_per_node": 8, "gpu": "H100-SXM"},
  "model": {"kind": "transformer", "layers": 24, "hidden": 2048, "heads": 16, "seq_len": 2048,
            "vocab": 50257},
  "parallel": {"tp": 2, "pp": 4, "micro_batch_size": 1},
  "global_batch": 1024,
  "seed": 1,
  "jitter": {"distribution": "lognormal", "sigma": 0.05},
  "sweep": {"axes": [{"path": "seed", "range": [1, 12]}]}
}
EOF

kill_case run "tl.json tr.json" -- run "$SRC/scenarios/llama3-8b-64-h100.json" --timeline tl.json --write-trace tr.json
kill_case sweep "out/results.csv out/results.json" --sweep out 12 -- sweep "$tmp/sweep.json" --out out --jobs 1 --no-progress
if command -v gnuplot > /dev/null; then
    kill_case calibrate "c.json p.png" -- calibrate --from-nccl-tests "$SRC/tests/data/nccl-tests/a3mega-2x8-h100.all_reduce_perf.log" --out c.json --plot p.png
    # the report's input: the sweep's results (two plots: breakdown, memory)
    mkdir in
    "$DTSIM" sweep "$tmp/sweep.json" --out in --jobs 1 --no-progress > /dev/null 2> err.txt || fail "sweep for report: $(cat err.txt)"
    reps="rep"
    for f in breakdown.dat breakdown.gp breakdown.png breakdown.svg index.html index.md memory.dat memory.gp memory.png memory.svg; do
        reps+=" rep/$f"
    done
    kill_case report "$reps" -- report "$tmp/in/results.csv" --out rep
else
    echo "skip: calibrate --plot and report (no gnuplot)"
fi

if ((fails)); then
    echo "FAIL: $fails kill -9 case(s)" >&2
    exit 1
fi
echo "PASS"
