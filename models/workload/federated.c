/* federated.c - federated learning rounds as events over the flow network (federated.h).
 *
 * Why not an op graph: a round is a tree of transfers whose fan-out (an edge server sending
 * the model to each of its clients at once) would sit on one stream of one lane in the op
 * graph and run one after another; here every transfer is its own flow from the start, so an
 * edge server's downlink is shared by its clients' flows max-min fairly, as TCP would share it.
 * Sixty clients' uploads to one server take 60 U / B, not 60 x (U / B + latency).
 *
 * The round, hierarchical (HierFAVG, Liu et al. 2020, "Client-Edge-Cloud Hierarchical Federated
 * Learning"): every client trains `local_steps` steps and sends its update (U bytes) to its
 * edge server; an edge server waits for all its clients, aggregates (reads their k updates at
 * the GPU's reduction rate, as a parameter server does in the collective engine) and, for the
 * first edge_rounds - 1 edge rounds, sends the edge model back to its clients, which train
 * again; after the last it sends shard j (U / S) to cloud server j (S servers, sharded like
 * the ps collective); a cloud server aggregates the E edges' shards and sends its shard back to
 * every edge; an edge server holding all S shards sends the model to its clients, which start
 * the next round on arrival. `ps`: the clients talk to the cloud's servers directly; `allreduce`:
 * the clients run one all-reduce of U bytes (the collective engine, options.dp_algorithm) once
 * all have trained. Nobody waits for a global barrier that the protocol does not have: a client
 * whose model arrives early starts early.
 *
 * A local step is timed by the compute model of the client's own GPU (wl_cost_time on its
 * spec, times its straggler slowdown): microbatches x (forward + backward of the whole model)
 * + the optimizer step over its parameters. Cost: O(transfers) events and flows per round,
 * each flow start or end re-solving the max-min shares of the links it touches.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtsim/arena.h"
#include "dtsim/federated.h"
#include "run_internal.h"

#define TRY(x)                                                                              \
    do {                                                                                    \
        int rc_ = (x);                                                                      \
        if (rc_ != DT_OK) return rc_;                                                       \
    } while (0)

static const char *const agg_names[] = {"hierarchical", "ps", "allreduce", NULL};

const char *fl_aggregation_name(fl_aggregation a)
{
    return a >= FL_HIERARCHICAL && a <= FL_ALLREDUCE ? agg_names[a] : "?";
}

/* ---------------------------------------------------------------- parsing ---- */

typedef struct fl_spec {
    fl_aggregation agg;
    int nc, ne, ns;
    int *client_gpu, *client_edge;   /* [nc]; client_edge -1 without edges */
    int *edge_gpu, *edge_first, *edge_n;  /* [ne]; an edge's clients are consecutive */
    int *cloud_gpu;                  /* [ns] */
    int local_steps, edge_rounds, rounds;
    double update_bytes;
    dt_arena mem;                    /* client_edge and the edge arrays (the GPU lists grow) */
} fl_spec;

static void spec_free(fl_spec *f)
{
    free(f->client_gpu);
    free(f->cloud_gpu);
    dt_arena_free(&f->mem);
}

/* A GPU: its index in the topology, or the name of a GPU node. */
static int gpu_ref(const js_ctx *c, const cJSON *v, const char *path, const topo *t, int *out)
{
    char d[64];
    if (cJSON_IsNumber(v)) {
        double x = v->valuedouble;
        if (x != floor(x) || x < 0 || x >= t->n_gpus)
            return js_fail(c, path, NULL, "expected a GPU index 0..%d or a GPU's node name, found %s",
                           t->n_gpus - 1, js_describe(v, d, sizeof d));
        *out = (int)x;
        return DT_OK;
    }
    if (cJSON_IsString(v)) {
        for (int i = 0; i < t->n_nodes; i++)
            if (!strcmp(t->nodes[i].name, v->valuestring)) {
                if (t->nodes[i].gpu < 0)
                    return js_fail(c, path, NULL, "node \"%s\" is not a GPU", v->valuestring);
                *out = t->nodes[i].gpu;
                return DT_OK;
            }
        return js_fail(c, path, NULL, "no node named \"%s\" in the topology", v->valuestring);
    }
    return js_fail(c, path, NULL, "expected a GPU index or a GPU's node name, found %s",
                   js_describe(v, d, sizeof d));
}

