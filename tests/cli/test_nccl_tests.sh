#!/usr/bin/env bash
# test_nccl_tests.sh - `dtsim calibrate --from-nccl-tests` on published nccl-tests logs.
# Pins down:
#  - the round trip: log -> calibration -> `dtsim collective` reproduces the log's busbw (the mean
#    of its out-of-place and in-place columns) within 5 % at every size the calibration covers,
#    for a multi-host all_reduce_perf run (2 x 8 H100: inter-host links, on gen:dgx 2x8 with the
#    ring) and a single-host sendrecv_perf run (8 x A100: intra-host links, one pair);
#  - what the import decides from the log: collective, ranks, hosts and scope, the fitted range
#    (16 MiB..8 GiB for the H100 run: below it NCCL's latency-bound protocols leave the line),
#    the samples (out-of-place and in-place), the file's format fields;
#  - noise in a real log (mpirun tags, Open MPI and NCCL lines between rows) changes nothing;
#  - truncated and garbled logs are refused with the line, exit 2, no output file: a row cut
#    short, a table without '# Avg bus bandwidth', a digit changed in a time, wrong elements,
#    one rank listed twice (no MPI), a single size, no table, a conflicting --nccl-op, a log
#    that does not say which collective it measured;
#  - usage: kernel options are refused with --from-nccl-tests.
# Leaves free: the wording around the quoted parts of the messages.
set -euo pipefail
: "${DTSIM:?}" "${SRC:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
data=$SRC/tests/data/nccl-tests
h100=$data/a3mega-2x8-h100.all_reduce_perf.log
a100=$data/a100-8.sendrecv_perf.log

# ---- the round trip, multi-host all_reduce
"$DTSIM" calibrate --from-nccl-tests "$h100" --out "$tmp/h100.json" >"$tmp/h100.txt"
grep -q "fitted 16 MiB .. 8 GiB" "$tmp/h100.txt" || { cat "$tmp/h100.txt"; fail "H100 range"; }
grep -q "(not fitted)" "$tmp/h100.txt" || fail "sizes outside the range are not marked"
"$DTSIM" collective --topology gen:dgx:nodes=2,gpus_per_node=8 --op allreduce --algo ring \
  --size 8B:8GiB:x2 --elem-bytes 4 --calibration "$tmp/h100.json" --json >"$tmp/h100-sim.json"
python3 - "$h100" "$tmp/h100.json" "$tmp/h100-sim.json" <<'PY'
import json, sys
log, cal, sim = sys.argv[1:]
rows = {}
for line in open(log):
    f = line.split()
    if len(f) == 13 and f[0].isdigit():
        rows[int(f[0])] = (float(f[7]) + float(f[11])) / 2   # mean busbw, GB/s
c = json.load(open(cal))
assert c["backend"] == "nccl-tests" and c["ranks"] == 16 and c["dtype"] == "fp32", c
assert c["source"] == "a3mega-2x8-h100.all_reduce_perf.log", c["source"]
assert c["machine"]["gpu"] == "16 x NVIDIA H100 80GB HBM3", c["machine"]
assert c["repeats"] == 20 and c["warmup"] == 5
f = c["fits"][0]
assert f["name"] == "nccltests_allreduce_inter" and f["kind"] == "allreduce", f
assert f["scope"] == "inter-host" and f["hosts"] == 2, f
assert f["fit_range"]["from"] == 16 << 20 and f["fit_range"]["to"] == 8 << 30, f["fit_range"]
assert len(f["points"]) == 31 and all(len(p["samples"]) == 2 for p in f["points"])
assert f["samples"] == 20, f["samples"]   # 10 sizes x (out-of-place, in-place)
# link figures: alpha / (2(n-1)), 2(n-1)/(n beta)
assert abs(f["link"]["latency"] / (f["alpha"] / 30) - 1) < 1e-9
assert abs(f["link"]["bandwidth"] / (30 / (16 * f["beta"])) - 1) < 1e-9
covered = 0
for r in json.load(open(sim)):
    size = int(r["size_bytes"])
    if size < f["fit_range"]["from"] or size > f["fit_range"]["to"]:
        continue
    want, got = rows[size], r["busbw_GBps"]
    err = got / want - 1
    print("%11d  log %7.2f GB/s  dtsim %7.2f GB/s  %+5.1f%%" % (size, want, got, 100 * err))
    assert abs(err) <= 0.05, (size, want, got)
    covered += 1
assert covered == 10, covered
PY

# ---- the round trip, single-host sendrecv (header-less as published: pair figures, a warning)
"$DTSIM" calibrate --from-nccl-tests "$a100" --out "$tmp/a100.json" >"$tmp/a100.txt" 2>"$tmp/a100.err"
grep -q "no device list" "$tmp/a100.err" || fail "no warning about the missing device list"
"$DTSIM" collective --topology gen:switch:gpus=8 --op sendrecv --group 0,1 --size 256MiB:1GiB:x2 \
  --calibration "$tmp/a100.json" --json >"$tmp/a100-sim.json"
python3 - "$a100" "$tmp/a100.json" "$tmp/a100-sim.json" <<'PY'
import json, sys
log, cal, sim = sys.argv[1:]
rows = {}
for line in open(log):
    f = line.split()
    if len(f) == 13 and f[0].isdigit():
        rows[int(f[0])] = (float(f[7]) + float(f[11])) / 2
