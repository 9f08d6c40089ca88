/* wl_model.c - parameters, FLOPs and bytes of the model kinds (docs/workloads.md has the
 * formulas with their sources).
 *
 * Accounting follows Megatron-LM (Narayanan et al. 2021): a GEMM of an (m x k) by (k x n)
 * matrix costs 2mkn FLOPs; backward costs twice the forward; biases and norms are left out of
 * the FLOPs (they are memory bound and costed as bytes). With h hidden, f = 4h, no GQA and no
 * MoE this reproduces 96·B·s·l·h²·(1 + s/6h + V/16lh) with full recomputation.
 */
#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "dtsim/sim.h"
#include "dtsim/workload.h"

/* Entries of Transformer Engine's amax history per fp8 tensor: DelayedScaling's default
 * amax_history_len (transformer_engine/common/recipe.py, TE 1.x) and NeMo's fp8_amax_history_len */
#define TE_FP8_AMAX_HISTORY 1024

double wl_expert_ffn(const wl_model *m) { return m->expert_ffn > 0 ? m->expert_ffn : m->ffn; }

bool wl_layer_is_moe(const wl_model *m, int layer)
{
    int k = m->moe_layer_freq > 1 ? m->moe_layer_freq : 1;
    return m->experts > 1 && layer % k == 0;
}

double wl_head_dim(const wl_model *m)
{
    return m->head_dim > 0 ? m->head_dim : m->hidden / m->heads;
}

double wl_q_width(const wl_model *m) { return m->heads * wl_head_dim(m); }

double wl_kv_width(const wl_model *m) { return m->kv_heads * wl_head_dim(m); }

/* Q (h x a d), K and V (h x g d each), output projection (a d x h); with d = h / a:
 * 2h^2 + 2h (h g / a) */
static double attn_params(const wl_model *m)
{
    double h = m->hidden;
    return 2 * h * wl_q_width(m) + 2 * h * wl_kv_width(m);
}

static double mlp_params(const wl_model *m, double f)
{
    return (m->mlp == WL_MLP_SWIGLU ? 3.0 : 2.0) * m->hidden * f;
}

/* Weights a token passes through in one layer (MoE: only its top_k experts and the shared
 * ones), or all of them. */
static double layer_matmul_params(const wl_model *m, bool moe, bool active_only)
{
    if (!moe) return attn_params(m) + mlp_params(m, m->ffn);
    double experts = active_only ? m->top_k : m->experts;
    return attn_params(m) + mlp_params(m, wl_expert_ffn(m)) * (experts + m->shared_experts) +
           m->hidden * m->experts; /* router */
}

double wl_norm_params(const wl_model *m)
{
    if (m->kind != WL_TRANSFORMER) return 0;
    return (m->norm == WL_NORM_RMSNORM ? 1 : 2) * m->hidden;
}

double wl_tp_rank_params(const wl_model *m, double params, double layers, int tp)
{
    /* Megatron splits every linear over the TP ranks but keeps the norms whole on each
     * (docs/workloads.md, "Parameters": TELayerNormColumnParallelLinear's layer_norm_weight,
     * the standalone norms' weights); biases are not in the count at all */
    double whole = layers * 2 * wl_norm_params(m);
    return (params - whole) / tp + whole;
}

double wl_layer_params(const wl_model *m)
{
    switch (m->kind) {
    case WL_TRANSFORMER: /* + 2 norms */
        return layer_matmul_params(m, m->experts > 1, false) + 2 * wl_norm_params(m);
    default: return m->params / m->layers;
    }
}

double wl_layer_params_at(const wl_model *m, int layer)
{
    if (m->kind != WL_TRANSFORMER) return m->params / m->layers;
    return layer_matmul_params(m, wl_layer_is_moe(m, layer), false) + 2 * wl_norm_params(m);
}

double wl_layer_expert_params_at(const wl_model *m, int layer)
{
    if (m->kind != WL_TRANSFORMER || !wl_layer_is_moe(m, layer)) return 0;
    return mlp_params(m, wl_expert_ffn(m)) * m->experts;
}

int wl_moe_layers_in(const wl_model *m, int first, int n)
{
    int k = 0;
    for (int i = first; i < first + n; i++) k += wl_layer_is_moe(m, i);
    return k;
}

