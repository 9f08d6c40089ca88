/* trace.c - op graphs as JSON trace files (docs/formats.md, "Trace files").
 *
 * Writing streams with fprintf: a 1,024-GPU step is ~150k ops and building a cJSON tree first
 * would triple the memory. Doubles are printed with 17 significant digits so that reading
 * them back gives the same bits, and durations (seconds) convert back to the same picoseconds;
 * that is what makes a written-then-replayed trace reproduce the run byte for byte.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dtsim/limits.h"
#include "dtsim/replay.h"

#define TRY(x)                                                                              \
    do {                                                                                    \
        int rc_ = (x);                                                                      \
        if (rc_ != DT_OK) return rc_;                                                       \
    } while (0)

static const char *const kind_names[] = {"compute", "collective", "send", NULL};
static const char *const stream_names[] = {"compute", "tp", "pp", "dp", NULL};
static const char *const class_names[] = {"matmul",    "attention",     "elementwise",
                                          "optimizer", "attention_bwd", NULL};
static const char *const coll_names[] = {"allreduce", "reduce_scatter", "allgather", "broadcast",
                                         "reduce", "alltoall", "sendrecv", NULL};
static const char *const prec_names[] = {"fp32", "tf32", "fp16", "bf16", "fp8", NULL};
static const char *const jitter_names[] = {"none", "lognormal", "normal", NULL};
static const char *const comm_names[] = {"tp", "pp", "dp", "zero", "ep", "cp", NULL};
_Static_assert(sizeof comm_names / sizeof *comm_names == WL_COMM_KIND_COUNT + 1,
               "one trace name per communication kind");
static const char *const network_names[] = {"flow", "analytic", NULL};

void trace_env_free(trace_env *e)
{
    if (!e) return;
    cJSON_Delete(e->gpu);
    free(e->env.stragglers);
    free(e->env.degraded);
    e->gpu = NULL;
    e->env.stragglers = NULL;
    e->env.degraded = NULL;
}

static void put_str(FILE *f, const char *s)
{
    cJSON *n = cJSON_CreateString(s);
    char *q = cJSON_PrintUnformatted(n);
    fputs(q, f);
    free(q);
    cJSON_Delete(n);
}

/* An op name: most need no escaping (millions of ops: no cJSON round trip for them); names
 * read from other formats (Chakra) may hold quotes, backslashes or control characters. */
static void put_name(FILE *f, const char *s)
{
    for (const unsigned char *c = (const unsigned char *)s; *c; c++)
        if (*c < 0x20 || *c == '"' || *c == '\\' || *c >= 0x7f) {
            put_str(f, s);
            return;
        }
    fprintf(f, "\"%s\"", s);
}

