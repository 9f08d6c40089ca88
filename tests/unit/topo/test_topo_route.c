/* test_topo_route.c - generators and routing.
 * Pins down: node/link counts of each generated family; route hop counts against closed forms
 * (ring shortest way, torus sum of min(|dx|, k-|dx|) with diameter sum floor(k/2), fat-tree 2
 * hops within a leaf / 4 across / 6 across pods, dgx 2 hops through the NVSwitch inside a box,
 * 4 through the rail leaf for the same rail, 6 through a spine otherwise); every route is a
 * connected chain of links from the source GPU to the destination GPU; ECMP is deterministic
 * (same hash, same path, also across separately generated copies) and spreads over spines;
 * generator parameter errors name the option.
 * Leaves free: which of several equal-cost paths a given hash picks; timings (bench_topo). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "dtsim/topo.h"
#include "testutil.h"
#include "topo_internal.h"

static topo *gen(topo_gen_params p)
{
    topo *t = NULL;
    dt_error e;
    dt_error_clear(&e);
    int rc = topo_generate(&p, &t, &e);
    ck_assert_msg(rc == DT_OK, "generate: %s: %s", e.path, e.msg);
    return t;
}

/* Route and check it is a chain from src to dst; return the hop count. */
static int hops(topo *t, int s, int d, uint64_t h)
{
    const int *l = NULL;
    int n = -1;
    ck_assert_int_eq(topo_route(t, s, d, h, &l, &n), DT_OK);
    int cur = t->gpu_node[s];
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(t->links[l[i]].src, cur);
        cur = t->links[l[i]].dst;
        if (i < n - 1 && !t->gpu_forwarding) ck_assert(t->nodes[cur].kind != TOPO_GPU);
    }
    ck_assert_int_eq(cur, t->gpu_node[d]);
    return n;
}

static int count_kind(const topo *t, topo_node_kind k)
{
    int n = 0;
    for (int v = 0; v < t->n_nodes; v++) n += t->nodes[v].kind == k;
    return n;
}

START_TEST(ring_routes)
{
    topo *t = gen((topo_gen_params){.family = TOPO_FAMILY_RING, .gpus = 8});
    ck_assert_int_eq(t->n_gpus, 8);
    ck_assert_int_eq(t->n_links, 16);
    ck_assert_str_eq(t->name, "ring-8");
    for (int s = 0; s < 8; s++)
        for (int d = 0; d < 8; d++) {
            int k = abs(s - d), want = k < 8 - k ? k : 8 - k;
            ck_assert_int_eq(hops(t, s, d, (uint64_t)s * 31 + (uint64_t)d), want);
        }
    topo_destroy(t);
    t = gen((topo_gen_params){.family = TOPO_FAMILY_RING, .gpus = 2});
    ck_assert_int_eq(t->n_links, 4); /* two parallel duplex links */
    ck_assert_int_eq(hops(t, 0, 1, 0), 1);
    topo_destroy(t);
}
END_TEST

START_TEST(switch_routes)
{
    topo *t = gen((topo_gen_params){.family = TOPO_FAMILY_SWITCH, .gpus = 16});
    ck_assert_int_eq(count_kind(t, TOPO_SWITCH), 1);
    ck_assert_int_eq(t->n_links, 32);
    for (int s = 0; s < 16; s++)
        for (int d = 0; d < 16; d++) ck_assert_int_eq(hops(t, s, d, 7), s == d ? 0 : 2);
    /* latency: two links and one switch */
    const int *l;
    int n;
    ck_assert_int_eq(topo_route(t, 0, 1, 0, &l, &n), DT_OK);
    ck_assert_int_eq(t->links[l[0]].latency + t->links[l[1]].latency, 2 * TOPO_DEFAULT_LATENCY);
    ck_assert_int_eq(topo_route(t, 0, 16, 0, &l, &n), DT_EINPUT);
    ck_assert_int_eq(topo_route(t, -1, 1, 0, &l, &n), DT_EINPUT);
    topo_destroy(t);
}
END_TEST