double wl_layers_params(const wl_model *m, int first, int n)
{
    if (m->kind != WL_TRANSFORMER) return n * wl_layer_params(m);
    int moe = wl_moe_layers_in(m, first, n);
    double norms = 2 * wl_norm_params(m);
    return moe * (layer_matmul_params(m, true, false) + norms) +
           (n - moe) * (layer_matmul_params(m, false, false) + norms);
}

double wl_layers_expert_params(const wl_model *m, int first, int n)
{
    if (m->kind != WL_TRANSFORMER || m->experts < 2) return 0;
    return wl_moe_layers_in(m, first, n) * mlp_params(m, wl_expert_ffn(m)) * m->experts;
}

double wl_embedding_params(const wl_model *m)
{
    return m->kind == WL_TRANSFORMER ? m->vocab * m->hidden : 0;
}

double wl_total_params(const wl_model *m)
{
    if (m->kind != WL_TRANSFORMER) return m->params;
    return wl_layers_params(m, 0, m->layers) +
           wl_embedding_params(m) * (m->tied_embeddings ? 1 : 2) + wl_norm_params(m);
}

void wl_moe_rank_loads(const wl_model *m, int ep, int layer, uint64_t seed, double *loads)
{
    int E = (int)m->experts;
    if (ep < 1) ep = 1;
    if (E < 2 || E % ep) {
        for (int e = 0; e < ep; e++) loads[e] = 1;
        return;
    }
    /* Share of routed tokens of the expert at Zipf rank i: i^-s / H(E, s); s = 0: 1/E. */
    double *w = dt_xmalloc((size_t)E * sizeof *w);
    size_t *order = dt_xmalloc((size_t)E * sizeof *order);
    double H = 0;
    for (int i = 0; i < E; i++) H += w[i] = pow(i + 1.0, -m->router_zipf);
    for (int i = 0; i < E; i++) order[i] = (size_t)i;
    if (m->router_zipf > 0) {
        /* which expert is the popular one: a seeded shuffle per layer, so that layers differ
         * and a layer's draw does not depend on which other layers were drawn */
        char name[48];
        snprintf(name, sizeof name, "moe_router.%d", layer);
        sim_rng *r = sim_rng_create(seed, name);
        gsl_ran_shuffle(sim_rng_gsl(r), order, (size_t)E, sizeof *order);
        sim_rng_destroy(r);
    }
    int per = E / ep;
    for (int e = 0; e < ep; e++) {
        double sum = 0;
        for (int j = 0; j < per; j++) {
            double x = w[order[e * per + j]] / H * E; /* tokens of the expert / balanced share */
            if (m->capacity_factor > 0 && x > m->capacity_factor) x = m->capacity_factor;
            sum += x;
        }
        loads[e] = sum / per;
    }
    free(w);
    free(order);
}

double wl_moe_max_load(const wl_model *m, int ep)
{
    if (m->kind != WL_TRANSFORMER || m->experts < 2 || ep < 2) return 1;
    double worst = 0, *loads = dt_xmalloc((size_t)ep * sizeof *loads);
    for (int l = 0; l < m->layers; l++) {
        if (!wl_layer_is_moe(m, l)) continue;
        wl_moe_rank_loads(m, ep, l, m->router_seed, loads);
        for (int e = 0; e < ep; e++) worst = fmax(worst, loads[e]);
    }
    free(loads);
    return worst > 0 ? worst : 1;
}

double wl_moe_alltoall_bytes(const wl_model *m, const wl_plan *p)
{
    return p->micro_batch_size * m->seq_len / wl_cp(p) * m->hidden *
           wl_precision_bytes(p->precision) * m->top_k;
}

double wl_cp_ring_bytes(const wl_model *m, const wl_plan *p)
{
    return 2 * p->micro_batch_size * m->seq_len / wl_cp(p) * wl_kv_width(m) *
           wl_precision_bytes(p->precision) / p->tp;
}

/* The hidden sizes Megatron-LM's MixedFusedLayerNorm (2022, megatron/model/fused_layer_norm.py)
 * runs with apex's persistent FastLayerNorm kernels; others take apex's FusedLayerNorm */
static bool apex_persistent_ln(double h)
{
    static const double sizes[] = {1024,  1536,  2048,  2304,  3072,  3840,  4096,  5120,
                                   6144,  8192,  10240, 12288, 12800, 15360, 16384, 18432,
                                   20480, 24576, 25600, 30720, 32768, 40960, 49152, 65536};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (h == sizes[i]) return true;
    return false;
}

