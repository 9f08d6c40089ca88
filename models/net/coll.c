/* coll.c - the collective engine: runs algorithms' step programs over the network model.
 *
 * Each running collective is an instance holding one small state per (rank, stream): current
 * step, sends and receives outstanding, and a list of sends that reached this stream before it
 * reached their step (rendezvous, see coll_internal.h). Events carry ids, not pointers:
 * arrival events are (instance, sender state << 32 | receiver state), reduction events
 * (instance, state). Instances live in a pool; their state arrays are allocated at coll_start
 * (one allocation per collective, not per step) and pending lists grow once and are reused.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coll_internal.h"
#include "dtsim/error.h"

enum { ST_WAIT_DEP, ST_RUNNING, ST_REDUCING, ST_DONE };

typedef struct coll_pend {
    int src; /* sender state */
    int step;
    double bytes;
} coll_pend;

typedef struct coll_state {
    int step, n_steps;
    int phase;
    int sends_left, recvs_left;
    double reduce_bytes;
    coll_pend *pend;
    int n_pend, cap_pend;
} coll_state;

typedef struct coll_inst {
    coll_prog p;
    coll_state *st; /* n * n_streams */
    int *blocked;   /* per rank: streams waiting on a dependency */
    int *gpus;
    int remaining;  /* states not yet done */
    /* Fluid ring (coll.h, COLL_RING_FLUID): no step states (st NULL); one coupled flow over
     * all the ring's edges per ECMP lane. */
    int fluid;          /* coupled flows (one per ECMP lane) in flight; 0 for a step program */
    int *f_dst;         /* per edge: receiving GPU */
    double *f_red;      /* per edge: bytes the receiver reduces */
    uint32_t done_kind, done_id;
    uint64_t done_data;
    uint32_t tag;   /* coll_spec.tag: every transfer of the collective carries it */
    int next_free;
    int in_use;
} coll_inst;

struct coll_engine {
    net *net;
    sim_engine *eng;
    topo *t;
    coll_config cfg;
    uint32_t k_arrive, k_reduce, k_fluid;
    coll_inst *inst;
    int n_inst, free_head;
    coll_send *sendbuf;
    int cap_send;
    sim_time_t *reduce_free; /* per GPU: when its reduction unit is next idle */
    uint64_t n_fluid, n_ring_steps; /* ring collectives started fluid / as step programs */
    coll_analytic *an;       /* estimates for `fastest`, created on first use */
};

static const char *const op_names[COLL_OP_COUNT] = {
    "allreduce", "reduce_scatter", "allgather", "broadcast", "reduce", "alltoall", "sendrecv"};
static const char *const ring_model_names[COLL_RING_MODEL_COUNT] = {"steps", "fluid", "auto", "exact"};

const char *coll_ring_model_name(coll_ring_model m)
{
    return (unsigned)m < COLL_RING_MODEL_COUNT ? ring_model_names[m] : "?";
}

int coll_ring_model_parse(const char *s, coll_ring_model *out)
{
    for (int i = 0; i < COLL_RING_MODEL_COUNT; i++)
        if (!strcmp(s, ring_model_names[i])) {
            *out = (coll_ring_model)i;
            return DT_OK;
        }
    return DT_EINPUT;
}

static const char *const algo_names[COLL_ALGO_COUNT] = {"auto", "ring",   "tree", "dbt",    "hd",
                                                        "direct", "hier", "ps", "fastest",
                                                        "estimate", "rule"};
static const char *const library_names[COLL_LIB_COUNT] = {"any", "nccl"};

const char *coll_library_name(coll_library l)
{
    return (unsigned)l < COLL_LIB_COUNT ? library_names[l] : "?";
}

int coll_library_parse(const char *s, coll_library *out)
{
    for (int i = 0; i < COLL_LIB_COUNT; i++)
        if (!strcmp(s, library_names[i])) {
            *out = (coll_library)i;
            return DT_OK;
        }
    return DT_EINPUT;
}

const char *coll_op_name(coll_op op) { return (unsigned)op < COLL_OP_COUNT ? op_names[op] : "?"; }
const char *coll_algo_name(coll_algo a)
{
    return (unsigned)a < COLL_ALGO_COUNT ? algo_names[a] : "?";
}

