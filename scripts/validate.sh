#!/usr/bin/env bash
# Build dtsim and run the validation suite: every published training run and nccl-tests figure of
# tests/validation re-simulated, measured vs predicted, the error per case and its median and
# worst (docs/validation.md). Extra arguments go to `dtsim validate` (--json, --case ID, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
exec build/dtsim validate tests/validation "$@"