START_TEST(fat_tree_routes)
{
    /* radix 64, no oversubscription: 32 down / 32 up; 128 GPUs -> 4 leaves, 32 spines. */
    topo *t = gen((topo_gen_params){.family = TOPO_FAMILY_FAT_TREE, .gpus = 128});
    ck_assert_int_eq(count_kind(t, TOPO_SWITCH), 4 + 32);
    ck_assert_int_eq(t->n_links, 2 * (128 + 4 * 32));
    ck_assert_int_eq(hops(t, 0, 31, 1), 2);
    ck_assert_int_eq(hops(t, 0, 32, 1), 4);
    ck_assert_int_eq(hops(t, 127, 5, 1), 4);
    /* ECMP: flows between two leaves spread over the spines, deterministically. */
    int used[64] = {0}, distinct = 0;
    for (uint64_t h = 0; h < 512; h++) {
        const int *l, *l2;
        int n, n2;
        ck_assert_int_eq(topo_route(t, 0, 100, h, &l, &n), DT_OK);
        ck_assert_int_eq(topo_route(t, 0, 100, h, &l2, &n2), DT_OK);
        ck_assert_ptr_eq(l, l2);
        int spine = t->links[l[1]].dst - (128 + 4);
        ck_assert(spine >= 0 && spine < 32);
        if (!used[spine]++) distinct++;
    }
    ck_assert_msg(distinct >= 24, "only %d of 32 spines used", distinct);
    topo_destroy(t);

    /* 2:1 oversubscription at radix 12: 8 down, 4 up. */
    t = gen((topo_gen_params){.family = TOPO_FAMILY_FAT_TREE, .gpus = 32, .radix = 12,
                              .oversubscription = 2});
    ck_assert_int_eq(count_kind(t, TOPO_SWITCH), 4 + 4);
    ck_assert_int_eq(hops(t, 0, 31, 3), 4);
    topo_destroy(t);

    /* 3 tiers, radix 4: 2 down/2 up per leaf, 2 leaves per pod; 16 GPUs -> 8 leaves, 4 pods. */
    t = gen((topo_gen_params){.family = TOPO_FAMILY_FAT_TREE, .gpus = 16, .radix = 4, .tiers = 3});
    ck_assert_int_eq(count_kind(t, TOPO_SWITCH), 8 + 4 * 2 + 4);
    ck_assert_int_eq(hops(t, 0, 1, 0), 2);
    ck_assert_int_eq(hops(t, 0, 2, 0), 4);
    ck_assert_int_eq(hops(t, 0, 15, 0), 6);
    topo_destroy(t);
}
END_TEST

START_TEST(dgx_routes)
{
    topo *t = gen((topo_gen_params){.family = TOPO_FAMILY_DGX, .nodes = 4, .gpus_per_node = 8});
    ck_assert_int_eq(t->n_gpus, 32);
    ck_assert_int_eq(t->n_hosts, 4);
    ck_assert_int_eq(count_kind(t, TOPO_NIC), 32);
    ck_assert_int_eq(count_kind(t, TOPO_SWITCH), 4 + 8 + 32); /* NVSwitches, rail leaves, spines */
    ck_assert_int_eq(t->nodes[t->gpu_node[13]].host, 1);
    ck_assert_str_eq(t->host_names[1], "node1");
    ck_assert_str_eq(t->nodes[t->gpu_node[13]].name, "node1.gpu5");
    /* inside a box: GPU -> NVSwitch -> GPU at NVLink bandwidth */
    const int *l;
    int n;
    ck_assert_int_eq(topo_route(t, 8, 15, 0, &l, &n), DT_OK);
    ck_assert_int_eq(n, 2);
    ck_assert_str_eq(t->nodes[t->links[l[0]].dst].name, "node1.nvswitch");
    ck_assert_rel(t->links[l[0]].bandwidth, 450e9, 1e-12);
    /* same rail, other box: GPU -> NIC -> rail leaf -> NIC -> GPU */
    ck_assert_int_eq(topo_route(t, 5, 21, 0, &l, &n), DT_OK);
    ck_assert_int_eq(n, 4);
    ck_assert_str_eq(t->nodes[t->links[l[1]].dst].name, "rail5.leaf0");
    ck_assert_rel(t->links[l[1]].bandwidth, 50e9, 1e-12);
    /* other rail, other box: up through a spine */
    ck_assert_int_eq(hops(t, 5, 22, 9), 6);
    for (int s = 0; s < 32; s++)
        for (int d = 0; d < 32; d++) {
            int want = s == d ? 0 : s / 8 == d / 8 ? 2 : s % 8 == d % 8 ? 4 : 6;
            ck_assert_int_eq(hops(t, s, d, (uint64_t)(s ^ d)), want);
        }
    topo_destroy(t);
}
END_TEST

