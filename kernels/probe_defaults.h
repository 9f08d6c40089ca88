/* probe_defaults.h - the compute probe's default GEMM shapes, private to kernels/: shared by
 * cal_probe.c (the library) and kern_probe.cu built alone for a GPU machine without the
 * library's dependencies, so that both measure the same list.
 *
 * One layer of the Megatron README's 1.7B GPT on one GPU (h 2048, f 4h = 8192, MHA, t 1,
 * 4096 tokens per microbatch: 2 sequences of 2048), each GEMM as docs/workloads.md "GEMM
 * shapes" writes it: forward (T, n, k), data gradient (T, k, n), weight gradient (k, n, T);
 * then 8192^3, the shape of the public burst and sustained benchmarks (docs/validation.md, "One
 * large-GEMM efficiency"). Fields: name, m, n, k, layout (cal_probe_layout order: 0 fwd,
 * 1 dgrad, 2 wgrad). */
#ifndef DTSIM_PROBE_DEFAULTS_H
#define DTSIM_PROBE_DEFAULTS_H

#define PROBE_DEFAULT_SHAPES                              \
    {"qkv_fwd", 4096, 6144, 2048, 0},                     \
    {"qkv_dgrad", 4096, 2048, 6144, 1},                   \
    {"qkv_wgrad", 2048, 6144, 4096, 2},                   \
    {"proj_fwd", 4096, 2048, 2048, 0},                    \
    {"proj_dgrad", 4096, 2048, 2048, 1},                  \
    {"proj_wgrad", 2048, 2048, 4096, 2},                  \
    {"mlp_up_fwd", 4096, 8192, 2048, 0},                  \
    {"mlp_up_dgrad", 4096, 2048, 8192, 1},                \
    {"mlp_up_wgrad", 2048, 8192, 4096, 2},                \
    {"mlp_down_fwd", 4096, 2048, 8192, 0},                \
    {"mlp_down_dgrad", 4096, 8192, 2048, 1},              \
    {"mlp_down_wgrad", 8192, 2048, 4096, 2},              \
    {"square_8192", 8192, 8192, 8192, 0}

#define PROBE_DEFAULT_COUNT 13

#endif
