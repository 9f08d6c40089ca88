/* scenario.c - reading and validating scenario files (docs/formats.md, "Scenario files").
 *
 * Every key is checked (unknown keys are errors with a did-you-mean) and every error names its
 * JSON path. The topology and GPU values stay raw cJSON: the topology module owns their format.
 * Checks that need the cluster size wait for wl_scenario_resolve().
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtsim/topo.h"
#include "dtsim/workload.h"

#define TRY(x)                                                                              \
    do {                                                                                    \
        int rc_ = (x);                                                                      \
        if (rc_ != DT_OK) return rc_;                                                       \
    } while (0)

static const char *const precision_names[] = {"fp32", "fp16", "bf16", "fp8", "tf32", NULL};
static const char *const optimizer_names[] = {"adam", "sgd", NULL};
static const char *const schedule_names[] = {"gpipe", "1f1b", "interleaved", NULL};
static const char *const ckpt_names[] = {"none", "full", "selective", NULL};
static const char *const kind_names[] = {"transformer", "synthetic", "params", NULL};
static const char *const mlp_names[] = {"gelu", "swiglu", NULL};
static const char *const attention_names[] = {"unfused", "flash", NULL};
static const char *const norm_names[] = {"layernorm", "rmsnorm", NULL};
static const char *const network_names[] = {"flow", "analytic", NULL};
static const char *const jitter_names[] = {"none", "lognormal", "normal", NULL};

const char *wl_schedule_name(wl_schedule_kind k) { return schedule_names[k]; }

static int get_pos_int(const js_ctx *c, const cJSON *o, const char *path, const char *key,
                       bool req, int *out)
{
    long long v = *out;
    TRY(js_get_int(c, o, path, key, req, 1, 1 << 30, &v));
    *out = (int)v;
    return DT_OK;
}

static int parse_model(const js_ctx *c, const cJSON *m, const char *path, wl_model *out)
{
    static const char *const keys[] = {
        "kind", "name", "layers", "hidden", "heads", "seq_len", "vocab", "ffn", "kv_heads",
        "experts", "top_k", "mlp", "tied_embeddings", "forward_time", "backward_time", "params",
        "activation_bytes", "flops_per_layer", "attention", "causal", "attention_dropout",
        "flash_kernel", "expert_ffn", "shared_experts", "capacity_factor", "router_zipf",
        "moe_layer_freq", "router_seed", "head_dim", "norm", NULL};
    TRY(js_expect_object(c, m, path));
    TRY(js_check_keys(c, m, path, keys));
    int kind = WL_TRANSFORMER;
    TRY(js_get_enum(c, m, path, "kind", true, kind_names, &kind));
    out->kind = (wl_model_kind)kind;
    const char *name = NULL;
    TRY(js_get_string(c, m, path, "name", false, &name));
    snprintf(out->name, sizeof out->name, "%s", name ? name : kind_names[kind]);
    /* Keys that belong to another kind are errors rather than silently ignored. */
    static const char *const tf_only[] = {"hidden", "heads", "seq_len", "vocab", "ffn",
                                          "kv_heads", "experts", "top_k", "mlp",
                                          "tied_embeddings", "attention", "causal",
                                          "attention_dropout", "flash_kernel", "expert_ffn", "shared_experts",
                                          "capacity_factor", "router_zipf", "moe_layer_freq",
                                          "router_seed", "head_dim", "norm", NULL};
    static const char *const syn_only[] = {"forward_time", "backward_time", "activation_bytes",
                                           "flops_per_layer", NULL};
    const char *const *foreign[3][2] = {{syn_only, NULL}, {tf_only, NULL}, {tf_only, syn_only}};
    for (int f = 0; f < 2 && foreign[kind][f]; f++)
        for (const char *const *k = foreign[kind][f]; *k; k++)
            if (cJSON_GetObjectItemCaseSensitive(m, *k) &&
                !(kind == WL_SYNTHETIC && !strcmp(*k, "seq_len")))
                return js_fail(c, path, *k, "not a key of a \"%s\" model", kind_names[kind]);

    out->mlp = WL_MLP_GELU;
    out->tied_embeddings = true;
    out->layers = 1;
    if (kind == WL_TRANSFORMER) {
        TRY(get_pos_int(c, m, path, "layers", true, &out->layers));
        TRY(js_get_number(c, m, path, "hidden", true, 1, 1e7, &out->hidden));
        TRY(js_get_number(c, m, path, "heads", true, 1, 1e5, &out->heads));
        TRY(js_get_number(c, m, path, "seq_len", true, 1, 1e8, &out->seq_len));
        TRY(js_get_number(c, m, path, "vocab", true, 1, 1e8, &out->vocab));
        out->ffn = 4 * out->hidden;
        TRY(js_get_number(c, m, path, "ffn", false, 1, 1e8, &out->ffn));
        out->kv_heads = out->heads;
        TRY(js_get_number(c, m, path, "kv_heads", false, 1, out->heads, &out->kv_heads));
        out->experts = 1;
        TRY(js_get_number(c, m, path, "experts", false, 1, 1e5, &out->experts));
        out->top_k = 1;
        TRY(js_get_number(c, m, path, "top_k", false, 1, out->experts, &out->top_k));
        /* mixture of experts (docs/workloads.md, "Expert parallelism") */
        static const char *const moe_keys[] = {"expert_ffn", "shared_experts", "capacity_factor",
                                               "router_zipf", "moe_layer_freq", "router_seed",
                                               NULL};
        if (out->experts < 2)
            for (const char *const *k = moe_keys; *k; k++)
                if (cJSON_GetObjectItemCaseSensitive(m, *k))
                    return js_fail(c, path, *k, "needs a mixture of experts (\"experts\" >= 2), "
                                   "found experts %g", out->experts);
        if (floor(out->experts) != out->experts)
            return js_fail(c, path, "experts", "a whole number, found %g", out->experts);
        if (floor(out->top_k) != out->top_k)
            return js_fail(c, path, "top_k", "a whole number, found %g", out->top_k);
        TRY(js_get_number(c, m, path, "expert_ffn", false, 1, 1e8, &out->expert_ffn));
        TRY(js_get_number(c, m, path, "shared_experts", false, 0, 1e4, &out->shared_experts));
        TRY(js_get_number(c, m, path, "capacity_factor", false, 0, 1e4, &out->capacity_factor));
        TRY(js_get_number(c, m, path, "router_zipf", false, 0, 100, &out->router_zipf));
        if (floor(out->shared_experts) != out->shared_experts)
            return js_fail(c, path, "shared_experts", "a whole number, found %g", out->shared_experts);
        if (out->capacity_factor > 0 && out->capacity_factor < 1)
            return js_fail(c, path, "capacity_factor",
                           "0 (dropless) or at least 1 (an expert takes its balanced share), "
                           "found %g", out->capacity_factor);
        long long freq = 1, rseed = 1;
        TRY(js_get_int(c, m, path, "moe_layer_freq", false, 1, 1 << 20, &freq));
        out->moe_layer_freq = (int)freq;
        TRY(js_get_int(c, m, path, "router_seed", false, 0, (1LL << 53), &rseed));
        out->router_seed = (uint64_t)rseed;
        int mlp = WL_MLP_GELU;
        TRY(js_get_enum(c, m, path, "mlp", false, mlp_names, &mlp));
        out->mlp = (wl_mlp_kind)mlp;
        TRY(js_get_bool(c, m, path, "tied_embeddings", false, &out->tied_embeddings));
        int norm = WL_NORM_LAYERNORM;
        TRY(js_get_enum(c, m, path, "norm", false, norm_names, &norm));
        out->norm = (wl_norm_kind)norm;
        int attn = WL_ATTN_FLASH;
        TRY(js_get_enum(c, m, path, "attention", false, attention_names, &attn));
        out->attention = (wl_attention)attn;
        bool causal = true, dropout = true;
        TRY(js_get_bool(c, m, path, "causal", false, &causal));
        TRY(js_get_bool(c, m, path, "attention_dropout", false, &dropout));
        out->non_causal = !causal;
        out->no_attention_dropout = !dropout;
        int fk = GPU_ATTN_FA2;
        TRY(js_get_enum(c, m, path, "flash_kernel", false, gpu_attn_kernel_names(), &fk));
        out->flash_kernel = (gpu_attn_kernel)fk;
        if (out->attention != WL_ATTN_FLASH && cJSON_GetObjectItemCaseSensitive(m, "flash_kernel"))
            return js_fail(c, path, "flash_kernel", "only with \"attention\": \"flash\"");
        TRY(js_get_number(c, m, path, "head_dim", false, 1, 1e5, &out->head_dim));
        if (out->head_dim > 0 && floor(out->head_dim) != out->head_dim)
            return js_fail(c, path, "head_dim", "a whole number, found %g", out->head_dim);
        /* heads of their own width need not divide the hidden size */
        if (out->head_dim == 0 && floor(out->hidden / out->heads) * out->heads != out->hidden)
            return js_fail(c, path, "heads", "must divide hidden (%g), found %g (or give "
                           "\"head_dim\")", out->hidden, out->heads);
        if (floor(out->heads / out->kv_heads) * out->kv_heads != out->heads)
            return js_fail(c, path, "kv_heads", "must divide heads (%g), found %g", out->heads,
                           out->kv_heads);
        out->params = wl_total_params(out);
        TRY(js_get_number(c, m, path, "params", false, 1, 1e16, &out->params));
    } else if (kind == WL_SYNTHETIC) {
        TRY(get_pos_int(c, m, path, "layers", true, &out->layers));
        TRY(js_get_time(c, m, path, "forward_time", true, &out->t_fwd));
        TRY(js_get_time(c, m, path, "backward_time", true, &out->t_bwd));
        TRY(js_get_number(c, m, path, "params", true, 0, 1e16, &out->params));
        TRY(js_get_quantity(c, m, path, "activation_bytes", UNIT_SIZE, false, false,
                            &out->act_bytes_per_layer));
        TRY(js_get_quantity(c, m, path, "flops_per_layer", UNIT_WORK, false, false,
                            &out->flops_per_layer));
        TRY(js_get_number(c, m, path, "seq_len", false, 1, 1e8, &out->seq_len));
    } else {
        TRY(js_get_number(c, m, path, "params", true, 1, 1e16, &out->params));
        TRY(get_pos_int(c, m, path, "layers", false, &out->layers));
    }
    return DT_OK;
}

