#!/usr/bin/env bash
# Check that includes point down: no file includes a header from a room above its own, and no
# room reaches into another room's private headers. Run by ctest (tests/cli/test_layers.sh); also by hand:
#   bash scripts/check_layers.sh [SOURCE_DIR]
# Prints every offending include as FILE:LINE and exits 1 if there is one.
#
# The rooms, lowest first, and what each may include (its own headers and those listed). The
# READMEs of the rooms and docs/architecture.md say the same in words; change them together.
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"

declare -A may=(
  [sim]="sim"
  [gpu]="sim gpu"
  [kernels]="sim gpu kernels"
  [topo]="sim gpu topo"
  [net]="sim gpu topo net"
  [workload]="sim gpu topo net workload"
  [reports]="sim gpu topo net workload reports"
  [cli]="sim gpu kernels topo net workload reports cli"
  [top]="sim gpu kernels topo net workload reports cli top"
)
# Where each room's sources (and private headers) live.
declare -A src_dir=(
  [sim]=sim [gpu]=models/gpu [kernels]=kernels [topo]=models/topo [net]=models/net
  [workload]=models/workload [reports]=reports [cli]=cli
)
# Public headers (include/dtsim/) by room.
declare -A public=(
  [error.h]=sim [arena.h]=sim [threads.h]=sim [limits.h]=sim [version.h]=sim [json.h]=sim [units.h]=sim [simtime.h]=sim [sim.h]=sim
  [gpu.h]=gpu [calib.h]=gpu
  [kern.h]=kernels [probe.h]=kernels
  [topo.h]=topo
  [net.h]=net [coll.h]=net
  [workload.h]=workload [replay.h]=workload [run.h]=workload [goodput.h]=workload [chakra.h]=workload [federated.h]=workload
  [report.h]=reports [sweep.h]=reports [plan.h]=reports [validate.h]=reports
)

# The room a file belongs to. Unit tests belong to the room they test; tests/unit/*.h (shared
# helpers) to the lowest room; benchmarks, fuzz targets and examples stand on top of everything.
room_of() {
  local f=$1 r
  case $f in
    include/dtsim/*)
      r=${public[$(basename "$f")]:-}
      [[ -n $r ]] || { echo "?"; return; }
      echo "$r"; return ;;
    tests/unit/*/*) r=${f#tests/unit/}; echo "${r%%/*}"; return ;;
    tests/unit/*) echo sim; return ;;
    tests/*|examples/*) echo top; return ;;
  esac
  for r in "${!src_dir[@]}"; do
    [[ $(dirname "$f") == "${src_dir[$r]}" ]] && { echo "$r"; return; }
  done
  echo "?"
}

# The file an include names, searched as the build searches it for this includer.
resolve() {
  local from=$1 name=$2 room=$3 c
  local cands=("$(dirname "$from")/$name" "include/$name")
  case $from in
    tests/unit/*) cands+=("tests/unit/$name" "${src_dir[$room]:-none}/$name") ;;
    tests/bench/*) cands+=("models/topo/$name") ;;
  esac
  for c in "${cands[@]}"; do
    [[ -f $c ]] && { realpath --relative-to=. "$c"; return; }
  done
}

status=0
fail() { echo "$1"; status=1; }

# 1. Public headers are all known (a new one must be given a room above).
for h in include/dtsim/*.h; do
  [[ -n ${public[$(basename "$h")]:-} ]] || fail "$h: public header with no room (add it to scripts/check_layers.sh)"
done

# 2. Every quoted include of every source file.
mapfile -t files < <(find include sim models kernels reports cli tests examples \
  \( -name '*.c' -o -name '*.h' -o -name '*.cu' \) -type f 2>/dev/null | sort)
for f in "${files[@]}"; do
  room=$(room_of "$f")
  if [[ $room == "?" ]]; then
    fail "$f: in no room (a new folder must be added to scripts/check_layers.sh)"
    continue
  fi
  while IFS=: read -r line text; do
    name=$(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' <<<"$text")
    [[ -n $name ]] || continue
    target=$(resolve "$f" "$name" "$room")
    if [[ -z $target ]]; then
      fail "$f:$line: includes \"$name\", which is not found where the build looks"
      continue
    fi
    troom=$(room_of "$target")
    if [[ " ${may[$room]} " != *" $troom "* ]]; then
      fail "$f:$line: room $room includes $target of room $troom, which is not below it"
      continue
    fi
    # A private header (beside a room's sources) is for that room and its tests only.
    if [[ $target != include/* && $target != tests/* && $troom != "$room" && $room != top ]]; then
      fail "$f:$line: includes $target, a private header of room $troom"
    fi
  done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" || true)
done

if ((status == 0)); then
  echo "layers: ${#files[@]} files, every include points down"
fi
exit $status
