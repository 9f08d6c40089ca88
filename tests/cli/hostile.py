#!/usr/bin/env python3
"""hostile.py - the hostile-input corpus of issue 11: generated here, run against dtsim.

Pins down, for every case: the exit status (2 bad input or usage, 1 a file that cannot be read
or a busy resource), a message on stderr (for file errors "FILE: JSON.PATH" or
"FILE:LINE:COL"), a wall-time bound and an address-space bound (ulimit -v; skipped under
sanitizers, which reserve terabytes of it), no crash (no signal, no "internal error", no
sanitizer report), no file left in the case's working directory, and no input file changed.
Leaves free: the wording around the asserted text.

Cases come from four generators (687 in all, most from the first two):
  - document attacks (empty, truncated, NUL, nesting, duplicate keys, wrong top-level type,
    non-regular files ...) fed to every sub-command that reads each format;
  - field mutations: every leaf of a valid scenario, topology, trace, calibration and sweep
    replaced by values of the wrong type, each expected to be named by its JSON path;
  - command-line misuse of every sub-command;
  - one case per defect of issue 11 (tight time and memory bounds; each failed on the main of
    2026-11-26, see docs/reliability.md).
The small checked-in part of the corpus is tests/data/hostile/ (files a script does not make
more clearly than by hand). Usage: hostile.py DTSIM SRC [--list] [--only SUBSTRING].
"""
import fcntl
import hashlib
import json
import os
import resource
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

DTSIM, SRC = sys.argv[1], sys.argv[2]
ONLY = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
LIST = "--list" in sys.argv
GiB = 1 << 30

work = tempfile.mkdtemp(prefix="dtsim-hostile-")
IN = os.path.join(work, "in")  # inputs, shared by every case, checked unchanged at the end
os.mkdir(IN)


def load(rel):
    with open(os.path.join(SRC, rel)) as f:
        return json.load(f)


def put(name, data):
    """Write an input file; data is text, bytes or a JSON value. Returns its absolute path."""
    p = os.path.join(IN, name)
    if isinstance(data, bytes):
        mode, payload = "wb", data
    else:
        mode, payload = "w", data if isinstance(data, str) else json.dumps(data)
    with open(p, mode) as f:
        f.write(payload)
    return p


def dup(x):
    return json.loads(json.dumps(x))


cases = []


def case(name, args, status, text, secs=10.0, mem=2 * GiB, setup=None, env=None, may_leave=()):
    """One run: dtsim ARGS must exit STATUS with TEXT (a string or a list of strings, all
    required) on stderr, within SECS seconds and MEM bytes of address space, leaving nothing
    in its directory but MAY_LEAVE (a sweep records the points that failed)."""
    cases.append(dict(name=name, args=[str(a) for a in args], status=status,
                      text=[text] if isinstance(text, str) else text, secs=secs, mem=mem,
                      setup=setup, env=env, may_leave=set(may_leave)))


# ---------------------------------------------------------------- base documents
SCEN = {"topology": {"generator": "dgx", "nodes": 1, "gpus_per_node": 8},
        "model": {"kind": "transformer", "layers": 4, "hidden": 256, "heads": 8,
                  "seq_len": 128, "vocab": 1000},
        "parallel": {"tp": 2, "pp": 2, "dp": 2, "microbatches": 4},
        "global_batch": 8, "precision": "bf16", "optimizer": "adam", "seed": 1}
TOPO = load("topologies/ring-8.json")
CAL = load("tests/fuzz/corpus/fuzz_calib/cpu-small.json")
TRACE = {"format": "dtsim-trace", "version": 1, "gpus": 2,
         "collectives": [{"op": "allreduce", "bytes": "1 MB"}],
         "ops": [{"gpu": 0, "kind": "compute", "duration": "1 ms"},
                 {"gpu": 1, "kind": "compute", "duration": "2 ms", "deps": []},
                 {"gpu": 0, "kind": "send", "to": 1, "bytes": "1 MB", "deps": [0]}]}
SWEEP = dup(SCEN)
SWEEP["sweep"] = {"axes": [{"path": "seed", "values": [1, 2]}]}
RING8 = os.path.join(SRC, "topologies/ring-8.json")