static int parse_placement(const js_ctx *c, const cJSON *p, const char *path, wl_plan *out)
{
    const char *s = NULL;
    TRY(js_get_string(c, p, path, "placement", false, &s));
    if (!s) return DT_OK;
    if (!strcmp(s, "bandwidth")) {
        out->place_by_bandwidth = true; /* the map is made once the topology is known */
        return DT_OK;
    }
    char buf[64];
    snprintf(buf, sizeof buf, "%s", s);
    int n = 0, seen = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ') tok++;
        wl_axis a;
        if (!strcmp(tok, "tp")) a = WL_AXIS_TP;
        else if (!strcmp(tok, "pp")) a = WL_AXIS_PP;
        else if (!strcmp(tok, "dp")) a = WL_AXIS_DP;
        else
            return js_fail(c, path, "placement",
                           "expected an order of tp, pp, dp such as \"dp,pp,tp\" "
                           "(outermost first) or \"bandwidth\", found \"%s\"", s);
        if (n >= 3 || (seen & (1 << a)))
            return js_fail(c, path, "placement", "each of tp, pp, dp exactly once, found \"%s\"",
                           s);
        seen |= 1 << a;
        out->placement[n++] = a;
    }
    if (n != 3)
        return js_fail(c, path, "placement", "each of tp, pp, dp exactly once, found \"%s\"", s);
    return DT_OK;
}

static int parse_plan(const js_ctx *c, const cJSON *p, const char *path, wl_plan *out,
                      double *global_batch)
{
    static const char *const keys[] = {
        "dp", "tp", "pp", "ep", "cp", "zero", "schedule", "virtual_stages", "microbatches",
        "micro_batch_size", "gradient_accumulation", "activation_checkpointing",
        "sequence_parallel", "bucket_size", "overlap_dp", "compression", "placement",
        "backup_workers", "staleness", "local_sgd", "stage_layers", "balance", NULL};
    TRY(js_expect_object(c, p, path));
    TRY(js_check_keys(c, p, path, keys));
    TRY(get_pos_int(c, p, path, "dp", false, &out->dp));
    TRY(get_pos_int(c, p, path, "tp", false, &out->tp));
    TRY(get_pos_int(c, p, path, "pp", false, &out->pp));
    TRY(get_pos_int(c, p, path, "ep", false, &out->ep));
    TRY(get_pos_int(c, p, path, "cp", false, &out->cp));
    long long z = 0;
    TRY(js_get_int(c, p, path, "zero", false, 0, 3, &z));
    out->zero = (int)z;
    int sched = out->pp > 1 ? WL_1F1B : WL_GPIPE;
    TRY(js_get_enum(c, p, path, "schedule", false, schedule_names, &sched));
    out->schedule = (wl_schedule_kind)sched;
    TRY(get_pos_int(c, p, path, "virtual_stages", false, &out->virtual_stages));
    if (out->schedule != WL_INTERLEAVED && out->virtual_stages != 1)
        return js_fail(c, path, "virtual_stages", "only with \"schedule\": \"interleaved\"");
    if (out->schedule == WL_INTERLEAVED && !cJSON_GetObjectItemCaseSensitive(p, "virtual_stages"))
        return js_fail(c, path, "virtual_stages",
                       "required with \"schedule\": \"interleaved\" (model chunks per stage)");
    TRY(get_pos_int(c, p, path, "microbatches", false, &out->microbatches));
    int ga = 0;
    TRY(get_pos_int(c, p, path, "gradient_accumulation", false, &ga));
    if (ga && out->microbatches && ga != out->microbatches)
        return js_fail(c, path, "gradient_accumulation",
                       "is the number of microbatches per step and must equal microbatches "
                       "(%d), found %d", out->microbatches, ga);
    if (ga) out->microbatches = ga;
    TRY(get_pos_int(c, p, path, "micro_batch_size", false, &out->micro_batch_size));
    int ck = WL_CKPT_NONE;
    TRY(js_get_enum(c, p, path, "activation_checkpointing", false, ckpt_names, &ck));
    out->checkpointing = (wl_ckpt)ck;
    TRY(js_get_bool(c, p, path, "sequence_parallel", false, &out->sequence_parallel));
    TRY(js_get_quantity(c, p, path, "bucket_size", UNIT_SIZE, false, true, &out->bucket_bytes));
    TRY(js_get_bool(c, p, path, "overlap_dp", false, &out->overlap_dp));
    const cJSON *comp = cJSON_GetObjectItemCaseSensitive(p, "compression");
    if (comp) {
        char cp[JS_PATH_MAX];
        js_path_key(cp, path, "compression");
        static const char *const ckeys[] = {"ratio", "throughput", "method", "rank",
                                            "min_compression_rate", NULL};
        static const char *const methods[] = {"allgather", "sparse_allreduce", "int8", "fp8",
                                              "onebit", "ps", "powersgd", NULL};
        TRY(js_expect_object(c, comp, cp));
        TRY(js_check_keys(c, comp, cp, ckeys));
        int method = 0;
        TRY(js_get_enum(c, comp, cp, "method", false, methods, &method));
        bool topk = method <= 1 || method == 5, lowrank = method == 6;
        if (!lowrank) {
            for (int k = 3; k <= 4; k++)
                if (cJSON_GetObjectItemCaseSensitive(comp, ckeys[k]))
                    return js_fail(c, cp, ckeys[k], "applies to \"powersgd\" only, found method "
                                   "\"%s\"", methods[method]);
        }
        if (!topk) {
            /* quantisation and low rank: no selection */
            if (cJSON_GetObjectItemCaseSensitive(comp, "ratio"))
                return js_fail(c, cp, "ratio", "applies to top-k (allgather, sparse_allreduce, "
                               "ps); \"%s\" sends %s", methods[method],
                               lowrank ? "rank-r factors of every matrix" : "every element quantised");
            if (!lowrank) out->quant_bits = method == 4 ? 1 : 8;
        } else {
            TRY(js_get_number(c, comp, cp, "ratio", true, 1e-9, 1, &out->compression_ratio));
        }
        if (lowrank) {
            long long r = 0;
            TRY(js_get_int(c, comp, cp, "rank", true, 1, 1 << 20, &r));
            out->lowrank_rank = (int)r;
            out->lowrank_min_rate = 2;
            TRY(js_get_number(c, comp, cp, "min_compression_rate", false, 1, 1e9,
                              &out->lowrank_min_rate));
            if (cJSON_GetObjectItemCaseSensitive(comp, "throughput"))
                return js_fail(c, cp, "throughput", "applies to top-k and quantisation; "
                               "\"powersgd\" runs GEMMs timed by the GPU's model");
        }
        TRY(js_get_number(c, comp, cp, "throughput", false, 1, 1e16, &out->topk_throughput));
        out->topk_ps = method == 5;
        out->sparse_allreduce = method == 1;
        if (out->zero > 0)
            return js_fail(c, path, "compression", "gradient compression needs zero 0, found zero %d",
                           out->zero);
    }
    TRY(parse_placement(c, p, path, out));
    const cJSON *sl = cJSON_GetObjectItemCaseSensitive(p, "stage_layers");
    if (sl) {
        char sp[JS_PATH_MAX], ep[JS_PATH_MAX];
        js_path_key(sp, path, "stage_layers");
        TRY(js_expect_array(c, sl, sp));
        int n = cJSON_GetArraySize(sl);
        if (n < 1 || n > 1 << 20)
            return js_fail(c, sp, NULL, "expected 1 to 2^20 entries (one per virtual stage), found %d", n);
        out->stage_layers = dt_xmalloc((size_t)n * sizeof *out->stage_layers);
        out->n_stage_layers = n;
        int i = 0;
        for (const cJSON *e = sl->child; e; e = e->next, i++) {
            js_path_index(ep, sp, i);
            if (!cJSON_IsNumber(e) || e->valuedouble != floor(e->valuedouble) || e->valuedouble < 1 ||
                e->valuedouble > 1 << 30)
                return js_fail(c, ep, NULL, "expected a layer count >= 1, found %s",
                               cJSON_IsNumber(e) ? "a non-integer or < 1" : "a non-number");
            out->stage_layers[i] = (int)e->valuedouble;
        }
    }
    static const char *const balance_names[] = {"none", "speed", NULL};
    int bal = WL_BALANCE_NONE;
    TRY(js_get_enum(c, p, path, "balance", false, balance_names, &bal));
    out->balance = (wl_balance)bal;
    if (out->balance == WL_BALANCE_SPEED && out->stage_layers)
        return js_fail(c, path, "balance",
                       "\"speed\" computes the layers of each stage; it cannot be combined with "
                       "stage_layers (drop one of them)");
    long long k = 0;
    TRY(js_get_int(c, p, path, "backup_workers", false, 0, 1 << 30, &k));
    out->backup_workers = (int)k;
    k = -1;
    TRY(js_get_int(c, p, path, "staleness", false, 0, 1 << 20, &k));
    out->staleness = (int)k;
    k = 0;
    TRY(js_get_int(c, p, path, "local_sgd", false, 1, 1 << 20, &k));
    out->local_sgd = (int)k;
    int modes = (out->backup_workers > 0) + (out->staleness >= 0) + (out->local_sgd > 1);
    if (modes > 1)
        return js_fail(c, path, out->local_sgd > 1 ? "local_sgd" : "staleness",
                       "backup_workers, staleness and local_sgd are different ways to synchronise "
                       "data parallelism: choose one");
    (void)global_batch;
    return DT_OK;
}

