#!/usr/bin/env bash
# test_topo.sh - `dtsim topo gen | info | validate` end to end.
# Pins down: every generator kind writes a file that validates and reloads; info --json reports
# counts and closed-form figures (fat-tree 128: 36 switches, diameter 4, bisection 64 x 50 GB/s;
# torus 4x4x4: diameter 6, bisection 32 links; dgx 4x8 with hosts and NICs; ring 8: 2 links);
# a file and its inline generator give the same counts; a generated file's description
# regenerates it byte for byte; bad options and bad files exit 2, name
# the option or FILE + JSON path, and leave no output file; the shipped topologies validate.
# Leaves free: the human layout beyond a few labels.
set -euo pipefail
: "${DTSIM:?}" "${SRC:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# the Debian python3 (scripts/deps.sh --test) starts in 0.1 s; a pyenv shim can take 0.4 s
py=/usr/bin/python3
[[ -x $py ]] || py=python3

"$DTSIM" topo --help | grep -c -- "--gpus-per-node" >/dev/null || fail "help lacks --gpus-per-node"

# jget FILE KEY: a top-level value of a JSON document
jget() { "$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

"$DTSIM" topo gen fat-tree --gpus 128 --bandwidth "400 Gb/s" -o "$tmp/ft.json" >"$tmp/out.txt"
grep -q "bisection *3.2 TB/s per direction (closed form)" "$tmp/out.txt" || { cat "$tmp/out.txt"; fail "gen summary"; }
"$DTSIM" topo info "$tmp/ft.json" --json >"$tmp/i.json"
[[ $(jget "$tmp/i.json" gpus) == 128 ]] || fail "gpus"
[[ $(jget "$tmp/i.json" switches) == 36 ]] || fail "switches"
[[ $(jget "$tmp/i.json" links) == 512 ]] || fail "links"
[[ $(jget "$tmp/i.json" diameter_hops) == 4 ]] || fail "diameter"
"$py" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert abs(d["bisection_bandwidth"]-64*50e9)<1, d' "$tmp/i.json" || fail "bisection"

# the inline generator as a file gives closed forms
echo '{"generator": "torus", "dims": "4x4x4", "bandwidth": "100 GB/s"}' >"$tmp/torus-gen.json"
"$DTSIM" topo info "$tmp/torus-gen.json" --json >"$tmp/t.json"
[[ $(jget "$tmp/t.json" diameter_hops) == 6 ]] || fail "torus diameter"
[[ $(jget "$tmp/t.json" bisection_method) == "closed form" ]] || fail "torus method"
"$py" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert abs(d["bisection_bandwidth"]-32*100e9)<1, d' "$tmp/t.json" || fail "torus bisection"
"$DTSIM" topo info "$SRC/topologies/torus-4x4x4.json" --json >"$tmp/t2.json"
"$py" -c 'import json,sys; a,b=(json.load(open(f)) for f in sys.argv[1:]); assert all(a[k]==b[k] for k in ("gpus","links","switches","diameter_hops","bisection_bandwidth")), (a,b)' \
  "$tmp/t.json" "$tmp/t2.json" || fail "file and inline generator differ"

"$DTSIM" topo gen dgx --nodes 4 --gpus-per-node 8 --nic "400 Gb/s" --json -o "$tmp/dgx.json" >"$tmp/d.json"
[[ $(jget "$tmp/d.json" hosts) == 4 ]] || fail "dgx hosts"
[[ $(jget "$tmp/d.json" nics) == 32 ]] || fail "dgx nics"
[[ $(jget "$tmp/d.json" diameter_hops) == 6 ]] || fail "dgx diameter"
grep -q '"host":"node3"' "$tmp/dgx.json" || fail "dgx file lacks hosts"

"$DTSIM" topo gen ring --gpus 8 -o "$tmp/ring.json" >/dev/null
"$DTSIM" topo info "$tmp/ring.json" --json >"$tmp/r.json"
"$py" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert abs(d["bisection_bandwidth"]-2*50e9)<1 and d["diameter_hops"]==4, d' "$tmp/r.json" || fail "ring"

for kind in "switch --gpus 16" "dragonfly --routers 4 --terminals 2 --global-links 2" "fat-tree --gpus 64 --radix 8 --tiers 3"; do
  # shellcheck disable=SC2086
  "$DTSIM" topo gen $kind -o "$tmp/k.json" >/dev/null || fail "gen $kind"
  "$DTSIM" topo validate "$tmp/k.json" | grep -c "valid" >/dev/null || fail "validate $kind"
done
# without -o the topology goes to stdout
"$DTSIM" topo gen switch --gpus 4 | "$py" -c 'import json,sys; d=json.load(sys.stdin); assert d["format"]=="dtsim-topology" and len(d["nodes"])==5'

# a generated file's description is the command that regenerates it, byte for byte
"$DTSIM" topo gen fat-tree --gpus 96 --radix 32 --oversubscription 3 --gpu B200 --latency "1.5 us" \
  --name my-ft -o "$tmp/orig.json" >/dev/null
for f in "$tmp/orig.json" "$SRC/topologies/dgx-4x8.json" "$SRC/topologies/torus-4x4x4.json"; do
  cmd=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["description"].split(": ", 1)[1])' "$f")
  [[ $cmd == "dtsim topo gen "* ]] || fail "description of $f is not a command: $cmd"
  eval "\"\$DTSIM\" ${cmd#dtsim } -o \"\$tmp/again.json\"" >/dev/null || fail "rerun: $cmd"
  cmp -s "$f" "$tmp/again.json" || fail "regenerating $f with its description gives another file"