int trace_write(FILE *f, const wl_graph *g, const trace_env *env, dt_error *err)
{
    fprintf(f, "{\n\"format\": \"dtsim-trace\",\n\"version\": 1,\n\"name\": ");
    {
        cJSON *s = cJSON_CreateString(env->name);
        char *q = cJSON_PrintUnformatted(s);
        fputs(q, f);
        free(q);
        cJSON_Delete(s);
    }
    fprintf(f, ",\n\"gpus\": %d,\n\"precision\": \"%s\",\n", g->n_gpus, prec_names[g->precision]);
    fprintf(f, "\"step\": {\"samples\": %.17g, \"tokens\": %.17g, \"model_flops\": %.17g},\n",
            g->samples_per_step, g->tokens_per_step, g->model_flops_per_step);
    fprintf(f, "\"environment\": {\"seed\": %llu, \"network\": \"%s\"",
            (unsigned long long)env->env.seed, network_names[env->env.network]);
    if (env->env.dp_algorithm != COLL_AUTO)
        fprintf(f, ", \"dp_algorithm\": \"%s\"", coll_algo_name(env->env.dp_algorithm));
    if (env->env.ps_servers > 0) fprintf(f, ", \"ps_servers\": %d", env->env.ps_servers);
    if (env->env.ring_model != COLL_RING_AUTO)
        fprintf(f, ", \"ring_model\": \"%s\"", coll_ring_model_name(env->env.ring_model));
    if (env->env.coll_library != COLL_LIB_ANY)
        fprintf(f, ", \"collective_library\": \"%s\"", coll_library_name(env->env.coll_library));
    if ((env->env.link_nvlink > 0 && env->env.link_nvlink != 1) ||
        (env->env.link_network > 0 && env->env.link_network != 1))
        fprintf(f, ", \"link_efficiency\": {\"nvlink\": %.17g, \"network\": %.17g}",
                env->env.link_nvlink > 0 ? env->env.link_nvlink : 1,
                env->env.link_network > 0 ? env->env.link_network : 1);
    if (env->env.no_contention)
        fprintf(f, ", \"comm_contention\": false");
    else if (env->env.contention_sms > 0)
        fprintf(f, ", \"comm_contention\": {\"sms\": %d}", env->env.contention_sms);
    if (env->gpu) {
        char *q = cJSON_PrintUnformatted(env->gpu);
        fprintf(f, ", \"gpu\": %s", q);
        free(q);
    }
    if (env->env.n_stragglers) {
        fprintf(f, ", \"stragglers\": [");
        for (int i = 0; i < env->env.n_stragglers; i++)
            fprintf(f, "%s{\"gpu\": %d, \"slowdown\": %.17g}", i ? ", " : "",
                    env->env.stragglers[i].gpu, env->env.stragglers[i].slowdown);
        fprintf(f, "]");
    }
    if (env->env.jitter != WL_JITTER_NONE)
        fprintf(f, ", \"jitter\": {\"distribution\": \"%s\", \"sigma\": %.17g}",
                jitter_names[env->env.jitter], env->env.jitter_sigma);
    if (env->env.n_degraded) {
        fprintf(f, ", \"degraded_links\": [");
        for (int i = 0; i < env->env.n_degraded; i++) {
            const wl_degraded_link *d = &env->env.degraded[i];
            fprintf(f, "%s{\"link\": ", i ? ", " : "");
            if (d->index >= 0) fprintf(f, "%d", d->index);
            else {
                fprintf(f, "{\"src\": ");
                put_str(f, d->src);
                fprintf(f, ", \"dst\": ");
                put_str(f, d->dst);
                fprintf(f, "}");
            }
            fprintf(f, ", \"bandwidth_factor\": %.17g}", d->bandwidth_factor);
        }
        fprintf(f, "]");
    }
    fprintf(f, ", \"memory\": {\"params\": %.17g, \"grads\": %.17g, \"optimizer\": %.17g, "
               "\"activations\": %.17g, \"peak\": %.17g}},\n",
            env->mem_params, env->mem_grads, env->mem_optimizer, env->mem_activations,
            env->mem_peak);
    fprintf(f, "\"lanes\": [");
    for (int l = 0; l < g->n_lanes; l++) {
        fprintf(f, "%s[", l ? ", " : "");
        for (int k = 0; k < g->lane_size; k++)
            fprintf(f, "%s%d", k ? ", " : "", g->lane_gpus[(size_t)l * g->lane_size + k]);
        fprintf(f, "]");
    }
    fprintf(f, "],\n");
    if (g->cp_next && g->cp > 1) {
        /* context parallelism: the ring of each lane (wl_graph.cp_next) */
        fprintf(f, "\"context_parallel\": {\"cp\": %d, \"next\": [", g->cp);
        for (int l = 0; l < g->n_lanes; l++) fprintf(f, "%s%u", l ? ", " : "", g->cp_next[l]);
        fprintf(f, "]},\n");
    }
    if (g->n_gemm_sets) {
        fprintf(f, "\"gemm_sets\": [\n");
        for (uint32_t i = 0; i < g->n_gemm_sets; i++) {
            const wl_gemm_set *gs = &g->gemm_sets[i];
            fprintf(f, "%s[", i ? ",\n" : "");
            for (uint32_t k = 0; k < gs->n; k++) {
                const gpu_gemm *x = &g->gemms[gs->start + k];
                fprintf(f, "%s{\"m\": %.17g, \"n\": %.17g, \"k\": %.17g, \"count\": %.17g",
                        k ? ", " : "", x->m, x->n, x->k, x->count);
                if (x->batch > 1) fprintf(f, ", \"batch\": %.17g", x->batch);
                if (x->no_fp8) fprintf(f, ", \"no_fp8\": true");
                fprintf(f, "}");
            }
            fprintf(f, "]");
        }
        fprintf(f, "],\n");
    }
    fprintf(f, "\"costs\": [\n");
    for (uint32_t i = 0; i < g->n_costs; i++) {
        const wl_cost *c = &g->costs[i];
        fprintf(f, "%s{\"duration\": %.17g", i ? ",\n" : "", sim_time_to_s(c->fixed));
        bool any = false;
        for (int k = 0; k < GPU_OP_CLASS_COUNT; k++)
            if (c->flops[k] > 0) {
                fprintf(f, "%s\"%s\": %.17g", any ? ", " : ", \"flops\": {", class_names[k], c->flops[k]);
                any = true;
            }
        if (any) fprintf(f, "}");
        any = false;
        for (int k = 0; k < GPU_OP_CLASS_COUNT; k++)
            if (c->bytes[k] > 0) {
                fprintf(f, "%s\"%s\": %.17g", any ? ", " : ", \"bytes\": {", class_names[k], c->bytes[k]);
                any = true;
            }
        if (any) fprintf(f, "}");
        if (c->gemm_set) fprintf(f, ", \"gemms\": %u", c->gemm_set - 1);
        if (c->matmul_no_fp8 > 0) fprintf(f, ", \"matmul_no_fp8\": %.17g", c->matmul_no_fp8);
        if (c->attn_seq > 0) {
            fprintf(f, ", \"attention\": {\"seq\": %.17g, \"kernel\": \"%s\", \"causal\": %s",
                    c->attn_seq, gpu_attn_kernel_name(c->attn_kernel),
                    c->attn_causal ? "true" : "false");
            if (c->attn_head_dim > 0) fprintf(f, ", \"head_dim\": %.17g", c->attn_head_dim);
            if (c->attn_dropout) fprintf(f, ", \"dropout\": true");
            if (c->attn_rows > 0) fprintf(f, ", \"rows\": %.17g", c->attn_rows);
            fprintf(f, "}");
        }
        if (c->n_inlane) {
            fprintf(f, ", \"inlane\": [");
            for (int k = 0; k < c->n_inlane; k++) {
                fprintf(f, "%s{\"op\": \"%s\", \"bytes\": %.17g, \"count\": %d", k ? ", " : "",
                        coll_names[c->inlane[k].op], c->inlane[k].bytes, c->inlane[k].count);
                const gpu_gemm *u = &c->inlane[k].under;
                if (u->m > 0)
                    fprintf(f, ", \"under\": {\"m\": %.17g, \"n\": %.17g, \"k\": %.17g}", u->m, u->n,
                            u->k);
                fprintf(f, "}");
            }
            fprintf(f, "]");
            if (c->inlane_overlap) fprintf(f, ", \"inlane_overlap\": true");
            if (c->inlane_drain) fprintf(f, ", \"inlane_drain\": %d", c->inlane_drain);
        }
        if (c->ring_count > 0 && c->ring_bytes > 0)
            fprintf(f, ", \"ring\": {\"bytes\": %.17g, \"count\": %d}", c->ring_bytes,
                    c->ring_count);
        if (c->host > 0) fprintf(f, ", \"host\": %.17g", sim_time_to_s(c->host));
        fprintf(f, "}");
    }
    fprintf(f, "],\n\"collectives\": [\n");
    for (uint32_t i = 0; i < g->n_colls; i++) {
        fprintf(f, "%s{\"op\": \"%s\", \"bytes\": %.17g", i ? ",\n" : "",
                coll_names[g->colls[i].op], g->colls[i].bytes);
        if (g->colls[i].kind != WL_COMM_DP && g->colls[i].kind < WL_COMM_KIND_COUNT)
            fprintf(f, ", \"comm\": \"%s\"", comm_names[g->colls[i].kind]);
        if (g->colls[i].hbm_bytes > 0) fprintf(f, ", \"hbm_bytes\": %.17g", g->colls[i].hbm_bytes);
        fputc('}', f);
    }
    fprintf(f, "],\n\"ops\": [\n");
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const wl_op *o = &g->ops[i];
        fprintf(f, "%s{\"id\": %u, \"lane\": %u, \"kind\": \"%s\", \"stream\": \"%s\", "
                   "\"name\": ",
                i ? ",\n" : "", i, o->lane, kind_names[o->kind], stream_names[o->stream]);
        put_name(f, g->names[o->name]);
        if (o->mb >= 0) fprintf(f, ", \"mb\": %d", o->mb);
        if (o->layer >= 0) fprintf(f, ", \"layer\": %d", o->layer);
        if (o->kind == WL_OP_COMPUTE) fprintf(f, ", \"cost\": %u", o->arg);
        else if (o->kind == WL_OP_COLL) fprintf(f, ", \"collective\": %u", o->arg);
        else fprintf(f, ", \"to\": %u, \"bytes\": %.17g", o->arg, o->bytes);
        fprintf(f, ", \"deps\": [");
        for (uint32_t d = 0; d < o->n_deps; d++)
            fprintf(f, "%s%u", d ? ", " : "", g->deps[o->dep_start + d]);
        fprintf(f, "]}");
    }
    fprintf(f, "]\n}\n");
    if (ferror(f)) return dt_error_set(err, DT_EIO, NULL, NULL, "writing the trace failed");
    return DT_OK;
}

