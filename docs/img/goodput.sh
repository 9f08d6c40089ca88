#!/usr/bin/env bash
# Regenerates docs/img/goodput/ (the figure in docs/goodput.md) from the shipped scenario.
# Run from the repository root after building: bash docs/img/goodput.sh
set -euo pipefail
build/dtsim goodput scenarios/gpt3-175b-1024-goodput.json --horizon 7d --runs 1000 \
    --plot docs/img/goodput --no-progress | tee docs/img/goodput/output.txt