# How each format is fed to dtsim: (label, format, argv builder). The builder gets the input's
# absolute path; outputs it names are relative to the case's own (empty) directory.
COLL = ["collective", "--op", "allreduce", "--size", "1MB"]
READERS = [
    ("run", "scenario", lambda p: ["run", p, "--write-trace", "t.json", "--timeline", "tl.json"]),
    ("memory", "scenario", lambda p: ["memory", p, "--json"]),
    ("plan", "scenario", lambda p: ["plan", p, "--gpus", "8"]),
    ("goodput", "scenario", lambda p: ["goodput", p, "--runs", "2", "--plot", "gp"]),
    ("sweep", "sweep", lambda p: ["sweep", p, "--out", "sw", "--jobs", "1"]),
    ("topo-info", "topology", lambda p: ["topo", "info", p]),
    ("topo-validate", "topology", lambda p: ["topo", "validate", p]),
    ("coll-topo", "topology", lambda p: COLL + ["--topology", p]),
    ("coll-cal", "calibration", lambda p: COLL + ["--topology", "gen:ring:gpus=8", "--calibration", p]),
    ("trace", "trace", lambda p: ["run", "--trace", p, "--topology", RING8, "--timeline", "tl.json"]),
    ("trace-topo", "topology", lambda p: ["run", "--trace", TRACE_OK, "--topology", p]),
    ("report", "table", lambda p: ["report", p, "--out", "rep"]),
]
BASE = {"scenario": SCEN, "sweep": SWEEP, "topology": TOPO, "calibration": CAL, "trace": TRACE,
        "table": [{"size_bytes": 1, "busbw_GBps": 2}]}
TRACE_OK = put("trace-ok.json", TRACE)

# ---------------------------------------------------------------- 1. document attacks
text_ok = {k: json.dumps(v, indent=1) for k, v in BASE.items()}


def attacks(fmt):
    """(tag, content, status, text): text may hold {f}, the file's absolute path."""
    good = text_ok[fmt]
    half = len(good) // 2
    yield "empty", "", 2, "{f}:1:1: JSON syntax error"
    yield "blank", " \n\t\n", 2, "{f}:3:1: JSON syntax error"
    yield "null", "null", 2, "{f}"
    yield "number", "42", 2, "{f}"
    yield "string", '"x"', 2, "{f}"
    yield "true", "true", 2, "{f}"
    yield "wrong-top", "[]" if fmt != "table" else "{}", 2, "{f}"
    yield "trunc-half", good[:half], 2, "{f}:"
    yield "trunc-last", good[:-1], 2, "{f}:"
    yield "trailing", good + " x", 2, "{f}:"
    yield "two-docs", good + good, 2, "{f}:"
    yield "nul-mid", good[:half].encode() + b"\0" + good[half:].encode(), 2, "unexpected NUL byte"
    yield "bad-utf8", good[:1].encode() + b'"\xff\xfe":1,' + good[1:].encode(), 2, "{f}"
    yield "comment", "// c\n" + good, 2, "{f}:1:1: JSON syntax error"
    yield "single-quote", good.replace('"', "'", 2), 2, "{f}:"
    close = good.rstrip()[-1]
    yield "nan", good.rstrip()[:-1] + (', "x": NaN}' if close == "}" else ", NaN]"), 2, "{f}"
    yield "deep-65", "[" * 65 + "]" * 65, 2, "{f}:1:65: nested deeper than 64"
    yield "deep-100k", "[" * 100000 + "]" * 100000, 2, "nested deeper than 64"
    yield "deep-obj", '{"a":' * 70 + "1" + "}" * 70, 2, "nested deeper than 64"
    if fmt != "table":
        yield "dup-top", good.rstrip()[:-1] + ', "dupkey": 1, "dupkey": 2}', 2, 'duplicate key "dupkey"'
        yield "num-1e999", good.rstrip()[:-1] + ', "zz": 1e999}', 2, "{f}"


SPECIAL = [  # (tag, path, status, text) non-regular and missing inputs
    ("devzero", "/dev/zero", 1, "/dev/zero: cannot read: a character device, not a regular file"),
    ("devnull", "/dev/null", 1, "/dev/null: cannot read: a character device, not a regular file"),
    ("dir", IN, 1, "cannot read: Is a directory"),
    ("fifo", os.path.join(IN, "fifo.json"), 1, "a FIFO (named pipe), not a regular file"),
    ("missing", os.path.join(IN, "no-such.json"), 1, "no-such.json: cannot open: No such file"),
    ("loop", os.path.join(IN, "loop.json"), 1, "loop.json: cannot open: Too many levels of symbolic links"),
]
os.mkfifo(os.path.join(IN, "fifo.json"))
os.symlink("loop.json", os.path.join(IN, "loop.json"))

