/* traffic.c - bytes sent per kind of communication and static link loads of an op graph
 * (traffic.h).
 *
 * Every op of a step runs exactly once, so what the step sends is a property of the graph: a
 * collective instance runs lane_size collectives (the k-th GPUs of its participating lanes), a
 * send moves its bytes from each lane member, a compute op runs its in-lane collectives
 * `count` times over its lane. In-lane collectives of one lane and op differ only in size, and
 * both the bytes a program sends and its link loads are linear in the size, so they are summed
 * per (lane, op) first and walked once: a 1,024-GPU GPT-3 step has 150 k compute ops but 128
 * lanes.
 */
#include <stdlib.h>
#include <string.h>

#include "dtsim/replay.h"
#include "traffic.h"

/* The spec a cross-lane collective runs as (run.c's coll_fn: the configured algorithm, auto
 * when it cannot run the op). */
static coll_spec spec_of(const traffic_env *e, coll_op op, const int *gpus, int n, double bytes,
                         bool in_lane)
{
    coll_spec s = {.op = op, .algo = in_lane ? COLL_AUTO : e->algo, .group = gpus, .n = n,
                   .bytes = bytes, .root = op == COLL_SENDRECV ? 1 : 0,
                   .elem_bytes = e->elem_bytes, .servers = in_lane ? 0 : e->servers};
    if ((s.algo == COLL_ESTIMATE || s.algo == COLL_AUTO) && !in_lane && op != COLL_SENDRECV) {
        /* what the run chose, with the step's concurrent groups */
        dt_error err;
        dt_error_clear(&err);
        if (traffic_phases_choice(e->phases, e->an, &s, &s.algo, &err) != DT_OK) s.algo = COLL_RULE;
    }
    return s;
}

static double bytes_of(const traffic_env *e, coll_spec s)
{
    double sent = 0;
    dt_error err;
    dt_error_clear(&err);
    if (coll_analytic_bytes(e->an, &s, &sent, &err) != DT_OK && s.algo != COLL_AUTO) {
        s.algo = COLL_AUTO;
        dt_error_clear(&err);
        int rc = coll_analytic_bytes(e->an, &s, &sent, &err);
        DT_ASSERT(rc == DT_OK); /* groups come from the plan or a validated trace */
    }
    return sent;
}

typedef struct load_ctx {
    traffic_load_fn fn;
    void *ctx;
    uint32_t tag;
} load_ctx;

static void on_load(void *ctx, int link, double bytes)
{
    load_ctx *l = ctx;
    l->fn(l->ctx, link, bytes, l->tag);
}

static void loads_of(const traffic_env *e, coll_spec s, load_ctx *l)
{
    dt_error err;
    dt_error_clear(&err);
    if (coll_analytic_loads(e->an, &s, on_load, l, &err) != DT_OK && s.algo != COLL_AUTO) {
        s.algo = COLL_AUTO;
        dt_error_clear(&err);
        int rc = coll_analytic_loads(e->an, &s, on_load, l, &err);
        DT_ASSERT(rc == DT_OK);
    }
}

/* Per (lane, collective op): in-lane bytes x count summed over the lane's compute ops. */
static double *inlane_sums(const wl_graph *g)
{
    double *sum = dt_xcalloc((size_t)g->n_lanes * COLL_OP_COUNT + 1, sizeof *sum);
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const wl_op *o = &g->ops[i];
        if (o->kind != WL_OP_COMPUTE) continue;
        const wl_cost *c = &g->costs[o->arg];
        for (int k = 0; k < c->n_inlane; k++)
            sum[(size_t)o->lane * COLL_OP_COUNT + c->inlane[k].op] +=
                c->inlane[k].bytes * c->inlane[k].count;
    }
    return sum;
}

/* Participants of every collective instance, in op order (CSR), and one op naming it. */
typedef struct parts {
    uint32_t *start, *lane, *op;
} parts;

