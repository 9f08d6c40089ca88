/* net.c - transfers as fluid flows on directed links, shared max-min fairly.
 *
 * A flow's life: net_send() routes it and puts it on its links (bandwidth phase starts now);
 * its rate is the max-min fair share on its path; when its last byte has left the sender
 * (the "data done" event) it leaves its links and the caller's completion fires one path
 * latency later (the last byte's flight). Alone on a path with latency L and bottleneck B a
 * flow of S bytes therefore takes L + S/B, the S/B part rounded up to a whole picosecond.
 *
 * Incremental sharing: a start or end marks the touched links dirty and schedules one
 * "recompute" event at the current time (so a burst of simultaneous starts/ends costs one
 * solve). The recompute walks the connected component(s) of flows sharing links with the
 * dirty links, solves max-min on that component only, and reschedules just the flows whose
 * rate changed; their old data-done events go stale (lazy cancellation by version number).
 * A flow that starts on links no other flow uses skips all of this: its rate is the
 * bottleneck bandwidth and it is scheduled at once.
 *
 * Memory: flows live in a pool (array + free list) whose slots are reused; links keep growable
 * arrays of (flow, hop) entries; component scratch arrays grow to the largest component. In
 * steady state nothing is allocated per event. Paths are borrowed from the topology's route
 * cache (topo_route's contract: valid until topo_destroy).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dtsim/error.h"
#include "dtsim/net.h"
#include "maxmin.h"

/* Longest path a flow may take. Fat-trees and dragonflies with NIC hops stay under 12. */
#define NET_MAX_HOPS 32

typedef struct net_flow {
    double remaining;   /* bytes still to send as of t_last */
    double rate;        /* B/s; 0 before the first solve */
    double bytes;
    sim_time_t t_last;  /* when remaining was last brought up to date */
    sim_time_t t_start;
    sim_time_t tail;    /* path latency: added after the data phase */
    const int *path;
    int n_hops;
    uint32_t version;   /* bumped on every reschedule and on free: stale events carry old ones */
    uint32_t mark;      /* component walk epoch */
    int local;          /* index in the current component */
    int next_free;
    uint32_t done_kind, done_id;
    uint64_t done_data;
    int slot[NET_MAX_HOPS]; /* position of this flow in each hop link's entry array */
} net_flow;

typedef struct link_entry {
    int flow;
    int hop;
} link_entry;

typedef struct net_link {
    double bw;
    link_entry *e;
    int n, cap;
    uint32_t mark;
    int local;
    int dirty;
} net_link;

struct net {
    topo *t;
    sim_engine *eng;
    net_config cfg;
    uint32_t k_done, k_recompute;
    net_link *links;
    int n_links;
    /* flow pool */
    net_flow *flows;
    int n_flows_cap, free_head, active;
    /* dirty links awaiting a recompute */
    int *dirty;
    int n_dirty, cap_dirty;
    int recompute_pending;
    uint32_t epoch;
    /* component scratch */
    int *cf, *cl, *fstart, *flinks, *stack;
    double *cap, *rate, *used;
    int cap_cf, cap_cl, cap_inc, cap_stack, cap_fs, cap_ls;
    mm_solver *mm;
    uint64_t seq;
    net_stats st;
    net_link_observer obs;
    void *obs_ctx;
};

static void on_done(void *model, sim_engine *eng, const sim_event *ev);
static void on_recompute(void *model, sim_engine *eng, const sim_event *ev);

net *net_create(topo *t, sim_engine *eng, const net_config *cfg)
{
    net *n = dt_xcalloc(1, sizeof *n);
    n->t = t;
    n->eng = eng;
    if (cfg) n->cfg = *cfg;
    n->n_links = t->n_links;
    n->links = dt_xcalloc((size_t)(t->n_links ? t->n_links : 1), sizeof *n->links);
    for (int l = 0; l < t->n_links; l++) {
        DT_ASSERT(t->links[l].bandwidth > 0);
        n->links[l].bw = t->links[l].bandwidth;
    }
    n->free_head = -1;
    n->mm = mm_create();
    n->k_done = sim_kind_register(eng, "net.done", on_done, n);
    n->k_recompute = sim_kind_register(eng, "net.recompute", on_recompute, n);
    return n;
}