for label, fmt, argv in READERS:
    for tag, content, st, txt in attacks(fmt):
        p = put(f"doc-{fmt}-{tag}.json", content)
        case(f"doc/{label}/{tag}", argv(p), st, txt.format(f=p))
    for tag, path, st, txt in SPECIAL:
        if label == "report" and not path.endswith(".json"):
            continue  # `report DIR`: a path without .json is read as a sweep directory
        case(f"special/{label}/{tag}", argv(path), st, txt)

# CSV tables (report)
for tag, content, txt in [
        ("empty", "", "empty file: expected a CSV header"),
        ("ragged", "a,b\n1,2\n3\n", "record 3 has 1 fields, the header 2"),
        ("ragged-long", "a,b\n1,2,3\n", "record 2 has 3 fields, the header 2"),
        ("header-only-ragged", "a,b\n,\n1\n", "record 3 has 1 fields")]:
    p = put(f"tab-{tag}.csv", content)
    case(f"csv/{tag}", ["report", p, "--out", "rep"], 2, f"{p}: {txt}")

# ---------------------------------------------------------------- 2. field mutations


def leaves(x, path=""):
    if isinstance(x, dict):
        for k, v in x.items():
            yield from leaves(v, f"{path}.{k}" if path else k)
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from leaves(v, f"{path}[{i}]")
    else:
        yield path, x


def set_path(doc, path, value):
    import re
    parts = re.findall(r"[^.\[\]]+|\[\d+\]", path)
    cur = doc
    for p in parts[:-1]:
        cur = cur[int(p[1:-1])] if p.startswith("[") else cur[p]
    last = parts[-1]
    if last.startswith("["):
        cur[int(last[1:-1])] = value
    else:
        cur[last] = value


def wrong_values(v):
    """Values of the wrong type for a leaf holding v."""
    if isinstance(v, bool):
        return [("str", "yes"), ("num", 1)]
    if isinstance(v, (int, float)):
        return [("str", "abc"), ("obj", {})]
    if isinstance(v, str):  # -5: quantities take plain numbers, but not negative ones
        return [("num", -5), ("arr", [])]
    return [("num", 5)]


# (format, document, reader label, paths to skip: free-text fields any value type may not
# reach, or leaves whose mutation another check reports elsewhere)
MUT = [("scenario", SCEN, "memory", set()),
       ("topology", TOPO, "topo-validate", {"name", "version"}),
       ("trace", TRACE, "trace", {"version"}),
       ("calibration", CAL, "coll-cal", set()),
       ("sweep", {"sweep": SWEEP["sweep"]}, "sweep", set())]
reader = {label: argv for label, _, argv in READERS}
for fmt, doc, label, skip in MUT:
    seen = 0
    for path, v in leaves(doc):
        if path in skip:
            continue
        # a topology repeats one shape per node and link: mutate the first two of each
        import re
        idx = re.search(r"\[(\d+)\]", path)
        if idx and int(idx.group(1)) > 1 and fmt in ("topology", "calibration"):
            continue
        if fmt == "sweep" and ".values[" in path:
            continue  # a value of the wrong type fails its points (exit 1), not the sweep
        for tag, bad in wrong_values(v):
            d = dup(SWEEP) if fmt == "sweep" else dup(doc)
            set_path(d, path, bad)
            name = f"mut-{fmt}-{seen}-{tag}.json"
            p = put(name, d)
            case(f"mut/{fmt}/{path}/{tag}", reader[label](p), 2, f"{p}: {path}")
        seen += 1

