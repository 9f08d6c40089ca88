#!/usr/bin/env python3
"""device-attn.py - fused attention on a lent GPU through PyTorch's scaled_dot_product_attention
(its cuDNN and FlashAttention-2 back ends), causal, bf16, forward and backward, one JSON line per
call (docs/calibration.md, "One H100, measured 2026-11-27"; docs/workloads.md, "Attention dropout
inside a fused kernel" and "Attention calls smaller than the benchmark's"):

    python3 scripts/device-attn.py dropout > $OUT/attn-dropout.jsonl   # p 0 and 0.1, five calls
    python3 scripts/device-attn.py grid > $OUT/attn-grid.jsonl         # 4-128 heads x 1k-16k
    python3 scripts/device-attn.py gqa > $OUT/attn-gqa.jsonl           # GQA; head dim 64 at 2k

About 20 s each on an H100. Inputs uniform random in [-1, 1); times are medians of CUDA-event
timed calls after warm-up (scripts/gpu_timing.py); FLOPs count half the score matrix (causal),
the backward 2.5 times the forward's. A back end that refuses a call prints its error in the line
and the rest goes on.
"""
import json
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from gpu_timing import event_times, median

BACKENDS = (("cudnn", SDPBackend.CUDNN_ATTENTION), ("fa2", SDPBackend.FLASH_ATTENTION))


def call(b, heads, s, d, kv=None, dropouts=(0.0,), warm=3, reps=10, **tags):
    """One line per back end and dropout for b sequences of `heads` query heads (kv key/value
    heads, default the same) of length s and head dim d."""
    kv = kv or heads
    q = (torch.rand(b, heads, s, d, device="cuda", dtype=torch.bfloat16) * 2 - 1).requires_grad_()
    k, v = ((torch.rand(b, kv, s, d, device="cuda", dtype=torch.bfloat16) * 2 - 1).requires_grad_()
            for _ in range(2))
    go = torch.rand_like(q)
    flops = 4 * b * heads * s * s * d / 2
    for name, be in BACKENDS:
        for p in dropouts:
            r = dict(tags, kernel=name, b=b, heads=heads, kv_heads=kv, s=s, d=d, dropout=p)
            try:
                with sdpa_kernel([be]):
                    def fwd():
                        return F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True,
                                                              enable_gqa=kv != heads)
                    tf = median(event_times(fwd, warm, reps))
                    tfb = median(event_times(lambda: fwd().backward(go), warm, reps))
                r.update(fwd_s=tf, bwd_s=tfb - tf, fwd_tflops=flops / tf / 1e12,
                         bwd_tflops=2.5 * flops / (tfb - tf) / 1e12)
            except Exception as e:
                r["error"] = repr(e)[:300]
            print(json.dumps(r), flush=True)


def dropout():
    # M-1.7B's call (b 1, 16 heads, 4k), the FlashAttention-3 paper's at 4k and 2k (16k tokens),
    # MPT-7B's (b 1, 32 heads, 2k), a 64-head 4k call; 20 timed calls after 5
    for b, heads, s in ((1, 16, 4096), (4, 16, 4096), (8, 16, 2048), (1, 32, 2048), (1, 64, 4096)):
        call(b, heads, s, 128, dropouts=(0.0, 0.1), warm=5, reps=20)


def grid():
    for s in (1024, 2048, 4096, 8192, 16384):
        for heads in (4, 8, 16, 32, 64, 128):
            if heads * s <= 128 * 16384:
                call(1, heads, s, 128)


def gqa():
    for s in (4096, 8192):
        call(1, 32, s, 128, kv=8, tag="gqa")
        call(1, 32, s, 128, tag="gqa")
    for heads in (4, 8, 16, 32, 64, 128):
        call(1, heads, 2048, 64, tag="hd64")


if __name__ == "__main__":
    modes = {"dropout": dropout, "grid": grid, "gqa": gqa}
    if len(sys.argv) != 2 or sys.argv[1] not in modes:
        sys.exit(__doc__)
    modes[sys.argv[1]]()