/* Transformer Engine's FP8 casts around one GEMM of a layer (TE 1.x, DelayedScaling, as
 * Megatron-Core runs it: docs/workloads.md, "FP8 casts and transposes"), bytes per token of the
 * microbatch on this GPU, forward or backward; e the 16-bit activation size, fp8 elements of 1
 * byte. k is the GEMM's input width on this GPU and n its output width on this GPU (a column-
 * parallel GEMM: k = h whole, n split over t; a row-parallel one: k split, n = h). sp is TE's
 * sequence_parallel (t > 1 and sequence parallelism).
 *   forward, the input (module/linear.py, _Linear.forward): without sp fp8_cast_transpose_fused
 *     (read e, write the cast and its transpose: e + 2 per element); with sp cast_to_fp8 only
 *     (e + 1), on the sequence shard for a column-parallel GEMM (its input is all-gathered in
 *     fp8 afterwards). A LayerNormLinear's input is written in fp8 by the norm itself
 *     (layernorm_fwd_fp8): nothing here, the norm's own count takes 1 byte for its output.
 *   backward, the output gradient (module/base.py, grad_output_preprocess): column-parallel,
 *     fp8_cast_transpose_fused (or _bgrad_fused with a bias: the same bytes) over the whole
 *     sequence, e + 2; row-parallel with sp, cast_to_fp8 on the shard (e + 1, 1/t of the
 *     tokens), all-gathered in fp8, then fp8_transpose of the gathered tensor (read 1, write 1);
 *     row-parallel without sp, e + 2.
 *   backward, the input's transpose for the weight gradient: a LayerNormLinear always
 *     transposes its saved fp8 norm output (layernorm_linear.py, tex.fp8_transpose of
 *     ln_out_total: the gathered sequence under sp), 2 per element; a Linear only under sp
 *     (its forward cast had no transpose), 2 per element of the gathered input. */
static double te_gemm_cast_bytes(double e, double t, bool sp, bool column, bool ln_fused, double k,
                                 double n, bool bwd)
{
    if (!bwd) {
        if (ln_fused) return 0;
        if (!sp) return (e + 2) * k;
        return (e + 1) * k / (column ? t : 1);
    }
    double grad = column || !sp ? (e + 2) * n : (e + 1) * n / t + 2 * n;
    double xt = ln_fused || sp ? 2 * k : 0;
    return grad + xt;
}

/* The FP8 casts of one layer per token (te_gemm_cast_bytes for its four GEMMs: QKV and MLP up
 * column-parallel, the attention projection and MLP down row-parallel), and under the megatron
 * preset the two norms' fp8 outputs: Megatron-Core builds QKV and linear_fc1 as TE
 * LayerNormLinear (TELayerNormColumnParallelLinear, return_layernorm_output=False), whose norm
 * writes its output in fp8 (1 byte where the 16-bit count charges e), outside the TP regions
 * (whole on every rank without sequence parallelism). Other presets run te.Linear on every
 * GEMM (a separate norm in 16 bits). e, q, qkv and f are the widths layer_elem_bytes derives
 * (e the activation's bytes per element, q and qkv the attention's query and QKV widths, f the
 * MLP activation's), passed in so that both counts read the same operands. */
static double fp8_cast_bytes(const wl_model *m, const wl_plan *p, double e, double q, double qkv,
                             double f, bool bwd)
{
    double h = m->hidden, t = p->tp;
    double up = (m->mlp == WL_MLP_SWIGLU ? 2 : 1) * f;
    bool sp = t > 1 && p->sequence_parallel, fused = p->fw.preset == WL_FW_MEGATRON;
    double c = te_gemm_cast_bytes(e, t, sp, true, fused, h, qkv / t, bwd) +
               te_gemm_cast_bytes(e, t, sp, false, false, q / t, h, bwd) +
               te_gemm_cast_bytes(e, t, sp, true, fused, h, up / t, bwd) +
               te_gemm_cast_bytes(e, t, sp, false, false, f / t, h, bwd);
    if (fused && !bwd) c -= 2 * (e - 1) * h / (t > 1 && !p->sequence_parallel ? 1 : t);
    return c;
}

