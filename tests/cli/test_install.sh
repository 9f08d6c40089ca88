#!/usr/bin/env bash
# test_install.sh - `cmake --install` and the installed library, as a program embedding dtsim
# uses it. Pins down:
#  - the install puts bin/dtsim and bin/dtsim-full, lib/libdtsim.a, lib/libdtsim.so with its
#    soname libdtsim.so.MAJOR.MINOR, the public headers (with the generated version.h) and
#    lib/pkgconfig/dtsim.pc, which pkg-config reads from where it lies (relocatable);
#  - examples/embed/embed.c compiles with `pkg-config --cflags --libs dtsim` and runs against the
#    shared library, and links statically against libdtsim.a with `pkg-config --static`; both
#    print the step time `dtsim run` gives for the scenario the example builds in memory, to the
#    last digit; the installed dtsim runs (and finds dtsim-full beside it: --version of both);
#  - every public header compiles on its own in a C17 program with nothing but -I from the .pc.
# Leaves free: the install layout's libdir name (lib, lib64, lib/<multiarch>), taken from the .pc.
set -euo pipefail
: "${DTSIM:?}" "${SRC:?}" "${BUILD:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v pkg-config >/dev/null || fail "pkg-config not found"
cc=${CC:-cc}

cmake --install "$BUILD" --prefix "$tmp/prefix" >"$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install"; }
pc=$(find "$tmp/prefix" -name dtsim.pc)
[[ -n $pc ]] || fail "no dtsim.pc installed"
export PKG_CONFIG_PATH=$(dirname "$pc")
libdir=$(pkg-config --variable=libdir dtsim)
incdir=$(pkg-config --variable=includedir dtsim)
[[ $(cd "$libdir" && pwd -P) == $(cd "$(dirname "$pc")/.." && pwd -P) ]] || fail "libdir $libdir is not where dtsim.pc lies"
[[ $(pkg-config --modversion dtsim) == $("$DTSIM" --version | awk '{print $2}') ]] || fail "dtsim.pc version"
for f in "$tmp/prefix/bin/dtsim" "$tmp/prefix/bin/dtsim-full" "$libdir/libdtsim.a" "$incdir/dtsim/run.h" \
    "$incdir/dtsim/version.h" "$incdir/dtsim/chakra.h"; do
  [[ -e $f ]] || fail "not installed: $f"
done
"$tmp/prefix/bin/dtsim" --version >/dev/null
"$tmp/prefix/bin/dtsim-full" --version >/dev/null
! ls "$incdir"/dtsim/*.in "$incdir"/*.pb-c.h >/dev/null 2>&1 || fail "private or template headers installed"

# every public header on its own
for h in "$incdir"/dtsim/*.h; do
  printf '#include <dtsim/%s>\nint main(void) { return 0; }\n' "$(basename "$h")" >"$tmp/h.c"
  "$cc" -std=c17 -Wall -Wextra -Wpedantic -Werror $(pkg-config --cflags dtsim) -c "$tmp/h.c" -o "$tmp/h.o" ||
    fail "$(basename "$h") does not compile on its own"
done

# the example: shared, then static
static_libs=$(pkg-config --static --libs dtsim | sed 's/ -ldtsim\b//; s/^-ldtsim\b//')
"$cc" -std=c17 -Wall -Wextra -Werror "$SRC/examples/embed/embed.c" $(pkg-config --cflags dtsim) "$libdir/libdtsim.a" \
  $static_libs -o "$tmp/embed-static"
"$tmp/embed-static" --scenario >"$tmp/scenario.json"
"$DTSIM" run "$tmp/scenario.json" --json >"$tmp/run.json"
want=$(python3 -c 'import json,sys; print("%.17g" % json.load(open(sys.argv[1]))["step_time_s"])' "$tmp/run.json")
"$tmp/embed-static" >"$tmp/static.out"
got=$(awk '$1 == "step_time_s" {print $2}' "$tmp/static.out")
echo "dtsim run: $want s; embed (static): $got s"
[[ $got == "$want" ]] || fail "static embed gives $got, dtsim run $want"
if [[ -e $libdir/libdtsim.so ]]; then
  soname=$(objdump -p "$libdir/libdtsim.so" | awk '$1 == "SONAME" {print $2}')
  ver=$(pkg-config --modversion dtsim)
  [[ $soname == "libdtsim.so.${ver%.*}" ]] || fail "soname $soname, expected libdtsim.so.${ver%.*}"
  "$cc" -std=c17 -Wall -Wextra -Werror "$SRC/examples/embed/embed.c" $(pkg-config --cflags --libs dtsim) \
    -Wl,-rpath,"$libdir" -o "$tmp/embed-shared"
  # ldd's output taken whole first: `ldd | grep -q` under pipefail fails whenever grep stops
  # reading at its match before ldd has written its last line (ldd then dies of SIGPIPE)
  linked=$(ldd "$tmp/embed-shared")
  grep -qF "$soname => $libdir/" <<<"$linked" || { echo "$linked"; fail "not linked to the installed $soname"; }
  "$tmp/embed-shared" >"$tmp/shared.out"
  got=$(awk '$1 == "step_time_s" {print $2}' "$tmp/shared.out")
  echo "embed (shared, $soname): $got s"
  [[ $got == "$want" ]] || fail "shared embed gives $got, dtsim run $want"
  # the other plan through the same library: a different, sane step time
  other=$("$tmp/embed-shared" 1 2 8 | awk '$1 == "step_time_s" {print $2}')
  python3 -c 'import sys; a, b = map(float, sys.argv[1:]); assert 0 < a != b, (a, b)' "$other" "$got"
  # a bad plan is an error from the library, not a crash
  rc=0; "$tmp/embed-shared" 3 2 4 >/dev/null 2>"$tmp/bad.err" || rc=$?
  [[ $rc -eq 1 ]] && grep -q "parallel" "$tmp/bad.err" || { cat "$tmp/bad.err"; fail "bad plan: exit $rc"; }
else
  echo "shared library not built (DTSIM_SHARED=OFF): static only"
fi
echo PASS