c = json.load(open(cal))
f = c["fits"][0]
assert f["kind"] == "sendrecv" and "scope" not in f, f          # intra-host by default
assert f["fit_range"]["from"] == 256 << 20, f["fit_range"]      # 128 MiB is off the line
assert abs(f["link"]["latency"] / f["alpha"] - 1) < 1e-9 and abs(f["link"]["bandwidth"] * f["beta"] - 1) < 1e-9
n = 0
for r in json.load(open(sim)):
    size = int(r["size_bytes"])
    err = r["busbw_GBps"] / rows[size] - 1
    print("%11d  log %7.2f GB/s  dtsim %7.2f GB/s  %+5.1f%%" % (size, rows[size], r["busbw_GBps"], 100 * err))
    assert abs(err) <= 0.05
    n += 1
assert n == 3
PY

# ---- noise from mpirun and NCCL between the rows changes nothing
python3 - "$h100" "$tmp/noisy.log" <<'PY'
import sys
src, dst = sys.argv[1:]
out = []
for i, line in enumerate(open(src)):
    out.append("[1,0]<stdout>:" + line)
    if i == 25: out.append("8 more processes have sent help message help-mtl-ofi.txt / OFI call fail\n")
    if i == 30: out.append("ztan-mig-235z:6899:6950 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n")
    if i == 31: out.append("[1,3]<stderr>:   1024 256 float sum -1 garbage on stderr is not the table\n")
    if i == 33: out.append("\n")
open(dst, "w").writelines(out)
PY
"$DTSIM" calibrate --from-nccl-tests "$tmp/noisy.log" --out "$tmp/noisy.json" >/dev/null
python3 - "$tmp/h100.json" "$tmp/noisy.json" <<'PY'
import json, sys
a, b = (json.load(open(p))["fits"] for p in sys.argv[1:])
assert a == b, "noise changed the fit"
PY

# ---- refusals: exit 2, the line in the message, no output file
bad() { # NAME EXPECTED-TEXT dtsim-args...
  local name=$1 text=$2; shift 2
  rm -f "$tmp/out.json"
  local rc=0
  "$DTSIM" "$@" --out "$tmp/out.json" >"$tmp/$name.out" 2>"$tmp/$name.err" || rc=$?
  [[ $rc -eq 2 ]] || { cat "$tmp/$name.err"; fail "$name: exit $rc, expected 2"; }
  grep -qF -- "$text" "$tmp/$name.err" || { cat "$tmp/$name.err"; fail "$name: message lacks '$text'"; }
  [[ ! -e "$tmp/out.json" ]] || fail "$name: wrote a calibration"
  ! ls "$tmp"/out.json.tmp* >/dev/null 2>&1 || fail "$name: left a temporary file"
}
head -n 47 "$h100" >"$tmp/cut.log"; head -n 48 "$h100" | tail -n 1 | cut -c1-70 >>"$tmp/cut.log"
bad cut "cut.log: line 48: 7 fields where the header at line 22 has 13" calibrate --from-nccl-tests "$tmp/cut.log"
head -n 54 "$h100" >"$tmp/noend.log"
bad noend "noend.log: line 54: the log ends inside the table that starts at line 22" \
  calibrate --from-nccl-tests "$tmp/noend.log"
sed '51s/ 6759.0 / 6959.0 /' "$h100" >"$tmp/garbled.log"
bad garbled "garbled.log: line 51: algbw 158.86 GB/s is not size/time" calibrate --from-nccl-tests "$tmp/garbled.log"
sed '45s/ 32.18      0 / 32.18      3 /' "$h100" >"$tmp/wrong.log"
bad wrong "wrong.log: line 45: 3 wrong elements" calibrate --from-nccl-tests "$tmp/wrong.log"
sed '5s/Rank  1 /Rank  0 /' "$h100" >"$tmp/nompi.log"
bad nompi "nompi.log: line 5: rank 0 is listed twice (first at line 4)" calibrate --from-nccl-tests "$tmp/nompi.log"
bad one "1 size in the range to fit" calibrate --from-nccl-tests "$data/oci-1x8-a100-10GiB.all_reduce_perf.log"
printf 'hello\nnot a log\n' >"$tmp/none.log"
bad none "none.log: no nccl-tests result table" calibrate --from-nccl-tests "$tmp/none.log"
{ echo "# Collective test starting: all_reduce_perf"; cat "$h100"; } >"$tmp/named.log"
bad conflict "named.log: line 1: the log says all_reduce_perf but --nccl-op says all_gather" \
  calibrate --from-nccl-tests "$tmp/named.log" --nccl-op all_gather
cp "$a100" "$tmp/anonymous.log"
bad anon "busbw = algbw fits sendrecv and a 2-rank all_reduce alike" calibrate --from-nccl-tests "$tmp/anonymous.log"
bad kernel "kernel options" calibrate --from-nccl-tests "$h100" --ranks 4
bad range "--fit-range" calibrate --from-nccl-tests "$h100" --fit-range 8GiB:1GiB
# the anonymous log is fine once named
"$DTSIM" calibrate --from-nccl-tests "$tmp/anonymous.log" --nccl-op sendrecv --out "$tmp/named.json" >/dev/null 2>&1 ||
  fail "--nccl-op sendrecv did not name the log"
echo "PASS"