# ---------------------------------------------------------------- 3. command-line misuse
OK = put("ok.json", SCEN)
SW_OK = put("sw-ok.json", SWEEP)
GOOD_CAL = put("cal-ok.json", CAL)
misuse = [
    (["run", OK, "--bogus"], "unknown option"),
    (["run", OK, "--seed"], "--seed needs a value"),
    (["run", OK, "--seed", "-1"], "--seed expects"),
    (["run", OK, "--seed", "1e3"], "--seed expects"),
    (["run", OK, "--seed", ""], "--seed expects"),
    (["run", OK, "--steps", "0"], "--steps expects"),
    (["run", OK, "--steps", "99999999999999999999"], "--steps expects"),
    (["run", OK, "--network", "fast"], "--network"),
    (["run", OK, "--timeline-gpus", "5-2", "--timeline", "tl.json"], "--timeline-gpus"),
    (["run"], "run"),
    (["run", OK, OK], "run"),
    (["memory"], "memory"),
    (["memory", OK, "--bogus"], "unknown option"),
    (["plan", OK], "--gpus"),
    (["plan", OK, "--gpus", "0"], "--gpus expects"),
    (["plan", OK, "--gpus", "-8"], "--gpus expects"),
    (["plan", OK, "--gpus", "8", "--objective", "x"], "--objective"),
    (["plan", OK, "--gpus", "8", "--bogus"], "unknown"),
    (["goodput", OK, "--runs", "0"], "--runs expects"),
    (["goodput", OK, "--seed", "18446744073709551616"], "--seed expects a non-negative integer below 2^64"),
    (["goodput", OK, "--horizon", "7 parsecs"], "--horizon"),
    (["goodput", OK, "--bogus"], "unknown"),
    (["sweep", SW_OK], "--out"),
    (["sweep", SW_OK, "--out", "sw", "--jobs", "0"], "--jobs expects"),
    (["sweep", SW_OK, "--out", "sw", "--jobs", "x"], "--jobs expects"),
    (["sweep", SW_OK, "--out", "sw", "--bogus"], "unknown"),
    (["topo"], "topo"),
    (["topo", "bogus"], "unknown sub-command"),
    (["topo", "gen"], "gen needs a KIND"),
    (["topo", "gen", "ring", "--gpus", "0"], "--gpus: expected an integer from 1 to 262144"),
    (["topo", "gen", "ring", "--gpus", "4194304"], "--gpus: expected an integer from 1 to 262144, found 4194304"),
    (["topo", "gen", "ring", "--gpus", "8", "--latency", "1s"], "latency below 1 s"),
    (["topo", "gen", "ring", "--gpus", "8", "--bandwidth", "1e-300"], "expected a bandwidth of at least 1 B/s"),
    (["topo", "gen", "ring", "--gpus", "8", "--bandwidth", "-1"], "--bandwidth"),
    (["topo", "gen", "torus", "--dims", "0x4"], "--dims"),
    (["topo", "gen", "bogus"], 'unknown value "bogus"'),
    (["topo", "info"], "info needs a FILE"),
    (["collective", "--op", "allreduce", "--size", "1MB"], "--topology is required"),
    (COLL[:1] + ["--topology", "gen:ring:gpus=8", "--op", "bogus", "--size", "1MB"], "--op: unknown collective"),
    (COLL + ["--topology", "gen:ring:gpus=8", "--size", "-1"], "size"),
    (COLL + ["--topology", "gen:ring:gpus=1e300"], "bad value '1e300' for gpus"),
    (COLL + ["--topology", "gen:ring:gpuz=8"], "unknown generator key 'gpuz'"),
    (COLL + ["--topology", "gen:ring:gpus=8,bandwidth=1e-300"], "expected a bandwidth of at least 1 B/s"),
    (COLL + ["--topology", "gen:ring:gpus=8", "--group", "0,0"], "appears twice"),
    (COLL + ["--topology", "gen:ring:gpus=8", "--chunk", "0"], "--chunk"),
    (COLL + ["--topology", "gen:ring:gpus=8", "--bogus"], "unknown"),
    (["calibrate"], "--out FILE is required"),
    (["calibrate", "--bogus"], 'unknown option "--bogus"'),
    (["calibrate", "--bogus", "1", "--out", "c.json"], 'unknown option "--bogus"'),
    (["calibrate", "--ranks", "0", "--out", "c.json"], "--ranks"),
    (["calibrate", "--seed", "99999999999", "--out", "c.json"], "--seed"),
    (["calibrate", "--dtype", "fp64", "--out", "c.json"], "--dtype"),
    (["calibrate", "--out"], "--out needs a value"),
    (["report"], "report"),
    (["report", OK, "--bogus"], "unknown"),
    (["validate", "--bogus"], "unknown"),
    (["bogus-command"], "unknown command"),
    (["run", OK, "--max-memory", "1KB"], "--max-memory: expected a size of at least 1 MiB"),
    (["run", OK, "--max-memory"], "--max-memory needs a size"),
    (["run", OK, "--max-memory", "lots"], "--max-memory: expected a size"),
]
for i, (argv, txt) in enumerate(misuse):
    case(f"cli/{i}/{' '.join(a if not a.startswith('/') else os.path.basename(a) for a in argv)[:60]}",
         argv, 2, txt)