static parts participants(const wl_graph *g)
{
    parts p;
    p.start = dt_xcalloc((size_t)g->n_colls + 2, sizeof *p.start);
    for (uint32_t i = 0; i < g->n_ops; i++)
        if (g->ops[i].kind == WL_OP_COLL) p.start[g->ops[i].arg + 1]++;
    for (uint32_t c = 0; c < g->n_colls; c++) p.start[c + 1] += p.start[c];
    uint32_t *fill = dt_xmalloc(((size_t)g->n_colls + 1) * sizeof *fill);
    memcpy(fill, p.start, ((size_t)g->n_colls + 1) * sizeof *fill);
    p.lane = dt_xmalloc(((size_t)p.start[g->n_colls] + 1) * sizeof *p.lane);
    p.op = dt_xmalloc(((size_t)g->n_colls + 1) * sizeof *p.op);
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const wl_op *o = &g->ops[i];
        if (o->kind != WL_OP_COLL) continue;
        if (fill[o->arg] == p.start[o->arg]) p.op[o->arg] = i;
        p.lane[fill[o->arg]++] = o->lane;
    }
    free(fill);
    return p;
}

static void parts_free(parts *p)
{
    free(p->start);
    free(p->lane);
    free(p->op);
}

void traffic_bytes(const wl_graph *g, const traffic_env *e, double sent[WL_COMM_KIND_COUNT])
{
    memset(sent, 0, WL_COMM_KIND_COUNT * sizeof *sent);
    int ts = g->lane_size;
    if (ts > 1) {
        double *sum = inlane_sums(g);
        for (int l = 0; l < g->n_lanes; l++)
            for (int op = 0; op < COLL_OP_COUNT; op++) {
                double b = sum[(size_t)l * COLL_OP_COUNT + op];
                if (b > 0)
                    sent[WL_COMM_TP] += bytes_of(e, spec_of(e, (coll_op)op,
                                                            &g->lane_gpus[(size_t)l * ts], ts,
                                                            b, true));
            }
        free(sum);
    }
    if (g->cp_next && g->cp > 1)
        /* ring attention: every GPU sends its KV block cp - 1 times per pass */
        for (uint32_t i = 0; i < g->n_ops; i++) {
            const wl_op *o = &g->ops[i];
            if (o->kind != WL_OP_COMPUTE) continue;
            const wl_cost *c = &g->costs[o->arg];
            sent[WL_COMM_CP] += (double)ts * c->ring_count * (g->cp - 1) * c->ring_bytes;
        }
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const wl_op *o = &g->ops[i];
        if (o->kind != WL_OP_SEND) continue;
        for (int k = 0; k < ts; k++)
            if (g->lane_gpus[(size_t)o->lane * ts + k] != g->lane_gpus[(size_t)o->arg * ts + k])
                sent[WL_COMM_PP] += o->bytes;
    }
    parts p = participants(g);
    int *grp = dt_xmalloc(((size_t)g->n_lanes + 1) * sizeof *grp);
    for (uint32_t c = 0; c < g->n_colls; c++) {
        uint32_t n = p.start[c + 1] - p.start[c];
        if (n < 2) continue;
        int kind = g->colls[c].kind < WL_COMM_KIND_COUNT ? g->colls[c].kind : WL_COMM_DP;
        for (int k = 0; k < ts; k++) {
            for (uint32_t i = 0; i < n; i++)
                grp[i] = g->lane_gpus[(size_t)p.lane[p.start[c] + i] * ts + k];
            sent[kind] += bytes_of(e, spec_of(e, g->colls[c].op, grp, (int)n, g->colls[c].bytes,
                                              false));
        }
    }
    free(grp);
    parts_free(&p);
}

