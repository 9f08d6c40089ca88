#!/usr/bin/env bash
# Build dtsim and run every test: the Check suites and CLI tests through ctest, then the same
# suite under AddressSanitizer + UndefinedBehaviorSanitizer, then the core unit tests under
# valgrind, then a short fuzzing run of the loaders. Installs what it needs. Exit status non-zero if anything fails.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh --test
jobs=$(nproc)
passed=0 skipped=0
# ctest's closing lines, tallied over both builds for the summary at the end.
tally() {
  local log=$1 total failed skip
  total=$(sed -n 's/.*tests passed, [0-9]* tests failed out of \([0-9]*\).*/\1/p' "$log" | tail -1)
  failed=$(sed -n 's/.*tests passed, \([0-9]*\) tests failed out of.*/\1/p' "$log" | tail -1)
  skip=$(grep -c '(Skipped)' "$log" || true)
  passed=$((passed + ${total:-0} - ${failed:-0} - skip))
  skipped=$((skipped + skip))
}

echo "== build (release) and test"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs" >/dev/null
(cd build && ctest --output-on-failure -j"$jobs") | tee build/ctest.log
tally build/ctest.log

echo "== build with ASan+UBSan and test"
cmake -S . -B build-san -DCMAKE_BUILD_TYPE=Debug -DDTSIM_SANITIZE=ON >/dev/null
cmake --build build-san -j"$jobs" >/dev/null
(cd build-san && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --output-on-failure -j"$jobs" -LE no-sanitize) | tee build-san/ctest.log
tally build-san/ctest.log

echo "== valgrind memcheck on core unit tests"
# Catches what ASan cannot see (reads of uninitialised memory) in the release build. Check must
# not fork under valgrind (CK_FORK=no; abort tests skip themselves then). Kept to the fast suites.
if command -v valgrind >/dev/null; then
  for t in test_sim test_sim_rng test_json test_units test_threads; do
    [[ -x build/$t ]] || continue
    if ! CK_FORK=no valgrind -q --error-exitcode=1 --leak-check=full \
        --errors-for-leak-kinds=definite,indirect "build/$t" >"build/$t.valgrind.log" 2>&1; then
      echo "valgrind: $t failed, see build/$t.valgrind.log" >&2
      tail -30 "build/$t.valgrind.log" >&2
      exit 1
    fi
    echo "valgrind: $t clean"
  done
else
  echo "valgrind not installed (scripts/deps.sh --test): skipped" >&2
fi

echo "== valgrind memcheck on the CLI end to end"
# The paths users take: a scenario run writing a trace and a timeline, the trace replayed, a
# small collective size sweep, topo info. About 5 s in all.
if command -v valgrind >/dev/null; then
  vg=(valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,indirect)
  vt=$(mktemp -d)
  echo '{"generator": "dgx", "nodes": 2, "gpus_per_node": 8, "gpu": "H100-SXM"}' > "$vt/topo.json"
  for cmd in "run scenarios/quickstart.json --write-trace $vt/t.json --timeline $vt/tl.json" \
             "run --trace $vt/t.json --topology $vt/topo.json --json" \
             "collective --topology gen:dgx:nodes=2,gpus_per_node=4 --op allreduce --size 1KiB:4MiB:x16" \
             "topo info topologies/dgx-4x8.json"; do
    # shellcheck disable=SC2086 # word splitting of $cmd is intended
    if ! "${vg[@]}" build/dtsim $cmd >"$vt/out" 2>"$vt/log"; then
      echo "valgrind: dtsim $cmd failed" >&2
      tail -30 "$vt/log" >&2
      exit 1
    fi
    echo "valgrind: dtsim ${cmd%% *} clean"
  done
  rm -rf "$vt"
fi

if [[ -x tests/fuzz/run.sh ]]; then
  echo "== fuzz the loaders briefly"
  bash tests/fuzz/run.sh
fi
echo "== all tests passed"
echo "dtsim: $passed passed, 0 failed, $skipped skipped"