/* ---------------------------------------------------------------- read ---- */

static int read_env(const js_ctx *c, const cJSON *e, trace_env *env)
{
    static const char *const keys[] = {"seed",   "network",        "dp_algorithm", "ring_model",
                                       "ps_servers",
                                       "gpu",    "stragglers",     "jitter",
                                       "degraded_links", "memory", "link_efficiency",
                                       "comm_contention", "collective_library", NULL};
    const char *P = "environment";
    TRY(js_expect_object(c, e, P));
    TRY(js_check_keys(c, e, P, keys));
    long long seed = 1;
    TRY(js_get_int(c, e, P, "seed", false, 0, 1LL << 53, &seed));
    env->env.seed = (uint64_t)seed;
    int nm = NET_FLOW;
    TRY(js_get_enum(c, e, P, "network", false, network_names, &nm));
    env->env.network = (net_mode)nm;
    const char *algo = NULL;
    TRY(js_get_string(c, e, P, "dp_algorithm", false, &algo));
    if (algo && coll_algo_parse(algo, &env->env.dp_algorithm) != DT_OK)
        return js_fail(c, P, "dp_algorithm", "unknown collective algorithm \"%s\"", algo);
    long long servers = 0;
    TRY(js_get_int(c, e, P, "ps_servers", false, 1, 1 << 22, &servers));
    env->env.ps_servers = (int)servers;
    const char *lib = NULL;
    TRY(js_get_string(c, e, P, "collective_library", false, &lib));
    if (lib && coll_library_parse(lib, &env->env.coll_library) != DT_OK)
        return js_fail(c, P, "collective_library", "expected nccl or any, found \"%s\"", lib);
    const char *rm = NULL;
    env->env.ring_model = COLL_RING_AUTO;
    TRY(js_get_string(c, e, P, "ring_model", false, &rm));
    if (rm && coll_ring_model_parse(rm, &env->env.ring_model) != DT_OK)
        return js_fail(c, P, "ring_model", "expected steps, fluid, auto or exact, found \"%s\"", rm);
    const cJSON *le = cJSON_GetObjectItemCaseSensitive(e, "link_efficiency");
    if (le) {
        static const char *const lk[] = {"nvlink", "network", NULL};
        const char *LP = "environment.link_efficiency";
        TRY(js_expect_object(c, le, LP));
        TRY(js_check_keys(c, le, LP, lk));
        env->env.link_nvlink = env->env.link_network = 1;
        TRY(js_get_number(c, le, LP, "nvlink", false, 1e-3, 1, &env->env.link_nvlink));
        TRY(js_get_number(c, le, LP, "network", false, 1e-3, 1, &env->env.link_network));
    }
    TRY(wl_comm_contention_parse(c, e, P, &env->env));
    const cJSON *gpu = cJSON_GetObjectItemCaseSensitive(e, "gpu");
    if (gpu) env->gpu = cJSON_Duplicate(gpu, 1);
    /* stragglers, jitter, degraded links: the scenario parser's own format */
    cJSON *fake = cJSON_CreateObject();
    cJSON_AddItemToObject(fake, "topology", cJSON_CreateString("-"));
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "kind", "params");
    cJSON_AddNumberToObject(m, "params", 1);
    cJSON_AddItemToObject(fake, "model", m);
    const char *fk[] = {"stragglers", "jitter", "degraded_links"};
    for (int i = 0; i < 3; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, fk[i]);
        if (v) cJSON_AddItemToObject(fake, fk[i], cJSON_Duplicate(v, 1));
    }
    wl_scenario s;
    int rc = wl_scenario_parse(c, fake, &s);
    cJSON_Delete(fake);
    if (rc != DT_OK) {
        /* errors name "stragglers[0]..." : put them under environment */
        char buf[DT_ERR_PATH_MAX + 16];
        snprintf(buf, sizeof buf, "environment.%s", c->err->path);
        memcpy(c->err->path, buf, sizeof c->err->path - 1);
        c->err->path[sizeof c->err->path - 1] = 0;
        return rc;
    }
    env->env.stragglers = s.env.stragglers;
    env->env.n_stragglers = s.env.n_stragglers;
    env->env.degraded = s.env.degraded;
    env->env.n_degraded = s.env.n_degraded;
    env->env.jitter = s.env.jitter;
    env->env.jitter_sigma = s.env.jitter_sigma;
    const cJSON *mem = cJSON_GetObjectItemCaseSensitive(e, "memory");
    if (mem) {
        static const char *const mk[] = {"params", "grads", "optimizer", "activations", "peak", NULL};
        const char *MP = "environment.memory";
        TRY(js_expect_object(c, mem, MP));
        TRY(js_check_keys(c, mem, MP, mk));
        TRY(js_get_quantity(c, mem, MP, "params", UNIT_SIZE, false, false, &env->mem_params));
        TRY(js_get_quantity(c, mem, MP, "grads", UNIT_SIZE, false, false, &env->mem_grads));
        TRY(js_get_quantity(c, mem, MP, "optimizer", UNIT_SIZE, false, false, &env->mem_optimizer));
        TRY(js_get_quantity(c, mem, MP, "activations", UNIT_SIZE, false, false, &env->mem_activations));
        TRY(js_get_quantity(c, mem, MP, "peak", UNIT_SIZE, false, false, &env->mem_peak));
    }
    return DT_OK;
}

