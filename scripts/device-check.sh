#!/usr/bin/env bash
# device-check.sh - every check that needs a GPU, in one call of a lent GPU machine: the CUDA
# kernel tests (test_kern_cuda, test_probe_cuda), the CUDA calibration (own ring over ranks on the
# GPU, top-k kernel; fp32 and bf16), the compute probe (scripts/device-probe.sh), and the
# PyTorch measurements the attention model rests on (scripts/device-attn.py dropout, grid, gqa;
# scripts/device-layer.py).
#
#   bash scripts/device-check.sh bundle     # here, after `cmake --build build`: writes .devbundle/
#   bash scripts/device-check.sh run        # there (device tool: carry [".devbundle"], timeout_s 600)
#
# Why a bundle: the GPU machines' image has the CUDA toolkit, cuBLAS and NCCL (PyTorch's wheels)
# but not dtsim's libraries (GSL, cJSON, protobuf-c, Open MPI, Check) and nothing can be fetched
# there. So the binaries built here travel with those libraries (about 11 MiB; the machines' glibc
# is at least as new as the build's), and CUDA's own libraries are found there. NCCL's
# all-reduce needs two GPUs (one communicator per device); a one-GPU machine skips it.
#
# Everything lands in $OUT/device-check.tar.gz (the device tool returns at most 8 files): cuda.log
# (tests and calibrations), calib-cuda.json, calib-cuda-bf16.json, the probe's steps.log,
# smi-q.txt, smi.csv, probe-raw.json and probe.log, and attn-dropout.jsonl, attn-grid.jsonl,
# attn-gqa.jsonl, layer.json; the log's summary is also printed. Device time, measured on an
# H100 on 2026-11-27 piece by piece: the machine's start (about 40 s), tests and calibrations
# (about 1.5 min), the probe (about 4.5 min), the PyTorch scripts (about 1.5 min): 8 minutes of
# the session's 15. SKIP_PROBE=1 leaves the probe out (3 minutes).
set -uo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}
B=.devbundle

case "$mode" in
bundle)
  build=${BUILD:-build}
  for f in dtsim-full test_kern_cuda test_probe_cuda; do
    [[ -x "$build/$f" ]] || { echo "device-check: $build/$f missing: build with CUDA first" >&2; exit 1; }
  done
  rm -rf "$B" && mkdir -p "$B/lib"
  cp "$build/dtsim-full" "$build/test_kern_cuda" "$build/test_probe_cuda" "$B/"
  # every library the binaries load from the system, except glibc's, the C++ runtime and CUDA's
  ldd "$B"/dtsim-full "$B"/test_kern_cuda "$B"/test_probe_cuda |
    awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
    grep -v -E '/(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|libcublas|libcublasLt|libnccl|libcudart)\.so' |
    while read -r l; do cp -L "$l" "$B/lib/"; done
  grep -qxF "/$B/" .git/info/exclude 2>/dev/null || { mkdir -p .git/info && echo "/$B/" >>.git/info/exclude; }
  du -sh "$B"
  ls "$B" "$B/lib"
  ;;
run)
  [[ -x "$B/dtsim-full" ]] || { echo "device-check: no $B (run '$0 bundle' here, carry it there)" >&2; exit 1; }
  FINAL=${OUT:-$PWD/probe-out}
  OUT=$(mktemp -d)
  mkdir -p "$FINAL"
  log=$OUT/cuda.log
  say() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$log" >&2; }
  # CUDA's libraries: the toolkit's, else the Python wheels' (nvidia-cublas, nvidia-nccl)
  libdirs=$(find /usr/local /opt /usr/lib -maxdepth 9 \( -name 'libcublas.so.13*' -o -name 'libcublasLt.so.13*' \
    -o -name 'libnccl.so.2*' \) 2>/dev/null | xargs -r -n1 dirname | sort -u | paste -sd:)
  export LD_LIBRARY_PATH="$PWD/$B/lib${libdirs:+:$libdirs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  say "device-check: $(git rev-parse --short HEAD 2>/dev/null || echo 'no git'); LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.max.sm --format=csv >>"$log" 2>&1
  for f in dtsim-full test_kern_cuda test_probe_cuda; do
    missing=$(ldd "$B/$f" | grep 'not found')
    [[ -z "$missing" ]] || say "$f: $missing"
  done
  for t in test_kern_cuda test_probe_cuda; do
    say "$t"
    timeout 45 "$B/$t" >>"$log" 2>&1
    say "$t: exit $?"
  done
  # the ring's default sizes (4 KiB-4 MiB) hardly load a GPU: up to 256 MiB per rank (fp32: 48 s
  # on an H100), 64 MiB in bf16 (16 s; to 256 MiB it outran 60 s, its host-side verification)
  for dt in fp32 bf16; do
    name=calib-cuda.json sizes=256KiB:256MiB:x4
    [[ $dt == bf16 ]] && name=calib-cuda-bf16.json sizes=256KiB:64MiB:x4
    say "calibrate --backend cuda --ranks 8 --dtype $dt --sizes $sizes"
    timeout 90 "$B/dtsim-full" calibrate --backend cuda --ranks 8 --dtype "$dt" --sizes "$sizes" \
      --repeats 10 --out "$OUT/$name" >>"$log" 2>&1
    say "calibrate $dt: exit $?"
  done
  if [[ -z "${SKIP_PROBE:-}" ]]; then
    say "device-probe"
    BUDGET=${BUDGET:-330} OUT=$OUT bash scripts/device-probe.sh
    say "device-probe: exit $?"
  fi
  # PyTorch (the machines' python3 holds it): the attention measurements and one layer's kernels
  for m in dropout grid gqa; do
    say "device-attn.py $m"
    PYTHONUNBUFFERED=1 timeout 120 python3 scripts/device-attn.py "$m" >"$OUT/attn-$m.jsonl" 2>>"$log"
    say "device-attn.py $m: exit $?, $(wc -l <"$OUT/attn-$m.jsonl") calls"
  done
  say "device-layer.py"
  PYTHONUNBUFFERED=1 timeout 120 python3 scripts/device-layer.py >"$OUT/layer.json" 2>>"$log"
  say "device-layer.py: exit $?"
  grep -E ' fit |Checks:' "$log" >&2 # the tests' and the fits' summaries, readable at once
  tar czf "$FINAL/device-check.tar.gz" -C "$OUT" .
  rm -rf "$OUT"
  echo "device-check: everything in $FINAL/device-check.tar.gz" >&2
  ;;
*)
  echo "usage: $0 bundle|run" >&2
  exit 2
  ;;
esac