static const char *const framework_names[] = {"generic", "megatron", "fsdp", NULL};

const char *wl_framework_name(wl_framework_preset p)
{
    return p >= WL_FW_GENERIC && p <= WL_FW_FSDP ? framework_names[p] : "?";
}

double wl_optimizer_bytes(const wl_plan *p)
{
    if (p->fw.optimizer_bytes > 0) return p->fw.optimizer_bytes;
    if (p->fw.preset == WL_FW_MEGATRON && p->optimizer == WL_ADAM && wl_precision_bytes(p->precision) < 4)
        /* bf16/fp8: 42 less the zeroing of the main_grad buffer, which wl_grad_buffer_bytes
         * charges over the whole buffer, not the shard */
        return wl_megatron_core(p) ? 38 : 54;
    /* Adam reads/writes master, m, v (24) + grad and weight (4); SGD with momentum: master,
     * momentum (16) + grad and weight (4) */
    return p->optimizer == WL_ADAM ? 28 : 20;
}

bool wl_megatron_core(const wl_plan *p)
{
    return p->fw.preset == WL_FW_MEGATRON && p->precision != WL_FP16;
}

/* the element size of Megatron's main_grad buffer: the reduction's dtype */
static double main_grad_bytes(const wl_plan *p)
{
    return p->fw.reduce_bytes > 0 ? p->fw.reduce_bytes : wl_precision_bytes(p->precision);
}

double wl_grad_buffer_bytes(const wl_plan *p)
{
    if (p->fw.grad_buffer_set) return p->fw.grad_buffer_bytes;
    /* Megatron-Core's DistributedDataParallel (core v0.7, param_and_grad_buffer.py): reset()
     * zeroes grad_data (write 1), each bucket's start_grad_sync takes grad_data.norm() for
     * check_for_nan_in_grad (on by default: read 1) and scales it in place by
     * gradient_scaling_factor = 1/d (read 1, write 1; skipped when it is 1, d = 1: d counts
     * the context-parallel ranks too). fp16 runs are Megatron-LM of 2022, whose 54 bytes
     * already zero the buffer (dp 1 there: shard = buffer). */
    if (wl_megatron_core(p))
        return (p->dp * wl_cp(p) > 1 ? 4 : 2) * main_grad_bytes(p);
    return 0;
}

double wl_grad_buffer_bucket_bytes(const wl_plan *p)
{
    /* the norm (read 1) and the scaling (read 1, write 1) of start_grad_sync, per bucket; a
     * grad_buffer_bytes given by the user is not split (all of it stays with the optimizer),
     * nor is anything without buckets (d = 1) */
    if (p->fw.grad_buffer_set || wl_grad_buffer_bytes(p) == 0 || p->dp * wl_cp(p) < 2) return 0;
    return 3 * main_grad_bytes(p);
}

/* Megatron-Core's DDP backward hook on a parameter whose gradient is in param.grad (not
 * already accumulated by its GEMM): param.main_grad.add_(param.grad.data), one kernel reading
 * the 16-bit gradient and reading and writing main_grad (distributed_data_parallel.py,
 * _make_backward_post_hook), per element */
static double ddp_hook_bytes(const wl_plan *p)
{
    return wl_precision_bytes(p->precision) + 2 * main_grad_bytes(p);
}

double wl_embedding_wgrad_bytes(const wl_plan *p, bool tied_here)
{
    double e = wl_precision_bytes(p->precision);
    if (p->fw.preset == WL_FW_FSDP)
        /* PyTorch FSDP (MPT's SharedEmbedding: F.embedding, and F.linear on the same weight for
         * the logits): embedding_dense_backward zero-fills the dense gradient (write e) before
         * its scatter-add; tied on one GPU, autograd sums it with the output layer's weight
         * gradient (read 2e, write e). The flat gradient's concatenation is
         * wl_fsdp_flat_grad_bytes. */
        return e + (tied_here ? 3 * e : 0);
    if (p->fw.preset != WL_FW_MEGATRON) return 0;
    /* F.embedding's backward zero-fills a dense V/t x h gradient (write e) before its
     * scatter-add; the DDP param hook adds it into main_grad (ddp_hook_bytes). Tied on one
     * stage: with gradient-accumulation fusion the output layer's wgrad GEMM accumulates into
     * main_grad and returns torch.zeros (zero_out_wgrad: write e); without it the GEMM returns
     * its 16-bit gradient (written by the GEMM, in its time); either way autograd sums that
     * with the embedding's before the hook (read 2e, write e). */
    double tied = p->fw.grad_accum_unfused ? 3 * e : 4 * e;
    return e + ddp_hook_bytes(p) + (tied_here ? tied : 0);
}

double wl_wgrad_hook_bytes(const wl_plan *p)
{
    /* without the fusion every linear weight's gradient takes the embedding's way: written in
     * 16 bits by its GEMM, added into main_grad by the hook, then freed (param.grad = None) */
    if (p->fw.preset != WL_FW_MEGATRON || !p->fw.grad_accum_unfused) return 0;
    return ddp_hook_bytes(p);
}

double wl_cross_entropy_bytes(const wl_plan *p, bool bwd)
{
    double e = wl_precision_bytes(p->precision);
    if (p->fw.fused_cross_entropy)
        /* flash-attn's cross_entropy_fwd_kernel: one pass over each row with an online softmax
         * (read e), the loss and LSE per row; cross_entropy_bwd_kernel: read the logits and the
         * LSE, write the gradient (e + e) */
        return bwd ? 2 * e : e;
    /* fp32, Megatron's _VocabParallelCrossEntropy kernel by kernel: forward cast (read e,
     * write 4), max (read 4), subtract out of place (4 + 4), exp in place (4 + 4), sum (4),
     * divide in place into the softmax kept for the backward (4 + 4) = e + 36; backward scale
     * by the loss gradient (4 + 4) and cast back (read 4, write e) = 12 + e. Other frameworks
     * run PyTorch's F.cross_entropy, whose kernels are not derived here: they keep the earlier
     * count, e + 32 forward. */
    if (bwd) return 12 + e;
    return (p->fw.preset == WL_FW_MEGATRON ? 36 : 32) + e;
}