# ---------------------------------------------------------------- 4. one case per defect of issue 11
# Duplicate keys: 1 M keys, the last one repeated, so a pairwise check reaches it only after
# n^2/2 comparisons (> 60 s); through a hash set the whole file takes about a second.
big = "{" + ",".join(f'"k{i}":{i}' for i in range(1000000)) + ',"k999999":0}'
p = put("dup-1m.json", big)
case("defect/dup-keys-1M", ["memory", p], 2, [p, 'duplicate key "k999999"'], secs=5)
# 10 M numbers (20 MB) with a 64 MiB budget: refused before parsing, not 800 MB of nodes.
p = put("numbers-10M.json", "[" + ",".join(["1"] * 10000000) + "]")
case("defect/numbers-max-memory", ["memory", p, "--max-memory", "64MiB"], 1,
     [p, "would need about", "above the limit of 64 MiB"], secs=5, mem=512 << 20)
case("defect/numbers-ulimit", ["memory", p], 1, [p, "would need about"], secs=5, mem=512 << 20,
     env={"ULIMIT_BUDGET": "1"})
# A generated topology past the memory budget: refused before its GPUs are built (it aborted
# under ulimit -v: 262,144 GPUs take about 620 MB).
case("defect/generator-ulimit", ["topo", "gen", "ring", "--gpus", "262144", "-o", "r.json"], 1,
     "a topology of this size would need about", secs=5, mem=400 << 20, env={"ULIMIT_BUDGET": "1"})
# 2^26 + 1 numbers (134 MB; a 200 MB array of numbers took over 6.7 GB): refused by count
# while scanned, before any is parsed, whatever the memory budget.
p = put("numbers-2^26.json", b"[" + b"0," * (1 << 26) + b"0]")
case("defect/numbers-count", ["memory", p, "--max-memory", "1TiB"], 2,
     f"{p}:1:134217727: more than 67108864 values in one JSON file", secs=5, mem=1 * GiB)
# A file over the 1 GiB input limit (sparse: no disk used) is refused from its size, unread.
p = put("sparse-1100MiB.json", "")
os.truncate(p, 1100 << 20)
case("limit/input-size", ["memory", p], 2, f"{p}: 1153433600 bytes: larger than the 1024 MiB", secs=2, mem=512 << 20)
os.link(p, p[:-5] + ".csv")
case("limit/input-size-csv", ["report", p[:-5] + ".csv", "--out", "rep"], 2,
     f"{p[:-5]}.csv: 1153433600 bytes: larger than the 1024 MiB", secs=2, mem=512 << 20)
# A valid plan whose op graph (2^20 microbatches: about 4 GB) would not fit the budget: it
# aborted ("out of memory") under ulimit -v.
d = dup(SCEN)
d["parallel"] = {"pp": 2, "microbatches": 1 << 20}
d.pop("global_batch")
p = put("op-graph-4GB.json", d)
case("defect/op-graph-ulimit", ["run", p], 1, f"{p}: parallel.microbatches: the step's op graph would need about",
     secs=5, mem=600 << 20, env={"ULIMIT_BUDGET": "1"})
# Sweep of 50 axes of a million values each (3 KB): refused at the second axis.
d = dup(SCEN)
d["sweep"] = {"axes": [{"path": f"model.x{i}", "range": [1, 1000000]} for i in range(50)]}
p = put("sweep-50-axes.json", d)
case("defect/sweep-50-axes", ["sweep", p, "--out", "sw"], 2,
     [p, "sweep.axes[1].range: the sweep would have more than 10000000 points"], secs=3, mem=1 * GiB)
# A sweep naming /dev/zero or a FIFO as its topology or calibration: hashing it never ended.
for tag, target in [("devzero", "/dev/zero"), ("fifo", os.path.join(IN, "fifo.json"))]:
    d = dup(SWEEP)
    d["topology"] = target
    p = put(f"sweep-topo-{tag}.json", d)
    case(f"defect/sweep-topology-{tag}", ["sweep", p, "--out", "sw", "--jobs", "1"], 1,
         "not a regular file", secs=5, may_leave=["sw"])
    d = dup(SWEEP)
    d["options"] = {"calibration": target}
    p = put(f"sweep-cal-{tag}.json", d)
    case(f"defect/sweep-calibration-{tag}", ["sweep", p, "--out", "sw", "--jobs", "1"], 1,
         "not a regular file", secs=5, may_leave=["sw"])
