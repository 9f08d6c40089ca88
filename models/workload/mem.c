/* mem.c - memory per GPU: model states (ZeRO paper) and activations (Korthikanti et al. 2022).
 *
 * Pure arithmetic, no simulation: the planner calls it for every candidate plan. The formulas
 * and their assumptions are in docs/workloads.md.
 */
#include <math.h>
#include <stdlib.h>

#include "dtsim/workload.h"

void mem_model_states(double psi, int dp, int zero, wl_precision prec, wl_optimizer opt,
                      double *params, double *grads, double *optimizer)
{
    double kp, kg, ko;
    if (wl_precision_bytes(prec) == 4) { /* fp32, tf32: no separate master copy */
        kp = 4, kg = 4;
        ko = opt == WL_ADAM ? 8 : 4;    /* Adam m, v / SGD momentum, fp32 */
    } else {
        /* Mixed precision: 16-bit weights and gradients, fp32 master copy in the optimizer. */
        kp = 2, kg = 2;
        ko = opt == WL_ADAM ? 12 : 8;   /* master + m + v / master + momentum */
    }
    *params = kp * psi / (zero >= 3 ? dp : 1);
    *grads = kg * psi / (zero >= 2 ? dp : 1);
    *optimizer = ko * psi / (zero >= 1 ? dp : 1);
}

/* One layer's activations; moe: an MoE layer's (its MLP is top_k + shared experts of width
 * expert_ffn), else a dense layer's. Context parallelism keeps s/cp tokens per GPU. */
static double activation_layer(const wl_model *m, const wl_plan *p, bool moe)
{
    double s = m->seq_len / wl_cp(p), b = p->micro_batch_size, h = m->hidden, f = m->ffn;
    double a = m->heads;
    double t = p->tp;
    double scale = wl_precision_bytes(p->precision) / 2; /* formulas count 16-bit activations */
    if (p->checkpointing == WL_CKPT_FULL)
        return scale * 2 * s * b * h / (p->sequence_parallel ? t : 1);
    double width = m->top_k;
    if (moe) {
        f = wl_expert_ffn(m);
        width = m->top_k + m->shared_experts;
    }
    /* Korthikanti et al.'s count, term by term, so that it holds beyond GPT's shape: the hidden
     * dropout's 1-byte masks (after the attention projection and after the MLP) exist only
     * where the model runs dropout (the attention_dropout switch, which layer_elem_bytes also
     * reads for the hidden dropout: Megatron's defaults put 0.1 on both, the Llama and MPT
     * recipes 0 on both) */
    double mask = m->no_attention_dropout ? 0 : s * b * h;
    /* MLP: its input 2sbh (and the dropout mask), the GEMM outputs it keeps: 4sbf for GELU (its
     * input and output), 6sbf for SwiGLU (gate and up, and their product) */
    double mlp = (2 * s * b * h + mask + (m->mlp == WL_MLP_SWIGLU ? 6 : 4) * s * b * f) * width;
    /* attention: the QKV input 2sbh (h wide), Q and the projection's input 2sb each at the
     * query width a x head_dim, K and V 2sb each at the key/value width g x head_dim (GQA
     * keeps g of a heads: Korthikanti's 4sbh for Q, K and 2sbh for V assume g = a), and the
     * dropout mask; 11sbh for GPT */
    double attn = 2 * s * b * h + 4 * s * b * wl_q_width(m) + 4 * s * b * wl_kv_width(m) + mask;
    double linear = attn + mlp + 4 * s * b * h; /* + the two norms' inputs */
    /* the score matrix kept for the backward: softmax output (2 B), dropout mask (1 B) and
     * output (2 B) per element, 5as^2b; without dropout the softmax output alone, 2as^2b; a
     * flash kernel keeps none (only per-row statistics, O(as b)), nor does selective recompute */
    double scores = p->checkpointing == WL_CKPT_SELECTIVE || m->attention == WL_ATTN_FLASH
                        ? 0
                        : (m->no_attention_dropout ? 2 : 5) * a * s * m->seq_len * b;
    /* without sequence parallelism, whole on every TP rank: the norms' inputs 4sbh, the QKV
     * and first MLP GEMMs' inputs 4sbh, the two dropout masks (10sbh for GPT) */
    double replicated = (t > 1 && !p->sequence_parallel) ? 8 * s * b * h + 2 * mask : 0;
    return scale * (replicated + (linear - replicated) / t + scores / t);
}