START_TEST(dgx_large_ring)
{
    /* 1,024 GPUs: every ring neighbour pair and a stride pattern route. */
    topo *t = gen((topo_gen_params){.family = TOPO_FAMILY_DGX, .nodes = 128, .gpus_per_node = 8});
    ck_assert_int_eq(t->n_gpus, 1024);
    for (int s = 0; s < 1024; s++) {
        int d = (s + 1) % 1024;
        ck_assert_int_eq(hops(t, s, d, 0), s / 8 == d / 8 ? 2 : 6);
        ck_assert_int_eq(hops(t, s, (s + 8) % 1024, 1), 4 + 2 * (s / 256 != ((s + 8) % 1024) / 256));
    }
    ck_assert(topo_route_cache_bytes(t) > 0);
    topo_destroy(t);
}
END_TEST

START_TEST(torus_routes)
{
    topo *t = gen((topo_gen_params){.family = TOPO_FAMILY_TORUS, .dims = {4, 4, 4}, .n_dims = 3});
    ck_assert_int_eq(t->n_gpus, 64);
    ck_assert_int_eq(t->n_links, 2 * 64 * 3);
    ck_assert_str_eq(t->name, "torus-4x4x4");
    int diam = 0;
    for (int s = 0; s < 64; s++)
        for (int d = 0; d < 64; d++) {
            int want = 0;
            for (int k = 0, a = s, b = d; k < 3; k++, a /= 4, b /= 4) {
                int dx = abs(a % 4 - b % 4);
                want += dx < 4 - dx ? dx : 4 - dx;
            }
            int h = hops(t, s, d, (uint64_t)s);
            ck_assert_int_eq(h, want);
            if (h > diam) diam = h;
        }
    ck_assert_int_eq(diam, 2 + 2 + 2);
    topo_destroy(t);
    t = gen((topo_gen_params){.family = TOPO_FAMILY_TORUS, .dims = {5, 2}, .n_dims = 2});
    ck_assert_int_eq(t->n_links, 2 * (10 + 5)); /* extent 2: one link, not two */
    ck_assert_int_eq(hops(t, 0, 7, 0), 2 + 1);
    topo_destroy(t);
}
END_TEST

START_TEST(dragonfly_routes)
{
    /* a=4 routers, p=2 terminals, h=2 global links: canonical 9 groups, 72 GPUs. */
    topo *t = gen((topo_gen_params){.family = TOPO_FAMILY_DRAGONFLY, .df_a = 4, .df_p = 2, .df_h = 2});
    ck_assert_int_eq(t->n_gpus, 72);
    ck_assert_int_eq(count_kind(t, TOPO_SWITCH), 36);
    /* links: terminals 72, local 9*C(4,2)=54, global C(9,2)=36; each duplex */
    ck_assert_int_eq(t->n_links, 2 * (72 + 54 + 36));
    int maxh = 0;
    for (int s = 0; s < 72; s++)
        for (int d = 0; d < 72; d++) {
            int h = hops(t, s, d, 5);
            if (s / 2 == d / 2 && s != d) ck_assert_int_eq(h, 2);
            else if (s / 8 == d / 8 && s != d) ck_assert_int_eq(h, 3);
            if (h > maxh) maxh = h;
        }
    ck_assert_int_eq(maxh, 5);
    topo_destroy(t);
}
END_TEST

START_TEST(flush_after_latency_change)
{
    /* ring of 4: 0 -> 2 has two equal ways; make one slower, flush, and the route moves */
    topo *t = gen((topo_gen_params){.family = TOPO_FAMILY_RING, .gpus = 4});
    const int *before, *after;
    int nb, na;
    ck_assert_int_eq(topo_route(t, 0, 2, 0, &before, &nb), DT_OK);
    ck_assert_int_eq(nb, 2);
    int first = before[0], mid = t->links[first].dst;
    ck_assert(mid == t->gpu_node[1] || mid == t->gpu_node[3]);
    t->links[first].latency += SIM_US;
    ck_assert_int_eq(topo_route(t, 0, 2, 0, &after, &na), DT_OK);
    ck_assert_ptr_eq(after, before); /* cached until told */
    topo_route_cache_flush(t);
    ck_assert_int_eq(topo_route(t, 0, 2, 0, &after, &na), DT_OK);
    ck_assert_int_eq(na, 2);
    ck_assert_int_ne(t->links[after[0]].dst, mid);
    ck_assert_int_eq(before[0], first); /* the old path is still readable */
    topo_destroy(t);
}
END_TEST

