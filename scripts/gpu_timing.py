"""gpu_timing.py - the one timing loop the device scripts share (device-attn.py, device-layer.py).

event_times(fn, warm, reps): runs fn `warm` times untimed, then `reps` times, each between two CUDA
events on the current stream, waiting for the second before the next call, and returns the
seconds sorted, fastest first (the median is [len // 2]). Waiting per call keeps one call's work
from overlapping the next: these are the kernels' times, not a pipelined throughput.
"""
import torch


def event_times(fn, warm, reps):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) / 1e3)
    ts.sort()
    return ts


def median(ts):
    return ts[len(ts) // 2]
