#!/usr/bin/env bash
# test_hostile.sh - the hostile-input corpus of issue 11 (about 680 cases: generated documents,
# field mutations, command-line misuse, one case per defect, and tests/data/hostile/): each must
# exit with its status and message within its time and memory bounds, without a crash, leaving
# no file behind. The cases and what they pin down: tests/cli/hostile.py.
set -uo pipefail
: "${DTSIM:?}" "${SRC:?}"
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
exec python3 "$SRC/tests/cli/hostile.py" "$DTSIM" "$SRC"