START_TEST(generator_errors)
{
    topo *t = NULL;
    dt_error e;
    dt_error_clear(&e);
    topo_gen_params p = {.family = TOPO_FAMILY_FAT_TREE, .gpus = 5000, .radix = 64};
    ck_assert_int_eq(topo_generate(&p, &t, &e), DT_EINPUT);
    ck_assert_str_eq(e.path, "gpus");
    ck_assert_msg(strstr(e.msg, "tiers 3") != NULL, "%s", e.msg);
    p = (topo_gen_params){.family = TOPO_FAMILY_FAT_TREE, .gpus = 8, .tiers = 4};
    ck_assert_int_eq(topo_generate(&p, &t, &e), DT_EINPUT);
    ck_assert_str_eq(e.path, "tiers");
    p = (topo_gen_params){.family = TOPO_FAMILY_RING, .gpus = 4};
    snprintf(p.gpu_preset, sizeof p.gpu_preset, "H10-SXM");
    ck_assert_int_eq(topo_generate(&p, &t, &e), DT_EINPUT);
    ck_assert_str_eq(e.path, "gpu");
    p = (topo_gen_params){.family = TOPO_FAMILY_DGX, .gpus = 12, .gpus_per_node = 8};
    ck_assert_int_eq(topo_generate(&p, &t, &e), DT_EINPUT);
    ck_assert_str_eq(e.path, "gpus");
    p = (topo_gen_params){.family = TOPO_FAMILY_DRAGONFLY, .df_a = 2, .df_p = 1, .df_h = 1, .df_groups = 4};
    ck_assert_int_eq(topo_generate(&p, &t, &e), DT_EINPUT);
    ck_assert_str_eq(e.path, "groups");
    /* each latency is legal, but 200 hops of 0.9 s could overflow a route's cost */
    p = (topo_gen_params){.family = TOPO_FAMILY_RING, .gpus = 200, .latency = 900 * SIM_MS};
    ck_assert_int_eq(topo_generate(&p, &t, &e), DT_EINPUT);
    ck_assert_str_eq(e.path, "latency");
    p = (topo_gen_params){.family = TOPO_FAMILY_TORUS, .n_dims = 0};
    ck_assert_int_eq(topo_generate(&p, &t, &e), DT_EINPUT);
    ck_assert_str_eq(e.path, "dims");
    ck_assert_ptr_null(t);
}
END_TEST

START_TEST(ecmp_determinism_across_copies)
{
    topo_gen_params p = {.family = TOPO_FAMILY_DGX, .nodes = 64, .gpus_per_node = 8, .radix = 16};
    topo *a = gen(p), *b = gen(p);
    for (int s = 0; s < 512; s += 7) {
        const int *la, *lb;
        int na, nb;
        int d = (s * 13 + 100) % 512;
        ck_assert_int_eq(topo_route(a, s, d, (uint64_t)s * 977, &la, &na), DT_OK);
        ck_assert_int_eq(topo_route(b, s, d, (uint64_t)s * 977, &lb, &nb), DT_OK);
        ck_assert_int_eq(na, nb);
        ck_assert(memcmp(la, lb, (size_t)na * sizeof *la) == 0);
    }
    /* flushing the cache changes nothing while the links stay as they are */
    topo_route_cache_flush(a);
    for (int s = 0; s < 512; s += 7) {
        const int *la, *lb;
        int na, nb;
        int d = (s * 29 + 3) % 512;
        ck_assert_int_eq(topo_route(a, s, d, 42, &la, &na), DT_OK);
        ck_assert_int_eq(topo_route(b, s, d, 42, &lb, &nb), DT_OK);
        ck_assert_int_eq(na, nb);
        ck_assert(memcmp(la, lb, (size_t)na * sizeof *la) == 0);
    }
    /* a tiny budget: maps are dropped before almost every route, paths stay the same */
    topo_route_cache_set_budget(a, 1);
    for (int s = 0; s < 512; s += 5) {
        const int *la, *lb;
        int na, nb;
        int d = (s * 31 + 17) % 512;
        ck_assert_int_eq(topo_route(a, s, d, 7, &la, &na), DT_OK);
        ck_assert_int_eq(topo_route(b, s, d, 7, &lb, &nb), DT_OK);
        ck_assert_int_eq(na, nb);
        ck_assert(memcmp(la, lb, (size_t)na * sizeof *la) == 0);
    }
    topo_destroy(a);
    topo_destroy(b);
}
END_TEST