/* A list of GPUs (or one), appended to *out (grown), each unique among those marked in seen. */
static int gpu_list(const js_ctx *c, const cJSON *v, const char *path, const topo *t,
                    unsigned char *seen, const char *role, int **out, int *n)
{
    char ep[JS_PATH_MAX];
    int k = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : 1;
    if (cJSON_IsArray(v) && k == 0)
        return js_fail(c, path, NULL, "expected at least one GPU, found an empty list");
    *out = dt_xrealloc(*out, ((size_t)*n + (size_t)k) * sizeof **out);
    int i = 0;
    for (const cJSON *e = cJSON_IsArray(v) ? v->child : v; e; e = cJSON_IsArray(v) ? e->next : NULL, i++) {
        const char *p = cJSON_IsArray(v) ? js_path_index(ep, path, i) : path;
        int g = 0;
        TRY(gpu_ref(c, e, p, t, &g));
        if (seen[g])
            return js_fail(c, p, NULL, "GPU %d (%s) is listed twice as %s", g,
                           t->nodes[t->gpu_node[g]].name, role);
        seen[g] = 1;
        (*out)[(*n)++] = g;
    }
    return DT_OK;
}

static int parse_spec(const js_ctx *c, const cJSON *f, const wl_scenario *s, const topo *t,
                      fl_spec *o)
{
    static const char *const keys[] = {"aggregation", "cloud", "edges", "clients", "local_steps",
                                       "edge_rounds", "rounds", "update_bytes", NULL};
    const char *P = "federated";
    char path[JS_PATH_MAX], ep[JS_PATH_MAX];
    TRY(js_expect_object(c, f, P));
    TRY(js_check_keys(c, f, P, keys));
    const cJSON *cloud = cJSON_GetObjectItemCaseSensitive(f, "cloud");
    const cJSON *edges = cJSON_GetObjectItemCaseSensitive(f, "edges");
    const cJSON *clients = cJSON_GetObjectItemCaseSensitive(f, "clients");
    int agg = edges ? FL_HIERARCHICAL : FL_PS;
    TRY(js_get_enum(c, f, P, "aggregation", false, agg_names, &agg));
    o->agg = (fl_aggregation)agg;
    long long k = 1;
    TRY(js_get_int(c, f, P, "local_steps", false, 1, 1 << 30, &k));
    o->local_steps = (int)k;
    k = 1;
    TRY(js_get_int(c, f, P, "edge_rounds", false, 1, 1 << 20, &k));
    o->edge_rounds = (int)k;
    k = 1;
    TRY(js_get_int(c, f, P, "rounds", false, 1, 1 << 20, &k));
    o->rounds = (int)k;
    /* FedAvg exchanges the model (or its change) in fp32 whatever the training precision */
    o->update_bytes = s->model.params * 4;
    TRY(js_get_quantity(c, f, P, "update_bytes", UNIT_SIZE, false, false, &o->update_bytes));
    if (o->agg == FL_HIERARCHICAL && !edges)
        return js_fail(c, P, "aggregation", "\"hierarchical\" needs edges (edge servers and "
                       "their clients)");
    if (o->agg != FL_ALLREDUCE && !cloud)
        return js_fail(c, P, "cloud", "required with \"aggregation\": \"%s\": the GPU(s) "
                       "aggregating in the cloud", agg_names[o->agg]);
    if (edges && clients)
        return js_fail(c, P, "clients", "give the clients under edges[].clients or here, not both");
    unsigned char *seen = dt_xcalloc((size_t)t->n_gpus + 1, 1);
    int rc = DT_OK;
    if (cloud) {
        js_path_key(path, P, "cloud");
        rc = gpu_list(c, cloud, path, t, seen, "a cloud server", &o->cloud_gpu, &o->ns);
        memset(seen, 0, (size_t)t->n_gpus);
    }
    if (rc == DT_OK && edges) {
        js_path_key(path, P, "edges");
        rc = js_expect_array(c, edges, path);
        int ne = rc == DT_OK ? cJSON_GetArraySize(edges) : 0;
        if (rc == DT_OK && ne == 0) rc = js_fail(c, path, NULL, "expected at least one edge server");
        static const char *const ekeys[] = {"server", "clients", NULL};
        unsigned char *eseen = dt_xcalloc((size_t)t->n_gpus + 1, 1);
        o->edge_gpu = dt_arena_array(&o->mem, (size_t)ne + 1, sizeof *o->edge_gpu);
        o->edge_first = dt_arena_array(&o->mem, (size_t)ne + 1, sizeof *o->edge_first);
        o->edge_n = dt_arena_array(&o->mem, (size_t)ne + 1, sizeof *o->edge_n);
        if (rc == DT_OK) rc = dt_arena_check(&o->mem, "federated", c->err);
        int i = 0;
        for (const cJSON *e = rc == DT_OK ? edges->child : NULL; e && rc == DT_OK; e = e->next, i++) {
            js_path_index(ep, path, i);
            rc = js_expect_object(c, e, ep);
            if (rc == DT_OK) rc = js_check_keys(c, e, ep, ekeys);
            const cJSON *sv = cJSON_GetObjectItemCaseSensitive(e, "server");
            const cJSON *cl = cJSON_GetObjectItemCaseSensitive(e, "clients");
            if (rc == DT_OK && !sv) rc = js_fail(c, ep, "server", "required: the edge server's GPU");
            if (rc == DT_OK && !cl) rc = js_fail(c, ep, "clients", "required: the edge's client GPUs");
            char sp[JS_PATH_MAX], cp[JS_PATH_MAX];
            int n0 = 0, *one = NULL;
            if (rc == DT_OK)
                rc = gpu_list(c, sv, js_path_key(sp, ep, "server"), t, eseen, "an edge server", &one, &n0);
            if (rc == DT_OK && n0 != 1)
                rc = js_fail(c, ep, "server", "expected one GPU, found %d", n0);
            if (rc == DT_OK) o->edge_gpu[i] = one[0];
            free(one);
            o->edge_first[i] = o->nc;
            if (rc == DT_OK)
                rc = gpu_list(c, cl, js_path_key(cp, ep, "clients"), t, seen, "a client",
                              &o->client_gpu, &o->nc);
            o->edge_n[i] = o->nc - o->edge_first[i];
        }
        free(eseen);
        o->ne = i;
        if (rc == DT_OK) o->client_edge = dt_arena_array(&o->mem, (size_t)o->nc + 1, sizeof *o->client_edge);
        if (rc == DT_OK) rc = dt_arena_check(&o->mem, "federated", c->err);
        if (rc == DT_OK) {
            for (int e = 0; e < o->ne; e++)
                for (int j = 0; j < o->edge_n[e]; j++) o->client_edge[o->edge_first[e] + j] = e;
        }
    } else if (rc == DT_OK && clients) {
        js_path_key(path, P, "clients");
        rc = gpu_list(c, clients, path, t, seen, "a client", &o->client_gpu, &o->nc);
    } else if (rc == DT_OK) {
        /* every GPU that is not a cloud server */
        unsigned char *srv = dt_xcalloc((size_t)t->n_gpus + 1, 1);
        for (int j = 0; j < o->ns; j++) srv[o->cloud_gpu[j]] = 1;
        o->client_gpu = dt_xmalloc(((size_t)t->n_gpus + 1) * sizeof *o->client_gpu);
        for (int g = 0; g < t->n_gpus; g++)
            if (!srv[g]) o->client_gpu[o->nc++] = g;
        free(srv);
        if (o->nc == 0) rc = js_fail(c, P, "clients", "no GPU is left for clients besides the cloud");
    }
    free(seen);
    if (rc == DT_OK && !o->client_edge) {
        o->client_edge = dt_arena_array(&o->mem, (size_t)o->nc + 1, sizeof *o->client_edge);
        rc = dt_arena_check(&o->mem, "federated", c->err);
        for (int j = 0; rc == DT_OK && j < o->nc; j++) o->client_edge[j] = -1;
    }
    if (rc == DT_OK && o->agg == FL_ALLREDUCE && o->nc < 2)
        rc = js_fail(c, P, "aggregation", "\"allreduce\" needs at least 2 clients, found %d", o->nc);
    return rc;
}

