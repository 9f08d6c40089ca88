#!/usr/bin/env bash
# test_kill9.sh - kill -9 at any point of a command leaves either all of its outputs, complete, or
# none of them (only its hidden temporaries), and the next run of the same command into the same
# place cleans those up and writes what a clean run writes (docs/reliability.md, "Outputs: all or
# nothing" and "Sweeps survive crashes").
#
# For each of `run --timeline --write-trace` (llama3-8b-64-h100, about 0.3 s), `calibrate
# --from-nccl-tests --out --plot` (a PNG drawn by gnuplot), `report` (two plots of a sweep's
# results.csv) and `sweep` (12 points): a clean run gives the reference outputs and the run time
# T; then for 8 delays from a fixed-seed sequence over 0 .. 1.5 T the command is started in a
# fresh directory, sent SIGKILL after that delay, and tests/cli/kill9.py checks the directory:
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
set -uo pipefail
: "${DTSIM:?}" "${SRC:?}"
tmp=$(mktemp -d)
pid=
trap '[[ -n $pid ]] && kill -9 "$pid" 2> /dev/null; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
CHECK=$SRC/tests/cli/kill9.py
# Job control on: each background dtsim leads its own process group, so that its helpers
# (gnuplot) can be waited for by group once it is killed.
set -m

# Fractions of the clean run time: 0, then one uniform draw in each seventh of 0 .. 1.5 (the
# whole run and its end, which load moves), from a fixed seed: every run of the test tries the
# same delays.
FRACS=$(python3 -c '
import random
r = random.Random(20261126)
print(" ".join("%.4f" % x for x in [0.0] + [(i + r.random()) * 1.5 / 7 for i in range(7)]))')

now() { date +%s.%N; }

# case NAME OUTPUTS -- dtsim-arguments: run in DIR/ (cd there), outputs relative to it.
# OUTPUTS is a space-separated list; a report's directory comes before its files.
kill_case() {
    local name=$1 outs=$2
    shift 3
    local -a outputs
    read -r -a outputs <<< "$outs"
    # the clean run: reference outputs and run time
    mkdir "$name.ref"
    local t0 t1
    t0=$(now)
    (cd "$name.ref" && "$DTSIM" "$@" > /dev/null 2> ../err.txt) || { fail "$name: clean run: $(cat err.txt)"; return; }
    t1=$(now)
    local T delays
    T=$(python3 -c "print('%.3f' % ($t1 - $t0))")
    read -r -a delays <<< "$(python3 -c "print(' '.join('%.4f' % (float(f) * $T) for f in '$FRACS'.split()))")"
    python3 -S "$CHECK" ref "$name.ref" "${outputs[@]}" > /dev/null || { fail "$name: clean run's outputs are not whole"; return; }
    ((${#delays[@]} == 8)) || { fail "$name: no delays"; return; }
    local -A seen=()
    local i=0 delay d rc word
    for delay in "${delays[@]}"; do
        i=$((i + 1))
        d=$name.$i
        mkdir "$d"
        cd "$d" || exit 1
        "$DTSIM" "$@" > ../out.txt 2> ../err.txt &
        pid=$!
        cd ..
        sleep "$delay"
        kill -9 "$pid" 2> /dev/null
        wait "$pid"
        rc=$?
        # gnuplot dies with dtsim (PR_SET_PDEATHSIG) or on its broken pipe: within 10 s
        local n=0
        while kill -0 -- "-$pid" 2> /dev/null && ((n < 200)); do
            sleep 0.05
            n=$((n + 1))
        done
        kill -0 -- "-$pid" 2> /dev/null && fail "$name: kill at ${delay}s: a helper of dtsim outlived it by 10 s"
        [[ -n ${KILL9_DEBUG:-} ]] && echo "$name $i delay $delay rc $rc: $(ls -A "$d" | tr "\n" " ")" >&2
        word=$(python3 -S "$CHECK" after "$d" "$name.ref" "$pid" "$rc" "${outputs[@]}" 2> check.txt) ||
            fail "$name: kill at ${delay}s (exit $rc): $(tr '\n' ';' < check.txt)"
        pid=
        seen[$word]=$((${seen[$word]:-0} + 1))
        # recorded sweep points before the resume
        local before=0
        [[ -d $d/out/points ]] && before=$(find "$d/out/points" -name '[0-9]*.json' | wc -l)
        # the same command, uninterrupted, into the same place (where the first one finished,
        # there is nothing to clean up: checked above)
        if ((rc == 0)); then
            rm -rf "$d"
            continue
        fi
        (cd "$d" && "$DTSIM" "$@" > ../out.txt 2> ../err.txt) || fail "$name: rerun after a kill at ${delay}s: $(cat err.txt)"
        python3 -S "$CHECK" clean "$d" "$name.ref" > /dev/null 2> check.txt ||
            fail "$name: rerun after a kill at ${delay}s: $(tr '\n' ';' < check.txt)"
        if [[ $name == sweep ]]; then
            # a resume reruns none of the recorded points
            grep -q "($((12 - before)) run, $before resumed, 0 failed)" out.txt ||
                fail "sweep: resume after a kill at ${delay}s with $before points recorded: $(grep points out.txt)"
        fi
        rm -rf "$d"
    done
    local summary="" k
    for k in none renaming all finished; do summary+=" ${seen[$k]:-0} $k,"; done
    echo "$name: clean run ${T}s; after kill -9:${summary%,}"
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
kill_case sweep "out/results.csv out/results.json" -- sweep "$tmp/sweep.json" --out out --jobs 1 --no-progress
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
