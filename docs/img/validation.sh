#!/usr/bin/env bash
# Regenerates docs/img/validation.json (the suite's results), the parity plot
# validation_parity.{png,svg,dat,gp} and the markdown table docs/img/validation_table.md that
# docs/validation.md shows. Run from the repository root after a build.
set -euo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
build/dtsim validate tests/validation --json >docs/img/validation.json
build/dtsim report docs/img/validation.json --out "$tmp" >/dev/null
# text files renamed inside (the script reads and writes validation_parity.*), pictures copied
for e in svg dat gp; do sed 's/parity\./validation_parity./g' "$tmp/parity.$e" >"docs/img/validation_parity.$e"; done
cp "$tmp/parity.png" docs/img/validation_parity.png
python3 - docs/img/validation.json >docs/img/validation_table.md <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
unit = {"step_time": "s", "tflops_per_gpu": "TFLOP/s/GPU", "busbw": "GB/s"}
print("| case | measured | predicted | error | compute | exposed comm | bubble | fits |")
print("|---|---|---|---|---|---|---|---|")
for r in d["cases"]:
    if r["status"] != "ok":
        print(f"| {r['id']} | {r['measured']:.4g} {unit[r['metric']]} | failed | | | | | |")
        continue
    b = r.get("breakdown_s")
    if b:
        T = r["step_time_s"]
        parts = [f"{100*b[k]/T:.0f} %" for k in ("compute", "comm_exposed", "bubble")]
        fits = "yes" if r["fits"] else "**no**"
    else:
        parts = [r["algo"], f"{r['sizes']} sizes", ""]
        fits = ""
    print(f"| {r['id']} | {r['measured']:.4g} {unit[r['metric']]} | {r['predicted']:.4g} | "
          f"{100*r['error']:+.1f} % | {' | '.join(parts)} | {fits} |")
s = d["summary"]
print(f"\n{s['ran']} of {s['cases']} cases; |error| median **{100*s['median_abs_error']:.1f} %**, "
      f"mean {100*s['mean_abs_error']:.1f} %, worst **{100*s['worst_abs_error']:.1f} %** ({s['worst_case']}).")
PY