double wl_attention_unpad_bytes(const wl_model *m, const wl_plan *p, bool bwd)
{
    if (!p->fw.attention_unpad || m->kind != WL_TRANSFORMER || m->attention != WL_ATTN_FLASH)
        return 0;
    double e = wl_precision_bytes(p->precision), d = wl_head_dim(m);
    double q = m->heads * d / p->tp, kv = (m->kv_heads > 0 ? m->kv_heads : m->heads) * d / p->tp;
    double qkv = q + 2 * kv;
    /* forward: index_first_axis (torch.gather) of q, k and v (read and write each), pad_input's
     * zero-filled output and index_put of the kernel's output (write, read, write) */
    if (!bwd) return e * (2 * qkv + 3 * q);
    /* backward: pad_input's gather of the output gradient (read, write), index_first_axis's
     * zero-filled gradients and scatter_ of dq, dk, dv (write, read, write), and the split of
     * the fused QKV output: its backward concatenates the three (read, write) */
    return e * (2 * q + 3 * qkv + 2 * qkv);
}

double wl_fsdp_flat_grad_bytes(const wl_plan *p)
{
    /* FSDP1's FlatParamHandle gives each module views of the flat parameter (torch.split then
     * view); autograd's SplitWithSizesBackward builds the flat gradient with at::cat: every
     * parameter gradient read once and written once, in the parameter dtype */
    return p->fw.preset == WL_FW_FSDP ? 2 * wl_precision_bytes(p->precision) : 0;
}

double wl_fsdp_predivide(int d)
{
    double f = 1;
    while (d % (int)f == 0 && d / f > f) f *= 2;
    return f;
}

double wl_fsdp_reduce_pre_bytes(const wl_plan *p, double elems, int d)
{
    if (p->fw.preset != WL_FW_FSDP || d < 2 || elems <= 0) return 0;
    double e = wl_precision_bytes(p->precision);
    double r = p->fw.reduce_bytes > 0 ? p->fw.reduce_bytes : e;
    double b = 0;
    if (r != e) b += (e + r) * elems;              /* flat_param.grad.to(reduce_dtype) */
    if (wl_fsdp_predivide(d) > 1) b += 2 * r * elems; /* _div_if_needed(unsharded, predivide) */
    return b;
}

double wl_fsdp_reduce_pass_bytes(const wl_plan *p, double elems, int d, bool accumulate)
{
    if (p->fw.preset != WL_FW_FSDP || d < 2 || elems <= 0) return 0;
    double r = p->fw.reduce_bytes > 0 ? p->fw.reduce_bytes : wl_precision_bytes(p->precision);
    double post = d / wl_fsdp_predivide(d);
    bool sharded = p->zero >= 1;
    double out = sharded ? elems / d : elems; /* what the collective leaves on this GPU */
    double b = wl_fsdp_reduce_pre_bytes(p, elems, d); /* before the reduce-scatter */
    if (post > 1) b += 2 * r * out;         /* _div_if_needed(output, postdivide) */
    if (r != 4) b += (r + 4) * out;         /* _cast_grad_to_param_dtype: the fp32 flat param */
    if (sharded && accumulate) b += 12 * out; /* _saved_grad_shard += new_sharded_grad */
    return b;
}

double wl_fsdp_gather_pass_bytes(const wl_plan *p, double elems, int d)
{
    double e = wl_precision_bytes(p->precision);
    if (p->fw.preset != WL_FW_FSDP || d < 2 || e >= 4) return 0;
    /* FlatParamHandle._use_low_precision_shard: _mp_shard.copy_(_local_shard), fp32 to e */
    return (4 + e) * elems / d;
}

/* "framework": a preset name or {"preset": NAME, option: value, ...}. Each preset's defaults
 * (docs/workloads.md, "Framework behaviour"): what the framework does without extra flags;
 * the options are its flags. The gradient-reduction overlap is plan.overlap_dp
 * ("parallel.overlap_dp", its alias "overlap_grad_reduce" here; both given must agree). */