void net_destroy(net *n)
{
    if (!n) return;
    for (int l = 0; l < n->n_links; l++) free(n->links[l].e);
    free(n->links);
    free(n->flows);
    free(n->dirty);
    free(n->cf);
    free(n->cl);
    free(n->fstart);
    free(n->flinks);
    free(n->stack);
    free(n->cap);
    free(n->rate);
    free(n->used);
    mm_destroy(n->mm);
    free(n);
}

void net_set_link_observer(net *n, net_link_observer fn, void *ctx)
{
    n->obs = fn;
    n->obs_ctx = ctx;
}

void net_get_stats(const net *n, net_stats *out) { *out = n->st; }

net_mode net_get_mode(const net *n) { return n->cfg.mode; }

/* Seconds to whole picoseconds, rounded up. Relative noise below 1e-12 (what a division and a
 * multiplication by 1e12 leave behind) is dropped first, so that 1 MB at 100 GB/s is exactly
 * 10,000,000 ps rather than one more. */
static sim_time_t ps_ceil(double seconds)
{
    double ps = seconds * 1e12;
    DT_ASSERT(ps < 9.0e18);
    if (ps <= 0) return 0;
    double c = ceil(ps - ps * 1e-12);
    return (sim_time_t)c;
}

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

static sim_time_t path_latency(const topo *t, const int *path, int n_hops)
{
    sim_time_t lat = 0;
    for (int h = 0; h < n_hops; h++) {
        const topo_link *lk = &t->links[path[h]];
        lat += lk->latency;
        if (h > 0 && t->nodes[lk->src].kind == TOPO_SWITCH) lat += t->switch_latency;
    }
    return lat;
}

int net_path_info(net *n, int src_gpu, int dst_gpu, sim_time_t *latency, double *bottleneck,
                  int *hops)
{
    const int *path = NULL;
    int nh = 0;
    int rc = topo_route(n->t, src_gpu, dst_gpu, 0, &path, &nh);
    if (rc != DT_OK) return rc;
    double b = INFINITY;
    for (int h = 0; h < nh; h++)
        if (n->t->links[path[h]].bandwidth < b) b = n->t->links[path[h]].bandwidth;
    if (latency) *latency = path_latency(n->t, path, nh);
    if (bottleneck) *bottleneck = b;
    if (hops) *hops = nh;
    return DT_OK;
}

static int flow_alloc(net *n)
{
    if (n->free_head < 0) {
        int old = n->n_flows_cap;
        int c = old ? old * 2 : 256;
        n->flows = dt_xrealloc(n->flows, (size_t)c * sizeof *n->flows);
        memset(n->flows + old, 0, (size_t)(c - old) * sizeof *n->flows);
        for (int i = c - 1; i >= old; i--) {
            n->flows[i].next_free = n->free_head;
            n->free_head = i;
        }
        n->n_flows_cap = c;
    }
    int id = n->free_head;
    n->free_head = n->flows[id].next_free;
    n->active++;
    return id;
}

static void mark_dirty(net *n, int l)
{
    net_link *lk = &n->links[l];
    if (lk->dirty) return;
    lk->dirty = 1;
    if (n->n_dirty == n->cap_dirty) {
        n->cap_dirty = n->cap_dirty ? n->cap_dirty * 2 : 256;
        n->dirty = dt_xrealloc(n->dirty, (size_t)n->cap_dirty * sizeof *n->dirty);
    }
    n->dirty[n->n_dirty++] = l;
    if (!n->recompute_pending) {
        n->recompute_pending = 1;
        sim_schedule(n->eng, sim_now(n->eng), n->k_recompute, 0, 0);
    }
}

static void schedule_finish(net *n, int id, net_flow *f, sim_time_t now)
{
    f->version++;
    sim_time_t dt = ps_ceil(f->remaining / f->rate);
    sim_schedule(n->eng, now + dt, n->k_done, (uint32_t)id, f->version);
}

static void note_util(net *n, double used, double bw)
{
    double u = used / bw;
    if (u > n->st.max_link_utilisation) n->st.max_link_utilisation = u;
#ifndef NDEBUG
    /* Capacity is a hard invariant; allow only floating-point rounding. */
    DT_ASSERT(u <= 1.0 + 1e-9);
#endif
}