# Generators: 4,194,304 GPUs ran out of memory or for minutes; now refused at once.
for g in ["ring:gpus=4194304", "switch:gpus=262145", "dgx:nodes=65536,gpus_per_node=8"]:
    case(f"defect/generator-{g}", COLL + ["--topology", f"gen:{g}"], 2, "262144", secs=2, mem=1 * GiB)
d = dup(SCEN)
d["topology"] = {"generator": "ring", "gpus": 4194304}
p = put("scen-4M-gpus.json", d)
case("defect/scenario-4M-gpus", ["memory", p], 2, f"{p}: topology.gpus: expected an integer from 1 to 262144", secs=2, mem=1 * GiB)
# A topology file of 262,145 GPUs: refused while reading its nodes.
nodes = [{"name": f"g{i}", "kind": "gpu"} for i in range(262145)]
p = put("topo-262145.json", {"nodes": nodes, "links": []})
case("defect/topology-file-262145-gpus", ["topo", "info", p], 2,
     f"{p}: nodes[262144]: more than 262144 GPUs", secs=10, mem=2 * GiB)
# topo info on a 65,536-GPU switch file: the per-GPU diameter search is skipped (it ran for
# minutes; a 1 M GPU file never finished).
nodes = [{"name": f"g{i}", "kind": "gpu"} for i in range(65536)] + [{"name": "sw", "kind": "switch"}]
links = [{"src": f"g{i}", "dst": "sw", "bandwidth": "100 GB/s", "latency": "1 us"} for i in range(65536)]
p = put("topo-65536.json", {"nodes": nodes, "links": links})
cases_ok_topo = p
# (exit 0: checked in run_special below)
# "count" multiplies a link entry: 2,049 entries of 4,096 duplex links pass 2^24 links.
g = {"nodes": [{"name": "a", "kind": "gpu"}, {"name": "b", "kind": "gpu"}],
     "links": [{"src": "a", "dst": "b", "bandwidth": "1 GB/s", "latency": "1 us", "count": 4096}] * 2049}
p = put("topo-links-count.json", g)
case("defect/topology-links-count", ["topo", "info", p], 2,
     f"{p}: links[2048]: more than 16777216 directed links", secs=5, mem=2 * GiB)
# Latency of exactly 1 s: the documented limit is below 1 s.
t = dup(TOPO)
t["links"][3]["latency"] = "1 s"
p = put("topo-lat-1s.json", t)
case("defect/link-latency-1s", ["topo", "validate", p], 2, f"{p}: links[3].latency: expected a link latency below 1 s")
t = dup(TOPO)
t["links"][3]["bandwidth"] = 1e-300
p = put("topo-bw-1e-300.json", t)
case("defect/collective-1e-300-link", COLL + ["--topology", p], 2,
     f"{p}: links[3].bandwidth: expected a bandwidth of at least 1 B/s")
# A trace op naming a lane and a GPU that contradict it.
tr = dup(TRACE)
tr["ops"][0]["lane"] = 1
p = put("trace-lane-gpu.json", tr)
case("defect/trace-lane-gpu", ["run", "--trace", p, "--topology", RING8], 2,
     f"{p}: ops[0].gpu: GPU 0 is not in lane 1")
# A trace of 16 M GPUs: its lanes were built before the topology was compared with it.
tr = dup(TRACE)
tr["gpus"] = 1 << 24
p = put("trace-16M-gpus.json", tr)
case("defect/trace-16M-gpus", ["run", "--trace", p, "--topology", RING8], 2,
     f"{p}: gpus: expected an integer from 1 to 262144", secs=2, mem=1 * GiB)
# Seeds above 2^64 were clamped to 2^64 - 1.
for cmd in (["run", OK], ["goodput", put("gp.json", dict(dup(SCEN), failures={"gpu": {"mtbf": "1000 h"}, "restart": "10 min"}, checkpoint={"interval": "1 h"}, storage={"bandwidth": "100 GB/s"}))]):
    case(f"defect/seed-2^64-{cmd[0]}", cmd + ["--seed", "18446744073709551616"], 2,
         "--seed expects a non-negative integer below 2^64")
