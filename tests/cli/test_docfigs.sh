#!/usr/bin/env bash
# test_docfigs.sh - the dtsim output quoted in README.md, docs/*.md and examples/**/*.md is what
# this build prints (scripts/docfigs.sh --check over every block under a `dtsim-output` marker,
# docs/contributing.md "Quoted outputs"), and the checker itself does what it says.
# Pins down, on hand-written files in a scratch tree: a block equal to its command's output
# passes and is left byte for byte; one that differs fails --check (exit 1) with a diff naming
# FILE:LINE, and --update rewrites only that block, after which --check passes; mask=RE turns
# each match into `...` right-aligned in its width; ignore=RE keeps the block's own text on
# matching lines; slow blocks are skipped (with a note) unless --all; the part before the first
# ` | ` runs once for every block that shares it; `dtsim` is the build's dtsim; a marker inside
# another fenced block is text; a marker above a table quotes its rows; a marker not above a
# fence or table, an unclosed fence, an unknown option and a failing command are errors naming
# FILE:LINE (exit 2); status=N accepts a command exiting N.
# Then the real check: every marked block of the repository equals this build's output. When a
# model change moves a figure this fails with the diff; `bash scripts/docfigs.sh --update`
# (and `--update --all` for the slow blocks) regenerates them.
# Leaves free: blocks without a marker (timings, calibration of a machine: not reproducible).
set -euo pipefail
: "${DTSIM:?}" "${SRC:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
docfigs() { python3 "$SRC/scripts/docfigs.py" --dtsim "$DTSIM" "$@"; }

# --- the checker on a scratch tree -------------------------------------------------------------
t=$tmp/tree
mkdir -p "$t/docs" "$t/examples/lab"
cat > "$t/docs/a.md" <<'EOF'
# prose stays as it is
<!-- dtsim-output: printf 'a\nb\n' -->
```
a
b
```
between
<!-- dtsim-output: printf 'x 1\n' -->
```
x 2
```
<!-- dtsim-output mask=\s+\d+\sus$: printf 't  123 us\nu 4567 us\n' -->
```
t  123 us
u 4567 us
```
<!-- dtsim-output ignore=^wall: printf 'wall 5 s\nstep 1\n' -->
```
wall 9 s
step 1
```
<!-- dtsim-output tmp: dtsim topo gen ring --gpus 4 -o r.json | grep '^GPUs' -->
```
GPUs           4 (4 x H100-SXM)
```
<!-- dtsim-output: dtsim topo gen ring --gpus 4 | head -n 4 | tail -n 1 -->
```
  "name": "ring-4",
```
<!-- dtsim-output status=3: echo three; exit 3 -->
```
three
```
end
EOF
cat > "$t/examples/lab/README.md" <<'EOF'
<!-- dtsim-output slow: printf 'new\n' -->
~~~
old
~~~
EOF
cp "$t/docs/a.md" "$tmp/a.orig"
cp "$t/examples/lab/README.md" "$tmp/lab.orig"

set +e
docfigs --root "$t" --check > "$tmp/out" 2> "$tmp/err"; rc=$?
set -e
[[ $rc == 1 ]] || { cat "$tmp/out" "$tmp/err" >&2; fail "--check with a stale block: exit $rc, expected 1"; }
grep -q '^--- docs/a.md:8 (quoted)' "$tmp/out" || fail "diff does not name docs/a.md:8: $(cat "$tmp/out")"
grep -q '^-x 2$' "$tmp/out" && grep -q '^+x 1$' "$tmp/out" || fail "diff lacks -x 2/+x 1"
grep -q '^--- docs/a.md:12' "$tmp/out" || fail "mask block: the unmasked block must differ"
grep -q '^+t     \.\.\.$' "$tmp/out" || fail "mask: 't  123 us' should become 't     ...' (right-aligned)"
grep -q '^+u     \.\.\.$' "$tmp/out" || fail "mask: 'u 4567 us' should become 'u     ...'"
[[ $(grep -c '^--- ' "$tmp/out") == 2 ]] || fail "only the stale and the masked block differ: $(grep '^--- ' "$tmp/out")"
grep -q 'examples/lab/README.md:1: skipped (slow' "$tmp/err" || fail "slow block not reported as skipped"

