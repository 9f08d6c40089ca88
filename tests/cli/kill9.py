#!/usr/bin/env python3
"""kill9.py - the driver and the checks of test_kill9.sh.

  kill9.py case NAME OUTPUTS [--sweep DIR POINTS] -- COMMAND...
  kill9.py after WORK REF PID STATUS OUTPUT...  |  clean WORK REF  |  ref REF OUTPUT...
      (the checks alone, to try them on a hand-made directory)

In the current directory: run COMMAND once in NAME.ref/ (the reference outputs, and its run time
T), then for each of 12 delays (0, then one uniform draw in each eleventh of 0 .. 1.5 T, from a
fixed seed) start it in a fresh NAME.I/, send it SIGKILL after that delay, wait for its process
group (gnuplot) to empty, check the directory, and if it was killed run it again there,
uninterrupted, and check that. OUTPUTS is a space-separated list of paths relative to the run's
directory: files, or a directory a report is committed into (listed before its files). --sweep:
COMMAND is a sweep of POINTS points into DIR, whose resume must rerun none of the recorded points.

What must hold at any kill point:
  - the status is 137 (killed) or 0 (it finished first: every output there, nothing else);
  - every entry is either one of the killed PID's temporaries (DIR/.NAME.tmp.PID.N of
    cli/output.c, a file or a staged report directory; or a sweep's own NAME.tmp.PID), or a file
    or directory the reference run has, with its bytes: nothing half-written is ever visible;
  - outputs all or none: if some but not all are there, the kill landed while the renames of the
    commit ran (after every output was finished), so each missing one is found, whole, in its
    temporary. Counted as "renaming", not an error: POSIX renames one path at a time
    (docs/reliability.md);
and after the second run: status 0, exactly the reference run's files with its bytes, no
temporary. Calibration files carry the date they were written ("date"): compared without it.
Prints a summary line; the errors on stderr, exit status 1 if any. KILL9_DEBUG=1 prints each kill.
"""
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

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


def ref_whole(ref, outputs):
    for o in outputs:
        p = os.path.join(ref, o)
        if not os.path.exists(p):
            err(f"{o}: missing from the clean run")
        elif os.path.isfile(p):
            whole(p)


def group_alive(pgid):
    """A live (not zombie) process of group PGID: its pid and name, or None. A zombie only waits
    for init to reap it (`calibrate` runs `sh -c 'gnuplot --version'`, whose orphan init may reap
    seconds later)."""
    if not os.path.isdir("/proc/self"):
        try:
            os.killpg(pgid, 0)
            return (pgid, "?")
        except ProcessLookupError:
            return None
        except PermissionError:
            return None
    for e in os.listdir("/proc"):
        if not e.isdigit():
            continue
        try:
            with open(f"/proc/{e}/stat") as f:
                st = f.read()
        except OSError:
            continue
        rest = st[st.rindex(")") + 2:].split()
        if int(rest[2]) == pgid and rest[0] != "Z":
            return (int(e), st[st.index("(") + 1:st.rindex(")")])
    return None


def group_gone(pgid, limit=10.0):
    """Wait for the process group PGID (dtsim's helpers, gnuplot) to end; the one left after
    LIMIT seconds, or None."""
    end = time.monotonic() + limit
    while True:
        left = group_alive(pgid)
        if not left or time.monotonic() > end:
            return left
        time.sleep(0.02)


def records(work, sweep):
    pts = os.path.join(work, sweep[0], "points")
    if not os.path.isdir(pts):
        return 0
    return sum(1 for n in os.listdir(pts) if re.fullmatch(r"\d+\.json", n))


def run_case(name, outputs, sweep, argv):
    debug = bool(os.environ.get("KILL9_DEBUG"))
    ref = name + ".ref"
    os.mkdir(ref)
    t0 = time.monotonic()
    r = subprocess.run(argv, cwd=ref, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    T = time.monotonic() - t0
    if r.returncode != 0:
        err(f"clean run: exit {r.returncode}: {r.stderr.decode(errors='replace')[:300]}")
        return None
    ref_whole(ref, outputs)
    if errors:
        return None
    rng = random.Random(20261126)
    delays = [0.0] + [(i + rng.random()) * 1.5 / 11 * T for i in range(11)]
    seen = {}
    for i, delay in enumerate(delays, 1):
        work = f"{name}.{i}"
        os.mkdir(work)
        with open("out.txt", "wb") as out, open("err.txt", "wb") as er:
            p = subprocess.Popen(argv, cwd=work, stdout=out, stderr=er, start_new_session=True)
            time.sleep(delay)
            p.send_signal(signal.SIGKILL)  # (if it already finished: no effect)
            rc = p.wait()
        rc = 128 - rc if rc < 0 else rc
        before = len(errors)
        left = group_gone(p.pid)
        if left:
            err(f"a helper of dtsim ({left[1]}, PID {left[0]}) outlived it by 10 s")
        word = after(work, ref, p.pid, rc, outputs)
        seen[word] = seen.get(word, 0) + 1
        if debug:
            print(f"{name} {i} at {time.monotonic() - t0:.2f} s: delay {delay:.4f} rc {rc}: {word}: {' '.join(walk(work))}", file=sys.stderr)
        if rc != 0:
            n = records(work, sweep) if sweep else 0
            r = subprocess.run(argv, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            if r.returncode != 0:
                err(f"rerun: exit {r.returncode}: {r.stderr.decode(errors='replace')[:300]}")
            clean(work, ref)
            if sweep:
                want = f"({int(sweep[1]) - n} run, {n} resumed, 0 failed)"
                if want.encode() not in r.stdout:
                    err(f"resume with {n} points recorded: expected {want}: {r.stdout.decode(errors='replace')}")
        for k in range(before, len(errors)):
            errors[k] = f"{name}: kill at {delay:.4f} s (exit {rc}): {errors[k]}"
        shutil.rmtree(work)
    counts = ", ".join(f"{seen.get(k, 0)} {k}" for k in ("none", "renaming", "all", "finished"))
    return f"{name}: clean run {T:.3f} s; after kill -9 at {len(delays)} points: {counts}"


def main():
    a = sys.argv[1:]
    if a[0] == "case":
        name, outputs = a[1], a[2].split()
        sweep = None
        rest = a[3:]
        if rest[0] == "--sweep":
            sweep, rest = rest[1:3], rest[3:]
        assert rest[0] == "--", "usage: kill9.py case NAME OUTPUTS [--sweep DIR POINTS] -- COMMAND..."
        line = run_case(name, outputs, sweep, rest[1:])
        for e in errors:
            print(f"FAIL: {e}" if e.startswith(name + ":") else f"FAIL: {name}: {e}", file=sys.stderr)
        if line:
            print(line)
        return 1 if errors else 0
    mode = sys.argv[1]
    if mode == "ref":
        ref_whole(sys.argv[2], sys.argv[3:])
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