# Stragglers of one GPU multiplied past the 10^6 cap.
d = dup(SCEN)
d["stragglers"] = [{"gpu": 1, "slowdown": 1e4}, {"gpu": 1, "slowdown": 1e4}]
p = put("stragglers-product.json", d)
case("defect/stragglers-product", ["run", p], 2,
     f"{p}: stragglers[1].slowdown: GPU 1's slowdowns multiply to 1e+08")
tr = dup(TRACE)
tr["environment"] = {"stragglers": [{"gpu": 0, "slowdown": 1e-2}, {"gpu": 0, "slowdown": 1e-2}]}
p = put("trace-stragglers-product.json", tr)
case("defect/trace-stragglers-product", ["run", "--trace", p, "--topology", RING8], 2,
     f"{p}: environment.stragglers[1].slowdown: GPU 0's slowdowns multiply to 0.0001")
# "topology": "" was reported as "Is a directory".
d = dup(SCEN)
d["topology"] = ""
p = put("topo-empty-name.json", d)
case("defect/topology-empty-string", ["run", p], 2,
     f'{p}: topology: expected a topology file name or an object, found ""')
d = dup(SCEN)
d["options"] = {"calibration": ""}
p = put("cal-empty-name.json", d)
case("defect/calibration-empty-string", ["run", p], 2,
     f'{p}: options.calibration: expected a calibration file name, found ""')
# A calibration with a negative latency outside its interval was applied as 0.
c = dup(CAL)
c["fits"][0]["alpha"] = -1e-3
c["fits"][0]["alpha_ci95"] = 1e-5
p = put("cal-negative-alpha.json", c)
case("defect/calibration-negative-latency", COLL + ["--topology", "gen:ring:gpus=8", "--calibration", p], 2,
     f"{p}: fits[0].alpha: a negative latency")
# calibrate --bogus said "needs a value".
case("defect/calibrate-bogus", ["calibrate", "--bogus"], 2, 'unknown option "--bogus"')


# A busy sweep directory is a run-time condition: exit 1 (it was 2).
def hold_lock(cwd):
    os.mkdir(os.path.join(cwd, "busy"))
    fd = os.open(os.path.join(cwd, "busy", ".lock"), os.O_RDWR | os.O_CREAT, 0o666)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


case("defect/sweep-busy-directory", ["sweep", SW_OK, "--out", "busy", "--jobs", "1"], 1,
     "another dtsim sweep is writing into this directory", setup=hold_lock)

# ---------------------------------------------------------------- the checked-in corpus
HAND = os.path.join(SRC, "tests/data/hostile")
if os.path.isdir(HAND):
    for fn in sorted(os.listdir(HAND)):
        if not fn.endswith(".json") or fn.endswith(".expect.json"):
            continue
        with open(os.path.join(HAND, fn[:-5] + ".expect.json")) as f:
            ex = json.load(f)
        src = os.path.join(HAND, fn)
        case(f"hand/{fn}", [a.replace("@", src).replace("$RING8", RING8) for a in ex["args"]],
             ex["status"], [t.replace("@", src) for t in ex["text"]], secs=ex.get("secs", 10))

# ---------------------------------------------------------------- running
if ONLY:
    cases = [c for c in cases if ONLY in c["name"]]
if LIST:
    for c in cases:
        print(c["name"])
    sys.exit(0)


def sanitized():
    """Sanitizer builds reserve terabytes of address space: ulimit -v cannot apply."""
    try:
        r = subprocess.run([DTSIM, "--version"], capture_output=True, timeout=20,
                           preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (2 * GiB, 2 * GiB)))
        return r.returncode != 0
    except Exception:
        return True


SAN = sanitized()


def snapshot(d):
    out = {}
    for root, dirs, files in os.walk(d):
        for fn in files + dirs:
            p = os.path.join(root, fn)
            st = os.lstat(p)
            if stat.S_ISREG(st.st_mode):
                out[p] = (st.st_size, st.st_mtime_ns)
            else:
                out[p] = (stat.S_IFMT(st.st_mode),)
    return out