docfigs --root "$t" --update 2> "$tmp/err" || fail "--update: $(cat "$tmp/err")"
cmp -s "$t/examples/lab/README.md" "$tmp/lab.orig" || fail "--update without --all touched a slow block"
python3 - "$tmp/a.orig" "$t/docs/a.md" <<'PY' || fail "--update changed more than the two stale blocks"
import sys
a = open(sys.argv[1]).read().split("\n")
b = open(sys.argv[2]).read().split("\n")
assert len(a) == len(b), (len(a), len(b))
changed = [i + 1 for i, (x, y) in enumerate(zip(a, b)) if x != y]
assert changed == [10, 14, 15], changed
assert b[9] == "x 1" and b[13] == "t     ..." and b[14] == "u     ...", b[9:15]
assert b[18] == "wall 9 s", "ignore= must keep the block's own line"
PY
docfigs --root "$t" --check > "$tmp/out" 2>&1 || fail "--check after --update: $(cat "$tmp/out")"
set +e
docfigs --root "$t" --check --all > "$tmp/out" 2>&1; rc=$?
set -e
[[ $rc == 1 ]] && grep -q '^+new$' "$tmp/out" || fail "--check --all: exit $rc, expected 1 with the slow block's diff"
docfigs --root "$t" --update --all 2>/dev/null || fail "--update --all"
[[ $(sed -n 3p "$t/examples/lab/README.md") == new ]] || fail "--update --all did not rewrite the slow block"

# The producer before the first ` | ` runs once for blocks that share it.
cat > "$t/docs/b.md" <<'EOF'
<!-- dtsim-output: echo run >> "$SRC/count"; printf '1\n2\n' | head -n 1 -->
```
1
```
<!-- dtsim-output: echo run >> "$SRC/count"; printf '1\n2\n' | tail -n 1 -->
```
2
```
EOF
docfigs --root "$t" --check docs/b.md 2>/dev/null || fail "shared producer: blocks differ"
[[ $(wc -l < "$t/count") == 1 ]] || fail "shared producer ran $(wc -l < "$t/count") times, expected once"

# A marker inside another fenced block is an example, not a marker.
printf '%s\n' '````' '<!-- dtsim-output: echo fresh -->' '```' 'stale' '```' '````' > "$t/docs/c.md"
docfigs --root "$t" --check docs/c.md 2> "$tmp/err" || fail "a marker inside a fence was run: $(cat "$tmp/err")"
docfigs --root "$t" --list docs/c.md | grep -q . && fail "--list shows a marker inside a fence"

# A marker above a Markdown table: its rows are the block, the line after it stays.
printf '%s\n' 'text' "<!-- dtsim-output: printf '| a |\\n|---|\\n| 2 |\\n' -->" '| a |' '|---|' '| 1 |' 'next' > "$t/docs/d.md"
docfigs --root "$t" --update docs/d.md 2>/dev/null || fail "--update of a table"
[[ $(cat "$t/docs/d.md") == $'text\n'"<!-- dtsim-output: printf '| a |\\n|---|\\n| 2 |\\n' -->"$'\n| a |\n|---|\n| 2 |\nnext' ]] \
  || fail "table update: $(cat "$t/docs/d.md")"

# Errors name the file and line and exit 2.
expect_error() { # FILE-CONTENT WHAT-THE-MESSAGE-SAYS
  printf '%s\n' "$1" > "$t/docs/bad.md"
  set +e
  docfigs --root "$t" --check docs/bad.md > /dev/null 2> "$tmp/err"; local rc=$?
  set -e
  [[ $rc == 2 ]] || fail "bad.md ($2): exit $rc, expected 2"
  grep -q "docs/bad.md:$3: .*$2" "$tmp/err" || fail "bad.md: message lacks 'docs/bad.md:$3: ... $2': $(cat "$tmp/err")"
}
expect_error $'text\n<!-- dtsim-output: echo hi -->\nnot a fence' "must be right above a fenced block" 2
expect_error $'<!-- dtsim-output: echo hi -->\n```\nhi' "never closes" 2
expect_error $'<!-- dtsim-output fast: echo hi -->\n```\nhi\n```' "unknown option" 1
expect_error $'<!-- dtsim-output: echo oops >&2; exit 4 -->\n```\n```' "exited 4 (expected 0)" 1
rm "$t/docs/bad.md"

# --- the repository's quoted outputs -----------------------------------------------------------
if ! docfigs --root "$SRC" --check > "$tmp/out" 2> "$tmp/err"; then
  cat "$tmp/out" "$tmp/err" >&2
  fail "quoted dtsim output in the docs differs from this build: run bash scripts/docfigs.sh --update (--all for slow blocks) and review the diff"
fi
tail -n 1 "$tmp/err"
echo "ok"