/* A GEMM's "m", "n", "k" of object x at path xp, into d: numbers, fractional only as an
 * average (tokens per expert), not beyond any matrix a GPU holds. check_gemm_dims refuses a 0;
 * it is a step of its own because a GEMM-set entry checks it after its other keys are read. */
static const char *const gemm_dims[3] = {"m", "n", "k"};

static int read_gemm_dims(const js_ctx *c, const cJSON *x, const char *xp, double d[3])
{
    for (int q = 0; q < 3; q++) TRY(js_get_number(c, x, xp, gemm_dims[q], true, 0, 1e12, &d[q]));
    return DT_OK;
}

static int check_gemm_dims(const js_ctx *c, const char *xp, const double d[3])
{
    for (int q = 0; q < 3; q++)
        if (!(d[q] > 0)) return js_fail(c, xp, gemm_dims[q], "expected a positive dimension, found 0");
    return DT_OK;
}

/* gemm_sets[i]: an array of GEMM shapes {"m", "n", "k", "count", "batch", "no_fp8"}; batch
 * (default 1) must divide count; no_fp8 (default false) keeps the GEMM in 16 bits under fp8. */
static int read_gemm_set(const js_ctx *c, const cJSON *v, const char *p, wl_graph *g)
{
    TRY(js_expect_array(c, v, p));
    int n = cJSON_GetArraySize(v);
    if (n < 1 || n > 1 << 16)
        return js_fail(c, p, NULL, "expected 1 to %d GEMM shapes, found %d", 1 << 16, n);
    gpu_gemm *gs = dt_xmalloc((size_t)n * sizeof *gs);
    int i = 0, rc = DT_OK;
    for (const cJSON *x = v->child; x && rc == DT_OK; x = x->next, i++) {
        static const char *const gk[] = {"m", "n", "k", "count", "batch", "no_fp8", NULL};
        char xp[JS_PATH_MAX];
        js_path_index(xp, p, i);
        double d[3] = {0, 0, 0};
        long long cnt = 1, batch = 1;
        bool no_fp8 = false;
        if ((rc = js_expect_object(c, x, xp)) || (rc = js_check_keys(c, x, xp, gk)) ||
            (rc = read_gemm_dims(c, x, xp, d)) ||
            (rc = js_get_int(c, x, xp, "count", false, 1, 1LL << 53, &cnt)) ||
            (rc = js_get_int(c, x, xp, "batch", false, 1, 1LL << 53, &batch)) ||
            (rc = js_get_bool(c, x, xp, "no_fp8", false, &no_fp8)))
            break;
        if (cnt % batch)
            rc = js_fail(c, xp, "batch", "expected a divisor of count (%lld), found %lld", cnt, batch);
        if (rc == DT_OK) rc = check_gemm_dims(c, xp, d);
        gs[i] = (gpu_gemm){d[0], d[1], d[2], (double)cnt, (double)batch, no_fp8};
    }
    if (rc == DT_OK) wl_graph_gemm_set(g, gs, (uint32_t)n);
    free(gs);
    return rc;
}