/* Elementwise HBM traffic of one transformer layer per token of the microbatch (s already
 * s/cp), on one GPU, forward or backward: the norms, the activation function, the hidden
 * dropouts with their residual adds, the residual stream's gradient sums, the bias-gradient
 * reductions and the layout copies outside the attention core, kernel by kernel as the
 * preset's framework runs them (docs/workloads.md, "Elementwise traffic of a layer", has the
 * table and the sources). f is the activation's width per token (the MLP's, or an MoE
 * layer's top_k + shared experts'). Regions outside the TP GEMMs (norms, dropout-add) are
 * split over t with sequence parallelism and whole on every TP rank without it; the rest is
 * split over t. Two properties of the model that no scenario field states are read from what
 * the suite's models ran: linear biases with a GeLU MLP (Megatron's add_bias_linear and
 * llm-foundry's no_bias defaults; the GPT and MPT runs), none with SwiGLU (the Llama family,
 * --disable-bias-linear); hidden dropout where the attention dropout is on (Megatron's 0.1
 * defaults for both; the MPT and Llama recipes set both to 0). */
static double layer_elem_bytes(const wl_model *m, const wl_plan *p, double f, bool bwd)
{
    double e = wl_precision_bytes(p->precision), h = m->hidden, t = p->tp;
    double q = wl_q_width(m), qkv = q + 2 * wl_kv_width(m);
    bool glu = m->mlp == WL_MLP_SWIGLU, bias = !glu, dr = !m->no_attention_dropout;
    bool unfused = m->attention == WL_ATTN_UNFUSED;
    double seq = 0, tpr = 0; /* per token: outside the TP regions, inside them */
    if (p->fw.preset == WL_FW_GENERIC) {
        /* Korthikanti et al. 2022's 34·s·b·h stored activation bytes (e = 2) read as traffic,
         * written once and read once (34·e·h per token, backward twice that): 10 of them
         * outside the TP regions, 24 inside */
        seq = 10 * e * h, tpr = 24 * e * h;
        if (bwd) seq *= 2, tpr *= 2;
    } else if (p->fw.preset == WL_FW_MEGATRON) {
        /* fp16 runs are Megatron-LM of 2022 (Korthikanti's cases: megatron/model/transformer.py,
         * megatron/mpu/layers.py); bf16 and fp8 runs Megatron-Core v0.7 with Transformer Engine
         * (TELayerNormColumnParallelLinear, cuDNN attention) */
        bool legacy = !wl_megatron_core(p);
        /* layernorm: read x, write y (fp32 mean and rstd per token); backward read dy and x,
         * write dx, gamma and beta partials in the same pass (TE's and apex's persistent
         * kernels), or a second pass re-reading dy and x (apex's FusedLayerNorm) */
        double ln_b = legacy && !apex_persistent_ln(h) ? 5 : 3;
        /* bias-dropout-add (jit-fused): read x and the residual, write the sum and a 1-byte
         * mask; backward the dropout's (read the gradient and the mask, write) and the bias
         * gradient's reduction over the tokens (read); without dropout a plain add */
        double bda_f = 3 * e * h + (dr ? h : 0);
        double bda_b = (dr ? 2 * e * h + h : 0) + (bias ? e * h : 0);
        if (!bwd) {
            seq = 2 * (2 * e * h) + 2 * bda_f;
            /* bias-GeLU (read, write) or bias-SwiGLU (read 2f, write f) */
            tpr = glu ? 3 * e * f : 2 * e * f;
            if (legacy && bias) tpr += 2 * e * qkv; /* QKV GEMM then `output + bias` */
            if (legacy && unfused) tpr += 2 * e * q; /* context permute(...).contiguous() */
        } else {
            /* two layernorm backwards, two residual-stream gradient sums (read 2, write 1) */
            seq = 2 * ln_b * e * h + 2 * 3 * e * h + 2 * bda_b;
            /* bias_gelu_back (read g and x, write) and the fc1 bias reduction; SwiGLU: read g
             * and the 2f input, write 2f */
            tpr = glu ? 5 * e * f + (bias ? 2 * e * f : 0) : 3 * e * f + (bias ? e * f : 0);
            if (legacy && bias) tpr += e * qkv;    /* QKV grad_bias = grad_output.sum(0) */
            if (legacy && unfused) tpr += 2 * e * qkv + 2 * e * q; /* split's cat, permute */
        }
    } else {
        /* fsdp: llm-foundry's MPT block in eager PyTorch under bf16 autocast (LPLayerNorm in the
         * autocast dtype, nn.Dropout, residual adds, MPTMLP or MPTGLU) */
        if (!bwd) {
            /* F.layer_norm (read, write) twice; x + dropout(b) twice: the add (read 2, write 1)
             * and, with dropout, native_dropout (read, write, 1-byte mask) */
            seq = 2 * (2 * e * h) + 2 * 3 * e * h + (dr ? 2 * (2 * e * h + h) : 0);
            /* GeLU (read, write); SwiGLU: silu (read, write) and the product (read 2, write 1) */
            tpr = glu ? 5 * e * f : 2 * e * f;
        } else {
            /* layer_norm backward: the input gradient (read dy and x, write) and the
             * gamma/beta kernel re-reading dy and x; two residual-stream sums; the dropout
             * backwards (read, mask, write); the biases' sum_to_size reductions of the
             * out_proj and down_proj gradients */
            seq = 2 * 5 * e * h + 2 * 3 * e * h + (dr ? 2 * (2 * e * h + h) : 0) +
                  (bias ? 2 * e * h : 0);
            /* gelu_backward (read g and x, write); SwiGLU: the product's two gradients (read 2,
             * write 1 each) and silu's backward (read 2, write 1); the Wqkv and up_proj bias
             * reductions */
            tpr = glu ? 9 * e * f : 3 * e * f;
            if (bias) tpr += e * qkv + (glu ? 2 : 1) * e * f;
        }
    }
    bool split = t > 1 && !p->sequence_parallel;
    double fp8 = p->precision == WL_FP8 ? fp8_cast_bytes(m, p, e, q, qkv, f, bwd) : 0;
    return (split ? seq : seq / t) + tpr / t + fp8;
}