static int norm_eq(const char *a, const char *b)
{
    /* all_reduce, all-reduce, AllReduce all name the same op. */
    for (;;) {
        while (*a == '_' || *a == '-') a++;
        while (*b == '_' || *b == '-') b++;
        char x = *a >= 'A' && *a <= 'Z' ? (char)(*a + 32) : *a;
        char y = *b >= 'A' && *b <= 'Z' ? (char)(*b + 32) : *b;
        if (x != y) return 0;
        if (!x) return 1;
        a++;
        b++;
    }
}

int coll_op_parse(const char *s, coll_op *out)
{
    for (int i = 0; i < COLL_OP_COUNT; i++)
        if (norm_eq(s, op_names[i])) {
            *out = (coll_op)i;
            return DT_OK;
        }
    if (norm_eq(s, "send") || norm_eq(s, "recv") || norm_eq(s, "p2p")) {
        *out = COLL_SENDRECV;
        return DT_OK;
    }
    return DT_EINPUT;
}

int coll_algo_parse(const char *s, coll_algo *out)
{
    for (int i = 0; i < COLL_ALGO_COUNT; i++)
        if (norm_eq(s, algo_names[i])) {
            *out = (coll_algo)i;
            return DT_OK;
        }
    if (norm_eq(s, "rabenseifner") || norm_eq(s, "halving_doubling")) {
        *out = COLL_HD;
        return DT_OK;
    }
    if (norm_eq(s, "double_binary_tree")) {
        *out = COLL_DBT;
        return DT_OK;
    }
    return DT_EINPUT;
}

double coll_busbw_factor(coll_op op, int n)
{
    if (n <= 1) return op == COLL_ALLREDUCE || op == COLL_REDUCE_SCATTER || op == COLL_ALLGATHER ||
                               op == COLL_ALLTOALL
                           ? 0.0
                           : 1.0;
    switch (op) {
    case COLL_ALLREDUCE: return 2.0 * (n - 1) / n;
    case COLL_REDUCE_SCATTER:
    case COLL_ALLGATHER:
    case COLL_ALLTOALL: return (double)(n - 1) / n;
    default: return 1.0;
    }
}

double coll_part(double bytes, double elem, int n, int i)
{
    return coll_parts(bytes, elem, n, i, i + 1);
}

double coll_parts(double bytes, double elem, int n, int a, int b)
{
    if (a >= b) return 0;
    if (elem <= 0) elem = 1;
    /* Element boundaries: part i covers elements [floor(i*E/n), floor((i+1)*E/n)). A trailing
     * partial element (bytes not a multiple of elem) goes to the last part. */
    double E = floor(bytes / elem);
    double lo = floor((double)a * E / n) * elem;
    double hi = b >= n ? bytes : floor((double)b * E / n) * elem;
    return hi - lo;
}

static void on_arrive(void *model, sim_engine *eng, const sim_event *ev);
static void on_reduce(void *model, sim_engine *eng, const sim_event *ev);
static void on_fluid(void *model, sim_engine *eng, const sim_event *ev);

coll_engine *coll_create(net *n, sim_engine *eng, topo *t, const coll_config *cfg)
{
    coll_engine *c = dt_xcalloc(1, sizeof *c);
    c->net = n;
    c->eng = eng;
    c->t = t;
    if (cfg) c->cfg = *cfg;
    else c->cfg.reduce_bw = -1;
    c->free_head = -1;
    c->reduce_free = dt_xcalloc((size_t)(t->n_gpus > 0 ? t->n_gpus : 1), sizeof *c->reduce_free);
    c->k_arrive = sim_kind_register(eng, "coll.arrive", on_arrive, c);
    c->k_reduce = sim_kind_register(eng, "coll.reduce", on_reduce, c);
    c->k_fluid = sim_kind_register(eng, "coll.fluid", on_fluid, c);
    return c;
}

static void inst_release(coll_inst *in)
{
    int ns = in->st ? in->p.n * in->p.n_streams : 0;
    for (int i = 0; i < ns; i++) free(in->st[i].pend);
    free(in->st);
    free(in->f_dst);
    free(in->f_red);
    in->f_dst = NULL;
    in->f_red = NULL;
    in->fluid = 0;
    free(in->blocked);
    free(in->gpus);
    free(in->p.data);
    in->st = NULL;
    in->blocked = NULL;
    in->gpus = NULL;
    in->p.data = NULL;
    in->in_use = 0;
}

