#!/usr/bin/env python3
"""Writes the decentralised lab's scenarios (run from examples/labs/decentralised/)."""
import json
# Measured AWS inter-region one-way latency (ms) and bandwidth (Gb/s) per instance pair, as
# published with the paper's scheduler (DS3Lab/DT-FM, scheduler/heuristic_evolutionary_solver/config.py,
# case 4 "worldwide"): 8 regions x 8 V100.
CITIES = ["Oregon", "Virginia", "Ohio", "Tokyo", "Seoul", "London", "Frankfurt", "Ireland"]
PAIRS = {
    ("Oregon", "Virginia"): (67, 0.79), ("Oregon", "Ohio"): (49, 1.10), ("Oregon", "Tokyo"): (96, 0.523),
    ("Oregon", "Seoul"): (124, 0.46), ("Oregon", "London"): (136, 0.42), ("Oregon", "Frankfurt"): (143, 0.404),
    ("Oregon", "Ireland"): (124, 0.482), ("Virginia", "Ohio"): (11, 1.12), ("Virginia", "Tokyo"): (143, 0.524),
    ("Virginia", "Seoul"): (172, 0.500), ("Virginia", "London"): (76, 1.16), ("Virginia", "Frankfurt"): (90, 1.02),
    ("Virginia", "Ireland"): (67, 1.05), ("Ohio", "Tokyo"): (130, 0.694), ("Ohio", "Seoul"): (159, 0.529),
    ("Ohio", "London"): (86, 1.05), ("Ohio", "Frankfurt"): (99, 0.799), ("Ohio", "Ireland"): (77, 1.14),
    ("Tokyo", "Seoul"): (34, 1.10), ("Tokyo", "London"): (210, 0.366), ("Tokyo", "Frankfurt"): (223, 0.36),
    ("Tokyo", "Ireland"): (199, 0.465), ("Seoul", "London"): (238, 0.342), ("Seoul", "Frankfurt"): (235, 0.358),
    ("Seoul", "Ireland"): (228, 0.335), ("London", "Frankfurt"): (14, 1.14), ("London", "Ireland"): (12, 1.09),
    ("Frankfurt", "Ireland"): (24, 1.08),
}
def pair(a, b):
    return PAIRS.get((a, b)) or PAIRS[(b, a)]
R = len(CITIES)
# The measurements are per instance pair; here one link per region pair carries all 8 GPUs'
# traffic, so it gets 8 x the per-instance figure (README: what this assumes).
bw = [[None if i == j else f"{8 * pair(CITIES[i], CITIES[j])[1]:.4g} Gb/s" for j in range(R)] for i in range(R)]
lat = [[None if i == j else f"{pair(CITIES[i], CITIES[j])[0]} ms" for j in range(R)] for i in range(R)]
V100 = {"name": "V100-SXM2", "flops": {"fp32": "15.7 TFLOP/s", "fp16": "125 TFLOP/s"},
        "hbm": "16 GiB", "hbm_bw": "900 GB/s", "nvlink_bw": "150 GB/s", "cost_per_hour": 3.06}
MODEL = {"kind": "transformer", "name": "GPT3-XL", "layers": 24, "hidden": 2048, "heads": 16,
         "seq_len": 2048, "vocab": 50257}
def scen(name, desc, topology, extra_parallel=None, options=None):
    par = {"pp": 8, "dp": 8, "schedule": "gpipe", "micro_batch_size": 1, "microbatches": 128}
    par.update(extra_parallel or {})
    s = {"name": name, "description": desc, "topology": topology, "gpu": V100, "model": MODEL,
         "parallel": par, "precision": "fp16", "optimizer": "adam"}
    if options: s["options"] = options
    return s
DC = {"generator": "dgx", "nodes": 8, "gpus_per_node": 8, "nic": "3.125 Gb/s", "nvlink": "150 GB/s"}
GEO = {"generator": "geo", "regions": 8, "gpus_per_region": 8, "gpus_per_node": 8,
       "nic": "2 Gb/s", "wan": bw, "wan_latency": lat}
out = {
  "datacenter.json": scen("DT-FM data centre", "8 x p3.16xlarge: 8 V100 on NVLink per box, 25 Gb/s per box (3.125 Gb/s per GPU)", DC),
  "geo-default.json": scen("DT-FM world-wide, default placement", "8 regions x 8 V100, measured AWS matrix; each region one pipeline; the data-parallel algorithm by the rule (what auto ran before it chose by estimated time): a ring", GEO, options={"dp_algorithm": "rule"}),
  "geo-auto.json": scen("DT-FM world-wide, default placement, auto", "as geo-default, the data-parallel algorithm by auto: the least estimated time under contention among every candidate (no framework: no library's set)", GEO),
  "geo-ps.json": scen("DT-FM world-wide, sharded PS", "as geo-default, data parallelism by a sharded parameter server", GEO, options={"dp_algorithm": "ps", "ps_servers": 8}),
  "geo-fastest.json": scen("DT-FM world-wide, fastest algorithm", "as geo-default, the data-parallel algorithm chosen by estimated time", GEO, options={"dp_algorithm": "fastest"}),
  "geo-estimate.json": scen("DT-FM world-wide, estimate", "as geo-default, the data-parallel algorithm chosen by estimated time under contention (ring, tree, dbt, hd, direct, hier; every replica group of the step on the links at once)", GEO, options={"dp_algorithm": "estimate"}),
  "geo-placed-estimate.json": scen("DT-FM world-wide, placed by bandwidth, estimate", "as geo-placed, the data-parallel algorithm chosen by estimated time under contention", GEO, {"placement": "bandwidth"}, {"dp_algorithm": "estimate"}),
  "geo-placed.json": scen("DT-FM world-wide, placed by bandwidth", "as geo-default, ranks placed from the bandwidth matrix (pipelines in regions, replicas around the ring whose slowest link is fastest); the rule's ring", GEO, {"placement": "bandwidth"}, {"dp_algorithm": "rule"}),
  "geo-localsgd.json": scen("DT-FM world-wide, local SGD H=4", "as geo-ps, replicas averaged every 4 steps", GEO, {"local_sgd": 4}, {"dp_algorithm": "ps", "ps_servers": 8}),
}
for f, s in out.items():
    with open(f, "w") as fh:
        json.dump(s, fh, indent=1)
        fh.write("\n")