void traffic_loads(const wl_graph *g, const traffic_env *e, bool all, traffic_load_fn fn,
                   void *ctx)
{
    int ts = g->lane_size;
    load_ctx lc = {.fn = fn, .ctx = ctx};
    if (ts > 1) {
        double *sum = inlane_sums(g);
        lc.tag = REPLAY_TAG(WL_COMM_TP, REPLAY_TAG_INLANE);
        for (int l = 0; l < g->n_lanes; l++)
            for (int op = 0; op < COLL_OP_COUNT; op++) {
                double b = sum[(size_t)l * COLL_OP_COUNT + op];
                if (b > 0)
                    loads_of(e, spec_of(e, (coll_op)op, &g->lane_gpus[(size_t)l * ts], ts, b, true),
                             &lc);
            }
        free(sum);
    }
    if (!all) return;
    if (g->cp_next && g->cp > 1) {
        /* ring attention: flows in flow mode (the network records them), static load here */
        lc.tag = REPLAY_TAG(WL_COMM_CP, REPLAY_TAG_INLANE);
        for (uint32_t i = 0; i < g->n_ops; i++) {
            const wl_op *o = &g->ops[i];
            if (o->kind != WL_OP_COMPUTE) continue;
            const wl_cost *c = &g->costs[o->arg];
            double b = (double)c->ring_count * (g->cp - 1) * c->ring_bytes;
            if (b <= 0) continue;
            for (int k = 0; k < ts; k++) {
                int pair[2] = {g->lane_gpus[(size_t)o->lane * ts + k],
                               g->lane_gpus[(size_t)g->cp_next[o->lane] * ts + k]};
                if (pair[0] != pair[1]) loads_of(e, spec_of(e, COLL_SENDRECV, pair, 2, b, false), &lc);
            }
        }
    }
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const wl_op *o = &g->ops[i];
        if (o->kind != WL_OP_SEND) continue;
        lc.tag = REPLAY_TAG(WL_COMM_PP, o->name);
        for (int k = 0; k < ts; k++) {
            int pair[2] = {g->lane_gpus[(size_t)o->lane * ts + k],
                           g->lane_gpus[(size_t)o->arg * ts + k]};
            if (pair[0] != pair[1])
                loads_of(e, spec_of(e, COLL_SENDRECV, pair, 2, o->bytes, false), &lc);
        }
    }
    parts p = participants(g);
    int *grp = dt_xmalloc(((size_t)g->n_lanes + 1) * sizeof *grp);
    for (uint32_t c = 0; c < g->n_colls; c++) {
        uint32_t n = p.start[c + 1] - p.start[c];
        if (n < 2) continue;
        lc.tag = REPLAY_TAG(g->colls[c].kind, g->ops[p.op[c]].name);
        for (int k = 0; k < ts; k++) {
            for (uint32_t i = 0; i < n; i++)
                grp[i] = g->lane_gpus[(size_t)p.lane[p.start[c] + i] * ts + k];
            loads_of(e, spec_of(e, g->colls[c].op, grp, (int)n, g->colls[c].bytes, false), &lc);
        }
    }
    free(grp);
    parts_free(&p);
}

/* ------------------------------------------------------ concurrent phases ---- */

/* A phase: every distinct group of one size that runs one op somewhere in the step, with an
 * open-addressing index over their hashes (a step has thousands of instances and up to
 * thousands of groups per phase: a scan per instance or per collective would be quadratic). */
typedef struct phase_set {
    coll_op op;
    int n, m, cap;
    int *groups;        /* m x n */
    uint64_t *hash;     /* per group */
    int *slot;          /* 1 + group index, 0 empty; slot_cap (power of two) >= 2 m */
    int slot_cap;
} phase_set;

typedef struct choice {
    int used, phase;
    double bytes;
    coll_algo asked, algo;
} choice;

struct traffic_phases {
    phase_set *ph;
    int n_ph;
    choice *memo;
    int cap, used;
};

static uint64_t group_hash(const int *g, int n)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++) h = (h ^ (uint32_t)g[i]) * 1099511628211ull;
    return h;
}

static int phase_find(const traffic_phases *P, coll_op op, int n)
{
    for (int i = 0; i < P->n_ph; i++)
        if (P->ph[i].op == op && P->ph[i].n == n) return i;
    return -1;
}

static int phase_has(const phase_set *f, const int *g, uint64_t h)
{
    if (!f->slot_cap) return 0;
    for (int k = (int)(h & (uint64_t)(f->slot_cap - 1)); f->slot[k]; k = (k + 1) & (f->slot_cap - 1)) {
        int i = f->slot[k] - 1;
        if (f->hash[i] == h && !memcmp(f->groups + (size_t)i * f->n, g, (size_t)f->n * sizeof *g))
            return 1;
    }
    return 0;
}

static void phase_index(phase_set *f, int i)
{
    int k = (int)(f->hash[i] & (uint64_t)(f->slot_cap - 1));
    while (f->slot[k]) k = (k + 1) & (f->slot_cap - 1);
    f->slot[k] = i + 1;
}

static void phase_add(phase_set *F, const int *grp, uint64_t h)
{
    int n = F->n;
    if (F->m == F->cap) {
        F->cap = F->cap ? 2 * F->cap : 8;
        F->groups = dt_xrealloc(F->groups, (size_t)F->cap * n * sizeof *F->groups);
        F->hash = dt_xrealloc(F->hash, (size_t)F->cap * sizeof *F->hash);
    }
    memcpy(F->groups + (size_t)F->m * n, grp, (size_t)n * sizeof *grp);
    F->hash[F->m++] = h;
    if (2 * F->m > F->slot_cap) { /* grow and re-index */
        F->slot_cap = F->slot_cap ? 2 * F->slot_cap : 16;
        free(F->slot);
        F->slot = dt_xcalloc((size_t)F->slot_cap, sizeof *F->slot);
        for (int i = 0; i < F->m; i++) phase_index(F, i);
    } else {
        phase_index(F, F->m - 1);
    }
}