double mem_activation_per_layer(const wl_model *m, const wl_plan *p)
{
    if (m->kind == WL_SYNTHETIC) return m->act_bytes_per_layer;
    if (m->kind != WL_TRANSFORMER) return 0;
    return activation_layer(m, p, m->experts > 1);
}

double mem_moe_dispatch_buffers(const wl_model *m, const wl_plan *p)
{
    int ep = wl_ep(p);
    if (m->kind != WL_TRANSFORMER || m->experts < 2 || ep < 2) return 0;
    /* the tokens this GPU sends (b (s/cp) top_k rows of h) and receives: as many times the
     * busiest rank's load over the MoE layers, or the capacity its experts accept */
    double send = wl_moe_alltoall_bytes(m, p);
    double worst = m->capacity_factor > 0 ? m->capacity_factor : fmax(1, wl_moe_max_load(m, ep));
    return send * (1 + worst);
}

double mem_inflight(const wl_plan *p, int stage)
{
    int pp = p->pp, m = wl_max_replica_microbatches(p), v = p->virtual_stages;
    if (pp == 1) return 1; /* gradient accumulation: forward then backward, one at a time */
    switch (p->schedule) {
    case WL_GPIPE: return m;
    case WL_1F1B: return fmin(pp - stage, m);
    case WL_INTERLEAVED: {
        /* Megatron's warmup chunk forwards (wl_pipeline_warmup), plus the one in the steady
         * phase, each 1/v of the stage's layers. */
        double chunks = fmin(wl_pipeline_warmup(p, stage, m) + 1.0, (double)m * v);
        return chunks / v;
    }
    }
    return m;
}

/* The gradients one layer's reduction takes on this GPU (FSDP's unit): its TP shard; with
 * expert parallelism the dense part, and the routed experts it holds (1/ep of them) only where
 * their expert-data-parallel group has more than one rank (otherwise nothing reduces them:
 * their gradients are the gradient state itself). */
static double unit_grads(const wl_model *m, const wl_plan *p)
{
    int ep = wl_ep(p);
    bool moe = m->kind == WL_TRANSFORMER && m->experts > 1;
    if (!moe || ep < 2) return wl_tp_rank_params(m, wl_layer_params(m), 1, p->tp);
    double ex = wl_layer_expert_params_at(m, 0);
    bool edp = p->dp / ep * wl_cp(p) > 1;
    return wl_tp_rank_params(m, wl_layer_params(m) - ex, 1, p->tp) + (edp ? ex / ep / p->tp : 0);
}