/* ------------------------------------------------------------- simulation ---- */

enum { K_TRAINED, K_AT_EDGE, K_EDGE_REDUCED, K_AT_CLOUD, K_CLOUD_REDUCED, K_SHARD_AT_EDGE,
       K_AT_CLIENT, K_ALLREDUCED, K_COUNT };

typedef struct fl_sim {
    const fl_spec *f;
    sim_engine *eng;
    net *n;
    coll_engine *ce;
    const topo *t;
    coll_spec ar;                   /* allreduce aggregation */
    uint32_t kind[K_COUNT];
    sim_time_t *train;              /* [nc] training between two aggregations it takes part in */
    int *client_round, *client_j, *client_shards;
    int *edge_count, *edge_j, *edge_round, *edge_shards;
    int *cloud_count, *cloud_round;
    int trained;                    /* allreduce: clients done training this round */
    int finished;                   /* clients holding the last round's model */
    sim_time_t *reduce_free;        /* per GPU: one reduction unit, first come first served */
    sim_time_t end;
    sim_time_t ms[7];               /* fl_milestones, in order, -1 = not reached */
    double bytes[4];                /* clients up, edges up, cloud down, edges down */
} fl_sim;

enum { M_TRAINED, M_AT_EDGES, M_EDGES_AGG, M_AT_CLOUD, M_CLOUD_AGG, M_AT_EDGES_BACK, M_AT_CLIENTS };

