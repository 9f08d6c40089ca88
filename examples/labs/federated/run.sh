#!/usr/bin/env bash
# Reproduce this lab's outputs (about a second). Usage: run.sh [path/to/dtsim]
set -euo pipefail
cd "$(dirname "$0")"
dtsim=${1:-../../../build/dtsim}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# 1. The topology and the four scenarios (1 Gb/s wide area), and what dtsim prints for each.
python3 make.py
for s in hier ps-5 ps-20 allreduce-5; do "$dtsim" federated $s.json > run-$s.txt; done
# 2. The same at 0.1 to 10 Gb/s of wide area: time for 100 local steps, into wan.dat.
echo "# wide-area Gb/s, then seconds for 100 local steps: hier ps-5 ps-20 allreduce-5" > wan.dat
for w in 0.1 0.3 1 3 10; do
  python3 make.py "$w Gb/s" "$tmp/$w"
  row=$w
  for s in hier ps-5 ps-20 allreduce-5; do
    row="$row $("$dtsim" federated "$tmp/$w/$s.json" --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["total_s"])')"
  done
  echo "$row" >> wan.dat
done
# 3. The figure: federated.png.
gnuplot federated.gp
