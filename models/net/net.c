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
 * Departures that change nothing: every flow remembers its bottleneck (the link it froze on in
 * progressive filling: saturated, and no flow on it is faster) and every link counts the flows
 * bottlenecked on it. When a batch of flows leaves, a remaining flow whose bottleneck lost no
 * flow still has a saturated link on which it is the fastest; if that holds for every remaining
 * flow, the current rates satisfy the bottleneck characterisation of max-min fairness, which
 * has a unique solution, so they are the solution. Hence only links that lost flows *and*
 * still bottleneck someone need a solve. (An all-to-all on 256 GPUs: 496 solves of 65k flows
 * become one.) Arrivals always need a solve of their component.
 *
 * Completions in batches: flows one recompute gives the same finish time (every flow of a
 * direct collective's phase) leave in one event, and the completions they hand back at one
 * later time go out in one event; both keep the engine's order exactly (net_batch,
 * net_delivery below). A direct all-reduce on 1,024 GPUs went from 4.2 M events to 2.1 M.
 *
 * Memory: flows live in a pool (two arrays of 64-byte records + free list) whose slots are
 * reused; links keep growable arrays of (flow, hop) entries; component scratch arrays, batches
 * and deliveries grow to the largest seen. In steady state nothing is allocated per event.
 * Paths are borrowed from the topology's route cache (topo_route's contract: valid until
 * topo_destroy). What a million flows cost (docs/performance.md, "Scale"): 128 B of records,
 * a 32 B route in the store per distinct pair, about 100 B of scratch while their component is
 * solved; at that size the cost is cache misses, hence the record layout and the prefetching.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dtsim/error.h"
#include "dtsim/net.h"
#include "maxmin.h"
#include "net_internal.h"
#include "solve_memo.h"

/* Re-solve after every departure, even from links that bottleneck nobody (the skip is exact:
 * tests compare both ways by building with -DDTSIM_NET_NOSKIP=1). */
#ifndef DTSIM_NET_NOSKIP
#define DTSIM_NET_NOSKIP 0
#endif

/* The exact memo of whole solves (solve_memo.h; docs/performance.md, "Exact memo of whole
 * solves"): every component of at most NET_SMEMO_MAX_FLOWS flows is looked up before it is
 * solved (a key is O(flows) words; larger components, a direct collective's million flows,
 * would pay a pass over their flow records for a key too large to store). The memo holds up to
 * NET_SMEMO_BYTES of keys and results in NET_SMEMO_SLOTS slots, 4-way set associative: on the
 * planner's costliest step 85 % of the solves are a problem solved before, the large ones
 * (entries of about 4 KB) hundreds of solves apart; 4,096 entries of 4 KB fill the 16 MiB, so
 * the memo is seldom emptied (8,192 entries under the same bound caught 11 % fewer large
 * solves: emptied twice). The coupled flows' paths the keys name are interned up to
 * NET_PATHS_BYTES. */
#define NET_SMEMO_MIN_INC 0
#define NET_SMEMO_MAX_FLOWS 4096
#define NET_SMEMO_BYTES ((size_t)16 << 20)
#define NET_SMEMO_SLOTS 4096
#define NET_PATHS_BYTES ((size_t)16 << 20)

/* Longest path a flow may take. Fat-trees and dragonflies with NIC hops stay under 12. */
#define NET_MAX_HOPS 32
/* Hop slots kept inline per flow (a DGX rail route has 6 hops); longer paths get their own
 * array, as coupled flows do. 32 inline slots cost 128 B per flow: 128 MB for the million
 * flows of a direct all-reduce on 1,024 GPUs, mostly page faults. */
#define NET_INLINE_HOPS 8

/* Links kept in the flow's own record: routes of up to 4 hops (one switch, a two-tier Clos
 * without NICs, inside a DGX box); for longer paths the record holds a pointer instead. */
#define NET_HOT_HOPS 4

/* A flow is two 64-byte records in two arrays, each on one cache line: what a recompute reads
 * (its component walk and its re-rating pass: a million random accesses each for a direct
 * all-reduce on 1,024 GPUs, so one line instead of the three a 136-byte record spanned, and no
 * separate path array for short routes), and what only its start and its completion read. */
typedef struct net_flow {
    double remaining;   /* bytes still to send as of t_last */
    double rate;        /* B/s; 0 before the first solve */
    sim_time_t t_last;  /* when remaining was last brought up to date */
    double w;           /* max-min weight: 1, or a coupled flow's (net_send_ring) */
    uint32_t version;   /* bumped on every reschedule and on free: stale events carry old ones */
    int bneck;          /* bottleneck link from the last solve, -1 before */
    int batch;          /* completion batch holding its pending data-done, or -1 */
    uint32_t n_hops : 29;   /* a coupled ring's path: every pair's route, 2^17 hops and more */
    uint32_t active : 1;
    uint32_t owns_path : 1; /* p.path is the flow's own (a coupled flow's, net_send_ring) */
    uint32_t stepped : 1;   /* a ring run in steps (net_send_ring_steps): n->gap[id] is its */
    union {
        int link[NET_HOT_HOPS]; /* n_hops <= NET_HOT_HOPS: the path itself */
        const int *path;        /* longer: borrowed from the route cache, or owned (owns_path) */
    } p;
} net_flow;

typedef struct flow_cold {
    double bytes;
    sim_time_t t_start;
    sim_time_t tail;    /* path latency: added after the data phase */
    union {
        int slot[NET_HOT_HOPS]; /* n_hops <= NET_HOT_HOPS: the slots (see flow_slots) */
        struct {
            int *xslot; /* own slot array (coupled or longer than NET_INLINE_HOPS), or NULL */
        } x;            /* n_hops > NET_HOT_HOPS */
    } u;
    uint64_t done_data;
    uint32_t done_kind, done_id;
    uint32_t tag;       /* the caller's label (net_set_tag) */
    int pairs;          /* transfers it stands for: 1, or a coupled flow's pairs */
} flow_cold;

_Static_assert(sizeof(net_flow) == 64 && sizeof(flow_cold) == 64, "flow records: one line each");

/* What a coupled flow run in steps (net_send_ring_steps) charges beyond its bytes: each step
 * lasts max over pairs of (alpha_e + c / rate_e), of which the coupled flow's data phase covers
 * c / rate (its bottleneck's transfer); the rest, the step's gap, accrues per step done at
 * the rate of the moment and passes after the last byte (the flow's tail). Kept apart from the
 * flow records (full) and read only when the flow's rate or bottleneck changes and at its end. */
typedef struct ring_gap {
    double c;          /* bytes per step (the flow's own bytes / steps) */
    double wr;         /* a pair's uncontended rate is wr x its route's bottleneck */
    double acc;        /* ps of gaps accrued so far */
    double a_tight;    /* ps: largest latency of the pairs held to the flow's rate (gap_tight) */
    double gap, gap_rate; /* ps per step at rate gap_rate and a_tight (gap_now), kept current */
    int n_pairs;
    int recheck;       /* gap_tight must look at its links in the next solve: it never has,
                          or a link of its path changed saturation (on_recompute) */
    sim_time_t *lat;   /* per pair (on the flow's path, in order): route latency, ps, */
    double *bw;        /*   route bottleneck, B/s, */
    int *hops;         /*   and its number of hops */
} ring_gap;

static void gap_free(ring_gap *g)
{
    if (!g) return;
    free(g->lat);
    free(g);
}

/* Passes over many flows in an order unrelated to their ids (a component walk, the re-rating
 * after a solve, a batch of completions) ask for the record PF_AHEAD flows ahead: the cache
 * misses overlap instead of stalling one after another. Only a hint: no effect on results. */
#define PF_AHEAD 16
#define PF(p) __builtin_prefetch((p), 1, 3)

/* Flows that one recompute gave the same finish time complete in one "batch" event instead of
 * one event each (a direct all-reduce on 1,024 GPUs: a million flows finishing at once, twice).
 * Exactly equivalent to the per-flow events: the events one recompute schedules take
 * consecutive sequence numbers, so among all events at a time T those of its flows finishing at
 * T are contiguous; handling them in one event, in the order they would have been scheduled,
 * is the order the engine would have popped them in. Members carry the version they were
 * scheduled with and are skipped when stale, as stale single events are. Counts per link let
 * the handler see links that all their flows leave in this batch (when no member went stale):
 * there the entries are dropped by a count instead of being swapped out one by one, which
 * writes the moved flows' slots (a cache miss per hop). */
/* The completions a batch hands back to callers, one path latency after the batch, go out the
 * same way: per distinct delivery time one "deliver" event holding the (kind, id, data) of
 * every member in order, dispatched one after another (sim_dispatch) when it fires. Also
 * exact: during a batch nothing else is scheduled at those times (they are later than now;
 * zero latencies are not batched, as a recompute scheduled now could fall between), so the
 * members' completions were consecutive among the events at each time. A million completion
 * events per phase of a direct all-reduce on 1,024 GPUs took 64 MB of queue. At most
 * NET_DELIVER_GROUPS times per batch are grouped; completions at other times (and all of
 * them, so the order holds) are scheduled one by one. */
#define NET_DELIVER_GROUPS 8
typedef struct net_delivery {
    uint32_t *kind, *id;
    uint64_t *data;
    int n, cap;
    int next_free;
} net_delivery;

typedef struct net_batch {
    uint32_t *fid, *ver; /* members, in scheduling order, and their versions */
    int n, cap;
    int *lk, *lcnt;      /* links the members cross, and how many member entries each holds */
    int n_lk, cap_lk;
    int stale;           /* members rescheduled since (their versions moved on) */
    int next_free;
} net_batch;

/* Routes by (src, dst, lane). Which ECMP lane a transfer takes is decided by the memo: a
 * direct-mapped table of pairs, each with its lane rotation (an evicted pair restarts at lane
 * 0; that is part of the model's answer, so its size and hashing stay as they are). The routes
 * themselves, with their latency and bottleneck, live in a store of one small open-addressing
 * table per source GPU (NET_STORE_MAX entries in all, then it stops growing and later routes
 * come from topo_route, whose table is larger but slower: a lock and a probe per call). Per
 * source, because collectives post a rank's sends together: its table stays in cache. The
 * memo keeps only keys and rotations (16 bytes a slot): when it also held the four lanes'
 * routes (144 bytes), a direct all-reduce, whose every transfer misses the memo, paid a cache
 * miss to reset the slot and a copy from the store per transfer. */
#define NET_MEMO_MIN_BITS 13
#define NET_MEMO_MAX_BITS 17
#define NET_LANES NET_ECMP_LANES
typedef struct route_lane {
    const int *path;
    sim_time_t lat;
    int n_hops;
    int bl; /* bottleneck link (its bandwidth: lane_bw), -1 for an empty path */
} route_lane;
typedef struct stored_lane { /* 32 bytes: two per cache line */
    int dst_lane; /* dst * NET_LANES + lane; -1 empty */
    int multi;    /* lane 0's entry: whether the pair's lanes differ (pair_multipath_stored),
                     -1 not yet known; in the padding before r */
    route_lane r;
} stored_lane;
_Static_assert(sizeof(stored_lane) == 32, "two stored lanes per cache line");
typedef struct src_store {
    stored_lane *e;
    int cap, n;
} src_store;
#define NET_STORE_MAX ((size_t)1 << 22)

typedef struct route_memo {
    int64_t key;   /* src * n_gpus + dst, -1 empty */
    unsigned next; /* lane of the next transfer */
} route_memo;

/* A ring's pairs with their routes concatenated per ECMP lane, with per lane the largest pair
 * latency and the narrowest pair bottleneck (net_send_ring) and each pair's own figures
 * (net_send_ring_steps): a data-parallel ring is started once per gradient bucket with the
 * same pairs, so its routes are looked up once per run instead of once per bucket and lane (at
 * 65,536 GPUs that was 9 M route look-ups, 20 % of a training step). */