/* The path table homes every variant of a pair in one slot (topo_route.c, slot_of), so a pair's
 * 64 variants form one long probe run and the table grows through such runs. Looked up in
 * opposite orders on two copies (one pair after another against interleaved, hashes up against
 * down), every (pair, hash) gets the same path, and a second look-up on one copy returns the
 * very pointer of the first (a hit, not a second walk). 16 cross-spine pairs x 200 hashes: up to
 * 1,024 entries, two doublings of the table. */
START_TEST(pair_variants_share_a_home_slot)
{
    topo_gen_params p = {.family = TOPO_FAMILY_DGX, .nodes = 64, .gpus_per_node = 8, .radix = 16};
    topo *a = gen(p), *b = gen(p);
    enum { PAIRS = 16, HASHES = 200 };
    const int *first[PAIRS][HASHES];
    int len[PAIRS][HASHES];
    for (int h = 0; h < HASHES; h++) /* a: interleaved, hashes going up */
        for (int q = 0; q < PAIRS; q++)
            ck_assert_int_eq(topo_route(a, q * 8, 511 - q * 8, (uint64_t)h * 0x9e37u, &first[q][h],
                                        &len[q][h]),
                             DT_OK);
    for (int q = PAIRS - 1; q >= 0; q--) /* b: pair by pair, hashes going down */
        for (int h = HASHES - 1; h >= 0; h--) {
            const int *l;
            int n;
            ck_assert_int_eq(topo_route(b, q * 8, 511 - q * 8, (uint64_t)h * 0x9e37u, &l, &n), DT_OK);
            ck_assert_int_eq(n, len[q][h]);
            ck_assert_int_eq(n, 6); /* across hosts and rails: GPU-NIC-leaf-spine-leaf-NIC-GPU */
            ck_assert(memcmp(l, first[q][h], (size_t)n * sizeof *l) == 0);
        }
    for (int q = 0; q < PAIRS; q++)
        for (int h = 0; h < HASHES; h++) {
            const int *l;
            int n;
            ck_assert_int_eq(topo_route(a, q * 8, 511 - q * 8, (uint64_t)h * 0x9e37u, &l, &n), DT_OK);
            ck_assert_ptr_eq(l, first[q][h]);
        }
    topo_destroy(a);
    topo_destroy(b);
}
END_TEST

typedef struct thread_arg {
    topo *t;
    int first;
    int hops[256]; /* a digest of each route */
} thread_arg;

static void *route_many(void *p)
{
    thread_arg *a = p;
    for (int i = 0; i < 256; i++) {
        const int *l;
        int n = -1;
        int s = (a->first + i * 7) % 512, d = (s * 5 + 77) % 512;
        if (topo_route(a->t, s, d, (uint64_t)i, &l, &n) != DT_OK) {
            a->hops[i] = -1;
            continue;
        }
        unsigned sum = (unsigned)n; /* hop count and a position-weighted sum of the links */
        for (int k = 0; k < n; k++) sum = sum * 31u + (unsigned)l[k];
        a->hops[i] = (int)(sum & 0x7fffffffu);
    }
    return NULL;
}


/* ---- reference router: one whole-graph backward Dijkstra per destination, no cache ----
 * The same route definition as topo_route (shortest by (latency, hops) keys, relay rule, and
 * per hop the out-links on a shortest path in CSR order, one picked by the variant hash), but
 * none of its decomposition (local maps, switch core, twin classes, next-hop lists). Any
 * difference in any path is a bug in the decomposition. */