static int read_cost(const js_ctx *c, const cJSON *v, const char *p, const wl_graph *g,
                     wl_cost *out)
{
    static const char *const keys[] = {"duration", "flops", "bytes", "gemms", "matmul_no_fp8",
                                       "inlane", "inlane_overlap", "inlane_drain", "attention",
                                       "ring", "host", NULL};
    TRY(js_expect_object(c, v, p));
    TRY(js_check_keys(c, v, p, keys));
    memset(out, 0, sizeof *out);
    TRY(js_get_time(c, v, p, "duration", false, &out->fixed));
    /* the host's dispatch floor: the op lasts at least this (wl_cost.host) */
    TRY(js_get_time(c, v, p, "host", false, &out->host));
    const char *sub[2] = {"flops", "bytes"};
    for (int s = 0; s < 2; s++) {
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(v, sub[s]);
        if (!o) continue;
        char sp[JS_PATH_MAX];
        js_path_key(sp, p, sub[s]);
        TRY(js_expect_object(c, o, sp));
        TRY(js_check_keys(c, o, sp, class_names));
        for (int k = 0; k < GPU_OP_CLASS_COUNT; k++)
            TRY(js_get_quantity(c, o, sp, class_names[k], s ? UNIT_SIZE : UNIT_WORK, false, false,
                                s ? &out->bytes[k] : &out->flops[k]));
    }
    if (cJSON_GetObjectItemCaseSensitive(v, "gemms")) {
        if (g->n_gemm_sets == 0)
            return js_fail(c, p, "gemms", "names a GEMM set, but the trace has no \"gemm_sets\"");
        long long gi = 0;
        TRY(js_get_int(c, v, p, "gemms", false, 0, (long long)g->n_gemm_sets - 1, &gi));
        out->gemm_set = (uint32_t)gi + 1;
        /* the shapes are the matmul FLOPs: absent, they are the shapes' sum; given, they
         * must agree (a shape set replaces the total in the time) */
        uint32_t n;
        const gpu_gemm *gs = wl_cost_gemms(g, out, &n);
        double sum = 0;
        for (uint32_t i = 0; i < n; i++) sum += 2 * gs[i].m * gs[i].n * gs[i].k * gs[i].count;
        double *fm = &out->flops[GPU_OP_MATMUL];
        if (*fm == 0) {
            *fm = sum;
        } else if (!(fabs(*fm - sum) <= 1e-9 * sum)) {
            char fp[JS_PATH_MAX];
            return js_fail(c, js_path_key(fp, p, "flops"), "matmul",
                           "is %.17g FLOP, but the GEMMs of gemm_sets[%lld] sum to %.17g: give "
                           "the same work, or leave it out", *fm, gi, sum);
        }
    }
    /* the matmul FLOPs that stay in 16 bits under fp8 (the logits): part of the class's total */
    TRY(js_get_quantity(c, v, p, "matmul_no_fp8", UNIT_WORK, false, false, &out->matmul_no_fp8));
    if (out->matmul_no_fp8 > out->flops[GPU_OP_MATMUL])
        return js_fail(c, p, "matmul_no_fp8",
                       "is %.17g FLOP, more than the cost's matmul FLOPs (%.17g) it is part of",
                       out->matmul_no_fp8, out->flops[GPU_OP_MATMUL]);
    TRY(js_get_bool(c, v, p, "inlane_overlap", false, &out->inlane_overlap));
    long long drain = 0;
    TRY(js_get_int(c, v, p, "inlane_drain", false, 0, 1 << 30, &drain));
    out->inlane_drain = (int)drain;
    const cJSON *at = cJSON_GetObjectItemCaseSensitive(v, "attention");
    if (at) {
        /* the fused attention kernel the attention classes' FLOPs run on (their measured
         * efficiency per GPU): sequence length of one call, kernel, causal mask, head dim */
        static const char *const akeys[] = {"seq",     "kernel", "causal", "head_dim",
                                            "dropout", "rows",   NULL};
        char ap[JS_PATH_MAX];
        js_path_key(ap, p, "attention");
        TRY(js_expect_object(c, at, ap));
        TRY(js_check_keys(c, at, ap, akeys));
        TRY(js_get_number(c, at, ap, "seq", true, 1, 1e9, &out->attn_seq));
        int k = GPU_ATTN_FA2;
        TRY(js_get_enum(c, at, ap, "kernel", false, gpu_attn_kernel_names(), &k));
        out->attn_kernel = (gpu_attn_kernel)k;
        bool causal = true;
        TRY(js_get_bool(c, at, ap, "causal", false, &causal));
        out->attn_causal = causal;
        /* absent (a trace written before costs carried it): GPU_ATTN_HEAD_DIM; the model
         * spec's head_dim takes the same whole numbers */
        long long hd = 0;
        TRY(js_get_int(c, at, ap, "head_dim", false, 1, 100000, &hd));
        out->attn_head_dim = (double)hd;
        /* absent: no dropout (a trace written before costs carried it timed none) */
        bool dropout = false;
        TRY(js_get_bool(c, at, ap, "dropout", false, &dropout));
        out->attn_dropout = dropout;
        /* absent: the curve's benchmark call (a trace written before costs carried it) */
        TRY(js_get_number(c, at, ap, "rows", false, 1, 1e12, &out->attn_rows));
    }
    const cJSON *ring = cJSON_GetObjectItemCaseSensitive(v, "ring");
    if (ring) {
        /* ring attention's sends (wl_cost.ring_bytes, ring_count): need a CP ring to run on */
        static const char *const rk[] = {"bytes", "count", NULL};
        char rp[JS_PATH_MAX];
        js_path_key(rp, p, "ring");
        if (!g->cp_next)
            return js_fail(c, p, "ring", "ring attention sends need the trace's "
                                         "\"context_parallel\" ring, which it lacks");
        TRY(js_expect_object(c, ring, rp));
        TRY(js_check_keys(c, ring, rp, rk));
        TRY(js_get_quantity(c, ring, rp, "bytes", UNIT_SIZE, true, false, &out->ring_bytes));
        long long cnt = 1;
        TRY(js_get_int(c, ring, rp, "count", false, 0, 1 << 30, &cnt));
        out->ring_count = (int)cnt;
    }
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(v, "inlane");
    if (in) {
        char ip[JS_PATH_MAX];
        js_path_key(ip, p, "inlane");
        TRY(js_expect_array(c, in, ip));
        int i = 0;
        for (const cJSON *e = in->child; e; e = e->next, i++) {
            char ep[JS_PATH_MAX];
            js_path_index(ep, ip, i);
            if (i >= WL_MAX_INLANE)
                return js_fail(c, ep, NULL, "at most %d in-lane collectives per cost", WL_MAX_INLANE);
            static const char *const ik[] = {"op", "bytes", "count", "under", NULL};
            TRY(js_expect_object(c, e, ep));
            TRY(js_check_keys(c, e, ep, ik));
            int op = 0;
            TRY(js_get_enum(c, e, ep, "op", true, coll_names, &op));
            out->inlane[i].op = (coll_op)op;
            TRY(js_get_quantity(c, e, ep, "bytes", UNIT_SIZE, true, false, &out->inlane[i].bytes));
            long long cnt = 1;
            TRY(js_get_int(c, e, ep, "count", false, 0, 1 << 30, &cnt));
            out->inlane[i].count = (int)cnt;
            /* issued beside one GEMM of this shape each (wl_cost.inlane[].under) */
            const cJSON *u = cJSON_GetObjectItemCaseSensitive(e, "under");
            out->inlane[i].under = (gpu_gemm){0};
            if (u) {
                char up[JS_PATH_MAX];
                js_path_key(up, ep, "under");
                static const char *const uk[] = {"m", "n", "k", NULL};
                TRY(js_expect_object(c, u, up));
                TRY(js_check_keys(c, u, up, uk));
                /* as a GEMM set's dimensions */
                double d[3];
                TRY(read_gemm_dims(c, u, up, d));
                TRY(check_gemm_dims(c, up, d));
                out->inlane[i].under = (gpu_gemm){d[0], d[1], d[2], 1, 1, false};
            }
            out->n_inlane = i + 1;
        }
    }
    return DT_OK;
}

/* "context_parallel": {"cp": c, "next": [lane, ...]}: the CP ring of every lane. The replay
 * runs c - 1 ring steps per pass and charges a block of 1/c of the attention per step, so
 * `next` must be a permutation of the lanes whose cycles all have length c. */
