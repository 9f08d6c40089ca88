/* run.c - one simulated training step of a scenario (run.h): the glue between the scenario,
 * the topology, the GPU model, the network and the replay.
 *
 * run_scenario: parse -> topology (+ GPU override, degraded links) -> plan resolved against
 * the GPU count -> memory -> op graph (-> trace file) -> replay -> results.
 * run_memory stops after the memory step: no graph, no engine (the planner calls it a lot).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dtsim/calib.h"
#include "dtsim/chakra.h"
#include "dtsim/coll.h"
#include "dtsim/net.h"
#include "dtsim/replay.h"
#include "dtsim/run.h"
#include "dtsim/topo.h"

#define TRY(x)                                                                              \
    do {                                                                                    \
        int rc_ = (x);                                                                      \
        if (rc_ != DT_OK) return rc_;                                                       \
    } while (0)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------- topology ---- */

/* A topology value: a file name (relative to base_dir), an inline topology or a generator. */
static int load_topology(const js_ctx *c, const cJSON *v, const char *path, const char *base_dir,
                         topo **out)
{
    return topo_from_json(c, v, path, base_dir, out);
}

static int apply_gpu(const js_ctx *c, const cJSON *gpu, const char *path, topo *t)
{
    if (!gpu) return DT_OK;
    gpu_spec spec;
    TRY(gpu_spec_from_json(c, gpu, path, &spec));
    for (int i = 0; i < t->n_gpus; i++) t->gpus[i] = spec;
    return DT_OK;
}

static int find_node(const topo *t, const char *name)
{
    for (int i = 0; i < t->n_nodes; i++)
        if (!strcmp(t->nodes[i].name, name)) return i;
    return -1;
}

/* Scale the bandwidth of degraded links (this run's own copy of the topology). */
static int apply_degraded(const js_ctx *c, const wl_degraded_link *d, int n, topo *t)
{
    for (int i = 0; i < n; i++) {
        char path[JS_PATH_MAX];
        js_path_index(path, "degraded_links", i);
        if (d[i].index >= 0) {
            if (d[i].index >= t->n_links)
                return js_fail(c, path, "link", "the topology has directed links 0..%d, found %d",
                               t->n_links - 1, d[i].index);
            t->links[d[i].index].bandwidth *= d[i].bandwidth_factor;
            continue;
        }
        int a = find_node(t, d[i].src), b = find_node(t, d[i].dst);
        if (a < 0 || b < 0)
            return js_fail(c, path, "link", "no node named \"%s\" in the topology",
                           a < 0 ? d[i].src : d[i].dst);
        int hit = 0;
        for (int l = 0; l < t->n_links; l++)
            if (t->links[l].src == a && t->links[l].dst == b) {
                t->links[l].bandwidth *= d[i].bandwidth_factor;
                hit++;
            }
        if (!hit)
            return js_fail(c, path, "link", "no link from \"%s\" to \"%s\"", d[i].src, d[i].dst);
    }
    return DT_OK;
}

/* --------------------------------------------------------- comm back ends ---- */

typedef struct comm_ctx {
    net *n;
    coll_engine *ce;
    coll_analytic *an;
    double elem_bytes;
    coll_algo algo;
} comm_ctx;

/* Contention-free cost (analytic mode; TP in both modes): the algorithm coll_fn would start
 * (options.dp_algorithm with the same fallback to auto; TP collectives auto), costed by
 * coll_analytic_time on the same coll_config. */
static sim_time_t coll_time_fn(void *ctx, coll_op op, const int *gpus, int n, double bytes,
                               bool in_lane)
{
    comm_ctx *cc = ctx;
    if (op == COLL_SENDRECV && (n != 2 || gpus[0] == gpus[1])) return 0;
    coll_spec s = {.op = op, .algo = in_lane ? COLL_AUTO : cc->algo, .group = gpus, .n = n,
                   .bytes = bytes, .root = op == COLL_SENDRECV ? 1 : 0,
                   .elem_bytes = cc->elem_bytes};
    sim_time_t t = 0;
    dt_error e;
    dt_error_clear(&e);
    int rc = coll_analytic_time(cc->an, &s, &t, NULL, &e);
    if (rc != DT_OK && s.algo != COLL_AUTO) {
        s.algo = COLL_AUTO;
        dt_error_clear(&e);
        rc = coll_analytic_time(cc->an, &s, &t, NULL, &e);
    }
    DT_ASSERT(rc == DT_OK); /* groups come from the plan: always valid */
    return t;
}

