/* coll_analytic.c - alpha-beta time of a collective on a topology (coll.h, "analytic time").
 *
 * The analytic network mode costs a collective without running its step program through the
 * engine: coll_prepare builds the same program coll_start would (auto resolved, same
 * validation), and one of three evaluators walks it once, reading each transfer's route with
 * net_path_info (latency a, bottleneck bandwidth B):
 *
 *  - ring_time (ring all-reduce, reduce-scatter, all-gather): the ring's edges in the order
 *    coll_ring builds them (coll_ring_edges); steps x max a + edge bytes / min B + the
 *    receivers' reductions charged as the fluid ring charges them (coll.c on_fluid). O(n).
 *  - lockstep_time (hd, hier, direct, ps, sendrecv): these programs advance in lock step when
 *    their transfers are uniform, so the time is the sum over step indices of the slowest
 *    rank's step: a + max(bytes out / B out, bytes in / B in) + reduction. A rank's concurrent
 *    transfers share its link (direct: n-1 at once; ps: the server's n-1). O(steps x ranks).
 *  - pipe_time (tree, dbt, ring broadcast/reduce = chain): per tree, fill time along the
 *    slowest root-leaf path plus (chunks - 1) x the slowest stage (the pipeline's rate).
 *
 * All three reduce to the documented closed forms (coll_closed_form*) on uniform routes and
 * agree with the flow simulation of the spec alone (test_coll_analytic.c). Cost: one program
 * walk and one net_path_info per transfer per distinct (op, algo, bytes, group): results are
 * cached in an open-addressing table that is emptied when half full (bounded memory).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coll_internal.h"
#include "dtsim/error.h"

typedef struct ca_entry {
    uint64_t hash;
    int used;
    coll_op op;
    coll_algo algo;     /* asked */
    coll_algo ran;
    int n, root, servers;
    double bytes, elem;
    int *group;         /* owned copy */
    sim_time_t time;
} ca_entry;

struct coll_analytic {
    net *net;
    topo *t;
    coll_config cfg;
    ca_entry *tab;
    int cap, used;
};

#define CA_INITIAL_CAP 256
#define CA_MAX_CAP 65536

coll_analytic *coll_analytic_create(net *n, topo *t, const coll_config *cfg)
{
    coll_analytic *a = dt_xcalloc(1, sizeof *a);
    a->net = n;
    a->t = t;
    if (cfg) a->cfg = *cfg;
    else a->cfg.reduce_bw = -1;
    a->cap = CA_INITIAL_CAP;
    a->tab = dt_xcalloc((size_t)a->cap, sizeof *a->tab);
    return a;
}

static void cache_clear(coll_analytic *a)
{
    for (int i = 0; i < a->cap; i++) {
        free(a->tab[i].group);
        a->tab[i].group = NULL;
        a->tab[i].used = 0;
    }
    a->used = 0;
}

void coll_analytic_destroy(coll_analytic *a)
{
    if (!a) return;
    cache_clear(a);
    free(a->tab);
    free(a);
}

/* ------------------------------------------------------------ helpers ---- */

typedef struct route {
    double a;  /* ps */
    double bw; /* B/s; INFINITY when the route has no links */
} route;

static route route_of(coll_analytic *A, int src_gpu, int dst_gpu)
{
    sim_time_t lat = 0;
    double bw = INFINITY;
    if (src_gpu == dst_gpu || net_path_info(A->net, src_gpu, dst_gpu, &lat, &bw, NULL) != DT_OK)
        return (route){0, INFINITY};
    return (route){(double)lat, bw};
}

/* ps to move x bytes at bw (0 when free) */
static double xfer_ps(double bytes, double bw)
{
    return bytes > 0 && bw > 0 && isfinite(bw) ? bytes / bw * 1e12 : 0;
}

static double reduce_ps(const coll_analytic *A, int gpu, double bytes)
{
    double bw = A->cfg.reduce_bw < 0 ? A->t->gpus[gpu].reduce_bw : A->cfg.reduce_bw;
    return bytes > 0 && bw > 0 ? bytes / bw * 1e12 : 0;
}

static void step_of(const coll_prog *p, coll_send *buf, int r, int k, int s, coll_step *st)
{
    *st = (coll_step){.sends = buf, .dep_stream = COLL_DEP_NONE, .dep_step = 0};
    p->step(p, r, k, s, st);
}

/* --------------------------------------------------------------- ring ---- */

