#!/usr/bin/env python3
"""device-attn-gqa.py - two checks of the call-size model (docs/workloads.md, "Attention calls
smaller than the benchmark's") on a lent GPU: grouped-query attention (8 key/value heads for 32
query heads, PyTorch's enable_gqa) against the same call with 32 key/value heads, and head dim 64
at 2k (FlashAttention-2 and cuDNN, 4 to 128 heads). Causal, bf16, no dropout; one JSON line each.

    python3 scripts/device-attn-gqa.py > $OUT/attn-gqa.jsonl      (about 20 s on an H100)
"""
import json

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def timed(fn, warm=3, reps=10):
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
    return ts[len(ts) // 2]


def run(tag, heads, kv, s, d):
    q = (torch.rand(1, heads, s, d, device="cuda", dtype=torch.bfloat16) * 2 - 1).requires_grad_()
    k, v = ((torch.rand(1, kv, s, d, device="cuda", dtype=torch.bfloat16) * 2 - 1).requires_grad_()
            for _ in range(2))
    go = torch.rand_like(q)
    flops = 4 * heads * s * s * d / 2
    for name, be in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("fa2", SDPBackend.FLASH_ATTENTION)):
        r = {"tag": tag, "kernel": name, "heads": heads, "kv_heads": kv, "s": s, "d": d}
        try:
            with sdpa_kernel([be]):
                def fwd():
                    return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=kv != heads)
                tf = timed(fwd)
                tfb = timed(lambda: fwd().backward(go))
            r.update(fwd_s=tf, bwd_s=tfb - tf, fwd_tflops=flops / tf / 1e12, bwd_tflops=2.5 * flops / (tfb - tf) / 1e12)
        except Exception as e:
            r["error"] = repr(e)[:200]
        print(json.dumps(r), flush=True)


for s in (4096, 8192):
    run("gqa", 32, 8, s, 128)
    run("gqa", 32, 32, s, 128)
for heads in (4, 8, 16, 32, 64, 128):
    run("hd64", heads, heads, 2048, 64)
