/* wl_schedule.c - one training step as an op graph: pipeline schedules (GPipe, 1F1B,
 * interleaved 1F1B), tensor-parallel collectives inside layers, pipeline sends, data-parallel
 * and ZeRO collectives, the optimizer step.
 *
 * Size: one lane per tensor-parallel group, and one compute op per (model chunk, microbatch,
 * direction) except where per-layer detail changes the timing - ZeRO-3 gathers before every
 * layer, and gradient buckets that fire during the last microbatch's backward (or every
 * microbatch's with ZeRO-2/3). GPT-3 175B on 1,024 GPUs (tp 8, pp 8, dp 16, v 3, m 96) is about
 * 150k ops; a per-GPU per-layer graph would be ~60x larger.
 *
 * Cross-lane dependencies (a stage waits for its neighbour's send) may point forward in op
 * order: the neighbour's ops do not exist yet when a lane is generated, so their deps are
 * reserved and patched once every lane is built.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dtsim/workload.h"

/* ---------------------------------------------------------------- graph ---- */

wl_graph *wl_graph_create(int n_gpus, int n_lanes, int lane_size)
{
    wl_graph *g = dt_xcalloc(1, sizeof *g);
    g->n_gpus = n_gpus;
    g->n_lanes = n_lanes;
    g->lane_size = lane_size;
    g->lane_gpus = dt_xcalloc((size_t)n_lanes * lane_size, sizeof *g->lane_gpus);
    g->precision = GPU_BF16;
    return g;
}

void wl_graph_destroy(wl_graph *g)
{
    if (!g) return;
    for (uint32_t i = 0; i < g->n_names; i++) free(g->names[i]);
    free(g->names);
    free(g->name_slots);
    free(g->lane_gpus);
    free(g->ops);
    free(g->deps);
    free(g->costs);
    free(g->gemms);
    free(g->gemm_sets);
    free(g->colls);
    free(g->cp_next);
    free(g);
}

#define GROW(arr, n, cap)                                                                   \
    do {                                                                                    \
        if ((n) >= (cap)) {                                                                 \
            (cap) = (cap) ? (cap) * 2 : 64;                                                 \
            (arr) = dt_xrealloc((arr), (size_t)(cap) * sizeof *(arr));                      \
        }                                                                                   \
    } while (0)