void coll_destroy(coll_engine *c)
{
    if (!c) return;
    for (int i = 0; i < c->n_inst; i++)
        if (c->inst[i].in_use) inst_release(&c->inst[i]);
    free(c->inst);
    free(c->sendbuf);
    free(c->reduce_free);
    coll_analytic_destroy(c->an);
    free(c);
}

static int is_pow2(int n) { return n > 0 && (n & (n - 1)) == 0; }

/* Hosts spanned by the group and GPUs per host (0 when hosts hold unequal counts). */
static void group_hosts(const topo *t, const int *g, int n, int *hosts, int *per_host)
{
    int nh = 0, first = -1, cnt_first = 0, uniform = 1;
    /* Small groups: quadratic scan is fine; large groups come sorted by host in practice. */
    int *seen = dt_xcalloc((size_t)(t->n_hosts > 0 ? t->n_hosts : 1), sizeof *seen);
    for (int i = 0; i < n; i++) {
        int h = t->nodes[t->gpu_node[g[i]]].host;
        if (h < 0 || h >= t->n_hosts) {
            uniform = 0;
            continue;
        }
        if (seen[h]++ == 0) nh++;
        if (first < 0) first = h;
    }
    if (first >= 0) cnt_first = seen[first];
    for (int h = 0; h < t->n_hosts; h++)
        if (seen[h] && seen[h] != cnt_first) uniform = 0;
    free(seen);
    *hosts = nh;
    *per_host = uniform ? cnt_first : 0;
}

coll_algo coll_auto_choice(const topo *t, const coll_spec *spec)
{
    int n = spec->n;
    double S = spec->bytes;
    switch (spec->op) {
    case COLL_ALLTOALL:
    case COLL_SENDRECV: return COLL_DIRECT;
    case COLL_BROADCAST:
    case COLL_REDUCE: return n <= 2 ? COLL_DIRECT : COLL_TREE;
    case COLL_REDUCE_SCATTER:
    case COLL_ALLGATHER:
        return (S < 256.0 * 1024 && is_pow2(n)) ? COLL_HD : COLL_RING;
    case COLL_ALLREDUCE: {
        if (n <= 2) return COLL_RING;
        if (S < 256.0 * 1024) return is_pow2(n) ? COLL_HD : COLL_DBT;
        int hosts = 0, per = 0;
        group_hosts(t, spec->group, n, &hosts, &per);
        if (hosts > 1 && per > 1) return COLL_HIER;
        return COLL_RING;
    }
    default: return COLL_RING;
    }
}

static int wait_dep_met(const coll_inst *in, int rank, const coll_step *s)
{
    if (s->dep_stream == COLL_DEP_NONE) return 1;
    int K = in->p.n_streams;
    const coll_state *base = &in->st[rank * K];
    if (s->dep_stream == COLL_DEP_ALL) {
        for (int k = 0; k < K; k++)
            if (base[k].phase != ST_DONE && base[k].step <= s->dep_step) return 0;
        return 1;
    }
    return base[s->dep_stream].step > s->dep_step;
}

static void start_flow(coll_engine *c, int id, int src, int dst, double bytes)
{
    coll_inst *in = &c->inst[id];
    int K = in->p.n_streams;
    net_set_tag(c->net, in->tag);
    /* NCCL runs an all-to-all as grouped point-to-point sends, which take PXN (net.h) */
    (in->p.op == COLL_ALLTOALL ? net_send_p2p : net_send)(
        c->net, in->gpus[src / K], in->gpus[dst / K], bytes, c->k_arrive, (uint32_t)id,
        (uint64_t)(uint32_t)src << 32 | (uint32_t)dst);
}

static void finish_step(coll_engine *c, int id, int s);

