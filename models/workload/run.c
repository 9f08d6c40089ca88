/* run.c - one simulated training step of a scenario (run.h): the glue between the scenario,
 * the topology, the GPU model, the network and the replay.
 *
 * run_scenario: parse -> topology (+ GPU override, degraded links) -> plan resolved against
 * the GPU count -> memory -> op graph (-> trace file) -> replay -> results.
 * run_memory stops after the memory step: no graph, no engine (the planner calls it a lot).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dtsim/calib.h"
#include "dtsim/chakra.h"
#include "dtsim/coll.h"
#include "dtsim/limits.h"
#include "dtsim/net.h"
#include "dtsim/replay.h"
#include "dtsim/run.h"
#include "dtsim/topo.h"
#include "run_internal.h"
#include "traffic.h"

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

/* A trace's recorded GPU onto the topology file it is replayed on: the specs only (the file's
 * links are what the replay is asked to run on). */
static int apply_gpu(const js_ctx *c, const cJSON *gpu, const char *path, topo *t)
{
    if (!gpu) return DT_OK;
    gpu_spec spec;
    TRY(gpu_spec_from_json(c, gpu, path, &spec));
    for (int i = 0; i < t->n_gpus; i++) t->gpus[i] = spec;
    return DT_OK;
}

/* framework.link_efficiency (wl_env; 0 reads as line rate) */
static void apply_link_efficiency(const wl_env *e, topo *t)
{
    topo_apply_link_efficiency(t, e->link_nvlink > 0 ? e->link_nvlink : 1,
                               e->link_network > 0 ? e->link_network : 1);
}

/* The topology with the scenario's "gpu" override. A generator object is generated with that
 * GPU (its "gpu" replaced), so the links the generator derives from the GPU (a dgx box's NVLink,
 * unless the generator names "nvlink") are the new GPU's: a B200 gets 900 GB/s, not the 450 of
 * the H100 the generator defaults to. A file's links were written for its own GPUs: where the
 * override changes the NVLink figure of a GPU wired to a switch or GPU inside its host, the file
 * is refused (silently keeping the old NVLink made B200 steps 23 % slow); elsewhere (no
 * intra-host fabric, or the same NVLink figure) the override only replaces the specs. */
static int load_with_gpu(const js_ctx *c, const cJSON *tv, const cJSON *gpu, const char *base_dir,
                         topo **out)
{
    if (!gpu) return load_topology(c, tv, "topology", base_dir, out);
    gpu_spec spec;
    TRY(gpu_spec_from_json(c, gpu, "gpu", &spec));
    if (cJSON_IsObject(tv) && cJSON_GetObjectItemCaseSensitive(tv, "generator")) {
        cJSON *copy = cJSON_Duplicate(tv, 1);
        DT_ASSERT(copy != NULL);
        cJSON_DeleteItemFromObjectCaseSensitive(copy, "gpu");
        cJSON_AddItemToObject(copy, "gpu", cJSON_Duplicate(gpu, 1));
        int rc = load_topology(c, copy, "topology", base_dir, out);
        cJSON_Delete(copy);
        if (rc == DT_OK)
            for (int i = 0; i < (*out)->n_gpus; i++) (*out)->gpus[i] = spec;
        return rc;
    }
    TRY(load_topology(c, tv, "topology", base_dir, out));
    topo *t = *out;
    for (int i = 0; i < t->n_gpus; i++) {
        double old = t->gpus[i].nvlink_bw;
        if (fabs(old - spec.nvlink_bw) <= 1e-9 * fabs(old)) continue;
        int v = t->gpu_node[i], host = t->nodes[v].host;
        if (host < 0) continue;
        for (int k = t->out_start[v]; k < t->out_start[v + 1]; k++) {
            const topo_node *z = &t->nodes[t->links[t->out_links[k]].dst];
            if (z->host != host || z->kind == TOPO_NIC) continue;
            char a[32], b[32];
            int rc = js_fail(c, "gpu", NULL,
                             "the topology %s%s%s is a file whose links were written for its own "
                             "GPUs: %s (%s, NVLink %s per direction) is wired to %s inside its "
                             "host, and %s has NVLink %s; generate the topology with that GPU (a "
                             "generator object with \"gpu\") or give the file's GPUs and links "
                             "the new figures",
                             cJSON_IsString(tv) ? "\"" : "",
                             cJSON_IsString(tv) ? tv->valuestring : "(inline)",
                             cJSON_IsString(tv) ? "\"" : "", t->nodes[v].name, t->gpus[i].name,
                             unit_fmt_bandwidth(old, a, sizeof a), z->name, spec.name,
                             unit_fmt_bandwidth(spec.nvlink_bw, b, sizeof b));
            topo_destroy(t);
            *out = NULL;
            return rc;
        }
    }
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
    int servers; /* options.ps_servers */
    traffic_phases *phases; /* algo "auto", "estimate": the step's concurrent groups (NULL: alone) */
} comm_ctx;

/* The algorithm a cross-lane collective runs: options.dp_algorithm, "auto" and "estimate"
 * resolved with the step's concurrent groups of the same op and size (traffic_phases_choice,
 * memoised), so that flow and analytic mode and the traffic report all run the same choice. */
static coll_algo cross_lane_algo(comm_ctx *cc, coll_spec s)
{
    if ((s.algo != COLL_ESTIMATE && s.algo != COLL_AUTO) || s.op == COLL_SENDRECV) return s.algo;
    dt_error e;
    dt_error_clear(&e);
    coll_algo a;
    return traffic_phases_choice(cc->phases, cc->an, &s, &a, &e) == DT_OK ? a : COLL_RULE;
}

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
                   .elem_bytes = cc->elem_bytes, .servers = in_lane ? 0 : cc->servers};
    if (!in_lane) s.algo = cross_lane_algo(cc, s);
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