static int read_cp(const js_ctx *c, const cJSON *v, wl_graph *g)
{
    static const char *const keys[] = {"cp", "next", NULL};
    const char *P = "context_parallel";
    TRY(js_expect_object(c, v, P));
    TRY(js_check_keys(c, v, P, keys));
    long long cp = 0;
    TRY(js_get_int(c, v, P, "cp", true, 2, g->n_lanes < 2 ? 2 : g->n_lanes, &cp));
    if (g->n_lanes % cp)
        return js_fail(c, P, "cp", "expected a divisor of the trace's %d lanes (every lane in "
                                   "one ring of cp lanes), found %lld", g->n_lanes, cp);
    const cJSON *next = cJSON_GetObjectItemCaseSensitive(v, "next");
    char np[JS_PATH_MAX];
    js_path_key(np, P, "next");
    if (!next) return js_fail(c, P, "next", "required: the next lane of each lane's CP ring");
    TRY(js_expect_array(c, next, np));
    if (cJSON_GetArraySize(next) != g->n_lanes)
        return js_fail(c, P, "next", "expected one entry per lane (%d), found %d", g->n_lanes,
                       cJSON_GetArraySize(next));
    uint32_t *nx = dt_xmalloc((size_t)g->n_lanes * sizeof *nx);
    char *seen = dt_xcalloc((size_t)g->n_lanes, 1);
    int l = 0, rc = DT_OK;
    for (const cJSON *x = next->child; x && rc == DT_OK; x = x->next, l++) {
        char xp[JS_PATH_MAX];
        js_path_index(xp, np, l);
        if (!cJSON_IsNumber(x) || x->valuedouble < 0 || x->valuedouble >= g->n_lanes ||
            x->valuedouble != floor(x->valuedouble) || x->valuedouble == l)
            rc = js_fail(c, xp, NULL, "expected the index of another lane (0..%d)", g->n_lanes - 1);
        else if (seen[(int)x->valuedouble])
            rc = js_fail(c, xp, NULL, "lane %d is already the next lane of another: the rings "
                                      "must be cycles", (int)x->valuedouble);
        else {
            seen[(int)x->valuedouble] = 1;
            nx[l] = (uint32_t)x->valuedouble;
        }
    }
    /* a permutation now: every cycle must hold cp lanes */
    for (l = 0; l < g->n_lanes && rc == DT_OK; l++) {
        int len = 1;
        for (uint32_t k = nx[l]; k != (uint32_t)l; k = nx[k]) len++;
        if (len != cp) {
            char xp[JS_PATH_MAX];
            rc = js_fail(c, js_path_index(xp, np, l), NULL,
                         "lane %d's ring holds %d lanes, expected cp = %lld", l, len, cp);
        }
    }
    free(seen);
    if (rc != DT_OK) {
        free(nx);
        return rc;
    }
    g->cp = (int)cp;
    g->cp_next = nx;
    return DT_OK;
}

/* A collective takes one op per lane: its group is its ops' lanes' GPUs, and a lane twice
 * would put the same GPUs in it twice; a sendrecv takes exactly two. The (collective, lane,
 * op) triples of the collective ops, sorted: equal neighbours are the first error, reported at
 * the later op, a sendrecv's run of other than two the second. O(k log k). */
typedef struct coll_lane {
    uint32_t coll, lane, op;
} coll_lane;

static int cmp_coll_lane(const void *pa, const void *pb)
{
    const coll_lane *a = pa, *b = pb;
    if (a->coll != b->coll) return a->coll < b->coll ? -1 : 1;
    if (a->lane != b->lane) return a->lane < b->lane ? -1 : 1;
    return a->op < b->op ? -1 : a->op > b->op;
}

static int check_coll_lanes(const js_ctx *c, const wl_graph *g)
{
    size_t k = 0;
    coll_lane *v = dt_xmalloc(((size_t)g->n_ops + 1) * sizeof *v);
    for (uint32_t i = 0; i < g->n_ops; i++)
        if (g->ops[i].kind == WL_OP_COLL) v[k++] = (coll_lane){g->ops[i].arg, g->ops[i].lane, i};
    qsort(v, k, sizeof *v, cmp_coll_lane);
    int rc = DT_OK;
    for (size_t i = 1; i < k && rc == DT_OK; i++)
        if (v[i].coll == v[i - 1].coll && v[i].lane == v[i - 1].lane) {
            char p[JS_PATH_MAX];
            rc = js_fail(c, js_path_index(p, "ops", (int)v[i].op), "collective",
                         "collective %u already has ops[%u] on lane %u: a collective takes one op "
                         "per lane (its group is their lanes' GPUs)",
                         v[i].coll, v[i - 1].op, v[i].lane);
        }
    /* a sendrecv instance is one transfer between two lanes' GPUs */
    for (size_t i = 0, j; i < k && rc == DT_OK; i = j) {
        for (j = i; j < k && v[j].coll == v[i].coll; j++) {}
        if (g->colls[v[i].coll].op == COLL_SENDRECV && j - i != 2) {
            char p[JS_PATH_MAX];
            rc = js_fail(c, js_path_index(p, "collectives", (int)v[i].coll), "op",
                         "a sendrecv is between two lanes; ops on %zu lanes name it (ops[%u] first)",
                         j - i, v[i].op);
        }
    }
    free(v);
    /* and inside a lane, between its two GPUs */
    for (uint32_t i = 0; i < g->n_costs && rc == DT_OK && g->lane_size != 2; i++)
        for (int q = 0; q < g->costs[i].n_inlane && rc == DT_OK; q++)
            if (g->costs[i].inlane[q].op == COLL_SENDRECV) {
                char p[JS_PATH_MAX], pq[JS_PATH_MAX];
                js_path_index(p, "costs", (int)i);
                js_path_key(pq, p, "inlane");
                rc = js_fail(c, js_path_index(p, pq, q), "op",
                             "a sendrecv inside a lane is between its two GPUs; the lanes have %d",
                             g->lane_size);
            }
    return rc;
}