/* Try to start the current step of state s (and go on while steps complete at once). */
static void start_step(coll_engine *c, int id, int s)
{
    coll_inst *in = &c->inst[id];
    int K = in->p.n_streams;
    int rank = s / K, stream = s % K;
    coll_state *st = &in->st[s];
    if (st->step >= st->n_steps) {
        st->phase = ST_DONE;
        if (--in->remaining == 0) {
            sim_schedule(c->eng, sim_now(c->eng), in->done_kind, in->done_id, in->done_data);
            inst_release(in);
            in->next_free = c->free_head;
            c->free_head = id;
        }
        return;
    }
    coll_step cs = {.sends = c->sendbuf, .dep_stream = COLL_DEP_NONE, .dep_step = -1};
    in->p.step(&in->p, rank, stream, st->step, &cs);
    if (!wait_dep_met(in, rank, &cs)) {
        if (st->phase != ST_WAIT_DEP) {
            st->phase = ST_WAIT_DEP;
            in->blocked[rank]++;
        }
        return;
    }
    if (st->phase == ST_WAIT_DEP) in->blocked[rank]--;
    st->phase = ST_RUNNING;
    st->sends_left = cs.n_sends;
    st->recvs_left = cs.n_recvs;
    st->reduce_bytes = cs.reduce_bytes;
    /* cs.sends aliases the shared buffer: read it all before anything can re-enter. */
    for (int i = 0; i < cs.n_sends; i++) {
        const coll_send *sd = &cs.sends[i];
        DT_ASSERT(sd->peer >= 0 && sd->peer < in->p.n && sd->stream >= 0 && sd->stream < K);
        int t = sd->peer * K + sd->stream;
        coll_state *ts = &in->st[t];
        if (ts->step == sd->step && ts->phase == ST_RUNNING) {
            DT_ASSERT(ts->recvs_left > 0);
            start_flow(c, id, s, t, sd->bytes);
        } else {
            DT_ASSERT(ts->step <= sd->step);
            if (ts->n_pend == ts->cap_pend) {
                ts->cap_pend = ts->cap_pend ? ts->cap_pend * 2 : 4;
                ts->pend = dt_xrealloc(ts->pend, (size_t)ts->cap_pend * sizeof *ts->pend);
            }
            ts->pend[ts->n_pend++] = (coll_pend){s, sd->step, sd->bytes};
        }
    }
    /* Senders that were waiting for this step. */
    for (int i = 0; i < st->n_pend;) {
        if (st->pend[i].step == st->step) {
            coll_pend pd = st->pend[i];
            st->pend[i] = st->pend[--st->n_pend];
            start_flow(c, id, pd.src, s, pd.bytes);
        } else {
            i++;
        }
    }
    if (st->sends_left == 0 && st->recvs_left == 0) finish_step(c, id, s);
}

static void advance(coll_engine *c, int id, int s)
{
    coll_inst *in = &c->inst[id];
    int K = in->p.n_streams;
    int rank = s / K;
    in->st[s].step++;
    start_step(c, id, s);
    if (!in->st) return; /* that was the last step of the collective */
    if (in->blocked[rank] > 0) {
        for (int k = 0; k < K && in->st; k++) {
            int o = rank * K + k;
            if (o != s && in->st[o].phase == ST_WAIT_DEP) start_step(c, id, o);
        }
    }
}

static void finish_step(coll_engine *c, int id, int s)
{
    coll_inst *in = &c->inst[id];
    coll_state *st = &in->st[s];
    if (st->reduce_bytes > 0) {
        int K = in->p.n_streams;
        int g = in->gpus[s / K];
        double bw = c->cfg.reduce_bw < 0 ? c->t->gpus[g].reduce_bw : c->cfg.reduce_bw;
        if (bw > 0) {
            /* One reduction unit per GPU, first come first served: concurrent streams (and
             * concurrent collectives) on a GPU queue behind each other rather than each
             * getting the full reduce bandwidth. */
            st->phase = ST_REDUCING;
            double ps = ceil(st->reduce_bytes / bw * 1e12 * (1 - 1e-12));
            sim_time_t now = sim_now(c->eng);
            sim_time_t start = c->reduce_free[g] > now ? c->reduce_free[g] : now;
            c->reduce_free[g] = sim_time_add(start, ps < 9.0e18 ? (sim_time_t)ps : SIM_TIME_MAX);
            sim_schedule(c->eng, c->reduce_free[g], c->k_reduce, (uint32_t)id, (uint64_t)s);
            return;
        }
    }
    advance(c, id, s);
}

static void on_reduce(void *model, sim_engine *eng, const sim_event *ev)
{
    (void)eng;
    advance(model, (int)ev->id, (int)ev->data);
}

static void on_arrive(void *model, sim_engine *eng, const sim_event *ev)
{
    (void)eng;
    coll_engine *c = model;
    int id = (int)ev->id;
    int src = (int)(ev->data >> 32), dst = (int)(uint32_t)ev->data;
    coll_inst *in = &c->inst[id];
    coll_state *a = &in->st[src], *b = &in->st[dst];
    DT_ASSERT(a->phase == ST_RUNNING && a->sends_left > 0);
    DT_ASSERT(b->phase == ST_RUNNING && b->recvs_left > 0);
    a->sends_left--;
    b->recvs_left--;
    int a_ready = a->sends_left == 0 && a->recvs_left == 0;
    int b_ready = b->sends_left == 0 && b->recvs_left == 0;
    if (a_ready) finish_step(c, id, src);
    if (b_ready && in->st) finish_step(c, id, dst);
}

