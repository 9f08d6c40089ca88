#!/usr/bin/env python3
"""Keep the dtsim output quoted in the documentation equal to what dtsim prints.

A quoted output block is marked by an HTML comment on the line right before its fence (or before
a Markdown table that a command prints, whose rows are then the block):

    <!-- dtsim-output: dtsim run scenarios/quickstart.json | head -n 31 -->
    ```
    ...what the command prints...
    ```

The command is a bash command line run from the repository root (`dtsim` is the build's dtsim,
`$SRC` the repository root); pipes and filters (`| head -n 31`, `| sed -n '/^traffic/,/^$/p'`)
choose the excerpt the block quotes. The part before the first ` | ` runs once per distinct
text (its output is reused by every block with the same producer); the filters must exit 0.
Options go between `dtsim-output` and the `: ` that starts the command, separated by spaces:

    slow          the command takes more than 5 s: --check and --update skip it (saying so)
                  unless --all is given
    tmp           run in a fresh empty directory instead of the repository root (for commands
                  that write files, e.g. `topo gen ... -o ft.json`)
    mask=REGEX    every match of REGEX (Python syntax, no spaces: use \\s) in the output becomes
                  `...`, right-aligned in the match's width so that a table keeps its columns,
                  before comparing and writing: a column that varies from run to run (wall time)
    ignore=REGEX  lines of the output matching REGEX are not compared: the block keeps what it
                  has on those lines (timings, dates, host names); the line count must still match
    status=N      the exit status the command must end with (default 0)

--check runs every marked block's command and prints a unified diff for each block that differs
(exit 1 if one does, 2 if a marker is malformed or a command fails); --update rewrites those
blocks in place and leaves the others byte for byte as they are. Both take the files to look at
(default: README.md, docs/*.md, examples/**/*.md). See docs/contributing.md, "Quoted outputs".
"""
import argparse
import difflib
import glob
import os
import re
import subprocess
import sys
import tempfile
import time

MARKER = re.compile(r"^\s*<!--\s*dtsim-output(?P<opts>(?:\s+[^\s:]\S*)*?)\s*:\s(?P<cmd>.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})")


class DocError(Exception):
    pass


class Block:
    def __init__(self, path, line, cmd, opts, first, end):
        self.path, self.line, self.cmd = path, line, cmd
        self.slow, self.tmp, self.status = False, False, 0
        self.masks, self.ignores = [], []
        self.first, self.end = first, end  # the quoted lines are lines[first:end] (0-based)
        for o in opts.split():
            key, eq, val = o.partition("=")
            try:
                if o == "slow":
                    self.slow = True
                elif o == "tmp":
                    self.tmp = True
                elif key == "mask" and eq:
                    self.masks.append(re.compile(val))
                elif key == "ignore" and eq:
                    self.ignores.append(re.compile(val))
                elif key == "status" and eq:
                    self.status = int(val)
                else:
                    raise DocError(f"unknown option {o!r} (expected slow, tmp, mask=RE, ignore=RE, status=N)")
            except (re.error, ValueError) as e:
                raise DocError(f"option {o!r}: {e}")

    def where(self):
        return f"{self.path}:{self.line}"


def closing(lines, start, fence):
    """Index of the line closing the fence opened at `start` (same character, at least as long,
    nothing else on the line), or None."""
    for j in range(start + 1, len(lines)):
        t = lines[j].strip()
        if t.startswith(fence) and t.strip(fence[0]) == "":
            return j
    return None


def parse(path, lines):
    """The marked blocks of one file, in order. A marker must sit right above an opening fence
    that closes, or above a Markdown table (its rows are the block): anything else is an error
    naming the line. Markers inside other
    fenced blocks are text (an example of a marker, as in docs/contributing.md)."""
    blocks = []
    i = 0
    while i < len(lines):
        text = lines[i]
        f = FENCE.match(text)
        if f:  # a fenced block without a marker: skip it whole
            end = closing(lines, i, f.group(2))
            i = len(lines) if end is None else end + 1
            continue
        if "dtsim-output" not in text or not text.lstrip().startswith("<!--"):
            i += 1
            continue
        m = MARKER.match(text)
        if not m:
            raise DocError(f"{path}:{i + 1}: malformed marker (expected `<!-- dtsim-output[ OPTIONS]: COMMAND -->`)")
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        f = FENCE.match(nxt)
        if f:
            end = closing(lines, i + 1, f.group(2))
            if end is None:
                raise DocError(f"{path}:{i + 2}: fenced block under a dtsim-output marker never closes")
            first, resume = i + 2, end + 1
        elif nxt.lstrip().startswith("|"):  # a table: its rows, up to the first line that is not one
            first = end = i + 1
            while end < len(lines) and lines[end].lstrip().startswith("|"):
                end += 1
            resume = end
        else:
            raise DocError(f"{path}:{i + 1}: a dtsim-output marker must be right above a fenced block or a table")
        try:
            blocks.append(Block(path, i + 1, m.group("cmd"), m.group("opts"), first, end))
        except DocError as e:
            raise DocError(f"{path}:{i + 1}: {e}")
        i = resume
    return blocks


def sh(cmd, cwd, env, data, timeout, where):
    try:
        return subprocess.run(["bash", "-c", cmd], cwd=cwd, env=env, capture_output=True, timeout=timeout,
                              **({"input": data} if data is not None else {"stdin": subprocess.DEVNULL}))
    except subprocess.TimeoutExpired:
        raise DocError(f"{where}: `{cmd}` ran past {timeout} s")


def failed(where, cmd, p, expected):
    err = p.stderr.decode(errors="replace").strip().splitlines()[-5:]
    return DocError(f"{where}: `{cmd}` exited {p.returncode} (expected {expected})"
                    + "".join("\n    " + e for e in err))