void wl_layer_cost_get(const wl_model *m, const wl_plan *p, wl_layer_cost *out)
{
    double b = p->micro_batch_size, t = p->tp;
    if (m->kind != WL_TRANSFORMER) {
        *out = (wl_layer_cost){.fwd_matmul_flops = m->flops_per_layer / t};
        return;
    }
    /* Context parallelism: this GPU holds s/cp of the sequence - its share of every
     * token-wise term - and computes its queries against all s keys: 1/cp of the attention
     * (Megatron's load-balanced causal split gives every CP rank the same share). */
    double cp = wl_cp(p);
    double s = m->seq_len / cp, h = m->hidden;
    bool moe = m->experts > 1;
    out->fwd_matmul_flops = 2 * b * s * layer_matmul_params(m, moe, true) / t;
    out->dense_matmul_flops = 2 * b * s * layer_matmul_params(m, false, true) / t;
    out->expert_matmul_flops = moe ? 2 * b * s * mlp_params(m, wl_expert_ffn(m)) * m->top_k / t : 0;
    out->moe_matmul_flops = moe ? out->fwd_matmul_flops - out->expert_matmul_flops : 0;
    /* QK^T and attention x V over the a heads of width d: 4 b s^2 a d (= 4 b s^2 h without a
     * head_dim of its own; the model FLOPs count them whole) */
    double attn = 4 * b * s * m->seq_len * wl_q_width(m) / t;
    double e = wl_precision_bytes(p->precision);
    if (m->attention == WL_ATTN_FLASH) {
        /* FlashAttention runs both GEMMs tile by tile in SRAM: with a causal mask the tiles
         * above the diagonal are skipped (half the work); its backward recomputes the scores
         * and runs 5 GEMMs to the forward's 2 (2.5x, Dao 2023). No score matrix in HBM. */
        out->fwd_attn_flops = attn * (m->non_causal ? 1 : 0.5);
        out->bwd_attn_flops = 2.5 * out->fwd_attn_flops;
        out->fwd_score_bytes = out->bwd_score_bytes = 0;
        out->fwd_score_gemm_bytes = out->bwd_score_gemm_bytes = 0;
    } else {
        /* Unfused (Megatron's core attention): two batched GEMMs over the whole score matrix
         * (masked, not skipped), backward twice the forward; and per element of the
         * b (a/t) s^2 scores, HBM traffic of e-byte values (1-byte dropout mask):
         *   forward: QK^T writes S (e); scale-mask-softmax reads S, writes P (2e); dropout
         *            reads P, writes D and the mask (2e + 1); PV reads D (e)      = 6e + 1
         *   backward: dD = dO V^T writes (e); dropout backward reads dD and the mask, writes
         *            dP (2e + 1); softmax backward reads dP and P, writes dS (3e); dQ and dK
         *            read dS (2e); dV = D^T dO reads D (e)                        = 9e + 1
         * without dropout: forward 4e (softmax output read by PV), backward 7e. */
        out->fwd_attn_flops = attn;
        out->bwd_attn_flops = 2 * attn;
        double scores = b * m->heads / t * s * m->seq_len;
        bool dr = !m->no_attention_dropout;
        out->fwd_score_bytes = scores * (dr ? 6 * e + 1 : 4 * e);
        out->bwd_score_bytes = scores * (dr ? 9 * e + 1 : 7 * e);
        out->fwd_score_gemm_bytes = scores * 2 * e;
        out->bwd_score_gemm_bytes = scores * 4 * e;
    }
    /* norms, activation, dropout, residuals: kernel by kernel per framework (layer_elem_bytes) */
    double fe = moe ? (m->top_k + m->shared_experts) * wl_expert_ffn(m) : m->ffn;
    out->fwd_elem_bytes = layer_elem_bytes(m, p, fe, false) * b * s;
    out->bwd_elem_bytes = layer_elem_bytes(m, p, fe, true) * b * s;
    out->dense_fwd_elem_bytes = layer_elem_bytes(m, p, m->ffn, false) * b * s;
    out->dense_bwd_elem_bytes = layer_elem_bytes(m, p, m->ffn, true) * b * s;
    out->tp_bytes = b * s * h * wl_precision_bytes(p->precision);
    out->fp8_weight_bytes = out->dense_fp8_weight_bytes = 0;
    /* the linear weights of a layer on this GPU, whose GEMMs run in Transformer Engine's (or
     * Megatron's) linear modules: attention and MLP, an MoE layer's local routed experts and
     * its shared ones; Megatron's router is a torch parameter, not one of them */
    double ex = moe ? m->experts / wl_ep(p) + m->shared_experts : 1;
    double wm = attn_params(m) + mlp_params(m, moe ? wl_expert_ffn(m) : m->ffn) * ex;
    double wd = attn_params(m) + mlp_params(m, m->ffn);
    /* without gradient-accumulation fusion, every microbatch's backward of the layer: the DDP
     * hook's main_grad.add_ over each of those weights (wl_wgrad_hook_bytes) */
    double hook = wl_wgrad_hook_bytes(p);
    out->wgrad_hook_bytes = hook * wm / t;
    out->dense_wgrad_hook_bytes = hook * wd / t;
    if (p->precision == WL_FP8) {
        /* Transformer Engine's weight casts: fp8_cast_transpose_fused of each weight (read e,
         * write the fp8 copy and its transpose) on the first microbatch of a step only
         * (Megatron-Core passes is_first_microbatch; later microbatches reuse the cache);
         * Megatron's router is a torch parameter, not a TE module. And the DelayedScaling
         * update after each forward and backward of the fp8 region (every microbatch): one
         * fused kernel reads and writes the amax history of every fp8 tensor (3 per GEMM
         * forward: input, weight, output; 2 backward: the gradients), 4-byte entries, and writes
         * its scale and inverse (TE_FP8_AMAX_HISTORY entries: TE's and NeMo's default) */
        out->fp8_weight_bytes = (e + 2) * wm / t;
        out->dense_fp8_weight_bytes = (e + 2) * wd / t;
        double slot = 2 * 4 * TE_FP8_AMAX_HISTORY + 2 * 4;
        out->fwd_elem_bytes += 3 * 2 * (1 + ex) * slot;
        out->bwd_elem_bytes += 2 * 2 * (1 + ex) * slot;
        out->dense_fwd_elem_bytes += 3 * 4 * slot;
        out->dense_bwd_elem_bytes += 2 * 4 * slot;
    }
}

