#!/usr/bin/env bash
# Install the Debian packages dtsim needs, only those missing. Run as root (or with sudo).
# Usage: scripts/deps.sh [--test]   (--test adds what the test suite needs: clang for fuzzing,
#                                    Open MPI for the MPI kernels and sweeps, valgrind)
set -euo pipefail
pkgs=(build-essential cmake pkg-config libgsl-dev libcjson-dev libprotobuf-c-dev protobuf-c-compiler check
      gnuplot-nox)
if [[ "${1:-}" == "--test" ]]; then
  # libclang-rt-dev: libFuzzer and the sanitizer runtimes (only a Recommends of clang);
  # protobuf-compiler: protoc, an independent protobuf implementation the Chakra tests encode
  # hand-written traces with and decode dtsim's with
  pkgs+=(clang libclang-rt-dev libopenmpi-dev openmpi-bin valgrind python3 protobuf-compiler)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}" >&2
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO=sudo
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
