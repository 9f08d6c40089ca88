/* gpu.h - what a GPU is to the simulator: peak rates, memory, efficiencies, and the roofline
 * that turns an op's FLOPs and bytes into time.
 *
 * Specs come from a preset (A100-SXM, A100-SXM-40GB, H100-SXM, H200-SXM, B200: datasheet dense
 * peaks, SM counts) or
 * inline JSON, optionally a preset with overrides: {"preset": "H100-SXM", "hbm": "94 GB"}.
 * Owned by value (plain data, no pointers): copy freely.
 */
#ifndef DTSIM_GPU_H
#define DTSIM_GPU_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "dtsim/json.h"
#include "dtsim/simtime.h"

typedef enum gpu_precision {
    GPU_FP32,
    GPU_TF32,
    GPU_FP16,
    GPU_BF16,
    GPU_FP8,
    GPU_PRECISION_COUNT
} gpu_precision;

/* Classes of work with their own achieved fraction of peak. */
typedef enum gpu_op_class {
    GPU_OP_MATMUL,      /* GEMMs: linear layers */
    GPU_OP_ATTENTION,   /* fused attention kernels */
    GPU_OP_ELEMENTWISE, /* norms, activations, dropout: usually memory bound */
    GPU_OP_OPTIMIZER,   /* optimizer step: memory bound */
    GPU_OP_ATTENTION_BWD, /* fused (flash) attention backward kernels: their own, lower fraction
                             of peak than the forward's (FlashAttention-2/3 papers) */
    GPU_OP_CLASS_COUNT
} gpu_op_class;

/* The fused attention kernel a flash model runs (model.flash_kernel): FlashAttention-2
 * (flash-attn, the same sm80 code on A100 and H100) or cuDNN's fused attention (Transformer
 * Engine's default on Hopper). Presets carry a measured throughput curve per kernel. */
typedef enum gpu_attn_kernel { GPU_ATTN_FA2, GPU_ATTN_CUDNN, GPU_ATTN_KERNEL_COUNT } gpu_attn_kernel;

#define GPU_NAME_MAX 32
#define GPU_TABLE_MAX 32 /* measured points per op class */

/* A measured compute table for one op class (docs/formats.md "GPU specs and presets", key
 * "compute"): points of work (FLOPs, or bytes when by_bytes) and the time an op of that size
 * took. Fixed arrays so gpu_spec stays plain data. n == 0: no table, the roofline applies. */
typedef struct gpu_table {
    int n;                        /* 0..GPU_TABLE_MAX */
    bool by_bytes;                /* points keyed by bytes moved instead of FLOPs */
    int precision;                /* gpu_precision the table holds for, -1 = every precision */
    double work[GPU_TABLE_MAX];   /* FLOPs or bytes, strictly increasing, > 0 */
    double time[GPU_TABLE_MAX];   /* s, > 0 */
} gpu_table;

typedef struct gpu_spec {
    char name[GPU_NAME_MAX];
    double peak_flops[GPU_PRECISION_COUNT]; /* dense FLOP/s; 0 = precision unsupported */
    double hbm_bytes;                       /* memory capacity, B */
    double hbm_bw;                          /* B/s */
    double nvlink_bw;                       /* per direction, B/s */
    double compute_eff[GPU_OP_CLASS_COUNT]; /* achieved fraction of peak FLOP/s, (0,1] */
    double memory_eff;                      /* achieved fraction of hbm_bw, (0,1] */
    double reduce_bw;                       /* B/s a reduction kernel consumes input at */
    double cost_per_hour;                   /* USD per GPU-hour, 0 if unknown */
    int sms;                                /* streaming multiprocessors (GEMM wave quantization);
                                               0 = unknown: GEMMs at the flat matmul efficiency */
    int gemm_tile[2];                       /* output tile of one thread block, long and short
                                               side (both orientations and the short side
                                               squared are tried): 256, 128 */
    gpu_table table[GPU_OP_CLASS_COUNT];    /* measured compute tables (n 0: roofline) */
    int attn_curves;                        /* 1 + index of the preset whose measured flash
                                               attention curves apply (gpu_attention_eff);
                                               0 = none: the attention classes' efficiencies */
} gpu_spec;

