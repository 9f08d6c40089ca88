#!/usr/bin/env bash
# dtsim report on a real sweep: scaling, breakdown and memory plots as PNG and SVG (non-empty,
# with PNG/SVG signatures), their .dat and .gp beside them, index.md/index.html naming them;
# the scaling table's first row is its own ideal (efficiency 100%); a missing results.csv is
# an error (exit 1) naming the file.
set -euo pipefail
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cat > "$T/s.json" <<'EOF'
{
  "name": "report-cli",
  "topology": {"generator": "dgx", "nodes": 1, "gpus_per_node": 2, "gpu": "H100-SXM"},
  "model": {"kind": "transformer", "layers": 12, "hidden": 768, "heads": 12, "seq_len": 1024,
            "vocab": 50257},
  "parallel": {"tp": 1, "pp": 1, "micro_batch_size": 4},
  "global_batch": 64,
  "seed": 1,
  "sweep": {"axes": [{"path": "topology.nodes", "range": [1, 4], "step": "x2"},
                     {"path": "parallel.pp", "values": [1, 2]}]}
}
EOF
"$DTSIM" sweep "$T/s.json" --out "$T/r" --no-progress > /dev/null
"$DTSIM" report "$T/r" --json > "$T/rep.json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["plots"]==["scaling","breakdown","memory"] and d["rows"]==6, d' "$T/rep.json" \
  || fail "$(cat "$T/rep.json")"
# A directory typed with a trailing slash (as in docs/reports.md) prints clean paths.
"$DTSIM" report "$T/r/" > "$T/rep.txt"
grep -qF "report  $T/r/report/index.md" "$T/rep.txt" || fail "summary path: $(cat "$T/rep.txt")"
grep -q '//' "$T/rep.txt" && fail "doubled slash in: $(cat "$T/rep.txt")"
for p in scaling breakdown memory; do
  for ext in png svg dat gp; do
    [[ -s "$T/r/report/$p.$ext" ]] || fail "$p.$ext missing or empty"
  done
  head -c 8 "$T/r/report/$p.png" | od -An -c | grep -c 'P   N   G' >/dev/null || fail "$p.png is not a PNG"
  grep -q "<svg" "$T/r/report/$p.svg" || fail "$p.svg is not SVG"
  grep -q "($p.png)" "$T/r/report/index.md" || fail "index.md lacks $p"
  grep -q "$p.svg" "$T/r/report/index.html" || fail "index.html lacks $p"
done
# Scaling: GPUs 2, 4, 8; the first row is the ideal itself.
awk '!/^#/ {print $1}' "$T/r/report/scaling.dat" | tr '\n' ' ' | grep -cx '2 4 8 ' >/dev/null || fail "$(cat "$T/r/report/scaling.dat")"
awk '!/^#/ {print; exit}' "$T/r/report/scaling.dat" | awk '$2 != $3 || $4 != 100 {exit 1}' || fail "first scaling row"
# The report is re-runnable by hand from its own files.
(cd "$T/r/report" && rm scaling.png && gnuplot scaling.gp && [[ -s scaling.png ]]) || fail "scaling.gp does not rerun"

set +e
"$DTSIM" report "$T/nothing" 2> "$T/err.txt"; rc=$?
set -e
[[ $rc -eq 1 ]] || fail "expected exit 1 without results.csv, got $rc"
grep -q "results.csv: cannot open" "$T/err.txt" || fail "$(cat "$T/err.txt")"
echo "ok"