static void coll_fn(void *ctx, coll_op op, const int *gpus, int n, double bytes, uint32_t kind,
                    uint32_t id)
{
    comm_ctx *cc = ctx;
    coll_spec s = {.op = op, .algo = cc->algo, .group = gpus, .n = n, .bytes = bytes,
                   .elem_bytes = cc->elem_bytes};
    dt_error e;
    dt_error_clear(&e);
    int rc = coll_start(cc->ce, &s, kind, id, 0, &e);
    if (rc != DT_OK && s.algo != COLL_AUTO) {
        /* the requested algorithm cannot run this op: fall back to the automatic choice */
        s.algo = COLL_AUTO;
        dt_error_clear(&e);
        rc = coll_start(cc->ce, &s, kind, id, 0, &e);
    }
    DT_ASSERT(rc == DT_OK); /* groups come from the plan: always valid */
}

static void send_fn(void *ctx, int src, int dst, double bytes, uint32_t kind, uint32_t id)
{
    comm_ctx *cc = ctx;
    net_send(cc->n, src, dst, bytes, kind, id, 0);
}

/* ---------------------------------------------------------- timeline ---- */

typedef struct tl_build {
    run_timeline *tl;
    size_t cap_spans, cap_links;
} tl_build;

static void link_observer(void *ctx, int link, sim_time_t start, sim_time_t end, double bytes)
{
    tl_build *b = ctx;
    run_timeline *tl = b->tl;
    if (tl->n_link_spans >= b->cap_links) {
        b->cap_links = b->cap_links ? 2 * b->cap_links : 1024;
        tl->link_spans = dt_xrealloc(tl->link_spans, b->cap_links * sizeof *tl->link_spans);
    }
    tl->link_spans[tl->n_link_spans++] = (run_link_span){link, start, end, bytes};
}

/* "0-7,64" -> mask; NULL selects all. Returns false on a malformed selection. */
static bool gpu_selection(const char *sel, int n, unsigned char *mask)
{
    memset(mask, sel ? 0 : 1, (size_t)n);
    if (!sel) return true;
    const char *s = sel;
    while (*s) {
        char *e;
        long a = strtol(s, &e, 10), b;
        if (e == s || a < 0) return false;
        b = a;
        if (*e == '-') {
            s = e + 1;
            b = strtol(s, &e, 10);
            if (e == s || b < a) return false;
        }
        for (long i = a; i <= b && i < n; i++) mask[i] = 1;
        if (*e == ',') e++;
        else if (*e) return false;
        s = e;
    }
    return true;
}

static void add_span(tl_build *b, int gpu, run_stream st, sim_time_t s, sim_time_t e, int name,
                     int mb, int layer)
{
    run_timeline *tl = b->tl;
    if (e <= s) return;
    if (tl->n_spans >= b->cap_spans) {
        b->cap_spans = b->cap_spans ? 2 * b->cap_spans : 4096;
        tl->spans = dt_xrealloc(tl->spans, b->cap_spans * sizeof *tl->spans);
    }
    tl->spans[tl->n_spans++] = (run_span){gpu, st, s, e, name, mb, layer};
}