typedef struct ring_route {
    uint64_t h;
    int n_pairs;
    int *src, *dst; /* owned copies, to tell pair lists apart exactly */
    int *path[NET_LANES]; /* NULL until that lane is used */
    /* per lane, per pair: route latency, bottleneck bandwidth, hops (net_send_ring_steps);
     * one block, NULL until that lane is used */
    sim_time_t *plat[NET_LANES];
    int nh[NET_LANES], bl[NET_LANES];
    sim_time_t lat[NET_LANES];
    double bw[NET_LANES];
} ring_route;
/* Beyond this the ring cache is emptied (it is a cache: routes are recomputed). */
#define NET_RING_CACHE_BYTES ((size_t)256 << 20)

/* A link's entry for a flow crossing it: the flow, and which hop of its path this is, with
 * where the flow keeps its slots: LE_OWN_SLOTS its own array (coupled or long paths),
 * LE_COLD_SLOTS its cold record (short paths), neither the pool's fslot array. */
#define LE_OWN_SLOTS (1 << 30)
#define LE_COLD_SLOTS (1 << 29)
#define LE_HOP_MASK (LE_COLD_SLOTS - 1)
typedef struct link_entry {
    int flow;
    int hop;
} link_entry;

/* Component-walk marks, apart from the link records: a walk over a coupled ring's thousands
 * of links touches 12 bytes per link instead of a 40-byte record. */
typedef struct link_mark {
    uint32_t mark; /* walk epoch */
    int local;     /* index in the component being solved */
    int left;      /* its entries whose flow the walk has not met yet (on_recompute) */
} link_mark;

typedef struct net_link {
    double bw;
    link_entry *e;
    int n, cap;
    int dirty;
    int n_bneck; /* flows whose bottleneck this link is */
    sim_time_t busy, busy_since; /* time with at least one flow on it; since when, if now */
} net_link;

struct net {
    topo *t;
    sim_engine *eng;
    net_config cfg;
    uint32_t k_done, k_recompute, k_batch;
    net_link *links;
    link_mark *lmark;
    int n_links;
    /* flow pool (both arrays 64-byte aligned) */
    net_flow *flows;
    flow_cold *cold;
    void *flows_raw, *cold_raw; /* the blocks they sit in (grow_aligned) */
    /* Kept apart from the flows so that component walks touch 4 bytes per visit, and the
     * flow records stay small (a recompute visits each flow of a component twice). */
    uint32_t *fmark;   /* per flow: component walk epoch */
    int *fslot;        /* per flow, NET_INLINE_HOPS: position in each hop link's entry array,
                          for paths of NET_HOT_HOPS + 1 .. NET_INLINE_HOPS hops (pages of it
                          that no such flow uses are never touched) */
    int *free_stack;   /* ids of free flow records, the next to reuse on top */
    ring_gap **gap;    /* per flow: its step record when stepped (net_send_ring_steps), else unused */
    int n_flows_cap, n_free, active;
    /* dirty links awaiting a recompute */
    int *dirty;
    int n_dirty, cap_dirty;
    int recompute_pending;
    uint32_t epoch;
    /* component scratch */
    int *cf, *cl, *fstart, *flinks, *stack;
    double *cap, *rate, *used, *wt;
    int *bn;
    int *lnum;           /* per component link: its entries (the solver's incidence count) */
    unsigned char *sat;  /* per component link: saturated after the solve (gap_tight) */
    unsigned char *lsat; /* per link: its sat in the last solve with a stepped flow on it */
    unsigned char *satbits; /* per component link, a bit: saturated (the memo's copy) */
    int cap_satbits;
    int cap_cf, cap_cl, cap_inc, cap_stack, cap_fs, cap_ls, cap_rate;
    mm_solver *mm;
    /* exact memo of whole solves (NULL: off) and the interned coupled paths its keys name */
    sm_memo *smemo;
    sm_paths *paths;
    int smemo_min_inc;
    uint64_t smemo_hits, smemo_keyed;
    uint64_t *tok;       /* the key of the component being solved (memo_key) */
    int cap_tok;
    int *roots;          /* per walk of the recompute: its first link, its first flow */
    int n_roots, cap_roots;
    route_memo *memo;
    unsigned memo_mask;
    src_store *store; /* per source GPU */
    size_t store_n;
    route_lane scratch; /* a route looked up once the store is full */
    /* routes of ring pair lists, by lane (ring_lookup) */
    struct ring_route *rings;
    int n_rings, cap_rings;
    size_t ring_bytes;
    /* completion batches (a pool) and the recompute's grouping scratch */
    net_batch *batches;
    int n_batches, free_batch;
    int *rs_i, *rs_next;      /* rescheduled flows (component indices), group chains */
    sim_time_t *rs_t;         /* their finish times */
    int cap_rs;
    sim_time_t *g_t;          /* groups: finish time, first and last member, size */
    int *g_head, *g_tail, *g_cnt, cap_g;
    int *ht, ht_cap;          /* finish time -> group, open addressing; a slot is in use */
    uint32_t *ht_gen, gen;    /* when its ht_gen is the current gen (no clearing per use) */
    int *lcnt, *ltouch, cap_lc; /* per component link: member entries of the group */
    unsigned char *lempty;    /* per link: every flow on it leaves in the batch being handled */
    net_delivery *dl;         /* delivery pool */
    int n_dl, free_dl;
    int in_batch;             /* on_batch is running: completions are grouped (dg_*) */
    int no_batch;             /* net_set_batching(n, 0): one event per completion */
    int n_dg, dg_id[NET_DELIVER_GROUPS];
    sim_time_t dg_t[NET_DELIVER_GROUPS];
    uint32_t k_deliver;
    net_stats st;
    net_link_observer obs;
    void *obs_ctx;
    uint32_t tag; /* label of transfers started now (net_set_tag) */
    /* cfg.pxn on a topology with hosts: each host's GPUs in index order (CSR) and each GPU's
     * place among its host's (-1 outside hosts), for pxn_relay; NULL otherwise */
    int *host_start, *host_gpus, *host_pos;
};

static void on_done(void *model, sim_engine *eng, const sim_event *ev);
static void on_recompute(void *model, sim_engine *eng, const sim_event *ev);
static void on_batch(void *model, sim_engine *eng, const sim_event *ev);
static void on_deliver(void *model, sim_engine *eng, const sim_event *ev);

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
    n->lmark = dt_xcalloc((size_t)(t->n_links ? t->n_links : 1), sizeof *n->lmark);
    n->mm = mm_create();
    n->smemo = sm_create(NET_SMEMO_BYTES, NET_SMEMO_SLOTS);
    n->paths = sm_paths_create(NET_PATHS_BYTES);
    n->smemo_min_inc = NET_SMEMO_MIN_INC;
    /* Memo size: 4 slots per GPU (a ring or pipeline neighbour or two each), 2^13 to 2^17
     * entries (128 KB to 2 MB). An evicted pair restarts its lane rotation, so a memo too small
     * for the working set changes which ECMP lanes transfers take, not only the speed. */
    int bits = NET_MEMO_MIN_BITS;
    while (bits < NET_MEMO_MAX_BITS && (1L << bits) < 4L * t->n_gpus) bits++;
    n->memo_mask = (1u << bits) - 1;
    n->memo = dt_xmalloc(sizeof(route_memo) << bits);
    for (unsigned i = 0; i <= n->memo_mask; i++) n->memo[i].key = -1;
    n->store = dt_xcalloc((size_t)(t->n_gpus ? t->n_gpus : 1), sizeof *n->store);
    n->k_done = sim_kind_register(eng, "net.done", on_done, n);
    n->k_recompute = sim_kind_register(eng, "net.recompute", on_recompute, n);
    n->k_batch = sim_kind_register(eng, "net.done_batch", on_batch, n);
    n->lempty = dt_xcalloc((size_t)(t->n_links ? t->n_links : 1), 1);
    n->lsat = dt_xcalloc((size_t)(t->n_links ? t->n_links : 1), 1);
    n->free_batch = -1;
    n->k_deliver = sim_kind_register(eng, "net.deliver", on_deliver, n);
    n->free_dl = -1;
    if (n->cfg.pxn && t->n_hosts > 0 && !t->gpu_forwarding) {
        n->host_start = dt_xcalloc((size_t)t->n_hosts + 1, sizeof *n->host_start);
        n->host_gpus = dt_xmalloc((size_t)(t->n_gpus ? t->n_gpus : 1) * sizeof *n->host_gpus);
        n->host_pos = dt_xmalloc((size_t)(t->n_gpus ? t->n_gpus : 1) * sizeof *n->host_pos);
        for (int g = 0; g < t->n_gpus; g++) {
            int h = t->nodes[t->gpu_node[g]].host;
            if (h >= 0) n->host_start[h + 1]++;
        }
        for (int h = 0; h < t->n_hosts; h++) n->host_start[h + 1] += n->host_start[h];
        int *fill = dt_xmalloc((size_t)t->n_hosts * sizeof *fill);
        memcpy(fill, n->host_start, (size_t)t->n_hosts * sizeof *fill);
        for (int g = 0; g < t->n_gpus; g++) {
            int h = t->nodes[t->gpu_node[g]].host;
            n->host_pos[g] = h >= 0 ? fill[h] - n->host_start[h] : -1;
            if (h >= 0) n->host_gpus[fill[h]++] = g;
        }
        free(fill);
    }
    return n;
}

void net_destroy(net *n)
{
    if (!n) return;
    for (int l = 0; l < n->n_links; l++) free(n->links[l].e);
    free(n->links);
    free(n->lmark);
    for (int i = 0; i < n->n_flows_cap; i++) {
        if (n->flows[i].active && n->flows[i].stepped) gap_free(n->gap[i]);
        if (!n->flows[i].active || n->flows[i].n_hops <= NET_HOT_HOPS) continue;
        if (n->flows[i].owns_path) free((int *)n->flows[i].p.path);
        free(n->cold[i].u.x.xslot);
    }
    free(n->flows_raw);
    free(n->cold_raw);
    free(n->fmark);
    free(n->free_stack);
    free(n->gap);
    free(n->fslot);
    free(n->dirty);
    free(n->cf);
    free(n->cl);
    free(n->fstart);
    free(n->flinks);
    free(n->stack);
    free(n->cap);
    free(n->lnum);
    free(n->sat);
    free(n->satbits);
    free(n->rate);
    free(n->used);
    free(n->wt);
    free(n->bn);
    for (int i = 0; i < n->n_batches; i++) {
        free(n->batches[i].fid);
        free(n->batches[i].ver);
        free(n->batches[i].lk);
        free(n->batches[i].lcnt);
    }
    free(n->batches);
    for (int i = 0; i < n->n_dl; i++) {
        free(n->dl[i].kind);
        free(n->dl[i].id);
        free(n->dl[i].data);
    }
    free(n->dl);
    free(n->rs_i);
    free(n->rs_next);
    free(n->rs_t);
    free(n->g_t);
    free(n->g_head);
    free(n->g_tail);
    free(n->g_cnt);
    free(n->ht);
    free(n->ht_gen);
    free(n->lcnt);
    free(n->ltouch);
    free(n->lempty);
    free(n->lsat);
    free(n->memo);
    for (int g = 0; g < n->t->n_gpus; g++) free(n->store[g].e);
    free(n->store);
    for (int i = 0; i < n->n_rings; i++) {
        free(n->rings[i].src);
        for (int l = 0; l < NET_LANES; l++) {
            free(n->rings[i].path[l]);
            free(n->rings[i].plat[l]);
        }
    }
    free(n->rings);
    mm_destroy(n->mm);
    sm_destroy(n->smemo); /* (before the paths its keys name) */
    sm_paths_destroy(n->paths);
    free(n->tok);
    free(n->roots);
    free(n->host_start);
    free(n->host_gpus);
    free(n->host_pos);
    free(n);
}

void net_set_link_observer(net *n, net_link_observer fn, void *ctx)
{
    n->obs = fn;
    n->obs_ctx = ctx;
}

void net_get_stats(const net *n, net_stats *out) { *out = n->st; }