static double ring_time(coll_analytic *A, const coll_prog *p)
{
    int n = p->n;
    int *src = dt_xmalloc((size_t)n * sizeof *src), *dst = dt_xmalloc((size_t)n * sizeof *dst);
    double *bytes = dt_xmalloc((size_t)n * sizeof *bytes), *red = dt_xmalloc((size_t)n * sizeof *red);
    coll_ring_edges(p, src, dst, bytes, red);
    double amax = 0, bmin = INFINITY, b = 0, rmax = 0;
    int K = p->n_streams;
    for (int q = 0; q < n; q++) {
        route e = route_of(A, p->gpus[src[q]], p->gpus[dst[q]]);
        if (e.a > amax) amax = e.a;
        if (e.bw < bmin) bmin = e.bw;
        if (bytes[q] > b) b = bytes[q];
        /* as coll.c's fluid ring: one stream exposes every reduction, K > 1 about one chunk's */
        double rb = K == 1 ? red[q] : red[q] / ((n - 1) * (double)K);
        double r = reduce_ps(A, p->gpus[dst[q]], rb);
        if (r > rmax) rmax = r;
    }
    free(src);
    free(dst);
    free(bytes);
    free(red);
    return coll_ring_steps(p) * amax + xfer_ps(b, bmin) + rmax;
}

/* ----------------------------------------------------------- lockstep ---- */

static double lockstep_time(coll_analytic *A, const coll_prog *p)
{
    int n = p->n, K = p->n_streams;
    int smax = 0;
    for (int r = 0; r < n; r++)
        for (int k = 0; k < K; k++) {
            int s = p->n_steps(p, r, k);
            if (s > smax) smax = s;
        }
    double *out_b = dt_xmalloc((size_t)n * sizeof *out_b), *in_b = dt_xmalloc((size_t)n * sizeof *in_b);
    double *alpha = dt_xmalloc((size_t)n * sizeof *alpha), *red = dt_xmalloc((size_t)n * sizeof *red);
    double *bout = dt_xmalloc((size_t)n * sizeof *bout), *bin = dt_xmalloc((size_t)n * sizeof *bin);
    coll_send *buf = dt_xmalloc((size_t)n * sizeof *buf);
    double total = 0;
    for (int s = 0; s < smax; s++) {
        for (int r = 0; r < n; r++) {
            out_b[r] = in_b[r] = alpha[r] = red[r] = 0;
            bout[r] = bin[r] = INFINITY;
        }
        for (int r = 0; r < n; r++)
            for (int k = 0; k < K; k++) {
                if (s >= p->n_steps(p, r, k)) continue;
                coll_step st;
                step_of(p, buf, r, k, s, &st);
                for (int i = 0; i < st.n_sends; i++) {
                    int q = st.sends[i].peer;
                    route e = route_of(A, p->gpus[r], p->gpus[q]);
                    out_b[r] += st.sends[i].bytes;
                    in_b[q] += st.sends[i].bytes;
                    if (e.a > alpha[r]) alpha[r] = e.a;
                    if (e.a > alpha[q]) alpha[q] = e.a;
                    if (e.bw < bout[r]) bout[r] = e.bw;
                    if (e.bw < bin[q]) bin[q] = e.bw;
                }
                red[r] += reduce_ps(A, p->gpus[r], st.reduce_bytes);
            }
        double worst = 0;
        for (int r = 0; r < n; r++) {
            double x = fmax(xfer_ps(out_b[r], bout[r]), xfer_ps(in_b[r], bin[r]));
            double t = alpha[r] + x + red[r];
            if (t > worst) worst = t;
        }
        total += worst;
    }
    free(out_b);
    free(in_b);
    free(alpha);
    free(red);
    free(bout);
    free(bin);
    free(buf);
    return total;
}

/* ----------------------------------------------------------- pipelines ---- */

/* Trees of coll_tree.c: stream 4t+3 (down-send) step 0 names r's children in tree t whatever
 * the op, so the shape is read from the program itself. */