static void build_timeline(tl_build *b, const wl_graph *g, const replay_result *r, const topo *t,
                           const unsigned char *mask)
{
    run_timeline *tl = b->tl;
    tl->n_names = g->n_names + 2;
    tl->names = dt_xcalloc(tl->n_names, sizeof *tl->names);
    for (uint32_t i = 0; i < g->n_names; i++) tl->names[i] = dt_xstrdup(g->names[i]);
    int n_tp = (int)g->n_names, n_wait = n_tp + 1;
    tl->names[n_tp] = dt_xstrdup("tp_collectives");
    tl->names[n_wait] = dt_xstrdup("wait_for_peers");
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const wl_op *o = &g->ops[i];
        for (int k = 0; k < g->lane_size; k++) {
            int gpu = g->lane_gpus[(size_t)o->lane * g->lane_size + k];
            if (!mask[gpu]) continue;
            sim_time_t s = r->op_start[i], l = r->op_launch[i], e = r->op_end[i];
            if (o->kind == WL_OP_COMPUTE) {
                add_span(b, gpu, RUN_STREAM_COMPUTE, s, e - r->op_inlane[i], o->name, o->mb,
                         o->layer);
                add_span(b, gpu, RUN_STREAM_TP, e - r->op_inlane[i], e, n_tp, o->mb, o->layer);
            } else {
                run_stream st = o->kind == WL_OP_SEND ? RUN_STREAM_PP : RUN_STREAM_DP;
                add_span(b, gpu, st, s, l, n_wait, o->mb, o->layer);
                add_span(b, gpu, st, l, e, o->name, o->mb, o->layer);
            }
        }
    }
    tl->n_links = (size_t)t->n_links;
    tl->link_names = dt_xcalloc(tl->n_links + 1, sizeof *tl->link_names);
    for (int l = 0; l < t->n_links; l++) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s->%s", t->nodes[t->links[l].src].name,
                 t->nodes[t->links[l].dst].name);
        tl->link_names[l] = dt_xstrdup(buf);
    }
    tl->link_gpu = dt_xmalloc(2 * (tl->n_links + 1) * sizeof *tl->link_gpu);
    tl->link_host = dt_xmalloc(2 * (tl->n_links + 1) * sizeof *tl->link_host);
    for (int l = 0; l < t->n_links; l++) {
        const topo_node *a = &t->nodes[t->links[l].src], *z = &t->nodes[t->links[l].dst];
        tl->link_gpu[2 * l] = a->kind == TOPO_GPU ? a->gpu : -1;
        tl->link_gpu[2 * l + 1] = z->kind == TOPO_GPU ? z->gpu : -1;
        tl->link_host[2 * l] = a->host;
        tl->link_host[2 * l + 1] = z->host;
    }
    tl->n_gpus = t->n_gpus;
    tl->gpu_host = dt_xcalloc((size_t)t->n_gpus + 1, sizeof *tl->gpu_host);
    for (int i = 0; i < t->n_gpus; i++) tl->gpu_host[i] = t->nodes[t->gpu_node[i]].host;
    tl->n_hosts = t->n_hosts;
    tl->host_names = dt_xcalloc((size_t)t->n_hosts + 1, sizeof *tl->host_names);
    for (int h = 0; h < t->n_hosts; h++) {
        char buf[32];
        snprintf(buf, sizeof buf, "host%d", h);
        tl->host_names[h] = dt_xstrdup(buf);
    }
}

void run_timeline_free(run_timeline *tl)
{
    if (!tl) return;
    for (size_t i = 0; i < tl->n_names; i++) free(tl->names[i]);
    for (size_t i = 0; i < tl->n_links; i++) free(tl->link_names[i]);
    for (int i = 0; i < tl->n_hosts; i++) free(tl->host_names[i]);
    free(tl->names);
    free(tl->link_names);
    free(tl->link_gpu);
    free(tl->link_host);
    free(tl->host_names);
    free(tl->spans);
    free(tl->link_spans);
    free(tl->gpu_host);
    free(tl);
}

void run_result_free(run_result *r)
{
    if (!r) return;
    run_timeline_free(r->timeline);
    r->timeline = NULL;
}

/* ----------------------------------------------------------- the run ---- */

typedef struct job {
    wl_graph *g;
    topo *t;
    const wl_env *env; /* the scenario's or the trace's (seed and network overrides applied) */
} job;