int wl_attention_gemms(const wl_model *m, const wl_plan *p, gpu_gemm out[WL_ATTN_GEMMS])
{
    if (m->kind != WL_TRANSFORMER || m->attention == WL_ATTN_FLASH) return 0;
    double heads = p->micro_batch_size * m->heads / p->tp; /* one batched call's GEMMs */
    double sq = m->seq_len / wl_cp(p), sk = m->seq_len, d = wl_head_dim(m);
    out[0] = (gpu_gemm){sq, sk, d, heads, heads, false}; /* S = Q·Kᵀ per head */
    out[1] = (gpu_gemm){sq, d, sk, heads, heads, false}; /* O = P·V per head */
    return WL_ATTN_GEMMS;
}

/* Megatron's tensor-parallel layer (Shoeybi et al. 2019): the QKV and first MLP GEMMs are split
 * by output columns (n / t), the attention projection and the second MLP GEMM by input rows
 * (k / t); every GEMM sees all b·s tokens of the microbatch (b·s/cp with context parallelism) (with sequence parallelism they are
 * all-gathered first). Q has a·d columns and K, V g·d each (GQA; d = head_dim, h/a by default); SwiGLU's up and gate
 * projections are one GEMM of 2f columns (Megatron's fused linear_fc1). MoE: the router runs
 * on the b·s/t tokens of the rank's sequence shard (the closed form divides it by t too), and
 * each of the E experts gets b·s·top_k/E tokens (balanced routing) for its two GEMMs. Sums to
 * 2·b·s·P_active/t exactly (layer_matmul_params). */