/* One of the fluid ring's lane flows has arrived (its bytes, then its steps' latency: net_send_ring_steps);
 * after the last one every receiver runs its reductions in one block on its reduction unit
 * (first come first served, as in finish_step); the collective is done at the latest
 * receiver's end. */
static void on_fluid(void *model, sim_engine *eng, const sim_event *ev)
{
    coll_engine *c = model;
    int id = (int)ev->id;
    coll_inst *in = &c->inst[id];
    DT_ASSERT(in->fluid > 0);
    if (--in->fluid > 0) return; /* other lanes still in flight */
    sim_time_t end = ev->time;
    /* every ring's edges (R x n): a GPU receiving in several rings queues their reductions */
    for (int q = 0; q < in->p.rings * in->p.n; q++) {
        sim_time_t t = ev->time;
        int g = in->f_dst[q];
        double bw = c->cfg.reduce_bw < 0 ? c->t->gpus[g].reduce_bw : c->cfg.reduce_bw;
        double red = in->f_red[q]; /* as start_fluid charges it */
        if (red > 0 && bw > 0) {
            double ps = ceil(red / bw * 1e12 * (1 - 1e-12));
            sim_time_t start = c->reduce_free[g] > t ? c->reduce_free[g] : t;
            c->reduce_free[g] = sim_time_add(start, ps < 9.0e18 ? (sim_time_t)ps : SIM_TIME_MAX);
            t = c->reduce_free[g];
        }
        if (t > end) end = t;
    }
    sim_schedule(eng, end, in->done_kind, in->done_id, in->done_data);
    inst_release(in);
    in->next_free = c->free_head;
    c->free_head = id;
}

/* COLL_RING_EXACT's test (coll.h): one transfer per step, and no link carries two ring edges
 * on any ECMP lane. Then every step flow of the step model runs alone at its route's bottleneck,
 * which is what the fluid model charges. O(n x lanes x hops) plus a mark per link. */
static int ring_exact(coll_engine *c, const coll_prog *p)
{
    if (p->n_streams != 1 && p->op != COLL_ALLGATHER) return 0;
    int n = p->n, ne = p->rings * n, ok = 1;
    int *src = dt_xmalloc((size_t)ne * 2 * sizeof *src), *dst = src + ne;
    double *b = dt_xmalloc((size_t)ne * 2 * sizeof *b);
    p->ring_edges(p, src, dst, b, b + ne);
    const topo *t = p->t;
    int *owner = dt_xmalloc((size_t)(t->n_links ? t->n_links : 1) * sizeof *owner);
    for (int l = 0; l < t->n_links; l++) owner[l] = -1;
    for (int q = 0; q < ne && ok; q++)
        for (int lane = 0; lane < NET_ECMP_LANES && ok; lane++) {
            const int *path = NULL;
            int nh = 0;
            if (net_route_lane(c->net, p->gpus[src[q]], p->gpus[dst[q]], lane, &path, &nh, NULL) != DT_OK) {
                ok = 0;
                break;
            }
            for (int h = 0; h < nh; h++) {
                if (owner[path[h]] >= 0 && owner[path[h]] != q) ok = 0;
                owner[path[h]] = q;
            }
        }
    free(owner);
    free(b);
    free(src);
    return ok;
}

/* Whether some edge of the ring has several equal-cost routes (its ECMP lanes differ: through
 * spines), where the step model's choice of lane per step decides collisions. */
static int ring_multipath(net *nw, const coll_prog *p)
{
    int ne = p->rings * p->n, hit = 0;
    int *src = dt_xmalloc((size_t)ne * 2 * sizeof *src), *dst = src + ne;
    double *b = dt_xmalloc((size_t)ne * 2 * sizeof *b);
    p->ring_edges(p, src, dst, b, b + ne);
    for (int q = 0; q < ne && !hit; q++)
        hit = net_pair_multipath(nw, p->gpus[src[q]], p->gpus[dst[q]]);
    free(b);
    free(src);
    return hit;
}