double mem_fsdp_buffers(const wl_model *m, const wl_plan *p, int stage)
{
    if (p->fw.preset != WL_FW_FSDP || m->kind != WL_TRANSFORMER || p->zero < 1 ||
        p->dp * wl_cp(p) < 2)
        return 0;
    double e = wl_precision_bytes(p->precision);
    double c = p->fw.reduce_bytes > 0 && p->fw.reduce_bytes != e ? p->fw.reduce_bytes : 0;
    double u = unit_grads(m, p);
    /* _post_backward_hook (torch 2.1-2.3 _runtime_utils.py): the unsharded flat gradient that
     * autograd built on the compute stream is record_stream'd onto the post-backward stream,
     * and its cast to reduce_dtype is the reduce-scatter's input, which ProcessGroupNCCL
     * record_stream's onto its own stream: both stay allocated until the reduce-scatter and the
     * passes queued behind it are done. One communicator runs FSDP's gathers and reductions in
     * the order issued, and the next unit's prefetched gather comes after this unit's
     * reduce-scatter, so at most one reduction is in flight while the next unit's backward
     * runs: that unit holds its parameters' gradients, then (SplitWithSizesBackward's cat)
     * the flat gradient beside them, 2e, and after its hook the flat gradient and its copy,
     * e + c. */
    double b = (e + c) * u + fmax(2 * e, e + c) * u;
    if (p->zero >= 3) {
        /* the root unit (the embeddings, outside the wrapped blocks) is not resharded after
         * the forward (_post_forward_reshard: not for the root), and the output layer's weight
         * gradient, computed first in the backward, waits in autograd until the embedding's
         * backward completes the root's flat gradient at the end */
        double emb = wl_embedding_params(m) / p->tp;
        int pp = p->pp;
        int here = (stage == 0) + (stage == pp - 1 && (pp > 1 || !m->tied_embeddings));
        b += here * emb * e;
        if (stage == pp - 1) b += emb * e + wl_norm_params(m) * e; /* + the final norm, whole */
    }
    return b;
}

