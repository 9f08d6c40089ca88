#!/usr/bin/env python3
"""device-layer.py - one transformer layer's kernels timed with PyTorch on a lent GPU, to set
against dtsim's per-op costs (docs/validation.md, "The H100 measurements of 2026-11-27").

    python3 scripts/device-layer.py > $OUT/layer.json      (device tool; about a minute)

What it times (bf16, CUDA events, median of REPS after WARM; inputs uniform random), beside
the fused attention that scripts/device-attn.py times alone:
  * the output layer: logits GEMM and the fp32 cross-entropy over them, forward and backward;
  * LayerNorm and GELU alone, forward and forward+backward (eager kernels: PyTorch's, not
    Transformer Engine's fused ones, so these bound TE's from above);
  * one GPT layer (pre-LN, no dropout, GELU MLP of 4h) forward and forward+backward, eager.
Everything prints as one JSON document; a part that fails prints its error and the rest goes on.
"""
import json
import sys
import time

import torch
import torch.nn.functional as F

from gpu_timing import event_times, median

WARM, REPS = 5, 20
dev = "cuda"
out = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
       "cudnn": torch.backends.cudnn.version(), "parts": {}}


def timed(fn):
    """median and min of REPS runs of fn, in seconds (scripts/gpu_timing.py)."""
    ts = event_times(fn, WARM, REPS)
    return {"median_s": median(ts), "min_s": ts[0]}


def part(name, f):
    t0 = time.time()
    try:
        out["parts"][name] = f()
    except Exception as e:  # keep going: one backend missing must not lose the rest
        out["parts"][name] = {"error": repr(e)[:400]}
    print(f"{name}: {time.time() - t0:.1f} s", file=sys.stderr, flush=True)


def rnd(*shape, grad=False, dtype=torch.bfloat16):
    return (torch.rand(*shape, device=dev, dtype=dtype) * 2 - 1).requires_grad_(grad)


def output_layer(tokens, h, vocab):
    x = rnd(tokens, h, grad=True)
    w = rnd(vocab, h, grad=True)
    tgt = torch.randint(0, vocab, (tokens,), device=dev)
    res = {"tokens": tokens, "hidden": h, "vocab": vocab, "gemm_flops_fwd": 2 * tokens * h * vocab}
    res["gemm_fwd"] = timed(lambda: x @ w.t())
    logits = (x @ w.t()).detach()
    lf = logits.float().requires_grad_(True)
    res["ce_fp32_fwd"] = timed(lambda: F.cross_entropy(lf, tgt))

    def ce_fb():
        F.cross_entropy(lf, tgt).backward()
    res["ce_fp32_fwd_bwd"] = timed(ce_fb)

    def all_fb():
        F.cross_entropy((x @ w.t()).float(), tgt).backward()
    res["logits_ce_fwd_bwd"] = timed(all_fb)
    return res


def elementwise(tokens, h, f):
    res = {"tokens": tokens, "hidden": h, "ffn": f}
    x = rnd(tokens, h, grad=True)
    ln = torch.nn.LayerNorm(h, device=dev, dtype=torch.bfloat16)
    g = rnd(tokens, h)
    res["layernorm_fwd"] = timed(lambda: ln(x))
    res["layernorm_fwd_bwd"] = timed(lambda: ln(x).backward(g))
    y = rnd(tokens, f, grad=True)
    gy = rnd(tokens, f)
    res["gelu_fwd"] = timed(lambda: F.gelu(y, approximate="tanh"))
    res["gelu_fwd_bwd"] = timed(lambda: F.gelu(y, approximate="tanh").backward(gy))
    res["add_fwd"] = timed(lambda: x + g)
    return res


class Layer(torch.nn.Module):
    def __init__(self, h, heads, f):
        super().__init__()
        self.heads = heads
        self.ln1 = torch.nn.LayerNorm(h)
        self.qkv = torch.nn.Linear(h, 3 * h)
        self.proj = torch.nn.Linear(h, h)
        self.ln2 = torch.nn.LayerNorm(h)
        self.fc1 = torch.nn.Linear(h, f)
        self.fc2 = torch.nn.Linear(f, h)

    def forward(self, x):  # x: [s, b, h] as Megatron keeps it
        s, b, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(s, b, self.heads, 3, h // self.heads).permute(3, 1, 2, 0, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.permute(2, 0, 1, 3).reshape(s, b, h))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


def layer(b, s, h, heads, f):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    m = Layer(h, heads, f).to(dev, torch.bfloat16)
    x = rnd(s, b, h, grad=True)
    g = rnd(s, b, h)
    res = {"b": b, "s": s, "hidden": h, "heads": heads, "ffn": f,
           "gemm_flops_fwd": 2 * b * s * (3 * h * h + h * h + 2 * h * f)}
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION]):
        res["fwd"] = timed(lambda: m(x))
        res["fwd_bwd"] = timed(lambda: m(x).backward(g))
    return res


# M-1.7B: h 2048, 16 heads, s 4096, micro batch 1, vocab 131072; P-H100-7b (MPT-7B): h 4096,
# 32 heads, s 2048
part("output_m17", lambda: output_layer(4096, 2048, 131072))
part("elementwise_m17", lambda: elementwise(4096, 2048, 8192))
part("layer_m17", lambda: layer(1, 4096, 2048, 16, 8192))
part("layer_mpt7", lambda: layer(1, 2048, 4096, 32, 16384))
json.dump(out, sys.stdout, indent=1)
print()