static int simulate(const job *J, const run_options *opt, run_result *out, dt_error *err)
{
    const wl_graph *g = J->g;
    topo *t = J->t;
    sim_engine *eng = sim_engine_create();
    net_config nc = {.mode = J->env->network};
    net *n = net_create(t, eng, &nc);
    /* One pipelining chunk per ring step: in the fluid model chunking leaves a ring's time
     * unchanged (coll_ring.c) and only multiplies flows and events. */
    coll_config cc = {.reduce_bw = -1, .chunk_bytes = 1e18, .ring_model = J->env->ring_model};
    coll_engine *ce = coll_create(n, eng, t, &cc);
    coll_analytic *an = coll_analytic_create(n, t, &cc);
    comm_ctx ctx = {.n = n, .ce = ce, .an = an, .elem_bytes = g->precision == GPU_FP32 ? 4 : 2,
                    .algo = J->env->dp_algorithm};
    replay_comm comm = {.coll = coll_fn, .send = send_fn, .ctx = &ctx};
    double *slow = dt_xcalloc((size_t)t->n_gpus + 1, sizeof *slow);
    for (int i = 0; i < t->n_gpus; i++) slow[i] = 1;
    for (int i = 0; i < J->env->n_stragglers; i++)
        slow[J->env->stragglers[i].gpu] *= J->env->stragglers[i].slowdown;
    bool record = opt && (opt->record_timeline || opt->timeline);
    tl_build tb = {0};
    if (record) {
        tb.tl = dt_xcalloc(1, sizeof *tb.tl);
        net_set_link_observer(n, link_observer, &tb);
    }
    /* Analytic mode needs no flows: coll_analytic_time charges the algorithm flow mode would
     * run, alpha-beta over its routes (exact for uncontended links), with no events per step. */
    replay_config rc = {.gpus = t->gpus, .n_gpus = t->n_gpus, .op_time = gpu_op_time,
                     .coll_time = coll_time_fn, .coll_ctx = &ctx,
                     .comm = J->env->network == NET_FLOW ? &comm : NULL, .eng = eng,
                     .slowdown = slow, .jitter = J->env->jitter,
                     .jitter_sigma = J->env->jitter_sigma,
                     .seed = J->env->seed, .record = record};
    replay_result r;
    int st = replay_run(g, &rc, &r, err);
    if (st == DT_OK) {
        out->step_time_s = sim_time_to_s(r.step_time);
        out->breakdown_s.compute = sim_time_to_s(r.compute);
        out->breakdown_s.comm_exposed = sim_time_to_s(r.comm_exposed);
        out->breakdown_s.bubble = sim_time_to_s(r.bubble);
        out->breakdown_s.straggler_wait = sim_time_to_s(r.straggler_wait);
        out->max_straggler_wait_s = sim_time_to_s(r.max_straggler_wait);
        out->max_straggler_wait_gpu = r.max_straggler_wait_gpu;
        out->critical_gpu = r.critical_gpu;
        out->events = sim_events_handled(eng);
        double T = out->step_time_s;
        if (T > 0) {
            out->throughput.samples_per_s = g->samples_per_step / T;
            out->throughput.tokens_per_s = g->tokens_per_step / T;
            out->throughput.tflops_per_gpu = g->model_flops_per_step / T / g->n_gpus / 1e12;
            double peak = t->gpus[0].peak_flops[g->precision];
            out->throughput.mfu = peak > 0 ? out->throughput.tflops_per_gpu * 1e12 / peak : 0;
        }
        out->n_gpus = g->n_gpus;
        out->cost_per_step_usd = T / 3600.0 * g->n_gpus * t->gpus[0].cost_per_hour;
        out->seed = J->env->seed;
        if (record) {
            unsigned char *mask = dt_xmalloc((size_t)t->n_gpus + 1);
            if (!gpu_selection(opt->timeline_gpus, t->n_gpus, mask)) {
                st = dt_error_set(err, DT_EINPUT, NULL, "--timeline-gpus",
                                  "expected GPU ranges such as \"0-7,64\", found \"%s\"",
                                  opt->timeline_gpus);
            } else {
                build_timeline(&tb, g, &r, t, mask);
                out->timeline = tb.tl;
                tb.tl = NULL;
            }
            free(mask);
        }
    }
    if (tb.tl) run_timeline_free(tb.tl);
    replay_result_free(&r);
    free(slow);
    coll_analytic_destroy(an);
    coll_destroy(ce);
    net_destroy(n);
    sim_engine_destroy(eng);
    return st;
}

static void fill_memory(const mem_breakdown *mb, const topo *t, struct run_memory *m, bool *fits)
{
    m->params = mb->params;
    m->grads = mb->grads;
    m->optimizer = mb->optimizer;
    m->activations = mb->activations + mb->buffers;
    m->peak = mb->peak;
    m->capacity = INFINITY;
    for (int i = 0; i < t->n_gpus; i++)
        if (t->gpus[i].hbm_bytes < m->capacity) m->capacity = t->gpus[i].hbm_bytes;
    *fits = m->peak <= m->capacity;
}

/* Parse, build the topology and resolve the plan: shared by run and memory. */
/* options.calibration: fitted link figures onto the topology (calibration module), and the
 * fitted top-k throughput unless the plan gives one. */
