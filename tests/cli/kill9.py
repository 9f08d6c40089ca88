#!/usr/bin/env python3
"""kill9.py - the checks of test_kill9.sh on one directory after a SIGKILL (or after a run).

  kill9.py ref   REF OUTPUT...            the clean run's outputs are whole (JSON parses, PNG ends
                                          with IEND, SVG with </svg>)
  kill9.py after WORK REF PID RC OUTPUT... WORK after `dtsim` (PID) was sent SIGKILL and ended
                                          with status RC (137: killed, 0: it finished first)
  kill9.py clean WORK REF OUTPUT...       WORK after an uninterrupted run: exactly REF's files,
                                          same bytes, no temporary

OUTPUT paths are relative to WORK/REF: a file, or a directory that a report is committed into
(listed before its files). What must hold at any kill point:
  - every entry of WORK is either one of this PID's temporaries (DIR/.NAME.tmp.PID.N of
    cli/output.c, a file or a staged report directory; or a sweep's own NAME.tmp.PID), or a file
    or directory REF also has, with REF's bytes: nothing half-written is ever visible;
  - outputs all or none: if some but not all are there, the kill landed while the renames of the
    commit ran (after every output was finished), so each missing one is found, complete, in its
    temporary. Printed as "renaming", not an error: POSIX has no rename of several paths at once
    (docs/reliability.md);
  - status 0 means every output is there and nothing else.
Bytes: calibration files carry the date they were written ("date"), compared without it.
Prints one word on stdout (none / all / renaming / finished); errors on stderr, exit 1.
"""
import json
import os
import re
import sys

OUT_TMP = re.compile(r"^\.(.+)\.tmp\.(\d+)\.(\d+)$")     # cli/output.c
SWEEP_TMP = re.compile(r"^(.+)\.tmp\.(\d+)$")            # reports/sweep_run.c

errors = []


def err(msg):
    errors.append(msg)


def read(p):
    with open(p, "rb") as f:
        return f.read()


def same(a, b):
    """Same bytes, or (a calibration) the same JSON but for its date."""
    x, y = read(a), read(b)
    if x == y:
        return True
    if b.endswith(".json"):
        try:
            jx, jy = json.loads(x), json.loads(y)
        except ValueError:
            return False
        if isinstance(jx, dict) and isinstance(jy, dict) and "date" in jy:
            jx.pop("date", None)
            jy.pop("date", None)
            return jx == jy
    return False


def whole(p):
    data = read(p)
    if p.endswith(".json"):
        try:
            json.loads(data)
        except ValueError as e:
            err(f"{p}: not JSON: {e}")
    elif p.endswith(".png"):
        if not (data.startswith(b"\x89PNG") and data[-12:-8] == b"\0\0\0\0" and data[-8:-4] == b"IEND"):
            err(f"{p}: not a whole PNG")
    elif p.endswith(".svg"):
        if not data.rstrip().endswith(b"</svg>"):
            err(f"{p}: not a whole SVG")
    if not data:
        err(f"{p}: empty")


def walk(root):
    """Every path below ROOT, relative, directories with a trailing '/'."""
    out = []
    for d, dirs, files in os.walk(root):
        rel = os.path.relpath(d, root)
        for n in dirs:
            out.append(os.path.normpath(os.path.join(rel, n)) + "/")
        for n in files:
            out.append(os.path.normpath(os.path.join(rel, n)))
    return sorted(out)


def is_temporary(rel, pid):
    """The target a temporary stands for ('' for a sweep's own), or None if REL is none."""
    parts = rel.rstrip("/").split("/")
    for i, name in enumerate(parts):
        m = OUT_TMP.match(name)
        if m:
            if int(m.group(2)) != pid:
                err(f"{rel}: a temporary of PID {m.group(2)}, not of the killed {pid}")
            return "/".join(parts[:i] + [m.group(1)] + parts[i + 1:])
        m = SWEEP_TMP.match(name)
        if m and i == len(parts) - 1:
            if int(m.group(2)) != pid:
                err(f"{rel}: a temporary of PID {m.group(2)}, not of the killed {pid}")
            return "/".join(parts[:i] + [m.group(1)])
    return None


def after(work, ref, pid, rc, outputs):
    temps = {}
    for rel in walk(work):
        target = is_temporary(rel, pid)
        if target is not None:
            if rc == 0:
                err(f"{rel}: a temporary left by a run that finished")
            if not rel.endswith("/"):
                temps[target] = os.path.join(work, rel)
            continue
        r = os.path.join(ref, rel.rstrip("/"))
        if rel.endswith("/"):
            if not os.path.isdir(r):
                err(f"{rel}: a directory a clean run does not make")
        elif not os.path.isfile(r):
            err(f"{rel}: a file a clean run does not make")
        elif not same(os.path.join(work, rel), r):
            err(f"{rel}: visible, but not the bytes of a clean run (half-written?)")
    present = [o for o in outputs if os.path.exists(os.path.join(work, o))]
    if rc == 0:
        for o in outputs:
            if o not in present:
                err(f"{o}: missing although the command exited 0")
        return "finished"
    if rc != 137:
        err(f"exit status {rc}, expected 137 (SIGKILL) or 0")
    if not present:
        return "none"
    if len(present) == len(outputs):
        return "all"
    # the commit point was passed: what is not renamed yet is whole in its temporary
    for o in outputs:
        if o in present or os.path.isdir(os.path.join(ref, o)):
            continue
        t = temps.get(o)
        if not t:
            err(f"{o}: missing while {', '.join(present)} exist(s), and no temporary holds it")
        elif not same(t, os.path.join(ref, o)):
            err(f"{o}: missing while {', '.join(present)} exist(s), and its temporary is not whole")
    return "renaming"


def clean(work, ref):
    a, b = walk(work), walk(ref)
    for rel in sorted(set(a) - set(b)):
        err(f"{rel}: left after an uninterrupted run" + (" (a temporary never cleaned up)" if ".tmp." in rel else ""))
    for rel in sorted(set(b) - set(a)):
        err(f"{rel}: missing after an uninterrupted run")
    for rel in sorted(set(a) & set(b)):
        if not rel.endswith("/") and not same(os.path.join(work, rel), os.path.join(ref, rel)):
            err(f"{rel}: not the bytes of a clean run")


def main():
    mode = sys.argv[1]
    if mode == "ref":
        ref = sys.argv[2]
        for o in sys.argv[3:]:
            p = os.path.join(ref, o)
            if not os.path.exists(p):
                err(f"{o}: missing from the clean run")
            elif os.path.isfile(p):
                whole(p)
        word = "ok"
    elif mode == "after":
        work, ref, pid, rc = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
        word = after(work, ref, pid, rc, sys.argv[6:])
    else:
        clean(sys.argv[2], sys.argv[3])
        word = "ok"
    for e in errors:
        print(e, file=sys.stderr)
    print(word)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
