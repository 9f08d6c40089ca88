#!/usr/bin/env python3
"""device-attn.py - fused attention on a lent GPU through PyTorch's scaled_dot_product_attention:
cuDNN and FlashAttention-2 backends, causal, bf16, forward and backward, with and without
attention dropout, on the validation cases' shapes and the FlashAttention-3 paper's (16k tokens
per call). One JSON line per measurement (docs/validation.md, "The H100 probe of 2026-11-27").

    python3 scripts/device-attn.py > $OUT/attn.jsonl       (about 20 s on an H100)
"""
import json

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def timed(fn, warm=5, reps=20):
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


# (batch, heads, seq, head dim): M-1.7B's call (b 1, 16 heads, 4k), the paper's at 4k and 2k
# (16k tokens), MPT-7B's (b 1, 32 heads, 2k), a 64-head 4k call
SHAPES = [(1, 16, 4096, 128), (4, 16, 4096, 128), (8, 16, 2048, 128), (1, 32, 2048, 128), (1, 64, 4096, 128)]
for b, heads, s, d in SHAPES:
    q, k, v = ((torch.rand(b, heads, s, d, device="cuda", dtype=torch.bfloat16) * 2 - 1).requires_grad_()
               for _ in range(3))
    go = torch.rand_like(q)
    flops = 4 * b * heads * s * s * d / 2  # causal: half the score matrix
    for name, be in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("fa2", SDPBackend.FLASH_ATTENTION)):
        for p in (0.0, 0.1):
            r = {"b": b, "heads": heads, "s": s, "d": d, "kernel": name, "dropout": p}
            try:
                with sdpa_kernel([be]):
                    def fwd():
                        return F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
                    tf = timed(fwd)
                    tfb = timed(lambda: fwd().backward(go))
                r.update(fwd_s=tf, bwd_s=tfb - tf, fwd_tflops=flops / tf / 1e12,
                         bwd_tflops=2.5 * flops / (tfb - tf) / 1e12)
            except Exception as e:
                r["error"] = repr(e)[:300]
            print(json.dumps(r), flush=True)