static double pipe_time(coll_analytic *A, const coll_prog *p)
{
    int n = p->n, T = p->n_streams / 4;
    int up = p->op != COLL_BROADCAST, down = p->op != COLL_REDUCE;
    int *parent = dt_xmalloc((size_t)T * n * sizeof *parent);
    int *nkid = dt_xcalloc((size_t)T * n, sizeof *nkid);
    int *order = dt_xmalloc((size_t)n * sizeof *order); /* BFS order of one tree */
    double *chunk = dt_xcalloc((size_t)T, sizeof *chunk);
    int *chunks = dt_xcalloc((size_t)T, sizeof *chunks);
    int *kid = dt_xmalloc((size_t)T * n * 4 * sizeof *kid);
    int *fan_down = dt_xcalloc((size_t)n, sizeof *fan_down), *fan_up = dt_xcalloc((size_t)n, sizeof *fan_up);
    coll_send *buf = dt_xmalloc((size_t)n * sizeof *buf);
    for (int i = 0; i < T * n; i++) parent[i] = -1;
    for (int t = 0; t < T; t++)
        for (int r = 0; r < n; r++) {
            coll_step st;
            step_of(p, buf, r, 4 * t + 3, 0, &st);
            DT_ASSERT(st.n_sends <= 4);
            for (int i = 0; i < st.n_sends; i++) {
                int q = st.sends[i].peer;
                kid[((size_t)t * n + r) * 4 + nkid[t * n + r]++] = q;
                parent[t * n + q] = r;
                if (st.sends[i].bytes > chunk[t]) chunk[t] = st.sends[i].bytes;
            }
            for (int k = 4 * t; k < 4 * t + 4; k++) {
                int c = p->n_steps(p, r, k);
                if (c > chunks[t]) chunks[t] = c;
            }
        }
    /* Concurrent transfers per GPU over all trees: down, a parent feeds all its children at
     * once; up, a child sends one per tree and a parent receives from all its children. */
    for (int t = 0; t < T; t++)
        for (int r = 0; r < n; r++) {
            fan_down[r] += nkid[t * n + r];
            if (parent[t * n + r] >= 0) fan_up[r]++;
        }
    double worst = 0;
    for (int t = 0; t < T; t++) {
        int *P = parent + (size_t)t * n, *NK = nkid + (size_t)t * n;
        double c = chunk[t];
        int root = -1;
        for (int r = 0; r < n; r++)
            if (P[r] < 0) root = r;
        DT_ASSERT(root >= 0);
        /* BFS from the root */
        int head = 0, tail = 0;
        order[tail++] = root;
        while (head < tail) {
            int u = order[head++];
            for (int i = 0; i < NK[u]; i++) order[tail++] = kid[((size_t)t * n + u) * 4 + i];
        }
        DT_ASSERT(tail == n);
        double *fill_up = dt_xcalloc((size_t)n, sizeof *fill_up);
        double *fill_down = dt_xcalloc((size_t)n, sizeof *fill_down);
        double stage_max = 0;
        /* up: leaves first (reverse BFS); node u is ready when all kids arrived and it reduced */
        if (up)
            for (int i = n - 1; i >= 0; i--) {
                int u = order[i];
                if (NK[u] == 0) continue;
                double arr = 0, smax = 0;
                for (int j = 0; j < NK[u]; j++) {
                    int v = kid[((size_t)t * n + u) * 4 + j];
                    route e = route_of(A, p->gpus[v], p->gpus[u]);
                    /* v's link carries one send per tree it is inner in; u's in-link all of
                     * u's children over all trees at once */
                    double x = e.a + xfer_ps(c * fmax(fan_up[v], fan_down[u]), e.bw);
                    arr = fmax(arr, fill_up[v] + x);
                    smax = fmax(smax, x);
                }
                double red = reduce_ps(A, p->gpus[u], NK[u] * c);
                fill_up[u] = arr + red;
                stage_max = fmax(stage_max, smax + red);
            }
        double fill = up ? fill_up[root] : 0, deepest = 0;
        if (down)
            for (int i = 0; i < n; i++) {
                int u = order[i];
                for (int j = 0; j < NK[u]; j++) {
                    int v = kid[((size_t)t * n + u) * 4 + j];
                    route e = route_of(A, p->gpus[u], p->gpus[v]);
                    double x = e.a + xfer_ps(c * fan_down[u], e.bw);
                    fill_down[v] = fill_down[u] + x;
                    stage_max = fmax(stage_max, x);
                    deepest = fmax(deepest, fill_down[v]);
                }
            }
        double tt = fill + deepest + (chunks[t] - 1) * stage_max;
        if (tt > worst) worst = tt;
        free(fill_up);
        free(fill_down);
    }
    free(parent);
    free(nkid);
    free(order);
    free(chunk);
    free(chunks);
    free(kid);
    free(fan_down);
    free(fan_up);
    free(buf);
    return worst;
}