static void mark(fl_sim *S, int m)
{
    sim_time_t now = sim_now(S->eng);
    if (now > S->ms[m]) S->ms[m] = now;
}

/* Aggregate `bytes` of received updates on GPU g, then fire kind(id). */
static void reduce(fl_sim *S, int g, double bytes, uint32_t kind, uint32_t id)
{
    double bw = S->t->gpus[g].reduce_bw;
    sim_time_t now = sim_now(S->eng), start = S->reduce_free[g] > now ? S->reduce_free[g] : now;
    double ps = bw > 0 ? ceil(bytes / bw * 1e12 * (1 - 1e-12)) : 0;
    S->reduce_free[g] = sim_time_add(start, ps < 9.0e18 ? (sim_time_t)ps : SIM_TIME_MAX);
    sim_schedule(S->eng, S->reduce_free[g], kind, id, 0);
}

static void send(fl_sim *S, int src, int dst, double bytes, int k, uint32_t id, uint64_t data, int acct)
{
    S->bytes[acct] += bytes;
    net_send(S->n, src, dst, bytes, S->kind[k], id, data);
}

/* Client c holds a model: an edge's (end_of_round false) or the round's aggregate. */
static void client_receive(fl_sim *S, int c, bool end_of_round)
{
    if (end_of_round) {
        if (S->client_round[c] == 0) mark(S, M_AT_CLIENTS);
        S->client_j[c] = 0;
        if (++S->client_round[c] == S->f->rounds) {
            sim_time_t now = sim_now(S->eng);
            if (now > S->end) S->end = now;
            S->finished++;
            return;
        }
    } else {
        S->client_j[c]++;
    }
    sim_schedule_in(S->eng, sim_now(S->eng), S->train[c], S->kind[K_TRAINED], (uint32_t)c, 0);
}