def run(block, root, bindir, cache, timeout):
    """The block's output now: the command's stdout, masked. The part before the first ` | `
    (the producer: usually one dtsim command) runs once per distinct text and directory, and each
    block's filters read its saved output, so that three excerpts of one 1,024-GPU step cost one
    simulation. Returns the lines and the seconds spent running."""
    producer, bar, filters = block.cmd.partition(" | ")
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""), SRC=root,
               DTSIM=os.path.join(bindir, "dtsim"), LC_ALL="C", TZ="UTC")
    dt = 0.0
    with tempfile.TemporaryDirectory(prefix="docfigs.") as scratch:
        cwd = scratch if block.tmp else root
        key = (producer, block.tmp, block.status)
        if key not in cache:
            t0 = time.monotonic()
            p = sh(producer, cwd, env, None, timeout, block.where())
            dt = time.monotonic() - t0
            if p.returncode != block.status:
                raise failed(block.where(), producer, p, block.status)
            cache[key] = p.stdout
        out = cache[key]
        if bar:
            t0 = time.monotonic()
            p = sh(filters, cwd, env, out, timeout, block.where())
            dt += time.monotonic() - t0
            if p.returncode != 0:
                raise failed(block.where(), filters, p, 0)
            out = p.stdout
    text = out.decode("utf-8", errors="replace").rstrip("\n")
    lines = [] if text == "" else [line.rstrip() for line in text.split("\n")]
    for rx in block.masks:
        lines = [rx.sub(lambda m: "..." .rjust(len(m.group(0))), line) for line in lines]
    return lines, dt


def same(block, doc, fresh):
    """Equal but for lines both sides have matching an ignore= pattern."""
    if len(doc) != len(fresh):
        return False
    for a, b in zip(doc, fresh):
        if a.rstrip() != b and not any(rx.search(a) and rx.search(b) for rx in block.ignores):
            return False
    return True


def default_files(root):
    files = ["README.md"] + sorted(glob.glob("docs/*.md", root_dir=root)) + \
        sorted(glob.glob("examples/**/*.md", root_dir=root, recursive=True))
    return [f for f in files if os.path.isfile(os.path.join(root, f))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="report blocks that differ (exit 1)")
    mode.add_argument("--update", action="store_true", help="rewrite blocks that differ")
    mode.add_argument("--list", action="store_true", help="list the marked blocks")
    ap.add_argument("--all", action="store_true", help="include blocks marked slow")
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    help="repository root (default: this script's)")
    ap.add_argument("--dtsim", default=os.environ.get("DTSIM"),
                    help="the dtsim to run (default: $DTSIM, else ROOT/build/dtsim)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per command (default 600)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print each command's run time")
    ap.add_argument("files", nargs="*", help="files relative to ROOT (default: README.md docs/*.md examples/**/*.md)")
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    dtsim = os.path.abspath(a.dtsim or os.path.join(root, "build", "dtsim"))
    if not a.list and not os.access(dtsim, os.X_OK):
        print(f"docfigs: {dtsim}: no dtsim there (build it, or pass --dtsim)", file=sys.stderr)
        return 2
    errors = differ = skipped = 0
    cache = {}
    total = 0.0
    with tempfile.TemporaryDirectory(prefix="docfigs-bin.") as bindir:
        os.symlink(dtsim, os.path.join(bindir, "dtsim"))
        full = os.path.join(os.path.dirname(dtsim), "dtsim-full")
        if os.path.exists(full):
            os.symlink(full, os.path.join(bindir, "dtsim-full"))
        for rel in a.files or default_files(root):
            path = os.path.join(root, rel)
            try:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
            except OSError as e:
                print(f"docfigs: {rel}: {e.strerror}", file=sys.stderr)
                errors += 1
                continue
            lines = text.split("\n")
            try:
                blocks = parse(rel, lines)
            except DocError as e:
                print(f"docfigs: {e}", file=sys.stderr)
                errors += 1
                continue
            changed = False
            # Bottom up, so that rewriting a block leaves the line numbers of those above valid.
            for b in reversed(blocks):
                if a.list:
                    print(f"{b.where()}{' [slow]' if b.slow else ''}: {b.cmd}")
                    continue
                if b.slow and not a.all:
                    print(f"docfigs: {b.where()}: skipped (slow; --all runs it): {b.cmd}", file=sys.stderr)
                    skipped += 1
                    continue
                try:
                    fresh, dt = run(b, root, bindir, cache, a.timeout)
                except DocError as e:
                    print(f"docfigs: {e}", file=sys.stderr)
                    errors += 1
                    continue
                total += dt
                if a.verbose:
                    print(f"docfigs: {b.where()}: {dt:.2f} s: {b.cmd}", file=sys.stderr)
                doc = lines[b.first:b.end]
                if same(b, doc, fresh):
                    continue
                differ += 1
                if a.update:
                    lines[b.first:b.end] = fresh
                    changed = True
                    print(f"docfigs: {b.where()}: updated ({b.cmd})", file=sys.stderr)
                else:
                    sys.stdout.writelines(difflib.unified_diff(
                        [d + "\n" for d in doc], [f + "\n" for f in fresh],
                        f"{b.where()} (quoted)", f"{b.cmd} (now)"))
            if changed:
                with open(path, "w", encoding="utf-8") as f:
                    f.write("\n".join(lines))
    if not a.list:
        verb = "updated" if a.update else "differ"
        print(f"docfigs: {differ} block(s) {verb}, {skipped} slow skipped, {errors} error(s); "
              f"commands took {total:.1f} s", file=sys.stderr)
    if errors:
        return 2
    return 1 if a.check and differ else 0


if __name__ == "__main__":
    sys.exit(main())
