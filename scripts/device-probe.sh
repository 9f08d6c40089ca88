#!/usr/bin/env bash
# device-probe.sh - the compute probe (docs/calibration.md, "Compute probe") on a lent GPU
# machine, in one command from the repository root, everything it writes under $OUT:
#
#   bash scripts/device-probe.sh            (device tool: timeout_s 600; about 6 minutes)
#
# Why this shape: the GPU machines' image has nvcc, cuBLAS and CMake but not dtsim's libraries
# (GSL, cJSON, protobuf-c, Check) and nothing can be fetched there, so the measurement is
# kernels/kern_probe.cu built alone (nvcc + cuBLAS, ~30 s), which prints the measurement as JSON;
# the report against dtsim's model is made afterwards on any machine:
#   dtsim probe --from probe-raw.json --out probe-report.json
# (and here too when the libraries happen to be present). Device time, 15 minutes in all: the
# machine's start (1-2 min), the build, the bursts (seconds), 12 layer GEMMs sustained SUSTAIN
# s each (default 15) and 8192^3 for SUSTAIN_SQUARE s (default 60) = 4 minutes, the HBM probe
# (seconds): about 6-7 minutes, which leaves a rerun possible. nvidia-smi logs SM and memory
# clocks, power and temperature every 500 ms throughout (smi.csv), so the sustained windows can
# be read against the clock the GPU held.
#
# Files under $OUT (at most 8 come back): steps.log (what ran, the build's output, timings),
# smi-q.txt (clocks, power limits and clock-event reasons before and after), smi.csv,
# probe-raw.json (the measurement), probe.log (the probe's progress and errors), and, when dtsim
# could be built here, probe-report.json and probe-report.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/probe-out}
SUSTAIN=${SUSTAIN:-15}
SUSTAIN_SQUARE=${SUSTAIN_SQUARE:-60}
BUDGET=${BUDGET:-480} # seconds the probe itself may run before it is stopped
mkdir -p "$OUT"
work=$(mktemp -d)
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$OUT/steps.log" >&2; }
smi_pid=
finish() {
  [[ -n "$smi_pid" ]] && kill "$smi_pid" 2>/dev/null
  rm -rf "$work"
}
trap finish EXIT

log "device-probe: $(git rev-parse --short HEAD 2>/dev/null || echo 'no git') SUSTAIN=$SUSTAIN SUSTAIN_SQUARE=$SUSTAIN_SQUARE"
if ! command -v nvidia-smi >/dev/null; then log "no nvidia-smi: not a GPU machine"; exit 1; fi
nvidia-smi --query-gpu=name,compute_cap,driver_version,power.limit,clocks.max.sm,clocks.max.mem --format=csv \
  >>"$OUT/steps.log" 2>&1
{ echo "=== before"; nvidia-smi -q -d CLOCK,POWER,PERFORMANCE,TEMPERATURE; } >"$OUT/smi-q.txt" 2>&1

# 1. the standalone probe, for this GPU's architecture (sm_90 for an H100/H200)
cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
[[ "$cap" =~ ^[0-9]+$ ]] || cap=90
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
cuda=$(dirname "$(dirname "$(readlink -f "$nvcc")")")
# rpath: the probe must find libcublas at run time even where the loader's path lacks the toolkit
rpath=()
for d in "$cuda/lib64" "$cuda/lib" "$cuda/targets/x86_64-linux/lib"; do
  [[ -d "$d" ]] && rpath+=(-Xlinker -rpath -Xlinker "$d")
done
build() {
  "$nvcc" -O2 -std=c++17 -gencode "arch=compute_$cap,code=sm_$cap" -DKERN_PROBE_STANDALONE -Iinclude \
    kernels/kern_probe.cu "$@" -o "$work/kern_probe" >>"$OUT/steps.log" 2>&1
}
log "building kernels/kern_probe.cu for sm_$cap with $nvcc"
t0=$SECONDS
if ! build -lcublas "${rpath[@]}"; then
  # the toolkit without cuBLAS: PyTorch's wheel of it (nvidia-cublas), if the image has one
  pip_cublas=$(python3 -c 'import nvidia.cublas as c, os; print(os.path.dirname(c.__file__))' 2>/dev/null || true)
  lib=$(ls "$pip_cublas"/lib/libcublas.so* 2>/dev/null | head -1)
  if [[ -n "$lib" && -d "$pip_cublas/include" ]]; then
    log "toolkit build failed; trying the cuBLAS of the Python wheel in $pip_cublas"
    build -I"$pip_cublas/include" "$lib" -Xlinker -rpath -Xlinker "$pip_cublas/lib" "${rpath[@]}" ||
      { log "build failed (above)"; exit 1; }
  else
    log "build failed (above)"
    exit 1
  fi
fi
log "built in $((SECONDS - t0)) s; $(ldd "$work/kern_probe" | grep -o 'libcublas[^ ]* => [^ ]*' | head -1)"

# 2. clocks, power and temperature every 500 ms while the probe runs (timestamp first, to line
# the sustained windows up with them)
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv -lms 500 \
  >"$OUT/smi.csv" 2>&1 &
smi_pid=$!

# 3. the probe: default shapes, burst then sustained, then HBM
log "probe: start"
t0=$SECONDS
timeout "$BUDGET" "$work/kern_probe" --sustain "$SUSTAIN" --sustain-of "square_8192=$SUSTAIN_SQUARE" \
  >"$OUT/probe-raw.json" 2>"$OUT/probe.log"
rc=$?
log "probe: exit $rc after $((SECONDS - t0)) s"
sleep 1
kill "$smi_pid" 2>/dev/null
smi_pid=
{ echo "=== after"; nvidia-smi -q -d CLOCK,POWER,PERFORMANCE,TEMPERATURE; } >>"$OUT/smi-q.txt" 2>&1
if [[ $rc -ne 0 ]]; then
  log "probe failed (probe.log: $(tail -1 "$OUT/probe.log"))"
  exit 1
fi

# 4. the report here too, if dtsim's libraries are present (usually not: then on any machine,
# `dtsim probe --from probe-raw.json`)
if pkg-config --exists gsl libcjson libprotobuf-c 2>/dev/null && command -v protoc-c >/dev/null; then
  log "building dtsim (libraries present)"
  if cmake -S . -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DDTSIM_CUDA=OFF -DDTSIM_SHARED=OFF >>"$OUT/steps.log" 2>&1 &&
     cmake --build "$work/build" -j"$(nproc)" --target dtsim >>"$OUT/steps.log" 2>&1; then
    "$work/build/dtsim" probe --from "$OUT/probe-raw.json" --out "$OUT/probe-report.json" >"$OUT/probe-report.txt" 2>&1 ||
      log "report failed (probe-report.txt)"
  else
    log "dtsim did not build; make the report elsewhere"
  fi
else
  log "no GSL/cJSON/protobuf-c here: make the report with: dtsim probe --from probe-raw.json"
fi
log "done"