static void on_event(void *model, sim_engine *eng, const sim_event *ev)
{
    fl_sim *S = model;
    const fl_spec *f = S->f;
    (void)eng;
    int k = 0;
    while (k < K_COUNT && S->kind[k] != ev->kind) k++;
    int id = (int)ev->id;
    double shard = f->update_bytes / (f->ns > 0 ? f->ns : 1);
    switch (k) {
    case K_TRAINED:
        if (S->client_round[id] == 0 && (f->agg != FL_HIERARCHICAL || S->client_j[id] == f->edge_rounds - 1))
            mark(S, M_TRAINED);
        if (f->agg == FL_HIERARCHICAL) {
            int e = f->client_edge[id];
            send(S, f->client_gpu[id], f->edge_gpu[e], f->update_bytes, K_AT_EDGE, (uint32_t)e, 0, 0);
        } else if (f->agg == FL_PS) {
            for (int j = 0; j < f->ns; j++)
                send(S, f->client_gpu[id], f->cloud_gpu[j], shard, K_AT_CLOUD, (uint32_t)j, 0, 0);
        } else if (++S->trained == f->nc) {
            S->trained = 0;
            dt_error e;
            dt_error_clear(&e);
            int rc = coll_start(S->ce, &S->ar, S->kind[K_ALLREDUCED], 0, 0, &e);
            if (rc != DT_OK && S->ar.algo != COLL_AUTO) {
                /* the requested algorithm cannot run this op: the automatic choice (as run.c) */
                S->ar.algo = COLL_AUTO;
                dt_error_clear(&e);
                rc = coll_start(S->ce, &S->ar, S->kind[K_ALLREDUCED], 0, 0, &e);
            }
            DT_ASSERT(rc == DT_OK); /* distinct client GPUs: always a valid group */
        }
        break;
    case K_AT_EDGE:
        if (++S->edge_count[id] == f->edge_n[id]) {
            S->edge_count[id] = 0;
            bool last = S->edge_round[id] == 0 && S->edge_j[id] == f->edge_rounds - 1;
            if (last) mark(S, M_AT_EDGES);
            reduce(S, f->edge_gpu[id], f->edge_n[id] * f->update_bytes, S->kind[K_EDGE_REDUCED],
                   (uint32_t)id);
        }
        break;
    case K_EDGE_REDUCED:
        if (S->edge_round[id] == 0 && S->edge_j[id] == f->edge_rounds - 1) mark(S, M_EDGES_AGG);
        if (++S->edge_j[id] < f->edge_rounds) {
            for (int j = 0; j < f->edge_n[id]; j++)
                send(S, f->edge_gpu[id], f->client_gpu[f->edge_first[id] + j], f->update_bytes,
                     K_AT_CLIENT, (uint32_t)(f->edge_first[id] + j), 0, 3);
        } else {
            S->edge_j[id] = 0;
            for (int j = 0; j < f->ns; j++)
                send(S, f->edge_gpu[id], f->cloud_gpu[j], shard, K_AT_CLOUD, (uint32_t)j, 0, 1);
        }
        break;
    case K_AT_CLOUD: {
        int expect = f->agg == FL_HIERARCHICAL ? f->ne : f->nc;
        if (++S->cloud_count[id] == expect) {
            S->cloud_count[id] = 0;
            if (S->cloud_round[id] == 0) mark(S, M_AT_CLOUD);
            reduce(S, f->cloud_gpu[id], expect * shard, S->kind[K_CLOUD_REDUCED], (uint32_t)id);
        }
        break;
    }
    case K_CLOUD_REDUCED:
        if (S->cloud_round[id]++ == 0) mark(S, M_CLOUD_AGG);
        if (f->agg == FL_HIERARCHICAL)
            for (int e = 0; e < f->ne; e++)
                send(S, f->cloud_gpu[id], f->edge_gpu[e], shard, K_SHARD_AT_EDGE, (uint32_t)e, 0, 2);
        else
            for (int c = 0; c < f->nc; c++)
                send(S, f->cloud_gpu[id], f->client_gpu[c], shard, K_AT_CLIENT, (uint32_t)c, 1, 2);
        break;
    case K_SHARD_AT_EDGE:
        if (++S->edge_shards[id] == f->ns) {
            S->edge_shards[id] = 0;
            if (S->edge_round[id]++ == 0) mark(S, M_AT_EDGES_BACK);
            for (int j = 0; j < f->edge_n[id]; j++)
                send(S, f->edge_gpu[id], f->client_gpu[f->edge_first[id] + j], f->update_bytes,
                     K_AT_CLIENT, (uint32_t)(f->edge_first[id] + j), 1, 3);
        }
        break;
    case K_AT_CLIENT:
        if (f->agg == FL_PS) {
            if (++S->client_shards[id] == f->ns) {
                S->client_shards[id] = 0;
                client_receive(S, id, true);
            }
        } else {
            client_receive(S, id, ev->data != 0);
        }
        break;
    case K_ALLREDUCED:
        for (int c = 0; c < f->nc; c++) client_receive(S, c, true);
        break;
    default:
        DT_ASSERT(0);
    }
}

/* One local step on client GPU g: microbatches x (forward + backward of the whole model) + the
 * optimizer over its parameters, by the compute model of its spec, times its slowdown. */
static sim_time_t local_step(const wl_scenario *s, const topo *t, int g, double slowdown)
{
    const wl_plan *p = &s->plan;
    wl_cost f, b, o = {0};
    int L = s->model.layers;
    wl_layer_op_cost(s, p, false, true, true, L, &f);
    wl_layer_op_cost(s, p, true, true, true, L, &b);
    o.bytes[GPU_OP_OPTIMIZER] = s->model.params * wl_optimizer_bytes(p);
    gpu_precision pr = wl_gpu_precision(p->precision);
    const gpu_spec *sp = &t->gpus[g];
    double mb = (double)wl_cost_time(&f, sp, pr, gpu_op_time) + (double)wl_cost_time(&b, sp, pr, gpu_op_time);
    double x = (p->microbatches * mb + (double)wl_cost_time(&o, sp, pr, gpu_op_time)) * slowdown;
    return x < 9.0e18 ? (sim_time_t)llround(x) : SIM_TIME_MAX;
}