done

# errors: exit 2, the option or path named, nothing written
set +e
"$DTSIM" topo gen fat-tree --gpus 5000 -o "$tmp/bad.json" 2>"$tmp/err.txt"; rc=$?
set -e
[[ $rc == 2 ]] || fail "too many GPUs: exit $rc"
grep -q -- "--gpus:.*tiers 3" "$tmp/err.txt" || { cat "$tmp/err.txt"; fail "message lacks --gpus"; }
[[ ! -e "$tmp/bad.json" ]] || fail "output written on error"
ls "$tmp" | grep -c "tmp\." >/dev/null && fail "temporary file left behind"

set +e
"$DTSIM" topo gen fat-tree --gpus 8 --radiks 4 2>"$tmp/err.txt"; rc=$?
set -e
[[ $rc == 2 ]] || fail "unknown option: exit $rc"

cat >"$tmp/bad-topo.json" <<'JSON'
{"nodes": [{"name": "gpu0", "kind": "gpu"}, {"name": "gpu8", "kind": "gpu"}, {"name": "sw", "kind": "switch"}],
 "links": [{"src": "gpu0", "dst": "sw", "bandwidth": "50 GB/s", "latency": "1 us"},
           {"src": "gpu9", "dst": "sw", "bandwidth": "50 GB/s", "latency": "1 us"}]}
JSON
set +e
"$DTSIM" topo validate "$tmp/bad-topo.json" 2>"$tmp/err.txt"; rc=$?
set -e
[[ $rc == 2 ]] || fail "bad file: exit $rc"
grep -q "bad-topo.json: links\[1\].src: unknown node \"gpu9\" (did you mean \"gpu8\"?)" "$tmp/err.txt" || { cat "$tmp/err.txt"; fail "bad file message"; }
set +e
"$DTSIM" topo validate --json "$tmp/bad-topo.json" >"$tmp/v.json" 2>/dev/null; rc=$?
set -e
[[ $rc == 2 ]] || fail "bad file --json: exit $rc"
[[ $(jget "$tmp/v.json" path) == "links[1].src" ]] || fail "validate --json path"
set +e
"$DTSIM" topo info "$tmp/missing.json" 2>/dev/null; rc=$?
set -e
[[ $rc == 1 ]] || fail "missing file: exit $rc (want 1: I/O error)"

# shipped files
shopt -s nullglob
for f in "$SRC"/topologies/*.json; do
  "$DTSIM" topo validate "$f" >/dev/null || fail "shipped $f does not validate"
done
echo "ok"
