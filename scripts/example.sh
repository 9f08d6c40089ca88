#!/usr/bin/env bash
# Build dtsim and run the bundled quickstart scenario: one training step, its time and breakdown.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
exec build/dtsim run scenarios/quickstart.json "$@"