static uint64_t ref_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static uint64_t ref_cost(const topo *t, int e)
{
    sim_time_t lat = t->links[e].latency;
    if (t->nodes[t->links[e].dst].kind == TOPO_SWITCH) lat += t->switch_latency;
    return ((uint64_t)lat << 16) + 1;
}

/* dist[v] = cost of v -> dst (UINT64_MAX unreachable), by Bellman-Ford-style relaxation to a
 * fixed point: slow and obviously right. */
static void ref_dist(const topo *t, int dst, uint64_t *dist)
{
    for (int v = 0; v < t->n_nodes; v++) dist[v] = UINT64_MAX;
    dist[dst] = 0;
    for (int changed = 1; changed;) {
        changed = 0;
        for (int e = 0; e < t->n_links; e++) {
            int u = t->links[e].src, w = t->links[e].dst;
            if (dist[w] == UINT64_MAX || (w != dst && !topo_relays(t, w))) continue;
            uint64_t k = dist[w] + ref_cost(t, e);
            if (k < dist[u]) {
                dist[u] = k;
                changed = 1;
            }
        }
    }
}

/* Compare topo_route with the reference for every (src, dst) pair with src, dst multiples of
 * step, three flow hashes each. */
static void check_against_reference(topo *t, int step)
{
    uint64_t *dist = malloc((size_t)t->n_nodes * sizeof *dist);
    int *cand = malloc((size_t)t->n_links * sizeof *cand);
    for (int d = 0; d < t->n_gpus; d += step) {
        int dn = t->gpu_node[d];
        ref_dist(t, dn, dist);
        for (int s = 0; s < t->n_gpus; s += step)
            for (uint64_t fh = 0; fh < 3; fh++) {
                uint64_t hash = fh * 0x51ed27 + (uint64_t)s * 131 + (uint64_t)d;
                const int *l;
                int n;
                ck_assert_int_eq(topo_route(t, s, d, hash, &l, &n), DT_OK);
                int variant = (int)(ref_mix(hash) % 64), cur = t->gpu_node[s], k = 0;
                while (cur != dn) {
                    int nc = 0;
                    for (int i = t->out_start[cur]; i < t->out_start[cur + 1]; i++) {
                        int e = t->out_links[i], w = t->links[e].dst;
                        if (w != dn && !topo_relays(t, w)) continue;
                        if (dist[w] != UINT64_MAX && dist[w] + ref_cost(t, e) == dist[cur])
                            cand[nc++] = e;
                    }
                    ck_assert_int_gt(nc, 0);
                    uint64_t h = ref_mix(((uint64_t)variant << 32) ^ (uint64_t)(cur + 1));
                    int e = cand[h % (uint64_t)nc];
                    ck_assert_msg(k < n && l[k] == e, "%s: route %d -> %d (hash %llu) differs at hop %d",
                                  t->name, s, d, (unsigned long long)hash, k);
                    k++;
                    cur = t->links[e].dst;
                }
                ck_assert_int_eq(k, n);
            }
    }
    free(dist);
    free(cand);
}

/* Latencies made uneven (every k-th link slower), so twin classes split where they must. */
static void perturb(topo *t, int k, sim_time_t by)
{
    for (int e = 0; e < t->n_links; e += k) t->links[e].latency += (e % 5) * by;
    topo_route_cache_flush(t);
}