static int simulate(const wl_scenario *s, topo *t, const fl_spec *f, const char *file,
                    fl_result *out, dt_error *err)
{
    fl_sim S = {.f = f, .t = t, .end = 0};
    /* The per-client, per-edge, per-cloud-server and per-GPU state: one arena (dtsim/arena.h),
     * checked once before anything else is built, freed at once at the end. */
    dt_arena mem = DT_ARENA_INIT;
    size_t nc1 = (size_t)f->nc + 1, ne1 = (size_t)f->ne + 1, ns1 = (size_t)f->ns + 1;
#define CARVE(field, n) (S.field = dt_arena_array(&mem, (n), sizeof *S.field))
    CARVE(train, nc1);
    CARVE(client_round, nc1);
    CARVE(client_j, nc1);
    CARVE(client_shards, nc1);
    CARVE(edge_count, ne1);
    CARVE(edge_j, ne1);
    CARVE(edge_round, ne1);
    CARVE(edge_shards, ne1);
    CARVE(cloud_count, ns1);
    CARVE(cloud_round, ns1);
    CARVE(reduce_free, (size_t)t->n_gpus + 1);
#undef CARVE
    int *group = f->agg == FL_ALLREDUCE ? dt_arena_array(&mem, nc1, sizeof *group) : NULL;
    int rc = dt_arena_check(&mem, "federated", err);
    if (rc) {
        dt_arena_free(&mem);
        return rc;
    }
    S.eng = sim_engine_create();
    net_config nc = {.mode = s->env.network};
    S.n = net_create(t, S.eng, &nc);
    coll_config cc = {.reduce_bw = -1, .chunk_bytes = 1e18, .ring_model = s->env.ring_model,
                      .library = s->env.coll_library};
    S.ce = coll_create(S.n, S.eng, t, &cc);
    static const char *const names[K_COUNT] = {"fl_trained", "fl_at_edge", "fl_edge_reduced",
                                               "fl_at_cloud", "fl_cloud_reduced", "fl_shard_at_edge",
                                               "fl_at_client", "fl_allreduced"};
    for (int k = 0; k < K_COUNT; k++) S.kind[k] = sim_kind_register(S.eng, names[k], on_event, &S);
    for (int m = 0; m < 7; m++) S.ms[m] = -1;
    double *slow = wl_env_slowdowns(&s->env, t->n_gpus, NULL);
    /* between two aggregations a client takes part in: local_steps (hierarchical: every edge
     * round) or edge_rounds x local_steps (flat: the same training per cloud round) */
    int steps = f->local_steps * (f->agg == FL_HIERARCHICAL ? 1 : f->edge_rounds);
    out->local_step_min_s = INFINITY;
    double worst = 0;
    for (int c = 0; c < f->nc; c++) {
        sim_time_t one = local_step(s, t, f->client_gpu[c], slow[f->client_gpu[c]]);
        double one_s = sim_time_to_s(one);
        out->local_step_min_s = fmin(out->local_step_min_s, one_s);
        out->local_step_max_s = fmax(out->local_step_max_s, one_s);
        S.train[c] = one > 0 && steps > SIM_TIME_MAX / one ? SIM_TIME_MAX : one * steps;
        worst = fmax(worst, one_s * f->local_steps * f->edge_rounds);
    }
    if (group) {
        memcpy(group, f->client_gpu, (size_t)f->nc * sizeof *group);
        S.ar = (coll_spec){.op = COLL_ALLREDUCE, .algo = s->env.dp_algorithm, .group = group,
                           .n = f->nc, .bytes = f->update_bytes, .elem_bytes = 4,
                           .servers = s->env.ps_servers};
        /* the algorithm requested (options.dp_algorithm) or, where it cannot run an
         * all-reduce over this group, auto; the bytes the clients send per round, counted
         * from the program it runs */
        coll_analytic *an = coll_analytic_create(S.n, t, &cc);
        sim_time_t x;
        dt_error e;
        dt_error_clear(&e);
        if (coll_analytic_time(an, &S.ar, &x, NULL, &e) != DT_OK) S.ar.algo = COLL_AUTO;
        double sent = 0;
        dt_error_clear(&e);
        if (coll_analytic_bytes(an, &S.ar, &sent, &e) == DT_OK) S.bytes[0] = sent * f->rounds;
        coll_analytic_destroy(an);
    }
    for (int c = 0; c < f->nc; c++) sim_schedule(S.eng, S.train[c], S.kind[K_TRAINED], (uint32_t)c, 0);
    sim_run(S.eng, SIM_TIME_MAX);
    if (S.finished < f->nc || S.end >= SIM_TIME_MAX / 2)
        rc = dt_error_set(err, DT_EINPUT, file, "federated",
                          "the rounds do not end within the simulator's clock (%.3g s): a link "
                          "or GPU too slow for the update size", sim_time_to_s(SIM_TIME_MAX / 2));
    out->total_s = sim_time_to_s(S.end);
    out->round_s = out->total_s / f->rounds;
    out->compute_s = worst;
    out->comm_s = out->round_s - worst;
    double *m = &out->first.trained;
    for (int i = 0; i < 7; i++) m[i] = S.ms[i] >= 0 ? sim_time_to_s(S.ms[i]) : -1;
    out->bytes_clients_up = S.bytes[0] / f->rounds;
    out->bytes_edges_up = S.bytes[1] / f->rounds;
    out->bytes_cloud_down = S.bytes[2] / f->rounds;
    out->bytes_edges_down = S.bytes[3] / f->rounds;
    out->events = sim_events_handled(S.eng);
    free(slow);
    dt_arena_free(&mem);
    coll_destroy(S.ce);
    net_destroy(S.n);
    sim_engine_destroy(S.eng);
    return rc;
}