static int parse_framework(const js_ctx *c, const cJSON *v, const cJSON *parallel, wl_scenario *s)
{
    wl_plan *p = &s->plan;
    wl_framework *fw = &p->fw;
    const cJSON *o = NULL;
    int preset = WL_FW_GENERIC;
    if (cJSON_IsString(v)) {
        int k = -1;
        for (int i = 0; framework_names[i]; i++)
            if (!strcmp(v->valuestring, framework_names[i])) k = i;
        if (k < 0)
            return js_fail(c, "", "framework", "expected generic, megatron or fsdp (or an object "
                           "{\"preset\": ..., options}), found \"%s\"", v->valuestring);
        preset = k;
    } else if (cJSON_IsObject(v)) {
        o = v;
        static const char *const keys[] = {"preset", "overlap_grad_reduce", "overlap_param_gather",
                                           "tp_comm_overlap", "tp_async_backward", "pp_blocking_sends",
                                           "delay_grad_reduce",
                                           "optimizer_bytes", "link_efficiency", "reduce_dtype",
                                           "grad_buffer_bytes", "cross_entropy",
                                           "attention_unpad", "overlap_p2p_comm",
                                           "gradient_accumulation_fusion",
                                           "host_forward_per_layer", "host_backward_per_layer",
                                           NULL};
        TRY(js_check_keys(c, o, "framework", keys));
        TRY(js_get_enum(c, o, "framework", "preset", false, framework_names, &preset));
    } else {
        return js_fail(c, "", "framework", "expected a preset name (generic, megatron, fsdp) or "
                       "an object {\"preset\": ..., options}");
    }
    fw->preset = (wl_framework_preset)preset;
    bool overlap_grad = preset != WL_FW_MEGATRON; /* Megatron: --overlap-grad-reduce is opt-in */
    fw->overlap_param_gather = false;               /* --overlap-param-gather is opt-in */
    fw->tp_comm_overlap = false;                    /* --tp-comm-overlap is opt-in */
    /* Megatron's linear layers (and Transformer Engine's) overlap a column-parallel backward's
     * collectives with its GEMMs, no flag needed (docs/workloads.md, "Tensor parallelism") */
    fw->tp_async_backward = preset == WL_FW_MEGATRON;
    /* Pipeline sends. Megatron-Core (bf16/fp8 runs: the preset's Megatron-Core) posts the
     * interleaved schedule's sends with isend/irecv and waits for them before the next compute
     * of their direction (overlap_p2p_comm, on unless --no-overlap-p2p-communication; and
     * arguments.py turns it off without a virtual pipeline, schedules.py raises for the other
     * schedules); every other exchange waits for its requests before the compute goes on
     * (_communicate's wait_on_reqs), as all of Megatron-LM of 2022 did (fp16 runs: its
     * schedules.py has no overlap). docs/workloads.md, "Framework behaviour". */
    bool interleaved = p->schedule == WL_INTERLEAVED && p->pp > 1 && p->virtual_stages > 1;
    fw->overlap_p2p_comm = wl_megatron_core(p) && interleaved;
    bool blocking_set = false, overlap_set = false;
    /* Megatron-Core: --no-delay-grad-reduce (store_false) is opt-out ("delay / synchronize grad
     * reductions in all but first PP stage") */
    fw->delay_grad_reduce = preset == WL_FW_MEGATRON;
    fw->optimizer_bytes = 0;
    fw->grad_buffer_set = false;
    fw->fused_cross_entropy = false; /* every preset: PyTorch's loss over fp32 logits */
    fw->attention_unpad = false;
    fw->grad_accum_unfused = false; /* Megatron: --no-gradient-accumulation-fusion is opt-out */
    fw->host_fwd = fw->host_bwd = 0; /* no host floor: a question a user asks, not a preset's */
    /* Megatron-LM reduces bf16 gradients in fp32: arguments.py sets
     * accumulate_allreduce_grads_in_fp32 for bf16 unless --grad-reduce-in-bf16 is given
     * (reduce_dtype "bf16" says that); an fp8 run is a --bf16 run whose GEMMs Transformer Engine
     * runs in fp8 (--fp8-format needs bf16 parameters), so it reduces in fp32 too (fp32 and tf32
     * runs: 4 bytes is their own precision); fp16 runs, Megatron-LM of 2022, reduce in fp16 */
    fw->reduce_bytes = wl_megatron_core(p) ? 4 : 0;
    if (preset != WL_FW_GENERIC) {
        /* both run their collectives on NCCL */
        s->env.link_nvlink = TOPO_NCCL_NVLINK_EFFICIENCY;
        s->env.link_network = TOPO_NCCL_NETWORK_EFFICIENCY;
    }
    const cJSON *od = parallel ? cJSON_GetObjectItemCaseSensitive(parallel, "overlap_dp") : NULL;
    if (o) {
        const cJSON *og = cJSON_GetObjectItemCaseSensitive(o, "overlap_grad_reduce");
        if (og) {
            TRY(js_get_bool(c, o, "framework", "overlap_grad_reduce", false, &overlap_grad));
            if (od && cJSON_IsBool(od) && cJSON_IsTrue(od) != overlap_grad)
                return js_fail(c, "framework", "overlap_grad_reduce",
                               "disagrees with parallel.overlap_dp (the same switch): give one");
        }
        TRY(js_get_bool(c, o, "framework", "overlap_param_gather", false, &fw->overlap_param_gather));
        TRY(js_get_bool(c, o, "framework", "tp_comm_overlap", false, &fw->tp_comm_overlap));
        TRY(js_get_bool(c, o, "framework", "tp_async_backward", false, &fw->tp_async_backward));
        blocking_set = cJSON_GetObjectItemCaseSensitive(o, "pp_blocking_sends") != NULL;
        overlap_set = cJSON_GetObjectItemCaseSensitive(o, "overlap_p2p_comm") != NULL;
        TRY(js_get_bool(c, o, "framework", "pp_blocking_sends", false, &fw->pp_blocking_sends));
        TRY(js_get_bool(c, o, "framework", "overlap_p2p_comm", false, &fw->overlap_p2p_comm));
        if (blocking_set && overlap_set && fw->pp_blocking_sends && fw->overlap_p2p_comm &&
            interleaved)
            return js_fail(c, "framework", "overlap_p2p_comm",
                           "contradicts pp_blocking_sends true: an overlapped send does not block "
                           "the compute after it; give one");
        TRY(js_get_bool(c, o, "framework", "delay_grad_reduce", false, &fw->delay_grad_reduce));
        TRY(js_get_number(c, o, "framework", "optimizer_bytes", false, 1, 1e4, &fw->optimizer_bytes));
        if (cJSON_GetObjectItemCaseSensitive(o, "grad_buffer_bytes")) {
            TRY(js_get_number(c, o, "framework", "grad_buffer_bytes", true, 0, 1e4,
                              &fw->grad_buffer_bytes));
            fw->grad_buffer_set = true;
        }
        /* the dtype gradients are reduced in (PyTorch FSDP MixedPrecision.reduce_dtype; Composer's
         * mixed_precision DEFAULT reduces in fp32 under bf16 autocast) */
        int rd = -1;
        TRY(js_get_enum(c, o, "framework", "reduce_dtype", false, precision_names, &rd));
        if (rd >= 0) fw->reduce_bytes = wl_precision_bytes((wl_precision)rd);
        /* the loss kernel (llm-foundry's ComposerMPTCausalLM: loss_fn fused_crossentropy by
         * default, flash-attn's fused kernel) */
        static const char *const ce_names[] = {"fp32", "fused", NULL};
        int ce = -1;
        TRY(js_get_enum(c, o, "framework", "cross_entropy", false, ce_names, &ce));
        if (ce >= 0) fw->fused_cross_entropy = ce == 1;
        TRY(js_get_bool(c, o, "framework", "attention_unpad", false, &fw->attention_unpad));
        bool fused = true;
        TRY(js_get_bool(c, o, "framework", "gradient_accumulation_fusion", false, &fused));
        /* the other presets keep no main_grad buffer for a hook to add into: generic charges
         * no accumulation, FSDP's is its flat gradient and sharded passes */
        if (!fused && preset != WL_FW_MEGATRON)
            return js_fail(c, "framework", "gradient_accumulation_fusion",
                           "false is Megatron's --no-gradient-accumulation-fusion: only with the "
                           "megatron preset, found preset \"%s\"", framework_names[preset]);
        fw->grad_accum_unfused = !fused;
        /* the host's dispatch time of one layer's forward and backward (docs/workloads.md,
         * "Host dispatch floor"): times with units, >= 0 */
        TRY(js_get_time(c, o, "framework", "host_forward_per_layer", false, &fw->host_fwd));
        TRY(js_get_time(c, o, "framework", "host_backward_per_layer", false, &fw->host_bwd));
        const cJSON *le = cJSON_GetObjectItemCaseSensitive(o, "link_efficiency");
        if (le) {
            if (cJSON_IsString(le)) {
                char why[256];
                if (strcmp(le->valuestring, "nccl") && strcmp(le->valuestring, "line"))
                    return js_fail(c, "framework", "link_efficiency",
                                   "expected \"nccl\", \"line\" or {\"nvlink\": f, \"network\": f}, "
                                   "found \"%s\"", le->valuestring);
                int prc = topo_link_efficiency_parse(le->valuestring, &s->env.link_nvlink,
                                                     &s->env.link_network, why, sizeof why);
                DT_ASSERT(prc == DT_OK);
                (void)prc;
            } else {
                static const char *const lk[] = {"nvlink", "network", NULL};
                TRY(js_expect_object(c, le, "framework.link_efficiency"));
                TRY(js_check_keys(c, le, "framework.link_efficiency", lk));
                s->env.link_nvlink = s->env.link_network = 1;
                TRY(js_get_number(c, le, "framework.link_efficiency", "nvlink", false, 1e-3, 1,
                                  &s->env.link_nvlink));
                TRY(js_get_number(c, le, "framework.link_efficiency", "network", false, 1e-3, 1,
                                  &s->env.link_network));
            }
        }
    }
    if (!od) p->overlap_dp = overlap_grad;
    /* like arguments.py, overlap_p2p_comm is off outside the interleaved schedule; where it is
     * on, sends do not block unless pp_blocking_sends says so (which then wins) */
    if (!interleaved) fw->overlap_p2p_comm = false;
    if (!blocking_set) fw->pp_blocking_sends = preset == WL_FW_MEGATRON && !fw->overlap_p2p_comm;
    if (fw->pp_blocking_sends) fw->overlap_p2p_comm = false;
    return DT_OK;
}

static int parse_faults(const js_ctx *c, const cJSON *j, wl_scenario *s)
{
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(j, "stragglers");
    if (st) {
        TRY(js_expect_array(c, st, "stragglers"));
        int n = cJSON_GetArraySize(st);
        s->env.stragglers = dt_xcalloc((size_t)n + 1, sizeof *s->env.stragglers);
        int i = 0;
        for (const cJSON *e = st->child; e; e = e->next, i++) {
            char p[JS_PATH_MAX];
            js_path_index(p, "stragglers", i);
            static const char *const keys[] = {"gpu", "slowdown", NULL};
            TRY(js_expect_object(c, e, p));
            TRY(js_check_keys(c, e, p, keys));
            long long g = 0;
            TRY(js_get_int(c, e, p, "gpu", true, 0, 1 << 30, &g));
            s->env.stragglers[i].gpu = (int)g;
            TRY(js_get_number(c, e, p, "slowdown", true, 1e-3, 1e6,
                              &s->env.stragglers[i].slowdown));
            s->env.n_stragglers = i + 1;
        }
    }
    const cJSON *ji = cJSON_GetObjectItemCaseSensitive(j, "jitter");
    if (ji) {
        static const char *const keys[] = {"distribution", "sigma", NULL};
        TRY(js_expect_object(c, ji, "jitter"));
        TRY(js_check_keys(c, ji, "jitter", keys));
        int d = WL_JITTER_LOGNORMAL;
        TRY(js_get_enum(c, ji, "jitter", "distribution", false, jitter_names, &d));
        s->env.jitter = (wl_jitter_kind)d;
        TRY(js_get_number(c, ji, "jitter", "sigma", d != WL_JITTER_NONE, 0, 10,
                          &s->env.jitter_sigma));
    }
    const cJSON *dl = cJSON_GetObjectItemCaseSensitive(j, "degraded_links");
    if (dl) {
        TRY(js_expect_array(c, dl, "degraded_links"));
        int n = cJSON_GetArraySize(dl);
        s->env.degraded = dt_xcalloc((size_t)n + 1, sizeof *s->env.degraded);
        int i = 0;
        for (const cJSON *e = dl->child; e; e = e->next, i++) {
            char p[JS_PATH_MAX], lp[JS_PATH_MAX];
            js_path_index(p, "degraded_links", i);
            static const char *const keys[] = {"link", "bandwidth_factor", NULL};
            TRY(js_expect_object(c, e, p));
            TRY(js_check_keys(c, e, p, keys));
            wl_degraded_link *d = &s->env.degraded[i];
            TRY(js_get_number(c, e, p, "bandwidth_factor", true, 1e-6, 1, &d->bandwidth_factor));
            const cJSON *l = cJSON_GetObjectItemCaseSensitive(e, "link");
            js_path_key(lp, p, "link");
            d->index = -1;
            if (!l) return js_fail(c, p, "link", "required: a link index or {\"src\", \"dst\"}");
            if (cJSON_IsNumber(l)) {
                if (l->valuedouble < 0 || l->valuedouble != floor(l->valuedouble) ||
                    l->valuedouble > 1e9)
                    return js_fail(c, lp, NULL, "expected a link index >= 0, found %g",
                                   l->valuedouble);
                d->index = (int)l->valuedouble;
            } else {
                static const char *const lkeys[] = {"src", "dst", NULL};
                TRY(js_expect_object(c, l, lp));
                TRY(js_check_keys(c, l, lp, lkeys));
                const char *a = NULL, *b = NULL;
                TRY(js_get_string(c, l, lp, "src", true, &a));
                TRY(js_get_string(c, l, lp, "dst", true, &b));
                snprintf(d->src, sizeof d->src, "%s", a);
                snprintf(d->dst, sizeof d->dst, "%s", b);
            }
            s->env.n_degraded = i + 1;
        }
    }
    return DT_OK;
}