int wl_layer_gemms(const wl_model *m, const wl_plan *p, gpu_gemm out[WL_LAYER_GEMMS_MAX])
{
    if (m->kind != WL_TRANSFORMER) return 0;
    /* context parallelism: the rank's s/cp tokens (wl_layer_cost_get) */
    double t = p->tp, h = m->hidden, tok = p->micro_batch_size * m->seq_len / wl_cp(p);
    double q = wl_q_width(m), kv = wl_kv_width(m);
    /* the MLP width: an MoE layer's experts (routed and shared) have expert_ffn */
    double f = m->experts > 1 ? wl_expert_ffn(m) : m->ffn;
    double up = (m->mlp == WL_MLP_SWIGLU ? 2.0 : 1.0) * f / t;
    int n = 0;
    out[n++] = (gpu_gemm){tok, (q + 2 * kv) / t, h, 1, 1, false}; /* QKV */
    out[n++] = (gpu_gemm){tok, h, q / t, 1, 1, false};            /* attention output projection */
    if (m->experts > 1) out[n++] = (gpu_gemm){tok / t, m->experts, h, 1, 1, false}; /* router */
    /* the MLP of each expert (one without MoE) on its share of the routed tokens; a
     * fractional expert count (allowed by the scenario, meaningless as a count) runs as one
     * GEMM over all routed tokens */
    double e = m->experts > 1 ? m->experts : 1;
    double ne = e == floor(e) ? e : 1;
    double per = tok * m->top_k / ne;
    if (per > 0) {
        out[n++] = (gpu_gemm){per, up, h, ne, 1, false};         /* MLP up (and gate) */
        out[n++] = (gpu_gemm){per, h, f / t, ne, 1, false}; /* MLP down */
    }
    if (m->experts > 1 && m->shared_experts > 0) {
        /* shared experts see every token (counted as top_k + shared in the closed form) */
        out[n++] = (gpu_gemm){tok, up, h, m->shared_experts, 1, false};
        out[n++] = (gpu_gemm){tok, h, f / t, m->shared_experts, 1, false};
    }
    return n;
}

/* One weight matrix of R x C elements (R output features: PyTorch's Linear weight is
 * out x in), `count` of them: compressed or sent as it is. */
static void lowrank_matrix(const wl_plan *p, double R, double C, double count, wl_lowrank *o,
                           gpu_gemm *g, int *ng)
{
    double q = fmin(p->lowrank_rank, fmin(R, C));
    double rate = p->lowrank_min_rate > 0 ? p->lowrank_min_rate : 2;
    if (!(rate * q * (R + C) < R * C)) {
        /* PyTorch's _should_compress: not worth it, joins the uncompressed all-reduce */
        o->dense_elems += R * C * count;
        return;
    }
    o->matrix_elems += R * C * count;
    o->p_elems += q * R * count;
    o->q_elems += q * C * count;
    o->flops += count * (6 * R * C * q + 2 * R * q * q);
    if (g) {
        g[(*ng)++] = (gpu_gemm){R, q, C, count, 1, false}; /* P = M Q */
        g[(*ng)++] = (gpu_gemm){R, q, q, count, 1, false}; /* Gram-Schmidt of P: 2 R q² FLOPs */
        g[(*ng)++] = (gpu_gemm){C, q, R, count, 1, false}; /* Q = Mᵀ P */
        g[(*ng)++] = (gpu_gemm){R, C, q, count, 1, false}; /* the approximation P Qᵀ */
    }
}

