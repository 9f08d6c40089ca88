#!/usr/bin/env bash
# test_outputs.sh - every file dtsim writes goes through one output layer (cli/output.c,
# docs/reliability.md), and this pins down what it promises:
#  - special files: a FIFO, a symbolic link, a directory named as an output file are refused
#    (exit 1, the path and why) and left as they were; a character device is written in place
#    and its write errors are reported (a device node of our own: the test never touches /dev);
#  - write errors: stdout onto /dev/full exits 1 with "stdout: write failed: No space left on
#    device" for every command that prints; a full small filesystem (tmpfs, size=64k) fails
#    topo gen, run --timeline and report with exit 1 and leaves no file, empty or not (skipped,
#    with the reason printed, where tmpfs cannot be mounted);
#  - no debris: a failing command leaves none of its outputs (run --write-trace t.json
#    --timeline missing/x.json leaves no t.json; calibrate --plot missing/p.png no c.json);
#    SIGINT/SIGTERM during run --timeline --write-trace, calibrate --plot, report and sweep
#    exit 130/143 with no *.tmp* left and no target created; temporaries of dead processes are
#    removed by the next output to the same target and by the next sweep in the directory,
#    those of live ones kept; two runs writing one --write-trace path both succeed with the
#    right bytes;
#  - injection: calibrate --plot paths and nccl-tests hostnames with quotes, semicolons,
#    newlines and system( reach gnuplot only as data; report names likewise; --plot - puts the
#    PNG on stdout, not in a file named "(null)".
# Leaves free: message wording around the path and the reason; how long a signal takes to act
# (it must act, within 20 s).
set -uo pipefail
: "${DTSIM:?}" "${SRC:?}"
tmp=$(mktemp -d)
mnt=""
cleanup() {
    [[ -n $mnt ]] && umount "$mnt" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
cd "$tmp" || exit 1
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
# Any temporary left below DIR (hidden ones included), or nothing.
tmps() { find "$1" \( -name '*.tmp' -o -name '*.tmp.*' \) -print 2>/dev/null; }

# No sanitizer report, no internal error (ASan's exit status 1 would pass for an expected 1).
sane() { ! grep -qE 'Sanitizer|runtime error:|internal error' "$1" || fail "$2: $(grep -m1 -E 'Sanitizer|runtime error:|internal error' "$1")"; }
# expect STATUS 'TEXT' dtsim-arguments...: exit status, stderr containing TEXT, no temporary.
expect() {
    local want=$1 text=$2
    shift 2
    "$DTSIM" "$@" > out.txt 2> err.txt
    local rc=$?
    [[ $rc == "$want" ]] || fail "dtsim $*: exit $rc, expected $want; stderr: $(head -c 300 err.txt)"
    [[ -z $text ]] || grep -cF -- "$text" err.txt >/dev/null || fail "dtsim $*: stderr lacks '$text': $(head -c 300 err.txt)"
    [[ -z $(tmps .) ]] || fail "dtsim $*: left $(tmps .)"
    sane err.txt "dtsim $*"
}

QS=$SRC/scenarios/quickstart.json
BIG=$SRC/scenarios/llama3-8b-64-h100.json
LOG=$SRC/tests/data/nccl-tests/a3mega-2x8-h100.all_reduce_perf.log
have_gnuplot=0
command -v gnuplot > /dev/null && have_gnuplot=1
printf 'size_bytes,busbw_GBps,algo\n1024,1.5,ring\n4096,3.5,ring\n1024,1,tree\n4096,2.5,tree\n' > table.csv

# ---- special files -------------------------------------------------------------------------
mkfifo fifo
ln -s target.json link
mkdir adir
expect 1 'fifo: is a FIFO' topo gen ring --gpus 8 -o fifo
[[ -p fifo ]] || fail "the FIFO was replaced"
expect 1 'link: is a symbolic link' topo gen ring --gpus 8 -o link
[[ -L link && ! -e target.json ]] || fail "the symbolic link was replaced or followed"
expect 1 'adir: is a directory' topo gen ring --gpus 8 -o adir
expect 1 'fifo: is a FIFO' run "$QS" --timeline fifo
expect 1 'link: is a symbolic link' run "$QS" --write-trace link
expect 1 'fifo: is a FIFO' calibrate --from-nccl-tests "$LOG" --out c.json --plot fifo
[[ ! -e c.json ]] || fail "calibrate left c.json after refusing its plot"
expect 1 'fifo: is a FIFO' calibrate --from-nccl-tests "$LOG" --out fifo
expect 1 'fifo: is a FIFO, not a directory' goodput "$SRC/scenarios/gpt3-175b-1024-goodput.json" --runs 10 --plot fifo
expect 1 'link: is a symbolic link, not a directory' report table.csv --out link
[[ -p fifo && -L link && ! -e target.json ]] || fail "a special file was replaced"
# /dev/stdout is stdout (a link to whatever fd 1 is: here a pipe). Only tried with a dtsim that
# refused the link above: an old one, run as root, replaced /dev/stdout itself.
if [[ -L link && ! -e target.json ]]; then
    "$DTSIM" topo gen ring --gpus 8 -o /dev/stdout 2> err.txt | python3 -c 'import json, sys; json.load(sys.stdin)' ||
        fail "topo gen -o /dev/stdout: not one JSON document on stdout: $(cat err.txt)"
fi
# Character devices of our own (never /dev: an old dtsim running as root replaced them).
if mknod nulldev c 1 3 2> /dev/null && mknod fulldev c 1 7 2> /dev/null; then
    expect 0 '' topo gen ring --gpus 8 -o nulldev
    expect 1 'fulldev: write failed: No space left on device' topo gen ring --gpus 8 -o fulldev
    expect 1 'fulldev: writing the timeline failed: No space left on device' run "$QS" --timeline fulldev
    [[ -c nulldev && -c fulldev ]] || fail "a device node was replaced by a regular file"
else
    echo "skip: device nodes (mknod not permitted here): character-device outputs untested"
fi

# ---- write errors: stdout onto a full device -----------------------------------------------
"$DTSIM" topo gen ring --gpus 8 -o ring8.json > /dev/null || fail "topo gen"
cat > p.json << 'EOF'
{"topology": {"generator": "dgx", "nodes": 1, "gpus_per_node": 4, "gpu": "H100-SXM"},
 "model": {"kind": "transformer", "layers": 4, "hidden": 256, "heads": 8, "seq_len": 128,
           "vocab": 1000},
 "global_batch": 16, "seed": 1,
 "sweep": {"axes": [{"path": "parallel.tp", "values": [1, 2]}]}}
EOF
full_stdout() {
    "$DTSIM" "$@" > /dev/full 2> err.txt
    local rc=$?
    [[ $rc == 1 ]] || fail "dtsim $* > /dev/full: exit $rc, expected 1"
    grep -q 'stdout: write failed: No space left on device' err.txt ||
        fail "dtsim $* > /dev/full: stderr: $(head -c 300 err.txt)"
    sane err.txt "dtsim $* > /dev/full"
}
full_stdout topo gen ring --gpus 8 -o -
full_stdout topo info ring8.json
full_stdout run "$QS"
full_stdout run "$QS" --json
full_stdout memory "$QS"
full_stdout sweep p.json --list
full_stdout collective --topology gen:ring:gpus=8 --op allreduce --size 1MiB
full_stdout plan p.json --gpus 4 --top 3
full_stdout calibrate --from-nccl-tests "$LOG" --out cj.json --json
[[ ! -e cj.json ]] || fail "calibrate committed cj.json although its stdout failed"
full_stdout --help
if ((have_gnuplot)); then
    full_stdout report table.csv --out rep_full
    [[ ! -e rep_full ]] || fail "report committed rep_full although its stdout failed"
fi

# ---- write errors: a full small filesystem -------------------------------------------------
mkdir small
if mount -t tmpfs -o size=64k tmpfs small 2> /dev/null; then
    mnt=$tmp/small
    # a 1,024-GPU topology is 600 KB of JSON: the disk fills mid-file
    expect 1 'small/t.json: write error: No space left on device' \
        topo gen dgx --nodes 128 --gpus-per-node 8 -o small/t.json
    expect 1 'small/tl.json: writing the timeline failed: No space left on device' run "$QS" --timeline small/tl.json
    [[ -z $(ls -A small) ]] || fail "full disk: left $(ls -A small)"
    if ((have_gnuplot)); then
        # tmpfs counts 4 KiB pages: room for the .dat, .gp and index files, not the pictures
        # (gnuplot itself reports nothing: dtsim finds the PNG cut short)
        head -c $((44 * 1024)) /dev/zero > small/filler 2> /dev/null
        expect 1 'gnuplot left this picture incomplete' report table.csv --out small/rep
        [[ ! -e small/rep ]] || fail "full disk: report left $(ls -A small/rep | tr '\n' ' ')"
        # and with no room even for the data files
        head -c $((64 * 1024)) /dev/zero >> small/filler 2> /dev/null
        expect 1 'No space left on device' report table.csv --out small/rep
        [[ ! -e small/rep ]] || fail "full disk: report left $(ls -A small/rep | tr '\n' ' ')"
        rm -f small/filler
    fi
    [[ -z $(ls -A small) ]] || fail "full disk: left $(ls -A small)"
    umount small && mnt=""
else
    echo "skip: full-filesystem tests (cannot mount a tmpfs here: not root, or no CAP_SYS_ADMIN)"
fi

# ---- failing commands leave none of their outputs ------------------------------------------
expect 1 'missing/x.json' run "$QS" --write-trace t.json --timeline missing/x.json
[[ ! -e t.json ]] || fail "run left t.json although --timeline failed"
if ((have_gnuplot)); then
    expect 1 'missing/p.png' calibrate --from-nccl-tests "$LOG" --out c.json --plot missing/p.png
    [[ ! -e c.json ]] || fail "calibrate left c.json although --plot failed"
fi
expect 2 'given as two outputs' run "$QS" --write-trace same.json --timeline same.json
[[ ! -e same.json ]] || fail "two outputs onto one path: left same.json"

# Two runs writing the same trace at once: each its own temporary, both succeed, whole file.
"$DTSIM" run "$BIG" --write-trace ref.json > /dev/null || fail "reference trace"
"$DTSIM" run "$BIG" --write-trace two.json > /dev/null 2> e1.txt &
p1=$!
"$DTSIM" run "$BIG" --write-trace two.json > /dev/null 2> e2.txt &
p2=$!
wait $p1 || fail "concurrent run 1: $(cat e1.txt)"
wait $p2 || fail "concurrent run 2: $(cat e2.txt)"
cmp -s ref.json two.json || fail "two runs writing one trace: not the reference bytes"
[[ -z $(tmps .) ]] || fail "concurrent runs left $(tmps .)"

# A temporary of a dead process (kill -9 leaves them) is removed by the next output to the same
# target; one of a live process is not.
sleep 0 &
dead=$!
wait $dead
printf 'partial' > ".ring.json.tmp.$dead.1"
printf 'live' > ".ring.json.tmp.$$.1"
"$DTSIM" topo gen ring --gpus 8 -o ring.json > /dev/null || fail "topo gen over stale temporaries"
[[ ! -e .ring.json.tmp.$dead.1 ]] || fail "a dead process's temporary was not removed"
[[ -e .ring.json.tmp.$$.1 ]] || fail "a live process's temporary was removed"
rm -f ".ring.json.tmp.$$.1"

# A reader that left (`dtsim run --timeline t.json | head`): SIGPIPE on the final flush of
# stdout, before the renames, exits 141 (as a process killed by SIGPIPE reads) and leaves
# neither t.json nor its temporary. The pipe's read end is closed before dtsim starts.
mkdir pp
rc=$(cd pp && python3 -c '
import os, subprocess, sys
r, w = os.pipe()
os.close(r)
print(subprocess.run(sys.argv[1:], stdout=w, stderr=subprocess.DEVNULL).returncode)' \
    "$DTSIM" run "$QS" --timeline t.json)
[[ $rc == -13 || $rc == 141 ]] || fail "run onto a closed pipe: status $rc, expected 141"
[[ -z $(ls -A pp) ]] || fail "run onto a closed pipe left $(ls -A pp)"

# ---- signals ---------------------------------------------------------------------------------
# Job control on: background jobs keep SIGINT (a non-interactive shell would ignore it for them).
set -m
# interrupt SIG STATUS PATTERN DIR dtsim-arguments...: start dtsim in DIR, wait until a file
# matching PATTERN appears below DIR, send SIG, expect STATUS and no temporary below DIR.
interrupt() {
    local sig=$1 want=$2 pat=$3 dir=$4
    shift 4
    (cd "$dir" && exec "$DTSIM" "$@") > "$tmp/sig_out.txt" 2> "$tmp/sig_err.txt" &
    local pid=$! i seen=0
    for ((i = 0; i < 4000; i++)); do
        if [[ -n $(find "$dir" -name "$pat" -print -quit 2> /dev/null) ]]; then
            seen=1
            break
        fi
        kill -0 $pid 2> /dev/null || break
        sleep 0.005
    done
    ((seen)) || fail "dtsim $*: never saw $pat before it ended (too fast to interrupt?)"
    kill -s "$sig" $pid 2> /dev/null
    local rc=0 t
    for ((t = 0; t < 2000; t++)); do kill -0 $pid 2> /dev/null || break; sleep 0.01; done
    kill -0 $pid 2> /dev/null && { kill -KILL $pid; fail "dtsim $*: still running 20 s after SIG$sig"; }
    wait $pid
    rc=$?
    kill -KILL -- -$pid 2> /dev/null # what it started (a slow gnuplot stand-in) goes too
    [[ $rc == "$want" ]] || fail "dtsim $* on SIG$sig: exit $rc, expected $want; $(head -c 300 "$tmp/sig_err.txt")"
    [[ -z $(tmps "$dir") ]] || fail "dtsim $* on SIG$sig: left $(tmps "$dir")"
    sane "$tmp/sig_err.txt" "dtsim $* on SIG$sig"
}

# run: during the simulation (the trace is written first) and while the timeline is written
mkdir r1 r2
interrupt INT 130 '*tr.json.tmp*' r1 run "$BIG" --timeline tl.json --write-trace tr.json
[[ ! -e r1/tl.json && ! -e r1/tr.json ]] || fail "SIGINT during run left $(ls r1)"
interrupt TERM 143 '*tl.json.tmp*' r2 run "$BIG" --timeline tl.json --write-trace tr.json
[[ ! -e r2/tl.json && ! -e r2/tr.json ]] || fail "SIGTERM during run left $(ls r2)"

if ((have_gnuplot)); then
    # a gnuplot that takes its time, so the signal lands while the plot is drawn
    mkdir slow
    real=$(command -v gnuplot)
    printf '#!/bin/sh\n[ "$1" = --version ] && exec %s --version\nsleep 30\nexec %s "$@"\n' \
        "$real" "$real" > slow/gnuplot
    chmod +x slow/gnuplot
    mkdir c1
    PATH=$tmp/slow:$PATH interrupt INT 130 '*p.png.tmp*' c1 calibrate --from-nccl-tests "$LOG" --out c.json --plot p.png
    [[ -z $(ls c1) ]] || fail "SIGINT during calibrate --plot left $(ls c1)"
    # report: interrupted while its (slow) gnuplot draws; neither the report nor a part of it
    mkdir rp
    cp table.csv rp/
    DTSIM_GNUPLOT=$tmp/slow/gnuplot interrupt TERM 143 '*.gp' rp report table.csv --out rep
    [[ ! -e rp/rep ]] || fail "SIGTERM during report left rp/rep: $(ls -A rp/rep)"
    [[ $(ls -A rp) == table.csv ]] || fail "SIGTERM during report left $(ls -A rp)"
fi

# sweep: interrupted once a point is recorded; the records stay (resume), nothing else does
python3 - "$BIG" << 'PY' || fail "sweep fixture"
import json, sys
d = json.load(open(sys.argv[1]))
d["sweep"] = {"axes": [{"path": "seed", "range": [1, 8]}]}
json.dump(d, open("sw.json", "w"))
PY
mkdir sw
interrupt INT 130 '0*.json' sw sweep "$tmp/sw.json" --out out --jobs 1 --no-progress
[[ ! -e sw/out/results.csv && ! -e sw/out/results.json ]] || fail "SIGINT during sweep assembled results"
# Stale temporaries in a sweep directory: the next sweep removes those of dead processes (its
# own results.* at once: the directory lock says no sweep is writing them), keeps live ones.
printf 'partial' > "sw/out/results.csv.tmp.$dead"
mkdir "sw/out/.report.tmp.$dead.1"
printf 'x' > "sw/out/.report.tmp.$dead.1/scaling.dat"
printf 'live' > "sw/out/.report.tmp.$$.1"
"$DTSIM" sweep "$tmp/sw.json" --out sw/out --jobs 2 --no-progress > /dev/null 2> err.txt ||
    fail "resumed sweep: $(cat err.txt)"
[[ -s sw/out/results.csv ]] || fail "resumed sweep: no results.csv"
[[ ! -e sw/out/results.csv.tmp.$dead && ! -e sw/out/.report.tmp.$dead.1 ]] ||
    fail "sweep kept a dead process's temporaries: $(ls -A sw/out)"
[[ -e sw/out/.report.tmp.$$.1 ]] || fail "sweep removed a live process's temporary"
rm -f "sw/out/.report.tmp.$$.1"
set +m
# One sweep at a time per directory: a held lock refuses the second (status 1 or 2: which one
# is the bad-input work's to settle), with nothing written.
if command -v flock > /dev/null; then
    before=$(ls -lR sw/out | md5sum)
    flock sw/out/.lock "$DTSIM" sweep "$tmp/sw.json" --out sw/out --no-progress > /dev/null 2> err.txt
    rc=$?
    ((rc == 1 || rc == 2)) && grep -q 'another dtsim sweep' err.txt ||
        fail "a second sweep into a locked directory: exit $rc: $(cat err.txt)"
    [[ $(ls -lR sw/out | md5sum) == "$before" ]] || fail "a refused sweep changed its directory"
fi

# ---- injection -------------------------------------------------------------------------------
if ((have_gnuplot)); then
    mkdir inj
    cd inj || exit 1
    evil="x.png'; system('touch PWNED'); set output 'y.png"
    "$DTSIM" calibrate --from-nccl-tests "$LOG" --out c.json --plot "$evil" > /dev/null 2> ../err.txt ||
        fail "calibrate --plot with quotes in the path: $(cat ../err.txt)"
    [[ ! -e PWNED && ! -e y.png ]] || fail "calibrate --plot ran script text from its path"
    head -c 8 "$evil" 2> /dev/null | od -An -c | grep -c 'P   N   G' >/dev/null || fail "no PNG at the quoted path"
    nl=$'a\nset output "z.png"; system("touch PWNED2") #.png'
    "$DTSIM" calibrate --from-nccl-tests "$LOG" --out c2.json --plot "$nl" > /dev/null 2> ../err.txt ||
        fail "calibrate --plot with a newline in the path: $(cat ../err.txt)"
    [[ ! -e PWNED2 && ! -e z.png && -s $nl ]] || fail "calibrate --plot ran script text from a newline"
    # a hostname in an nccl-tests log goes into the title
    sed "s/ztan-mig-235z/h';system\"touch\\\\040PWNED3\";'/" "$LOG" > evil.log
    grep -q "system" evil.log || fail "evil.log fixture"
    "$DTSIM" calibrate --from-nccl-tests evil.log --out c3.json --plot h.png > /dev/null 2> ../err.txt ||
        fail "calibrate with a quoted hostname: $(cat ../err.txt)"
    [[ ! -e PWNED3 && -s h.png ]] || fail "a hostname from the log ran as gnuplot script"
    # --plot -: the PNG on stdout, the summary on stderr, no file named (null)
    "$DTSIM" calibrate --from-nccl-tests "$LOG" --out c4.json --plot - > plot.bin 2> ../err.txt ||
        fail "calibrate --plot -: $(cat ../err.txt)"
    [[ ! -e '(null)' ]] || fail "calibrate --plot - wrote a file named (null)"
    head -c 8 plot.bin | od -An -c | grep -c 'P   N   G' >/dev/null || fail "calibrate --plot -: stdout is not a PNG"
    grep -q 'nccltests_allreduce' ../err.txt || fail "calibrate --plot -: no summary on stderr"
    # report: names from the data and an output directory with quotes, semicolons, newlines
    printf 'size_bytes,busbw_GBps,algo\n1,2,"a'"'"'; system('"'"'touch PWNED4'"'"'); print '"'"'"\n2,3,"b\n""; system(""touch PWNED4"")"\n' > evil.csv
    out=$'r\'; system("touch PWNED5");\n'
    "$DTSIM" report evil.csv --out "$out" > /dev/null 2> ../err.txt || fail "report of evil.csv: $(cat ../err.txt)"
    [[ ! -e PWNED4 && ! -e PWNED5 && ! -e "$out/PWNED4" && ! -e "$out/PWNED5" ]] || fail "report ran text from its data or path"
    [[ -s "$out/busbw.png" && -s "$out/busbw.svg" ]] || fail "report of evil.csv: no pictures"
    [[ -z $(tmps .) ]] || fail "injection cases left $(tmps .)"
    cd ..
fi

if ((fails)); then
    echo "FAIL: $fails output case(s)" >&2
    exit 1
fi
echo "PASS"