static int parse_all(const js_ctx *c, const cJSON *j, wl_scenario *s)
{
    static const char *const keys[] = {"name", "description", "topology", "gpu", "model",
                                       "parallel", "global_batch", "precision", "optimizer",
                                       "options", "stragglers", "jitter", "degraded_links",
                                       "seed", "sweep", "failures", "checkpoint", "storage",
                                       "input", "framework", "federated", NULL};
    /* "sweep" belongs to `dtsim sweep` (reports/sweep_spec.c validates it); a single run is the
     * scenario as written, so it is allowed here and not read. */
    TRY(js_expect_object(c, j, ""));
    TRY(js_check_keys(c, j, "", keys));
    const char *name = NULL, *desc = NULL;
    TRY(js_get_string(c, j, "", "name", false, &name));
    TRY(js_get_string(c, j, "", "description", false, &desc));
    snprintf(s->name, sizeof s->name, "%s", name ? name : "");
    s->topology = cJSON_GetObjectItemCaseSensitive(j, "topology");
    if (!s->topology)
        return js_fail(c, "", "topology",
                       "required: a topology file name, an inline topology or a generator "
                       "such as {\"generator\": \"dgx\", \"nodes\": 2}");
    s->gpu = cJSON_GetObjectItemCaseSensitive(j, "gpu");
    /* read by `dtsim federated` (federated.c, once the topology is known) */
    s->federated = cJSON_GetObjectItemCaseSensitive(j, "federated");
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "model");
    if (!m) return js_fail(c, "", "model", "required: the model to train");
    TRY(parse_model(c, m, "model", &s->model));
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(j, "parallel");
    if (p) TRY(parse_plan(c, p, "parallel", &s->plan, &s->global_batch));
    TRY(js_get_number(c, j, "", "global_batch", false, 1, 1e12, &s->global_batch));
    int pr = WL_BF16, op = WL_ADAM;
    TRY(js_get_enum(c, j, "", "precision", false, precision_names, &pr));
    TRY(js_get_enum(c, j, "", "optimizer", false, optimizer_names, &op));
    s->plan.precision = (wl_precision)pr;
    s->plan.optimizer = (wl_optimizer)op;
    const cJSON *fwv = cJSON_GetObjectItemCaseSensitive(j, "framework");
    if (fwv) TRY(parse_framework(c, fwv, p, s));
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(j, "options");
    bool lib_set = false;
    if (o) {
        static const char *const okeys[] = {"network", "calibration", "dp_algorithm",
                                            "ring_model", "ps_servers", "memory_headroom",
                                            "calibration_fit", "comm_contention",
                                            "collective_library", NULL};
        TRY(js_expect_object(c, o, "options"));
        TRY(js_check_keys(c, o, "options", okeys));
        int nm = NET_FLOW;
        TRY(js_get_enum(c, o, "options", "network", false, network_names, &nm));
        s->env.network = (net_mode)nm;
        const char *algo = NULL;
        TRY(js_get_string(c, o, "options", "dp_algorithm", false, &algo));
        if (algo && coll_algo_parse(algo, &s->env.dp_algorithm) != DT_OK)
            return js_fail(c, "options", "dp_algorithm",
                           "expected auto, ring, tree, dbt, hd, direct, hier, ps, fastest, estimate "
                           "or rule, found \"%s\"",
                           algo);
        const char *lib = NULL;
        TRY(js_get_string(c, o, "options", "collective_library", false, &lib));
        if (lib && coll_library_parse(lib, &s->env.coll_library) != DT_OK)
            return js_fail(c, "options", "collective_library", "expected nccl or any, found \"%s\"",
                           lib);
        lib_set = lib != NULL;
        long long servers = 0;
        TRY(js_get_int(c, o, "options", "ps_servers", false, 1, 1 << 22, &servers));
        if (servers && s->env.dp_algorithm != COLL_PS && s->env.dp_algorithm != COLL_FASTEST)
            return js_fail(c, "options", "ps_servers",
                           "parameter servers apply to \"dp_algorithm\": \"ps\" only (or \"fastest\", "
                           "which may pick ps), found dp_algorithm \"%s\"",
                           coll_algo_name(s->env.dp_algorithm));
        s->env.ps_servers = (int)servers;
        const char *rm = NULL;
        TRY(js_get_string(c, o, "options", "ring_model", false, &rm));
        if (rm && coll_ring_model_parse(rm, &s->env.ring_model) != DT_OK)
            return js_fail(c, "options", "ring_model", "expected steps, fluid, auto or exact, found \"%s\"",
                           rm);
        /* what the planner keeps free of each GPU's memory (fragmentation, NCCL buffers, the
         * CUDA context): a fraction in [0, 0.9] */
        if (cJSON_GetObjectItemCaseSensitive(o, "memory_headroom"))
            TRY(js_get_number(c, o, "options", "memory_headroom", false, 0, 0.9,
                              &s->memory_headroom));
        const char *cal = NULL;
        TRY(js_get_string(c, o, "options", "calibration", false, &cal));
        if (cal && !cal[0])
            return js_fail(c, "options", "calibration", "expected a calibration file name, "
                                                        "found \"\"");
        if (cal && strlen(cal) >= sizeof s->calibration)
            return js_fail(c, "options", "calibration", "a file name of at most %zu bytes, "
                           "found %zu", sizeof s->calibration - 1, strlen(cal));
        if (cal) snprintf(s->calibration, sizeof s->calibration, "%s", cal);
        const char *fit = NULL;
        TRY(js_get_string(c, o, "options", "calibration_fit", false, &fit));
        if (fit && !cal)
            return js_fail(c, "options", "calibration_fit",
                           "chooses among the fits of options.calibration, which is not given");
        if (fit && (!fit[0] || strlen(fit) >= sizeof s->calibration_fit))
            return js_fail(c, "options", "calibration_fit",
                           "expected fit names such as \"mpi_allreduce\" (comma-separated, one per "
                           "scope), found \"%.40s\"", fit);
        if (fit) snprintf(s->calibration_fit, sizeof s->calibration_fit, "%s", fit);
        TRY(wl_comm_contention_parse(c, o, "options", &s->env));
    }
    /* Megatron-LM and PyTorch FSDP run their collectives through NCCL (torch.distributed's
     * GPU backend): `auto` chooses among NCCL's algorithms. No framework: a generic or
     * decentralised setting, whatever the fabric allows. */
    if (!lib_set) s->env.coll_library = s->plan.fw.preset != WL_FW_GENERIC ? COLL_LIB_NCCL : COLL_LIB_ANY;
    TRY(parse_faults(c, j, s));
    TRY(gp_parse(c, j, &s->failures, &s->checkpoint, &s->storage, &s->input));
    long long seed = (long long)s->env.seed;
    TRY(js_get_int(c, j, "", "seed", false, 0, (1LL << 53), &seed));
    s->env.seed = (uint64_t)seed;
    return DT_OK;
}

/* "comm_contention" of obj (options, a trace's environment): true (the default), false, or
 * {"sms": N}, the SMs one collective's kernels hold. */
int wl_comm_contention_parse(const js_ctx *c, const cJSON *obj, const char *path, wl_env *env)
{
    const cJSON *cn = cJSON_GetObjectItemCaseSensitive(obj, "comm_contention");
    if (!cn) return DT_OK;
    if (cJSON_IsBool(cn)) {
        env->no_contention = cJSON_IsFalse(cn);
        return DT_OK;
    }
    char buf[64], sub[JS_PATH_MAX];
    if (!cJSON_IsObject(cn))
        return js_fail(c, path, "comm_contention",
                       "expected true, false or an object {\"sms\": N}, found %s",
                       js_describe(cn, buf, sizeof buf));
    static const char *const keys[] = {"sms", NULL};
    js_path_key(sub, path, "comm_contention");
    TRY(js_check_keys(c, cn, sub, keys));
    long long sms = 0;
    TRY(js_get_int(c, cn, sub, "sms", true, 1, 1024, &sms));
    env->contention_sms = (int)sms;
    return DT_OK;
}

