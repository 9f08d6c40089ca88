#!/usr/bin/env bash
# test_determinism.sh - same input + seed = same bytes, whatever the thread count.
# Pins down: `dtsim run` twice on a jittered, straggling scenario gives byte-identical --json
# but for wall_s, and a different --seed changes step_time_s (so the jitter is really drawn);
# the trace and timeline files written twice are identical; `dtsim plan` ranks identically with
# --jobs 1 and --jobs 2; `dtsim collective --json` rows repeat but for wall_s.
# (sweep --jobs 1 vs 3 and resume are test_sweep.sh / test_sweep_resume.sh.)
# Leaves free: wall-clock fields, which are measurements.
set -euo pipefail
: "${DTSIM:?}" "${SRC:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
nowall() { grep -v '"wall_s"' "$1"; }

s="$SRC/scenarios/lab-straggler.json"
"$DTSIM" run "$s" --json --write-trace "$tmp/t1.json" > "$tmp/r1"
"$DTSIM" run "$s" --json --write-trace "$tmp/t2.json" > "$tmp/r2"
cmp <(nowall "$tmp/r1") <(nowall "$tmp/r2") || fail "run: two runs of $s differ"
cmp "$tmp/t1.json" "$tmp/t2.json" || fail "run: written traces differ"
"$DTSIM" run "$s" --json --seed 7 > "$tmp/r3"
step() { sed -n 's/.*"step_time_s":[[:space:]]*\([0-9.e+-]*\).*/\1/p' "$1"; }
[[ -n $(step "$tmp/r1") ]] || fail "no step_time_s in the output"
[[ $(step "$tmp/r1") != $(step "$tmp/r3") ]] || fail "--seed 7 gave the same step time as seed 42"

q="$SRC/scenarios/quickstart.json"
"$DTSIM" run "$q" --timeline "$tmp/tl1.json" > /dev/null
"$DTSIM" run "$q" --timeline "$tmp/tl2.json" > /dev/null
cmp "$tmp/tl1.json" "$tmp/tl2.json" || fail "timelines differ"

"$DTSIM" plan "$q" --gpus 16 --jobs 1 --json > "$tmp/p1"
"$DTSIM" plan "$q" --gpus 16 --jobs 2 --json > "$tmp/p2"
grep -q '"best"' "$tmp/p1" || fail "plan printed no ranking"
cmp <(nowall "$tmp/p1") <(nowall "$tmp/p2") || fail "plan: --jobs 1 and --jobs 2 differ"

c=(collective --topology gen:dgx:nodes=2,gpus_per_node=8 --op allreduce --size 1MiB:64MiB:x4 --json)
"$DTSIM" "${c[@]}" > "$tmp/c1"
"$DTSIM" "${c[@]}" > "$tmp/c2"
cmp <(nowall "$tmp/c1") <(nowall "$tmp/c2") || fail "collective: two runs differ"
echo "PASS"