static int read_all(const js_ctx *c, const cJSON *j, wl_graph **gout, trace_env *env)
{
    static const char *const keys[] = {"format", "version", "name", "gpus", "precision", "step",
                                       "environment", "lanes", "context_parallel",
                                       "gemm_sets", "costs", "collectives", "ops", NULL};
    TRY(js_expect_object(c, j, ""));
    TRY(js_check_keys(c, j, "", keys));
    const char *fmt = NULL;
    TRY(js_get_string(c, j, "", "format", true, &fmt));
    if (strcmp(fmt, "dtsim-trace"))
        return js_fail(c, "", "format", "expected \"dtsim-trace\", found \"%s\"", fmt);
    long long ver = 1;
    TRY(js_get_int(c, j, "", "version", true, 1, 1, &ver));
    const char *name = NULL;
    TRY(js_get_string(c, j, "", "name", false, &name));
    snprintf(env->name, sizeof env->name, "%s", name ? name : "");
    long long n_gpus = 0;
    TRY(js_get_int(c, j, "", "gpus", true, 1, DT_MAX_GPUS, &n_gpus)); /* a topology holds no more */
    int prec = GPU_BF16;
    TRY(js_get_enum(c, j, "", "precision", false, prec_names, &prec));
    env->env.seed = 1;
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "environment");
    if (e) TRY(read_env(c, e, env));
    /* lanes: default one per GPU */
    const cJSON *lanes = cJSON_GetObjectItemCaseSensitive(j, "lanes");
    int n_lanes = (int)n_gpus, lane_size = 1;
    if (lanes) {
        TRY(js_expect_array(c, lanes, "lanes"));
        n_lanes = cJSON_GetArraySize(lanes);
        if (n_lanes < 1) return js_fail(c, "lanes", NULL, "expected at least one lane");
        lane_size = cJSON_GetArraySize(lanes->child);
    }
    wl_graph *g = wl_graph_create((int)n_gpus, n_lanes, lane_size < 1 ? 1 : lane_size);
    *gout = g;
    g->precision = (gpu_precision)prec;
    if (lanes) {
        /* A GPU in two lanes (or twice in one) would be in two places of one collective:
         * {"lanes": [[0], [0]]} aborted in the flow back end. owner[gpu] = lane index + 1. */
        int *owner = dt_xcalloc((size_t)n_gpus, sizeof *owner);
        int l = 0;
        for (const cJSON *ln = lanes->child; ln; ln = ln->next, l++) {
            char lp[JS_PATH_MAX];
            js_path_index(lp, "lanes", l);
            int rc = js_expect_array(c, ln, lp);
            if (rc == DT_OK && (cJSON_GetArraySize(ln) != lane_size || lane_size < 1))
                rc = js_fail(c, lp, NULL, "every lane must list %d GPUs, found %d", lane_size,
                             cJSON_GetArraySize(ln));
            if (rc != DT_OK) {
                free(owner);
                return rc;
            }
            int k = 0;
            for (const cJSON *x = ln->child; x; x = x->next, k++) {
                char xp[JS_PATH_MAX];
                if (!cJSON_IsNumber(x) || x->valuedouble < 0 || x->valuedouble >= n_gpus ||
                    x->valuedouble != floor(x->valuedouble)) {
                    free(owner);
                    return js_fail(c, js_path_index(xp, lp, k), NULL,
                                   "expected a GPU index in 0..%lld", n_gpus - 1);
                }
                int gpu = (int)x->valuedouble;
                if (owner[gpu]) {
                    int first = owner[gpu] - 1;
                    free(owner);
                    return js_fail(c, js_path_index(xp, lp, k), NULL,
                                   "GPU %d is already in lanes[%d]: a GPU belongs to one lane",
                                   gpu, first);
                }
                owner[gpu] = l + 1;
                g->lane_gpus[(size_t)l * lane_size + k] = gpu;
            }
        }
        free(owner);
    } else {
        for (int i = 0; i < n_gpus; i++) g->lane_gpus[i] = i;
    }
    const cJSON *cpv = cJSON_GetObjectItemCaseSensitive(j, "context_parallel");
    if (cpv) TRY(read_cp(c, cpv, g));
    const cJSON *step = cJSON_GetObjectItemCaseSensitive(j, "step");
    if (step) {
        static const char *const sk[] = {"samples", "tokens", "model_flops", NULL};
        TRY(js_expect_object(c, step, "step"));
        TRY(js_check_keys(c, step, "step", sk));
        TRY(js_get_number(c, step, "step", "samples", false, 0, 1e300, &g->samples_per_step));
        TRY(js_get_number(c, step, "step", "tokens", false, 0, 1e300, &g->tokens_per_step));
        TRY(js_get_quantity(c, step, "step", "model_flops", UNIT_WORK, false, false,
                            &g->model_flops_per_step));
    }
    const cJSON *sets = cJSON_GetObjectItemCaseSensitive(j, "gemm_sets");
    if (sets) {
        TRY(js_expect_array(c, sets, "gemm_sets"));
        int i = 0;
        for (const cJSON *x = sets->child; x; x = x->next, i++) {
            char p[JS_PATH_MAX];
            TRY(read_gemm_set(c, x, js_path_index(p, "gemm_sets", i), g));
        }
    }
    const cJSON *costs = cJSON_GetObjectItemCaseSensitive(j, "costs");
    if (costs) {
        TRY(js_expect_array(c, costs, "costs"));
        int i = 0;
        for (const cJSON *x = costs->child; x; x = x->next, i++) {
            char p[JS_PATH_MAX];
            wl_cost cost;
            TRY(read_cost(c, x, js_path_index(p, "costs", i), g, &cost));
            wl_graph_cost(g, &cost);
        }
    }
    const cJSON *colls = cJSON_GetObjectItemCaseSensitive(j, "collectives");
    if (colls) {
        TRY(js_expect_array(c, colls, "collectives"));
        int i = 0;
        for (const cJSON *x = colls->child; x; x = x->next, i++) {
            char p[JS_PATH_MAX];
            js_path_index(p, "collectives", i);
            static const char *const ck[] = {"op", "bytes", "comm", "hbm_bytes", NULL};
            TRY(js_expect_object(c, x, p));
            TRY(js_check_keys(c, x, p, ck));
            int op = 0, kind = WL_COMM_DP;
            double b = 0;
            TRY(js_get_enum(c, x, p, "op", true, coll_names, &op));
            TRY(js_get_quantity(c, x, p, "bytes", UNIT_SIZE, true, false, &b));
            TRY(js_get_enum(c, x, p, "comm", false, comm_names, &kind));
            double hb = 0;
            if (cJSON_GetObjectItemCaseSensitive(x, "hbm_bytes"))
                TRY(js_get_quantity(c, x, p, "hbm_bytes", UNIT_SIZE, true, false, &hb));
            uint32_t ci = wl_graph_coll_kind(g, (coll_op)op, b, (wl_comm_kind)kind);
            g->colls[ci].hbm_bytes = hb;
        }
    }
    const cJSON *ops = cJSON_GetObjectItemCaseSensitive(j, "ops");
    if (!ops) return js_fail(c, "", "ops", "required: the list of ops");
    TRY(js_expect_array(c, ops, "ops"));
    int n_ops = cJSON_GetArraySize(ops);
    int i = 0;
    uint32_t *deps = NULL;
    size_t cap = 0;
    int rc = DT_OK;
    for (const cJSON *x = ops->child; x && rc == DT_OK; x = x->next, i++) {
        char p[JS_PATH_MAX];
        js_path_index(p, "ops", i);
        static const char *const ok[] = {"id", "lane", "gpu", "kind", "stream", "name", "mb",
                                         "layer", "cost", "duration", "collective", "to",
                                         "bytes", "deps", NULL};
#define CK(x_)                                                                              \
    if ((rc = (x_)) != DT_OK) break
        CK(js_expect_object(c, x, p));
        CK(js_check_keys(c, x, p, ok));
        long long id = i, lane = -1, mb = -1, layer = -1;
        CK(js_get_int(c, x, p, "id", false, 0, 1LL << 32, &id));
        if (id != i) {
            rc = js_fail(c, p, "id", "ops are numbered by position: expected %d, found %lld", i, id);
            break;
        }
        CK(js_get_int(c, x, p, "lane", false, 0, n_lanes - 1, &lane));
        long long gpu = -1;
        CK(js_get_int(c, x, p, "gpu", false, 0, n_gpus - 1, &gpu));
        if (lane < 0 && gpu >= 0 && !lanes) lane = gpu;
        /* Both given: they must name the same place, or the op would silently run where
         * "lane" says and not where "gpu" says. */
        if (lane >= 0 && gpu >= 0) {
            bool in = false;
            for (int k = 0; k < g->lane_size && !in; k++)
                in = g->lane_gpus[(size_t)lane * g->lane_size + k] == gpu;
            if (!in) {
                rc = js_fail(c, p, "gpu", "GPU %lld is not in lane %lld (%s); give one of "
                             "\"lane\" and \"gpu\", or both naming the same place", gpu, lane,
                             lanes ? "see lanes" : "without \"lanes\", lane i is GPU i");
                break;
            }
        }
        if (lane < 0) {
            rc = js_fail(c, p, "lane", lanes ? "required: the lane (index into lanes) running the op"
                                             : "required: \"gpu\" or \"lane\"");
            break;
        }
        int kind = 0, stream = -1;
        CK(js_get_enum(c, x, p, "kind", true, kind_names, &kind));
        CK(js_get_enum(c, x, p, "stream", false, stream_names, &stream));
        if (stream < 0) stream = kind == WL_OP_COMPUTE ? WL_STREAM_COMPUTE
                               : kind == WL_OP_SEND  ? WL_STREAM_PP
                                                     : WL_STREAM_DP;
        const char *nm = NULL;
        CK(js_get_string(c, x, p, "name", false, &nm));
        CK(js_get_int(c, x, p, "mb", false, -1, 1 << 30, &mb));
        CK(js_get_int(c, x, p, "layer", false, -1, 1 << 30, &layer));
        if (nm && g->n_names >= UINT16_MAX) {
            rc = js_fail(c, p, "name", "at most %u distinct op names per trace", UINT16_MAX - 1);
            break;
        }
        wl_op o = {.lane = (uint32_t)lane, .kind = (uint8_t)kind, .stream = (uint8_t)stream,
                   .mb = (int32_t)mb, .layer = (int32_t)layer};
        o.name = (uint16_t)wl_graph_name(g, nm ? nm : kind_names[kind]);
        if (kind == WL_OP_COMPUTE) {
            long long cost = -1;
            sim_time_t dur = -1;
            CK(js_get_int(c, x, p, "cost", false, 0, (long long)g->n_costs - 1, &cost));
            CK(js_get_time(c, x, p, "duration", false, &dur));
            if ((cost >= 0) == (dur >= 0)) {
                rc = js_fail(c, p, "cost", "a compute op needs exactly one of \"cost\" (index "
                                           "into costs) and \"duration\"");
                break;
            }
            if (dur >= 0) {
                wl_cost cc = {.fixed = dur};
                cost = wl_graph_cost(g, &cc);
            }
            o.arg = (uint32_t)cost;
        } else if (kind == WL_OP_COLL) {
            long long ci = 0;
            CK(js_get_int(c, x, p, "collective", true, 0, (long long)g->n_colls - 1, &ci));
            o.arg = (uint32_t)ci;
        } else {
            long long to = 0;
            CK(js_get_int(c, x, p, "to", true, 0, n_lanes - 1, &to));
            o.arg = (uint32_t)to;
            CK(js_get_quantity(c, x, p, "bytes", UNIT_SIZE, true, false, &o.bytes));
        }
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(x, "deps");
        uint32_t nd = 0;
        if (d) {
            char dp[JS_PATH_MAX];
            js_path_key(dp, p, "deps");
            CK(js_expect_array(c, d, dp));
            int k = 0;
            for (const cJSON *y = d->child; y; y = y->next, k++) {
                if (!cJSON_IsNumber(y) || y->valuedouble < 0 || y->valuedouble >= n_ops ||
                    y->valuedouble != floor(y->valuedouble) || y->valuedouble == i) {
                    char yp[JS_PATH_MAX];
                    rc = js_fail(c, js_path_index(yp, dp, k), NULL,
                                 "expected the id of another op (0..%d)", n_ops - 1);
                    break;
                }
                if (nd >= cap) {
                    cap = cap ? 2 * cap : 16;
                    deps = dt_xrealloc(deps, cap * sizeof *deps);
                }
                deps[nd++] = (uint32_t)y->valuedouble;
            }
            if (rc != DT_OK) break;
        }
        wl_graph_op(g, &o, deps, nd);
#undef CK
    }
    free(deps);
    if (rc == DT_OK) rc = check_coll_lanes(c, g);
    return rc;
}

int trace_read(const js_ctx *ctx, const cJSON *j, wl_graph **out, trace_env *env)
{
    memset(env, 0, sizeof *env);
    env->env.ring_model = COLL_RING_AUTO;
    *out = NULL;
    int rc = read_all(ctx, j, out, env);
    if (rc != DT_OK) {
        wl_graph_destroy(*out);
        *out = NULL;
        trace_env_free(env);
    }
    return rc;
}
