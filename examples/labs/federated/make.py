#!/usr/bin/env python3
"""Writes the federated lab's topology and scenarios (run from examples/labs/federated/).

50 clients in 5 sites of 10, an edge server in each site, one cloud server: the shape of the
experiments of Liu et al. 2020 (HierFAVG, "Client-Edge-Cloud Hierarchical Federated Learning").
The link figures are this lab's assumptions (README): clients reach their site's edge server
over 1 Gb/s access links (a campus or 5G cell with a MEC server), each site reaches the cloud
over one 1 Gb/s wide-area link of 30 ms that its clients share.
"""
import json
import os
import sys

# make.py [WAN_BANDWIDTH OUT_DIR]: the wide-area figure (default "1 Gb/s") and where to write
WAN = sys.argv[1] if len(sys.argv) > 1 else "1 Gb/s"
OUT = sys.argv[2] if len(sys.argv) > 2 else "."
SITES, PER_SITE = 5, 10
# a small edge GPU (T4-like); the local step comes from the synthetic model below
EDGE_GPU = {"name": "T4-like", "flops": {"fp32": "8.1 TFLOP/s", "fp16": "65 TFLOP/s"},
            "hbm": "16 GiB", "hbm_bw": "320 GB/s"}
nodes = [{"name": "core", "kind": "switch"}, {"name": "cloud", "kind": "gpu", "gpu": "H100-SXM"}]
links = [{"src": "cloud", "dst": "core", "bandwidth": "10 Gb/s", "latency": "0.5 ms"}]
edges = []
for s in range(SITES):
    site, edge = f"site{s}", f"edge{s}"
    nodes += [{"name": site, "kind": "switch"}, {"name": edge, "kind": "gpu", "gpu": "H100-SXM"}]
    links += [{"src": site, "dst": "core", "bandwidth": WAN, "latency": "30 ms"},
              {"src": edge, "dst": site, "bandwidth": "10 Gb/s", "latency": "0.5 ms"}]
    clients = []
    for k in range(PER_SITE):
        c = f"client{s}.{k}"
        nodes.append({"name": c, "kind": "gpu", "gpu": EDGE_GPU})
        links.append({"src": c, "dst": site, "bandwidth": "1 Gb/s", "latency": "2 ms"})
        clients.append(c)
    edges.append({"server": edge, "clients": clients})
topo = {"format": "dtsim-topology", "version": 1, "name": "federated-5x10",
        "description": "50 clients in 5 sites (1 Gb/s access, 2 ms), an edge server per site, "
                       f"{WAN} 30 ms wide-area link per site to the cloud",
        "nodes": nodes, "links": links}

# ResNet-18-sized: 11.7 M parameters (46.8 MB of fp32 update); a local step of 18 x (1 + 2) ms
# of compute plus the SGD step, about what a small GPU takes for a CIFAR batch of 32
MODEL = {"kind": "synthetic", "name": "ResNet-18-sized", "layers": 18, "forward_time": "1 ms",
         "backward_time": "2 ms", "params": 11.7e6}

def scen(name, desc, fed, options=None):
    f = {"cloud": "cloud", "edges": edges}
    f.update(fed)
    s = {"name": name, "description": desc, "topology": "topology.json", "model": MODEL,
         "parallel": {"micro_batch_size": 32}, "precision": "fp32", "optimizer": "sgd",
         "federated": f}
    if options: s["options"] = options
    return s

# every scenario runs 100 local steps per client
out = {
    "hier.json": scen("hierarchical", "edge aggregation every 5 local steps, cloud every 4 edge rounds",
                      {"aggregation": "hierarchical", "local_steps": 5, "edge_rounds": 4, "rounds": 5}),
    "ps-5.json": scen("flat PS, every 5", "clients -> cloud every 5 local steps",
                      {"aggregation": "ps", "local_steps": 5, "rounds": 20}),
    "ps-20.json": scen("flat PS, every 20", "clients -> cloud every 20 local steps",
                       {"aggregation": "ps", "local_steps": 20, "rounds": 5}),
    # the ring, named: the lab derives its closed form (the default auto, by estimated time,
    # runs another algorithm: README)
    "allreduce-5.json": scen("all-reduce, every 5", "ring all-reduce among the clients every 5 local steps",
                             {"aggregation": "allreduce", "local_steps": 5, "rounds": 20},
                             {"dp_algorithm": "ring"}),
}
os.makedirs(OUT, exist_ok=True)
with open(os.path.join(OUT, "topology.json"), "w") as fh:
    json.dump(topo, fh, indent=1)
    fh.write("\n")
for f, s in out.items():
    with open(os.path.join(OUT, f), "w") as fh:
        json.dump(s, fh, indent=1)
        fh.write("\n")