void mem_compute(const wl_model *m, const wl_plan *p, mem_breakdown *out)
{
    *out = (mem_breakdown){0};
    out->peak = -1;
    int pp = p->pp, ep = wl_ep(p), cp = wl_cp(p);
    bool moe = m->kind == WL_TRANSFORMER && m->experts > 1;
    /* one layer on one GPU: its linears / tp, its two norms whole on every TP rank */
    double layer_psi = wl_tp_rank_params(m, wl_layer_params(m), 1, p->tp);
    double emb = wl_embedding_params(m) / p->tp;
    double act_layer = mem_activation_per_layer(m, p);
    double act_dense = moe ? activation_layer(m, p, false) : act_layer;
    /* dense weights are replicated over dp x cp ranks (ZeRO shards over them); routed experts
     * over the expert-data-parallel group, dp/ep x cp ranks */
    int dense_dp = p->dp * cp, expert_dp = p->dp / ep * cp;
    for (int st = 0; st < pp; st++) {
        /* the stage's own layers (uneven stages: plan.stage_layers) */
        double layers_per_stage = m->kind == WL_PARAMS ? (double)m->layers / pp
                                                        : wl_stage_layer_count(p, m->layers, st);
        double psi = layers_per_stage * layer_psi, psi_expert = 0, moe_layers = 0;
        if (moe) {
            /* layer by layer: dense and MoE layers differ (moe_layer_freq), experts / ep */
            psi = 0;
            for (int c = 0; c < p->virtual_stages; c++) {
                int first, n;
                wl_virtual_stage_layers(p, m->layers, c * pp + st, &first, &n);
                psi += wl_tp_rank_params(m, wl_layers_params(m, first, n) -
                                                wl_layers_expert_params(m, first, n), n, p->tp);
                psi_expert += wl_layers_expert_params(m, first, n) / ep / p->tp;
                moe_layers += wl_moe_layers_in(m, first, n);
            }
        }
        if (m->kind == WL_PARAMS) psi = m->params / p->tp / pp;
        if (st == 0) psi += emb;
        if (st == pp - 1 && (pp > 1 || !m->tied_embeddings)) psi += emb;
        /* the final norm after the last layer, whole on every TP rank of the last stage
         * (Megatron's final_layernorm is not split over TP), sharded by ZeRO with the rest */
        if (st == pp - 1) psi += wl_norm_params(m);
        mem_breakdown b = {.stage = st, .inflight_microbatches = mem_inflight(p, st)};
        mem_model_states(psi, dense_dp, p->zero, p->precision, p->optimizer, &b.params, &b.grads,
                         &b.optimizer);
        if (psi_expert > 0) {
            double xp, xg, xo;
            mem_model_states(psi_expert, expert_dp, p->zero, p->precision, p->optimizer, &xp,
                             &xg, &xo);
            b.params += xp;
            b.grads += xg;
            b.optimizer += xo;
        }
        if (p->fw.preset == WL_FW_MEGATRON && p->fw.reduce_bytes > wl_precision_bytes(p->precision))
            /* Megatron accumulates gradients in a main_grad buffer of the reduction's dtype
             * (fp32 under bf16): the Megatron-LM README ("Distributed Optimizer") counts
             * 18 bytes per parameter for bf16 parameters with fp32 gradients (6 + 12/d with the
             * distributed optimizer), 2 more than mixed precision's 16 */
            b.grads *= p->fw.reduce_bytes / wl_precision_bytes(p->precision);
        if (m->kind != WL_PARAMS) {
            if (moe)
                b.activations = b.inflight_microbatches *
                                (moe_layers * act_layer + (layers_per_stage - moe_layers) * act_dense);
            else
                b.activations = b.inflight_microbatches * layers_per_stage * act_layer;
            if (p->checkpointing == WL_CKPT_FULL && m->kind == WL_TRANSFORMER) {
                /* The layer being recomputed holds its full activations for a moment. */
                wl_plan full = *p;
                full.checkpointing = WL_CKPT_NONE;
                b.buffers += mem_activation_per_layer(m, &full);
            }
        }
        if (p->dp > 1 && (p->lowrank_rank > 0 || p->topk_ps || p->quant_bits > 0 ||
                          p->compression_ratio > 0)) {
            /* error feedback: every compression method here keeps what it did not send for the
             * next step, one more gradient-sized buffer (PyTorch's powerSGD_hook error_dict,
             * DGC's and Ok-Topk's top-k residual, 1-bit Adam's worker error), and PowerSGD keeps
             * every matrix's P and Q for the next step's warm start (p_memory_dict,
             * q_memory_dict) */
            double pb = wl_precision_bytes(p->precision);
            b.buffers += psi * pb;
            if (p->lowrank_rank > 0) {
                wl_lowrank lr, le;
                wl_lowrank_get(m, p, false, &lr, NULL);
                wl_lowrank_get(m, p, true, &le, NULL);
                int embs = (st == 0) + (st == pp - 1 && (pp > 1 || !m->tied_embeddings));
                b.buffers += (layers_per_stage * (lr.p_elems + lr.q_elems) +
                              embs * (le.p_elems + le.q_elems)) * pb;
            }
        }
        if (m->kind == WL_TRANSFORMER && st == pp - 1)
            /* fp32 logits of one microbatch for the softmax / cross-entropy */
            b.buffers += 4 * (m->seq_len / cp) * p->micro_batch_size * m->vocab / p->tp;
        if (moe && ep > 1) b.buffers += mem_moe_dispatch_buffers(m, p);
        b.buffers += mem_fsdp_buffers(m, p, st);
        if (p->zero >= 3 && p->dp > 1 && m->kind != WL_PARAMS) {
            /* ZeRO-3 gathers a layer's full parameters (current + prefetched next); with
             * expert parallelism only this GPU's 1/ep of the routed experts */
            b.buffers += 2 * (layer_psi - (moe && ep > 1 ? wl_layer_expert_params_at(m, 0) *
                                                               (1 - 1.0 / ep) / p->tp : 0)) *
                         wl_precision_bytes(p->precision);
            /* and the root (embedding, output layer, final norm), gathered before the first
             * layer and kept through the backward (docs/workloads.md, "ZeRO-3's root"); the
             * fsdp preset counts it in mem_fsdp_buffers with its gradient */
            if (p->fw.preset != WL_FW_FSDP && m->kind == WL_TRANSFORMER) {
                int embs = (st == 0) + (st == pp - 1 && (pp > 1 || !m->tied_embeddings));
                b.buffers += (embs * emb + (st == pp - 1 ? wl_norm_params(m) : 0)) *
                             wl_precision_bytes(p->precision);
            }
        }
        b.peak = b.params + b.grads + b.optimizer + b.activations + b.buffers;
        if (b.peak > out->peak) *out = b;
    }
}