int coll_ring_auto_fluid(net *nw, const coll_prog *p)
{
    /* A ring one of whose edges has several equal-cost routes runs fluid whatever its size:
     * the step model sends each step of an edge on the pair's next ECMP lane, so whether two
     * concurrent rings meet on a spine link flips with their relative step phase, and the step
     * time jumps with it (M-70B moved by 3.4 % of its step for 0.1 % of NIC bandwidth); NCCL
     * spreads a connection's bytes over its channels and their paths at once, as the fluid
     * ring's lanes do (docs/collectives.md, "Ring models"). Where every edge has one route the
     * lane is no choice, and the step model stays. */
    if (p->form != COLL_FORM_RING) return 0;
    if (p->n >= COLL_RING_FLUID_MIN || p->rings > 1) return 1;
    return p->n > 1 && nw && ring_multipath(nw, p);
}

static int use_fluid(coll_engine *c, const coll_prog *p)
{
    if (p->form != COLL_FORM_RING || p->n < 2) return 0;
    switch (c->cfg.ring_model) {
    case COLL_RING_FLUID: return 1;
    case COLL_RING_AUTO: return coll_ring_auto_fluid(c->net, p);
    case COLL_RING_EXACT: return p->n >= COLL_RING_FLUID_MIN && ring_exact(c, p);
    default: return 0;
    }
}

/* Start a fluid ring (coll.h): per ring (NCCL channel), coupled flows over every edge
 * (net_send_ring) carrying that ring's largest edge's bytes (edges differ by a few elements at
 * most). */
static void start_fluid(coll_engine *c, int id)
{
    coll_inst *in = &c->inst[id];
    int n = in->p.n, R = in->p.rings, ne = R * n;
    int *src = dt_xmalloc((size_t)ne * sizeof *src), *dst = dt_xmalloc((size_t)ne * sizeof *dst);
    double *bytes = dt_xmalloc((size_t)ne * sizeof *bytes);
    in->f_red = dt_xmalloc((size_t)ne * sizeof *in->f_red);
    in->f_dst = dst;
    in->p.ring_edges(&in->p, src, dst, bytes, in->f_red);
    coll_ring_exposed_reduction(&in->p, dst, in->f_red);
    for (int q = 0; q < ne; q++) {
        src[q] = in->gpus[src[q]];
        dst[q] = in->gpus[dst[q]];
    }
    /* Every step lasts as long as its slowest edge, max over edges of (alpha_e + chunk /
     * rate_e), as in the step model where each step waits for the slowest edge: the coupled
     * flow moves the bytes at its bottleneck edges' rate and charges what the other edges'
     * latencies add per step after its last byte (net_send_ring_steps). Charging every step
     * the largest edge latency instead over-charged a ring whose slow edge is not its
     * longest: (n-1) x the difference per bucket (docs/collectives.md, "Ring models"). */
    int steps = in->p.ring_steps(&in->p);
    /* One coupled flow per ECMP lane, each with 1/lanes of the data: the step model's
     * successive steps rotate over a pair's lanes (net_send), spreading each edge over the
     * equal-cost paths; a single coupled flow would pin every edge to one path, and a ring
     * meeting one hash collision anywhere would run at half rate throughout. Weight 1/lanes:
     * together the lanes compete with other traffic as one flow, as a step flow does. Each
     * ring (channel) is its own set of lanes: rings are coupled along themselves only. */
    in->fluid = NET_ECMP_LANES * R;
    net_set_tag(c->net, in->tag);
    for (int r = 0; r < R; r++) {
        double b = 0;
        for (int q = 0; q < n; q++)
            if (bytes[r * n + q] > b) b = bytes[r * n + q];
        for (int l = 0; l < NET_ECMP_LANES; l++)
            net_send_ring_steps(c->net, n, src + (size_t)r * n, dst + (size_t)r * n,
                                b / NET_ECMP_LANES, steps, l, 1.0 / NET_ECMP_LANES, c->k_fluid,
                                (uint32_t)id, 0);
    }
    free(src);
    free(bytes);
}

static const coll_builder builders[COLL_ALGO_COUNT] = {
    [COLL_RING] = coll_build_ring, [COLL_TREE] = coll_build_tree, [COLL_DBT] = coll_build_dbt,
    [COLL_HD] = coll_build_hd,     [COLL_DIRECT] = coll_build_direct,
    [COLL_HIER] = coll_build_hier, [COLL_PS] = coll_build_ps};