static int apply_calibration(const js_ctx *c, wl_scenario *s, const char *base_dir, topo *t,
                             char *note, size_t note_size)
{
    char path[1024];
    if (s->calibration[0] != '/' && base_dir && base_dir[0])
        snprintf(path, sizeof path, "%s/%s", base_dir, s->calibration);
    else
        snprintf(path, sizeof path, "%s", s->calibration);
    cal_result *cal = NULL;
    int rc = cal_load_file(path, &cal, c->err);
    if (rc == DT_EIO) {
        char msg[DT_ERR_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", c->err->msg);
        return js_fail(c, "options", "calibration", "calibration file \"%s\": %s", path, msg);
    }
    if (rc != DT_OK) return rc;
    char local[256] = "";
    rc = topo_apply_calibration(t, cal, note ? note : local, note ? note_size : sizeof local, c->err);
    double topk = cal_topk_throughput(cal);
    if (rc == DT_OK && topk > 0 && s->plan.topk_throughput == 0) s->plan.topk_throughput = topk;
    cal_result_destroy(cal);
    return rc;
}

static int prepare(const cJSON *j, const char *file, const char *base_dir, wl_scenario *s,
                   topo **t, char *note, size_t note_size, dt_error *err)
{
    js_ctx c = {file ? file : "<scenario>", err};
    *t = NULL;
    TRY(wl_scenario_parse(&c, j, s));
    int rc = load_topology(&c, s->topology, "topology", base_dir, t);
    if (rc == DT_OK) rc = apply_gpu(&c, s->gpu, "gpu", *t);
    if (rc == DT_OK) rc = apply_degraded(&c, s->env.degraded, s->env.n_degraded, *t);
    if (rc == DT_OK && s->calibration[0]) rc = apply_calibration(&c, s, base_dir, *t, note, note_size);
    if (rc == DT_OK) rc = wl_scenario_resolve(&c, s, (*t)->n_gpus);
    if (rc != DT_OK) {
        topo_destroy(*t);
        *t = NULL;
        wl_scenario_free(s);
    }
    return rc;
}

int run_memory(const cJSON *scenario, const char *file, const char *base_dir, struct run_memory *out,
               bool *fits, dt_error *err)
{
    wl_scenario s;
    topo *t;
    TRY(prepare(scenario, file, base_dir, &s, &t, NULL, 0, err));
    mem_breakdown mb;
    mem_compute(&s.model, &s.plan, &mb);
    fill_memory(&mb, t, out, fits);
    topo_destroy(t);
    wl_scenario_free(&s);
    return DT_OK;
}

/* Writes PATH.tmp and hands its name back in *tmp_out (caller-owned): run_scenario renames it
 * into place only once the step has simulated, so a failed run leaves no trace file. */
static int write_trace_file(const char *path, const wl_graph *g, const trace_env *env,
                            char **tmp_out, dt_error *err)
{
    size_t n = strlen(path) + 32;
    char *tmp = dt_xmalloc(n);
    snprintf(tmp, n, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        free(tmp);
        return dt_error_set(err, DT_EIO, path, NULL, "cannot write the trace");
    }
    int rc = trace_write(f, g, env, err);
    if (fclose(f) != 0 && rc == DT_OK) rc = dt_error_set(err, DT_EIO, path, NULL, "write failed");
    if (rc != DT_OK) {
        remove(tmp);
        free(tmp);
        return rc;
    }
    *tmp_out = tmp;
    return rc;
}

int run_scenario(const cJSON *scenario, const char *file, const char *base_dir,
                 const run_options *opt, run_result *out, dt_error *err)
{
    double t0 = now_s();
    memset(out, 0, sizeof *out);
    wl_scenario s;
    topo *t;
    TRY(prepare(scenario, file, base_dir, &s, &t, out->calibration_note,
                sizeof out->calibration_note, err));
    if (opt && opt->have_seed) s.env.seed = opt->seed;
    if (opt && opt->have_network) s.env.network = opt->network;
    mem_breakdown mb;
    mem_compute(&s.model, &s.plan, &mb);
    fill_memory(&mb, t, &out->memory, &out->fits);
    {
        static const char *const prec[] = {"fp32", "fp16", "bf16", "fp8"};
        const wl_plan *p = &s.plan;
        char v[32] = "", np[32];
        double P = wl_total_params(&s.model);
        snprintf(np, sizeof np, P >= 1e9 ? "%.3g B" : "%.3g M", P >= 1e9 ? P / 1e9 : P / 1e6);
        if (p->schedule == WL_INTERLEAVED) snprintf(v, sizeof v, " v %d", p->virtual_stages);
        snprintf(out->summary, sizeof out->summary,
                 "%s (%s params), tp %d x pp %d x dp %d, %s%s, %d microbatch%s of %d, %s, "
                 "ZeRO-%d%s",
                 s.model.name, np, p->tp, p->pp, p->dp,
                 p->pp > 1 ? wl_schedule_name(p->schedule) : "no pipeline", v, p->microbatches,
                 p->microbatches == 1 ? "" : "es", p->micro_batch_size, prec[p->precision], p->zero,
                 s.env.network == NET_ANALYTIC ? ", analytic network" : "");
    }
    int rc = DT_OK;
    if (s.model.kind == WL_PARAMS) {
        rc = dt_error_set(err, DT_EINPUT, file, "model.kind",
                          "a \"params\" model only plans memory (dtsim memory); use "
                          "\"transformer\" or \"synthetic\" to simulate a step");
    }
    /* A plan with 2^30 microbatches is valid but its graph would not fit in memory (dt_xmalloc
     * aborts): refuse graphs far beyond the largest scenario shipped (gpt3-175b: 1.5e5 ops).
     * The estimate over-counts (4 ops per lane, microbatch and model chunk, plus per-layer DP
     * or ZeRO-3 ops); 2^26 ops is a few GB. */
    const wl_plan *P = &s.plan;
    double est_ops = 4.0 * P->dp * P->pp * P->microbatches * P->virtual_stages +
                     4.0 * P->dp * s.model.layers * (P->zero == 3 ? P->microbatches : 1);
    if (rc == DT_OK && est_ops > (double)(1 << 26))
        rc = dt_error_set(err, DT_EINPUT, file, "parallel.microbatches",
                          "the step's op graph would have about %.3g ops (dp %d x pp %d x "
                          "%d microbatches x %d virtual stages x 4), more than dtsim simulates "
                          "(%d); use fewer microbatches (dtsim memory still works)",
                          est_ops, P->dp, P->pp, P->microbatches, P->virtual_stages, 1 << 26);
    wl_graph *g = rc == DT_OK ? wl_graph_build(&s) : NULL;
    char *trace_tmp = NULL;
    trace_env env = {.gpu = NULL, .env = s.env, .mem_params = out->memory.params,
                     .mem_grads = out->memory.grads, .mem_optimizer = out->memory.optimizer,
                     .mem_activations = out->memory.activations, .mem_peak = out->memory.peak};
    snprintf(env.name, sizeof env.name, "%s", s.name);
    env.gpu = s.gpu ? (cJSON *)s.gpu : NULL;
    if (rc == DT_OK && opt && opt->write_trace)
        rc = write_trace_file(opt->write_trace, g, &env, &trace_tmp, err);
    if (rc == DT_OK && opt && opt->on_graph) rc = opt->on_graph(opt->on_graph_ctx, g, &env, t, err);
    if (rc == DT_OK) {
        job J = {.g = g, .t = t, .env = &s.env};
        rc = simulate(&J, opt, out, err);
        if (rc == DT_EINPUT && !err->file[0] && file)
            snprintf(err->file, sizeof err->file, "%s", file);
    }
    if (trace_tmp) { /* "syn.json --write-trace t.json" left t.json after a failed step */
        if (rc == DT_OK && rename(trace_tmp, opt->write_trace) != 0)
            rc = dt_error_set(err, DT_EIO, opt->write_trace, NULL,
                              "cannot rename the trace into place");
        if (rc != DT_OK) remove(trace_tmp);
        free(trace_tmp);
    }
    wl_graph_destroy(g);
    topo_destroy(t);
    wl_scenario_free(&s);
    out->wall_s = now_s() - t0;
    return rc;
}

static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return dt_xstrdup(".");
    size_t n = (size_t)(slash - path);
    char *d = dt_xmalloc(n + 2);
    memcpy(d, path, n);
    d[n] = 0;
    if (n == 0) strcpy(d, "/");
    return d;
}