/* ------------------------------------------------------------- entry ---- */

static uint64_t spec_hash(const coll_spec *s)
{
    uint64_t h = 1469598103934665603ull;
#define MIX(x)                                                                                     \
    do {                                                                                           \
        h ^= (uint64_t)(x);                                                                        \
        h *= 1099511628211ull;                                                                     \
    } while (0)
    MIX(s->op);
    MIX(s->algo);
    MIX(s->n);
    MIX(s->root);
    MIX(s->servers);
    uint64_t bb;
    memcpy(&bb, &s->bytes, sizeof bb);
    MIX(bb);
    memcpy(&bb, &s->elem_bytes, sizeof bb);
    MIX(bb);
    for (int i = 0; i < s->n; i++) MIX((uint32_t)s->group[i]);
#undef MIX
    return h;
}

static int same(const ca_entry *e, uint64_t h, const coll_spec *s)
{
    return e->hash == h && e->op == s->op && e->algo == s->algo && e->n == s->n &&
           e->root == s->root && e->servers == s->servers && e->bytes == s->bytes &&
           e->elem == s->elem_bytes && !memcmp(e->group, s->group, (size_t)s->n * sizeof(int));
}

int coll_analytic_time(coll_analytic *A, const coll_spec *spec, sim_time_t *time,
                       coll_algo *algo, dt_error *err)
{
    int cacheable = spec->group && spec->n >= 1 && (unsigned)spec->op < COLL_OP_COUNT;
    uint64_t h = cacheable ? spec_hash(spec) : 0;
    int slot = -1;
    if (cacheable) {
        slot = (int)(h & (uint64_t)(A->cap - 1));
        while (A->tab[slot].used) {
            if (same(&A->tab[slot], h, spec)) {
                *time = A->tab[slot].time;
                if (algo) *algo = A->tab[slot].ran;
                return DT_OK;
            }
            slot = (slot + 1) & (A->cap - 1);
        }
    }
    coll_prog p;
    coll_algo ran;
    int rc = coll_prepare(A->t, &A->cfg, spec, &p, &ran, err);
    if (rc != DT_OK) return rc;
    double ps = 0;
    if (p.n > 1) {
        int ringish = ran == COLL_RING && (p.op == COLL_ALLREDUCE || p.op == COLL_REDUCE_SCATTER ||
                                           p.op == COLL_ALLGATHER);
        int pipe = ran == COLL_TREE || ran == COLL_DBT ||
                   (ran == COLL_RING && (p.op == COLL_BROADCAST || p.op == COLL_REDUCE));
        ps = ringish ? ring_time(A, &p) : pipe ? pipe_time(A, &p) : lockstep_time(A, &p);
    }
    free(p.data);
    sim_time_t t = !(ps < 9.0e18) ? SIM_TIME_MAX : ps <= 0 ? 0 : (sim_time_t)ceil(ps - ps * 1e-12);
    *time = t;
    if (algo) *algo = ran;
    if (!cacheable) return DT_OK;
    if (2 * (A->used + 1) > A->cap) {
        if (A->cap < CA_MAX_CAP) {
            /* grow: rehash the live entries */
            ca_entry *old = A->tab;
            int oc = A->cap;
            A->cap *= 2;
            A->tab = dt_xcalloc((size_t)A->cap, sizeof *A->tab);
            for (int i = 0; i < oc; i++) {
                if (!old[i].used) continue;
                int j = (int)(old[i].hash & (uint64_t)(A->cap - 1));
                while (A->tab[j].used) j = (j + 1) & (A->cap - 1);
                A->tab[j] = old[i];
            }
            free(old);
        } else {
            cache_clear(A);
        }
        slot = (int)(h & (uint64_t)(A->cap - 1));
        while (A->tab[slot].used) slot = (slot + 1) & (A->cap - 1);
    }
    ca_entry *e = &A->tab[slot];
    *e = (ca_entry){.hash = h, .used = 1, .op = spec->op, .algo = spec->algo, .ran = ran,
                    .n = spec->n, .root = spec->root, .servers = spec->servers,
                    .bytes = spec->bytes, .elem = spec->elem_bytes, .time = t};
    e->group = dt_xmalloc((size_t)spec->n * sizeof *e->group);
    memcpy(e->group, spec->group, (size_t)spec->n * sizeof *e->group);
    A->used++;
    return DT_OK;
}
