#!/usr/bin/env bash
# test_layers.sh - scripts/check_layers.sh: includes point down, rooms keep their private headers.
# Pins down: the tree as committed passes; a copy with one upward include (a topo file including
# the workload's run.h), a private header reached from another room (net including
# topo_internal.h), a lower public header including a higher one (calib.h including topo.h), or a
# unit test reaching above its room each fails, naming the file and line. Leaves free: wording.
set -euo pipefail
: "${SRC:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

bash "$SRC/scripts/check_layers.sh" "$SRC" >"$tmp/out" || { cat "$tmp/out"; fail "the tree has an upward include"; }

# expect_violation FILE TEXT WHAT: append TEXT after the first include of FILE in a fresh copy,
# expect the check to fail and to name FILE.
expect_violation() {
  local file=$1 text=$2 what=$3
  rm -rf "$tmp/tree"
  mkdir -p "$tmp/tree"
  (cd "$SRC" && tar cf - include sim models kernels reports cli tests/unit tests/bench tests/fuzz scripts) |
    (cd "$tmp/tree" && tar xf -)
  sed -i "0,/^#include/s||$text\n#include|" "$tmp/tree/$file"
  if bash "$tmp/tree/scripts/check_layers.sh" "$tmp/tree" >"$tmp/out" 2>&1; then
    fail "$what: not caught"
  fi
  grep -q "^$file:[0-9]*:" "$tmp/out" || { cat "$tmp/out"; fail "$what: message lacks $file:LINE"; }
}
expect_violation models/topo/topo_core.c '#include "dtsim/run.h"' "upward public include"
expect_violation models/net/net.c '#include "../topo/topo_internal.h"' "private header of another room"
expect_violation include/dtsim/calib.h '#include "dtsim/topo.h"' "lower public header including a higher one"
expect_violation tests/unit/topo/test_topo_route.c '#include "dtsim/coll.h"' "unit test above its room"
echo "test_layers: ok"