static uint32_t name_hash(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* Interning by a linear scan made a trace of k distinct names cost O(k^2) to load (65k names:
 * 6 s); an open-addressing index kept at most half full makes it O(1) per name. */
uint32_t wl_graph_name(wl_graph *g, const char *name)
{
    if (2 * (g->n_names + 1) > g->cap_name_slots) {
        uint32_t cap = g->cap_name_slots ? 2 * g->cap_name_slots : 64;
        free(g->name_slots);
        g->name_slots = dt_xcalloc(cap, sizeof *g->name_slots);
        g->cap_name_slots = cap;
        for (uint32_t i = 0; i < g->n_names; i++) {
            uint32_t k = name_hash(g->names[i]) & (cap - 1);
            while (g->name_slots[k]) k = (k + 1) & (cap - 1);
            g->name_slots[k] = i + 1;
        }
    }
    uint32_t mask = g->cap_name_slots - 1, k = name_hash(name) & mask;
    for (; g->name_slots[k]; k = (k + 1) & mask)
        if (!strcmp(g->names[g->name_slots[k] - 1], name)) return g->name_slots[k] - 1;
    GROW(g->names, g->n_names, g->cap_names);
    g->names[g->n_names] = dt_xstrdup(name);
    g->name_slots[k] = g->n_names + 1;
    return g->n_names++;
}

uint32_t wl_graph_cost(wl_graph *g, const wl_cost *c)
{
    GROW(g->costs, g->n_costs, g->cap_costs);
    g->costs[g->n_costs] = *c;
    return g->n_costs++;
}

uint32_t wl_graph_gemm_set(wl_graph *g, const gpu_gemm *gemms, uint32_t n)
{
    while (g->n_gemms + n > g->cap_gemms) {
        g->cap_gemms = g->cap_gemms ? 2 * g->cap_gemms : 64;
        g->gemms = dt_xrealloc(g->gemms, (size_t)g->cap_gemms * sizeof *g->gemms);
    }
    if (n) memcpy(g->gemms + g->n_gemms, gemms, n * sizeof *gemms);
    GROW(g->gemm_sets, g->n_gemm_sets, g->cap_gemm_sets);
    g->gemm_sets[g->n_gemm_sets] = (wl_gemm_set){g->n_gemms, n};
    g->n_gemms += n;
    return ++g->n_gemm_sets;
}

const gpu_gemm *wl_cost_gemms(const wl_graph *g, const wl_cost *c, uint32_t *n)
{
    if (c->gemm_set == 0 || c->gemm_set > g->n_gemm_sets) {
        *n = 0;
        return NULL;
    }
    const wl_gemm_set *s = &g->gemm_sets[c->gemm_set - 1];
    *n = s->n;
    return g->gemms + s->start;
}

static const char *const comm_kind_names[WL_COMM_KIND_COUNT] = {"tp", "pp", "dp", "zero",
                                                                 "ep", "cp"};
static const char *const comm_kind_labels[WL_COMM_KIND_COUNT] = {
    "tensor parallel", "pipeline", "data parallel", "ZeRO parameter gathers",
    "expert all-to-all", "context parallel ring"};

const char *wl_comm_kind_name(wl_comm_kind k)
{
    return (unsigned)k < WL_COMM_KIND_COUNT ? comm_kind_names[k] : "?";
}

const char *wl_comm_kind_label(wl_comm_kind k)
{
    return (unsigned)k < WL_COMM_KIND_COUNT ? comm_kind_labels[k] : "?";
}

const char *wl_comm_kind_abbrev(wl_comm_kind k)
{
    static const char *const abbrev[WL_COMM_KIND_COUNT] = {"TP", "PP", "DP", "ZeRO", "EP", "CP"};
    return (unsigned)k < WL_COMM_KIND_COUNT ? abbrev[k] : "?";
}

int wl_comm_kind_parse(const char *s, wl_comm_kind *out)
{
    for (int k = 0; k < WL_COMM_KIND_COUNT; k++)
        if (!strcmp(s, comm_kind_names[k])) {
            *out = (wl_comm_kind)k;
            return DT_OK;
        }
    return DT_EINPUT;
}

uint32_t wl_graph_coll_kind(wl_graph *g, coll_op op, double bytes, wl_comm_kind kind)
{
    GROW(g->colls, g->n_colls, g->cap_colls);
    g->colls[g->n_colls] = (wl_coll){.op = op, .bytes = bytes, .kind = (uint8_t)kind};
    return g->n_colls++;
}

uint32_t wl_graph_coll(wl_graph *g, coll_op op, double bytes)
{
    return wl_graph_coll_kind(g, op, bytes, WL_COMM_DP);
}

uint32_t wl_graph_op(wl_graph *g, const wl_op *op, const uint32_t *deps, uint32_t n_deps)
{
    GROW(g->ops, g->n_ops, g->cap_ops);
    while (g->n_deps + n_deps > g->cap_deps) {
        g->cap_deps = g->cap_deps ? g->cap_deps * 2 : 256;
        g->deps = dt_xrealloc(g->deps, (size_t)g->cap_deps * sizeof *g->deps);
    }
    wl_op o = *op;
    o.dep_start = g->n_deps;
    o.n_deps = n_deps;
    if (n_deps) memcpy(g->deps + g->n_deps, deps, n_deps * sizeof *deps);
    g->n_deps += n_deps;
    g->ops[g->n_ops] = o;
    return g->n_ops++;
}

/* ------------------------------------------------------------- generator ---- */

#define NONE UINT32_MAX

typedef struct cost_slot { int key, n; uint32_t id; } cost_slot;

#define N_OP_NAMES 34 /* room for the op names below (N_COUNT_ALL) */

/* Collective instances of groups of lanes: ids[key] lists a group's instances in issue order. */
typedef struct gtab { uint32_t **ids; size_t *n, *cap; size_t n_keys; } gtab;

static void gtab_init(gtab *t, size_t n_keys)
{
    t->n_keys = n_keys;
    t->ids = dt_xcalloc(n_keys, sizeof *t->ids);
    t->n = dt_xcalloc(n_keys, sizeof *t->n);
    t->cap = dt_xcalloc(n_keys, sizeof *t->cap);
}

static void gtab_free(gtab *t)
{
    for (size_t i = 0; i < t->n_keys; i++) free(t->ids[i]);
    free(t->ids);
    free(t->n);
    free(t->cap);
}

typedef struct lr_slot {
    double layers, embs;
    uint32_t cost;
} lr_slot;

typedef struct gen {
    const wl_scenario *s;
    const wl_plan *p;
    wl_graph *g;
    int pp, v, m, dp, tp;              /* m: the current lane's replica's microbatches */
    int mstride;                       /* the most microbatches of any replica (send tables) */
    const int *vs_layers;              /* layers of each virtual stage (plan.stage_layers) */
    int *vs_first;                     /* its first layer */
    wl_layer_cost lc;
    gpu_gemm layer_gemms[WL_LAYER_GEMMS_MAX]; /* forward GEMMs of one layer (count 1) */
    int n_layer_gemms;
    double layer_grad_bytes;           /* gradient bytes of one layer on one GPU */
    double layer_param_bytes;
    double emb_grad_bytes;
    double norm_bytes;                 /* the final norm's parameters (last virtual stage) */
    /* PowerSGD of one layer's and of the embedding's gradient (wl_lowrank_get), their GEMMs */
    wl_lowrank lr_layer, lr_emb;
    gpu_gemm lr_layer_gemms[WL_LOWRANK_GEMMS_MAX], lr_emb_gemms[WL_LOWRANK_GEMMS_MAX];
    int n_lr_layer_gemms, n_lr_emb_gemms;
    /* compress-op costs by bucket content (layers, embeddings): buckets repeat a few */
    lr_slot lr_cache[8];
    int n_lr_cache;
    uint32_t *emb_inst;                /* [dp rank]: the tied-embedding all-reduce instance */
    /* layer costs by (bwd, first vs, last vs, layers in the op): few distinct ones */
    cost_slot cost_cache[64];
    int n_cost_cache;
    uint32_t *fsend, *bsend;           /* [lane][chunk*m + mb]: send op into the next/prev vs */
    uint32_t *patch_slot;                /* deps slot to patch, with what it needs */
    int *patch_kind, *patch_lane, *patch_idx;
    size_t n_patch, cap_patch;
    uint32_t **stage_colls;            /* [stage][k]: k-th collective instance of a stage */
    size_t *n_stage_colls, *cap_stage_colls;
    size_t coll_cursor;                /* next instance index while replaying dp > 0 */
    /* dp_rank is the replica: r = d x cp + c over dp x cp (CP ranks are replicas of the
     * weights, reduced together with DP ranks; Megatron's dp-cp group) */
    int dp_rank, stage;
    int cp, ep, reps;                  /* context, expert parallel degrees; dp x cp replicas */
    /* Expert parallelism (moe_split: MoE layers run as pre-op, dispatch all-to-all, expert
     * op, combine all-to-all): instances of the EP groups' all-to-alls and of the expert-DP
     * groups' gradient collectives, each created by the group's first lane and replayed by
     * the others in the same order (tables indexed stage x group). */
    bool moe_split;
    gtab ep_tab, edp_tab;
    size_t ep_cursor, edp_cursor;
    double *loads;                     /* [layer x ep]: tokens of each EP rank / balanced */
    uint32_t *expert_costs;            /* [(layer x ep + e) x 2 + bwd] */
    double a2a_bytes;
    uint32_t names[N_OP_NAMES];
} gen;

enum { N_FWD, N_BWD, N_SEND_ACT, N_SEND_GRAD, N_DP_AR, N_DP_RS, N_DP_AG, N_ZERO_GATHER,
       N_ZERO_RS, N_TOPK, N_TOPK_AG, N_OPT, N_PARAM_AG, N_EMB_AR, N_TOPK_AR, N_QUANT, N_QUANT_AR,
       N_COUNT,
       /* interned only by graphs with expert parallelism (dense graphs keep their names) */
       N_EP_DISPATCH = N_COUNT, N_EP_COMBINE, N_EXPERT_FWD, N_EXPERT_BWD, N_EDP_AR, N_EDP_RS,
       N_EDP_AG, N_COUNT_EP,
       /* interned only by graphs with top-k through a parameter server or PowerSGD */
       N_PS_PUSH = N_COUNT_EP, N_PS_PULL, N_LR_COMPRESS, N_LR_AR_DENSE, N_LR_AR_P, N_LR_AR_Q,
       N_COUNT_LR,
       /* interned only by graphs whose buckets run Megatron-Core's NaN check and scaling */
       N_GRAD_PASSES = N_COUNT_LR,
       /* interned only by fsdp graphs: the last reduction's post-backward passes */
       N_FSDP_PRE, N_FSDP_POST, N_COUNT_ALL };
_Static_assert(N_COUNT_ALL <= N_OP_NAMES, "gen.names holds every op name");
static const char *const op_names[N_COUNT_ALL] = {
    "forward", "backward", "send_activation", "send_gradient", "dp_allreduce",
    "dp_reduce_scatter", "dp_allgather", "zero3_param_gather", "zero_grad_reduce_scatter",
    "topk_compress", "topk_allgather", "optimizer_step", "zero_param_allgather",
    "embedding_allreduce", "topk_sparse_allreduce", "quantize", "quantized_allreduce", "ep_dispatch", "ep_combine", "expert_forward", "expert_backward",
    "expert_dp_allreduce", "expert_dp_reduce_scatter", "expert_param_allgather",
    "topk_ps_push", "topk_ps_pull", "powersgd_compress", "powersgd_allreduce_uncompressed",
    "powersgd_allreduce_p", "powersgd_allreduce_q", "grad_bucket_passes",
    "fsdp_pre_reduce_passes", "fsdp_post_reduce_passes"};

/* One in-lane collective entry of a cost: `count` times `op` of `bytes`, after the compute or,
 * with under (m > 0), beside one GEMM of that shape each (wl_cost.inlane). */
static void inlane_add(wl_cost *c, coll_op op, double bytes, double count, gpu_gemm under)
{
    if (count <= 0) return;
    DT_ASSERT(c->n_inlane < WL_MAX_INLANE);
    c->inlane[c->n_inlane].op = op;
    c->inlane[c->n_inlane].bytes = bytes;
    c->inlane[c->n_inlane].count = (int)count;
    c->inlane[c->n_inlane].under = under;
    c->n_inlane++;
}

/* The bytes of a sequence-parallel all-gather whose reduce-scatter moves `bytes`: under fp8,
 * Transformer Engine gathers the fp8 tensors, 1 byte an element (LayerNormLinear's input cast
 * before gather_along_first_dim, the row-parallel output gradient cast before its gather in
 * grad_output_preprocess, the saved fp8 input gathered again for the weight gradient; the
 * userbuffers' all-gather buffers are fp8 too, initialize_ub's fp8_buf); its reduce-scatters
 * reduce the GEMMs' 16-bit outputs. */
static double tp_gather_bytes(const wl_plan *p, double bytes)
{
    return p->precision == WL_FP8 ? bytes / wl_precision_bytes(p->precision) : bytes;
}

/* Megatron TP as blocking collectives: 2 all-reduces per layer forward (attention, MLP) and 2 in
 * backward; with sequence parallelism each becomes an all-gather + reduce-scatter pair. A fully
 * recomputed backward repeats the forward's. */
static void tp_blocking(const wl_plan *p, bool bwd, double bytes, double n, wl_cost *c)
{
    double per = n * 2 * (bwd && p->checkpointing == WL_CKPT_FULL ? 2 : 1);
    gpu_gemm none = {0};
    if (p->sequence_parallel) {
        inlane_add(c, COLL_ALLGATHER, tp_gather_bytes(p, bytes), per, none);
        inlane_add(c, COLL_REDUCE_SCATTER, bytes, per, none);
    } else {
        inlane_add(c, COLL_ALLREDUCE, bytes, per, none);
    }
}

/* The backward's TP collectives as Megatron's linear layers issue them (Megatron-LM
 * LinearWithGradAccumulationAndAsyncCommunication.backward; Transformer Engine's Linear and
 * LayerNormLinear backward, "Overlap dgrad-RS/AR with wgrad"). Per layer, the attention half
 * (QKV column-parallel, projection row-parallel) and the MLP half (fc1 column-parallel, fc2
 * row-parallel) each run:
 *  - with sequence parallelism: the all-gather of the row-parallel GEMM's output gradient
 *    (the backward of the forward's reduce-scatter), blocking; the column-parallel GEMM's input
 *    gathered again for its weight gradient, issued before and waited for after the data-gradient
 *    GEMM; the data gradient's reduce-scatter, issued before and waited for after the
 *    weight-gradient GEMM;
 *  - without: the data gradient's all-reduce beside the weight-gradient GEMM (the row-parallel
 *    backward has none: the forward's all-reduce is an identity backward).
 * An MoE layer's MLP half (its experts behind the token dispatcher) keeps the blocking pair. A
 * fully recomputed backward first runs the forward's, blocking. */
static void tp_async_backward(const wl_model *m, const wl_plan *p, int cp, double bytes, double n,
                              int moe, wl_cost *c)
{
    double t = p->tp, h = m->hidden, tok = p->micro_batch_size * m->seq_len / cp;
    double up = (m->mlp == WL_MLP_SWIGLU ? 2.0 : 1.0) * m->ffn / t;
    gpu_gemm qkv = {tok, (wl_q_width(m) + 2 * wl_kv_width(m)) / t, h, 1, 1, false};
    gpu_gemm fc1 = {tok, up, h, 1, 1, false};
    gpu_gemm bq[2], bf[2], none = {0}; /* [0] data gradient, [1] weight gradient */
    wl_gemm_backward(qkv, bq);
    wl_gemm_backward(fc1, bf);
    double dense = n - moe;
    double re = p->checkpointing == WL_CKPT_FULL ? 2 * n : 0; /* the recomputed forward's */
    if (p->sequence_parallel) {
        double ag = tp_gather_bytes(p, bytes);
        inlane_add(c, COLL_ALLGATHER, ag, 2 * n + re, none);
        inlane_add(c, COLL_REDUCE_SCATTER, bytes, moe + re, none);
        inlane_add(c, COLL_ALLGATHER, ag, n, bq[0]);
        inlane_add(c, COLL_REDUCE_SCATTER, bytes, n, bq[1]);
        inlane_add(c, COLL_ALLGATHER, ag, dense, bf[0]);
        inlane_add(c, COLL_REDUCE_SCATTER, bytes, dense, bf[1]);
    } else {
        inlane_add(c, COLL_ALLREDUCE, bytes, moe + re, none);
        inlane_add(c, COLL_ALLREDUCE, bytes, n, bq[1]);
        inlane_add(c, COLL_ALLREDUCE, bytes, dense, bf[1]);
    }
}

/* The cost of one forward or backward op over `layers` layers of a virtual stage, `moe` of
 * them MoE layers, with the layer's work lc (wl_layer_cost_get of the model and plan) and cp the
 * context-parallel degree; with moe_split (expert parallelism) a single MoE layer without its
 * routed experts (they are their own ops). With a graph g, a dense model's GEMM shapes (the
 * layer's forward GEMMs lgs[0..nlg), wl_layer_gemms) go into the op's GEMM set; without one
 * (speed balancing, federated clients: costs timed outside a graph), and for MoE ops that mix
 * dense and MoE layers or split off the routed experts (ep > 1), the matmul FLOPs stay on the
 * flat roofline. */
static void fill_layer_cost(const wl_scenario *s, const wl_plan *p, const wl_layer_cost *lc,
                            int cp, bool moe_split, const gpu_gemm *lgs, int nlg, wl_graph *g,
                            bool bwd, bool first, bool last, int layers, int moe, wl_cost *out)
{
    const wl_model *m = &s->model;
    double n = layers;
    wl_cost c = {0};
    double mult = bwd ? 2 : 1;
    /* the shapes describe whole layers of one kind (wl_layer_gemms): an op mixing dense and MoE
     * layers, or MoE layers without their routed experts (split off under ep), has none */
    if (m->experts > 1 && (moe_split || moe != layers)) nlg = 0;
    if (m->kind == WL_SYNTHETIC) {
        /* saturating (sim_time_add): "forward_time": "5000000 s" must not overflow here; the
         * replay reports a step beyond the clock's range */
        sim_time_t k = (sim_time_t)n, tf = bwd ? m->t_bwd : m->t_fwd;
        c.fixed = tf > 0 && k > SIM_TIME_MAX / tf ? SIM_TIME_MAX : k * tf;
        if (bwd && p->checkpointing == WL_CKPT_FULL)
            c.fixed = sim_time_add(c.fixed, m->t_fwd > 0 && k > SIM_TIME_MAX / m->t_fwd
                                                ? SIM_TIME_MAX : k * m->t_fwd);
    } else {
        /* matmul FLOPs of one forward through the op's layers */
        double fwd_matmul = n * lc->fwd_matmul_flops;
        if (m->experts > 1)
            fwd_matmul = (n - moe) * lc->dense_matmul_flops +
                         moe * (moe_split ? lc->moe_matmul_flops : lc->fwd_matmul_flops);
        c.flops[GPU_OP_MATMUL] = mult * fwd_matmul;
        /* a flash backward runs its own kernels, at their own efficiency; the unfused core's
         * backward is batched GEMMs like its forward. With a graph and layer shapes the unfused
         * core's batched GEMMs are GEMM shapes of the matmul class (cuBLAS strided-batched
         * calls, quantized over their batch, each bounded by the score bytes it reads and
         * writes), and the memory-bound softmax and dropout kernels keep the rest of the score
         * traffic; under fp8 they stay in the attention class (Transformer Engine keeps the core
         * in 16 bits, and a shape set runs at one precision). */
        bool flash = m->attention == WL_ATTN_FLASH;
        gpu_gemm ags[WL_ATTN_GEMMS];
        int nag = g && nlg > 0 && p->precision != WL_FP8 ? wl_attention_gemms(m, p, ags) : 0;
        double core = n * (bwd ? lc->bwd_attn_flops : lc->fwd_attn_flops);
        double recore = bwd && p->checkpointing != WL_CKPT_NONE ? n * lc->fwd_attn_flops : 0;
        if (nag) c.flops[GPU_OP_MATMUL] += core + recore;
        else c.flops[bwd && flash ? GPU_OP_ATTENTION_BWD : GPU_OP_ATTENTION] = core;
        if (flash) {
            c.attn_seq = m->seq_len / cp; /* one call: the whole sequence, or one ring block */
            c.attn_head_dim = wl_head_dim(m);
            c.attn_kernel = m->flash_kernel;
            c.attn_causal = !m->non_causal;
            c.attn_dropout = !m->no_attention_dropout;
            c.attn_rows = p->micro_batch_size * m->heads / p->tp;
        }
        double fsb = lc->fwd_score_bytes - (nag ? lc->fwd_score_gemm_bytes : 0);
        double bsb = lc->bwd_score_bytes - (nag ? lc->bwd_score_gemm_bytes : 0);
        /* the layers' elementwise kernels (wl_layer_cost_get: an MoE layer's and a dense one's) */
        double efwd = (n - moe) * lc->dense_fwd_elem_bytes + moe * lc->fwd_elem_bytes;
        double ebwd = (n - moe) * lc->dense_bwd_elem_bytes + moe * lc->bwd_elem_bytes;
        c.bytes[GPU_OP_ELEMENTWISE] = (bwd ? ebwd : efwd) + n * (bwd ? bsb : fsb);
        /* without gradient-accumulation fusion: the DDP hook adds each linear weight's 16-bit
         * gradient into main_grad after its backward, every microbatch (wl_layer_cost) */
        if (bwd)
            c.bytes[GPU_OP_ELEMENTWISE] +=
                (n - moe) * lc->dense_wgrad_hook_bytes + moe * lc->wgrad_hook_bytes;
        /* fp8: the weights' casts run once per step (wl_layer_cost.fp8_weight_bytes), on the
         * first microbatch's forward in Transformer Engine; a forward op is costed alike for
         * every microbatch, so each carries 1/microbatches of them (the step's total is what TE
         * runs; a recomputed forward reuses the cache) */
        if (!bwd && p->microbatches > 0)
            c.bytes[GPU_OP_ELEMENTWISE] +=
                ((n - moe) * lc->dense_fp8_weight_bytes + moe * lc->fp8_weight_bytes) /
                p->microbatches;
        /* recomputation re-runs the forward (full: whole layers; selective: the attention
         * core, Korthikanti et al. 2022) before the backward */
        if (bwd && p->checkpointing != WL_CKPT_NONE) {
            if (!nag) c.flops[GPU_OP_ATTENTION] += recore;
            c.bytes[GPU_OP_ELEMENTWISE] += n * fsb;
        }
        if (bwd && p->checkpointing == WL_CKPT_FULL) {
            c.flops[GPU_OP_MATMUL] += fwd_matmul;
            c.bytes[GPU_OP_ELEMENTWISE] += efwd;
        }
        /* the layout copies around a flash kernel called through unpad_input/pad_input
         * (llm-foundry's flash_attn_fn), per token of the microbatch; a fully recomputed
         * backward runs the forward's again */
        double toks = p->micro_batch_size * (m->seq_len / cp);
        c.bytes[GPU_OP_ELEMENTWISE] += n * toks * wl_attention_unpad_bytes(m, p, bwd);
        if (bwd && p->checkpointing == WL_CKPT_FULL)
            c.bytes[GPU_OP_ELEMENTWISE] += n * toks * wl_attention_unpad_bytes(m, p, false);
        /* FSDP1's flat gradient: autograd concatenates the gradients of the parameters' views
         * into it, every backward (wl_fsdp_flat_grad_bytes); the routed experts of an MoE
         * layer are 1/ep of them on this GPU */
        double fgb = bwd ? wl_fsdp_flat_grad_bytes(p) : 0;
        if (fgb > 0) {
            double dense = m->experts > 1 ? (m->moe_layer_freq > 1 ? wl_layer_params_at(m, 1) : 0)
                                          : wl_layer_params(m);
            double moep = 0;
            if (m->experts > 1) {
                double ex = wl_layer_expert_params_at(m, 0);
                moep = wl_layer_params_at(m, 0) - ex + ex / wl_ep(p);
            }
            double params = wl_tp_rank_params(m, (n - moe) * dense + moe * moep, n, p->tp);
            if (first || (last && !m->tied_embeddings)) {
                int embs = (first ? 1 : 0) + (last && !m->tied_embeddings ? 1 : 0);
                params += embs * wl_embedding_params(m) / p->tp;
            }
            c.bytes[GPU_OP_ELEMENTWISE] += params * fgb;
        }
        /* the same FLOPs as GEMM shapes: each layer GEMM n times (forward; backward: its data
         * and weight gradients, and the forward again under full recomputation), then the
         * logits */
        gpu_gemm gs[3 * (WL_LAYER_GEMMS_MAX + WL_ATTN_GEMMS) + 2];
        uint32_t ng = 0;
        for (int i = 0; g && i < nlg; i++) {
            gpu_gemm f = lgs[i];
            f.count *= layers;
            if (!bwd || p->checkpointing == WL_CKPT_FULL) gs[ng++] = f;
            if (bwd) {
                wl_gemm_backward(f, &gs[ng]);
                ng += 2;
            }
        }
        /* the unfused core's batched GEMMs: forward; backward their gradients (dP = dO·Vᵀ, dV
         * = Pᵀ·dO, dQ = dS·K, dK = dSᵀ·Q: each the same batch), and the forward again under any
         * recomputation (selective recomputes exactly the core) */
        for (int i = 0; i < nag; i++) {
            gpu_gemm f = ags[i];
            f.count *= layers;
            if (!bwd || p->checkpointing != WL_CKPT_NONE) gs[ng++] = f;
            if (bwd) {
                wl_gemm_backward(f, &gs[ng]);
                ng += 2;
            }
        }
        double b = p->micro_batch_size, sq = m->seq_len / cp, h = m->hidden;
        double pb = wl_precision_bytes(p->precision);
        if (first) c.bytes[GPU_OP_ELEMENTWISE] += mult * 2 * b * sq * h * pb; /* embedding */
        /* the embedding's dense weight gradient, every microbatch (wl_embedding_wgrad_bytes) */
        /* tied on this GPU: the op holds the output layer too, or the pipeline has one stage
         * (pp 1), so the first layer's op, split off per layer (FSDP's ZeRO-3 units, Megatron's
         * last-microbatch backward whose gradients are reduced), shares the GPU with it */
        bool tied_here = m->tied_embeddings && (last || p->pp == 1);
        if (first && bwd)
            c.bytes[GPU_OP_ELEMENTWISE] += m->vocab / p->tp * h * wl_embedding_wgrad_bytes(p, tied_here);
        if (last) {
            double logits = b * sq * m->vocab / p->tp; /* elements on this TP rank */
            double lf = mult * 2 * logits * h;
            c.flops[GPU_OP_MATMUL] += lf;
            /* in 16 bits under fp8 where no shapes time them (wl_logits_gemm's no_fp8) */
            if (p->precision == WL_FP8) c.matmul_no_fp8 = lf;
            gpu_gemm lg = wl_logits_gemm(m, p);
            if (!g || nlg == 0) {
                /* no shapes: its FLOPs stay on the flat roofline */
            } else if (bwd) {
                wl_gemm_backward(lg, &gs[ng]);
                ng += 2;
            } else {
                gs[ng++] = lg;
            }
            /* the cross-entropy over the logits: in fp32 (Megatron casts them, autocast does
             * the same), e + 32 bytes forward and 12 + e backward, or flash-attn's fused
             * kernel over the 16-bit logits, e and 2e (wl_cross_entropy_bytes) */
            c.bytes[GPU_OP_ELEMENTWISE] += logits * wl_cross_entropy_bytes(p, bwd);
            /* the output layer's weight (Megatron's ColumnParallelLinear) without
             * gradient-accumulation fusion: the hook's addition into main_grad, unless it is the
             * input embedding's own matrix on this stage (tied, pp 1), whose one hook
             * wl_embedding_wgrad_bytes charges */
            if (bwd && !(m->tied_embeddings && p->pp == 1))
                c.bytes[GPU_OP_ELEMENTWISE] += m->vocab / p->tp * h * wl_wgrad_hook_bytes(p);
        }
        if (ng) {
            /* the shapes replace the total in the time, so they must be the same FLOPs */
            double sum = 0;
            for (uint32_t i = 0; i < ng; i++) sum += 2 * gs[i].m * gs[i].n * gs[i].k * gs[i].count;
            DT_ASSERT(fabs(sum - c.flops[GPU_OP_MATMUL]) <= 1e-9 * c.flops[GPU_OP_MATMUL]);
            c.gemm_set = wl_graph_gemm_set(g, gs, ng);
        }
    }
    if (p->tp > 1) {
        double bytes = lc->tp_bytes;
        if (m->kind == WL_SYNTHETIC) bytes = 0;
        /* Megatron's asynchronous backward; under tp_comm_overlap (which needs sequence
         * parallelism in Megatron) Transformer Engine's userbuffers run the same collectives
         * beside the same GEMMs as its `bulk` method (qkv_dgrad, fc1_dgrad all-gathers;
         * qkv_wgrad, fc1_wgrad reduce-scatters), the output gradients' all-gathers as a ring
         * exchange pooled with the rest (initialize_ub's default methods) */
        bool ub_bulk = p->fw.tp_comm_overlap && p->sequence_parallel;
        if (bwd && m->kind == WL_TRANSFORMER && (ub_bulk || (p->fw.tp_async_backward && !p->fw.tp_comm_overlap)))
            tp_async_backward(m, p, cp, bytes, n, moe, &c);
        else
            tp_blocking(p, bwd, bytes, n, &c);
        c.inlane_overlap = p->fw.tp_comm_overlap;
        /* the forward's two row-parallel reduce-scatters per layer (attention projection and
         * MLP down) run as Transformer Engine's split pipeline; the backward's are bulk-overlapped
         * with the weight-gradient GEMMs, except a fully recomputed forward's */
        if (c.inlane_overlap && p->sequence_parallel)
            c.inlane_drain = (int)n * 2 * (!bwd || p->checkpointing == WL_CKPT_FULL ? 1 : 0);
    }
    if (cp > 1) {
        /* ring attention: each layer passes K and V around the CP ring, cp - 1 steps; the
         * backward also returns their gradients (dK, dV: twice the bytes), and a fully
         * recomputed backward runs the forward's ring again (folded into one pass here) */
        double kv = wl_cp_ring_bytes(m, p);
        c.ring_bytes = !bwd ? kv : (p->checkpointing == WL_CKPT_FULL ? 3 * kv : 2 * kv);
        c.ring_count = (int)n;
    }
    /* the host's dispatch floor (framework.host_*_per_layer; docs/workloads.md, "Host dispatch
     * floor"): every layer of the op on this microbatch, a fully recomputed backward's forwards
     * again (checkpoint() re-runs the layers' forward code); the embedding's and the loss's own
     * host work in the first and last ops is not counted */
    sim_time_t hf = p->fw.host_fwd, hb = p->fw.host_bwd;
    if (hf > 0 || hb > 0) {
        sim_time_t k = (sim_time_t)layers, per = bwd ? hb : hf;
        if (bwd && p->checkpointing == WL_CKPT_FULL) per = sim_time_add(per, hf);
        c.host = per > 0 && k > SIM_TIME_MAX / per ? SIM_TIME_MAX : k * per;
    }
    *out = c;
}

void wl_layer_op_cost_graph(const wl_scenario *s, const wl_plan *p, wl_graph *g, bool bwd,
                            bool first, bool last, int layers, wl_cost *out)
{
    wl_layer_cost lc;
    wl_layer_cost_get(&s->model, p, &lc);
    gpu_gemm lgs[WL_LAYER_GEMMS_MAX];
    int nlg = wl_layer_gemms(&s->model, p, lgs);
    /* every layer whole (routed experts included): the work one GPU does for it */
    int moe = s->model.experts > 1 ? layers : 0;
    fill_layer_cost(s, p, &lc, wl_cp(p), false, lgs, nlg, g, bwd, first, last, layers, moe, out);
}

void wl_layer_op_cost(const wl_scenario *s, const wl_plan *p, bool bwd, bool first, bool last,
                      int layers, wl_cost *out)
{
    wl_layer_op_cost_graph(s, p, NULL, bwd, first, last, layers, out); /* no graph: no shapes */
}

static uint32_t layer_cost_new(gen *G, bool bwd, bool first, bool last, int layers, int moe)
{
    wl_cost c;
    fill_layer_cost(G->s, G->p, &G->lc, G->cp, G->moe_split, G->layer_gemms, G->n_layer_gemms,
                    G->g, bwd, first, last, layers, moe, &c);
    return wl_graph_cost(G->g, &c);
}

/* The routed experts of MoE layer `layer` on EP rank e: the balanced expert FLOPs times the
 * rank's share of the tokens (wl_moe_rank_loads), so the busiest rank sets the layer time at
 * the combine all-to-all. Backward twice, plus the forward again with full recomputation. */
static uint32_t expert_cost(gen *G, int layer, int e, bool bwd)
{
    uint32_t *slot = &G->expert_costs[((size_t)layer * G->ep + e) * 2 + bwd];
    if (*slot != UINT32_MAX) return *slot;
    double f = G->lc.expert_matmul_flops * G->loads[(size_t)layer * G->ep + e];
    wl_cost c = {0};
    c.flops[GPU_OP_MATMUL] = bwd ? (G->p->checkpointing == WL_CKPT_FULL ? 3 : 2) * f : f;
    return *slot = wl_graph_cost(G->g, &c);
}

static uint32_t layer_cost(gen *G, bool bwd, bool first, bool last, int layers, int moe)
{
    int key = (moe * 2 + bwd) * 4 + first * 2 + last;
    for (int i = 0; i < G->n_cost_cache; i++)
        if (G->cost_cache[i].key == key && G->cost_cache[i].n == layers) return G->cost_cache[i].id;
    uint32_t id = layer_cost_new(G, bwd, first, last, layers, moe);
    if (G->n_cost_cache < (int)(sizeof G->cost_cache / sizeof G->cost_cache[0]))
        G->cost_cache[G->n_cost_cache++] = (cost_slot){key, layers, id};
    return id;
}

static uint32_t lane_of(const gen *G, int dp_rank, int stage) { return (uint32_t)(dp_rank * G->pp + stage); }

/* A collective instance for the current lane: new for dp rank 0, shared by the others (every
 * DP replica of a stage issues the same collectives in the same order). */
static uint32_t stage_coll(gen *G, coll_op op, double bytes, wl_comm_kind kind)
{
    int st = G->stage;
    if (G->dp_rank == 0) {
        uint32_t id = wl_graph_coll_kind(G->g, op, bytes, kind);
        if (G->n_stage_colls[st] >= G->cap_stage_colls[st]) {
            G->cap_stage_colls[st] = G->cap_stage_colls[st] ? 2 * G->cap_stage_colls[st] : 64;
            G->stage_colls[st] = dt_xrealloc(G->stage_colls[st],
                                             G->cap_stage_colls[st] * sizeof **G->stage_colls);
        }
        G->stage_colls[st][G->n_stage_colls[st]++] = id;
        return id;
    }
    DT_ASSERT(G->coll_cursor < G->n_stage_colls[st]);
    uint32_t id = G->stage_colls[st][G->coll_cursor++];
    DT_ASSERT(G->g->colls[id].op == op);
    return id;
}

/* A collective instance of a group of lanes (tab, key): created by its first lane (leader),
 * replayed in the same order by the others through their cursor. */
static uint32_t group_coll(gen *G, gtab *t, size_t key, bool leader, size_t *cursor, coll_op op,
                           double bytes, wl_comm_kind kind)
{
    if (leader) {
        uint32_t id = wl_graph_coll_kind(G->g, op, bytes, kind);
        if (t->n[key] >= t->cap[key]) {
            t->cap[key] = t->cap[key] ? 2 * t->cap[key] : 64;
            t->ids[key] = dt_xrealloc(t->ids[key], t->cap[key] * sizeof **t->ids);
        }
        t->ids[key][t->n[key]++] = id;
        return id;
    }
    DT_ASSERT(*cursor < t->n[key]);
    uint32_t id = t->ids[key][(*cursor)++];
    DT_ASSERT(G->g->colls[id].op == op);
    return id;
}

/* Group arithmetic (Megatron-Core, expert tensor parallelism = tp): replica r = d x cp + c;
 * data-parallel rank d = edp x ep + e. The EP group of r: the ep replicas with the same
 * (edp, c) - consecutive DP ranks; the expert-data-parallel group: the dp/ep x cp replicas
 * with the same e, which hold the same experts. */
static int rep_e(const gen *G) { return (G->dp_rank / G->cp) % G->ep; }

static uint32_t ep_coll(gen *G, double bytes)
{
    int d = G->dp_rank / G->cp, c = G->dp_rank % G->cp;
    size_t groups = (size_t)(G->p->dp / G->ep) * G->cp;
    size_t key = (size_t)G->stage * groups + (size_t)(d / G->ep) * G->cp + (size_t)c;
    return group_coll(G, &G->ep_tab, key, d % G->ep == 0, &G->ep_cursor, COLL_ALLTOALL, bytes,
                      WL_COMM_EP);
}

static uint32_t edp_coll(gen *G, coll_op op, double bytes, wl_comm_kind kind)
{
    int d = G->dp_rank / G->cp;
    size_t key = (size_t)G->stage * G->ep + (size_t)rep_e(G);
    return group_coll(G, &G->edp_tab, key, d / G->ep == 0 && G->dp_rank % G->cp == 0,
                      &G->edp_cursor, op, bytes, kind);
}

/* FSDP's memory passes beside a collective (wl_coll.hbm_bytes): the instance is shared by the
 * lanes of its group, which all set the same figure */
static void coll_passes(gen *G, uint32_t inst, double bytes)
{
    if (bytes > 0) G->g->colls[inst].hbm_bytes = bytes;
}

#define PLACEHOLDER (UINT32_MAX - 1)

static uint32_t add_op(gen *G, wl_op_kind kind, wl_stream stream, int name, int mb, int layer,
                       uint32_t arg, double bytes, const uint32_t *deps, uint32_t n_deps)
{
    wl_op o = {.lane = lane_of(G, G->dp_rank, G->stage), .kind = (uint8_t)kind,
               .stream = (uint8_t)stream, .name = (uint16_t)G->names[name], .mb = mb,
               .layer = layer, .arg = arg, .bytes = bytes};
    uint32_t d[8];
    uint32_t n = 0;
    DT_ASSERT(n_deps <= 8);
    for (uint32_t i = 0; i < n_deps; i++)
        if (deps[i] != NONE) d[n++] = deps[i];
    return wl_graph_op(G->g, &o, d, n);
}

/* Remember that deps slot `slot` must become the send op (kind 0 forward, 1 backward) of
 * lane `lane`, entry idx, once all lanes are generated. */
static void add_patch(gen *G, uint32_t slot, int kind, int lane, int idx)
{
    if (G->n_patch >= G->cap_patch) {
        G->cap_patch = G->cap_patch ? G->cap_patch * 2 : 1024;
        G->patch_slot = dt_xrealloc(G->patch_slot, G->cap_patch * sizeof *G->patch_slot);
        G->patch_kind = dt_xrealloc(G->patch_kind, G->cap_patch * sizeof *G->patch_kind);
        G->patch_lane = dt_xrealloc(G->patch_lane, G->cap_patch * sizeof *G->patch_lane);
        G->patch_idx = dt_xrealloc(G->patch_idx, G->cap_patch * sizeof *G->patch_idx);
    }
    G->patch_slot[G->n_patch] = slot;
    G->patch_kind[G->n_patch] = kind;
    G->patch_lane[G->n_patch] = lane;
    G->patch_idx[G->n_patch] = idx;
    G->n_patch++;
}

typedef struct item { int bwd, chunk, mb; } item;

/* The compute-stream order of (direction, chunk, microbatch) on one stage. */
static int schedule_items(const gen *G, int stage, item *out)
{
    int p = G->pp, m = G->m, v = G->v, n = 0;
    if (p == 1) {
        /* Gradient accumulation without a pipeline: forward then backward, one at a time. */
        for (int mb = 0; mb < m; mb++) {
            out[n++] = (item){0, 0, mb};
            out[n++] = (item){1, 0, mb};
        }
        return n;
    }
    if (G->p->schedule == WL_GPIPE) {
        for (int mb = 0; mb < m; mb++) out[n++] = (item){0, 0, mb};
        for (int mb = 0; mb < m; mb++) out[n++] = (item){1, 0, mb};
        return n;
    }
    /* 1F1B and Megatron's interleaved 1F1B (v = 1 reduces to plain 1F1B's order). */
    int total = m * v;
    int warm = wl_pipeline_warmup(G->p, stage, m);
#define FWD_ITEM(k) ((item){0, ((k) / p) % v, ((k) / (p * v)) * p + (k) % p})
#define BWD_ITEM(k) ((item){1, v - 1 - ((k) / p) % v, ((k) / (p * v)) * p + (k) % p})
    for (int k = 0; k < warm; k++) out[n++] = FWD_ITEM(k);
    for (int i = 0; i < total - warm; i++) {
        out[n++] = FWD_ITEM(warm + i);
        out[n++] = BWD_ITEM(i);
    }
    for (int k = total - warm; k < total; k++) out[n++] = BWD_ITEM(k);
#undef FWD_ITEM
#undef BWD_ITEM
    return n;
}

typedef struct lane_state {
    uint32_t last_compute, prev_compute, last_dp;
    double *held;     /* no-overlap buckets waiting for the end of backward */
    bool *held_expert; /* ... of expert gradients (reduced over the expert-DP group) */
    double *held_layers, *held_embs; /* ... their layers and embedding matrices (PowerSGD) */
    double *held_norms;              /* ... and final-norm elements (PowerSGD: sent dense) */
    size_t n_held, cap_held;
    double passes_bytes; /* gradient-buffer bytes charged before the buckets' reductions */
    /* the reduction being added has no compute beside it: the last backward's last bucket, or
     * any bucket held for the end of the backward (FSDP's passes run as time of their own) */
    bool final_reduce;
} lane_state;

/* DP gradient collective (or top-k compression + all-gather) for `grad_bytes` of gradients,
 * after op `after`. */
/* PowerSGD's compute for a bucket of `layers` layers and `embs` embedding matrices: the three
 * products and Gram-Schmidt of every compressed matrix as GEMMs, and the error feedback's
 * passes over the bucket's G elements as memory-bound bytes: add the residual (read 2, write
 * 1), keep a copy of the input (read 1, write 1), the new residual input - P Qᵀ (read 2,
 * write 1): 8 G e bytes, PyTorch's powerSGD_hook. */
static uint32_t lowrank_cost(gen *G, double layers, double embs, double elems)
{
    for (int i = 0; i < G->n_lr_cache; i++)
        if (G->lr_cache[i].layers == layers && G->lr_cache[i].embs == embs)
            return G->lr_cache[i].cost;
    gpu_gemm gs[2 * WL_LOWRANK_GEMMS_MAX];
    int n = 0;
    for (int i = 0; i < G->n_lr_layer_gemms && layers > 0; i++) {
        gs[n] = G->lr_layer_gemms[i];
        gs[n++].count *= layers;
    }
    for (int i = 0; i < G->n_lr_emb_gemms && embs > 0; i++) {
        gs[n] = G->lr_emb_gemms[i];
        gs[n++].count *= embs;
    }
    wl_cost c = {0};
    c.flops[GPU_OP_MATMUL] = layers * G->lr_layer.flops + embs * G->lr_emb.flops;
    c.bytes[GPU_OP_ELEMENTWISE] = 8 * elems * wl_precision_bytes(G->p->precision);
    if (n > 0) c.gemm_set = wl_graph_gemm_set(G->g, gs, (uint32_t)n);
    uint32_t id = wl_graph_cost(G->g, &c);
    if (G->n_lr_cache < (int)(sizeof G->lr_cache / sizeof G->lr_cache[0]))
        G->lr_cache[G->n_lr_cache++] = (lr_slot){layers, embs, id};
    return id;
}

/* FSDP's post-backward stream around a reduction of `elems` gradient elements over d ranks,
 * op `inst` on the DP stream after `after`. Beside the backward its passes are the
 * collective's hbm_bytes (the compute time-shares the GPU with them, replay_passes_phi). With
 * nothing beside them (L->final_reduce: the optimizer waits for this stream,
 * _post_backward_final_callback) they are time on the stream itself: the cast and
 * pre-division run before the reduce-scatter starts, the post-division, the shard's cast and
 * its accumulation after it ends, each an elementwise op on the DP stream. Returns the op the
 * optimizer waits for. */
static uint32_t fsdp_reduction(gen *G, lane_state *L, uint32_t inst, double elems, int d,
                               uint32_t after, int name, int mb, int layer)
{
    const wl_plan *p = G->p;
    double all = wl_fsdp_reduce_pass_bytes(p, elems, d, mb > 0);
    uint32_t deps[1] = {after};
    if (!L->final_reduce || all <= 0) {
        coll_passes(G, inst, all);
        return add_op(G, WL_OP_COLL, WL_STREAM_DP, name, mb, layer, inst, 0, deps, 1);
    }
    double pre = wl_fsdp_reduce_pre_bytes(p, elems, d);
    wl_cost c = {0};
    if (pre > 0) {
        c.bytes[GPU_OP_ELEMENTWISE] = pre;
        deps[0] = add_op(G, WL_OP_COMPUTE, WL_STREAM_DP, N_FSDP_PRE, mb, layer,
                         wl_graph_cost(G->g, &c), 0, deps, 1);
    }
    deps[0] = add_op(G, WL_OP_COLL, WL_STREAM_DP, name, mb, layer, inst, 0, deps, 1);
    if (all - pre <= 0) return deps[0];
    c.bytes[GPU_OP_ELEMENTWISE] = all - pre;
    return add_op(G, WL_OP_COMPUTE, WL_STREAM_DP, N_FSDP_POST, mb, layer, wl_graph_cost(G->g, &c),
                  0, deps, 1);
}

static void grad_collective(gen *G, lane_state *L, double grad_bytes, uint32_t after, int mb,
                            int layer, bool expert, double layers, double embs, double norms)
{
    const wl_plan *p = G->p;
    /* an uncompressed reduction runs in framework.reduce_dtype (grad_bytes are in the training
     * precision) */
    double reduce = p->fw.reduce_bytes > 0 ? p->fw.reduce_bytes / wl_precision_bytes(p->precision) : 1;
    double passes = wl_grad_buffer_bucket_bytes(p);
    bool placed = G->pp == 1 || (G->v == 1 && p->fw.delay_grad_reduce);
    if (passes > 0 && placed && p->zero <= 1 && p->quant_bits == 0 && p->lowrank_rank == 0 &&
        p->compression_ratio == 0) {
        /* Megatron-Core's start_grad_sync, on the compute stream before it launches the
         * bucket's collective: the NaN check's norm and the in-place 1/d scaling of the
         * bucket's main_grad (wl_grad_buffer_bucket_bytes per parameter). With overlap they
         * run inside the last backward as each bucket completes; without, after it. With
         * pp > 1 only where the stages' syncs are placed as Megatron places them
         * (delay_grad_reduce, 1F1B: the first stage's in its last backward, which ends the
         * drain, the others' after their last backward and send); elsewhere they stay with
         * the optimizer op, since inside a later stage's last backward they would delay the
         * gradient sends the drain waits for. */
        wl_cost c = {0};
        c.bytes[GPU_OP_ELEMENTWISE] = grad_bytes / wl_precision_bytes(p->precision) * passes;
        /* without overlap the collectives are synchronous (async_op = overlap_grad_reduce):
         * the compute stream waits for each bucket's before the next bucket's passes */
        uint32_t d0[2] = {after, L->last_dp};
        int nd0 = !p->overlap_dp && L->last_dp != NONE ? 2 : 1;
        after = add_op(G, WL_OP_COMPUTE, WL_STREAM_COMPUTE, N_GRAD_PASSES, mb, layer,
                       wl_graph_cost(G->g, &c), 0, d0, nd0);
        L->prev_compute = L->last_compute;
        L->last_compute = after;
        L->passes_bytes += c.bytes[GPU_OP_ELEMENTWISE];
    }
    if (expert) {
        /* routed experts' gradients: over the expert-DP group (absent when it is one lane) */
        if ((p->dp / G->ep) * G->cp < 2) return;
        coll_op op = p->zero == 0 ? COLL_ALLREDUCE : COLL_REDUCE_SCATTER;
        uint32_t inst = edp_coll(G, op, grad_bytes * reduce, WL_COMM_DP);
        L->last_dp = fsdp_reduction(G, L, inst, grad_bytes / wl_precision_bytes(p->precision),
                                    (p->dp / G->ep) * G->cp, after,
                                    p->zero == 0 ? N_EDP_AR : N_EDP_RS, mb, layer);
        return;
    }
    if (p->quant_bits > 0) {
        /* Quantised all-reduce with error feedback (1-bit Adam / DeepSpeed's compressed
         * all-reduce; int8 and fp8 likewise): add the residual and quantise (G elements), then
         * a reduce-scatter as an all-to-all of quantised chunks, each owner dequantises, sums,
         * requantises its chunk (G/d x d), and an all-gather of the quantised chunks: on the
         * wire a ring all-reduce of G b/8 bytes, 2 (d-1)/d of it sent per GPU; the compute
         * stream passes over 2 G elements (quantise and dequantise) at the throughput. */
        double elems = grad_bytes / wl_precision_bytes(p->precision);
        wl_cost c = {.fixed = sim_time_from_s(2 * elems / p->topk_throughput)};
        uint32_t cost = wl_graph_cost(G->g, &c);
        uint32_t deps[1] = {after};
        uint32_t q = add_op(G, WL_OP_COMPUTE, WL_STREAM_COMPUTE, N_QUANT, mb, layer, cost, 0, deps, 1);
        L->prev_compute = L->last_compute;
        L->last_compute = q;
        uint32_t inst = stage_coll(G, COLL_ALLREDUCE, elems * p->quant_bits / 8.0, WL_COMM_DP);
        uint32_t d2[1] = {q};
        L->last_dp = add_op(G, WL_OP_COLL, WL_STREAM_DP, N_QUANT_AR, mb, layer, inst, 0, d2, 1);
        return;
    }
    if (p->lowrank_rank > 0) {
        /* PowerSGD (Vogels et al. 2019) as PyTorch's DDP hook runs a bucket: residual added,
         * P = M Q and the rest of the compute (lowrank_cost) on the compute stream, then three
         * all-reduces in turn on the DP stream: the uncompressed tensors, every matrix's P
         * (q R elements), every matrix's Q (q C). The compute between the P and Q all-reduces
         * (Gram-Schmidt, Q = Mᵀ P) and after Q (P Qᵀ, the residual) is charged in full before
         * the first one: the backward loses exactly its time, the all-reduces start that much
         * late (docs/workloads.md). */
        double e = wl_precision_bytes(p->precision);
        double elems = grad_bytes / e;
        uint32_t deps[1] = {after};
        uint32_t cmp = add_op(G, WL_OP_COMPUTE, WL_STREAM_COMPUTE, N_LR_COMPRESS, mb, layer,
                              lowrank_cost(G, layers, embs, elems), 0, deps, 1);
        L->prev_compute = L->last_compute;
        L->last_compute = cmp;
        const wl_lowrank *a = &G->lr_layer, *b = &G->lr_emb;
        /* the final norm is no matrix: it joins the uncompressed all-reduce */
        double sizes[3] = {layers * a->dense_elems + embs * b->dense_elems + norms,
                           layers * a->p_elems + embs * b->p_elems,
                           layers * a->q_elems + embs * b->q_elems};
        static const int names[3] = {N_LR_AR_DENSE, N_LR_AR_P, N_LR_AR_Q};
        uint32_t prev = cmp;
        for (int k = 0; k < 3; k++) {
            if (sizes[k] <= 0) continue;
            uint32_t inst = stage_coll(G, COLL_ALLREDUCE, sizes[k] * e, WL_COMM_DP);
            uint32_t d[1] = {prev};
            prev = L->last_dp = add_op(G, WL_OP_COLL, WL_STREAM_DP, names[k], mb, layer, inst, 0,
                                       d, 1);
        }
        return;
    }
    if (p->compression_ratio > 0) {
        double elems = grad_bytes / wl_precision_bytes(p->precision);
        double pair = 4 + wl_precision_bytes(p->precision);
        double selected = elems;
        if (p->sparse_allreduce)
            /* each of the ring's 2(d-1) steps merges r G / d incoming pairs with its own and
             * re-selects the top r G / d: 2 (d-1)/d r G more elements through the selection */
            selected += 2.0 * (p->dp - 1) / p->dp * p->compression_ratio * elems;
        wl_cost c = {.fixed = sim_time_from_s(selected / p->topk_throughput)};
        uint32_t cost = wl_graph_cost(G->g, &c);
        uint32_t deps[1] = {after};
        uint32_t tk = add_op(G, WL_OP_COMPUTE, WL_STREAM_COMPUTE, N_TOPK, mb, layer, cost, 0,
                             deps, 1);
        L->prev_compute = L->last_compute;
        L->last_compute = tk;
        if (p->topk_ps) {
            /* Top-k through a parameter server (options.dp_algorithm "ps", S servers sharded
             * over the index space, coll_ps.c): every worker pushes its r G pairs, shard j to
             * server j, which sums the n - 1 it receives (a ps reduce of r G (4 + e) bytes);
             * the sum holds the union of the n index sets, U = G (1 - (1 - r)^n) expected
             * for independent sets (wl_topk_union), pulled back as pairs or, when denser,
             * as the dense shard (a ps broadcast of min(U (4 + e), G e) bytes). Each GPU
             * sends (n - 1)/n of the two on average. */
            int n = p->dp;
            double e = wl_precision_bytes(p->precision);
            double pull = fmin(wl_topk_union(elems, p->compression_ratio, n) * pair, elems * e);
            uint32_t push = stage_coll(G, COLL_REDUCE, p->compression_ratio * elems * pair,
                                       WL_COMM_DP);
            uint32_t d2[1] = {tk};
            uint32_t ps = add_op(G, WL_OP_COLL, WL_STREAM_DP, N_PS_PUSH, mb, layer, push, 0, d2, 1);
            uint32_t pl = stage_coll(G, COLL_BROADCAST, pull, WL_COMM_DP);
            d2[0] = ps;
            L->last_dp = add_op(G, WL_OP_COLL, WL_STREAM_DP, N_PS_PULL, mb, layer, pl, 0, d2, 1);
            return;
        }
        /* (index, value) pairs: a 4-byte index and the value per kept element. All-gather: the
         * output holds every rank's pairs, d r G (4 + e) bytes, growing with d. Sparse
         * all-reduce (gTop-k, Ok-Topk style): a ring all-reduce whose every message carries
         * the top fraction r of its chunk as pairs, re-selected after each merge so the
         * density stays r: a dense all-reduce of r G (4 + e) bytes, 2 (d-1)/d of that sent
         * per GPU whatever d (docs/workloads.md). */
        double out = (p->sparse_allreduce ? 1 : p->dp) * p->compression_ratio * elems * pair;
        uint32_t inst = stage_coll(G, p->sparse_allreduce ? COLL_ALLREDUCE : COLL_ALLGATHER, out,
                                   WL_COMM_DP);
        uint32_t d2[1] = {tk};
        L->last_dp = add_op(G, WL_OP_COLL, WL_STREAM_DP, p->sparse_allreduce ? N_TOPK_AR : N_TOPK_AG,
                            mb, layer, inst, 0, d2, 1);
        return;
    }
    coll_op op = p->zero == 0 ? COLL_ALLREDUCE : COLL_REDUCE_SCATTER;
    int name = p->zero == 0 ? N_DP_AR : (p->zero >= 2 ? N_ZERO_RS : N_DP_RS);
    uint32_t inst = stage_coll(G, op, grad_bytes * reduce, WL_COMM_DP);
    /* FSDP's post-backward stream: cast, pre- and post-division, the shard's cast and
     * accumulation around the reduction (wl_fsdp_reduce_pass_bytes); a microbatch after the
     * first adds its shard to the one saved */
    L->last_dp = fsdp_reduction(G, L, inst, grad_bytes / wl_precision_bytes(p->precision),
                                G->reps, after, name, mb, layer);
}

/* ZeRO-3 with expert parallelism: the bytes one GPU's gathers of `layer` assemble, the dense
 * part over all dp x cp replicas of the stage (*dense) and the routed experts this GPU holds
 * (1/ep of them) over their expert-DP group (*experts; 0 when that group is one lane or the
 * layer is dense), as FSDP2 with EP (and DeepSpeed-MoE's expert ZeRO groups) shard them. */
static void zero3_layer_bytes(const gen *G, int layer, double *dense, double *experts)
{
    const wl_model *mo = &G->s->model;
    const wl_plan *p = G->p;
    double pb = wl_precision_bytes(p->precision);
    double all = wl_layers_params(mo, layer, 1), ex = wl_layers_expert_params(mo, layer, 1);
    *dense = wl_tp_rank_params(mo, all - ex, 1, p->tp) * pb;
    *experts = (p->dp / G->ep) * G->cp > 1 ? ex / G->ep / p->tp * pb : 0;
}

/* The layer of the compute op after op k of item it (ZeRO-3 runs every op per layer): the next
 * layer of the item in its direction, or the first of the next item. */
static int next_op_layer(const gen *G, const item *items, int n_items, int it, int k, int n_ops)
{
    item I = items[it];
    int vs = I.chunk * G->pp + G->stage;
    if (k + 1 < n_ops) return G->vs_first[vs] + (I.bwd ? n_ops - 2 - k : k + 1);
    if (it + 1 >= n_items) return -1;
    I = items[it + 1];
    vs = I.chunk * G->pp + G->stage;
    return G->vs_first[vs] + (I.bwd ? G->vs_layers[vs] - 1 : 0);
}

/* ZeRO-3: the parameters of a chunk outside its layers (FSDP's root unit: the embedding on
 * the first virtual stage; the output layer, a copy of its own unless tied on one stage, and
 * the final norm on the last), in bytes on this GPU. FSDP gathers the root before the first
 * layer's forward (_root_pre_forward's unshard, every microbatch: the post-backward resharded
 * it) and keeps it unsharded through the backward (_post_forward_reshard skips the root), and
 * reduce-scatters its gradient after the backward's end. The forward's gather of the chunk's
 * first layer carries it (zero3_root_gather), as one collective of the summed bytes (one alpha
 * less than FSDP's two back-to-back gathers), and the chunk's last backward op its reduction. */
static double zero3_root_bytes(const gen *G, int vs)
{
    int n_vs = G->pp * G->v;
    bool first = vs == 0, last = vs == n_vs - 1;
    bool one_copy = G->pp == 1 && G->s->model.tied_embeddings;
    return (first ? G->emb_grad_bytes : 0) + (last && !one_copy ? G->emb_grad_bytes : 0) +
           (last ? G->norm_bytes : 0);
}

/* The root bytes the gather of op k of item `it` carries: those of its chunk when it is a
 * forward's first layer, else none. */
static double zero3_root_gather(const gen *G, const item *items, int it, int k)
{
    if (items[it].bwd || k != 0) return 0;
    return zero3_root_bytes(G, items[it].chunk * G->pp + G->stage);
}

/* Item I's pipeline send from lane `lane` to the stage after it (forward) or before it
 * (backward), after op `after`, entered in the send tables the receivers' deps are patched
 * from. NONE when the item sends nothing (the first virtual stage's backward, the last's
 * forward) or its neighbour is its own lane. */
static uint32_t pp_send(gen *G, uint32_t lane, item I, uint32_t after)
{
    const wl_plan *p = G->p;
    int pp = G->pp, vs = I.chunk * pp + G->stage, n_vs = pp * G->v;
    if (I.bwd ? vs == 0 : vs == n_vs - 1) return NONE;
    int dst_vs = I.bwd ? vs - 1 : vs + 1;
    uint32_t dst_lane = lane_of(G, G->dp_rank, dst_vs % pp);
    if (dst_lane == lane) return NONE;
    double bytes;
    if (G->s->model.kind == WL_TRANSFORMER)
        /* Megatron's scatter-gather: each TP rank sends 1/tp of the activation (of its s/cp
         * tokens with context parallelism). */
        bytes = p->micro_batch_size * (G->s->model.seq_len / G->cp) * G->s->model.hidden *
                wl_precision_bytes(p->precision) / p->tp;
    else
        bytes = G->s->model.act_bytes_per_layer / p->tp;
    uint32_t d[1] = {after};
    uint32_t sid = add_op(G, WL_OP_SEND, WL_STREAM_PP, I.bwd ? N_SEND_GRAD : N_SEND_ACT, I.mb,
                          G->vs_first[vs], dst_lane, bytes, d, 1);
    uint32_t *tab = I.bwd ? G->bsend : G->fsend;
    tab[(size_t)lane * G->v * G->mstride + (size_t)I.chunk * G->mstride + I.mb] = sid;
    return sid;
}

static void gen_lane(gen *G, const item *items, int n_items, lane_state *L)
{
    const wl_plan *p = G->p;
    int st = G->stage, pp = G->pp, v = G->v, m = G->m;
    uint32_t lane = lane_of(G, G->dp_rank, st);
    int n_vs = pp * v;
    bool dp = G->reps > 1 && !p->local_step; /* a local step keeps its gradients to itself */
    bool zero3 = p->zero >= 3 && dp;
    uint32_t pending_gather = NONE; /* ZeRO-3: the next compute op's gather, issued ahead */
    uint32_t pending_gather2 = NONE; /* ... of its routed experts (expert parallelism) */
    uint32_t blocking_send = NONE;  /* pp_blocking_sends: the send the next compute waits for */
    uint32_t blocking_send2 = NONE; /* ... and the other direction's of a combined exchange */
    /* Megatron's interleaved schedule with blocking exchanges (Megatron-LM of 2022, and
     * Megatron-Core without overlap_p2p_comm) ends each steady-state step, a forward then a
     * backward, with one send_forward_backward_recv_forward_backward: the forward's activation
     * leaves with the backward's gradient after both computes, the backward does not wait for
     * it, and the next forward waits for both sends and for both receives, the gradient that
     * the next backward will use included (docs/workloads.md, "One exchange per step").
     * Steady-state forwards are items warm, warm + 2, ... of the stage's order. */
    bool combined = p->schedule == WL_INTERLEAVED && pp > 1 && v > 1 && p->fw.pp_blocking_sends &&
                    !p->fw.overlap_p2p_comm;
    int c_warm = wl_pipeline_warmup(p, st, m);
    int deferred_it = -1; /* the steady-state forward whose send waits for the backward after it */
    /* overlap_p2p_comm: the last send of each direction (forward, backward), waited for by the
     * next compute of that direction (Megatron-Core's fwd_wait_handles / bwd_wait_handles) */
    uint32_t overlap_send[2] = {NONE, NONE};
    /* ZeRO-1/2 with overlap_param_gather: the updated parameters are gathered chunk by chunk
     * as the next step's first forward reaches them (Megatron --overlap-param-gather). In the
     * steady state that is this step's first microbatch: gathered before it, not after the
     * optimizer. */
    bool gather_ahead = dp && (p->zero == 1 || p->zero == 2) && p->fw.overlap_param_gather;
    /* Megatron-Core's --delay-grad-reduce (1F1B, pp > 1): only the first stage launches its
     * buckets during its last backward; the schedule gives the others grad_sync_func, called
     * after their last backward and send ("other pipeline stages do grad reduction during
     * pipeline bubble", schedules.py), so their buckets wait for the backward's end. (The
     * interleaved schedule staggers each chunk's sync by the stage's rank: not modelled, its
     * chunks reduce as their backward ends.) */
    bool delayed = p->overlap_dp && p->fw.delay_grad_reduce && pp > 1 && v == 1 && st > 0;
    L->last_compute = L->prev_compute = L->last_dp = NONE;
    L->n_held = 0;
    L->final_reduce = false;
    int last_bwd = -1; /* the lane's last backward item */
    for (int it = 0; it < n_items; it++)
        if (items[it].bwd) last_bwd = it;
    L->passes_bytes = 0;
    double stage_psi = 0, stage_psi_expert = 0; /* bytes; experts: this GPU's (1/ep) */
    double stage_norms = 0; /* elements of the stage's norms (layers' and final), whole */
    const wl_model *mo = &G->s->model;
    bool moe_model = mo->kind == WL_TRANSFORMER && mo->experts > 1;

    for (int it = 0; it < n_items; it++) {
        item I = items[it];
        bool steady_fwd = combined && !I.bwd && it >= c_warm && (it - c_warm) % 2 == 0 &&
                          it + 1 < n_items && items[it + 1].bwd;
        int vs = I.chunk * pp + st;
        bool first = vs == 0, last = vs == n_vs - 1;
        int layer0 = G->vs_first[vs], nl = G->vs_layers[vs];
        /* Gradients are reduced during the last microbatch's backward (every microbatch's
         * with ZeRO-2/3, whose gradients are partitioned): that backward is split per layer
         * so buckets fire as their layers finish. */
        bool reduce = I.bwd && dp && (p->zero >= 2 || I.mb == m - 1);
        bool per_layer = I.bwd ? reduce : zero3 || (gather_ahead && I.mb == 0);
        /* expert parallelism: every MoE layer is its own ops around its all-to-alls */
        if (G->moe_split && wl_moe_layers_in(mo, layer0, nl) > 0) per_layer = true;
        double pb = wl_precision_bytes(p->precision);
        if (!I.bwd && I.mb == 0) {
            /* parameter bytes held by this stage: its layers, the embedding on the first
             * chunk, the output layer on the last (one shared copy when tied and unsplit) */
            double layers_bytes = G->layer_param_bytes * nl;
            if (moe_model) {
                /* layer by layer (moe_layer_freq); with ep > 1 the routed experts (1/ep of
                 * them) are kept apart: their optimizer shard and gathers use the expert-DP
                 * group */
                double all = wl_layers_params(mo, layer0, nl), ex = wl_layers_expert_params(mo, layer0, nl);
                layers_bytes = wl_tp_rank_params(mo, all, nl, p->tp) * pb;
                if (G->ep > 1) {
                    layers_bytes = wl_tp_rank_params(mo, all - ex, nl, p->tp) * pb;
                    stage_psi_expert += ex / G->ep / p->tp * pb;
                }
            }
            if (mo->kind == WL_TRANSFORMER)
                stage_norms += nl * 2 * wl_norm_params(mo) + (last ? wl_norm_params(mo) : 0);
            stage_psi += layers_bytes + (first ? G->emb_grad_bytes : 0) +
                         (last && (!first || !G->s->model.tied_embeddings) ? G->emb_grad_bytes : 0) +
                         (last ? G->norm_bytes : 0);
        }
        int n_ops = per_layer ? nl : 1;
        double bucket = 0, ebucket = 0, blayers = 0, bembs = 0, bnorms = 0;
        for (int k = 0; k < n_ops; k++) {
            /* backward runs from the chunk's last layer down */
            int li = I.bwd ? n_ops - 1 - k : k;
            int layer = per_layer ? layer0 + li : layer0;
            bool f = first && (!per_layer || li == 0);
            bool l = last && (!per_layer || li == n_ops - 1);
            int n_in = per_layer ? 1 : nl;
            int moe_in = moe_model ? wl_moe_layers_in(mo, layer, n_in) : 0;
            bool split = G->moe_split && moe_in > 0; /* one MoE layer with its all-to-alls */
            uint32_t cost = layer_cost(G, I.bwd, f, l, n_in, moe_in);
            uint32_t gather = NONE, gather2 = NONE; /* gather2: the experts' (EP) */
            if (zero3) {
                /* with expert parallelism the dense part and the routed experts are gathered
                 * over their own groups (zero3_layer_bytes); otherwise the whole layer */
                bool split3 = moe_model && G->ep > 1;
                double zd = G->layer_param_bytes, zx = 0;
                if (split3) zero3_layer_bytes(G, layer, &zd, &zx);
                zd += zero3_root_gather(G, items, it, k);
                if (pending_gather != NONE) {
                    gather = pending_gather;
                    gather2 = pending_gather2;
                } else {
                    uint32_t inst = stage_coll(G, COLL_ALLGATHER, zd, WL_COMM_ZERO);
                    coll_passes(G, inst, wl_fsdp_gather_pass_bytes(p, zd / pb, G->reps));
                    uint32_t d[1] = {L->prev_compute};
                    gather = add_op(G, WL_OP_COLL, WL_STREAM_DP, N_ZERO_GATHER, I.mb, layer,
                                    inst, 0, d, 1);
                    L->last_dp = gather;
                    if (zx > 0) {
                        inst = edp_coll(G, COLL_ALLGATHER, zx, WL_COMM_ZERO);
                        coll_passes(G, inst, wl_fsdp_gather_pass_bytes(p, zx / pb, (p->dp / G->ep) * G->cp));
                        gather2 = add_op(G, WL_OP_COLL, WL_STREAM_DP, N_EDP_AG, I.mb, layer,
                                         inst, 0, d, 1);
                        L->last_dp = gather2;
                    }
                }
                pending_gather = pending_gather2 = NONE;
                if (k + 1 < n_ops || it + 1 < n_items) {
                    /* Prefetch depth one: the next layer's gather may start once the op
                     * before this one is done, overlapping this op's compute. */
                    zd = G->layer_param_bytes;
                    if (split3)
                        zero3_layer_bytes(G, next_op_layer(G, items, n_items, it, k, n_ops), &zd, &zx);
                    zd += k + 1 < n_ops ? zero3_root_gather(G, items, it, k + 1)
                                        : zero3_root_gather(G, items, it + 1, 0);
                    uint32_t inst = stage_coll(G, COLL_ALLGATHER, zd, WL_COMM_ZERO);
                    /* FSDP's pre-unshard stream casts the fp32 shard first */
                    coll_passes(G, inst, wl_fsdp_gather_pass_bytes(p, zd / pb, G->reps));
                    uint32_t d[1] = {L->last_compute};
                    pending_gather = add_op(G, WL_OP_COLL, WL_STREAM_DP, N_ZERO_GATHER, I.mb,
                                            -1, inst, 0, d, 1);
                    L->last_dp = pending_gather;
                    if (zx > 0) {
                        inst = edp_coll(G, COLL_ALLGATHER, zx, WL_COMM_ZERO);
                        coll_passes(G, inst, wl_fsdp_gather_pass_bytes(p, zx / pb, (p->dp / G->ep) * G->cp));
                        pending_gather2 = add_op(G, WL_OP_COLL, WL_STREAM_DP, N_EDP_AG, I.mb, -1,
                                                 inst, 0, d, 1);
                        L->last_dp = pending_gather2;
                    }
                }
            }
            if (gather_ahead && !I.bwd && I.mb == 0) {
                /* this layer's parameters (+ the embedding / output layer it holds), gathered
                 * on the DP stream in layer order: layer k's gather overlaps layer k-1's
                 * forward */
                double layers_bytes = G->layer_param_bytes * (per_layer ? 1 : nl);
                if (moe_model && G->ep > 1) {
                    /* expert parallelism: the dense part over all replicas, the routed
                     * experts (1/ep of them here) over their expert-DP group */
                    double all = wl_layers_params(mo, layer, n_in), ex = wl_layers_expert_params(mo, layer, n_in);
                    layers_bytes = wl_tp_rank_params(mo, all - ex, n_in, p->tp) * pb;
                    if (ex > 0 && (p->dp / G->ep) * G->cp > 1) {
                        uint32_t xi = edp_coll(G, COLL_ALLGATHER, ex / G->ep / p->tp * pb, WL_COMM_ZERO);
                        gather2 = add_op(G, WL_OP_COLL, WL_STREAM_DP, N_EDP_AG, -1, layer, xi, 0,
                                         NULL, 0);
                    }
                }
                double bytes = layers_bytes + (f ? G->emb_grad_bytes : 0) +
                               (l && (!first || !G->s->model.tied_embeddings) ? G->emb_grad_bytes : 0) +
                               (l ? G->norm_bytes : 0);
                uint32_t inst = stage_coll(G, COLL_ALLGATHER, bytes, WL_COMM_ZERO);
                gather = add_op(G, WL_OP_COLL, WL_STREAM_DP, N_PARAM_AG, -1, layer, inst, 0, NULL, 0);
                L->last_dp = gather;
            }
            uint32_t wait = blocking_send;
            if (k == 0 && overlap_send[I.bwd] != NONE) {
                wait = overlap_send[I.bwd];
                overlap_send[I.bwd] = NONE;
            }
            uint32_t deps[6] = {gather, gather2, wait, blocking_send2, NONE, NONE};
            uint32_t nd = 4;
            blocking_send = blocking_send2 = NONE;
            int src_vs = I.bwd ? vs + 1 : vs - 1;
            bool needs = k == 0 && (I.bwd ? !last : !first);
            uint32_t src_lane = needs ? lane_of(G, G->dp_rank, src_vs % pp) : lane;
            /* a steady-state forward of a combined exchange: it waits for the gradient the
             * backward after it uses too (received in the same exchange as its own input) */
            int nb_vs = steady_fwd ? items[it + 1].chunk * pp + st : 0;
            bool couple = k == 0 && steady_fwd && nb_vs != n_vs - 1;
            uint32_t nb_lane = couple ? lane_of(G, G->dp_rank, (nb_vs + 1) % pp) : lane;
            couple = couple && nb_lane != lane;
            if (couple) deps[nd++] = PLACEHOLDER;
            if (needs && src_lane != lane) deps[nd++] = PLACEHOLDER;
            uint32_t id, first_op;
            if (!split) {
                id = first_op = add_op(G, WL_OP_COMPUTE, WL_STREAM_COMPUTE, I.bwd ? N_BWD : N_FWD,
                                       I.mb, layer, cost, 0, deps, nd);
            } else {
                /* forward: attention (+ router, shared experts) -> dispatch all-to-all ->
                 * routed experts -> combine all-to-all; backward the reverse, after the
                 * recomputed forward's two all-to-alls with full checkpointing. The
                 * all-to-alls block the compute stream, as NCCL's do in Megatron's
                 * dispatcher. */
                uint32_t ex = expert_cost(G, layer, rep_e(G), I.bwd);
                uint32_t d1[1];
                if (!I.bwd) {
                    id = first_op = add_op(G, WL_OP_COMPUTE, WL_STREAM_COMPUTE, N_FWD, I.mb,
                                           layer, cost, 0, deps, nd);
                    d1[0] = id;
                    id = add_op(G, WL_OP_COLL, WL_STREAM_COMPUTE, N_EP_DISPATCH, I.mb, layer,
                                ep_coll(G, G->a2a_bytes), 0, d1, 1);
                    d1[0] = id;
                    id = add_op(G, WL_OP_COMPUTE, WL_STREAM_COMPUTE, N_EXPERT_FWD, I.mb, layer, ex,
                                0, d1, 1);
                    d1[0] = id;
                    id = add_op(G, WL_OP_COLL, WL_STREAM_COMPUTE, N_EP_COMBINE, I.mb, layer,
                                ep_coll(G, G->a2a_bytes), 0, d1, 1);
                } else {
                    int pre = p->checkpointing == WL_CKPT_FULL ? 2 : 0;
                    first_op = NONE;
                    for (int r = 0; r < pre + 2; r++) {
                        /* recompute: dispatch, combine; backward: combine, dispatch */
                        bool dispatch = r < pre ? r == 0 : r == pre + 1;
                        uint32_t inst = ep_coll(G, G->a2a_bytes);
                        if (first_op == NONE) {
                            id = first_op = add_op(G, WL_OP_COLL, WL_STREAM_COMPUTE,
                                                   dispatch ? N_EP_DISPATCH : N_EP_COMBINE, I.mb,
                                                   layer, inst, 0, deps, nd);
                        } else {
                            d1[0] = id;
                            id = add_op(G, WL_OP_COLL, WL_STREAM_COMPUTE,
                                        dispatch ? N_EP_DISPATCH : N_EP_COMBINE, I.mb, layer,
                                        inst, 0, d1, 1);
                        }
                        if (r == pre) {
                            /* the experts' backward between the combine and the dispatch */
                            d1[0] = id;
                            id = add_op(G, WL_OP_COMPUTE, WL_STREAM_COMPUTE, N_EXPERT_BWD, I.mb,
                                        layer, ex, 0, d1, 1);
                        }
                    }
                    d1[0] = id;
                    id = add_op(G, WL_OP_COMPUTE, WL_STREAM_COMPUTE, N_BWD, I.mb, layer, cost, 0,
                                d1, 1);
                }
            }
            if (needs && src_lane != lane) {
                const wl_op *o = &G->g->ops[first_op];
                add_patch(G, o->dep_start + o->n_deps - 1, I.bwd, (int)src_lane,
                          (src_vs / pp) * G->mstride + I.mb);
            }
            if (couple) {
                /* the placeholder before the own input's (or the last one when none) */
                const wl_op *o = &G->g->ops[first_op];
                uint32_t at = o->n_deps - 1 - (needs && src_lane != lane ? 1 : 0);
                add_patch(G, o->dep_start + at, 1, (int)nb_lane,
                          ((nb_vs + 1) / pp) * G->mstride + items[it + 1].mb);
            }
            L->prev_compute = L->last_compute;
            L->last_compute = id;
            if (reduce) {
                double gb = G->layer_grad_bytes * (per_layer ? 1 : nl), eb = 0;
                if (moe_model) {
                    double all = wl_layers_params(mo, layer, n_in);
                    double ex = wl_layers_expert_params(mo, layer, n_in);
                    gb = wl_tp_rank_params(mo, all - ex, n_in, p->tp) * pb;
                    if (G->ep > 1) eb = ex / G->ep / p->tp * pb;
                    else gb += ex / p->tp * pb;
                }
                /* The embedding matrices' gradients join the bucket of the op that completes
                 * them. A matrix tied on one stage (pp 1) is one parameter used twice: autograd
                 * sums the output layer's and the lookup's contributions and runs its
                 * gradient-ready hook once, after the lookup's backward, the last op of the
                 * backward, so it is reduced with the last bucket (Megatron-Core builds its
                 * buckets from params[::-1], the embedding coming first in the module; FSDP
                 * keeps it in the root unit, reduced last), not with the output layer's. */
                bool one_copy = pp == 1 && G->s->model.tied_embeddings;
                /* ZeRO-3: the output layer and the final norm are in the root unit,
                 * reduced with the chunk's last backward op (zero3_root_bytes) */
                bool lr = zero3 ? last && k == n_ops - 1 : l;
                if (lr && !one_copy) gb += G->emb_grad_bytes;
                if (lr) gb += G->norm_bytes; /* the final norm */
                if (f) gb += G->emb_grad_bytes;
                bucket += gb;
                ebucket += eb;
                blayers += per_layer ? 1 : nl;
                bembs += (lr && !one_copy ? 1 : 0) + (f ? 1 : 0);
                if (lr) bnorms += G->norm_bytes / pb;
                for (int x = 0; x < 2; x++) {
                    double *bk = x ? &ebucket : &bucket;
                    if (x && *bk == 0) continue;
                    if (*bk >= p->bucket_bytes || k == n_ops - 1) {
                        double nly = x ? 0 : blayers, nem = x ? 0 : bembs, nno = x ? 0 : bnorms;
                        if (p->overlap_dp && !delayed) {
                            /* the lane's last backward op ends the compute before the
                             * optimizer: nothing runs beside the reductions it fires */
                            L->final_reduce = it == last_bwd && k == n_ops - 1;
                            grad_collective(G, L, *bk, id, I.mb, layer, x, nly, nem, nno);
                            L->final_reduce = false;
                        } else {
                            if (L->n_held >= L->cap_held) {
                                L->cap_held = L->cap_held ? 2 * L->cap_held : 64;
                                L->held = dt_xrealloc(L->held, L->cap_held * sizeof *L->held);
                                L->held_expert = dt_xrealloc(L->held_expert,
                                                             L->cap_held * sizeof *L->held_expert);
                                L->held_layers = dt_xrealloc(L->held_layers,
                                                             L->cap_held * sizeof *L->held_layers);
                                L->held_embs = dt_xrealloc(L->held_embs,
                                                           L->cap_held * sizeof *L->held_embs);
                                L->held_norms = dt_xrealloc(L->held_norms,
                                                            L->cap_held * sizeof *L->held_norms);
                            }
                            L->held_expert[L->n_held] = x;
                            L->held_layers[L->n_held] = nly;
                            L->held_embs[L->n_held] = nem;
                            L->held_norms[L->n_held] = nno;
                            L->held[L->n_held++] = *bk;
                        }
                        *bk = 0;
                        if (!x) blayers = bembs = bnorms = 0;
                    }
                }
            }
        }
        if (deferred_it >= 0) {
            /* the combined exchange after the backward: the forward's activation leaves now */
            blocking_send2 = pp_send(G, lane, items[deferred_it], L->last_compute);
            deferred_it = -1;
        }
        if (steady_fwd) {
            deferred_it = it; /* its send waits for the backward after it */
        } else {
            uint32_t sid = pp_send(G, lane, I, L->last_compute);
            if (sid != NONE && p->fw.pp_blocking_sends) blocking_send = sid;
            else if (sid != NONE && p->fw.overlap_p2p_comm) overlap_send[I.bwd] = sid;
        }
    }
    /* Without overlap, every bucket waits for the end of the backward pass: nothing computes
     * beside its reduction. Megatron's schedules wait for the last backward's gradient send
     * (send_backward blocks; under overlap_p2p_comm the cool-down's exchanges block) before
     * finalize_model_grads or grad_sync_func start the reductions and their passes. */
    DT_ASSERT(deferred_it < 0); /* a steady-state step always ends with its backward */
    L->final_reduce = true;
    uint32_t bwd_end = blocking_send != NONE ? blocking_send
                       : overlap_send[1] != NONE ? overlap_send[1] : L->last_compute;
    for (size_t i = 0; i < L->n_held; i++)
        grad_collective(G, L, L->held[i], i == 0 ? bwd_end : L->last_compute, m - 1, -1,
                        L->held_expert && L->held_expert[i], L->held_layers[i], L->held_embs[i],
                        L->held_norms[i]);
    /* Tied input and output embeddings on different stages hold two copies of one matrix:
     * the first and the last stage all-reduce its gradient after the data-parallel reduction
     * (Megatron's _allreduce_word_embedding_grads; DeepSpeed's tied layers likewise). One
     * instance per DP replica, joined by the k-th GPU of both stages' lanes. */
    if (G->emb_inst && (st == 0 || st == pp - 1)) {
        uint32_t *slot = &G->emb_inst[G->dp_rank];
        if (*slot == NONE)
            *slot = wl_graph_coll_kind(G->g, COLL_ALLREDUCE, G->emb_grad_bytes, WL_COMM_PP);
        uint32_t d[3] = {L->last_compute, L->last_dp, bwd_end};
        L->last_dp = add_op(G, WL_OP_COLL, WL_STREAM_DP, N_EMB_AR, -1, -1, *slot, 0, d, 3);
    }
    L->final_reduce = false;
    /* Optimizer step on this GPU's shard, then ZeRO-1/2 gather the updated parameters. */
    if (stage_psi > 0 || G->s->model.params > 0) {
        double psi = stage_psi / wl_precision_bytes(p->precision);
        if (G->s->model.kind != WL_TRANSFORMER)
            psi = G->s->model.params / p->tp / pp;
        double shard = psi / (p->zero >= 1 && dp ? G->reps : 1);
        /* routed experts: sharded over their expert-DP group (dp/ep x cp) */
        double psi_expert = stage_psi_expert / wl_precision_bytes(p->precision);
        if (psi_expert > 0) shard += psi_expert / (p->zero >= 1 ? (p->dp / G->ep) * G->cp : 1);
        /* bytes moved per parameter (wl_optimizer_bytes, docs/workloads.md) */
        double per = wl_optimizer_bytes(p);
        wl_cost c = {0};
        c.bytes[GPU_OP_OPTIMIZER] = shard * per;
        /* the passes of the data-parallel wrapper over the whole gradient buffer (zero, scale,
         * NaN check: wl_grad_buffer_bytes) on the compute stream; Megatron runs the zeroing
         * before the first forward, charged here, and the other two before each bucket's
         * reduction, charged there (grad_collective) where the buckets have them */
        c.bytes[GPU_OP_ELEMENTWISE] = (psi + psi_expert) * wl_grad_buffer_bytes(p) - L->passes_bytes;
        if (c.bytes[GPU_OP_ELEMENTWISE] < 0) c.bytes[GPU_OP_ELEMENTWISE] = 0;
        if (p->tp > 1 && p->sequence_parallel && stage_norms > 0) {
            /* Sequence parallelism: each TP rank's norm weights saw only its s/t tokens, so
             * before the step their gradients are summed over the TP group, one coalesced
             * all-reduce of the stage's norms in the gradient buffer's dtype (Megatron-Core
             * finalize_model_grads -> _allreduce_layernorm_grads, after the data-parallel
             * sync; docs/workloads.md, "Tensor parallelism"). Blocking, before the step. */
            double gbytes = p->fw.reduce_bytes > 0 ? p->fw.reduce_bytes : wl_precision_bytes(p->precision);
            c.inlane[0].op = COLL_ALLREDUCE;
            c.inlane[0].bytes = stage_norms * gbytes;
            c.inlane[0].count = 1;
            c.n_inlane = 1;
        }
        uint32_t cost = wl_graph_cost(G->g, &c);
        /* overlap_p2p_comm: the cool-down's last gradient send blocked in Megatron
         * (schedules.py waits on the cool-down's exchanges); the last activation send, never
         * waited there, is long done */
        uint32_t deps[6] = {L->last_compute, L->last_dp, blocking_send, overlap_send[1],
                            overlap_send[0], blocking_send2};
        uint32_t opt = add_op(G, WL_OP_COMPUTE, WL_STREAM_COMPUTE, N_OPT, -1, -1, cost, 0, deps, 6);
        L->last_compute = opt;
        if (dp && (p->zero == 1 || p->zero == 2) && !gather_ahead) {
            uint32_t inst = stage_coll(G, COLL_ALLGATHER, psi * wl_precision_bytes(p->precision),
                                       WL_COMM_ZERO);
            coll_passes(G, inst, wl_fsdp_gather_pass_bytes(p, psi, G->reps));
            uint32_t d[1] = {opt};
            L->last_dp = add_op(G, WL_OP_COLL, WL_STREAM_DP, N_PARAM_AG, -1, -1, inst, 0, d, 1);
            if (psi_expert > 0 && (p->dp / G->ep) * G->cp > 1) {
                inst = edp_coll(G, COLL_ALLGATHER, stage_psi_expert, WL_COMM_ZERO);
                L->last_dp = add_op(G, WL_OP_COLL, WL_STREAM_DP, N_EDP_AG, -1, -1, inst, 0, d, 1);
            }
        }
    }
}

wl_graph *wl_graph_build(const wl_scenario *s)
{
    const wl_plan *p = &s->plan;
    gen G = {.s = s, .p = p, .pp = p->pp, .v = p->virtual_stages, .m = p->microbatches,
             .mstride = wl_max_replica_microbatches(p), .dp = p->dp, .tp = p->tp, .cp = wl_cp(p), .ep = wl_ep(p)};
    G.reps = p->dp * G.cp;
    G.moe_split = G.ep > 1 && s->model.kind == WL_TRANSFORMER && s->model.experts > 1;
    /* layers per virtual stage: the resolved plan's stage_layers (wl_scenario_resolve fills
     * them); one layer each for a plan built without (params models, hand-made plans) */
    int n_vs = p->pp * p->virtual_stages;
    int *ones = NULL;
    if (p->n_stage_layers == n_vs) {
        G.vs_layers = p->stage_layers;
    } else {
        ones = dt_xmalloc((size_t)n_vs * sizeof *ones);
        int each = s->model.layers / n_vs;
        for (int i = 0; i < n_vs; i++) ones[i] = each < 1 ? 1 : each;
        G.vs_layers = ones;
    }
    G.vs_first = dt_xmalloc((size_t)n_vs * sizeof *G.vs_first);
    for (int i = 0, acc = 0; i < n_vs; i++) {
        G.vs_first[i] = acc;
        acc += G.vs_layers[i];
    }
    int n_gpus = G.reps * p->tp * p->pp;
    int n_lanes = G.reps * p->pp;
    wl_graph *g = wl_graph_create(n_gpus, n_lanes, p->tp);
    G.g = g;
    for (int r = 0; r < G.reps; r++)
        for (int st = 0; st < p->pp; st++)
            for (int k = 0; k < p->tp; k++)
                g->lane_gpus[(size_t)lane_of(&G, r, st) * p->tp + k] =
                    G.cp > 1 ? wl_gpu_of_cp(p, r / G.cp, r % G.cp, st, k) : wl_gpu_of(p, r, st, k);
    if (G.cp > 1) {
        /* the CP ring of a lane: the same DP rank and stage, the next CP rank */
        g->cp = G.cp;
        g->cp_next = dt_xmalloc((size_t)n_lanes * sizeof *g->cp_next);
        for (int r = 0; r < G.reps; r++)
            for (int st = 0; st < p->pp; st++)
                g->cp_next[lane_of(&G, r, st)] =
                    lane_of(&G, r / G.cp * G.cp + (r % G.cp + 1) % G.cp, st);
    }
    for (int i = 0; i < N_COUNT; i++) G.names[i] = wl_graph_name(g, op_names[i]);
    if (G.moe_split) {
        for (int i = N_COUNT; i < N_COUNT_EP; i++) G.names[i] = wl_graph_name(g, op_names[i]);
        gtab_init(&G.ep_tab, (size_t)p->pp * (p->dp / G.ep) * G.cp);
        gtab_init(&G.edp_tab, (size_t)p->pp * G.ep);
        int L = s->model.layers;
        G.loads = dt_xmalloc((size_t)L * G.ep * sizeof *G.loads);
        for (int l = 0; l < L; l++) wl_moe_rank_loads(&s->model, G.ep, l, s->model.router_seed,
                                                      G.loads + (size_t)l * G.ep);
        G.expert_costs = dt_xmalloc((size_t)L * G.ep * 2 * sizeof *G.expert_costs);
        memset(G.expert_costs, 0xff, (size_t)L * G.ep * 2 * sizeof *G.expert_costs);
        G.a2a_bytes = wl_moe_alltoall_bytes(&s->model, p);
    }
    wl_layer_cost_get(&s->model, p, &G.lc);
    G.n_layer_gemms = wl_layer_gemms(&s->model, p, G.layer_gemms);
    double pb = wl_precision_bytes(p->precision);
    /* one layer on one GPU: its linears / tp, its two norms whole (wl_tp_rank_params) */
    double layer_psi = wl_tp_rank_params(&s->model, wl_layer_params(&s->model), 1, p->tp);
    G.layer_grad_bytes = layer_psi * pb;
    G.layer_param_bytes = layer_psi * pb;
    G.emb_grad_bytes = wl_embedding_params(&s->model) / p->tp * pb;
    G.norm_bytes = wl_norm_params(&s->model) * pb; /* whole on every TP rank */
    if (p->lowrank_rank > 0) {
        G.n_lr_layer_gemms = wl_lowrank_get(&s->model, p, false, &G.lr_layer, G.lr_layer_gemms);
        G.n_lr_emb_gemms = wl_lowrank_get(&s->model, p, true, &G.lr_emb, G.lr_emb_gemms);
    }
    if (p->lowrank_rank > 0 || p->topk_ps)
        for (int i = N_COUNT_EP; i < N_COUNT_LR; i++) G.names[i] = wl_graph_name(g, op_names[i]);
    if (wl_grad_buffer_bucket_bytes(p) > 0)
        G.names[N_GRAD_PASSES] = wl_graph_name(g, op_names[N_GRAD_PASSES]);
    if (p->fw.preset == WL_FW_FSDP)
        for (int i = N_FSDP_PRE; i <= N_FSDP_POST; i++) G.names[i] = wl_graph_name(g, op_names[i]);

    size_t slots = (size_t)n_lanes * G.v * G.mstride;
    if (p->pp > 1 && s->model.kind == WL_TRANSFORMER && s->model.tied_embeddings) {
        G.emb_inst = dt_xmalloc((size_t)G.reps * sizeof *G.emb_inst);
        memset(G.emb_inst, 0xff, (size_t)G.reps * sizeof *G.emb_inst);
    }
    G.fsend = dt_xmalloc(slots * sizeof *G.fsend);
    G.bsend = dt_xmalloc(slots * sizeof *G.bsend);
    memset(G.fsend, 0xff, slots * sizeof *G.fsend);
    memset(G.bsend, 0xff, slots * sizeof *G.bsend);
    size_t items_max = (size_t)2 * G.mstride * G.v;
    G.stage_colls = dt_xcalloc((size_t)p->pp, sizeof *G.stage_colls);
    G.n_stage_colls = dt_xcalloc((size_t)p->pp, sizeof *G.n_stage_colls);
    G.cap_stage_colls = dt_xcalloc((size_t)p->pp, sizeof *G.cap_stage_colls);
    item *items = dt_xmalloc(items_max * sizeof *items);
    lane_state L = {0};
    for (int d = 0; d < G.reps; d++) {
        for (int st = 0; st < p->pp; st++) {
            G.dp_rank = d;
            G.stage = st;
            G.m = wl_replica_microbatches(p, d / G.cp); /* replica d / cp, cp of its CP ranks */
            G.coll_cursor = G.ep_cursor = G.edp_cursor = 0;
            int n_items = schedule_items(&G, st, items);
            gen_lane(&G, items, n_items, &L);
        }
    }
    free(L.held);
    free(L.held_expert);
    free(L.held_layers);
    free(L.held_embs);
    free(L.held_norms);
    if (G.moe_split) {
        gtab_free(&G.ep_tab);
        gtab_free(&G.edp_tab);
        free(G.loads);
        free(G.expert_costs);
    }
    for (size_t i = 0; i < G.n_patch; i++) {
        uint32_t *tab = G.patch_kind[i] ? G.bsend : G.fsend;
        uint32_t src = tab[(size_t)G.patch_lane[i] * G.v * G.mstride + (size_t)G.patch_idx[i]];
        DT_ASSERT(src != NONE);
        g->deps[G.patch_slot[i]] = src;
    }
    g->samples_per_step = s->global_batch;
    g->tokens_per_step = s->global_batch * s->model.seq_len;
    g->model_flops_per_step = s->model.kind == WL_SYNTHETIC
                                  ? 3 * s->model.layers * s->model.flops_per_layer *
                                        (s->global_batch / p->micro_batch_size)
                                  : wl_model_flops_per_step(&s->model, s->global_batch);
    g->precision = wl_gpu_precision(p->precision);
    free(items);
    free(ones);
    free(G.vs_first);
    free(G.emb_inst);
    free(G.fsend);
    free(G.bsend);
    for (int st = 0; st < p->pp; st++) free(G.stage_colls[st]);
    free(G.stage_colls);
    free(G.n_stage_colls);
    free(G.cap_stage_colls);
    free(G.patch_slot);
    free(G.patch_kind);
    free(G.patch_lane);
    free(G.patch_idx);
    return g;
}