/* NULL-terminated list of preset names. */
const char *const *gpu_preset_names(void);
/* Copy the named preset into *out; DT_EINPUT (with a did-you-mean) if unknown. */
int gpu_preset(const char *name, gpu_spec *out, dt_error *err);
/* A spec from JSON at path: a preset name string, or an object (keys documented in
 * docs/formats.md). */
int gpu_spec_from_json(const js_ctx *ctx, const cJSON *v, const char *path, gpu_spec *out);
/* Write spec as a JSON object (units as strings). Caller owns the result. */
cJSON *gpu_spec_to_json(const gpu_spec *spec);

/* The "compute" object at path ({"matmul": [points] or {"precision": .., "points": [..]}, ..})
 * into tables[] (one per op class; classes not named are left as they are). */
int gpu_tables_from_json(const js_ctx *ctx, const cJSON *v, const char *path,
                         gpu_table tables[GPU_OP_CLASS_COUNT]);
/* The tables with n > 0 as a "compute" object, NULL if none. Caller owns the result. */
cJSON *gpu_tables_to_json(const gpu_table tables[GPU_OP_CLASS_COUNT]);
/* Time of one op of `work` FLOPs (or bytes) by a table with n > 0: the achieved rate
 * work/time is interpolated linearly in log(work) between the points (exact at them) and held
 * at the end points' rates outside their range. Seconds. */
double gpu_table_time(const gpu_table *tab, double work);
const char *gpu_op_class_name(gpu_op_class c);
const char *gpu_attn_kernel_name(gpu_attn_kernel k);
/* NULL-terminated names of the attention kernels ("fa2", "cudnn"). */
const char *const *gpu_attn_kernel_names(void);

/* The head dimension a flash op without one of its own is timed at (a trace cost written before
 * costs carried it): 128, the one every measured curve has. */
#define GPU_ATTN_HEAD_DIM 128

/* Achieved fraction of the 16-bit peak of fused attention kernel k at key/query length seq
 * (tokens one kernel call sees) and head dimension head_dim (<= 0: GPU_ATTN_HEAD_DIM), forward
 * or backward, causal or not, FLOPs counted as the kernel executes them (a causal call: half the
 * score matrix). From the spec's measured curves (spec->attn_curves, docs/workloads.md
 * "Attention kernels"): linear in log2(seq) between the measured lengths and in log2(head_dim)
 * between the measured head dims, held at the end points outside them. Without curves, or
 * seq <= 0: compute_eff[GPU_OP_ATTENTION] (forward) or [GPU_OP_ATTENTION_BWD] (backward). */
double gpu_attention_eff(const gpu_spec *spec, gpu_attn_kernel k, double seq, double head_dim,
                         bool causal, bool bwd);

/* Time of fused attention kernel k with attention dropout over its time without it, forward or
 * backward (>= 1): the slowdown measured with the curve's kernel on an H100 (docs/workloads.md,
 * "Attention dropout inside a fused kernel"). 1 where the spec has no measured curve for k: the
 * attention classes' efficiencies of a user's spec are what that GPU achieves as it runs. */
double gpu_attention_dropout_factor(const gpu_spec *spec, gpu_attn_kernel k, bool bwd);

/* Efficiency of fused attention kernel k on one call of `rows` (sequence, head) pairs (micro
 * batch x heads on the GPU) at length seq and head dimension head_dim, over its efficiency on
 * the call its measured curve was benchmarked with (docs/workloads.md, "Attention calls smaller
 * than the benchmark's"): the call's tiles of GPU_ATTN_TILE queries (keys, backward) as units of
 * work over the spec's SMs, finished in their mean load per SM plus one longest unit (the list
 * scheduling bound), g = W / (W + L); a causal call's units are 1 .. n tiles long, a full one's
 * n. 1 where the spec has no measured curve for k or rows <= 0. */