int wl_scenario_parse(const js_ctx *ctx, const cJSON *j, wl_scenario *s)
{
    memset(s, 0, sizeof *s);
    s->env.ring_model = COLL_RING_AUTO;
    s->file = ctx->file;
    s->plan = (wl_plan){.dp = 0, .tp = 1, .pp = 1, .ep = 1, .cp = 1, .virtual_stages = 1, .micro_batch_size = 1,
                        .schedule = WL_GPIPE, .precision = WL_BF16, .bucket_bytes = 25e6,
                        .overlap_dp = true, .topk_throughput = 0, .staleness = -1,
                        .placement = {WL_AXIS_DP, WL_AXIS_PP, WL_AXIS_TP}};
    s->env.network = NET_FLOW;
    s->env.seed = 1;
    s->memory_headroom = -1;
    int rc = parse_all(ctx, j, s);
    if (rc != DT_OK) wl_scenario_free(s);
    return rc;
}

void wl_scenario_free(wl_scenario *s)
{
    if (!s) return;
    free(s->env.stragglers);
    free(s->env.degraded);
    free(s->plan.stage_layers);
    free(s->plan.replica_microbatches);
    s->plan.replica_microbatches = NULL;
    free(s->plan.gpu_map);
    s->plan.gpu_map = NULL;
    s->plan.stage_layers = NULL;
    s->plan.n_stage_layers = 0;
    s->env.stragglers = NULL;
    s->env.degraded = NULL;
    s->env.n_stragglers = s->env.n_degraded = 0;
}

/* What expert and context parallelism need of the model and plan, and what they do not
 * (yet) combine with; docs/workloads.md. */
static int check_ep_cp(const js_ctx *c, const wl_scenario *s)
{
    const wl_plan *p = &s->plan;
    const wl_model *m = &s->model;
    int ep = wl_ep(p), cp = wl_cp(p);
    const char *key = ep > 1 ? "ep" : "cp";
    if (ep == 1 && cp == 1) return DT_OK;
    if (m->kind != WL_TRANSFORMER)
        return js_fail(c, "parallel", key, "needs a \"transformer\" model, found \"%s\"",
                       m->kind == WL_SYNTHETIC ? "synthetic" : "params");
    if (ep > 1) {
        if (m->experts < 2 || fmod(m->experts, ep) != 0)
            return js_fail(c, "parallel", "ep",
                           "must divide the model's experts (%g; at least 2), found %d",
                           m->experts, ep);
        if (p->dp % ep)
            return js_fail(c, "parallel", "ep",
                           "must divide dp (%d): expert-parallel ranks are data-parallel ranks "
                           "(Megatron-Core), found %d", p->dp, ep);
    }
    if (cp > 1) {
        if (m->attention != WL_ATTN_FLASH)
            return js_fail(c, "model", "attention",
                           "context parallelism needs \"flash\" (ring attention runs fused "
                           "kernels on KV blocks), found \"unfused\"");
        if (fmod(m->seq_len, 2.0 * cp) != 0)
            return js_fail(c, "parallel", "cp",
                           "2 x cp must divide seq_len (%g): the sequence is split in 2 cp "
                           "chunks, two per rank, to balance the causal mask, found cp %d",
                           m->seq_len, cp);
    }
    if (p->compression_ratio > 0 || p->lowrank_rank > 0)
        return js_fail(c, "parallel", "compression", "not modelled with %s > 1", key);
    if (p->backup_workers > 0 || p->staleness >= 0 || p->local_sgd > 1)
        return js_fail(c, "parallel",
                       p->backup_workers > 0 ? "backup_workers"
                                             : (p->staleness >= 0 ? "staleness" : "local_sgd"),
                       "not modelled with %s > 1", key);
    return DT_OK;
}

int wl_scenario_resolve(const js_ctx *c, wl_scenario *s, int n_gpus)
{
    wl_plan *p = &s->plan;
    /* tp, pp, dp are each <= 2^30: their products are taken in long long / double, an int
     * (or a long long for all three) overflows on {"tp": 65536, "pp": 65536}. */
    long long tpp = (long long)p->tp * p->pp;
    if (wl_cp(p) > 1) {
        /* context parallelism takes its GPUs beside TP: dp x tp x pp x cp (each <= 2^30: the
         * product of three can overflow a long long, so it is checked in double first) */
        if ((double)tpp * wl_cp(p) > n_gpus)
            return js_fail(c, "parallel", NULL,
                           "tp x pp x cp = %.17g must divide the topology's %d GPUs",
                           (double)tpp * wl_cp(p), n_gpus);
        tpp *= wl_cp(p);
        if (p->dp == 0) {
            if (n_gpus % tpp)
                return js_fail(c, "parallel", NULL,
                               "tp x pp x cp = %lld must divide the topology's %d GPUs", tpp, n_gpus);
            p->dp = (int)(n_gpus / tpp);
        }
        if ((double)p->dp * (double)tpp != n_gpus)
            return js_fail(c, "parallel", NULL,
                           "dp x tp x pp x cp = %d x %d x %d x %d = %.17g must equal the "
                           "topology's %d GPUs", p->dp, p->tp, p->pp, p->cp,
                           (double)p->dp * (double)tpp, n_gpus);
    }
    if (p->dp == 0) {
        if (n_gpus % tpp)
            return js_fail(c, "parallel", NULL,
                           "tp x pp = %lld must divide the topology's %d GPUs", tpp, n_gpus);
        p->dp = (int)(n_gpus / tpp);
    }
    if ((double)p->dp * (double)tpp != n_gpus)
        return js_fail(c, "parallel", NULL,
                       "dp x tp x pp = %d x %d x %d = %.17g must equal the topology's %d GPUs",
                       p->dp, p->tp, p->pp, (double)p->dp * (double)tpp, n_gpus);
    TRY(check_ep_cp(c, s));
    double per_step = (double)p->dp * p->micro_batch_size;
    if (p->microbatches == 0) {
        if (s->global_batch > 0) {
            double m = s->global_batch / per_step;
            if (m != floor(m) || m < 1)
                return js_fail(c, "", "global_batch",
                               "must be a multiple of dp x micro_batch_size = %g, found %g",
                               per_step, s->global_batch);
            if (m > 1 << 30)
                return js_fail(c, "", "global_batch",
                               "gives %g microbatches of dp x micro_batch_size = %g, at most "
                               "2^30 per step, found %g", m, per_step, s->global_batch);
            p->microbatches = (int)m;
        } else {
            p->microbatches = p->pp;
        }
    }
    if (s->global_batch == 0) s->global_batch = per_step * p->microbatches;
    if (s->global_batch != per_step * p->microbatches)
        return js_fail(c, "", "global_batch",
                       "must equal dp x micro_batch_size x microbatches = %g, found %g",
                       per_step * p->microbatches, s->global_batch);
    long long chunks = (long long)p->pp * p->virtual_stages;
    if (p->stage_layers) {
        if (p->n_stage_layers != chunks)
            return js_fail(c, "parallel", "stage_layers",
                           "needs one entry per virtual stage: pp x virtual_stages = %lld, "
                           "found %d", chunks, p->n_stage_layers);
        long long sum = 0;
        for (int i = 0; i < p->n_stage_layers; i++) sum += p->stage_layers[i];
        if (s->model.kind != WL_PARAMS && sum != s->model.layers)
            return js_fail(c, "parallel", "stage_layers",
                           "must sum to the model's layers (%d), found %lld", s->model.layers, sum);
    } else if (s->model.kind != WL_PARAMS) {
        if (s->model.layers < chunks)
            return js_fail(c, "model", "layers",
                           "must be at least pp x virtual_stages = %lld (a layer per virtual "
                           "stage), found %d", chunks, s->model.layers);
        p->stage_layers = dt_xmalloc((size_t)chunks * sizeof *p->stage_layers);
        p->n_stage_layers = (int)chunks;
        wl_default_stage_layers(s->model.layers, (int)chunks, p->stage_layers);
    }
    if (p->schedule == WL_INTERLEAVED && p->microbatches % p->pp)
        return js_fail(c, "parallel", "microbatches",
                       "the interleaved schedule needs a multiple of pp (%d), found %d", p->pp,
                       p->microbatches);
    if (s->model.kind == WL_TRANSFORMER) {
        if (fmod(s->model.heads, p->tp) != 0 || fmod(s->model.kv_heads, p->tp) != 0)
            return js_fail(c, "parallel", "tp",
                           "must divide the model's heads (%g) and kv_heads (%g), found %d",
                           s->model.heads, s->model.kv_heads, p->tp);
    }
    if (p->topk_throughput == 0) p->topk_throughput = 2e10; /* elements/s, docs/workloads.md */
    if (p->topk_ps && s->env.dp_algorithm != COLL_PS)
        return js_fail(c, "parallel.compression", "method",
                       "\"ps\" pushes to and pulls from the parameter servers of "
                       "\"options\": {\"dp_algorithm\": \"ps\"} (with ps_servers), found "
                       "dp_algorithm \"%s\"", coll_algo_name(s->env.dp_algorithm));
    if (p->lowrank_rank > 0 && (s->model.kind != WL_TRANSFORMER || s->model.experts > 1))
        return js_fail(c, "parallel.compression", "method",
                       "\"powersgd\" needs the weight matrices' shapes: a dense transformer "
                       "model, found %s", s->model.kind != WL_TRANSFORMER ? "a model without "
                       "layer shapes" : "a mixture of experts");
    if (p->backup_workers > 0) {
        if (p->backup_workers >= p->dp)
            return js_fail(c, "parallel", "backup_workers",
                           "must be below dp (%d): at least one replica's gradients are kept, "
                           "found %d", p->dp, p->backup_workers);
        if (p->pp > 1)
            return js_fail(c, "parallel", "backup_workers",
                           "needs pp 1 (a replica is dropped as a whole; with a pipeline its "
                           "stages would decide apart), found pp %d", p->pp);
    }
    if (p->balance == WL_BALANCE_SPEED && p->zero >= 2 && p->dp > 1)
        return js_fail(c, "parallel", "balance",
                       "\"speed\" gives replicas different microbatches; ZeRO-%d reduces "
                       "gradients every microbatch, which needs the same count on every replica: "
                       "use zero 0 or 1", p->zero);
    if (p->balance == WL_BALANCE_SPEED && (wl_cp(p) > 1 || wl_ep(p) > 1))
        return js_fail(c, "parallel", "balance",
                       "\"speed\" balances pipeline stages and data-parallel replicas; it does not "
                       "yet split work over context- or expert-parallel ranks (cp %d, ep %d): use "
                       "cp 1 and ep 1, or no balancing", wl_cp(p), wl_ep(p));
    if (p->balance == WL_BALANCE_SPEED && p->backup_workers > 0 && p->dp > 1)
        return js_fail(c, "parallel", "balance",
                       "\"speed\" gives replicas different microbatches; backup workers drop "
                       "whole replicas and count samples as if they were equal: choose one");
    if ((p->staleness >= 0 || p->local_sgd > 1) && p->zero > 0)
        return js_fail(c, "parallel", p->staleness >= 0 ? "staleness" : "local_sgd",
                       "needs zero 0: every replica keeps its own optimizer state between "
                       "synchronisations, found zero %d", p->zero);
    if ((p->staleness >= 0 || p->local_sgd > 1) && p->dp < 2)
        return js_fail(c, "parallel", p->staleness >= 0 ? "staleness" : "local_sgd",
                       "needs data parallelism (dp > 1), found dp %d", p->dp);
    if (p->sequence_parallel && p->tp == 1)
        return js_fail(c, "parallel", "sequence_parallel", "needs tp > 1");
    for (int i = 0; i < s->env.n_stragglers; i++)
        if (s->env.stragglers[i].gpu >= n_gpus) {
            char path[JS_PATH_MAX];
            js_path_index(path, "stragglers", i);
            return js_fail(c, path, "gpu", "the topology has GPUs 0..%d, found %d", n_gpus - 1,
                           s->env.stragglers[i].gpu);
        }
    return wl_check_straggler_product(c, &s->env, n_gpus, "stragglers");
}