int run_scenario_file(const char *filename, const run_options *opt, run_result *out,
                      dt_error *err)
{
    memset(out, 0, sizeof *out); /* callers free out->timeline even when the file is bad */
    cJSON *j;
    TRY(js_parse_file(filename, &j, err));
    char *dir = dir_of(filename);
    int rc = run_scenario(j, filename, dir, opt, out, err);
    free(dir);
    cJSON_Delete(j);
    return rc;
}

int run_memory_file(const char *filename, struct run_memory *out, bool *fits, dt_error *err)
{
    cJSON *j;
    TRY(js_parse_file(filename, &j, err));
    char *dir = dir_of(filename);
    int rc = run_memory(j, filename, dir, out, fits, err);
    free(dir);
    cJSON_Delete(j);
    return rc;
}

/* Simulate graph g read from `source` (a trace file or a Chakra prefix) with its environment on
 * the topology in topology_file: what --trace and --trace-chakra share. */
static int run_graph(wl_graph *g, trace_env *tr, const char *source, const char *topology_file,
                     const run_options *opt, run_result *out, dt_error *err)
{
    topo *t = NULL;
    int rc = topo_load_file(topology_file, &t, err);
    if (rc == DT_OK) {
        js_ctx c = {source, err};
        rc = apply_gpu(&c, tr->gpu, "environment.gpu", t);
        if (rc == DT_OK) rc = apply_degraded(&c, tr->env.degraded, tr->env.n_degraded, t);
        if (rc == DT_OK && t->n_gpus < g->n_gpus)
            rc = dt_error_set(err, DT_EINPUT, topology_file, NULL,
                              "the trace uses %d GPUs but the topology has %d", g->n_gpus,
                              t->n_gpus);
        for (int i = 0; rc == DT_OK && i < tr->env.n_stragglers; i++)
            if (tr->env.stragglers[i].gpu >= g->n_gpus) {
                char p[JS_PATH_MAX];
                js_path_index(p, "environment.stragglers", i);
                rc = js_fail(&c, p, "gpu", "the trace has GPUs 0..%d, found %d", g->n_gpus - 1,
                             tr->env.stragglers[i].gpu);
            }
    }
    if (rc == DT_OK) {
        if (opt && opt->have_seed) tr->env.seed = opt->seed;
        if (opt && opt->have_network) tr->env.network = opt->network;
        out->memory = (struct run_memory){.params = tr->mem_params, .grads = tr->mem_grads,
                                   .optimizer = tr->mem_optimizer,
                                   .activations = tr->mem_activations, .peak = tr->mem_peak};
        out->memory.capacity = INFINITY;
        for (int i = 0; i < t->n_gpus; i++)
            if (t->gpus[i].hbm_bytes < out->memory.capacity)
                out->memory.capacity = t->gpus[i].hbm_bytes;
        out->fits = out->memory.peak <= out->memory.capacity;
        if (opt && opt->on_graph) rc = opt->on_graph(opt->on_graph_ctx, g, tr, t, err);
    }
    if (rc == DT_OK) {
        job J = {.g = g, .t = t, .env = &tr->env};
        rc = simulate(&J, opt, out, err);
        if (rc == DT_EINPUT && !err->file[0]) /* replay errors (cycles, overflow) are the trace's */
            snprintf(err->file, sizeof err->file, "%s", source);
    }
    topo_destroy(t);
    return rc;
}