static void coll_fn(void *ctx, coll_op op, const int *gpus, int n, double bytes, uint32_t tag,
                    uint32_t kind, uint32_t id)
{
    comm_ctx *cc = ctx;
    coll_spec s = {.op = op, .algo = cc->algo, .group = gpus, .n = n, .bytes = bytes,
                   .elem_bytes = cc->elem_bytes, .tag = tag, .servers = cc->servers};
    s.algo = cross_lane_algo(cc, s);
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

/* A point-to-point transfer (pipeline send, context-parallel ring step): spread over the
 * pair's equal-cost paths at once where it has several (net_send_spread: NCCL's send/receive
 * between hosts runs over several channels, each connection pinned to its path). */
static void send_fn(void *ctx, int src, int dst, double bytes, uint32_t tag, uint32_t kind,
                    uint32_t id)
{
    comm_ctx *cc = ctx;
    net_set_tag(cc->n, tag);
    net_send_spread(cc->n, src, dst, bytes, kind, id, 0);
}

/* ---------------------------------------------------------- timeline ---- */

typedef struct tl_build {
    run_timeline *tl;
    size_t cap_spans, cap_links;
} tl_build;

/* ---------------------------------------------------------- link loads ---- */

/* Per directed link: bytes, and the largest users by tag (REPLAY_TAG). A link rarely sees more
 * than a few kinds of traffic; beyond LINK_TAGS distinct tags the rest is counted in bytes only. */
#define LINK_TAGS 8
typedef struct link_acc {
    double bytes;
    uint32_t tag[LINK_TAGS];
    double tag_bytes[LINK_TAGS];
    int n_tags;
} link_acc;

static void acc_add(link_acc *a, uint32_t tag, double bytes)
{
    a->bytes += bytes;
    for (int i = 0; i < a->n_tags; i++)
        if (a->tag[i] == tag) {
            a->tag_bytes[i] += bytes;
            return;
        }
    if (a->n_tags < LINK_TAGS) {
        a->tag[a->n_tags] = tag;
        a->tag_bytes[a->n_tags++] = bytes;
    }
}

static void static_load(void *ctx, int link, double bytes, uint32_t tag)
{
    acc_add(&((link_acc *)ctx)[link], tag, bytes);
}

typedef struct observer {
    tl_build *tb;     /* timeline link spans, or NULL */
    link_acc *acc;    /* link loads, or NULL */
} observer;

static void tl_link_span(tl_build *b, int link, sim_time_t start, sim_time_t end, double bytes);

static void link_observer(void *ctx, int link, sim_time_t start, sim_time_t end, double bytes,
                          uint32_t tag)
{
    observer *o = ctx;
    if (o->acc) acc_add(&o->acc[link], tag, bytes);
    if (o->tb) tl_link_span(o->tb, link, start, end, bytes);
}

static int load_cmp(const void *pa, const void *pb)
{
    const run_link_load *a = pa, *b = pb;
    if (a->utilisation != b->utilisation) return a->utilisation > b->utilisation ? -1 : 1;
    return a->link - b->link;
}

/* Two node names alike but for their digits ("node3.gpu5" and "node0.gpu1"). */
static bool same_role(const char *a, const char *b)
{
    for (;;) {
        while (*a >= '0' && *a <= '9') a++;
        while (*b >= '0' && *b <= '9') b++;
        if (*a != *b) return false;
        if (!*a) return true;
        a++;
        b++;
    }
}

static bool same_load(const topo *t, const run_link_load *a, const run_link_load *b)
{
    if (a->bandwidth != b->bandwidth || a->n_users != b->n_users || a->intra_host != b->intra_host ||
        fabs(a->bytes - b->bytes) > 1e-9 * a->bytes)
        return false;
    const topo_link *la = &t->links[a->link], *lb = &t->links[b->link];
    if (!same_role(t->nodes[la->src].name, t->nodes[lb->src].name) ||
        !same_role(t->nodes[la->dst].name, t->nodes[lb->dst].name))
        return false;
    /* by kind and bytes, not op name: a GPU's uplink sends activations where its downlink
     * receives gradients, and both are the same pipeline traffic */
    for (int u = 0; u < a->n_users; u++)
        if (a->users[u].kind != b->users[u].kind ||
            fabs(a->users[u].bytes - b->users[u].bytes) > 1e-9 * a->users[u].bytes)
            return false;
    return true;
}

/* The `top` most loaded links (bytes / bandwidth), their users largest first; links loaded
 * alike (the same role - endpoint names equal but for digits -, bandwidth, bytes and kinds of
 * users: every GPU's NVLink in a TP group) are listed once with a count, so that the list
 * reaches the fabric. */
static void fill_links(run_result *out, const link_acc *acc, const topo *t, const net *n,
                       const wl_graph *g, double T, int top)
{
    run_link_load *all = dt_xcalloc((size_t)t->n_links + 1, sizeof *all);
    int m = 0;
    for (int l = 0; l < t->n_links; l++) {
        if (!(acc[l].bytes > 0)) continue;
        run_link_load *x = &all[m++];
        const topo_link *lk = &t->links[l];
        const link_acc *a = &acc[l];
        x->link = l;
        x->bandwidth = lk->bandwidth;
        x->bytes = a->bytes;
        x->utilisation = T > 0 ? a->bytes / lk->bandwidth / T : 0;
        x->busy_s = sim_time_to_s(net_link_busy(n, l));
        int ha = t->nodes[lk->src].host, hb = t->nodes[lk->dst].host;
        x->intra_host = ha >= 0 && ha == hb;
        bool used[LINK_TAGS] = {false};
        for (int u = 0; u < RUN_LINK_USERS && u < a->n_tags; u++) {
            int best = -1;
            for (int k = 0; k < a->n_tags; k++)
                if (!used[k] && (best < 0 || a->tag_bytes[k] > a->tag_bytes[best])) best = k;
            used[best] = true;
            uint32_t nm = REPLAY_TAG_NAME(a->tag[best]);
            snprintf(x->users[u].op, sizeof x->users[u].op, "%s",
                     nm == REPLAY_TAG_INLANE
                         ? (REPLAY_TAG_KIND(a->tag[best]) == WL_COMM_CP ? "ring_attention"
                                                                         : "tp_collectives")
                     : nm < g->n_names       ? g->names[nm]
                                             : "?");
            x->users[u].kind = REPLAY_TAG_KIND(a->tag[best]);
            x->users[u].bytes = a->tag_bytes[best];
            x->n_users = u + 1;
        }
    }
    out->links_loaded = m;
    qsort(all, (size_t)m, sizeof *all, load_cmp);
    /* Links loaded alike sort next to each other, but roles interleave (a GPU's uplink, its
     * downlink, the next GPU's uplink): look back over the last few groups, not just one. */
    int kept = 0;
    for (int i = 0; i < m; i++) {
        int grp = -1;
        for (int k = kept - 1; k >= 0 && k >= kept - 8 && grp < 0; k--)
            if (same_load(t, &all[k], &all[i])) grp = k;
        if (grp >= 0) {
            all[grp].alike++;
            continue;
        }
        if (kept == top) break;
        all[kept++] = all[i];
    }
    for (int i = 0; i < kept; i++) {
        const topo_link *lk = &t->links[all[i].link];
        snprintf(all[i].name, sizeof all[i].name, "%s->%s", t->nodes[lk->src].name,
                 t->nodes[lk->dst].name);
    }
    out->links = dt_xrealloc(all, ((size_t)kept + 1) * sizeof *all);
    out->n_links = kept;
}

static void tl_link_span(tl_build *b, int link, sim_time_t start, sim_time_t end, double bytes)
{
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
                     int mb, int layer, int comm)
{
    run_timeline *tl = b->tl;
    if (e <= s) return;
    if (tl->n_spans >= b->cap_spans) {
        b->cap_spans = b->cap_spans ? 2 * b->cap_spans : 4096;
        tl->spans = dt_xrealloc(tl->spans, b->cap_spans * sizeof *tl->spans);
    }
    tl->spans[tl->n_spans++] = (run_span){gpu, st, s, e, name, mb, layer, comm};
}

static void build_timeline(tl_build *b, const wl_graph *g, const replay_result *r, const topo *t,
                           const unsigned char *mask)
{
    run_timeline *tl = b->tl;
    tl->n_names = g->n_names + 3;
    tl->names = dt_xcalloc(tl->n_names, sizeof *tl->names);
    for (uint32_t i = 0; i < g->n_names; i++) tl->names[i] = dt_xstrdup(g->names[i]);
    int n_tp = (int)g->n_names, n_wait = n_tp + 1, n_ring = n_tp + 2;
    tl->names[n_tp] = dt_xstrdup("tp_collectives");
    tl->names[n_wait] = dt_xstrdup("wait_for_peers");
    tl->names[n_ring] = dt_xstrdup("ring_attention");
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const wl_op *o = &g->ops[i];
        for (int k = 0; k < g->lane_size; k++) {
            int gpu = g->lane_gpus[(size_t)o->lane * g->lane_size + k];
            if (!mask[gpu]) continue;
            sim_time_t s = r->op_start[i], l = r->op_launch[i], e = r->op_end[i];
            if (o->kind == WL_OP_COMPUTE) {
                /* the op's in-lane tail: TP collectives, then the ring attention's exposed
                 * part (cp > 1); the ring sends the compute hid run alongside it, from its
                 * start (the breakdown's in-flight CP) */
                sim_time_t in = r->op_inlane[i], ring = r->op_ring ? r->op_ring[i] : 0;
                sim_time_t hid = r->op_ring_hidden ? r->op_ring_hidden[i] : 0;
                if (hid > e - in - s) hid = e - in - s;
                /* compute ops on the DP stream (FSDP's passes after the backward) on its track */
                add_span(b, gpu, o->stream == WL_STREAM_DP ? RUN_STREAM_DP : RUN_STREAM_COMPUTE, s,
                         e - in, o->name, o->mb, o->layer, -1);
                add_span(b, gpu, RUN_STREAM_TP, s, s + hid, n_ring, o->mb, o->layer, WL_COMM_CP);
                add_span(b, gpu, RUN_STREAM_TP, e - in, e - ring, n_tp, o->mb, o->layer,
                         WL_COMM_TP);
                add_span(b, gpu, RUN_STREAM_TP, e - ring, e, n_ring, o->mb, o->layer, WL_COMM_CP);
            } else {
                run_stream st = o->kind == WL_OP_SEND ? RUN_STREAM_PP : RUN_STREAM_DP;
                int kind = o->kind == WL_OP_SEND ? WL_COMM_PP : g->colls[o->arg].kind;
                add_span(b, gpu, st, s, l, n_wait, o->mb, o->layer, kind);
                add_span(b, gpu, st, l, e, o->name, o->mb, o->layer, kind);
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
    free(r->links);
    r->links = NULL;
    r->n_links = 0;
}

/* ----------------------------------------------------------- the run ---- */

/* The peak a GPU computes at for precision p: a precision it lacks falls back to the next
 * wider one, as replay_roofline runs it. */
static double peak_at(const gpu_spec *s, gpu_precision prec)
{
    int p = (int)prec;
    while (p > 0 && s->peak_flops[p] <= 0) p--;
    return s->peak_flops[p];
}

/* Price, peak and MFU of a step over the GPUs the op graph really uses (its lanes' GPUs), each
 * with its own figures: the same mixed cluster costs the same whatever order its GPUs are
 * listed in. O(GPUs x types listed). */
void run_account_gpus(const wl_graph *g, const topo *t, run_result *out)
{
    out->n_gpu_types = 0;
    out->peak_flops_total = 0;
    out->cost_per_hour_total = 0;
    size_t n = (size_t)g->n_lanes * (size_t)g->lane_size;
    unsigned char *seen = dt_xcalloc((size_t)t->n_gpus + 1, 1);
    for (size_t i = 0; i < n; i++) {
        int gi = g->lane_gpus[i];
        if (gi < 0 || gi >= t->n_gpus || seen[gi]) continue;
        seen[gi] = 1;
        const gpu_spec *s = &t->gpus[gi];
        double peak = peak_at(s, g->precision);
        out->peak_flops_total += peak;
        out->cost_per_hour_total += s->cost_per_hour;
        int k = 0;
        while (k < out->n_gpu_types && strcmp(out->gpu_types[k].name, s->name)) k++;
        if (k == out->n_gpu_types) {
            if (k == RUN_GPU_TYPES) continue;
            struct run_gpu_type *ty = &out->gpu_types[k];
            snprintf(ty->name, sizeof ty->name, "%s", s->name);
            ty->peak_flops = peak;
            ty->cost_per_hour = s->cost_per_hour;
            ty->hbm_bytes = s->hbm_bytes;
            out->n_gpu_types++;
        }
        out->gpu_types[k].count++;
    }
    free(seen);
    double T = out->step_time_s;
    out->throughput.mfu = T > 0 && out->peak_flops_total > 0
                              ? g->model_flops_per_step / T / out->peak_flops_total : 0;
    out->cost_per_step_usd = T / 3600.0 * out->cost_per_hour_total;
}

int run_job_simulate(run_job *J, const run_options *opt, run_result *out, dt_error *err)
{
    const wl_graph *g = J->g;
    topo *t = J->t;
    sim_engine *eng = sim_engine_create();
    net_config nc = {.mode = J->env->network, .pxn = J->env->coll_library == COLL_LIB_NCCL};
    net *n = net_create(t, eng, &nc);
    /* One pipelining chunk per ring step: in the fluid model chunking leaves a ring's time
     * unchanged (coll_ring.c) and only multiplies flows and events. */
    coll_config cc = {.reduce_bw = -1, .chunk_bytes = 1e18, .ring_model = J->env->ring_model,
                      .library = J->env->coll_library};
    coll_engine *ce = coll_create(n, eng, t, &cc);
    coll_analytic *an = coll_analytic_create(n, t, &cc);
    comm_ctx ctx = {.n = n, .ce = ce, .an = an, .elem_bytes = g->precision == GPU_FP32 ? 4 : 2,
                    .algo = J->env->dp_algorithm, .servers = J->env->ps_servers,
                    .phases = J->env->dp_algorithm == COLL_ESTIMATE || J->env->dp_algorithm == COLL_AUTO
                                  ? traffic_phases_create(g)
                                  : NULL};
    replay_comm comm = {.coll = coll_fn, .send = send_fn, .ctx = &ctx};
    double *slow = wl_env_slowdowns(J->env, t->n_gpus, NULL);
    bool record = opt && (opt->record_timeline || opt->timeline);
    int top_links = opt && opt->links > 0 ? opt->links : 0;
    tl_build tb = {0};
    observer ob = {0};
    if (record) {
        tb.tl = dt_xcalloc(1, sizeof *tb.tl);
        ob.tb = &tb;
    }
    if (top_links) ob.acc = dt_xcalloc((size_t)t->n_links + 1, sizeof *ob.acc);
    if (ob.tb || ob.acc) net_set_link_observer(n, link_observer, &ob);
    /* Analytic mode needs no flows: coll_analytic_time charges the algorithm flow mode would
     * run, alpha-beta over its routes (exact for uncontended links), with no events per step. */
    replay_config rc = {.gpus = t->gpus, .n_gpus = t->n_gpus, .op_time = gpu_op_time,
                     .gemm_time = gpu_gemm_time,
                     .coll_time = coll_time_fn, .coll_ctx = &ctx,
                     .comm = J->env->network == NET_FLOW ? &comm : NULL, .eng = eng,
                     .slowdown = slow, .jitter = J->env->jitter,
                     .jitter_sigma = J->env->jitter_sigma,
                     .seed = J->env->seed, .record = record, .backup_drop = J->backup_drop,
                     .contention = !J->env->no_contention,
                     .contention_sms = J->env->contention_sms, .deadline = J->deadline};
    replay_result r;
    int st = replay_run(g, &rc, &r, err);
    if (st == DT_OK && r.stopped_at_deadline) {
        out->stopped_at_deadline = true;
        out->step_time_s = sim_time_to_s(r.step_time);
        out->events = sim_events_handled(eng);
        out->n_gpus = g->n_gpus;
    } else if (st == DT_OK) {
        out->step_time_s = sim_time_to_s(r.step_time);
        out->breakdown_s.compute = sim_time_to_s(r.compute);
        out->host_wait_s = sim_time_to_s(r.host_wait);
        out->breakdown_s.comm_exposed = sim_time_to_s(r.comm_exposed);
        out->breakdown_s.bubble = sim_time_to_s(r.bubble);
        out->breakdown_s.straggler_wait = sim_time_to_s(r.straggler_wait);
        for (int k = 0; k < WL_COMM_KIND_COUNT; k++) {
            out->comm_exposed_by_kind_s[k] = sim_time_to_s(r.comm_by_kind[k]);
            out->comm_inflight_by_kind_s[k] = sim_time_to_s(r.comm_inflight[k]);
        }
        out->max_straggler_wait_s = sim_time_to_s(r.max_straggler_wait);
        out->max_straggler_wait_gpu = r.max_straggler_wait_gpu;
        out->critical_gpu = r.critical_gpu;
        out->events = sim_events_handled(eng);
        double T = out->step_time_s;
        if (T > 0) {
            out->throughput.samples_per_s = g->samples_per_step / T;
            out->throughput.tokens_per_s = g->tokens_per_step / T;
            out->throughput.tflops_per_gpu = g->model_flops_per_step / T / g->n_gpus / 1e12;
        }
        out->n_gpus = g->n_gpus;
        run_account_gpus(g, t, out);
        traffic_env te = {.t = t, .an = an, .algo = J->env->dp_algorithm,
                          .servers = J->env->ps_servers,
                          .elem_bytes = ctx.elem_bytes, .phases = ctx.phases};
        double sent[WL_COMM_KIND_COUNT];
        traffic_bytes(g, &te, sent);
        out->bytes_sent_per_gpu_total = 0;
        for (int k = 0; k < WL_COMM_KIND_COUNT; k++) {
            out->bytes_sent_per_gpu[k] = g->n_gpus > 0 ? sent[k] / g->n_gpus : 0;
            out->bytes_sent_per_gpu_total += out->bytes_sent_per_gpu[k];
        }
        if (top_links) {
            traffic_loads(g, &te, J->env->network == NET_ANALYTIC, static_load, ob.acc);
            fill_links(out, ob.acc, t, n, g, T, top_links);
        }
        out->seed = J->env->seed;
        J->n_dropped = r.n_dropped;
        if (J->lane_end)
            memcpy(J->lane_end, r.lane_end, (size_t)g->n_lanes * sizeof *J->lane_end);
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
    free(ob.acc);
    replay_result_free(&r);
    free(slow);
    traffic_phases_destroy(ctx.phases);
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
    rc = topo_apply_calibration_fits(t, cal, s->calibration_fit, note ? note : local,
                                     note ? note_size : sizeof local, c->err);
    if (rc == DT_EINPUT && !strcmp(c->err->path, "fits")) {
        /* a chosen fit the file lacks: the scenario's option is what to fix */
        char msg[DT_ERR_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", c->err->msg);
        rc = js_fail(c, "options", "calibration_fit", "calibration file \"%s\": %s", path, msg);
    }
    double topk = cal_topk_throughput(cal);
    if (rc == DT_OK && topk > 0 && s->plan.topk_throughput == 0) s->plan.topk_throughput = topk;
    cal_result_destroy(cal);
    return rc;
}

/* The plan against the topology: resolved, placed, balanced, checked (prepare and the
 * planner's probes share it). */
static int resolve_plan(const js_ctx *cx, wl_scenario *s, topo *t)
{
    js_ctx c = *cx;
    int rc = wl_scenario_resolve(&c, s, t->n_gpus);
    /* placement before balancing: speeds are read per rank through wl_gpu_of */
    if (rc == DT_OK && s->plan.place_by_bandwidth) rc = wl_place_by_bandwidth(&c, s, t);
    if (rc == DT_OK && s->plan.balance == WL_BALANCE_SPEED) {
        /* speeds as the replay will run them: the op time of each GPU's own spec, times its
         * straggler slowdown (jitter is random and left out) */
        double *slow = wl_env_slowdowns(&s->env, t->n_gpus, NULL);
        rc = wl_balance_speed(&c, s, t->gpus, t->n_gpus, slow, gpu_op_time);
        free(slow);
    }
    if (rc == DT_OK && s->env.ps_servers > s->plan.dp)
        rc = js_fail(&c, "options", "ps_servers",
                     "expected at most dp = %d servers (each is one of the data-parallel group's "
                     "GPUs), found %d", s->plan.dp, s->env.ps_servers);
    return rc;
}

static int prepare(const cJSON *j, const char *file, const char *base_dir, wl_scenario *s,
                   topo **t, char *note, size_t note_size, dt_error *err)
{
    js_ctx c = {file ? file : "<scenario>", err};
    *t = NULL;
    TRY(wl_scenario_parse(&c, j, s));
    int rc = load_with_gpu(&c, s->topology, s->gpu, base_dir, t);
    if (rc == DT_OK) rc = apply_degraded(&c, s->env.degraded, s->env.n_degraded, *t);
    /* the framework's protocol efficiency first: a calibration replaces the links it measured */
    if (rc == DT_OK) apply_link_efficiency(&s->env, *t);
    if (rc == DT_OK && s->calibration[0]) rc = apply_calibration(&c, s, base_dir, *t, note, note_size);
    if (rc == DT_OK) rc = resolve_plan(&c, s, *t);
    if (rc != DT_OK) {
        topo_destroy(*t);
        *t = NULL;
        wl_scenario_free(s);
    }
    return rc;
}

int run_prepare(const cJSON *scenario, const char *file, const char *base_dir, wl_scenario *s,
                topo **t, dt_error *err)
{
    return prepare(scenario, file, base_dir, s, t, NULL, 0, err);
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

/* ------------------------------------------------------------ probes ---- */

/* One topology with everything the scenario applies to it, and the network objects the
 * in-lane collective costs need (coll_analytic_time reads routes through a net). */
typedef struct probe_entry {
    char *key;
    topo *t;
    sim_engine *eng;
    net *n;
    coll_analytic *an;
    double cal_topk; /* the calibration's top-k throughput (0 none), applied as prepare() does */
    /* Cuts for collective bounds: each host, and each GPU without a host; what their links
     * can bring in from outside, B/s */
    double *cut_in;
    int n_cuts;
    /* Without GPU forwarding, per GPU: the bandwidth of its in-links that traffic from outside
     * its host can reach without passing a GPU (a DGX GPU: its NIC's link, not the NVSwitch's);
     * NULL when GPUs forward (ring, torus) */
    double *ext_in;
    /* per GPU: the bandwidth of all its in-links (whatever reaches the GPU comes over them) */
    double *gpu_in;
    double *cap;        /* scratch, n_cuts */
    int *cnt, *touched; /* scratch, n_cuts */
    double *need;       /* scratch, n_cuts */
    /* the op-graph bound's working arrays (graph_lower_bound), kept from probe to probe: the
     * planner probes thousands of plans, and fresh arrays of every op each time cost it more in
     * page faults than the longest path itself */
    char *lb_buf;
    size_t lb_cap;
} probe_entry;

struct run_probe_cache {
    probe_entry *e;
    int n, cap;
};

run_probe_cache *run_probe_cache_create(void) { return dt_xcalloc(1, sizeof(run_probe_cache)); }

void run_probe_cache_destroy(run_probe_cache *c)
{
    if (!c) return;
    for (int i = 0; i < c->n; i++) {
        coll_analytic_destroy(c->e[i].an);
        free(c->e[i].cut_in);
        free(c->e[i].ext_in);
        free(c->e[i].gpu_in);
        free(c->e[i].cap);
        free(c->e[i].cnt);
        free(c->e[i].touched);
        free(c->e[i].need);
        free(c->e[i].lb_buf);
        net_destroy(c->e[i].n);
        sim_engine_destroy(c->e[i].eng);
        topo_destroy(c->e[i].t);
        free(c->e[i].key);
    }
    free(c->e);
    free(c);
}

/* The topology of the scenario as prepare() makes it (GPU override, degraded links, link
 * efficiency, calibration), from the cache or built into it. */
static int probe_topology(run_probe_cache *cache, const cJSON *j, const js_ctx *c, wl_scenario *s,
                          const char *base_dir, probe_entry **out)
{
    cJSON *copy = cJSON_Duplicate(j, 1);
    cJSON_DeleteItemFromObjectCaseSensitive(copy, "parallel");
    cJSON_DeleteItemFromObjectCaseSensitive(copy, "sweep");
    char *key = cJSON_PrintUnformatted(copy);
    cJSON_Delete(copy);
    DT_ASSERT(key != NULL);
    for (int i = 0; i < cache->n; i++)
        if (!strcmp(cache->e[i].key, key)) {
            free(key);
            *out = &cache->e[i];
            if ((*out)->cal_topk > 0 && s->plan.topk_throughput == 0)
                s->plan.topk_throughput = (*out)->cal_topk;
            return DT_OK;
        }
    probe_entry e = {.key = key};
    double topk0 = s->plan.topk_throughput;
    int rc = load_with_gpu(c, s->topology, s->gpu, base_dir, &e.t);
    if (rc == DT_OK) rc = apply_degraded(c, s->env.degraded, s->env.n_degraded, e.t);
    if (rc == DT_OK) apply_link_efficiency(&s->env, e.t);
    if (rc == DT_OK && s->calibration[0]) rc = apply_calibration(c, s, base_dir, e.t, NULL, 0);
    if (rc != DT_OK) {
        topo_destroy(e.t);
        free(key);
        return rc;
    }
    if (topk0 == 0 && s->plan.topk_throughput > 0) e.cal_topk = s->plan.topk_throughput;
    e.eng = sim_engine_create();
    net_config nc = {.mode = NET_ANALYTIC, .pxn = s->env.coll_library == COLL_LIB_NCCL};
    e.n = net_create(e.t, e.eng, &nc);
    coll_config cc = {.reduce_bw = -1, .chunk_bytes = 1e18, .ring_model = s->env.ring_model,
                      .library = s->env.coll_library};
    e.an = coll_analytic_create(e.n, e.t, &cc);
    const topo *t = e.t;
    e.n_cuts = t->n_hosts + t->n_gpus;
    e.cut_in = dt_xcalloc((size_t)e.n_cuts + 1, sizeof *e.cut_in);
    e.cnt = dt_xcalloc((size_t)e.n_cuts + 1, sizeof *e.cnt);
    e.touched = dt_xcalloc((size_t)e.n_cuts + 1, sizeof *e.touched);
    e.need = dt_xcalloc((size_t)e.n_cuts + 1, sizeof *e.need);
    int *node_gpu = dt_xmalloc(((size_t)t->n_nodes + 1) * sizeof *node_gpu);
    for (int v = 0; v < t->n_nodes; v++) node_gpu[v] = -1;
    for (int g = 0; g < t->n_gpus; g++) node_gpu[t->gpu_node[g]] = g;
    e.gpu_in = dt_xcalloc((size_t)t->n_gpus + 1, sizeof *e.gpu_in);
    for (int l = 0; l < t->n_links; l++) {
        const topo_link *k = &t->links[l];
        int hs = t->nodes[k->src].host, hd = t->nodes[k->dst].host;
        if (hd >= 0 && hs != hd) e.cut_in[hd] += k->bandwidth;
        if (hd < 0 && node_gpu[k->dst] >= 0) e.cut_in[t->n_hosts + node_gpu[k->dst]] += k->bandwidth;
        if (node_gpu[k->dst] >= 0) e.gpu_in[node_gpu[k->dst]] += k->bandwidth;
    }
    e.cap = dt_xcalloc((size_t)e.n_cuts + 1, sizeof *e.cap);
    if (!t->gpu_forwarding) {
        /* in-links of every node, then per GPU which of its in-links the outside reaches */
        int *in_start = dt_xcalloc((size_t)t->n_nodes + 2, sizeof *in_start);
        int *in_links = dt_xmalloc(((size_t)t->n_links + 1) * sizeof *in_links);
        for (int l = 0; l < t->n_links; l++) in_start[t->links[l].dst + 1]++;
        for (int v = 0; v < t->n_nodes; v++) in_start[v + 1] += in_start[v];
        int *fill = dt_xmalloc(((size_t)t->n_nodes + 1) * sizeof *fill);
        memcpy(fill, in_start, (size_t)t->n_nodes * sizeof *fill);
        for (int l = 0; l < t->n_links; l++) in_links[fill[t->links[l].dst]++] = l;
        int *stack = dt_xmalloc(((size_t)t->n_nodes + 1) * sizeof *stack);
        int *seen = dt_xcalloc((size_t)t->n_nodes + 1, sizeof *seen);
        int stamp = 0;
        e.ext_in = dt_xcalloc((size_t)t->n_gpus + 1, sizeof *e.ext_in);
        for (int g = 0; g < t->n_gpus; g++) {
            int v = t->gpu_node[g], h = t->nodes[v].host;
            for (int k = in_start[v]; k < in_start[v + 1]; k++) {
                int u = t->links[in_links[k]].src;
                /* backward from u through the host's non-GPU nodes: does a path start outside? */
                bool outside = h < 0 || t->nodes[u].host != h;
                int sp = 0;
                stamp++;
                if (!outside && t->nodes[u].kind != TOPO_GPU) {
                    stack[sp++] = u;
                    seen[u] = stamp;
                }
                while (!outside && sp > 0) {
                    int x = stack[--sp];
                    for (int q = in_start[x]; q < in_start[x + 1] && !outside; q++) {
                        int y = t->links[in_links[q]].src;
                        if (t->nodes[y].host != h) outside = true;
                        else if (t->nodes[y].kind != TOPO_GPU && seen[y] != stamp) {
                            seen[y] = stamp;
                            stack[sp++] = y;
                        }
                    }
                }
                if (outside) e.ext_in[g] += t->links[in_links[k]].bandwidth;
            }
        }
        free(in_start);
        free(in_links);
        free(fill);
        free(stack);
        free(seen);
    }
    free(node_gpu);
    if (cache->n == cache->cap) {
        /* entries move on growth: the caller holds *out only until the next probe */
        cache->cap = cache->cap ? 2 * cache->cap : 4;
        cache->e = dt_xrealloc(cache->e, (size_t)cache->cap * sizeof *cache->e);
    }
    cache->e[cache->n] = e;
    *out = &cache->e[cache->n++];
    return DT_OK;
}

static int cut_of(const topo *t, int gpu)
{
    int h = t->nodes[t->gpu_node[gpu]].host;
    return h >= 0 ? h : t->n_hosts + gpu;
}

/* A lower bound on the time of stage `stage`'s data-parallel collective instance of `bytes` per
 * GPU (nccl-tests convention): tp concurrent groups, the k-th of the k-th GPU of every DP
 * replica's lane. Whatever the algorithm, what the members inside a cut (a host, or a GPU
 * without one) need from outside must cross the links into it: per group with `in` of its n
 * members inside, all-gather (n - in) B/n (the shards held outside, each brought in once),
 * reduce-scatter in B/n (each inside shard, reduced outside), all-reduce B. The instance lasts
 * at least the most loaded cut's bytes over what its links bring in: all its links, or, where
 * GPUs relay nothing (topo.gpu_forwarding false: a DGX), only the links of its member GPUs that
 * the outside reaches without passing a GPU (their NICs; data cannot come in through another
 * GPU's NIC, nor through the NVSwitch, which only the host's GPUs feed). In flow mode the tp
 * groups share the cut; the analytic mode costs each group alone, so there each group counts
 * alone. The same holds for each member GPU as a cut of its own, whatever its host: what it
 * needs comes in over its in-links (all-gather (n - 1) B/n, reduce-scatter B/n, all-reduce B,
 * each less one element of part rounding, at most 8 bytes); that term is what bounds a
 * collective inside one host, where the host's cut needs nothing. Latency is left out. */
/* The GPU of member d of group k, for cut_bound: a plan's DP groups of one stage, or the lanes
 * of a collective instance in an op graph. */
typedef int (*member_gpu_fn)(const void *ctx, int d, int k);

static double cut_bound(probe_entry *pe, const topo *t, member_gpu_fn gpu_at, const void *ctx,
                        int n, int groups, coll_op op, double bytes, bool shared)
{
    int n_touched = 0;
    double worst = 0;
    /* what each member GPU needs through its own in-links */
    double own = n < 2                       ? 0
                 : op == COLL_ALLGATHER      ? (double)(n - 1) * bytes / n
                 : op == COLL_REDUCE_SCATTER ? bytes / n
                                             : bytes;
    own = fmax(0, own - 8);
    for (int k = 0; k < groups; k++) {
        int nt = 0;
        for (int d = 0; d < n; d++) {
            int gpu = gpu_at(ctx, d, k), c = cut_of(t, gpu);
            if (pe->gpu_in[gpu] > 0) worst = fmax(worst, own / pe->gpu_in[gpu]);
            if (pe->cnt[c]++ == 0) pe->touched[n_touched + nt++] = c;
            /* what can bring data into the cut: without GPU forwarding only its members' own
             * outside-facing links (a non-member GPU relays nothing), else the whole cut's */
            if (pe->ext_in) pe->cap[c] += pe->ext_in[gpu];
        }
        for (int i = n_touched; i < n_touched + nt; i++) {
            int c = pe->touched[i], in = pe->cnt[c];
            double need = in >= n ? 0
                          : op == COLL_ALLGATHER      ? (double)(n - in) * bytes / n
                          : op == COLL_REDUCE_SCATTER ? (double)in * bytes / n
                                                      : bytes;
            pe->need[c] += need;
            pe->cnt[c] = 0;
            if (!shared) {
                double cap = pe->ext_in ? pe->cap[c] : pe->cut_in[c];
                if (cap > 0) worst = fmax(worst, pe->need[c] / cap);
                pe->need[c] = pe->cap[c] = 0;
            }
        }
        if (shared) n_touched += nt;
    }
    for (int i = 0; i < n_touched; i++) {
        int c = pe->touched[i];
        double cap = pe->ext_in ? pe->cap[c] : pe->cut_in[c];
        if (cap > 0) worst = fmax(worst, pe->need[c] / cap);
        pe->need[c] = pe->cap[c] = 0;
    }
    return worst;
}

typedef struct stage_groups { const wl_plan *p; int stage; } stage_groups;

static int stage_member(const void *ctx, int d, int k)
{
    const stage_groups *sg = ctx;
    return wl_gpu_of(sg->p, d, sg->stage, k);
}

typedef struct lane_groups { const wl_graph *g; const uint32_t *lanes; } lane_groups;

/* Group k of a graph's collective instance: the k-th GPU of each member lane. */
static int lane_member(const void *ctx, int d, int k)
{
    const lane_groups *lg = ctx;
    return lg->g->lane_gpus[(size_t)lg->lanes[d] * lg->g->lane_size + k];
}

static double coll_cut_bound(probe_entry *pe, const topo *t, const wl_plan *p, int stage,
                             coll_op op, double bytes, bool shared)
{
    stage_groups sg = {p, stage};
    return cut_bound(pe, t, stage_member, &sg, p->dp, p->tp, op, bytes, shared);
}

/* The contention-free collective costing the bounds use (coll_time_fn): the probe's analytic
 * model, the step's element size and the scenario's data-parallel algorithm. */
static comm_ctx probe_comm_ctx(const wl_scenario *s, probe_entry *pe, gpu_precision prec)
{
    return (comm_ctx){.an = pe->an, .elem_bytes = prec == GPU_FP32 ? 4 : 2,
                      .algo = s->env.dp_algorithm, .servers = s->env.ps_servers};
}

/* The least time (ps) a compute op of cost c on the n GPUs `gpus` spends on its in-lane
 * collectives: the blocking ones at the contention-free time the replay charges them
 * (coll_time_fn, as comm_time); one issued beside a GEMM (under) adds >= 0 there, 0 here. */
static double blocking_inlane_ps(comm_ctx *cc, const wl_cost *c, const int *gpus, int n)
{
    double in = 0;
    for (int i = 0; i < c->n_inlane; i++)
        if (!(c->inlane[i].under.m > 0))
            in += (double)coll_time_fn(cc, c->inlane[i].op, gpus, n, c->inlane[i].bytes, true) *
                  c->inlane[i].count;
    return in;
}

/* The lower bound of run_probe.step_lower_bound_s. Stage s's lane (DP rank 0) runs its compute
 * ops one at a time: m microbatches x (forward + backward of each of its v chunks) and the
 * optimizer step, T_s in all. Its first op (chunk 0, microbatch 0 forward) waits for the forward
 * of chunk 0 on stages 0..s-1 (pre_s, the sends taking >= 0); its last backward (chunk 0,
 * microbatch m-1, in every schedule: docs/sweeps.md) is followed by the same backward on stages
 * s-1..0 (post_s) and stage 0's optimizer step. So step >= pre_s + T_s and step >= pre_s +
 * (T_s - opt_s) + post_s + opt_0, for every s. Ops split per layer (ZeRO-3, gradient buckets)
 * cost at least their unsplit chunk: a roofline's max of sums is at most the sum of maxes. */
static double step_lower_bound(const wl_scenario *s, const topo *t, probe_entry *pe, double *estimate)
{
    *estimate = 0;
    const wl_plan *p = &s->plan;
    if (s->env.jitter != WL_JITTER_NONE || p->backup_workers > 0 || p->staleness >= 0 ||
        s->model.kind == WL_PARAMS)
        return 0;
    /* Mixture-of-experts and context-parallel plans split a layer's work in ways the
     * graph-less cost (whole layers) does not: their bound comes from the op graph */
    if (s->model.experts > 1 || wl_cp(p) > 1) return -1;

    int pp = p->pp, v = p->virtual_stages, m = p->microbatches, tp = p->tp;
    int n_vs = pp * v;
    if (p->n_stage_layers != n_vs) return 0;
    bool hetero;
    double *slow = wl_env_slowdowns(&s->env, t->n_gpus, &hetero);
    gpu_precision prec = wl_gpu_precision(p->precision);
    comm_ctx cc = probe_comm_ctx(s, pe, prec);
    int *gpus = dt_xmalloc((size_t)tp * sizeof *gpus);
    /* a scratch graph for the ops' GEMM shapes, timed as the replay times them */
    wl_graph *gg = wl_graph_create(1, 1, 1);
    gg->precision = prec;
    double *F = dt_xcalloc((size_t)n_vs, sizeof *F), *B = dt_xcalloc((size_t)n_vs, sizeof *B);
    double *opt = dt_xcalloc((size_t)pp, sizeof *opt);
    /* the part of the optimizer op that follows the DP stream's last collective: without the
     * gradient-buffer passes the graph runs before each bucket's reduction (gen_lane) */
    double *opt_tail = dt_xcalloc((size_t)pp, sizeof *opt_tail);
    /* per stage: the last gradient collective before the optimizer, the ZeRO-1/2 parameter
     * all-gather after it */
    double *dp_last = dt_xcalloc((size_t)pp, sizeof *dp_last), *ag = dt_xcalloc((size_t)pp, sizeof *ag);
    /* per stage: everything its lane's DP stream runs before the optimizer (it runs one
     * collective at a time, so their durations add up) */
    double *dp_all = dt_xcalloc((size_t)pp, sizeof *dp_all);
    /* the same DP stream costed by the algorithm's own closed form (run_probe.step_estimate_s) */
    double dp_est = 0;
    int *dgpus = dt_xmalloc(((size_t)p->dp + 1) * sizeof *dgpus);
    double layer_psi = wl_tp_rank_params(&s->model, wl_layer_params(&s->model), 1, tp);
    double emb = wl_embedding_params(&s->model) / tp;
    bool dp = p->dp > 1 && !p->local_step;
    for (int st = 0; st < pp; st++) {
        for (int k = 0; k < tp; k++) gpus[k] = wl_gpu_of(p, 0, st, k);
        double psi = 0;
        for (int ch = 0; ch < v; ch++) {
            int vs = ch * pp + st, nl = p->stage_layers[vs];
            bool first = vs == 0, last = vs == n_vs - 1;
            psi += layer_psi * nl + (first ? emb : 0) +
                   (last && (!first || !s->model.tied_embeddings) ? emb : 0) +
                   (last ? wl_norm_params(&s->model) : 0); /* the final norm, whole */
            for (int bwd = 0; bwd < 2; bwd++) {
                wl_cost c;
                wl_layer_op_cost_graph(s, p, gg, bwd, first, last, nl, &c);
                /* as the replay's start_op: the lane's slowest GPU when any GPU is slowed,
                 * else the first GPU's time */
                double comp = 0;
                for (int k = 0; k < (hetero ? tp : 1); k++) {
                    double x = (double)replay_op_compute_time(gg, &c, &t->gpus[gpus[k]], gpu_op_time,
                                                              gpu_gemm_time) *
                               slow[gpus[k]];
                    if (x > comp) comp = x;
                }
                double in = tp > 1 ? blocking_inlane_ps(&cc, &c, gpus, tp) : 0;
                double d = c.inlane_overlap ? fmax(comp, in) : comp + in;
                d = fmax(d, (double)c.host); /* the host's dispatch floor, as start_op */
                (bwd ? B : F)[vs] = d * 1e-12;
            }
        }
        /* the optimizer step on this GPU's shard (wl_schedule.c's gen_lane) */
        if (s->model.kind != WL_TRANSFORMER) psi = s->model.params / tp / pp;
        if (psi > 0) {
            double shard = psi / (p->zero >= 1 && dp ? p->dp : 1);
            wl_cost c = {0};
            c.bytes[GPU_OP_OPTIMIZER] = shard * wl_optimizer_bytes(p);
            c.bytes[GPU_OP_ELEMENTWISE] = psi * wl_grad_buffer_bytes(p); /* as gen_lane */
            opt[st] = (double)replay_op_compute_time(gg, &c, &t->gpus[gpus[0]], gpu_op_time,
                                                     gpu_gemm_time) * 1e-12;
            /* gen_lane's per-bucket passes (grad_collective): pp 1 or 1F1B with
             * delay_grad_reduce, ZeRO-0/1, uncompressed */
            bool bucket_passes = dp && (pp == 1 || (v == 1 && p->fw.delay_grad_reduce)) &&
                                 p->zero <= 1 && p->quant_bits == 0 && p->lowrank_rank == 0 &&
                                 p->compression_ratio == 0;
            c.bytes[GPU_OP_ELEMENTWISE] =
                psi * (wl_grad_buffer_bytes(p) - (bucket_passes ? wl_grad_buffer_bucket_bytes(p) : 0));
            opt_tail[st] = (double)replay_op_compute_time(gg, &c, &t->gpus[gpus[0]], gpu_op_time,
                                                          gpu_gemm_time) * 1e-12;
        }
        /* Data parallelism (not for local SGD, whose local steps have none; not with
         * compression, whose collectives move fewer bytes): the optimizer waits for the last
         * gradient bucket, which holds at least the gradients of the last layer its backward
         * ran (buckets close at the end of every chunk); ZeRO-1/2 then gather the updated
         * parameters, unless the gather overlaps the next forward. */
        if (dp && p->local_sgd <= 1 && p->compression_ratio == 0 && p->quant_bits == 0 &&
            s->model.kind == WL_TRANSFORMER) {
            bool shared = s->env.network == NET_FLOW;
            double pbytes = wl_precision_bytes(p->precision);
            coll_op gop = p->zero == 0 ? COLL_ALLREDUCE : COLL_REDUCE_SCATTER;
            /* the cut bound is linear in the bytes: one call per kind of collective serves
             * the sum over its instances */
            double grads = coll_cut_bound(pe, t, p, st, gop, psi * pbytes, shared);
            /* without overlap (overlap_dp false) every bucket (every microbatch's with
             * ZeRO-2/3) waits for the end of the backward; with it, the last bucket holds at
             * least the last layer */
            dp_last[st] = p->overlap_dp ? coll_cut_bound(pe, t, p, st, gop, layer_psi * pbytes, shared)
                                        : (p->zero >= 2 ? m : 1) * grads;
            double gather = (p->zero == 1 || p->zero == 2)
                                ? coll_cut_bound(pe, t, p, st, COLL_ALLGATHER, psi * pbytes, shared)
                                : 0;
            if (!p->fw.overlap_param_gather) ag[st] = gather;
            /* The lane's DP stream before its optimizer step: the gradients once (ZeRO-0/1),
             * or every microbatch's (ZeRO-2/3 reduce-scatter each backward); ZeRO-3 gathers
             * one layer's parameters before each of its 2 m L_s per-layer compute ops;
             * overlapped ZeRO-1/2 gathers (overlap_param_gather) run during microbatch 0. */
            int layers_s = 0;
            for (int ch = 0; ch < v; ch++) layers_s += p->stage_layers[ch * pp + st];
            dp_all[st] = (p->zero >= 2 ? m : 1) * grads +
                         (p->fw.overlap_param_gather ? gather : 0);
            /* ... and the root (embedding, output layer, final norm: what the stage holds
             * outside its layers) with each microbatch's first forward gather */
            double root = psi - layers_s * layer_psi;
            if (p->zero >= 3)
                dp_all[st] += 2.0 * m * layers_s *
                                  coll_cut_bound(pe, t, p, st, COLL_ALLGATHER, layer_psi * pbytes, shared) +
                              m * coll_cut_bound(pe, t, p, st, COLL_ALLGATHER, root * pbytes, shared);
            /* An estimate, not a bound: the contention-free time of the algorithm the run will
             * use, on the first DP group of the stage (coll_analytic's cache makes it linear
             * in the bytes after the first call). */
            for (int d = 0; d < p->dp; d++) dgpus[d] = wl_gpu_of(p, d, st, 0);
            double e = (p->zero >= 2 ? m : 1) * 1e-12 *
                       (double)coll_time_fn(&cc, gop, dgpus, p->dp, psi * pbytes, false);
            if (p->zero == 1 || p->zero == 2)
                e += 1e-12 * (double)coll_time_fn(&cc, COLL_ALLGATHER, dgpus, p->dp, psi * pbytes, false);
            if (p->zero >= 3)
                e += 2.0 * m * layers_s * 1e-12 *
                         (double)coll_time_fn(&cc, COLL_ALLGATHER, dgpus, p->dp, layer_psi * pbytes, false) +
                     m * 1e-12 * (double)coll_time_fn(&cc, COLL_ALLGATHER, dgpus, p->dp, root * pbytes, false);
            dp_est = fmax(dp_est, e + opt[st]);
        }
    }
    double lb = 0, pre = 0, post = 0;
    for (int st = 0; st < pp; st++) {
        double per_mb = 0;
        for (int ch = 0; ch < v; ch++) per_mb += F[ch * pp + st] + B[ch * pp + st];
        double work = m * per_mb;
        lb = fmax(lb, pre + work + dp_last[st] + opt[st] + ag[st]);
        lb = fmax(lb, pre + work + post + dp_last[0] + opt[0] + ag[0]);
        lb = fmax(lb, dp_all[st] + opt_tail[st] + ag[st]);
        pre += F[st];
        post += B[st];
    }
    wl_graph_destroy(gg);
    free(gpus);
    free(F);
    free(B);
    free(opt);
    free(opt_tail);
    free(dp_last);
    free(dp_all);
    free(dgpus);
    free(ag);
    free(slow);
    /* the picosecond rounding of each op (ceil) and sums in double: stay a hair below */
    lb *= 1 - 1e-9;
    *estimate = fmax(lb, dp_est);
    return lb;
}

/* Op graphs the probe builds for a bound (MoE and CP plans): beyond this many ops (estimated
 * as run_prep_scenario does) the probe gives no bound rather than spend a simulation's memory
 * on it. */
#define PROBE_GRAPH_OPS_MAX (1 << 21)

/* Arrays carved one after another from a scratch buffer (16-byte aligned each). */
static void *carve(char **at, size_t n, size_t size)
{
    void *p = *at;
    *at += (n * size + 15) & ~(size_t)15;
    return p;
}

enum { LP_STREAMS = WL_STREAM_DP + 1 };

/* The scratch bytes graph_longest_path carves for g: eight arrays, each rounded up to 16
 * bytes; the edges are at most one per dep and one per op (its stream's previous op). */
static size_t longest_path_bytes(const wl_graph *g)
{
    size_t n = g->n_ops, N = n + g->n_colls;
    return (n + 1) * 4 + 2 * (N + 1) * 8 + (N + 1) * 4 + (N + 2) * 4 +
           ((size_t)g->n_lanes * LP_STREAMS + 1) * 4 + (N + 1) * 4 +
           ((size_t)g->n_deps + n + 1) * 4 + 8 * 16;
}

/* The longest path through the op graph with op i lasting dur[i] (ps), a path graph whose
 * nodes are the ops outside collectives and one node per collective instance (its ops start
 * together: the node lasts the longest of its ops), whose edges are the ops' deps and the order
 * of each lane's streams (graph_lower_bound). Kahn's order, O(ops + deps); its arrays are carved
 * from scratch[0 .. longest_path_bytes(g)). Returns 0 when the nodes do not all come out (a
 * cycle: no run would end either). */
static double graph_longest_path(const wl_graph *g, const double *dur, char *scratch)
{
    uint32_t n = g->n_ops, N = n + g->n_colls;
    char *at = scratch;
    uint32_t *node = carve(&at, (size_t)n + 1, sizeof *node);
    double *w = carve(&at, (size_t)N + 1, sizeof *w), *ef = carve(&at, (size_t)N + 1, sizeof *ef);
    uint32_t *indeg = carve(&at, (size_t)N + 1, sizeof *indeg);
    uint32_t *start = carve(&at, (size_t)N + 2, sizeof *start);
    uint32_t *prev = carve(&at, (size_t)g->n_lanes * LP_STREAMS + 1, sizeof *prev);
    uint32_t *fill = carve(&at, (size_t)N + 1, sizeof *fill);
    uint32_t *to = carve(&at, (size_t)g->n_deps + n + 1, sizeof *to);
    DT_ASSERT((size_t)(at - scratch) <= longest_path_bytes(g));
    memset(w, 0, ((size_t)N + 1) * sizeof *w);
    memset(ef, 0, ((size_t)N + 1) * sizeof *ef);
    memset(indeg, 0, ((size_t)N + 1) * sizeof *indeg);
    memset(start, 0, ((size_t)N + 2) * sizeof *start);
    for (size_t k = 0; k < (size_t)g->n_lanes * LP_STREAMS; k++) prev[k] = UINT32_MAX;
    for (uint32_t i = 0; i < n; i++) {
        const wl_op *o = &g->ops[i];
        node[i] = o->kind == WL_OP_COLL ? n + o->arg : i;
        if (dur[i] > w[node[i]]) w[node[i]] = dur[i];
    }
    /* edges u -> v (as node pairs): every dep, and each stream's previous op; counted, then
     * filled (CSR by u) */
    size_t n_edges = 0;
    for (int pass = 0; pass < 2; pass++) {
        if (pass) {
            DT_ASSERT(n_edges <= (size_t)g->n_deps + n); /* what `to` was carved for */
            for (uint32_t v = 0; v < N; v++) start[v + 1] += start[v];
            memcpy(fill, start, (size_t)N * sizeof *fill);
            for (size_t k = 0; k < (size_t)g->n_lanes * LP_STREAMS; k++) prev[k] = UINT32_MAX;
        }
        for (uint32_t i = 0; i < n; i++) {
            const wl_op *o = &g->ops[i];
            size_t key = (size_t)o->lane * LP_STREAMS + (o->stream < LP_STREAMS ? o->stream : 0);
            uint32_t v = node[i];
            for (uint32_t d = 0; d <= o->n_deps; d++) {
                uint32_t u = d < o->n_deps ? g->deps[o->dep_start + d] : prev[key];
                if (u == UINT32_MAX || u >= n || node[u] == v) continue;
                u = node[u];
                if (!pass) {
                    start[u + 1]++;
                    n_edges++;
                } else {
                    to[fill[u]++] = v;
                    indeg[v]++;
                }
            }
            prev[key] = i;
        }
    }
    /* Kahn: a node leaves once every edge into it has; its end is the latest of its
     * predecessors' ends plus its own least time (the queue reuses `fill`, done with) */
    uint32_t *queue = fill, head = 0, tail = 0;
    for (uint32_t v = 0; v < N; v++)
        if (indeg[v] == 0) queue[tail++] = v;
    double lb = 0;
    while (head < tail) {
        uint32_t u = queue[head++];
        ef[u] += w[u];
        if (ef[u] > lb) lb = ef[u];
        for (uint32_t k = start[u]; k < start[u + 1]; k++) {
            uint32_t v = to[k];
            if (ef[u] > ef[v]) ef[v] = ef[u];
            if (--indeg[v] == 0) queue[tail++] = v;
        }
    }
    return tail < N ? 0 : lb;
}

/* A lower bound on a pipeline send's time: the lane's ts GPUs each send `bytes` to the GPU of
 * the same position in the destination lane. Each receiver takes its bytes over its own
 * in-links; bytes from another cut also cross into the receiver's cut, over its outside-facing
 * links (topo.gpu_forwarding false: the receiver's own) or the cut's in-links, which the lane's
 * sends into one cut share in flow mode (as in cut_bound). Latency is left out. */
static double send_bound(probe_entry *pe, const topo *t, const int *src, const int *dst, int ts,
                         double bytes, bool shared)
{
    double worst = 0;
    int n_touched = 0;
    for (int k = 0; k < ts; k++) {
        if (src[k] == dst[k] || bytes <= 0) continue;
        if (pe->gpu_in[dst[k]] > 0) worst = fmax(worst, bytes / pe->gpu_in[dst[k]]);
        int c = cut_of(t, dst[k]);
        if (c == cut_of(t, src[k])) continue;
        if (pe->ext_in) {
            if (pe->ext_in[dst[k]] > 0) worst = fmax(worst, bytes / pe->ext_in[dst[k]]);
        } else if (!shared) {
            if (pe->cut_in[c] > 0) worst = fmax(worst, bytes / pe->cut_in[c]);
        } else {
            if (pe->need[c] == 0) pe->touched[n_touched++] = c;
            pe->need[c] += bytes;
        }
    }
    for (int i = 0; i < n_touched; i++) {
        int c = pe->touched[i];
        if (pe->cut_in[c] > 0) worst = fmax(worst, pe->need[c] / pe->cut_in[c]);
        pe->need[c] = 0;
    }
    return worst;
}

/* The lower bound of an MoE or context-parallel plan, from its op graph: the longest path
 * through the ops, each lasting at least its least time. An op starts no earlier than its deps
 * and the op before it on its lane's stream have ended (a stream runs its ops one at a time, in
 * order), and the ops of one collective instance start together, once every member's has
 * arrived (one node of the path graph). Least times:
 *  - a compute op: its compute time as the replay charges it (replay_op_compute_time, GEMM
 *    shapes included; the lane's slowest member when GPUs are slowed), plus its in-lane
 *    (tensor-parallel) collectives at the contention-free time the replay charges them
 *    (coll_time_fn, per cost and lane), or the longer of the two where they overlap the
 *    compute (--tp-comm-overlap); at least the host's dispatch floor. Ring attention's exposed
 *    sends count 0;
 *  - a reduction or gather (all-reduce, reduce-scatter, all-gather): its members' cut bound
 *    (cut_bound, as the dense plans' data-parallel collectives get it: the hosts' cuts and
 *    each member GPU's in-links);
 *  - an expert all-to-all (COLL_DIRECT: each of the n members sends every other its 1/n part)
 *    in flow mode, where every byte a member receives comes over one of its GPU's in-links,
 *    whose flows share their capacity: the (n - 1)/n of the buffer (less one element of part
 *    rounding) over the sum of those links' bandwidth, for each member (analytic mode costs
 *    each pair alone, below that: 0);
 *  - a pipeline send: send_bound (the receiver's in-links, and the cut it crosses into).
 * Each lane's compute stream is one of these paths, so the bound is at least the busiest lane's
 * sum (what it was before), and it adds what the schedule makes wait: the pipeline's fill and
 * drain, the all-to-alls' meeting of members, the reductions after the last backward. Exact in
 * costing (the graph is the one simulated, experts' token loads and CP's split included). 0 (no
 * bound) when the graph would be large, or if the path graph had a cycle (a graph the replay
 * could not run either). */
static double graph_lower_bound(const wl_scenario *s, const topo *t, probe_entry *pe)
{
    const wl_plan *P = &s->plan;
    double est_ops = 4.0 * P->dp * P->pp * wl_max_replica_microbatches(P) * P->virtual_stages +
                     4.0 * P->dp * s->model.layers * (P->zero == 3 ? P->microbatches : 1);
    est_ops *= wl_cp(P);
    if (wl_ep(P) > 1) est_ops += 12.0 * P->dp * wl_cp(P) * s->model.layers * P->microbatches;
    if (est_ops > PROBE_GRAPH_OPS_MAX) return 0;
    wl_graph *g = wl_graph_build(s);
    int ts = g->lane_size;
    bool hetero;
    double *slow = wl_env_slowdowns(&s->env, t->n_gpus, &hetero);
    /* a cost's time on a GPU, once per (cost, GPU spec): the graph shares costs among ops */
    double *cost_t = dt_xmalloc(((size_t)g->n_costs + 1) * sizeof *cost_t);
    for (uint32_t c = 0; c < g->n_costs; c++) cost_t[c] = -1;
    const gpu_spec *spec0 = &t->gpus[g->lane_gpus[0]];
    /* the working arrays, from the cache entry's scratch buffer */
    size_t need = longest_path_bytes(g) + ((size_t)g->n_ops + 1) * sizeof(double) +
                  (size_t)g->n_lanes + 1 + ((size_t)g->n_colls + 2) * 4 + ((size_t)g->n_ops + 1) * 4 +
                  ((size_t)g->n_colls + 1) * sizeof(double) +
                  ((ts > 1 ? (size_t)g->n_costs * (size_t)g->n_lanes : 0) + 1) * sizeof(double) + 6 * 16;
    if (pe->lb_cap < need) {
        free(pe->lb_buf);
        pe->lb_cap = need + need / 4;
        pe->lb_buf = dt_xmalloc(pe->lb_cap);
    }
    char *at = pe->lb_buf;
    /* each op's least time (ps) */
    double *dur = carve(&at, (size_t)g->n_ops + 1, sizeof *dur);
    memset(dur, 0, ((size_t)g->n_ops + 1) * sizeof *dur);
    /* per lane: does its first GPU have lane 0's spec (-1: not looked at yet) */
    signed char *same_spec = carve(&at, (size_t)g->n_lanes + 1, 1);
    memset(same_spec, -1, (size_t)g->n_lanes + 1);
    /* members per instance (one op per member lane) and their lanes (CSR); each GPU's in-link
     * bandwidth for the all-to-alls */
    bool flow = s->env.network == NET_FLOW;
    uint32_t *m_start = carve(&at, (size_t)g->n_colls + 2, sizeof *m_start);
    uint32_t *m_lane = carve(&at, (size_t)g->n_ops + 1, sizeof *m_lane);
    double *inst_lb = carve(&at, (size_t)g->n_colls + 1, sizeof *inst_lb);
    /* counted into m_start[c + 2], summed, then each op placed at m_start[c + 1]++, which leaves
     * m_start[c + 1] at instance c's end: instance c's lanes are m_lane[m_start[c] ..
     * m_start[c + 1]) */
    memset(m_start, 0, ((size_t)g->n_colls + 2) * sizeof *m_start);
    for (uint32_t i = 0; i < g->n_ops; i++)
        if (g->ops[i].kind == WL_OP_COLL) m_start[g->ops[i].arg + 2]++;
    for (uint32_t c = 2; c <= g->n_colls + 1; c++) m_start[c] += m_start[c - 1];
    for (uint32_t i = 0; i < g->n_ops; i++)
        if (g->ops[i].kind == WL_OP_COLL) m_lane[m_start[g->ops[i].arg + 1]++] = g->ops[i].lane;
    for (uint32_t c = 0; c < g->n_colls; c++) inst_lb[c] = -1;
    double elem = wl_precision_bytes(P->precision);
    /* in-lane (tensor-parallel) collectives: the contention-free time the replay charges
     * (comm_time: coll_time_fn in both modes), per (cost, lane), computed on first use */
    gpu_precision prec = wl_gpu_precision(P->precision);
    comm_ctx cc = probe_comm_ctx(s, pe, prec);
    size_t n_in = ts > 1 ? (size_t)g->n_costs * (size_t)g->n_lanes : 0;
    double *inlane = carve(&at, n_in + 1, sizeof *inlane);
    for (size_t k = 0; k < n_in; k++) inlane[k] = -1;
    /* what this function carved, and the longest path's arrays after it, within the buffer */
    DT_ASSERT((size_t)(at - pe->lb_buf) + longest_path_bytes(g) <= need);
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const wl_op *o = &g->ops[i];
        const int *gpus = &g->lane_gpus[(size_t)o->lane * ts];
        if (o->kind == WL_OP_COLL) {
            const wl_coll *cl = &g->colls[o->arg];
            int n = (int)(m_start[o->arg + 1] - m_start[o->arg]);
            if (n >= 2 && (cl->op == COLL_ALLREDUCE || cl->op == COLL_REDUCE_SCATTER ||
                           cl->op == COLL_ALLGATHER)) {
                /* a reduction or gather lasts at least what its members' cuts must bring in
                 * (cut_bound: whatever the algorithm; the instance's ts groups share the cuts in
                 * flow mode), computed once per instance */
                if (inst_lb[o->arg] < 0) {
                    lane_groups lg = {g, m_lane + m_start[o->arg]};
                    inst_lb[o->arg] = 1e12 * cut_bound(pe, t, lane_member, &lg, n, ts, cl->op,
                                                       cl->bytes, flow);
                }
                dur[i] = inst_lb[o->arg];
                continue;
            }
            if (o->stream != WL_STREAM_COMPUTE || !flow || cl->op != COLL_ALLTOALL || n < 2) continue;
            double recv = cl->bytes * (n - 1) / n - elem, x = 0;
            for (int k = 0; k < ts && recv > 0; k++)
                if (pe->gpu_in[gpus[k]] > 0) x = fmax(x, recv / pe->gpu_in[gpus[k]] * 1e12);
            dur[i] = x;
            continue;
        }
        if (o->kind == WL_OP_SEND) {
            dur[i] = 1e12 * send_bound(pe, t, gpus, &g->lane_gpus[(size_t)o->arg * ts], ts, o->bytes, flow);
            continue;
        }
        if (o->kind != WL_OP_COMPUTE) continue;
        /* as the replay's start_op: the lane's first GPU, or with slowed GPUs the slowest */
        double x = 0;
        if (same_spec[o->lane] < 0)
            same_spec[o->lane] = !memcmp(&t->gpus[gpus[0]], spec0, sizeof *spec0);
        if (!hetero && same_spec[o->lane]) {
            if (cost_t[o->arg] < 0)
                cost_t[o->arg] = (double)replay_op_compute_time(g, &g->costs[o->arg], spec0,
                                                                gpu_op_time, gpu_gemm_time);
            x = cost_t[o->arg];
        } else if (!hetero) {
            x = (double)replay_op_compute_time(g, &g->costs[o->arg], &t->gpus[gpus[0]],
                                               gpu_op_time, gpu_gemm_time);
        } else {
            for (int k = 0; k < ts; k++) {
                double y = (double)replay_op_compute_time(g, &g->costs[o->arg], &t->gpus[gpus[k]],
                                                          gpu_op_time, gpu_gemm_time) * slow[gpus[k]];
                if (y > x) x = y;
            }
        }
        /* the in-lane collectives, as the replay's start_op: after the compute, or under it
         * with --tp-comm-overlap (the op then lasts at least the longer of the two) */
        const wl_cost *c = &g->costs[o->arg];
        if (n_in && c->n_inlane > 0) {
            double *in = &inlane[(size_t)o->arg * (size_t)g->n_lanes + o->lane];
            if (*in < 0) *in = blocking_inlane_ps(&cc, c, gpus, ts);
            x = c->inlane_overlap ? fmax(x, *in) : x + *in;
        }
        /* the host's dispatch floor (start_op): the op lasts at least that too */
        dur[i] = fmax(x, (double)c->host);
    }
    /* each lane's compute stream is a chain of the path graph, so this is at least the busiest
     * lane's sum of least times */
    double lb = graph_longest_path(g, dur, at);
    free(cost_t);
    free(slow);
    wl_graph_destroy(g);
    /* ops are whole picoseconds, summed in double: stay a hair below */
    return lb * 1e-12 * (1 - 1e-9);
}

int run_probe_scenario(const cJSON *scenario, const char *file, const char *base_dir,
                       run_probe_cache *cache, run_probe *out, dt_error *err)
{
    memset(out, 0, sizeof *out);
    run_probe_cache *own = cache ? NULL : run_probe_cache_create();
    if (own) cache = own;
    js_ctx c = {file ? file : "<scenario>", err};
    wl_scenario s;
    probe_entry *pe = NULL;
    int rc = wl_scenario_parse(&c, scenario, &s);
    if (rc != DT_OK) {
        run_probe_cache_destroy(own);
        return rc;
    }
    rc = probe_topology(cache, scenario, &c, &s, base_dir, &pe);
    if (rc == DT_OK) rc = resolve_plan(&c, &s, pe->t);
    if (rc == DT_OK) {
        mem_breakdown mb;
        mem_compute(&s.model, &s.plan, &mb);
        fill_memory(&mb, pe->t, &out->memory, &out->fits);
        out->step_lower_bound_s = step_lower_bound(&s, pe->t, pe, &out->step_estimate_s);
        /* MoE and CP: from the op graph, for plans that fit the GPU (the planner simulates
         * no other; the graph costs more than the rest of the probe) */
        if (out->step_lower_bound_s < 0) {
            out->step_lower_bound_s = out->fits ? graph_lower_bound(&s, pe->t, pe) : 0;
            out->step_estimate_s = out->step_lower_bound_s;
        }
        int n = s.plan.dp * s.plan.tp * s.plan.pp * wl_cp(&s.plan); /* the GPUs the run counts */
        out->n_gpus = n;
        for (int i = 0; i < n && i < pe->t->n_gpus; i++) out->cost_per_hour_total += pe->t->gpus[i].cost_per_hour;
        out->tokens_per_step = s.global_batch * s.model.seq_len;
    }
    wl_scenario_free(&s);
    run_probe_cache_destroy(own);
    return rc;
}

/* ----------------------------------------------------- storage and input ---- */

/* Hosts among a set of GPUs (a GPU without a host is its own). */
static int count_hosts(const topo *t, const int *gpus, int n)
{
    unsigned char *seen = dt_xcalloc((size_t)t->n_hosts + 1, 1);
    int k = 0;
    for (int i = 0; i < n; i++) {
        int h = t->nodes[t->gpu_node[gpus[i]]].host;
        if (h < 0) k++;
        else if (!seen[h]) {
            seen[h] = 1;
            k++;
        }
    }
    free(seen);
    return k;
}

/* What the links allow between the scenario's storage node and these GPUs (to_storage: from
 * the GPUs), a max-flow; INFINITY when the storage is given by figures only. */
static int storage_path(const js_ctx *c, const stor_spec *st, const topo *t, const int *gpus,
                        int n, bool to_storage, double *bw)
{
    *bw = INFINITY;
    if (!st->node[0]) return DT_OK;
    int v = find_node(t, st->node);
    if (v < 0) return js_fail(c, "storage", "node", "no node named \"%s\" in the topology", st->node);
    int *nodes = dt_xmalloc(((size_t)n + 1) * sizeof *nodes);
    int k = 0;
    for (int i = 0; i < n; i++)
        if (t->gpu_node[gpus[i]] != v) nodes[k++] = t->gpu_node[gpus[i]];
    *bw = to_storage ? topo_maxflow(t, nodes, k, &v, 1) : topo_maxflow(t, &v, 1, nodes, k);
    free(nodes);
    if (k > 0 && !(*bw > 0))
        return js_fail(c, "storage", "node", "node \"%s\" cannot be reached from the GPUs over the "
                       "topology's links", st->node);
    if (k == 0) *bw = INFINITY;
    return DT_OK;
}

/* The input pipeline (scenario `input`): each DP replica's data loader, on the host of its
 * first-stage GPU, reads its share of the step's samples; every step's samples cross the
 * storage model once (run_input_read_s). Steady state: the read of step k + 1 overlaps step k
 * (prefetch >= 1), so a step waits max(0, read - step) for its batch; without prefetch it
 * waits the whole read. The wait is put at the start of the step (every GPU waits for the
 * first stage's data): run_scenario stretches the step by it. */

/* Writes PATH.tmp.PID and hands its name back in *tmp_out (caller-owned): run_scenario renames
 * it into place only once the step has simulated, so a failed run leaves no trace file. The
 * PID keeps two processes writing one path from sharing a temporary. (The dtsim command does
 * not come here: it writes the trace through its own output layer, cli/output.c.) */
static int write_trace_file(const char *path, const wl_graph *g, const trace_env *env,
                            char **tmp_out, dt_error *err)
{
    size_t n = strlen(path) + 32;
    char *tmp = dt_xmalloc(n);
    snprintf(tmp, n, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        free(tmp);
        return dt_error_set(err, DT_EIO, path, NULL, "cannot write the trace: %s", strerror(errno));
    }
    int rc = trace_write(f, g, env, err);
    if (fclose(f) != 0 && rc == DT_OK)
        rc = dt_error_set(err, DT_EIO, path, NULL, "write failed: %s", strerror(errno));
    if (rc != DT_OK) {
        remove(tmp);
        free(tmp);
        return rc;
    }
    *tmp_out = tmp;
    return rc;
}

/* ", balanced by speed: layers 4+2, microbatches 3+1" (long lists cut with "..."). */
static void append_balance(const wl_plan *p, char *line, size_t size)
{
    size_t n = strlen(line);
    n += (size_t)snprintf(line + n, n < size ? size - n : 0, ", balanced by speed");
    if (p->pp > 1) {
        n += (size_t)snprintf(line + n, n < size ? size - n : 0, ": layers");
        for (int st = 0; st < p->pp && n + 16 < size; st++) {
            int l = 0;
            for (int c = 0; c < p->virtual_stages; c++) l += p->stage_layers[c * p->pp + st];
            n += (size_t)snprintf(line + n, size - n, "%s%d", st ? "+" : " ", l);
        }
    }
    if (p->dp > 1) {
        n += (size_t)snprintf(line + n, n < size ? size - n : 0, "%s microbatches",
                              p->pp > 1 ? "," : ":");
        for (int d = 0; d < p->dp && n + 16 < size; d++)
            n += (size_t)snprintf(line + n, size - n, "%s%d", d ? "+" : " ",
                                  wl_replica_microbatches(p, d));
    }
    if (n + 16 >= size && n + 4 < size) snprintf(line + n, size - n, "...");
}

/* The plan summary line people read above the results. */
static void fill_summary(const wl_scenario *s, run_result *out)
{
    static const char *const prec[] = {"fp32", "fp16", "bf16", "fp8", "tf32"};
    const wl_plan *p = &s->plan;
    char v[32] = "", np[32], dp[64] = "";
    double P = wl_total_params(&s->model);
    snprintf(np, sizeof np, P >= 1e9 ? "%.3g B" : "%.3g M", P >= 1e9 ? P / 1e9 : P / 1e6);
    if (p->schedule == WL_INTERLEAVED) snprintf(v, sizeof v, " v %d", p->virtual_stages);
    char ep[48] = "";
    /* expert and context parallelism only where used: dense summaries keep their text */
    if (wl_ep(p) > 1 && wl_cp(p) > 1) snprintf(ep, sizeof ep, " (ep %d) x cp %d", wl_ep(p), wl_cp(p));
    else if (wl_ep(p) > 1) snprintf(ep, sizeof ep, " (ep %d)", wl_ep(p));
    else if (wl_cp(p) > 1) snprintf(ep, sizeof ep, " x cp %d", wl_cp(p));
    char skew[64] = "";
    if (wl_ep(p) > 1 && s->model.router_zipf > 0)
        /* what the router's skew costs: the busiest EP rank's tokens over the mean */
        snprintf(skew, sizeof skew, ", router Zipf %g: busiest EP rank %.2fx", s->model.router_zipf,
                 wl_moe_max_load(&s->model, wl_ep(p)));
    if (p->backup_workers > 0) snprintf(dp, sizeof dp, ", %d backup workers", p->backup_workers);
    else if (p->staleness >= 0) snprintf(dp, sizeof dp, ", asynchronous (staleness %d)", p->staleness);
    else if (p->local_sgd > 1) snprintf(dp, sizeof dp, ", local SGD (averaging every %d steps)", p->local_sgd);
    char line[512];
    snprintf(line, sizeof line,
             "%s (%s params), tp %d x pp %d x dp %d%s, %s%s, %d microbatch%s of %d, %s, "
             "ZeRO-%d%s%s%s%s%s",
             s->model.name, np, p->tp, p->pp, p->dp, ep,
             p->pp > 1 ? wl_schedule_name(p->schedule) : "no pipeline", v, p->microbatches,
             p->microbatches == 1 ? "" : "es", p->micro_batch_size, prec[p->precision], p->zero,
             dp, s->env.network == NET_ANALYTIC ? ", analytic network" : "",
             p->fw.preset != WL_FW_GENERIC ? ", framework " : "",
             p->fw.preset != WL_FW_GENERIC ? wl_framework_name(p->fw.preset) : "", skew);
    if (p->place_by_bandwidth) {
        size_t n = strlen(line);
        snprintf(line + n, sizeof line - n, ", placed by bandwidth");
    }
    if (p->balance == WL_BALANCE_SPEED) append_balance(p, line, sizeof out->summary);
    size_t len = strlen(line);
    if (len >= sizeof out->summary) len = sizeof out->summary - 1; /* a long model name */
    memcpy(out->summary, line, len);
    out->summary[len] = '\0';
}

void run_prep_free(run_prep *p)
{
    wl_graph_destroy(p->g);
    wl_graph_destroy(p->g_local);
    topo_destroy(p->t);
    wl_scenario_free(&p->s);
    memset(p, 0, sizeof *p);
}

int run_prep_scenario(const cJSON *scenario, const char *file, const char *base_dir,
                      const run_options *opt, run_prep *p, run_result *out, dt_error *err)
{
    memset(p, 0, sizeof *p);
    memset(out, 0, sizeof *out);
    p->file = file;
    TRY(prepare(scenario, file, base_dir, &p->s, &p->t, out->calibration_note,
                sizeof out->calibration_note, err));
    wl_scenario *s = &p->s;
    if (opt && opt->have_seed) s->env.seed = opt->seed;
    if (opt && opt->have_network) s->env.network = opt->network;
    snprintf(out->name, sizeof out->name, "%s", s->name);
    mem_breakdown mb;
    mem_compute(&s->model, &s->plan, &mb);
    fill_memory(&mb, p->t, &out->memory, &out->fits);
    fill_summary(s, out);
    out->staleness = -1;
    int rc = DT_OK;
    if (s->federated) {
        rc = dt_error_set(err, DT_EINPUT, file, "federated",
                          "a federated scenario simulates rounds of clients, edge servers and "
                          "a cloud: run it with `dtsim federated`");
    } else if (s->model.kind == WL_PARAMS) {
        rc = dt_error_set(err, DT_EINPUT, file, "model.kind",
                          "a \"params\" model only plans memory (dtsim memory); use "
                          "\"transformer\" or \"synthetic\" to simulate a step");
    }
    /* A plan with 2^30 microbatches is valid but its graph would not fit in memory (dt_xmalloc
     * aborts): refuse graphs far beyond the largest scenario shipped (gpt3-175b: 1.5e5 ops).
     * The estimate over-counts (4 ops per lane, microbatch and model chunk, plus per-layer DP
     * or ZeRO-3 ops); 2^26 ops is a few GB. */
    const wl_plan *P = &s->plan;
    double est_ops = 4.0 * P->dp * P->pp * wl_max_replica_microbatches(P) * P->virtual_stages +
                     4.0 * P->dp * s->model.layers * (P->zero == 3 ? P->microbatches : 1);
    /* context parallelism multiplies the lanes; expert parallelism splits every MoE layer
     * into 4 ops (6 backward with full recomputation) per microbatch */
    est_ops *= wl_cp(P);
    if (wl_ep(P) > 1) est_ops += 12.0 * P->dp * wl_cp(P) * s->model.layers * P->microbatches;
    if (rc == DT_OK && est_ops > (double)(1 << 26))
        rc = dt_error_set(err, DT_EINPUT, file, "parallel.microbatches",
                          "the step's op graph would have about %.3g ops (dp %d x pp %d x "
                          "%d microbatches x %d virtual stages x 4), more than dtsim simulates "
                          "(%d); use fewer microbatches (dtsim memory still works)",
                          est_ops, P->dp, P->pp, P->microbatches, P->virtual_stages, 1 << 26);
    /* Below the cap the graph may still not fit the budget (--max-memory, ulimit -v): an op,
     * its dependencies and the replay's per-op state take about 128 B (the estimate above
     * over-counts ops, so this errs on the side of refusing late rather than aborting). */
    if (rc == DT_OK)
        rc = dt_check_memory(est_ops * 128.0, "the step's op graph", file,
                             "parallel.microbatches", err);
    if (rc == DT_OK) {
        p->g = wl_graph_build(s);
        if (P->local_sgd > 1 || P->staleness >= 0) {
            wl_scenario loc = *s;
            loc.plan.local_step = true;
            p->g_local = wl_graph_build(&loc);
        }
    }
    if (rc != DT_OK) run_prep_free(p);
    return rc;
}

int run_input_read_s(const run_prep *p, double *read_s, dt_error *err)
{
    const wl_scenario *s = &p->s;
    js_ctx c = {p->file ? p->file : "<scenario>", err};
    int dp = s->plan.dp;
    int *g = dt_xmalloc(((size_t)dp + 1) * sizeof *g);
    /* the first GPU of each DP replica (CP rank 0: the placement's tp axis is tp x cp wide) */
    for (int d = 0; d < dp; d++) g[d] = wl_gpu_of_cp(&s->plan, d, 0, 0, 0);
    double bw;
    int rc = storage_path(&c, &s->storage, p->t, g, dp, false, &bw);
    int hosts = count_hosts(p->t, g, dp);
    free(g);
    if (rc == DT_OK)
        *read_s = stor_transfer_s(&s->storage, hosts, bw, s->global_batch * s->input.bytes_per_sample);
    return rc;
}

/* Stretch a step to T (waiting for something that is not its own work): throughput and cost
 * follow. */
void run_stretch(run_result *out, double T)
{
    double T0 = out->step_time_s;
    if (!(T > 0) || !(T0 > 0) || T == T0) return;
    double k = T0 / T;
    out->step_time_s = T;
    out->throughput.samples_per_s *= k;
    out->throughput.tokens_per_s *= k;
    out->throughput.tflops_per_gpu *= k;
    out->throughput.mfu *= k;
    out->cost_per_step_usd /= k;
}

/* Backup workers: the update used the gradients of dp - dropped replicas' samples only. */
void run_count_used_samples(const wl_plan *p, run_result *out, int dropped_lanes)
{
    int dropped = p->pp > 0 ? dropped_lanes / p->pp : dropped_lanes;
    double used = (double)(p->dp - dropped) / p->dp;
    out->backup_workers = p->backup_workers;
    out->dropped_replicas = dropped;
    out->samples_used = out->throughput.samples_per_s * out->step_time_s * used;
    out->throughput.samples_per_s *= used;
    out->throughput.tokens_per_s *= used;
    out->throughput.tflops_per_gpu *= used;
    out->throughput.mfu *= used;
}

int run_scenario(const cJSON *scenario, const char *file, const char *base_dir,
                 const run_options *opt, run_result *out, dt_error *err)
{
    double t0 = now_s();
    run_prep p;
    TRY(run_prep_scenario(scenario, file, base_dir, opt, &p, out, err));
    wl_scenario *s = &p.s;
    int rc = DT_OK;
    char *trace_tmp = NULL;
    trace_env env = {.gpu = NULL, .env = s->env, .mem_params = out->memory.params,
                     .mem_grads = out->memory.grads, .mem_optimizer = out->memory.optimizer,
                     .mem_activations = out->memory.activations, .mem_peak = out->memory.peak};
    snprintf(env.name, sizeof env.name, "%s", s->name);
    env.gpu = s->gpu ? (cJSON *)s->gpu : NULL;
    if (opt && opt->write_trace) rc = write_trace_file(opt->write_trace, p.g, &env, &trace_tmp, err);
    if (rc == DT_OK && opt && opt->on_graph) rc = opt->on_graph(opt->on_graph_ctx, p.g, &env, p.t, err);
    if (rc == DT_OK && s->plan.staleness >= 0) {
        /* asynchronous replicas have no single step: simulate enough of them to see the
         * staleness bound bind (docs/workloads.md, "Many steps") */
        int n = 4 * (s->plan.staleness + 1);
        n = n < 8 ? 8 : n > 64 ? 64 : n;
        run_steps_result sr;
        rc = run_steps_prepared(&p, opt, n, 1, NULL, NULL, out, &sr, err);
        run_steps_result_free(&sr);
    } else if (rc == DT_OK) {
        run_job J = {.g = p.g, .t = p.t, .env = &s->env, .backup_drop = s->plan.backup_workers};
        /* the deadline bounds the step only when the step is this replay's end (run.h);
         * rounded up, so a step stopped there is longer than deadline_s */
        if (opt && opt->deadline_s > 0 && s->plan.backup_workers == 0 && s->plan.local_sgd <= 1)
            J.deadline = opt->deadline_s < 1e6 ? sim_time_from_s(opt->deadline_s) + 1 : 0;
        rc = run_job_simulate(&J, opt, out, err);
        if (rc == DT_OK && s->plan.backup_workers > 0) run_count_used_samples(&s->plan, out, J.n_dropped);
        if (rc == DT_OK && s->plan.local_sgd > 1) {
            /* H - 1 local steps and one averaging step (the synchronous one): the mean */
            run_result loc = *out;
            loc.timeline = NULL;
            run_job L = {.g = p.g_local, .t = p.t, .env = &s->env};
            rc = run_job_simulate(&L, NULL, &loc, err);
            if (rc == DT_OK) {
                double H = s->plan.local_sgd, Ts = out->step_time_s, Tl = loc.step_time_s;
                out->local_sgd = s->plan.local_sgd;
                out->sync_step_s = Ts;
                out->local_step_s = Tl;
#define MIX(f) out->breakdown_s.f = ((H - 1) * loc.breakdown_s.f + out->breakdown_s.f) / H
                MIX(compute);
                MIX(comm_exposed);
                MIX(bubble);
                MIX(straggler_wait);
#undef MIX
                out->host_wait_s = ((H - 1) * loc.host_wait_s + out->host_wait_s) / H;
                run_stretch(out, ((H - 1) * Tl + Ts) / H);
                out->events += loc.events;
            }
        }
    }
    if (rc == DT_EINPUT && !err->file[0] && file) snprintf(err->file, sizeof err->file, "%s", file);
    if (rc == DT_OK && s->input.present && !out->stopped_at_deadline) {
        double r = 0;
        rc = run_input_read_s(&p, &r, err);
        if (rc == DT_OK) {
            double stall = stor_input_stall_s(&s->input, r, out->step_time_s);
            out->has_input = true;
            out->input_read_s = r;
            out->input_prefetch = s->input.prefetch;
            if (stall > 0) {
                run_stretch(out, out->step_time_s + stall);
                out->breakdown_s.data_stall = stall;
            }
        }
    }
    if (trace_tmp) { /* "syn.json --write-trace t.json" left t.json after a failed step */
        if (rc == DT_OK && rename(trace_tmp, opt->write_trace) != 0)
            rc = dt_error_set(err, DT_EIO, opt->write_trace, NULL,
                              "cannot rename the trace into place");
        if (rc != DT_OK) remove(trace_tmp);
        free(trace_tmp);
    }
    run_prep_free(&p);
    out->wall_s = now_s() - t0;
    return rc;
}

char *run_dir_of(const char *path)
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
    memset(out, 0, sizeof *out);
    out->staleness = -1; /* callers free out->timeline even when the file is bad */
    cJSON *j;
    TRY(js_parse_file(filename, &j, err));
    char *dir = run_dir_of(filename);
    int rc = run_scenario(j, filename, dir, opt, out, err);
    free(dir);
    cJSON_Delete(j);
    return rc;
}

int run_memory_file(const char *filename, struct run_memory *out, bool *fits, dt_error *err)
{
    cJSON *j;
    TRY(js_parse_file(filename, &j, err));
    char *dir = run_dir_of(filename);
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
        if (rc == DT_OK) apply_link_efficiency(&tr->env, t);
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
        if (rc == DT_OK)
            rc = wl_check_straggler_product(&c, &tr->env, g->n_gpus, "environment.stragglers");
    }
    if (rc == DT_OK) {
        if (opt && opt->have_seed) tr->env.seed = opt->seed;
        if (opt && opt->have_network) tr->env.network = opt->network;
        snprintf(out->name, sizeof out->name, "%s", tr->name);
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
        run_job J = {.g = g, .t = t, .env = &tr->env};
        rc = run_job_simulate(&J, opt, out, err);
        if (rc == DT_EINPUT && !err->file[0]) /* replay errors (cycles, overflow) are the trace's */
            snprintf(err->file, sizeof err->file, "%s", source);
    }
    topo_destroy(t);
    return rc;
}

/* ---------------------------------------------------------------- goodput ---- */

int run_goodput_job(const cJSON *scenario, const char *file, const char *base_dir,
                    const run_options *opt, gp_job *gj, run_result *step, dt_error *err)
{
    memset(gj, 0, sizeof *gj);
    TRY(run_scenario(scenario, file, base_dir, opt, step, err));
    wl_scenario s;
    topo *t;
    TRY(prepare(scenario, file, base_dir, &s, &t, NULL, 0, err));
    js_ctx c = {file ? file : "<scenario>", err};
    int rc = DT_OK;
    if (!s.failures.present)
        rc = js_fail(&c, "", "failures", "required by dtsim goodput: what fails and how often, "
                     "e.g. \"failures\": {\"gpu\": {\"mtbf\": \"50000 h\"}, "
                     "\"restart\": \"10 min\"}");
    else if (!s.checkpoint.present)
        rc = js_fail(&c, "", "checkpoint", "required by dtsim goodput: how the job checkpoints, "
                     "e.g. \"checkpoint\": {\"interval\": \"auto\"} (with a \"storage\" "
                     "section)");
    int n = t->n_gpus;
    int *all = dt_xmalloc(((size_t)n + 1) * sizeof *all);
    for (int i = 0; i < n; i++) all[i] = i;
    double bw_w = INFINITY, bw_r = INFINITY;
    if (rc == DT_OK) rc = storage_path(&c, &s.storage, t, all, n, true, &bw_w);
    if (rc == DT_OK) rc = storage_path(&c, &s.storage, t, all, n, false, &bw_r);
    if (rc == DT_OK) {
        gj->step_s = step->step_time_s;
        gj->tokens_per_step = step->throughput.tokens_per_s * step->step_time_s;
        gj->samples_per_step = step->throughput.samples_per_s * step->step_time_s;
        gj->count[GP_GPU] = n;
        gj->count[GP_HOST] = count_hosts(t, all, n);
        long links = 0;
        for (int l = 0; l < t->n_links; l++)
            if (t->links[l].reverse < 0 || l < t->links[l].reverse) links++;
        gj->count[GP_LINK] = links;
        memcpy(gj->cls, s.failures.cls, sizeof gj->cls);
        gj->start = s.failures.start;
        gj->restart_s = s.failures.restart_s;
        double size = s.checkpoint.size_bytes;
        if (size <= 0) {
            /* what a restart needs: the weights and the optimizer states of every parameter
             * (not the gradients), ZeRO paper accounting with dp = 1 */
            double psi = s.model.kind == WL_TRANSFORMER ? wl_total_params(&s.model) : s.model.params;
            double p, g, o;
            mem_model_states(psi, 1, 0, s.plan.precision, s.plan.optimizer, &p, &g, &o);
            size = p + o;
        }
        gj->ckpt_bytes = size;
        int hosts = (int)gj->count[GP_HOST];
        double write_s = stor_transfer_s(&s.storage, hosts, bw_w, size);
        gj->read_s = stor_transfer_s(&s.storage, hosts, bw_r, size);
        gj->write_bw = write_s > s.storage.latency_s ? size / (write_s - s.storage.latency_s) : INFINITY;
        gj->mode = s.checkpoint.mode;
        if (s.checkpoint.mode == GP_CKPT_SYNC) {
            gj->block_s = write_s;
            gj->durable_s = 0;
        } else {
            gj->block_s = size / n / s.checkpoint.snapshot_bw; /* every GPU copies its share */
            gj->durable_s = write_s;
        }
        if (s.checkpoint.interval_steps > 0) gj->interval_steps = s.checkpoint.interval_steps;
        else if (s.checkpoint.interval_s > 0 && gj->step_s > 0)
            gj->interval_steps = (long)fmax(1, llround(s.checkpoint.interval_s / gj->step_s));
    }
    free(all);
    topo_destroy(t);
    wl_scenario_free(&s);
    return rc;
}

int run_goodput_job_file(const char *filename, const run_options *opt, gp_job *gj,
                         run_result *step, dt_error *err)
{
    memset(step, 0, sizeof *step);
    cJSON *j;
    TRY(js_parse_file(filename, &j, err));
    char *dir = run_dir_of(filename);
    int rc = run_goodput_job(j, filename, dir, opt, gj, step, err);
    free(dir);
    cJSON_Delete(j);
    return rc;
}

int run_trace_file(const char *trace_file, const char *topology_file, const run_options *opt,
                   run_result *out, dt_error *err)
{
    double t0 = now_s();
    memset(out, 0, sizeof *out);
    out->staleness = -1;
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
    out->staleness = -1;
    chakra_read_options co = {.groups_file = opt ? opt->chakra_groups : NULL,
                              .warn = opt ? opt->warn : NULL, .warn_ctx = opt ? opt->warn_ctx : NULL};
    int rc = chakra_read(dir_or_prefix, &co, &g, &tr, err);
    if (rc == DT_OK) rc = run_graph(g, &tr, dir_or_prefix, topology_file, opt, out, err);
    wl_graph_destroy(g);
    trace_env_free(&tr);
    out->wall_s = now_s() - t0;
    return rc;
}