void net_set_tag(net *n, uint32_t tag) { n->tag = tag; }

void net_set_batching(net *n, int on) { n->no_batch = !on; }

void net_set_solve_memo(net *n, int min_incidences)
{
    if (min_incidences < 0) {
        sm_destroy(n->smemo);
        n->smemo = NULL;
        return;
    }
    n->smemo_min_inc = min_incidences;
}

void net_solve_memo_stats(const net *n, uint64_t *keyed, uint64_t *hits)
{
    *keyed = n->smemo_keyed;
    *hits = n->smemo_hits;
}

sim_time_t net_link_busy(const net *n, int link)
{
    const net_link *lk = &n->links[link];
    return lk->busy + (lk->n > 0 ? sim_now(n->eng) - lk->busy_since : 0);
}

net_mode net_get_mode(const net *n) { return n->cfg.mode; }

/* Seconds to whole picoseconds, rounded up. Relative noise below 1e-12 (what a division and a
 * multiplication by 1e12 leave behind) is dropped first, so that 1 MB at 100 GB/s is exactly
 * 10,000,000 ps rather than one more. */
static sim_time_t ps_ceil(double seconds)
{
    double ps = seconds * 1e12;
    if (!(ps < 9.0e18)) return SIM_TIME_MAX; /* "never": the caller reports the overflow */
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

int net_route_lane(net *n, int src_gpu, int dst_gpu, int lane, const int **links, int *hops,
                   sim_time_t *latency)
{
    /* the hash next_route gives lane v of the pair, without touching the memo (whose lane
     * rotation the flow model's transfers depend on) */
    int64_t key = (int64_t)src_gpu * n->t->n_gpus + dst_gpu;
    unsigned v = (unsigned)lane % NET_LANES;
    uint64_t hash = mix64((uint64_t)key * NET_LANES + v + 0x9e3779b97f4a7c15ULL);
    const int *pth = NULL;
    int nh = 0;
    int rc = topo_route(n->t, src_gpu, dst_gpu, hash, &pth, &nh);
    if (rc != DT_OK) return rc;
    if (links) *links = pth;
    if (hops) *hops = nh;
    if (latency) *latency = path_latency(n->t, pth, nh);
    return DT_OK;
}

/* Free flow records are a stack of ids apart from the records (last freed, first reused): taking
 * one reads the stack's top, not the record's next-free field (a cache miss per transfer when a
 * million flows come and go). */
/* Grow a 64-byte aligned array kept inside a realloc'd block (*raw): realloc moves large
 * blocks by remapping their pages, where a fresh aligned allocation and a copy would fault in
 * every page again at each doubling (a million flows: 128 MB of records). The data moves only
 * when the new block's alignment offset differs. */
static void *grow_aligned(void **raw, void *old, size_t old_bytes, size_t new_bytes)
{
    size_t off_old = old ? (size_t)((char *)old - (char *)*raw) : 0;
    char *r = dt_xrealloc(*raw, new_bytes + 64);
    char *a = (char *)(((uintptr_t)r + 63) & ~(uintptr_t)63);
    if (old_bytes && (size_t)(a - r) != off_old) memmove(a, r + off_old, old_bytes);
    *raw = r;
    return a;
}

__attribute__((always_inline)) static inline int flow_alloc(net *n)
{
    if (n->n_free == 0) {
        int old = n->n_flows_cap;
        int c = old ? old * 2 : 256;
        n->flows = grow_aligned(&n->flows_raw, n->flows, (size_t)old * sizeof *n->flows,
                                (size_t)c * sizeof *n->flows);
        n->cold = grow_aligned(&n->cold_raw, n->cold, (size_t)old * sizeof *n->cold,
                               (size_t)c * sizeof *n->cold);
        n->fmark = dt_xrealloc(n->fmark, (size_t)c * sizeof *n->fmark);
        memset(n->fmark + old, 0, (size_t)(c - old) * sizeof *n->fmark);
        n->fslot = dt_xrealloc(n->fslot, (size_t)c * NET_INLINE_HOPS * sizeof *n->fslot);
        n->free_stack = dt_xrealloc(n->free_stack, (size_t)c * sizeof *n->free_stack);
        n->gap = dt_xrealloc(n->gap, (size_t)c * sizeof *n->gap);
        for (int i = c - 1; i >= old; i--) { /* every other field is set when the flow starts */
            n->gap[i] = NULL;
            n->flows[i].stepped = 0;
            n->flows[i].owns_path = 0;
            n->flows[i].active = 0;
            n->flows[i].version = 0;
            n->free_stack[n->n_free++] = i;
        }
        n->n_flows_cap = c;
    }
    int id = n->free_stack[--n->n_free];
    if (n->n_free >= 4) { /* the records of a later start: freed in a completion's order, random */
        int q = n->free_stack[n->n_free - 4];
        PF(&n->flows[q]);
        PF(&n->cold[q]);
    }
    n->flows[id].active = 1;
    n->active++;
    return id;
}

enum { DIRTY_DEPART = 1, DIRTY_ARRIVE = 2 };

static void mark_dirty_slow(net *n, int l);

/* Inlined: a million starts on the same two thousand links find them already dirty. */
static inline void mark_dirty(net *n, int l, int why)
{
    net_link *lk = &n->links[l];
    int was = lk->dirty;
    lk->dirty |= why;
    if (!was) mark_dirty_slow(n, l);
}

/* A link newly dirty: onto the list, and a recompute now if none is pending. */
static void mark_dirty_slow(net *n, int l)
{
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
    sim_schedule_in(n->eng, now, dt, n->k_done, (uint32_t)id, f->version);
}

/* The link's utilisation, noted in the run's maximum. */
static double note_util(net *n, double used, double bw)
{
    double u = used / bw;
    if (u > n->st.max_link_utilisation) n->st.max_link_utilisation = u;
#ifndef NDEBUG
    /* Capacity is a hard invariant; allow only floating-point rounding. */
    DT_ASSERT(u <= 1.0 + 1e-9);
#endif
    return u;
}

/* Positions of flow id in its hop links' entry arrays: NET_INLINE_HOPS slots per flow, or the
 * coupled flow's own array. */
static inline int *flow_slots(net *n, int id)
{
    flow_cold *fc = &n->cold[id];
    if (n->flows[id].n_hops <= NET_HOT_HOPS) return fc->u.slot;
    return fc->u.x.xslot ? fc->u.x.xslot : &n->fslot[(size_t)id * NET_INLINE_HOPS];
}

/* The flow's links, in path order. */
static inline const int *flow_path(const net *n, int id)
{
    const net_flow *f = &n->flows[id];
    return f->n_hops <= NET_HOT_HOPS ? f->p.link : f->p.path;
}

/* ps a step of a stepped flow lasts beyond c / rate at coupled rate `rate`: the pairs held to
 * that rate (a_tight: the largest latency among them) take alpha_e + c / rate, the others
 * alpha_e + c / max(rate, their uncontended share): no pair is slower than the coupled flow
 * (it is one of its edges), and one whose share is above the rate is taken at its share.
 * The max keeps the gap within [a_tight, largest latency] whatever the rate: a lane flow
 * whose sibling lanes have finished runs above its share. O(pairs). */
static double gap_now(const ring_gap *g, double rate)
{
    double cr = rate > 0 ? g->c / rate * 1e12 : 0, t = 0, amax = 0;
    for (int q = 0; q < g->n_pairs; q++) {
        if (g->hops[q] == 0) continue;
        double share = g->wr * g->bw[q];
        double x = (double)g->lat[q] + (share > rate ? g->c / share * 1e12 : cr);
        if (x > t) t = x;
        if ((double)g->lat[q] > amax) amax = (double)g->lat[q];
    }
    double rest = t - cr, gap = rest > g->a_tight ? rest : g->a_tight;
    DT_ASSERT(gap <= amax * (1 + 1e-9) + 1); /* a step never waits longer than its longest edge */
    return gap;
}

/* Stepped flow id sent `sent` bytes since its rate or sharing last changed: the gaps of those
 * steps accrue (at the gap kept for that rate and sharing). */
static inline void gap_accrue(net *n, int id, double sent)
{
    ring_gap *g = n->gap[id];
    if (sent > 0 && g->c > 0) g->acc += sent / g->c * g->gap;
}

/* After a solve: which of stepped flow i's pairs are held to its rate. A pair whose route
 * crosses a saturated link (used to capacity, this flow's rate included) runs no faster than
 * the coupled flow there, as its step transfer would share that link; the others are taken at
 * their uncontended share. Ties matter: two rings sharing every link saturate all their
 * links, and the ring's longest edge then paces each step, not only the one edge the
 * solver happened to freeze the flow on. fl: the flow's local link indices in path order
 * (on_recompute's flinks), n->sat: which of them are saturated. O(hops). */
static void gap_tight(net *n, int id, const int *fl)
{
    ring_gap *g = n->gap[id];
    double a = 0, rate = n->flows[id].rate;
    for (int q = 0, h = 0; q < g->n_pairs; h += g->hops[q++])
        for (int k = h; k < h + g->hops[q]; k++)
            if (n->sat[fl[k]]) {
                if ((double)g->lat[q] > a) a = (double)g->lat[q];
                break;
            }
    if (a != g->a_tight || rate != g->gap_rate) { /* O(pairs) only when something moved */
        g->a_tight = a;
        g->gap_rate = rate;
        g->gap = gap_now(g, rate);
    }
}

/* Put a new flow on its links and either schedule it (alone on every link) or mark its links
 * for a recompute. xpath: NULL, or the path (owned by the flow from now on) of a coupled flow
 * standing for `pairs` transfers. */
/* Inlined into net_send (per-flow hot path: a call with twelve arguments cost ~5 % of the
 * 1,024-GPU step's instructions). */
__attribute__((always_inline)) static inline void
flow_start(net *n, const int *path, int nh, int *xpath, int pairs, double w,
                       sim_time_t lat, double bw, int bl, double bytes, ring_gap *gap,
                       uint32_t done_kind, uint32_t done_id, uint64_t done_data)
{
    sim_time_t now = sim_now(n->eng);
    int id = flow_alloc(n);
    net_flow *f = &n->flows[id];
    flow_cold *fc = &n->cold[id];
    f->stepped = gap != NULL;
    n->gap[id] = gap;
    f->remaining = fc->bytes = bytes;
    f->rate = 0;
    f->t_last = fc->t_start = now;
    fc->tail = lat;
    DT_ASSERT(nh < (1 << 30));
    f->n_hops = (uint32_t)nh;
    int where; /* LE_* flag: where its slots are */
    if (nh <= NET_HOT_HOPS) {
        for (int h = 0; h < nh; h++) f->p.link[h] = path[h]; /* (not a memcpy call of 8-16 bytes) */
        free(xpath); /* a short coupled path lives in the record like any other */
        path = f->p.link;
        f->owns_path = 0;
        where = LE_COLD_SLOTS;
    } else {
        f->p.path = path;
        f->owns_path = xpath != NULL;
        bool own = xpath || nh > NET_INLINE_HOPS;
        fc->u.x.xslot = own ? dt_xmalloc((size_t)nh * sizeof *fc->u.x.xslot) : NULL;
        where = own ? LE_OWN_SLOTS : 0;
    }
    fc->pairs = pairs;
    f->w = w;
    fc->done_kind = done_kind;
    fc->done_id = done_id;
    fc->done_data = done_data;
    fc->tag = n->tag;
    f->bneck = -1;
    f->batch = -1;
    int *slot = flow_slots(n, id);
    int alone = 1;
    for (int h = 0; h < nh; h++) {
        net_link *lk = &n->links[path[h]];
        if (lk->n == 0) lk->busy_since = now;
        if (lk->n == lk->cap) {
            lk->cap = lk->cap ? lk->cap * 2 : 4;
            lk->e = dt_xrealloc(lk->e, (size_t)lk->cap * sizeof *lk->e);
        }
        slot[h] = lk->n;
        lk->e[lk->n++] = (link_entry){id, h | where};
        if (lk->n > 1) alone = 0;
    }
    if (alone) {
        /* Fast path: nobody to share with, nobody's rate changes. */
        f->rate = bw;
        f->bneck = bl;
        n->links[bl].n_bneck++;
        n->st.rate_updates++;
        note_util(n, bw, bw);
        schedule_finish(n, id, f, now);
    } else {
        for (int h = 0; h < nh; h++) mark_dirty(n, path[h], DIRTY_ARRIVE);
    }
}

/* Store slot of key dl = dst * NET_LANES + lane: consecutive destinations in consecutive
 * slots (a rank's sends go to consecutive peers), each lane offset by a large odd stride so
 * that lanes do not pile onto each other's runs (dl itself modulo the size put lane 0 of
 * destination d and d + cap/4 on one slot: long probe chains). */
static inline int store_slot(int dl, int cap)
{
    unsigned d = (unsigned)dl / NET_LANES, v = (unsigned)dl % NET_LANES;
    return (int)((d + v * 0x9E3779B1u) & (unsigned)(cap - 1));
}

static inline double lane_bw(const net *n, const route_lane *ln)
{
    return ln->bl >= 0 ? n->links[ln->bl].bw : INFINITY;
}

static void store_grow(src_store *ss)
{
    int old_cap = ss->cap;
    stored_lane *old = ss->e;
    ss->cap = old_cap ? 2 * old_cap : 16;
    ss->e = dt_xmalloc((size_t)ss->cap * sizeof *ss->e);
    for (int i = 0; i < ss->cap; i++) ss->e[i].dst_lane = -1;
    for (int i = 0; i < old_cap; i++) {
        if (old[i].dst_lane < 0) continue;
        int k = store_slot(old[i].dst_lane, ss->cap);
        while (ss->e[k].dst_lane >= 0) k = (k + 1) & (ss->cap - 1);
        ss->e[k] = old[i];
    }
    free(old);
}

/* Route lane v of pair (src, dst) and keep it in the store (while it has room). */
static __attribute__((noinline)) const route_lane *lane_miss(net *n, int64_t key, unsigned v,
                                                             int src_gpu, int dst_gpu)
{
    const int *pth = NULL;
    int hops = 0;
    uint64_t hash = mix64((uint64_t)key * NET_LANES + v + 0x9e3779b97f4a7c15ULL);
    /* While the store has room it keeps the route, and topo's table need not (a full store
     * stops growing: later routes go through topo's table, so no path is stored twice). */
    bool keep = n->store_n < NET_STORE_MAX;
    int rc = keep ? topo_route_unlisted(n->t, src_gpu, dst_gpu, hash, &pth, &hops)
                  : topo_route(n->t, src_gpu, dst_gpu, hash, &pth, &hops);
    DT_ASSERT(rc == DT_OK);
    DT_ASSERT(hops <= NET_MAX_HOPS);
    route_lane ln = {.path = pth, .n_hops = hops, .lat = path_latency(n->t, pth, hops), .bl = -1};
    double bw = INFINITY;
    for (int h = 0; h < hops; h++)
        if (n->links[pth[h]].bw < bw) {
            bw = n->links[pth[h]].bw;
            ln.bl = pth[h];
        }
    if (!keep) {
        n->scratch = ln;
        return &n->scratch;
    }
    src_store *ss = &n->store[src_gpu];
    int dl = dst_gpu * NET_LANES + (int)v;
    if (2 * (ss->n + 1) > ss->cap) store_grow(ss);
    int k = store_slot(dl, ss->cap);
    while (ss->e[k].dst_lane >= 0) k = (k + 1) & (ss->cap - 1);
    ss->e[k] = (stored_lane){.dst_lane = dl, .multi = -1, .r = ln};
    ss->n++;
    n->store_n++;
    return &ss->e[k].r;
}

/* The stored entry of lane v of (src, dst), NULL when the store does not hold it. */
static inline stored_lane *stored_entry(net *n, int src_gpu, int dst_gpu, unsigned v)
{
    src_store *ss = &n->store[src_gpu];
    int dl = dst_gpu * NET_LANES + (int)v;
    if (ss->cap)
        for (int k = store_slot(dl, ss->cap); ss->e[k].dst_lane >= 0; k = (k + 1) & (ss->cap - 1))
            if (ss->e[k].dst_lane == dl) return &ss->e[k];
    return NULL;
}

/* The route of lane v of pair (src, dst), from the store or routed now. Valid until the next call (the store may grow, the scratch be reused). */
static inline const route_lane *lane_get(net *n, int64_t key, unsigned v, int src_gpu, int dst_gpu)
{
    const stored_lane *e = stored_entry(n, src_gpu, dst_gpu, v);
    return e ? &e->r : lane_miss(n, key, v, src_gpu, dst_gpu);
}

/* The route from src to dst on ECMP lane `lane`, or (lane < 0) on the pair's next lane in
 * rotation (see net.h). */
__attribute__((always_inline)) static inline const route_lane *
next_route(net *n, int src_gpu, int dst_gpu, int lane)
{
    /* ECMP: successive transfers between one pair rotate over NET_LANES flow hashes of the
     * pair (as NCCL spreads a connection over several channels / queue pairs, each pinned
     * to a path by the 5-tuple hash). Deterministic. */
    int64_t key = (int64_t)src_gpu * n->t->n_gpus + dst_gpu;
    route_memo *m = &n->memo[mix64((uint64_t)key) & n->memo_mask];
    if (m->key != key) {
        m->key = key;
        m->next = 0;
    }
    unsigned v = lane >= 0 ? (unsigned)lane % NET_LANES : m->next++ % NET_LANES;
    return lane_get(n, key, v, src_gpu, dst_gpu);
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
    const route_lane *ln = next_route(n, src_gpu, dst_gpu, -1);
    const int *path = ln->path;
    int nh = ln->n_hops;
    sim_time_t lat = ln->lat;

    if (n->cfg.mode == NET_ANALYTIC || bytes == 0 || nh == 0) {
        sim_time_t dt = (bytes > 0 && nh > 0) ? ps_ceil(bytes / lane_bw(n, ln)) : 0;
        n->st.flows_finished++;
        n->st.bytes_delivered += bytes;
        if (n->obs && bytes > 0)
            for (int h = 0; h < nh; h++)
                n->obs(n->obs_ctx, path[h], now, sim_time_add(now, dt), bytes, n->tag);
        sim_schedule_in(n->eng, now, sim_time_add(dt, lat), done_kind, done_id, done_data);
        return;
    }

    flow_start(n, path, nh, NULL, 1, 1.0, lat, lane_bw(n, ln), ln->bl, bytes, NULL, done_kind,
               done_id, done_data);
}

/* What next_route does to the memo, without routing: the pair's entry is (re)claimed, so
 * the lane rotation of whatever pair held the slot restarts exactly as if the route had been
 * looked up (the ring cache must not change which lanes later transfers take). */
static inline void memo_touch(net *n, int src_gpu, int dst_gpu)
{
    int64_t key = (int64_t)src_gpu * n->t->n_gpus + dst_gpu;
    route_memo *m = &n->memo[mix64((uint64_t)key) & n->memo_mask];
    if (m->key != key) {
        m->key = key;
        m->next = 0;
    }
}

static ring_route *ring_lookup(net *n, int n_pairs, const int *src, const int *dst)
{
    uint64_t h = (uint64_t)n_pairs;
    for (int i = 0; i < n_pairs; i++)
        h = mix64(h ^ (((uint64_t)(uint32_t)src[i] << 32) | (uint32_t)dst[i])) + 0x9e37;
    for (int i = 0; i < n->n_rings; i++) {
        ring_route *r = &n->rings[i];
        if (r->h == h && r->n_pairs == n_pairs &&
            !memcmp(r->src, src, (size_t)n_pairs * sizeof *src) &&
            !memcmp(r->dst, dst, (size_t)n_pairs * sizeof *dst))
            return r;
    }
    if (n->ring_bytes > NET_RING_CACHE_BYTES) {
        for (int i = 0; i < n->n_rings; i++) {
            free(n->rings[i].src);
            for (int l = 0; l < NET_LANES; l++) {
                free(n->rings[i].path[l]);
                free(n->rings[i].plat[l]);
            }
        }
        n->n_rings = 0;
        n->ring_bytes = 0;
    }
    if (n->n_rings == n->cap_rings) {
        n->cap_rings = n->cap_rings ? 2 * n->cap_rings : 16;
        n->rings = dt_xrealloc(n->rings, (size_t)n->cap_rings * sizeof *n->rings);
    }
    ring_route *r = &n->rings[n->n_rings++];
    memset(r, 0, sizeof *r);
    r->h = h;
    r->n_pairs = n_pairs;
    r->src = dt_xmalloc((size_t)n_pairs * 2 * sizeof *r->src);
    r->dst = r->src + n_pairs;
    memcpy(r->src, src, (size_t)n_pairs * sizeof *src);
    memcpy(r->dst, dst, (size_t)n_pairs * sizeof *dst);
    n->ring_bytes += (size_t)n_pairs * 2 * sizeof(int) + sizeof *r;
    return r;
}

/* Per-pair route figures of a ring lane, one block: latencies, then bottlenecks, then hops. */
static inline double *pinfo_bw(sim_time_t *lat, int n_pairs) { return (double *)(lat + n_pairs); }
static inline int *pinfo_hops(sim_time_t *lat, int n_pairs)
{
    return (int *)(pinfo_bw(lat, n_pairs) + n_pairs);
}
#define PINFO_BYTES(np) ((size_t)(np) * (sizeof(sim_time_t) + sizeof(double) + sizeof(int)))

/* A transfer over a concatenated path (send_ring, send_relay) that nothing contends with
 * (analytic mode, or no bytes): `pairs` x `bytes` delivered, each link observed over the
 * bandwidth phase dt, the completion after dt + lat. Frees path. */
static void deliver_now(net *n, int *path, int nh, int pairs, double bytes, sim_time_t dt,
                        sim_time_t lat, uint32_t done_kind, uint32_t done_id, uint64_t done_data)
{
    sim_time_t now = sim_now(n->eng);
    n->st.flows_finished++;
    n->st.bytes_delivered += bytes * pairs;
    if (n->obs && bytes > 0)
        for (int h = 0; h < nh; h++)
            n->obs(n->obs_ctx, path[h], now, sim_time_add(now, dt), bytes, n->tag);
    sim_schedule_in(n->eng, now, sim_time_add(dt, lat), done_kind, done_id, done_data);
    free(path);
}

/* The flow of a concatenated path (malloc'd; the flow's from here). A path too long for the
 * record is swapped for the interned copy, which lives as long as the network: the memo of
 * solves can then name it by its address (memo_key). Once the table is full the flow keeps its
 * own copy, and solves with it are not memoised. (A link the path crosses twice gets two
 * entries, so flow_start never takes the single-flow fast path for it: the solver charges
 * the rate twice there.) */
__attribute__((always_inline)) static inline void
start_concat(net *n, int *path, int nh, int pairs, double w, sim_time_t lat, double bw, int bl,
             double bytes, ring_gap *g, uint32_t done_kind, uint32_t done_id, uint64_t done_data)
{
    const int *ip = nh > NET_HOT_HOPS && n->smemo ? sm_paths_intern(n->paths, path, nh) : NULL;
    if (ip) {
        free(path);
        flow_start(n, ip, nh, NULL, pairs, w, lat, bw, bl, bytes, g, done_kind, done_id,
                   done_data);
        return;
    }
    flow_start(n, path, nh, path, pairs, w, lat, bw, bl, bytes, g, done_kind, done_id, done_data);
    /* (path is the flow's now: kept, or freed at once when short enough for the record) */
}

/* net_send_ring (steps = 0: one largest latency after the bytes) and net_send_ring_steps. */
static void send_ring(net *n, int n_pairs, const int *src_gpu, const int *dst_gpu, double bytes,
                      int steps, int lane, double weight, uint32_t done_kind, uint32_t done_id,
                      uint64_t done_data)
{
    DT_ASSERT(bytes >= 0 && n_pairs >= 1 && weight > 0 && weight <= 1 && steps >= 0);
    n->st.flows_started++;
    n->st.bytes_sent += bytes * n_pairs;
    /* The path is every pair's route end to end (a link two pairs cross appears twice: the
     * flow's rate is spent on it twice, which progressive filling honours per incidence). */
    int nh = 0, cap = 0, *path = NULL, bl = -1;
    sim_time_t lat = 0;
    double bw = INFINITY;
    ring_route *rr = lane >= 0 ? ring_lookup(n, n_pairs, src_gpu, dst_gpu) : NULL;
    int l0 = lane >= 0 ? lane % NET_LANES : 0;
    /* per pair: latency, bottleneck, hops (a stepped ring's gaps need them) */
    sim_time_t *pl = steps > 0 ? dt_xmalloc(PINFO_BYTES(n_pairs)) : NULL;
    if (rr && rr->path[l0] && (!pl || rr->plat[l0])) {
        for (int i = 0; i < n_pairs; i++)
            if (src_gpu[i] != dst_gpu[i]) memo_touch(n, src_gpu[i], dst_gpu[i]);
        nh = rr->nh[l0];
        path = dt_xmalloc(((size_t)nh + 1) * sizeof *path);
        memcpy(path, rr->path[l0], (size_t)nh * sizeof *path);
        lat = rr->lat[l0];
        bw = rr->bw[l0];
        bl = rr->bl[l0];
        if (pl) memcpy(pl, rr->plat[l0], PINFO_BYTES(n_pairs));
    } else {
        for (int i = 0; i < n_pairs; i++) {
            if (pl) {
                pl[i] = 0;
                pinfo_bw(pl, n_pairs)[i] = INFINITY;
                pinfo_hops(pl, n_pairs)[i] = 0;
            }
            if (src_gpu[i] == dst_gpu[i]) continue;
            const route_lane *ln = next_route(n, src_gpu[i], dst_gpu[i], lane);
            if (nh + ln->n_hops > cap) {
                cap = 2 * (nh + ln->n_hops) + 16;
                path = dt_xrealloc(path, (size_t)cap * sizeof *path);
            }
            memcpy(path + nh, ln->path, (size_t)ln->n_hops * sizeof *path);
            nh += ln->n_hops;
            if (ln->lat > lat) lat = ln->lat;
            if (lane_bw(n, ln) < bw) {
                bw = lane_bw(n, ln);
                bl = ln->bl;
            }
            if (pl) {
                pl[i] = ln->lat;
                pinfo_bw(pl, n_pairs)[i] = lane_bw(n, ln);
                pinfo_hops(pl, n_pairs)[i] = ln->n_hops;
            }
        }
        if (rr) {
            if (!rr->path[l0]) {
                rr->path[l0] = dt_xmalloc(((size_t)nh + 1) * sizeof *path);
                memcpy(rr->path[l0], path, (size_t)nh * sizeof *path);
                rr->nh[l0] = nh;
                rr->lat[l0] = lat;
                rr->bw[l0] = bw;
                rr->bl[l0] = bl;
                n->ring_bytes += (size_t)nh * sizeof *path;
            }
            if (pl && !rr->plat[l0]) {
                rr->plat[l0] = dt_xmalloc(PINFO_BYTES(n_pairs));
                memcpy(rr->plat[l0], pl, PINFO_BYTES(n_pairs));
                n->ring_bytes += PINFO_BYTES(n_pairs);
            }
        }
    }
    ring_gap *g = NULL;
    int analytic = n->cfg.mode == NET_ANALYTIC || bytes == 0 || nh == 0;
    if (pl) {
        /* Each pair's own rate alone: its route's bottleneck shared by the ring's lanes
         * (weight x bottleneck: the lanes of a pair share its first link), or in analytic
         * mode, where transfers do not share, the bottleneck itself. */
        g = dt_xmalloc(sizeof *g);
        *g = (ring_gap){.c = bytes / steps, .wr = analytic ? 1.0 : weight, .n_pairs = n_pairs,
                        .lat = pl, .bw = pinfo_bw(pl, n_pairs), .hops = pinfo_hops(pl, n_pairs),
                        .recheck = 1};
        for (int i = 0; i < n_pairs; i++) {
            if (g->hops[i] == 0) continue;
            /* until a solve says otherwise (alone: for good), the pairs at the bottleneck */
            if (g->bw[i] <= bw * (1 + 1e-12) && (double)pl[i] > g->a_tight) g->a_tight = (double)pl[i];
        }
        /* the gap of a flow alone (flow_start's fast path runs it at bw); a solve replaces it */
        g->gap_rate = bw;
        g->gap = gap_now(g, bw);
    }
    if (analytic) {
        sim_time_t dt = (bytes > 0 && nh > 0) ? ps_ceil(bytes / bw) : 0;
        if (g) {
            /* steps x the slowest pair's step, the bytes at the bottleneck's rate */
            double gsum = steps * gap_now(g, bw);
            lat = gsum < 9.0e18 ? (sim_time_t)llround(gsum) : SIM_TIME_MAX;
            gap_free(g);
        }
        deliver_now(n, path, nh, n_pairs, bytes, dt, lat, done_kind, done_id, done_data);
        return;
    }
    start_concat(n, path, nh, n_pairs, weight, lat, bw, bl, bytes, g, done_kind, done_id,
                 done_data);
}

/* Whether a lane's route (p, h) differs from lane 0's (p0, h0). */
static inline int lanes_differ(const int *p0, int h0, const int *p, int h)
{
    return h != h0 || (p != p0 && memcmp(p, p0, (size_t)h0 * sizeof *p0));
}

int net_pair_multipath(net *n, int src_gpu, int dst_gpu)
{
    /* through topo_route (its table is locked), not the net's store: the analytic cost models
     * that ask here may share one net between threads (the planner's jobs) */
    if (src_gpu == dst_gpu) return 0;
    const int *p0 = NULL;
    int h0 = 0;
    if (net_route_lane(n, src_gpu, dst_gpu, 0, &p0, &h0, NULL) != DT_OK) return 0;
    for (int v = 1; v < NET_LANES; v++) {
        const int *p = NULL;
        int h = 0;
        if (net_route_lane(n, src_gpu, dst_gpu, v, &p, &h, NULL) != DT_OK) return 0;
        if (lanes_differ(p0, h0, p, h)) return 1;
    }
    return 0;
}

/* net_pair_multipath through the net's own per-source store (flow mode's transfers: one
 * thread per net), which the transfer's routes then come from. */
__attribute__((always_inline)) static inline int pair_multipath_stored(net *n, int src_gpu,
                                                                   int dst_gpu)
{
    /* a pipeline stage sends to the same peer hundreds of times a step: the answer is kept
     * with the pair's lane 0 once its lanes are stored */
    stored_lane *e0 = stored_entry(n, src_gpu, dst_gpu, 0);
    if (e0 && e0->multi >= 0) return e0->multi;
    int64_t key = (int64_t)src_gpu * n->t->n_gpus + dst_gpu;
    /* copied out: a later look-up may grow the store and move its entries (not the paths) */
    const route_lane *l0 = lane_get(n, key, 0, src_gpu, dst_gpu);
    const int *p0 = l0->path;
    int h0 = l0->n_hops;
    int multi = 0;
    for (unsigned v = 1; v < NET_LANES && !multi; v++) {
        const route_lane *lv = lane_get(n, key, v, src_gpu, dst_gpu);
        multi = lanes_differ(p0, h0, lv->path, lv->n_hops);
    }
    e0 = stored_entry(n, src_gpu, dst_gpu, 0); /* the look-ups may have moved it */
    if (e0) e0->multi = multi;
    return multi;
}

/* Whether a route from a GPU of host h stays inside it: every node it enters is h's and none
 * is a NIC (the NVLink fabric; a route through a NIC is not the NVLink path PXN needs). */
static int path_inside_host(const topo *t, const int *path, int nh, int h)
{
    if (nh == 0) return 0;
    for (int k = 0; k < nh; k++) {
        const topo_node *v = &t->nodes[t->links[path[k]].dst];
        if (v->host != h || v->kind == TOPO_NIC) return 0;
    }
    return 1;
}

/* NCCL's PXN relay of a transfer between hosts, before the NVLink test: NCCL sends to a peer
 * through the NIC of the peer's rail (the local NIC of the same index as the peer's), from
 * the local GPU next to it. A host's GPUs stand for its rails by their order (the k-th GPU's
 * NIC is rail k, as the generators wire them and the ring layout of docs/collectives.md
 * assumes). -1 where none applies: no cfg.pxn, the sender on the receiver's rail already
 * (the receiver itself included), the receiver in the same host or on a rail the sender's host
 * lacks, a GPU outside hosts. *host: the sender's host. */
__attribute__((always_inline)) static inline int relay_candidate(const net *n, int src_gpu,
                                                                   int dst_gpu, int *host)
{
    if (!n->host_pos) return -1; /* no pxn, or no hosts */
    int p = n->host_pos[dst_gpu];
    /* (src == dst lands here too, as do a pipeline's sends, mostly) */
    if (p < 0 || p == n->host_pos[src_gpu]) return -1;
    const topo *t = n->t;
    int hs = t->nodes[t->gpu_node[src_gpu]].host, hd = t->nodes[t->gpu_node[dst_gpu]].host;
    if (hs < 0 || hs == hd || p >= n->host_start[hs + 1] - n->host_start[hs]) return -1;
    int r = n->host_gpus[n->host_start[hs] + p];
    *host = hs;
    return r != src_gpu ? r : -1;
}

/* The relay, with the NVLink test (ncclTopoGetNetDev's: the relay reached inside the host),
 * on the routes of the net's store (flow mode's transfers, one thread per net). */
__attribute__((always_inline)) static inline int pxn_relay(net *n, int src_gpu, int dst_gpu)
{
    int h, r = relay_candidate(n, src_gpu, dst_gpu, &h);
    if (r < 0) return -1;
    const route_lane *ln = lane_get(n, (int64_t)src_gpu * n->t->n_gpus + r, 0, src_gpu, r);
    return path_inside_host(n->t, ln->path, ln->n_hops, h) ? r : -1;
}

int net_pxn_relay(net *n, int src_gpu, int dst_gpu)
{
    int h, r = relay_candidate(n, src_gpu, dst_gpu, &h);
    const int *path = NULL;
    int nh = 0;
    if (r < 0 || net_route_lane(n, src_gpu, r, 0, &path, &nh, NULL) != DT_OK) return -1;
    return path_inside_host(n->t, path, nh, h) ? r : -1;
}

/* A transfer src -> relay -> dst as one flow over the route to the relay and the relay's
 * route on: the relay forwards chunk by chunk as they arrive (NCCL's proxy), so the bytes
 * move at the tighter link's rate and the latency is both routes' together. With `spread`,
 * where the relay's route has several equal-cost paths (through spines) in flow mode, the
 * relay spreads it over its NET_LANES lanes at once as net_send_spread does (a coupled flow
 * of NET_LANES concatenated paths, a quarter of the bytes each, weight 1/NET_LANES); without,
 * the relay's route is its next lane (net_send_p2p: a collective's step program). */
static void send_relay(net *n, int src_gpu, int relay, int dst_gpu, double bytes, int spread,
                       uint32_t done_kind, uint32_t done_id, uint64_t done_data)
{
    n->st.flows_started++;
    n->st.bytes_sent += bytes;
    spread = spread && n->cfg.mode == NET_FLOW && bytes > 0 &&
             pair_multipath_stored(n, relay, dst_gpu);
    int copies = spread ? NET_LANES : 1;
    const route_lane *a = next_route(n, src_gpu, relay, -1);
    int na = a->n_hops, bl = a->bl;
    double bw = lane_bw(n, a);
    int *first = dt_xmalloc((size_t)(na ? na : 1) * sizeof *first);
    memcpy(first, a->path, (size_t)na * sizeof *first);
    int *path = dt_xmalloc((size_t)copies * (na + NET_MAX_HOPS) * sizeof *path);
    int nh = 0;
    sim_time_t lat = 0;
    for (int c = 0; c < copies; c++) {
        const route_lane *b = next_route(n, relay, dst_gpu, -1); /* the relay's next lane */
        memcpy(path + nh, first, (size_t)na * sizeof *path);
        memcpy(path + nh + na, b->path, (size_t)b->n_hops * sizeof *path);
        sim_time_t lc = path_latency(n->t, path + nh, na + b->n_hops);
        if (lc > lat) lat = lc;
        nh += na + b->n_hops;
        if (lane_bw(n, b) < bw) {
            bw = lane_bw(n, b);
            bl = b->bl;
        }
    }
    free(first);
    if (n->cfg.mode == NET_ANALYTIC || bytes == 0) {
        sim_time_t dt = bytes > 0 ? ps_ceil(bytes / bw) : 0;
        deliver_now(n, path, nh, 1, bytes, dt, lat, done_kind, done_id, done_data);
        return;
    }
    start_concat(n, path, nh, copies, 1.0 / copies, lat, bw, bl, bytes / copies, NULL, done_kind,
                 done_id, done_data);
}

void net_send_spread(net *n, int src_gpu, int dst_gpu, double bytes, uint32_t done_kind,
                     uint32_t done_id, uint64_t done_data)
{
    int relay = pxn_relay(n, src_gpu, dst_gpu);
    if (relay >= 0) {
        send_relay(n, src_gpu, relay, dst_gpu, bytes, 1, done_kind, done_id, done_data);
        return;
    }
    if (n->cfg.mode == NET_FLOW && bytes > 0 && src_gpu != dst_gpu &&
        pair_multipath_stored(n, src_gpu, dst_gpu)) {
        int s[NET_LANES], d[NET_LANES];
        for (int v = 0; v < NET_LANES; v++) {
            s[v] = src_gpu;
            d[v] = dst_gpu;
        }
        /* lane -1: each copy takes the pair's next lane, so the four take all four */
        send_ring(n, NET_LANES, s, d, bytes / NET_LANES, 0, -1, 1.0 / NET_LANES, done_kind,
                  done_id, done_data);
        return;
    }
    net_send(n, src_gpu, dst_gpu, bytes, done_kind, done_id, done_data);
}

void net_send_p2p(net *n, int src_gpu, int dst_gpu, double bytes, uint32_t done_kind,
                  uint32_t done_id, uint64_t done_data)
{
    int relay = pxn_relay(n, src_gpu, dst_gpu);
    if (relay >= 0)
        send_relay(n, src_gpu, relay, dst_gpu, bytes, 0, done_kind, done_id, done_data);
    else
        net_send(n, src_gpu, dst_gpu, bytes, done_kind, done_id, done_data);
}

void net_send_ring(net *n, int n_pairs, const int *src_gpu, const int *dst_gpu, double bytes,
                   int lane, double weight, uint32_t done_kind, uint32_t done_id,
                   uint64_t done_data)
{
    send_ring(n, n_pairs, src_gpu, dst_gpu, bytes, 0, lane, weight, done_kind, done_id, done_data);
}

void net_send_ring_steps(net *n, int n_pairs, const int *src_gpu, const int *dst_gpu,
                         double bytes, int steps, int lane, double weight, uint32_t done_kind,
                         uint32_t done_id, uint64_t done_data)
{
    DT_ASSERT(steps >= 1);
    send_ring(n, n_pairs, src_gpu, dst_gpu, bytes, steps, lane, weight, done_kind, done_id,
              done_data);
}

/* Add fc's completion to the delivery group of its time, creating the group while there is
 * room; 0 when its time has no group (the caller schedules it alone). */
static int deliver_later(net *n, sim_time_t now, const flow_cold *fc)
{
    sim_time_t at = now > 0 && fc->tail > SIM_TIME_MAX - now ? SIM_TIME_MAX : now + fc->tail;
    int g = 0;
    while (g < n->n_dg && n->dg_t[g] != at) g++;
    if (g == n->n_dg) {
        if (g == NET_DELIVER_GROUPS) return 0;
        if (n->free_dl < 0) {
            int old = n->n_dl, c = old ? 2 * old : 8;
            n->dl = dt_xrealloc(n->dl, (size_t)c * sizeof *n->dl);
            memset(n->dl + old, 0, (size_t)(c - old) * sizeof *n->dl);
            for (int i = c - 1; i >= old; i--) {
                n->dl[i].next_free = n->free_dl;
                n->free_dl = i;
            }
            n->n_dl = c;
        }
        int id = n->free_dl;
        n->free_dl = n->dl[id].next_free;
        n->dl[id].n = 0;
        n->dg_id[g] = id;
        n->dg_t[g] = at;
        n->n_dg++;
    }
    net_delivery *d = &n->dl[n->dg_id[g]];
    if (d->n == d->cap) {
        d->cap = d->cap ? 2 * d->cap : 64;
        d->kind = dt_xrealloc(d->kind, (size_t)d->cap * sizeof *d->kind);
        d->id = dt_xrealloc(d->id, (size_t)d->cap * sizeof *d->id);
        d->data = dt_xrealloc(d->data, (size_t)d->cap * sizeof *d->data);
    }
    d->kind[d->n] = fc->done_kind;
    d->id[d->n] = fc->done_id;
    d->data[d->n++] = fc->done_data;
    return 1;
}

static void on_deliver(void *model, sim_engine *eng, const sim_event *ev)
{
    net *n = model;
    int id = (int)ev->id;
    /* (n->dl is not reallocated while this runs: deliveries are only created in on_batch) */
    net_delivery *d = &n->dl[id];
    for (int i = 0; i < d->n; i++) sim_dispatch(eng, d->kind[i], d->id[i], d->data[i]);
    d->n = 0;
    d->next_free = n->free_dl;
    n->free_dl = id;
}

/* Flow id's last byte has left: off its links, and the caller's completion one path latency
 * later. Links flagged in n->lempty lose all their flows in the batch being handled: their
 * entries are dropped by count (nobody reads them again). */
static inline void depart(net *n, sim_engine *eng, int id, sim_time_t now)
{
    net_flow *f = &n->flows[id];
    flow_cold *fc = &n->cold[id];
    if (f->stepped) {
        /* the last steps at the current rate; their gaps and all earlier ones pass now */
        ring_gap *g = n->gap[id];
        gap_accrue(n, id, f->remaining);
        fc->tail = g->acc < 9.0e18 ? (sim_time_t)llround(g->acc) : SIM_TIME_MAX;
        gap_free(g);
        n->gap[id] = NULL;
        f->stepped = 0;
    }
    if (f->bneck >= 0) n->links[f->bneck].n_bneck--;
    const int *slot = flow_slots(n, id);
    const int *path = flow_path(n, id);
    for (int h = 0; h < f->n_hops; h++) {
        int l = path[h];
        net_link *lk = &n->links[l];
        if (n->lempty[l]) {
            lk->n--;
        } else {
            int s = slot[h];
            link_entry last = lk->e[--lk->n];
            if (s != lk->n) {
            lk->e[s] = last;
            /* the moved flow's slot, without reading its record unless it owns its slots
             * (a cache miss per hop saved: a quarter of a direct all-reduce's time) */
                if (last.hop & LE_COLD_SLOTS)
                    n->cold[last.flow].u.slot[last.hop & LE_HOP_MASK] = s;
                else if (last.hop & LE_OWN_SLOTS)
                    n->cold[last.flow].u.x.xslot[last.hop & LE_HOP_MASK] = s;
                else
                    n->fslot[(size_t)last.flow * NET_INLINE_HOPS + last.hop] = s;
            }
        }
        /* If no remaining flow is bottlenecked on this link, every remaining flow keeps a
         * saturated link on which it is the fastest: the allocation is still max-min fair
         * and nothing needs re-solving. */
        if (lk->n > 0 && (DTSIM_NET_NOSKIP || lk->n_bneck > 0)) mark_dirty(n, l, DIRTY_DEPART);
        if (lk->n == 0) lk->busy += now - lk->busy_since;
        if (n->obs) n->obs(n->obs_ctx, l, fc->t_start, now, fc->bytes, fc->tag);
    }
    n->st.flows_finished++;
    n->st.bytes_delivered += fc->bytes * fc->pairs;
    if (!n->in_batch || fc->tail == 0 || !deliver_later(n, now, fc))
        sim_schedule_in(eng, now, fc->tail, fc->done_kind, fc->done_id, fc->done_data);
    if (f->n_hops > NET_HOT_HOPS) {
        if (f->owns_path) free((int *)f->p.path);
        free(fc->u.x.xslot); /* NULL unless coupled or long */
    }
    f->owns_path = 0;
    f->version++;
    f->active = 0;
    n->free_stack[n->n_free++] = id;
    n->active--;
}

static void on_done(void *model, sim_engine *eng, const sim_event *ev)
{
    net *n = model;
    if ((uint32_t)ev->data != n->flows[ev->id].version) return; /* stale: the rate changed since */
    depart(n, eng, (int)ev->id, ev->time);
}

static void on_batch(void *model, sim_engine *eng, const sim_event *ev)
{
    net *n = model;
    net_batch *b = &n->batches[ev->id];
    if (b->stale == 0)
        for (int i = 0; i < b->n_lk; i++)
            if (n->links[b->lk[i]].n == b->lcnt[i]) n->lempty[b->lk[i]] = 1;
    n->in_batch = 1;
    n->n_dg = 0;
    for (int i = 0; i < b->n; i++) {
        if (i + PF_AHEAD < b->n) {
            uint32_t q = b->fid[i + PF_AHEAD];
            PF(&n->flows[q]);
            PF(&n->cold[q]);
        }
        net_flow *f = &n->flows[b->fid[i]];
        if (f->version != b->ver[i]) continue; /* stale */
        f->batch = -1;
        depart(n, eng, (int)b->fid[i], ev->time);
    }
    n->in_batch = 0;
    for (int g = 0; g < n->n_dg; g++) sim_schedule(eng, n->dg_t[g], n->k_deliver, (uint32_t)n->dg_id[g], 0);
    for (int i = 0; i < b->n_lk; i++) n->lempty[b->lk[i]] = 0;
    b->n = b->n_lk = 0;
    b->next_free = n->free_batch;
    n->free_batch = (int)ev->id;
}

static void grow_int(int **a, int *cap, int need)
{
    if (need <= *cap) return;
    int c = *cap ? *cap : 256;
    while (c < need) c *= 2;
    *a = dt_xrealloc(*a, (size_t)c * sizeof **a);
    *cap = c;
}

/* What sim_schedule_in(now, dt) schedules at. */
static inline sim_time_t finish_at(sim_time_t now, sim_time_t dt)
{
    return now > 0 && dt > SIM_TIME_MAX - now ? SIM_TIME_MAX : now + dt;
}

static int batch_alloc(net *n)
{
    if (n->free_batch < 0) {
        int old = n->n_batches, c = old ? 2 * old : 16;
        n->batches = dt_xrealloc(n->batches, (size_t)c * sizeof *n->batches);
        memset(n->batches + old, 0, (size_t)(c - old) * sizeof *n->batches);
        for (int i = c - 1; i >= old; i--) {
            n->batches[i].next_free = n->free_batch;
            n->free_batch = i;
        }
        n->n_batches = c;
    }
    int id = n->free_batch;
    net_batch *b = &n->batches[id];
    n->free_batch = b->next_free;
    b->n = b->n_lk = b->stale = 0;
    return id;
}

static void ht_grow(net *n, int ng)
{
    int c = n->ht_cap ? 2 * n->ht_cap : 64;
    while (c < 2 * ng) c *= 2;
    n->ht = dt_xrealloc(n->ht, (size_t)c * sizeof *n->ht);
    n->ht_gen = dt_xrealloc(n->ht_gen, (size_t)c * sizeof *n->ht_gen);
    n->ht_cap = c;
    memset(n->ht_gen, 0, (size_t)c * sizeof *n->ht_gen);
    n->gen = 1;
    for (int g = 0; g < ng; g++) {
        int k = (int)(mix64((uint64_t)n->g_t[g]) & (uint64_t)(c - 1));
        while (n->ht_gen[k] == n->gen) k = (k + 1) & (c - 1);
        n->ht[k] = g;
        n->ht_gen[k] = n->gen;
    }
}

/* Schedule the completions of the m flows the recompute just re-rated (n->rs_i: component
 * indices, n->rs_t: finish times, versions already bumped), grouped by finish time: a time
 * with one flow gets its own data-done event, one with several a batch (net_batch). Every
 * event scheduled here takes the next sequence number, so the grouping changes no order. */
static void emit_finishes(net *n, int m)
{
    if (m == 0) return;
    if (m == 1 || n->no_batch) {
        for (int k = 0; k < m; k++) {
            int fid = n->cf[n->rs_i[k]];
            sim_schedule(n->eng, n->rs_t[k], n->k_done, (uint32_t)fid, n->flows[fid].version);
        }
        return;
    }
    int ng = 0;
    if (n->ht_cap == 0 || n->gen == UINT32_MAX) ht_grow(n, 0);
    else n->gen++;
    int last = -1; /* the group of the previous flow: usually the next one's too */
    for (int k = 0; k < m; k++) {
        sim_time_t t = n->rs_t[k];
        n->rs_next[k] = -1;
        if (last >= 0 && n->g_t[last] == t) {
            n->rs_next[n->g_tail[last]] = k;
            n->g_tail[last] = k;
            n->g_cnt[last]++;
            continue;
        }
        int mask = n->ht_cap - 1, h = (int)(mix64((uint64_t)t) & (uint64_t)mask), g = -1;
        while (n->ht_gen[h] == n->gen && n->g_t[g = n->ht[h]] != t) {
            h = (h + 1) & mask;
            g = -1;
        }
        if (g >= 0) {
            n->rs_next[n->g_tail[g]] = k;
            n->g_tail[g] = k;
            n->g_cnt[g]++;
            last = g;
            continue;
        }
        if (ng == n->cap_g) {
            n->cap_g = n->cap_g ? 2 * n->cap_g : 64;
            n->g_t = dt_xrealloc(n->g_t, (size_t)n->cap_g * sizeof *n->g_t);
            n->g_head = dt_xrealloc(n->g_head, (size_t)n->cap_g * sizeof *n->g_head);
            n->g_tail = dt_xrealloc(n->g_tail, (size_t)n->cap_g * sizeof *n->g_tail);
            n->g_cnt = dt_xrealloc(n->g_cnt, (size_t)n->cap_g * sizeof *n->g_cnt);
        }
        g = ng++;
        n->g_t[g] = t;
        n->g_head[g] = n->g_tail[g] = k;
        n->g_cnt[g] = 1;
        n->ht[h] = g;
        n->ht_gen[h] = n->gen;
        last = g;
        if (2 * ng > n->ht_cap) ht_grow(n, ng);
    }
    for (int g = 0; g < ng; g++) {
        int k = n->g_head[g];
        if (n->g_cnt[g] == 1) {
            int fid = n->cf[n->rs_i[k]];
            sim_schedule(n->eng, n->g_t[g], n->k_done, (uint32_t)fid, n->flows[fid].version);
            continue;
        }
        int bid = batch_alloc(n);
        net_batch *b = &n->batches[bid];
        if (n->g_cnt[g] > b->cap) {
            b->cap = n->g_cnt[g];
            b->fid = dt_xrealloc(b->fid, (size_t)b->cap * sizeof *b->fid);
            b->ver = dt_xrealloc(b->ver, (size_t)b->cap * sizeof *b->ver);
        }
        int nt = 0, inc = 0;
        for (int q = k; q >= 0; q = n->rs_next[q]) {
            int i = n->rs_i[q];
            inc += n->fstart[i + 1] - n->fstart[i];
        }
        /* Links to empty by count are worth finding when the members are short transfers
         * sharing links (a direct collective's); coupled ring flows crossing thousands of
         * links each would pay a count per incidence for nothing. */
        int count_links = inc <= NET_INLINE_HOPS * n->g_cnt[g];
        for (; k >= 0; k = n->rs_next[k]) {
            if (k + PF_AHEAD < m) PF(&n->flows[n->cf[n->rs_i[k + PF_AHEAD]]]); /* (one group: the next ones) */
            int i = n->rs_i[k], fid = n->cf[i];
            net_flow *f = &n->flows[fid];
            f->batch = bid;
            b->fid[b->n] = (uint32_t)fid;
            b->ver[b->n++] = f->version;
            if (count_links)
                for (int j = n->fstart[i]; j < n->fstart[i + 1]; j++) {
                    int l = n->flinks[j];
                    if (n->lcnt[l]++ == 0) n->ltouch[nt++] = l;
                }
        }
        if (nt > b->cap_lk) {
            b->cap_lk = nt;
            b->lk = dt_xrealloc(b->lk, (size_t)b->cap_lk * sizeof *b->lk);
            b->lcnt = dt_xrealloc(b->lcnt, (size_t)b->cap_lk * sizeof *b->lcnt);
        }
        for (int q = 0; q < nt; q++) {
            b->lk[q] = n->cl[n->ltouch[q]];
            b->lcnt[q] = n->lcnt[n->ltouch[q]];
            n->lcnt[n->ltouch[q]] = 0;
        }
        b->n_lk = nt;
        sim_schedule(n->eng, n->g_t[g], n->k_batch, (uint32_t)bid, 0);
    }
}

/* The memo key of the component the walk just collected (cf, in walk order, and n->roots), in
 * n->tok; its length, or 0 when a flow in it owns its path (not interned: its address could
 * come back with other links). The solve and what on_recompute does with its result read: the
 * local link numbering, each link's capacity and entry count, each flow's local link list and
 * weight. The walk numbers links in the order it first meets them: each walk's first link, then
 * each flow's path as the flow is met. So the sequence (per walk: its first link, then per flow
 * its path and weight) determines them all: capacities are the links' own (fixed from
 * net_create), a component link's entries are its component flows' hops. A path is its links
 * when it fits the record, else its address and length: the route store's paths (topo_route:
 * valid and unchanged until topo_destroy) and interned ones (until net_destroy) never change.
 * Words: a walk's first link l as l << 2 | 1; a short path as its length << 2 | 2 and one word
 * per link; a long path as its address (4-aligned: low bits 0) and its length; then the weight's
 * bits. The first word of each item says what the item is and how long, so two keys are equal
 * word for word exactly when their sequences are. O(flows + walks), against O(incidences) for
 * the problem itself: a large solve's key is about 300 words for 17,000 incidences. */
static int memo_key(net *n, int nf)
{
    int ntok = 0;
    for (int r = 0; r < n->n_roots; r++) {
        int f_end = r + 1 < n->n_roots ? n->roots[2 * r + 3] : nf;
        /* at most: the walk's word, then per flow a short path's length word, its links and
         * the weight (a long path's three words are fewer) */
        int most = ntok + 1 + (NET_HOT_HOPS + 2) * (f_end - n->roots[2 * r + 1]);
        if (most > n->cap_tok) {
            n->cap_tok = 2 * most;
            n->tok = dt_xrealloc(n->tok, (size_t)n->cap_tok * sizeof *n->tok);
        }
        uint64_t *t = n->tok;
        t[ntok++] = (uint64_t)n->roots[2 * r] << 2 | 1;
        for (int i = n->roots[2 * r + 1]; i < f_end; i++) {
            const net_flow *f = &n->flows[n->cf[i]];
            int nh = f->n_hops;
            if (nh <= NET_HOT_HOPS) {
                t[ntok++] = (uint64_t)nh << 2 | 2;
                for (int h = 0; h < nh; h++) t[ntok++] = (uint32_t)f->p.link[h];
            } else {
                if (f->owns_path) return 0;
                uint64_t a = (uint64_t)(uintptr_t)f->p.path;
                DT_ASSERT((a & 3) == 0);
                t[ntok++] = a;
                t[ntok++] = (uint64_t)nh;
            }
            uint64_t w;
            memcpy(&w, &f->w, sizeof w);
            t[ntok++] = w;
        }
    }
    return ntok;
}

static inline void set_bit(unsigned char *b, int j, int v)
{
    b[j >> 3] = (unsigned char)((b[j >> 3] & ~(1u << (j & 7))) | (unsigned)v << (j & 7));
}

static void on_recompute(void *model, sim_engine *eng, const sim_event *ev)
{
    net *n = model;
    sim_time_t now = ev->time;
    n->recompute_pending = 0;
    uint32_t ep = ++n->epoch;
    int nf = 0, nl = 0, ninc = 0, weighted = 0;
    n->n_roots = 0;

    /* Walk the components touching dirty links, collecting each flow's links as local indices
     * (a link gets its index when first met). Scratch arrays grow to the largest component
     * seen and are reused; the link lists (cl, stack) hold each link at most once per walk,
     * so they are sized for every link once, and the walk does not check them per link. */
    grow_int(&n->cl, &n->cap_cl, n->n_links);
    grow_int(&n->stack, &n->cap_stack, n->n_links);
    if (n->cap_cl > n->cap_ls) {
        n->cap_ls = n->cap_cl;
        n->cap = dt_xrealloc(n->cap, (size_t)n->cap_ls * sizeof *n->cap);
        n->used = dt_xrealloc(n->used, (size_t)n->cap_ls * sizeof *n->used);
        n->lnum = dt_xrealloc(n->lnum, (size_t)n->cap_ls * sizeof *n->lnum);
        n->sat = dt_xrealloc(n->sat, (size_t)n->cap_ls);
    }
    /* A link's capacity and entry count are taken when the walk first meets it, from the
     * record it reads then anyway (a second pass over the component's links missed the cache
     * on each: thousands per solve of a coupled ring). Every entry of a component link is a
     * flow of the component: its count is the solver's incidence count (mm_solve_counted). */
    for (int d = 0; d < n->n_dirty; d++) {
        int l0 = n->dirty[d];
        int why = n->links[l0].dirty;
        n->links[l0].dirty = 0;
        if (n->lmark[l0].mark == ep || n->links[l0].n == 0) continue;
        /* Departures only, and (now that the whole batch of simultaneous departures is in)
         * nobody left is bottlenecked here: the skip rule of on_done holds for the batch. */
        if (why == DIRTY_DEPART && n->links[l0].n_bneck == 0 && !DTSIM_NET_NOSKIP) continue;
        int sp = 0;
        if (n->n_roots == n->cap_roots) {
            n->cap_roots = n->cap_roots ? 2 * n->cap_roots : 16;
            n->roots = dt_xrealloc(n->roots, (size_t)n->cap_roots * 2 * sizeof *n->roots);
        }
        n->roots[2 * n->n_roots] = l0;
        n->roots[2 * n->n_roots++ + 1] = nf;
        n->lmark[l0] = (link_mark){ep, nl, n->links[l0].n};
        n->cap[nl] = n->links[l0].bw;
        n->lnum[nl] = n->links[l0].n;
        n->cl[nl++] = l0;
        n->stack[sp++] = l0;
        while (sp > 0) {
            int lid = n->stack[--sp];
            net_link *lk = &n->links[lid];
            /* Scan only while some entry's flow is unmet: `left` counts them (each flow met
             * takes its hops off its links' counts below), so a link whose flows were all met
             * through other links is not scanned, and a scan stops at its last unmet flow.
             * The scan would have found nothing more: the walk's order, and so every local
             * index and the solve, stay as they were. Coupled rings cross thousands of links
             * that carry the same few flows: most of them need no scan. */
            const int *left = &n->lmark[lid].left;
            for (int k = 0; k < lk->n && *left > 0; k++) {
                if (k + PF_AHEAD < lk->n) {
                    int q = lk->e[k + PF_AHEAD].flow;
                    PF(&n->fmark[q]);
                    PF(&n->flows[q]);
                }
                int fid = lk->e[k].flow;
                if (n->fmark[fid] == ep) continue;
                n->fmark[fid] = ep;
                const net_flow *f = &n->flows[fid];
                const int *fp = f->n_hops <= NET_HOT_HOPS ? f->p.link : f->p.path;
                grow_int(&n->cf, &n->cap_cf, nf + 2);
                grow_int(&n->fstart, &n->cap_fs, nf + 2);
                grow_int(&n->flinks, &n->cap_inc, ninc + f->n_hops);
                if (nf + 1 > n->cap_rate) {
                    n->cap_rate = n->cap_cf;
                    n->rate = dt_xrealloc(n->rate, (size_t)n->cap_rate * sizeof *n->rate);
                    n->bn = dt_xrealloc(n->bn, (size_t)n->cap_rate * sizeof *n->bn);
                    n->wt = dt_xrealloc(n->wt, (size_t)n->cap_rate * sizeof *n->wt);
                }
                n->wt[nf] = f->w; /* read now: this pass has the record in cache */
                weighted |= f->w != 1.0;
                n->cf[nf] = fid;
                n->fstart[nf++] = ninc;
                int nh = f->n_hops; /* (a bit-field: read once, not per hop) */
                for (int h = 0; h < nh; h++) {
                    int m = fp[h];
                    link_mark *lm = &n->lmark[m];
                    if (lm->mark != ep) {
                        const net_link *lk2 = &n->links[m];
                        *lm = (link_mark){ep, nl, lk2->n};
                        n->cap[nl] = lk2->bw;
                        n->lnum[nl] = lk2->n;
                        n->cl[nl++] = m;
                        n->stack[sp++] = m;
                    }
                    lm->left--;
                    n->flinks[ninc++] = lm->local; /* local link index */
                }
            }
        }
    }
    n->n_dirty = 0;
    if (nf == 0) return;
    n->fstart[nf] = ninc;

    /* The component is first looked up in the memo: a hit hands back the rates, bottlenecks,
     * saturated links and largest utilisation the same problem gave before (the same numbers,
     * so the same events follow) instead of solving; a miss is solved and stored. */
    int ntok = 0;
    uint64_t key_h = 0;
    const sm_result *hit = NULL;
    if (n->smemo && ninc >= n->smemo_min_inc && nf <= NET_SMEMO_MAX_FLOWS &&
        (ntok = memo_key(n, nf)) > 0) {
        n->smemo_keyed++;
        key_h = sm_hash(n->tok, ntok);
        hit = sm_find(n->smemo, key_h, n->tok, ntok);
        DT_ASSERT(!hit || (hit->nf == nf && hit->nl == nl));
    }
    const int *cls = NULL, *rep = NULL, *ufs = n->fstart, *ufl = n->flinks;
    int dd = 0;
    if (hit) {
        n->smemo_hits++;
        memcpy(n->rate, hit->rate, (size_t)nf * sizeof *n->rate);
        memcpy(n->bn, hit->bneck, (size_t)nf * sizeof *n->bn);
    } else {
        mm_solve_counted(n->mm, nl, n->cap, nf, n->fstart, n->flinks, weighted ? n->wt : NULL,
                         n->lnum, n->rate, n->bn);
        for (int j = 0; j < nl; j++) n->used[j] = 0;
        dd = mm_dedup_view(n->mm, &cls, &rep, &ufs, &ufl);
    }
    /* Links' loads: each flow's rate added to its links, in flow order. Where the solver
     * dropped duplicate links, to the links it kept only (the reduced lists keep each flow's
     * kept links, repeats included, so a kept link gets the same additions in the same order),
     * and a dropped link takes its representative's sum, bit for bit its own (the same flows in
     * the same order): most of a coupled ring's links are dropped ones. */
    if (nf > n->cap_rs) {
        n->cap_rs = n->cap_cf;
        n->rs_i = dt_xrealloc(n->rs_i, (size_t)n->cap_rs * sizeof *n->rs_i);
        n->rs_next = dt_xrealloc(n->rs_next, (size_t)n->cap_rs * sizeof *n->rs_next);
        n->rs_t = dt_xrealloc(n->rs_t, (size_t)n->cap_rs * sizeof *n->rs_t);
    }
    if (nl > n->cap_lc) {
        n->cap_lc = n->cap_cl;
        n->lcnt = dt_xrealloc(n->lcnt, (size_t)n->cap_lc * sizeof *n->lcnt);
        n->ltouch = dt_xrealloc(n->ltouch, (size_t)n->cap_lc * sizeof *n->ltouch);
        memset(n->lcnt, 0, (size_t)n->cap_lc * sizeof *n->lcnt);
    }
    int m = 0; /* flows rescheduled */
    int stepped = 0; /* some stepped flow is in the component */
    n->st.solves++;
    n->st.solved_flows += (uint64_t)nf;

    for (int i = 0; i < nf; i++) {
        if (i + PF_AHEAD < nf) PF(&n->flows[n->cf[i + PF_AHEAD]]);
        int fid = n->cf[i];
        net_flow *f = &n->flows[fid];
        double r = n->rate[i];
        if (!hit) /* (a hit's loads are in the memo as far as they are read) */
            for (int j = ufs[i]; j < ufs[i + 1]; j++) n->used[ufl[j]] += r;
        int b = n->bn[i] >= 0 ? n->cl[n->bn[i]] : -1;
        if (f->stepped) {
            stepped = 1;
            if (f->rate > 0) {
                /* the steps done since t_last took the gaps of the rate and sharing until now */
                double rem = f->remaining - f->rate * sim_time_to_s(now - f->t_last);
                rem = rem > 0 ? rem : 0;
                gap_accrue(n, fid, f->remaining - rem);
                f->remaining = rem;
                f->t_last = now;
            }
        }
        if (b != f->bneck) {
            if (f->bneck >= 0) n->links[f->bneck].n_bneck--;
            if (b >= 0) n->links[b].n_bneck++;
            f->bneck = b;
        }
        /* Unchanged up to rounding (a re-solve of the same sharing can land one ulp away):
         * keep the rate and the scheduled finish rather than churn events by a picosecond. */
        if (fabs(r - f->rate) <= 1e-12 * r) continue;
        double rem = f->remaining - f->rate * sim_time_to_s(now - f->t_last);
        f->remaining = rem > 0 ? rem : 0;
        f->t_last = now;
        f->rate = r;
        n->st.rate_updates++;
        if (f->batch >= 0) { /* its pending completion is a batch member: stale from now */
            n->batches[f->batch].stale++;
            f->batch = -1;
        }
        f->version++;
        n->rs_i[m] = i;
        n->rs_t[m++] = finish_at(now, ps_ceil(f->remaining / f->rate));
    }
    emit_finishes(n, m);
    if (dd)
        for (int j = 0; j < nl; j++)
            if (cls[j] >= 0 && rep[cls[j]] != j) n->used[j] = n->used[rep[cls[j]]];
    if (stepped) {
        /* Which links are saturated, once per link rather than once per stepped flow's hop.
         * gap_tight is a function of the flow's rate and of its links' saturation alone, and
         * every solve that touches one of a flow's links has the whole flow in it (a component
         * holds every flow of its links and every link of its flows). So a stepped flow whose
         * rate is the one its gap was last taken at (gap_rate), and none of whose links changed
         * saturation since the last solve that had a stepped flow on them (lsat), would get
         * the a_tight it has: skipping it changes nothing. A flow never looked at (recheck) is
         * looked at. Most solves move a few rates and flip a few links; gap_tight walked every
         * hop of every stepped flow (64-pair rings: hundreds of hops each) in each of them. */
        for (int j = 0; j < nl; j++) {
            unsigned char sj = hit ? (hit->sat[j >> 3] >> (j & 7)) & 1
                                   : n->used[j] >= n->cap[j] * (1 - 1e-9);
            n->sat[j] = sj;
            int l = n->cl[j];
            if (sj == n->lsat[l]) continue;
            n->lsat[l] = sj;
            const net_link *lk = &n->links[l];
            for (int k = 0; k < lk->n; k++) { /* (a non-stepped flow's gap is NULL) */
                ring_gap *g = n->gap[lk->e[k].flow];
                if (g) g->recheck = 1;
            }
        }
        for (int i = 0; i < nf; i++) {
            int fid = n->cf[i];
            ring_gap *g = n->gap[fid];
            if (!n->flows[fid].stepped || (!g->recheck && n->flows[fid].rate == g->gap_rate))
                continue;
            g->recheck = 0;
            gap_tight(n, fid, n->flinks + n->fstart[i]);
        }
    }
    /* (a dropped link's load over its capacity is at most its representative's: the same load
     * over a capacity at least as large) */
    if (hit) {
        if (hit->umax > n->st.max_link_utilisation) n->st.max_link_utilisation = hit->umax;
        (void)eng;
        return;
    }
    double umax = 0; /* (note_util's maximum over the same links, for the memo) */
    for (int j = 0; j < nl; j++)
        if (!dd || cls[j] < 0 || rep[cls[j]] == j) {
            double u = note_util(n, n->used[j], n->cap[j]);
            if (u > umax) umax = u;
        }
    if (ntok > 0) {
        /* the saturation bits gap_tight reads, of every link, whether or not this component
         * has a stepped flow: whether a flow runs in steps is not in the key (the solve does
         * not read it), so a later hit may need them where this solve did not */
        if ((nl + 7) / 8 > n->cap_satbits) {
            n->cap_satbits = 2 * ((nl + 7) / 8);
            n->satbits = dt_xrealloc(n->satbits, (size_t)n->cap_satbits);
        }
        for (int j = 0; j < nl; j++)
            set_bit(n->satbits, j, n->used[j] >= n->cap[j] * (1 - 1e-9));
        sm_store(n->smemo, key_h, n->tok, ntok, n->rate, n->bn, nf, n->satbits, nl, umax);
    }
    (void)eng;
}

int net_check_fair(net *n, double rel_tol)
{
    /* One global solve over every flow in its bandwidth phase; allocation is fine here (a
     * test and debugging aid, O(all flows), never on the event path). */
    int nf = 0, k = 0;
    int *fs = dt_xmalloc((size_t)(n->n_flows_cap + 1) * sizeof *fs);
    int *ids = dt_xmalloc((size_t)(n->n_flows_cap + 1) * sizeof *ids);
    size_t inc = 1;
    for (int i = 0; i < n->n_flows_cap; i++)
        if (n->flows[i].active) inc += (size_t)n->flows[i].n_hops;
    int *fl = dt_xmalloc(inc * sizeof *fl);
    double *rate = dt_xmalloc((size_t)(n->n_flows_cap + 1) * sizeof *rate);
    double *w = dt_xmalloc((size_t)(n->n_flows_cap + 1) * sizeof *w);
    double *cap = dt_xmalloc((size_t)(n->n_links + 1) * sizeof *cap);
    for (int l = 0; l < n->n_links; l++) cap[l] = n->links[l].bw;
    for (int i = 0; i < n->n_flows_cap; i++) {
        const net_flow *f = &n->flows[i];
        if (!f->active) continue;
        fs[nf] = k;
        w[nf] = f->w;
        ids[nf++] = i;
        const int *fp = flow_path(n, i);
        for (int h = 0; h < f->n_hops; h++) fl[k++] = fp[h];
    }
    fs[nf] = k;
    mm_solver *m = mm_create();
    mm_solve_weighted(m, n->n_links, cap, nf, fs, fl, w, rate, NULL);
    mm_destroy(m);
    int bad = 0;
    for (int i = 0; i < nf; i++)
        if (fabs(rate[i] - n->flows[ids[i]].rate) > rel_tol * rate[i]) bad++;
    free(fs);
    free(ids);
    free(fl);
    free(rate);
    free(w);
    free(cap);
    return bad;
}