def run_case(i, c):
    cwd = os.path.join(work, f"case{i}")
    os.mkdir(cwd)
    held = c["setup"](cwd) if c["setup"] else None
    before = set(os.listdir(cwd))
    mem = c["mem"]

    def limits():
        if not SAN:
            resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    env = dict(os.environ)
    env.pop("DTSIM_MAX_MEMORY", None)
    if c["env"]:
        env.update(c["env"])
    if env.pop("ULIMIT_BUDGET", None) and SAN:
        # no ulimit -v under a sanitizer: give the budget it would have set (3/4 of it)
        env["DTSIM_MAX_MEMORY"] = str(mem * 3 // 4)
    t0 = time.monotonic()
    why = []
    try:
        r = subprocess.run([DTSIM] + c["args"], cwd=cwd, capture_output=True,
                           timeout=c["secs"] * (4 if SAN else 1), preexec_fn=limits, env=env)
        rc, err = r.returncode, r.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired as e:
        rc, err = None, (e.stderr or b"").decode("utf-8", "replace")
        why.append(f"still running after {c['secs']} s")
    wall = time.monotonic() - t0
    if held is not None:
        os.close(held)
    if rc is not None:
        if rc < 0:
            why.append(f"killed by signal {-rc}")
        elif rc != c["status"]:
            why.append(f"exit {rc}, expected {c['status']}")
        for t in c["text"]:
            if t not in err:
                why.append(f"message lacks {t!r}")
        for bad in ("internal error", "Sanitizer", "runtime error", "Assertion"):
            if bad in err:
                why.append(f"stderr has {bad!r}")
    left = set(os.listdir(cwd)) - before - c["may_leave"]
    if left:
        why.append(f"left {sorted(left)} behind")
    shutil.rmtree(cwd, ignore_errors=True)
    return c, wall, why, err


def main():
    inputs = snapshot(IN)
    t0 = time.monotonic()
    jobs = int(os.environ.get("HOSTILE_JOBS", "2"))
    fails = 0
    slowest = []
    with ThreadPoolExecutor(jobs) as ex:
        for c, wall, why, err in ex.map(lambda a: run_case(*a), enumerate(cases)):
            slowest.append((wall, c["name"]))
            if why:
                fails += 1
                print(f"FAIL: {c['name']}: {'; '.join(why)}\n      dtsim {' '.join(c['args'])[:300]}\n"
                      f"      stderr: {err[:400]}", file=sys.stderr)
    # topo info on a big file: succeeds, quickly, saying what it did not compute
    tinfo = None
    try:
        t1 = time.monotonic()
        r = subprocess.run([DTSIM, "topo", "info", cases_ok_topo], capture_output=True,
                           timeout=10 * (4 if SAN else 1))
        tinfo = time.monotonic() - t1
        if r.returncode != 0 or b"not computed" not in r.stdout:
            fails += 1
            print(f"FAIL: topo info on 65,536 GPUs: exit {r.returncode}: {r.stdout[-300:]!r} {r.stderr[-300:]!r}", file=sys.stderr)
    except subprocess.TimeoutExpired:
        fails += 1
        print("FAIL: topo info on 65,536 GPUs still running after 10 s", file=sys.stderr)
    # seeds above 2^53 printed exactly
    r = subprocess.run([DTSIM, "run", OK, "--json", "--seed", "9007199254740993"], capture_output=True, timeout=60)
    try:
        seed = json.loads(r.stdout)["seed"]
    except Exception:
        seed = None
    if r.returncode != 0 or seed != 9007199254740993:  # 2^53 + 1: a double prints 2^53
        fails += 1
        print(f"FAIL: run --json --seed 9007199254740993 printed seed {seed!r} (exit {r.returncode})", file=sys.stderr)
    if snapshot(IN) != inputs:
        fails += 1
        print("FAIL: an input file was changed, added or removed", file=sys.stderr)
    slowest.sort(reverse=True)
    total = time.monotonic() - t0
    print(f"{len(cases)} cases in {total:.1f} s ({jobs} at a time{', sanitizer build: no ulimit -v' if SAN else ''}); "
          f"slowest: " + ", ".join(f"{n} {w:.2f} s" for w, n in slowest[:3])
          + (f"; topo info 65,536 GPUs {tinfo:.2f} s" if tinfo else ""))
    shutil.rmtree(work, ignore_errors=True)
    if fails:
        print(f"FAIL: {fails} of {len(cases) + 3} hostile checks", file=sys.stderr)
        return 1
    print("PASS")
    return 0


sys.exit(main())