int fl_run(const cJSON *scenario, const char *file, const char *base_dir, const fl_options *opt,
           fl_result *out, dt_error *err)
{
    memset(out, 0, sizeof *out);
    js_ctx c = {file ? file : "<scenario>", err};
    wl_scenario s;
    topo *t;
    TRY(run_prepare(scenario, file, base_dir, &s, &t, err));
    fl_spec f = {0};
    int rc = DT_OK;
    if (!s.federated)
        rc = js_fail(&c, "", "federated", "required: the clients, edge servers and cloud of the "
                     "federated rounds (docs/federated.md)");
    else if (s.model.kind == WL_PARAMS)
        rc = js_fail(&c, "model", "kind", "a \"params\" model has no compute to time: use "
                     "\"transformer\" or \"synthetic\"");
    else if (s.plan.tp != 1 || s.plan.pp != 1)
        rc = js_fail(&c, "parallel", s.plan.tp != 1 ? "tp" : "pp",
                     "a federated client trains its whole model on its own GPU: tp 1 and pp 1, "
                     "found tp %d, pp %d", s.plan.tp, s.plan.pp);
    if (rc == DT_OK) rc = parse_spec(&c, s.federated, &s, t, &f);
    if (rc == DT_OK && opt && opt->rounds > 0) f.rounds = opt->rounds;
    if (rc == DT_OK) {
        snprintf(out->name, sizeof out->name, "%s", s.name);
        out->aggregation = f.agg;
        out->clients = f.nc;
        out->edges = f.agg == FL_HIERARCHICAL ? f.ne : 0;
        out->cloud_servers = f.agg == FL_ALLREDUCE ? 0 : f.ns;
        out->rounds = f.rounds;
        out->local_steps = f.local_steps;
        out->edge_rounds = f.edge_rounds;
        out->update_bytes = f.update_bytes;
        fl_spec run = f;
        if (f.agg != FL_HIERARCHICAL) run.ne = 0;
        rc = simulate(&s, t, &run, c.file, out, err);
        double per_step = (double)s.plan.micro_batch_size * s.plan.microbatches;
        out->samples_per_round = (double)f.nc * f.edge_rounds * f.local_steps * per_step;
        out->samples_per_s = out->round_s > 0 ? out->samples_per_round / out->round_s : 0;
    }
    spec_free(&f);
    topo_destroy(t);
    wl_scenario_free(&s);
    return rc;
}

int fl_run_file(const char *filename, const fl_options *opt, fl_result *out, dt_error *err)
{
    cJSON *j;
    memset(out, 0, sizeof *out);
    TRY(js_parse_file(filename, &j, err));
    char *dir = run_dir_of(filename);
    int rc = fl_run(j, filename, dir, opt, out, err);
    free(dir);
    cJSON_Delete(j);
    return rc;
}