void net_send(net *n, int src_gpu, int dst_gpu, double bytes, uint32_t done_kind,
              uint32_t done_id, uint64_t done_data)
{
    sim_time_t now = sim_now(n->eng);
    DT_ASSERT(bytes >= 0);
    n->st.flows_started++;
    n->st.bytes_sent += bytes;
    if (src_gpu == dst_gpu) {
        n->st.flows_finished++;
        n->st.bytes_delivered += bytes;
        sim_schedule(n->eng, now, done_kind, done_id, done_data);
        return;
    }
    const int *path = NULL;
    int nh = 0;
    uint64_t hash = mix64(((uint64_t)(uint32_t)src_gpu << 32 | (uint32_t)dst_gpu) ^ mix64(n->seq++));
    int rc = topo_route(n->t, src_gpu, dst_gpu, hash, &path, &nh);
    DT_ASSERT(rc == DT_OK);
    DT_ASSERT(nh <= NET_MAX_HOPS);
    sim_time_t lat = path_latency(n->t, path, nh);

    if (n->cfg.mode == NET_ANALYTIC || bytes == 0 || nh == 0) {
        double b = INFINITY;
        for (int h = 0; h < nh; h++)
            if (n->links[path[h]].bw < b) b = n->links[path[h]].bw;
        sim_time_t dt = (bytes > 0 && nh > 0) ? ps_ceil(bytes / b) : 0;
        n->st.flows_finished++;
        n->st.bytes_delivered += bytes;
        if (n->obs && bytes > 0)
            for (int h = 0; h < nh; h++) n->obs(n->obs_ctx, path[h], now, now + dt, bytes);
        sim_schedule(n->eng, now + dt + lat, done_kind, done_id, done_data);
        return;
    }

    int id = flow_alloc(n);
    net_flow *f = &n->flows[id];
    f->remaining = f->bytes = bytes;
    f->rate = 0;
    f->t_last = f->t_start = now;
    f->tail = lat;
    f->path = path;
    f->n_hops = nh;
    f->done_kind = done_kind;
    f->done_id = done_id;
    f->done_data = done_data;
    int alone = 1;
    double b = INFINITY;
    for (int h = 0; h < nh; h++) {
        net_link *lk = &n->links[path[h]];
        if (lk->n == lk->cap) {
            lk->cap = lk->cap ? lk->cap * 2 : 4;
            lk->e = dt_xrealloc(lk->e, (size_t)lk->cap * sizeof *lk->e);
        }
        f->slot[h] = lk->n;
        lk->e[lk->n++] = (link_entry){id, h};
        if (lk->n > 1) alone = 0;
        if (lk->bw < b) b = lk->bw;
    }
    if (alone) {
        /* Fast path: nobody to share with, nobody's rate changes. */
        f->rate = b;
        n->st.rate_updates++;
        note_util(n, b, b);
        schedule_finish(n, id, f, now);
    } else {
        for (int h = 0; h < nh; h++) mark_dirty(n, path[h]);
    }
}

static void on_done(void *model, sim_engine *eng, const sim_event *ev)
{
    net *n = model;
    net_flow *f = &n->flows[ev->id];
    if ((uint32_t)ev->data != f->version) return; /* stale: the rate changed since */
    sim_time_t now = ev->time;
    for (int h = 0; h < f->n_hops; h++) {
        int l = f->path[h];
        net_link *lk = &n->links[l];
        int s = f->slot[h];
        link_entry last = lk->e[--lk->n];
        if (s != lk->n) {
            lk->e[s] = last;
            n->flows[last.flow].slot[last.hop] = s;
        }
        if (lk->n > 0) mark_dirty(n, l);
        if (n->obs) n->obs(n->obs_ctx, l, f->t_start, now, f->bytes);
    }
    n->st.flows_finished++;
    n->st.bytes_delivered += f->bytes;
    sim_schedule(eng, now + f->tail, f->done_kind, f->done_id, f->done_data);
    f->version++;
    f->next_free = n->free_head;
    n->free_head = (int)ev->id;
    n->active--;
}