int coll_prepare(topo *t, const coll_config *cfg, const coll_spec *spec, coll_prog *out,
                 coll_algo *algo_out, dt_error *err)
{
    int n = spec->n;
    if (n < 1 || !spec->group)
        return dt_error_set(err, DT_EINPUT, NULL, "group", "expected at least one GPU, found %d", n);
    if (!(spec->bytes >= 0) || !isfinite(spec->bytes))
        return dt_error_set(err, DT_EINPUT, NULL, "size", "expected a size >= 0, found %g",
                            spec->bytes);
    if ((unsigned)spec->op >= COLL_OP_COUNT || (unsigned)spec->algo >= COLL_ALGO_COUNT)
        return dt_error_set(err, DT_EINPUT, NULL, NULL, "unknown collective op or algorithm");
    for (int i = 0; i < n; i++) {
        if (spec->group[i] < 0 || spec->group[i] >= t->n_gpus)
            return dt_error_set(err, DT_EINPUT, NULL, "group",
                                "GPU %d does not exist (the topology has %d GPUs)",
                                spec->group[i], t->n_gpus);
        for (int j = 0; j < i; j++)
            if (spec->group[j] == spec->group[i])
                return dt_error_set(err, DT_EINPUT, NULL, "group", "GPU %d appears twice",
                                    spec->group[i]);
    }
    int root = spec->root;
    if (spec->op == COLL_SENDRECV && root == 0) root = n > 1 ? 1 : 0;
    if (root < 0 || root >= n)
        return dt_error_set(err, DT_EINPUT, NULL, "root",
                            "expected a group index in 0..%d, found %d", n - 1, root);
    if (spec->op == COLL_SENDRECV && n != 2)
        return dt_error_set(err, DT_EINPUT, NULL, "group",
                            "sendrecv needs exactly 2 GPUs (sender, receiver), found %d", n);

    coll_algo algo =
        spec->algo == COLL_AUTO || spec->algo == COLL_RULE ? coll_auto_choice(t, spec) : spec->algo;
    if (spec->op == COLL_SENDRECV) algo = COLL_DIRECT; /* one transfer: no algorithm to pick */
    /* resolved by the callers (coll_fastest_choice, coll_estimate_choice) */
    DT_ASSERT(algo != COLL_FASTEST && algo != COLL_ESTIMATE);
    coll_prog p = {.op = spec->op, .n = n, .bytes = spec->bytes,
                   .elem = spec->elem_bytes > 0 ? spec->elem_bytes : 2.0, .root = root,
                   .servers = spec->servers,
                   .chunk = cfg->chunk_bytes > 0 ? cfg->chunk_bytes : COLL_DEFAULT_CHUNK,
                   .max_rings = cfg->rings > 0 ? cfg->rings : 0,
                   .gpus = spec->group, .t = t};
    int rc = builders[algo](&p, err);
    if (rc != DT_OK) {
        free(p.data);
        return rc;
    }
    DT_ASSERT(p.n_streams >= 1 && p.step && p.n_steps);
    *out = p;
    *algo_out = algo;
    return DT_OK;
}

/* The engine's estimator, for `fastest`. */
static coll_analytic *engine_analytic(coll_engine *c)
{
    if (!c->an) c->an = coll_analytic_create(c->net, c->t, &c->cfg);
    return c->an;
}