START_TEST(routes_equal_reference)
{
    topo_gen_params ps[] = {
        {.family = TOPO_FAMILY_SWITCH, .gpus = 24},
        {.family = TOPO_FAMILY_RING, .gpus = 12},
        {.family = TOPO_FAMILY_TORUS, .n_dims = 3, .dims = {4, 3, 3}},
        {.family = TOPO_FAMILY_FAT_TREE, .gpus = 128, .radix = 16},
        {.family = TOPO_FAMILY_FAT_TREE, .gpus = 300, .radix = 12, .tiers = 3, .oversubscription = 2},
        {.family = TOPO_FAMILY_DRAGONFLY, .df_a = 4, .df_p = 2, .df_h = 2, .df_groups = 5},
        {.family = TOPO_FAMILY_DGX, .nodes = 24, .gpus_per_node = 4, .radix = 8},
        {.family = TOPO_FAMILY_DGX, .nodes = 40, .gpus_per_node = 8, .radix = 16, .oversubscription = 3},
    };
    for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) {
        topo *t = gen(ps[i]);
        int step = t->n_gpus > 200 ? 13 : t->n_gpus > 64 ? 3 : 1;
        check_against_reference(t, step);
        perturb(t, 3, 7 * SIM_NS); /* uneven latencies: fewer twins, other ties */
        check_against_reference(t, step);
        topo_destroy(t);
    }
    /* files: a hand-written two-box cluster and a loaded (non-generated) fat-tree */
    const char *files[] = {DT_DATA("topo/example.json"),
                           DTSIM_SOURCE_DIR "/topologies/fat-tree-128.json",
                           DTSIM_SOURCE_DIR "/topologies/dgx-4x8.json"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        topo *t = NULL;
        dt_error e;
        dt_error_clear(&e);
        ck_assert_msg(topo_load_file(files[i], &t, &e) == DT_OK, "%s: %s", files[i], e.msg);
        check_against_reference(t, t->n_gpus > 64 ? 3 : 1);
        perturb(t, 2, 11 * SIM_NS);
        check_against_reference(t, t->n_gpus > 64 ? 3 : 1);
        topo_destroy(t);
    }
}
END_TEST

/* Route memory stays linear on a rail fabric: every ring neighbour of 4,096 GPUs routed, the
 * cache (core, twin maps, local maps, next-hop lists, paths) stays under 512 B per node (365 B
 * here, 337 B at 16,384 GPUs). Before the switch core it held one dense whole-graph map per
 * leaf: 128 x 8,864 nodes x 8 B, over 1 KiB per node (and 150 MB at 16,384 GPUs). */
START_TEST(route_memory_linear)
{
    topo *t = gen((topo_gen_params){.family = TOPO_FAMILY_DGX, .nodes = 512, .gpus_per_node = 8});
    for (int g = 0; g < t->n_gpus; g++) {
        const int *l;
        int n;
        ck_assert_int_eq(topo_route(t, g, (g + 8) % t->n_gpus, (uint64_t)g, &l, &n), DT_OK);
    }
    size_t b = topo_route_cache_bytes(t);
    ck_assert_msg(b < (size_t)t->n_nodes * 512, "route cache %zu bytes for %d nodes", b, t->n_nodes);
    topo_destroy(t);
}
END_TEST

START_TEST(concurrent_routes)
{
    /* Four threads share one topology; each result equals the single-threaded one. */
    topo_gen_params p = {.family = TOPO_FAMILY_DGX, .nodes = 64, .gpus_per_node = 8, .radix = 16};
    topo *shared = gen(p), *alone = gen(p);
    pthread_t th[4];
    thread_arg args[4];
    for (int k = 0; k < 4; k++) {
        args[k].t = shared;
        args[k].first = k * 3;
        pthread_create(&th[k], NULL, route_many, &args[k]);
    }
    for (int k = 0; k < 4; k++) pthread_join(th[k], NULL);
    for (int k = 0; k < 4; k++) {
        thread_arg ref = {.t = alone, .first = k * 3};
        route_many(&ref);
        ck_assert(memcmp(ref.hops, args[k].hops, sizeof ref.hops) == 0);
        for (int i = 0; i < 256; i++) ck_assert(args[k].hops[i] >= 0);
    }
    topo_destroy(shared);
    topo_destroy(alone);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("topo_route");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, ring_routes);
    tcase_add_test(tc, switch_routes);
    tcase_add_test(tc, fat_tree_routes);
    tcase_add_test(tc, dgx_routes);
    tcase_add_test(tc, dgx_large_ring);
    tcase_add_test(tc, torus_routes);
    tcase_add_test(tc, dragonfly_routes);
    tcase_add_test(tc, flush_after_latency_change);
    tcase_add_test(tc, generator_errors);
    tcase_add_test(tc, ecmp_determinism_across_copies);
    tcase_add_test(tc, pair_variants_share_a_home_slot);
    tcase_add_test(tc, concurrent_routes);
    tcase_add_test(tc, routes_equal_reference);
    tcase_add_test(tc, route_memory_linear);
    suite_add_tcase(s, tc);
    return dt_run_suite(s);
}