double gpu_attention_call_factor(const gpu_spec *spec, gpu_attn_kernel k, double seq,
                                 double head_dim, double rows, bool causal);
/* Rows (queries) of one unit of fused-attention work in gpu_attention_call_factor. */
#define GPU_ATTN_TILE 128

const char *gpu_precision_name(gpu_precision p);
int gpu_precision_parse(const char *s, gpu_precision *out);

/* Roofline: max(flops / (peak[prec] * eff[cls]), bytes / (hbm_bw * memory_eff)), rounded up to
 * whole picoseconds. A precision the GPU lacks (peak 0) falls back to the next wider one.
 * A class with a measured table (table[cls].n > 0, for this precision or every one) takes its
 * time from gpu_table_time() of the op's FLOPs (bytes for a by_bytes table) instead; an op
 * with none of that quantity keeps the roofline. */
sim_time_t gpu_op_time(const gpu_spec *spec, gpu_op_class cls, gpu_precision prec,
                       double flops, double bytes);

/* ------------------------------------------------------------- GEMM shapes ---- */

/* One GEMM shape run `count` times: C (m x n) = A (m x k) . B (k x n), 2·m·n·k FLOPs each.
 * Dimensions are positive (fractional only where an average is meant, e.g. tokens per expert);
 * count is a whole number, held as a double so that layers x experts cannot overflow it.
 * batch > 1: the count GEMMs are launched `batch` at a time as one strided-batched call
 * (cublasGemmStridedBatched: torch.bmm/baddbmm, the unfused attention core), whose tiles fill
 * the waves together; count is a multiple of it. 0 or 1: one GEMM per launch.
 * no_fp8: the GEMM stays in 16 bits when the run's precision is fp8 (bf16's peak, 2-byte
 * operands): one outside the framework's fp8 region, Megatron-Core's output layer (logits). */
typedef struct gpu_gemm {
    double m, n, k;
    double count;
    double batch;
    bool no_fp8;
} gpu_gemm;

/* The default output tile one thread block computes (NVIDIA, "Matrix Multiplication Background
 * User's Guide": 256x128, one thread block per SM, so a wave is `sms` tiles); both orientations
 * and the square of the short side are tried (cuBLAS has 256x128, 128x256 and 128x128 kernels
 * and picks per shape). docs/workloads.md, "GEMM shapes". */
#define GPU_GEMM_TILE_LONG 256
#define GPU_GEMM_TILE_SHORT 128

/* Fraction of the SMs' time a GEMM with an m x n output spends on useful output, in (0, 1]:
 * m·n / (waves · sms · Tm·Tn), tiles = ceil(m/Tm)·ceil(n/Tn), waves = ceil(tiles / sms), for
 * the better of the two orientations of spec->gemm_tile (tile and wave quantization). 1 when
 * spec->sms <= 0. */
double gpu_gemm_quantization(const gpu_spec *spec, double m, double n);
/* The same for one batched launch of `batch` m x n outputs (batch <= 1: one): their tiles share
 * the waves, tiles = batch·ceil(m/Tm)·ceil(n/Tn), useful m·n·batch of waves·sms·Tm·Tn. */
double gpu_gemm_quantization_batched(const gpu_spec *spec, double m, double n, double batch);

/* Time of the GEMMs gemms[0..n) on spec, rounded up to whole picoseconds once for the sum:
 * each shape count x max(2mnk / (peak[prec] x efficiency[matmul] x quantization of its batch),
 * e·(mk + kn + mn) / (hbm_bw x memory_eff)) with e the bytes of an element at the precision
 * run (the fallback of gpu_op_time for a precision the GPU lacks); a no_fp8 GEMM under
 * GPU_FP8 runs at GPU_BF16 (its peak, e = 2, its tables). A matmul compute table
 * that applies (gpu_op_time's rule) replaces the formula: each GEMM is looked up with its own
 * FLOPs (bytes for a by_bytes table), which already hold its shape's quantization. */
sim_time_t gpu_gemm_time(const gpu_spec *spec, gpu_precision prec, const gpu_gemm *gemms, int n);

#endif