int run_trace_file(const char *trace_file, const char *topology_file, const run_options *opt,
                   run_result *out, dt_error *err)
{
    double t0 = now_s();
    memset(out, 0, sizeof *out);
    cJSON *tj = NULL;
    int rc = js_parse_file(trace_file, &tj, err);
    wl_graph *g = NULL;
    trace_env tr;
    memset(&tr, 0, sizeof tr);
    if (rc == DT_OK) {
        js_ctx c = {trace_file, err};
        rc = trace_read(&c, tj, &g, &tr);
    }
    if (rc == DT_OK) rc = run_graph(g, &tr, trace_file, topology_file, opt, out, err);
    wl_graph_destroy(g);
    trace_env_free(&tr);
    cJSON_Delete(tj);
    out->wall_s = now_s() - t0;
    return rc;
}

int run_chakra(const char *dir_or_prefix, const char *topology_file, const run_options *opt,
               run_result *out, dt_error *err)
{
    double t0 = now_s();
    memset(out, 0, sizeof *out);
    wl_graph *g = NULL;
    trace_env tr;
    memset(&tr, 0, sizeof tr);
    chakra_read_options co = {.groups_file = opt ? opt->chakra_groups : NULL,
                              .warn = opt ? opt->warn : NULL, .warn_ctx = opt ? opt->warn_ctx : NULL};
    int rc = chakra_read(dir_or_prefix, &co, &g, &tr, err);
    if (rc == DT_OK) rc = run_graph(g, &tr, dir_or_prefix, topology_file, opt, out, err);
    wl_graph_destroy(g);
    trace_env_free(&tr);
    out->wall_s = now_s() - t0;
    return rc;
}