static void grow_int(int **a, int *cap, int need)
{
    if (need <= *cap) return;
    int c = *cap ? *cap : 256;
    while (c < need) c *= 2;
    *a = dt_xrealloc(*a, (size_t)c * sizeof **a);
    *cap = c;
}

static void on_recompute(void *model, sim_engine *eng, const sim_event *ev)
{
    net *n = model;
    sim_time_t now = ev->time;
    n->recompute_pending = 0;
    uint32_t ep = ++n->epoch;
    int nf = 0, nl = 0, ninc = 0;

    /* Walk the components touching dirty links. Stack and link list share a bound (each link
     * is pushed once), so one capacity check per link suffices. */
    for (int d = 0; d < n->n_dirty; d++) {
        int l0 = n->dirty[d];
        n->links[l0].dirty = 0;
        if (n->links[l0].mark == ep || n->links[l0].n == 0) continue;
        int sp = 0;
        grow_int(&n->cl, &n->cap_cl, nl + 1);
        grow_int(&n->stack, &n->cap_stack, nl + 1);
        n->links[l0].mark = ep;
        n->links[l0].local = nl;
        n->cl[nl++] = l0;
        n->stack[sp++] = l0;
        while (sp > 0) {
            net_link *lk = &n->links[n->stack[--sp]];
            for (int k = 0; k < lk->n; k++) {
                int fid = lk->e[k].flow;
                net_flow *f = &n->flows[fid];
                if (f->mark == ep) continue;
                f->mark = ep;
                f->local = nf;
                grow_int(&n->cf, &n->cap_cf, nf + 1);
                n->cf[nf++] = fid;
                ninc += f->n_hops;
                for (int h = 0; h < f->n_hops; h++) {
                    int m = f->path[h];
                    if (n->links[m].mark == ep) continue;
                    n->links[m].mark = ep;
                    n->links[m].local = nl;
                    grow_int(&n->cl, &n->cap_cl, nl + 1);
                    grow_int(&n->stack, &n->cap_stack, nl + 1);
                    n->cl[nl++] = m;
                    n->stack[sp++] = m;
                }
            }
        }
    }
    n->n_dirty = 0;
    if (nf == 0) return;

    /* Scratch follows the largest component seen; reallocated only when that grows. */
    if (nf + 1 > n->cap_fs) {
        n->cap_fs = n->cap_cf + 1;
        n->fstart = dt_xrealloc(n->fstart, (size_t)n->cap_fs * sizeof *n->fstart);
        n->rate = dt_xrealloc(n->rate, (size_t)n->cap_fs * sizeof *n->rate);
    }
    if (nl > n->cap_ls) {
        n->cap_ls = n->cap_cl;
        n->cap = dt_xrealloc(n->cap, (size_t)n->cap_ls * sizeof *n->cap);
        n->used = dt_xrealloc(n->used, (size_t)n->cap_ls * sizeof *n->used);
    }
    grow_int(&n->flinks, &n->cap_inc, ninc);

    int k = 0;
    for (int i = 0; i < nf; i++) {
        const net_flow *f = &n->flows[n->cf[i]];
        n->fstart[i] = k;
        for (int h = 0; h < f->n_hops; h++) n->flinks[k++] = n->links[f->path[h]].local;
    }
    n->fstart[nf] = k;
    for (int j = 0; j < nl; j++) {
        n->cap[j] = n->links[n->cl[j]].bw;
        n->used[j] = 0;
    }
    mm_solve(n->mm, nl, n->cap, nf, n->fstart, n->flinks, n->rate);

    for (int i = 0; i < nf; i++) {
        int fid = n->cf[i];
        net_flow *f = &n->flows[fid];
        double r = n->rate[i];
        for (int j = n->fstart[i]; j < n->fstart[i + 1]; j++) n->used[n->flinks[j]] += r;
        if (r == f->rate) continue; /* finish time unchanged: keep its event */
        double rem = f->remaining - f->rate * sim_time_to_s(now - f->t_last);
        f->remaining = rem > 0 ? rem : 0;
        f->t_last = now;
        f->rate = r;
        n->st.rate_updates++;
        schedule_finish(n, fid, f, now);
    }
    for (int j = 0; j < nl; j++) note_util(n, n->used[j], n->cap[j]);
    (void)eng;
}
