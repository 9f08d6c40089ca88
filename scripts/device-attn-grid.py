#!/usr/bin/env python3
"""device-attn-grid.py - fused attention's rate against the size of one call, on a lent GPU:
PyTorch's scaled_dot_product_attention (cuDNN and FlashAttention-2 back ends), causal, bf16,
head dim 128, no dropout, batch 1 and 4 to 128 heads (a call's parallel rows: batch x heads
per GPU), at sequence lengths 1k to 16k. One JSON line per (kernel, s, heads): forward and
backward seconds (medians of REPS after WARM, CUDA events) and TFLOP/s (a causal call counts
half the score matrix; the backward 2.5 x the forward's FLOPs).

    python3 scripts/device-attn-grid.py > $OUT/attn-grid.jsonl    (about a minute on an H100)
"""
import json

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

WARM, REPS = 3, 10


def timed(fn):
    for _ in range(WARM):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(REPS):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) / 1e3)
    ts.sort()
    return ts[len(ts) // 2]


for s in (1024, 2048, 4096, 8192, 16384):
    for heads in (4, 8, 16, 32, 64, 128):
        if heads * s > 128 * 16384:
            continue
        q, k, v = ((torch.rand(1, heads, s, 128, device="cuda", dtype=torch.bfloat16) * 2 - 1).requires_grad_()
                   for _ in range(3))
        go = torch.rand_like(q)
        flops = 4 * heads * s * s * 128 / 2
        for name, be in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("fa2", SDPBackend.FLASH_ATTENTION)):
            r = {"kernel": name, "s": s, "heads": heads, "b": 1, "d": 128}
            try:
                with sdpa_kernel([be]):
                    def fwd():
                        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
                    tf = timed(fwd)
                    tfb = timed(lambda: fwd().backward(go))
                r.update(fwd_s=tf, bwd_s=tfb - tf, fwd_tflops=flops / tf / 1e12,
                         bwd_tflops=2.5 * flops / (tfb - tf) / 1e12)
            except Exception as e:
                r["error"] = repr(e)[:200]
            print(json.dumps(r), flush=True)
        del q, k, v, go