traffic_phases *traffic_phases_create(const wl_graph *g)
{
    traffic_phases *P = dt_xcalloc(1, sizeof *P);
    int ts = g->lane_size;
    parts p = participants(g);
    int *grp = dt_xmalloc(((size_t)g->n_lanes + 1) * sizeof *grp);
    for (uint32_t c = 0; c < g->n_colls; c++) {
        int n = (int)(p.start[c + 1] - p.start[c]);
        if (n < 2) continue;
        coll_op op = g->colls[c].op;
        int f = phase_find(P, op, n);
        if (f < 0) {
            P->ph = dt_xrealloc(P->ph, (size_t)(P->n_ph + 1) * sizeof *P->ph);
            P->ph[P->n_ph] = (phase_set){.op = op, .n = n};
            f = P->n_ph++;
        }
        phase_set *F = &P->ph[f];
        for (int k = 0; k < ts; k++) {
            for (int i = 0; i < n; i++) grp[i] = g->lane_gpus[(size_t)p.lane[p.start[c] + i] * ts + k];
            uint64_t h = group_hash(grp, n);
            /* a group recurs in every bucket of the step: kept once */
            if (!phase_has(F, grp, h)) phase_add(F, grp, h);
        }
    }
    free(grp);
    parts_free(&p);
    return P;
}

void traffic_phases_destroy(traffic_phases *P)
{
    if (!P) return;
    for (int i = 0; i < P->n_ph; i++) {
        free(P->ph[i].groups);
        free(P->ph[i].hash);
        free(P->ph[i].slot);
    }
    free(P->ph);
    free(P->memo);
    free(P);
}

static uint64_t choice_hash(int phase, double bytes)
{
    uint64_t b;
    memcpy(&b, &bytes, sizeof b);
    return ((uint64_t)(uint32_t)phase * 0x9e3779b97f4a7c15ull) ^ (b * 1099511628211ull);
}

int traffic_phases_choice(traffic_phases *P, coll_analytic *an, const coll_spec *spec,
                          coll_algo *out, dt_error *err)
{
    /* auto: the library's candidates (coll_auto_pick); estimate: every candidate */
    int (*choose)(coll_analytic *, const coll_spec *, const int *, int, coll_algo *, dt_error *) =
        spec->algo == COLL_AUTO ? coll_auto_pick : coll_estimate_choice;
    int f = P ? phase_find(P, spec->op, spec->n) : -1;
    if (f < 0 || !phase_has(&P->ph[f], spec->group, group_hash(spec->group, spec->n)))
        return choose(an, spec, NULL, 0, out, err); /* alone (e.g. a quorum) */
    if (P->cap) {
        for (int s = (int)(choice_hash(f, spec->bytes) & (uint64_t)(P->cap - 1)); P->memo[s].used;
             s = (s + 1) & (P->cap - 1))
            if (P->memo[s].phase == f && P->memo[s].bytes == spec->bytes &&
                P->memo[s].asked == spec->algo) {
                *out = P->memo[s].algo;
                return DT_OK;
            }
    }
    const phase_set *F = &P->ph[f];
    int rc = choose(an, spec, F->groups, F->m, out, err);
    if (rc != DT_OK) return rc;
    if (2 * (P->used + 1) > P->cap) { /* grow: rehash */
        choice *old = P->memo;
        int oc = P->cap;
        P->cap = oc ? 2 * oc : 64;
        P->memo = dt_xcalloc((size_t)P->cap, sizeof *P->memo);
        for (int i = 0; i < oc; i++) {
            if (!old[i].used) continue;
            int s = (int)(choice_hash(old[i].phase, old[i].bytes) & (uint64_t)(P->cap - 1));
            while (P->memo[s].used) s = (s + 1) & (P->cap - 1);
            P->memo[s] = old[i];
        }
        free(old);
    }
    int s = (int)(choice_hash(f, spec->bytes) & (uint64_t)(P->cap - 1));
    while (P->memo[s].used) s = (s + 1) & (P->cap - 1);
    P->memo[s] = (choice){.used = 1, .phase = f, .bytes = spec->bytes, .asked = spec->algo,
                          .algo = *out};
    P->used++;
    return DT_OK;
}