int wl_check_straggler_product(const js_ctx *c, const wl_env *env, int n_gpus,
                               const char *list_path)
{
    /* Entries for one GPU multiply (run.c); the product must stay within the range one entry
     * may have, or two entries of 10^6 would make a GPU 10^12 times slower. */
    if (env->n_stragglers < 2 || n_gpus < 1) return DT_OK;
    double *prod = dt_xmalloc((size_t)n_gpus * sizeof *prod);
    for (int g = 0; g < n_gpus; g++) prod[g] = 1;
    int rc = DT_OK;
    for (int i = 0; i < env->n_stragglers && !rc; i++) {
        int g = env->stragglers[i].gpu;
        if (g < 0 || g >= n_gpus) continue;
        prod[g] *= env->stragglers[i].slowdown;
        if (prod[g] < 1e-3 || prod[g] > 1e6) {
            char path[JS_PATH_MAX];
            js_path_index(path, list_path, i);
            rc = js_fail(c, path, "slowdown", "GPU %d's slowdowns multiply to %g: the product "
                         "of the entries for one GPU must lie from 0.001 to 10^6", g, prod[g]);
        }
    }
    free(prod);
    return rc;
}

void wl_default_stage_layers(int layers, int n, int *out)
{
    int each = (layers + n - 1) / n, surplus = each * n - layers; /* 0 <= surplus < n */
    for (int i = 0; i < n; i++) out[i] = each;
    /* ends inward: last, first, second-to-last, second, ... */
    for (int k = 0; k < surplus; k++) out[k % 2 ? k / 2 : n - 1 - k / 2]--;
}

int wl_replica_microbatches(const wl_plan *p, int d)
{
    return p->replica_microbatches ? p->replica_microbatches[d] : p->microbatches;
}

int wl_max_replica_microbatches(const wl_plan *p)
{
    int m = p->microbatches;
    if (p->replica_microbatches)
        for (int d = 0; d < p->dp; d++)
            if (p->replica_microbatches[d] > m) m = p->replica_microbatches[d];
    return m;
}

int wl_pipeline_warmup(const wl_plan *p, int stage, int m)
{
    int pp = p->pp, v = p->virtual_stages;
    if (p->schedule != WL_INTERLEAVED) return m < pp - stage - 1 ? m : pp - stage - 1;
    int total = m * v;
    /* Megatron-LM of 2022 (the preset under fp16): every forward first when m is pp */
    if (m == pp && p->fw.preset == WL_FW_MEGATRON && !wl_megatron_core(p)) return total;
    int warm = (pp - stage - 1) * 2 + (v - 1) * pp;
    return warm < total ? warm : total;
}

int wl_stage_layer_count(const wl_plan *p, int layers, int stage)
{
    if (p->n_stage_layers != p->pp * p->virtual_stages) return layers / p->pp;
    int n = 0;
    for (int c = 0; c < p->virtual_stages; c++) n += p->stage_layers[c * p->pp + stage];
    return n;
}

void wl_virtual_stage_layers(const wl_plan *p, int layers, int vs, int *first, int *n)
{
    int nv = p->pp * p->virtual_stages;
    if (p->n_stage_layers != nv) {
        *n = layers / nv;
        *first = vs * *n;
        return;
    }
    int acc = 0;
    for (int i = 0; i < vs; i++) acc += p->stage_layers[i];
    *first = acc;
    *n = p->stage_layers[vs];
}

int wl_gpu_of_cp(const wl_plan *p, int dp_rank, int cp_rank, int pp_rank, int tp_rank)
{
    wl_plan q = *p;
    q.tp = p->tp * wl_cp(p);
    return wl_gpu_of(&q, dp_rank, pp_rank, cp_rank * p->tp + tp_rank);
}

int wl_gpu_of(const wl_plan *p, int dp_rank, int pp_rank, int tp_rank)
{
    int coord[3], size[3];
    coord[WL_AXIS_TP] = tp_rank;
    coord[WL_AXIS_PP] = pp_rank;
    coord[WL_AXIS_DP] = dp_rank;
    size[WL_AXIS_TP] = p->tp;
    size[WL_AXIS_PP] = p->pp;
    size[WL_AXIS_DP] = p->dp;
    int g = 0;
    for (int i = 0; i < 3; i++) g = g * size[p->placement[i]] + coord[p->placement[i]];
    return p->gpu_map ? p->gpu_map[g] : g;
}

double *wl_env_slowdowns(const wl_env *env, int n_gpus, bool *hetero)
{
    double *slow = dt_xmalloc(((size_t)n_gpus + 1) * sizeof *slow);
    for (int i = 0; i <= n_gpus; i++) slow[i] = 1;
    for (int i = 0; i < env->n_stragglers; i++) {
        int g = env->stragglers[i].gpu;
        if (g >= 0 && g < n_gpus) slow[g] *= env->stragglers[i].slowdown;
    }
    if (hetero) {
        *hetero = false;
        for (int i = 0; i < n_gpus; i++)
            if (slow[i] != 1.0) *hetero = true;
    }
    return slow;
}