int wl_lowrank_get(const wl_model *m, const wl_plan *p, bool embedding, wl_lowrank *out,
                   gpu_gemm gemms[WL_LOWRANK_GEMMS_MAX])
{
    *out = (wl_lowrank){0};
    int ng = 0;
    if (m->kind != WL_TRANSFORMER) return 0;
    if (embedding) {
        lowrank_matrix(p, m->vocab / p->tp, m->hidden, 1, out, gemms, &ng);
        return ng;
    }
    /* the weights are the forward GEMMs' k x n operands (wl_layer_gemms: (tokens, n, k)) */
    gpu_gemm f[WL_LAYER_GEMMS_MAX];
    int nf = wl_layer_gemms(m, p, f);
    double matrices = 0;
    for (int i = 0; i < nf; i++) {
        lowrank_matrix(p, f[i].n, f[i].k, f[i].count, out, gemms, &ng);
        matrices += f[i].n * f[i].k * f[i].count;
    }
    /* norms (and anything else that is not a GEMM weight) go uncompressed */
    double rest = wl_tp_rank_params(m, wl_layer_params(m), 1, p->tp) - matrices;
    if (rest > 0) out->dense_elems += rest;
    return ng;
}

double wl_topk_union(double G, double r, int n)
{
    /* an index is missed by each of the n sets with probability 1 - r */
    return G * -expm1(n * log1p(-r));
}

gpu_gemm wl_logits_gemm(const wl_model *m, const wl_plan *p)
{
    /* Megatron-Core's output layer is tensor_parallel.ColumnParallelLinear, a torch matmul
     * outside Transformer Engine (whose fp8_autocast the TransformerBlock enters around its
     * layers): forward, data and weight gradient in bf16 under fp8 */
    return (gpu_gemm){p->micro_batch_size * m->seq_len / wl_cp(p), m->vocab / p->tp, m->hidden, 1, 1,
                      true};
}

/* Y = X·W with X (m x k), W (k x n): dX = dY·Wᵀ is (m x n)·(n x k), dW = Xᵀ·dY is (k x m)·(m x n);
 * both run where the forward does (the same module, so the same precision). */
void wl_gemm_backward(gpu_gemm f, gpu_gemm out[2])
{
    out[0] = out[1] = f;
    out[0].n = f.k;
    out[0].k = f.n;
    out[1].m = f.k;
    out[1].n = f.n;
    out[1].k = f.m;
}

/* Forward FLOPs of one sample through the whole model. */
static double fwd_flops_per_sample(const wl_model *m, double *attn_part, double *logits_part)
{
    if (m->kind == WL_SYNTHETIC) {
        *attn_part = *logits_part = 0;
        return m->layers * m->flops_per_layer;
    }
    if (m->kind != WL_TRANSFORMER) return *attn_part = *logits_part = 0;
    double s = m->seq_len, h = m->hidden;
    int moe = wl_moe_layers_in(m, 0, m->layers);
    *attn_part = m->layers * 4 * s * s * wl_q_width(m);
    *logits_part = 2 * s * h * m->vocab;
    if (moe == 0 || moe == m->layers) {
        double layer = 2 * s * layer_matmul_params(m, moe > 0, true) + 4 * s * s * wl_q_width(m);
        return m->layers * layer + *logits_part;
    }
    double matmul = moe * layer_matmul_params(m, true, true) +
                    (m->layers - moe) * layer_matmul_params(m, false, true);
    return 2 * s * matmul + *attn_part + *logits_part;
}

double wl_model_flops_per_step(const wl_model *m, double global_batch)
{
    double a, l;
    double f = fwd_flops_per_sample(m, &a, &l);
    /* Synthetic flops_per_layer is per microbatch, not per sample: the caller scales. */
    return 3 * f * global_batch;
}

double wl_hw_flops_per_step(const wl_model *m, const wl_plan *p, double global_batch)
{
    double attn, logits;
    double f = fwd_flops_per_sample(m, &attn, &logits);
    double extra = 0;
    if (p->checkpointing == WL_CKPT_FULL) extra = f - logits; /* layers re-run forward */
    if (p->checkpointing == WL_CKPT_SELECTIVE) extra = attn;  /* attention core re-run */
    return (3 * f + extra) * global_batch;
}