int coll_start(coll_engine *c, const coll_spec *spec, uint32_t done_kind, uint32_t done_id,
               uint64_t done_data, dt_error *err)
{
    if ((spec->algo == COLL_FASTEST || spec->algo == COLL_ESTIMATE || spec->algo == COLL_AUTO) &&
        spec->op != COLL_SENDRECV) {
        coll_spec s = *spec;
        int rc = spec->algo == COLL_FASTEST
                     ? coll_fastest_choice(engine_analytic(c), spec, &s.algo, err)
                 : spec->algo == COLL_AUTO
                     ? coll_auto_pick(engine_analytic(c), spec, NULL, 0, &s.algo, err)
                     : coll_estimate_choice(engine_analytic(c), spec, NULL, 0, &s.algo, err);
        if (rc != DT_OK) return rc;
        return coll_start(c, &s, done_kind, done_id, done_data, err);
    }
    int n = spec->n;
    coll_prog p;
    coll_algo algo;
    int rc = coll_prepare(c->t, &c->cfg, spec, &p, &algo, err);
    if (rc != DT_OK) return rc;

    if (c->free_head < 0) {
        int old = c->n_inst, cap = old ? old * 2 : 8;
        c->inst = dt_xrealloc(c->inst, (size_t)cap * sizeof *c->inst);
        memset(c->inst + old, 0, (size_t)(cap - old) * sizeof *c->inst);
        for (int i = cap - 1; i >= old; i--) {
            c->inst[i].next_free = c->free_head;
            c->free_head = i;
        }
        c->n_inst = cap;
    }
    if (n > c->cap_send) {
        c->cap_send = n;
        c->sendbuf = dt_xrealloc(c->sendbuf, (size_t)n * sizeof *c->sendbuf);
    }
    int id = c->free_head;
    coll_inst *in = &c->inst[id];
    c->free_head = in->next_free;
    in->in_use = 1;
    in->p = p;
    in->gpus = dt_xmalloc((size_t)n * sizeof *in->gpus);
    memcpy(in->gpus, spec->group, (size_t)n * sizeof *in->gpus);
    in->p.gpus = in->gpus;
    in->done_kind = done_kind;
    in->done_id = done_id;
    in->done_data = done_data;
    in->tag = spec->tag;
    if (use_fluid(c, &in->p)) {
        c->n_fluid++;
        start_fluid(c, id);
        return DT_OK;
    }
    if (in->p.form == COLL_FORM_RING) c->n_ring_steps++;
    int K = p.n_streams, ns = n * K;
    in->st = dt_xcalloc((size_t)ns, sizeof *in->st);
    in->blocked = dt_xcalloc((size_t)n, sizeof *in->blocked);
    in->remaining = ns;
    in->done_kind = done_kind;
    in->done_id = done_id;
    in->done_data = done_data;
    for (int s = 0; s < ns; s++) {
        in->st[s].n_steps = in->p.n_steps(&in->p, s / K, s % K);
        in->st[s].phase = ST_RUNNING;
        in->st[s].step = -1; /* not started: early senders queue as pending */
    }
    for (int s = 0; s < ns && in->st; s++) {
        in->st[s].step = 0;
        start_step(c, id, s);
    }
    return DT_OK;
}

/* ---- one collective alone ---- */

typedef struct sim_done {
    sim_time_t at;
    int fired;
} sim_done;

static void on_sim_done(void *model, sim_engine *eng, const sim_event *ev)
{
    sim_done *d = model;
    d->at = ev->time;
    d->fired = 1;
    (void)eng;
}

int coll_simulate(topo *t, const coll_spec *spec, const coll_config *cc, const net_config *nc,
                  coll_result *out, dt_error *err)
{
    memset(out, 0, sizeof *out);
    sim_engine *eng = sim_engine_create();
    net *n = net_create(t, eng, nc);
    coll_engine *c = coll_create(n, eng, t, cc);
    sim_done d = {0, 0};
    uint32_t k = sim_kind_register(eng, "coll.simulate.done", on_sim_done, &d);
    out->algo = spec->algo == COLL_RULE ? coll_auto_choice(t, spec) : spec->algo;
    if (spec->op == COLL_SENDRECV) out->algo = COLL_DIRECT;
    int rc = DT_OK;
    if (out->algo == COLL_FASTEST) rc = coll_fastest_choice(engine_analytic(c), spec, &out->algo, err);
    else if (out->algo == COLL_ESTIMATE)
        rc = coll_estimate_choice(engine_analytic(c), spec, NULL, 0, &out->algo, err);
    else if (out->algo == COLL_AUTO)
        rc = coll_auto_pick(engine_analytic(c), spec, NULL, 0, &out->algo, err);
    if (rc == DT_OK) rc = coll_start(c, spec, k, 0, 0, err);
    if (rc == DT_OK) {
        sim_run(eng, SIM_TIME_MAX);
        DT_ASSERT(d.fired);
        out->time = d.at;
        if (d.at >= SIM_TIME_MAX / 2)
            rc = dt_error_set(err, DT_EINPUT, NULL, NULL,
                              "%g bytes would take longer than the simulated clock's range "
                              "(about 50 days): check the size and the topology's bandwidths",
                              spec->bytes);
        out->events = sim_events_handled(eng);
        net_get_stats(n, &out->net);
        out->ring_model = c->n_fluid ? COLL_RING_FLUID : c->n_ring_steps ? COLL_RING_STEPS : -1;
    }
    coll_destroy(c);
    net_destroy(n);
    sim_engine_destroy(eng);
    return rc;
}
