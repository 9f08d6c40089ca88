/* topo_route.c - shortest-path routing between GPUs with deterministic ECMP, lazily cached.
 *
 * Cost of a path: (total latency, hop count), compared lexicographically. Latency is the sum of
 * link latencies plus switch_latency for every switch entered. Both are packed into one 64-bit
 * key, latency_ps << 16 | hops, so one integer comparison orders paths and keys add up along a
 * path (paths are far below 2^47 ps = 140 s and 65,535 hops).
 *
 * Relay rule: when t->gpu_forwarding is false a GPU is an endpoint only; routes never pass
 * through a third GPU. Otherwise (ring, torus) GPUs forward like switches.
 *
 * A route walks from the source, taking at each node one of the out-links that stays on a
 * shortest path; the choice among several is a hash of the flow's variant and the node, so
 * different flows spread over parallel links and spines while one flow always gets the same
 * path. Everything below is about getting exact distances cheaply; any exact distance oracle
 * gives the same routes.
 *
 * Distances (docs/architecture.md, "Topology and routing", has the measurements). The distance
 * from a node v to a destination GPU d is split at the last switch s on the path:
 *     dist(v, d) = min( local_d(v), min over s in B_d of D_s(v) + c_d(s) )
 *  - local_d and the boundary B_d (with suffix costs c_d) come from a backward search from d
 *    that does not expand through switches: behind a NIC or NVSwitch it touches 2-4 nodes; in a
 *    switchless ring or torus it covers the whole graph (the worst case: one map per GPU).
 *  - D_s(v), the distance from v to switch s, is split again at the first switch a after v:
 *    D_s(v) = min over a in A_v of f_v(a) + C_s(a), with A_v, f_v from a forward search from v
 *    that does not expand through switches (a GPU behind a NIC: its NVSwitch and its leaf), and
 *    C the distances of the *switch core*: a graph on switches only, whose edge a -> b costs the
 *    cheapest switch-free relay path from a to b (one local search per switch, O(links) in all).
 *    A core search on a 131,072-GPU DGX fabric visits 4,128 leaves and spines, not 282,000
 *    nodes.
 *  - Twin switches share a map. Switches r and s with the same core in-neighbours at the same
 *    costs (every leaf of a two-tier Clos, every spine) have C_s(v) = C_r(v) for every v other
 *    than r and s: a shortest path v -> s ends with an edge u -> s, and u -> r exists at the
 *    same cost (u != r: r would be its own in-neighbour), so C_r(v) <= C_s(v) whether or not
 *    the path meets r first, and symmetrically. C_s(s) = 0 and C_s(r) = min over in-edges
 *    (u -> s, c) of F_r(u) + c, with F_r one forward core search from r. A class of twins thus
 *    costs two core searches and 8 bytes per member, whatever its size.
 * Maps covering more than a quarter of their index space (or shared by several twins) are dense
 * arrays (8 B per entry), smaller ones sorted sparse arrays.
 * Paths are cached per (src, dst, variant) with variant = mix(flow_hash) mod 64 and stored in
 * an append-only arena, so returned pointers stay valid until topo_destroy(). Distance maps
 * are dropped (all at once) when they exceed a budget at the start of a route call (one eighth
 * of physical memory, at least 256 MB: a 16k-GPU torus needs ~4 GB); the switch core is kept,
 * paths are never dropped. A mutex makes concurrent topo_route() calls on one topology safe.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "topo_internal.h"

#define KEY_INF UINT64_MAX
#define HOP_BITS 16
#define ROUTE_VARIANTS 64
#define MAP_BUDGET_MIN ((size_t)256 << 20)
#define ARENA_CHUNK 65536

/* A distance map over an index space of n_space entries (nodes for a destination's local map,
 * switch indices for a core map). */
typedef struct distmap {
    int n;         /* entries (n_space when dense) */
    bool dense;
    uint64_t *key; /* dense: per index; sparse: per entry */
    int *node;     /* sparse: sorted indices */
} distmap;

typedef struct dest_info {
    distmap local;
    int n_bound;
    int *bound_node;
    int *bound_sw; /* the boundary switches' core indices */
    uint64_t *bound_key;
} dest_info;

/* First switches reachable from a non-switch node without crossing another switch. */
typedef struct fwd_info {
    int n;
    int *sw; /* core indices */
    uint64_t *key;
} fwd_info;

typedef struct path_entry {
    int src, dst, variant, len; /* src == -1: empty slot */
    const int *links;
} path_entry;

typedef struct hop_entry {
    int v, target; /* target: a switch node, or -(g+1) for the local map of GPU g; v -1: empty */
    int off, n;
} hop_entry;

typedef struct heap_item {
    uint64_t key;
    int node;
} heap_item;

typedef struct route_cache {
    pthread_mutex_t mu;
    int *in_start, *in_links; /* reverse CSR, built on first use */
    dest_info **dest;         /* per GPU */
    fwd_info **fwd;           /* per node (non-switch nodes only) */
    size_t map_bytes, map_budget;
    /* switch core: built on first use, kept across budget flushes (it depends on the links
     * only); rebuilt after topo_route_cache_flush */
    bool core_built;
    int n_sw;
    int *sw_idx;                       /* node -> core index, -1 for non-switches */
    int *sw_node;                      /* core index -> node */
    int *cin_start, *cin_from;         /* core in-edges of each switch, sorted by source */
    uint64_t *cin_cost;
    int *cout_start, *cout_to;         /* core out-edges */
    uint64_t *cout_cost;
    int *rep;                          /* twin class representative of each switch */
    int *n_members;                    /* per representative: class size */
    int *mem_start, *mem;              /* members of each representative's class */
    size_t core_bytes;
    distmap **cmap;                    /* per representative: backward core map, lazily */
    uint64_t *d_rep;                   /* per member s: C_s(rep(s)), valid once cmap[rep] is */
    /* node-level search scratch, reset through the touched list */
    uint64_t *key;
    unsigned char *done;
    int *touched, n_touched;
    /* core-level search scratch */
    uint64_t *ckey;
    unsigned char *cdone;
    int *ctouched, n_ctouched;
    heap_item *heap;
    int heap_n, heap_cap;
    /* walk scratch */
    int *cand, *pbuf;
    unsigned char *flag; /* per out-link position of one node */
    /* next-hop lists: (node, target) -> shortest-path out-link positions, in CSR order */
    hop_entry *hops;
    size_t hops_cap, hops_n;
    int *hop_arena;
    size_t hop_used, hop_arena_cap;
    /* path cache */
    path_entry *tab;
    size_t tab_cap, tab_n;
    int **chunks;
    int n_chunks, chunk_used, chunk_cap;
    size_t path_bytes;
} route_cache;

static const int no_links[1] = {0};

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* Map budget: what the maps may grow to before they are dropped. It follows the machine: an
 * eighth of physical memory, at least 256 MB, so that a large torus (one whole-graph map per
 * destination GPU) keeps its maps where memory allows, and a small machine stays safe. */
static size_t default_budget(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    size_t b = MAP_BUDGET_MIN;
    if (pages > 0 && psz > 0) {
        size_t phys = (size_t)pages * (size_t)psz;
        if (phys / 8 > b) b = phys / 8;
    }
    return b;
}

void topo_route_cache_init(topo *t)
{
    route_cache *c = dt_xcalloc(1, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    c->map_budget = default_budget();
    t->route_cache = c;
}

static void free_map(distmap *m)
{
    if (!m) return;
    free(m->key);
    free(m->node);
}

static size_t map_size(const distmap *m)
{
    return m->dense ? (size_t)m->n * 8 : (size_t)m->n * 12;
}

static void free_dest(dest_info *d)
{
    free_map(&d->local);
    free(d->bound_node);
    free(d->bound_sw);
    free(d->bound_key);
    free(d);
}

static void flush_maps(const topo *t, route_cache *c)
{
    if (c->cmap)
        for (int s = 0; s < c->n_sw; s++) {
            if (!c->cmap[s]) continue;
            free_map(c->cmap[s]);
            free(c->cmap[s]);
            c->cmap[s] = NULL;
        }
    if (c->fwd)
        for (int v = 0; v < t->n_nodes; v++) {
            if (!c->fwd[v]) continue;
            free(c->fwd[v]->sw);
            free(c->fwd[v]->key);
            free(c->fwd[v]);
            c->fwd[v] = NULL;
        }
    if (c->dest)
        for (int g = 0; g < t->n_gpus; g++) {
            if (!c->dest[g]) continue;
            free_dest(c->dest[g]);
            c->dest[g] = NULL;
        }
    if (c->hops)
        for (size_t i = 0; i < c->hops_cap; i++) c->hops[i].v = -1;
    c->hops_n = 0;
    c->hop_used = 0;
    c->map_bytes = 0;
}

static void free_core(route_cache *c)
{
    free(c->sw_idx);
    free(c->sw_node);
    free(c->cin_start);
    free(c->cin_from);
    free(c->cin_cost);
    free(c->cout_start);
    free(c->cout_to);
    free(c->cout_cost);
    free(c->rep);
    free(c->n_members);
    free(c->mem_start);
    free(c->mem);
    free(c->cmap);
    free(c->d_rep);
    free(c->ckey);
    free(c->cdone);
    free(c->ctouched);
    c->sw_idx = c->sw_node = c->cin_start = c->cin_from = c->cout_start = c->cout_to = NULL;
    c->rep = c->n_members = c->mem_start = c->mem = c->ctouched = NULL;
    c->cin_cost = c->cout_cost = c->d_rep = c->ckey = NULL;
    c->cmap = NULL;
    c->cdone = NULL;
    c->core_bytes = 0;
    c->n_sw = 0;
    c->core_built = false;
}

void topo_route_cache_flush(topo *t)
{
    route_cache *c = t->route_cache;
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    flush_maps(t, c);
    free_core(c); /* its edge costs are latencies, which may have changed */
    /* Forget the paths too (link figures may have changed), but keep the arena: pointers
     * handed out earlier must stay readable until topo_destroy. */
    for (size_t i = 0; i < c->tab_cap; i++) c->tab[i].src = -1;
    c->tab_n = 0;
    pthread_mutex_unlock(&c->mu);
}

void topo_route_cache_set_budget(topo *t, size_t bytes)
{
    route_cache *c = t->route_cache;
    pthread_mutex_lock(&c->mu);
    c->map_budget = bytes;
    pthread_mutex_unlock(&c->mu);
}

void topo_route_cache_free(topo *t)
{
    route_cache *c = t->route_cache;
    if (!c) return;
    flush_maps(t, c);
    free_core(c);
    free(c->fwd);
    free(c->dest);
    free(c->in_start);
    free(c->in_links);
    free(c->key);
    free(c->done);
    free(c->touched);
    free(c->heap);
    free(c->cand);
    free(c->pbuf);
    free(c->flag);
    free(c->hops);
    free(c->hop_arena);
    free(c->tab);
    for (int i = 0; i < c->n_chunks; i++) free(c->chunks[i]);
    free(c->chunks);
    pthread_mutex_destroy(&c->mu);
    free(c);
    t->route_cache = NULL;
}

size_t topo_route_cache_bytes(const topo *t)
{
    route_cache *c = t->route_cache;
    if (!c) return 0;
    pthread_mutex_lock(&c->mu);
    size_t n = c->map_bytes + c->path_bytes + c->core_bytes;
    if (c->in_start)
        n += ((size_t)t->n_nodes + 1 + (size_t)t->n_links) * sizeof(int) +
             (size_t)t->n_nodes * (sizeof(uint64_t) + 1 + sizeof(int) + sizeof(void *)) +
             (size_t)t->n_gpus * sizeof(void *);
    pthread_mutex_unlock(&c->mu);
    return n;
}

static void setup(const topo *t, route_cache *c)
{
    if (c->in_start) return;
    int n = t->n_nodes;
    c->in_start = dt_xcalloc((size_t)n + 1, sizeof *c->in_start);
    c->in_links = dt_xmalloc(((size_t)t->n_links + 1) * sizeof *c->in_links);
    for (int e = 0; e < t->n_links; e++) c->in_start[t->links[e].dst + 1]++;
    for (int v = 0; v < n; v++) c->in_start[v + 1] += c->in_start[v];
    int *fill = dt_xmalloc(((size_t)n + 1) * sizeof *fill);
    memcpy(fill, c->in_start, (size_t)n * sizeof *fill);
    for (int e = 0; e < t->n_links; e++) c->in_links[fill[t->links[e].dst]++] = e;
    free(fill);
    c->fwd = dt_xcalloc((size_t)n + 1, sizeof *c->fwd);
    c->dest = dt_xcalloc((size_t)t->n_gpus + 1, sizeof *c->dest);
    c->key = dt_xmalloc(((size_t)n + 1) * sizeof *c->key);
    for (int v = 0; v < n; v++) c->key[v] = KEY_INF;
    c->done = dt_xcalloc((size_t)n + 1, 1);
    c->touched = dt_xmalloc(((size_t)n + 1) * sizeof *c->touched);
    int maxdeg = 1;
    for (int v = 0; v < n; v++) {
        int d = t->out_start[v + 1] - t->out_start[v];
        if (d > maxdeg) maxdeg = d;
    }
    c->cand = dt_xmalloc((size_t)maxdeg * sizeof *c->cand);
    c->flag = dt_xcalloc((size_t)maxdeg, 1);
    c->pbuf = dt_xmalloc(((size_t)n + 1) * sizeof *c->pbuf);
}

static uint64_t link_cost(const topo *t, int e)
{
    const topo_link *l = &t->links[e];
    sim_time_t lat = l->latency;
    if (t->nodes[l->dst].kind == TOPO_SWITCH) lat += t->switch_latency;
    DT_ASSERT(lat >= 0 && lat < ((sim_time_t)1 << 46));
    return ((uint64_t)lat << HOP_BITS) + 1;
}

static void heap_push(route_cache *c, uint64_t key, int node)
{
    if (c->heap_n == c->heap_cap) {
        c->heap_cap = c->heap_cap ? 2 * c->heap_cap : 1024;
        c->heap = dt_xrealloc(c->heap, (size_t)c->heap_cap * sizeof *c->heap);
    }
    int i = c->heap_n++;
    while (i > 0) {
        int p = (i - 1) / 2;
        if (c->heap[p].key <= key) break;
        c->heap[i] = c->heap[p];
        i = p;
    }
    c->heap[i] = (heap_item){key, node};
}

static heap_item heap_pop(route_cache *c)
{
    heap_item top = c->heap[0], last = c->heap[--c->heap_n];
    int i = 0, n = c->heap_n;
    for (;;) {
        int l = 2 * i + 1;
        if (l >= n) break;
        if (l + 1 < n && c->heap[l + 1].key < c->heap[l].key) l++;
        if (c->heap[l].key >= last.key) break;
        c->heap[i] = c->heap[l];
        i = l;
    }
    if (n > 0) c->heap[i] = last;
    return top;
}

/* Local search from node `from` that does not expand through switches other than `from`
 * itself (they are the boundary), nor through nodes that may not relay. backward: over
 * in-links (distances *to* from), else over out-links (distances *from* from). Leaves results
 * in c->key for the touched nodes. */
static void search_local(const topo *t, route_cache *c, int from, bool backward)
{
    c->n_touched = 0;
    c->heap_n = 0;
    c->key[from] = 0;
    c->touched[c->n_touched++] = from;
    heap_push(c, 0, from);
    while (c->heap_n) {
        heap_item it = heap_pop(c);
        int w = it.node;
        if (c->done[w] || it.key != c->key[w]) continue;
        c->done[w] = 1;
        bool expand = w == from || (topo_relays(t, w) && t->nodes[w].kind != TOPO_SWITCH);
        if (!expand) continue;
        int lo = backward ? c->in_start[w] : t->out_start[w];
        int hi = backward ? c->in_start[w + 1] : t->out_start[w + 1];
        for (int i = lo; i < hi; i++) {
            int e = backward ? c->in_links[i] : t->out_links[i];
            int u = backward ? t->links[e].src : t->links[e].dst;
            uint64_t nk = it.key + link_cost(t, e);
            if (nk < c->key[u]) {
                if (c->key[u] == KEY_INF) c->touched[c->n_touched++] = u;
                c->key[u] = nk;
                heap_push(c, nk, u);
            }
        }
    }
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* A map of the selected entries of key[] over an index space of n_space; dense when it covers
 * more than a quarter of the space, or when `dense` asks for it. */
static void build_map(route_cache *c, distmap *m, int n_space, const uint64_t *key,
                      const int *sel, int n_sel, bool dense)
{
    memset(m, 0, sizeof *m);
    if (dense || (size_t)n_sel * 4 > (size_t)n_space) {
        m->dense = true;
        m->n = n_space;
        m->key = dt_xmalloc(((size_t)n_space + 1) * sizeof *m->key);
        for (int v = 0; v < n_space; v++) m->key[v] = KEY_INF;
        for (int i = 0; i < n_sel; i++) m->key[sel[i]] = key[sel[i]];
    } else {
        m->n = n_sel;
        m->node = dt_xmalloc(((size_t)n_sel + 1) * sizeof *m->node);
        m->key = dt_xmalloc(((size_t)n_sel + 1) * sizeof *m->key);
        memcpy(m->node, sel, (size_t)n_sel * sizeof *sel);
        qsort(m->node, (size_t)n_sel, sizeof *m->node, cmp_int);
        for (int i = 0; i < n_sel; i++) m->key[i] = key[m->node[i]];
    }
    c->map_bytes += map_size(m);
}

static void reset_scratch(route_cache *c)
{
    for (int i = 0; i < c->n_touched; i++) {
        c->key[c->touched[i]] = KEY_INF;
        c->done[c->touched[i]] = 0;
    }
    c->n_touched = 0;
}

static uint64_t map_get(const distmap *m, int v)
{
    if (m->dense) return m->key[v];
    int lo = 0, hi = m->n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (m->node[mid] == v) return m->key[mid];
        if (m->node[mid] < v) lo = mid + 1;
        else hi = mid - 1;
    }
    return KEY_INF;
}

/* ---- the switch core ---- */

typedef struct core_edge {
    int from, to;
    uint64_t cost;
} core_edge;

static uint64_t in_sig(const route_cache *c, int s)
{
    uint64_t h = 0x84222325cbf29ce4ULL;
    for (int i = c->cin_start[s]; i < c->cin_start[s + 1]; i++)
        h = mix64(h ^ mix64(((uint64_t)(uint32_t)c->cin_from[i] << 32) ^ c->cin_cost[i]));
    return h;
}

static bool same_in(const route_cache *c, int a, int b)
{
    int na = c->cin_start[a + 1] - c->cin_start[a], nb = c->cin_start[b + 1] - c->cin_start[b];
    if (na != nb) return false;
    const int *fa = c->cin_from + c->cin_start[a], *fb = c->cin_from + c->cin_start[b];
    const uint64_t *ka = c->cin_cost + c->cin_start[a], *kb = c->cin_cost + c->cin_start[b];
    return !memcmp(fa, fb, (size_t)na * sizeof *fa) && !memcmp(ka, kb, (size_t)na * sizeof *ka);
}

/* Contract the graph to its switches (one local forward search per switch) and group the
 * switches into twin classes by their core in-edges. O(links + sum of the switch-free regions
 * around each switch), once per topology (and after a flush). */
static void build_core(const topo *t, route_cache *c)
{
    if (c->core_built) return;
    int n = t->n_nodes, ns = 0;
    c->sw_idx = dt_xmalloc(((size_t)n + 1) * sizeof *c->sw_idx);
    for (int v = 0; v < n; v++) c->sw_idx[v] = t->nodes[v].kind == TOPO_SWITCH ? ns++ : -1;
    c->n_sw = ns;
    c->sw_node = dt_xmalloc(((size_t)ns + 1) * sizeof *c->sw_node);
    for (int v = 0; v < n; v++)
        if (c->sw_idx[v] >= 0) c->sw_node[c->sw_idx[v]] = v;
    /* core out-edges, in order of source switch */
    size_t ne = 0, cap = (size_t)ns + 16;
    core_edge *ed = dt_xmalloc(cap * sizeof *ed);
    c->cout_start = dt_xmalloc(((size_t)ns + 1) * sizeof *c->cout_start);
    for (int a = 0; a < ns; a++) {
        c->cout_start[a] = (int)ne;
        search_local(t, c, c->sw_node[a], false);
        for (int i = 0; i < c->n_touched; i++) {
            int v = c->touched[i], b = c->sw_idx[v];
            if (b < 0 || b == a) continue;
            if (ne == cap) {
                cap *= 2;
                ed = dt_xrealloc(ed, cap * sizeof *ed);
            }
            ed[ne++] = (core_edge){a, b, c->key[v]};
        }
        reset_scratch(c);
    }
    c->cout_start[ns] = (int)ne;
    c->cout_to = dt_xmalloc((ne + 1) * sizeof *c->cout_to);
    c->cout_cost = dt_xmalloc((ne + 1) * sizeof *c->cout_cost);
    for (size_t i = 0; i < ne; i++) {
        c->cout_to[i] = ed[i].to;
        c->cout_cost[i] = ed[i].cost;
    }
    /* in-edges: a stable counting sort by target keeps their sources increasing, which makes
     * the twin signature canonical (out-edge order does not matter to any distance) */
    c->cin_start = dt_xcalloc((size_t)ns + 1, sizeof *c->cin_start);
    for (size_t i = 0; i < ne; i++) c->cin_start[ed[i].to + 1]++;
    for (int s = 0; s < ns; s++) c->cin_start[s + 1] += c->cin_start[s];
    c->cin_from = dt_xmalloc((ne + 1) * sizeof *c->cin_from);
    c->cin_cost = dt_xmalloc((ne + 1) * sizeof *c->cin_cost);
    int *fill = dt_xmalloc(((size_t)ns + 1) * sizeof *fill);
    memcpy(fill, c->cin_start, (size_t)ns * sizeof *fill);
    for (size_t i = 0; i < ne; i++) {
        int k = fill[ed[i].to]++;
        c->cin_from[k] = ed[i].from;
        c->cin_cost[k] = ed[i].cost;
    }
    free(fill);
    free(ed);
    /* twin classes: open addressing on the in-edge signature, verified edge by edge */
    c->rep = dt_xmalloc(((size_t)ns + 1) * sizeof *c->rep);
    size_t tcap = 16;
    while (tcap < 2 * (size_t)ns) tcap *= 2;
    int *tab = dt_xmalloc(tcap * sizeof *tab);
    uint64_t *tsig = dt_xmalloc(tcap * sizeof *tsig);
    for (size_t i = 0; i < tcap; i++) tab[i] = -1;
    for (int s = 0; s < ns; s++) {
        uint64_t h = in_sig(c, s);
        size_t k = h & (tcap - 1);
        for (;; k = (k + 1) & (tcap - 1)) {
            if (tab[k] < 0) {
                tab[k] = s;
                tsig[k] = h;
                c->rep[s] = s;
                break;
            }
            if (tsig[k] == h && same_in(c, tab[k], s)) {
                c->rep[s] = tab[k];
                break;
            }
        }
    }
    free(tab);
    free(tsig);
    c->n_members = dt_xcalloc((size_t)ns + 1, sizeof *c->n_members);
    for (int s = 0; s < ns; s++) c->n_members[c->rep[s]]++;
    c->mem_start = dt_xcalloc((size_t)ns + 1, sizeof *c->mem_start);
    for (int s = 0; s < ns; s++) c->mem_start[s + 1] = c->mem_start[s] + c->n_members[s];
    c->mem = dt_xmalloc(((size_t)ns + 1) * sizeof *c->mem);
    fill = dt_xmalloc(((size_t)ns + 1) * sizeof *fill);
    memcpy(fill, c->mem_start, (size_t)ns * sizeof *fill);
    for (int s = 0; s < ns; s++) c->mem[fill[c->rep[s]]++] = s;
    free(fill);
    c->cmap = dt_xcalloc((size_t)ns + 1, sizeof *c->cmap);
    c->d_rep = dt_xmalloc(((size_t)ns + 1) * sizeof *c->d_rep);
    c->ckey = dt_xmalloc(((size_t)ns + 1) * sizeof *c->ckey);
    for (int s = 0; s < ns; s++) c->ckey[s] = KEY_INF;
    c->cdone = dt_xcalloc((size_t)ns + 1, 1);
    c->ctouched = dt_xmalloc(((size_t)ns + 1) * sizeof *c->ctouched);
    c->core_bytes = ((size_t)n + 8 * (size_t)ns) * sizeof(int) + 2 * ne * 12 +
                    (size_t)ns * (sizeof(void *) + 17);
    c->core_built = true;
}

/* Dijkstra on the core from switch r: backward (distances to r) or forward (from r). Results
 * in c->ckey for the touched switches. */
static void core_search(route_cache *c, int r, bool backward)
{
    c->n_ctouched = 0;
    c->heap_n = 0;
    c->ckey[r] = 0;
    c->ctouched[c->n_ctouched++] = r;
    heap_push(c, 0, r);
    const int *start = backward ? c->cin_start : c->cout_start;
    const int *nb = backward ? c->cin_from : c->cout_to;
    const uint64_t *cost = backward ? c->cin_cost : c->cout_cost;
    while (c->heap_n) {
        heap_item it = heap_pop(c);
        int w = it.node;
        if (c->cdone[w] || it.key != c->ckey[w]) continue;
        c->cdone[w] = 1;
        for (int i = start[w]; i < start[w + 1]; i++) {
            int u = nb[i];
            uint64_t nk = it.key + cost[i];
            if (nk < c->ckey[u]) {
                if (c->ckey[u] == KEY_INF) c->ctouched[c->n_ctouched++] = u;
                c->ckey[u] = nk;
                heap_push(c, nk, u);
            }
        }
    }
}

static void core_reset(route_cache *c)
{
    for (int i = 0; i < c->n_ctouched; i++) {
        c->ckey[c->ctouched[i]] = KEY_INF;
        c->cdone[c->ctouched[i]] = 0;
    }
    c->n_ctouched = 0;
}

/* The map of representative r, and C_s(r) for every twin s of r. */
static const distmap *class_map(route_cache *c, int r)
{
    if (c->cmap[r]) return c->cmap[r];
    int nm = c->n_members[r];
    core_search(c, r, true);
    distmap *m = dt_xmalloc(sizeof *m);
    build_map(c, m, c->n_sw, c->ckey, c->ctouched, c->n_ctouched, nm >= 4);
    core_reset(c);
    if (nm > 1) {
        core_search(c, r, false);
        for (int i = c->mem_start[r]; i < c->mem_start[r + 1]; i++) {
            int s = c->mem[i];
            if (s == r) continue;
            uint64_t best = KEY_INF;
            for (int j = c->cin_start[s]; j < c->cin_start[s + 1]; j++) {
                uint64_t f = c->ckey[c->cin_from[j]];
                if (f != KEY_INF && f + c->cin_cost[j] < best) best = f + c->cin_cost[j];
            }
            c->d_rep[s] = best;
        }
        core_reset(c);
    }
    c->cmap[r] = m;
    return m;
}

/* C_b(a): distance from switch a to switch b (core indices). */
static uint64_t core_dist(route_cache *c, int b, int a)
{
    if (a == b) return 0;
    int r = c->rep[b];
    const distmap *m = class_map(c, r);
    if (a == r) return c->d_rep[b]; /* b != r here */
    return map_get(m, a);
}

static const fwd_info *fwd_of(const topo *t, route_cache *c, int v)
{
    if (c->fwd[v]) return c->fwd[v];
    search_local(t, c, v, false);
    fwd_info *f = dt_xcalloc(1, sizeof *f);
    int nb = 0;
    for (int i = 0; i < c->n_touched; i++) nb += c->sw_idx[c->touched[i]] >= 0;
    f->sw = dt_xmalloc(((size_t)nb + 1) * sizeof *f->sw);
    f->key = dt_xmalloc(((size_t)nb + 1) * sizeof *f->key);
    for (int i = 0; i < c->n_touched; i++) {
        int u = c->touched[i];
        if (c->sw_idx[u] < 0) continue;
        f->sw[f->n] = c->sw_idx[u];
        f->key[f->n++] = c->key[u];
    }
    reset_scratch(c);
    c->map_bytes += sizeof *f + (size_t)nb * 12;
    c->fwd[v] = f;
    return f;
}

/* D_b(v): distance from any node v to switch b (core index). */
static uint64_t dist_sw(const topo *t, route_cache *c, int b, int v)
{
    int sv = c->sw_idx[v];
    if (sv >= 0) return core_dist(c, b, sv);
    const fwd_info *f = fwd_of(t, c, v);
    uint64_t best = KEY_INF;
    for (int i = 0; i < f->n; i++) {
        uint64_t x = core_dist(c, b, f->sw[i]);
        if (x != KEY_INF && x + f->key[i] < best) best = x + f->key[i];
    }
    return best;
}

static dest_info *dest_of(const topo *t, route_cache *c, int g)
{
    if (c->dest[g]) return c->dest[g];
    int d = t->gpu_node[g];
    search_local(t, c, d, true);
    /* Split touched nodes: switches form the boundary, the rest the local map. */
    int nl = 0, nb = 0;
    int *sel = dt_xmalloc(((size_t)c->n_touched + 1) * sizeof *sel);
    int *bnd = dt_xmalloc(((size_t)c->n_touched + 1) * sizeof *bnd);
    for (int i = 0; i < c->n_touched; i++) {
        int v = c->touched[i];
        if (v != d && t->nodes[v].kind == TOPO_SWITCH) bnd[nb++] = v;
        else sel[nl++] = v;
    }
    dest_info *di = dt_xcalloc(1, sizeof *di);
    build_map(c, &di->local, t->n_nodes, c->key, sel, nl, false);
    qsort(bnd, (size_t)nb, sizeof *bnd, cmp_int);
    di->n_bound = nb;
    di->bound_node = bnd;
    di->bound_sw = dt_xmalloc(((size_t)nb + 1) * sizeof *di->bound_sw);
    di->bound_key = dt_xmalloc(((size_t)nb + 1) * sizeof *di->bound_key);
    for (int i = 0; i < nb; i++) {
        di->bound_key[i] = c->key[bnd[i]];
        di->bound_sw[i] = c->sw_idx[bnd[i]];
    }
    c->map_bytes += sizeof *di + (size_t)nb * 16;
    free(sel);
    reset_scratch(c);
    c->dest[g] = di;
    return di;
}

static uint64_t dist_to(const topo *t, route_cache *c, const dest_info *di, int v)
{
    uint64_t best = map_get(&di->local, v);
    for (int i = 0; i < di->n_bound; i++) {
        uint64_t x = dist_sw(t, c, di->bound_sw[i], v);
        if (x != KEY_INF && x + di->bound_key[i] < best) best = x + di->bound_key[i];
    }
    return best;
}

/* Next-hop list of node v towards target: the out-link positions i (CSR order) whose link
 * e = (v -> w) keeps a shortest path, cost(e) + D(w) == D(v), with w allowed to relay (or the
 * target itself), dv being v's distance. target >= 0 is a switch node (D = dist_sw to core
 * index tsw); target < 0 is GPU -(target+1)'s local map m (v is then in that map, or is a
 * boundary switch of it and dv its suffix cost), tnode the target's node. The list depends only
 * on (v, target). Cached: a route then costs a few lookups per hop instead of one distance
 * evaluation per neighbour. */
static size_t hop_slot(const route_cache *c, int v, int target)
{
    uint64_t h = mix64(((uint64_t)(uint32_t)v << 32) ^ (uint64_t)(uint32_t)target);
    return (size_t)(h & (c->hops_cap - 1));
}

static void hops_grow(route_cache *c)
{
    size_t old_cap = c->hops_cap;
    hop_entry *old = c->hops;
    c->hops_cap = old_cap ? 2 * old_cap : 4096;
    c->hops = dt_xmalloc(c->hops_cap * sizeof *c->hops);
    for (size_t i = 0; i < c->hops_cap; i++) c->hops[i].v = -1;
    for (size_t i = 0; i < old_cap; i++) {
        if (old[i].v < 0) continue;
        size_t k = hop_slot(c, old[i].v, old[i].target);
        while (c->hops[k].v >= 0) k = (k + 1) & (c->hops_cap - 1);
        c->hops[k] = old[i];
    }
    free(old);
    c->map_bytes += (c->hops_cap - old_cap) * sizeof *c->hops;
}

static const int *next_hops(const topo *t, route_cache *c, int v, int target, const distmap *m,
                            int tsw, int tnode, uint64_t dv, int *n)
{
    if (c->hops_cap) {
        for (size_t k = hop_slot(c, v, target); c->hops[k].v >= 0; k = (k + 1) & (c->hops_cap - 1))
            if (c->hops[k].v == v && c->hops[k].target == target) {
                *n = c->hops[k].n;
                return c->hop_arena + c->hops[k].off;
            }
    }
    int deg = t->out_start[v + 1] - t->out_start[v];
    if (c->hop_used + (size_t)deg > c->hop_arena_cap) {
        size_t cap = c->hop_arena_cap ? 2 * c->hop_arena_cap : 65536;
        while (cap < c->hop_used + (size_t)deg) cap *= 2;
        c->hop_arena = dt_xrealloc(c->hop_arena, cap * sizeof *c->hop_arena);
        c->map_bytes += (cap - c->hop_arena_cap) * sizeof *c->hop_arena;
        c->hop_arena_cap = cap;
    }
    int *out = c->hop_arena + c->hop_used, cnt = 0;
    for (int i = 0; i < deg; i++) {
        int e = t->out_links[t->out_start[v] + i], w = t->links[e].dst;
        if (w != tnode && !topo_relays(t, w)) continue;
        uint64_t lc = link_cost(t, e);
        if (lc > dv) continue;
        uint64_t dw = m ? map_get(m, w) : dist_sw(t, c, tsw, w);
        if (dw != KEY_INF && dw + lc == dv) out[cnt++] = i;
    }
    if (2 * (c->hops_n + 1) > c->hops_cap) hops_grow(c);
    size_t k = hop_slot(c, v, target);
    while (c->hops[k].v >= 0) k = (k + 1) & (c->hops_cap - 1);
    c->hops[k] = (hop_entry){.v = v, .target = target, .off = (int)c->hop_used, .n = cnt};
    c->hops_n++;
    c->hop_used += (size_t)cnt;
    *n = cnt;
    return out;
}

/* Walk from src to dst along shortest-path links; returns the hop count or -1.
 * The out-links of cur that stay on a shortest path to dst are exactly the union of its
 * next-hop lists towards the targets achieving dist(cur, dst): the local map when it does, and
 * each boundary switch s with D_s(cur) + c_d(s) == dist(cur, dst) (for a link e = (cur -> w)
 * on a shortest path, whichever target gives dist(w, dst) also gives dist(cur, dst), and e is
 * on a shortest path to it). The union is taken in CSR order, so the choice below depends only
 * on the topology, the variant and cur. */
static int walk(const topo *t, route_cache *c, int src, int dst, int variant)
{
    int g = t->nodes[dst].gpu;
    dest_info *di = dest_of(t, c, g);
    int cur = src, len = 0;
    /* Forced hops: from a node with a single out-link (a GPU with one uplink) the walk below
     * would find that link as its only candidate, so take it without computing the node's
     * distance (half of a route's cost on a switch: a million routes for an all-to-all on
     * 1,024 GPUs). Unreachable stays unreachable: a link into a node that may not relay
     * ends the search as an infinite distance would, and so does a cycle of such nodes. */
    while (cur != dst && t->out_start[cur + 1] - t->out_start[cur] == 1) {
        int e = t->out_links[t->out_start[cur]], w = t->links[e].dst;
        if ((w != dst && !topo_relays(t, w)) || len >= t->n_nodes) return -1;
        c->pbuf[len++] = e;
        cur = w;
    }
    if (cur == dst) return len;
    uint64_t dv = dist_to(t, c, di, cur);
    if (dv == KEY_INF) return -1;
    while (cur != dst) {
        int first_off = -1, nl = 0, nsrc = 0, deg = t->out_start[cur + 1] - t->out_start[cur];
        /* Gather the lists; from the second one on, mark positions in c->flag (lists live in
         * an arena that next_hops may move, so the first is kept as an offset). */
        for (int b = -1; b < di->n_bound; b++) {
            const int *l2 = NULL;
            int n2 = 0;
            if (b < 0) {
                if (map_get(&di->local, cur) != dv) continue;
                l2 = next_hops(t, c, cur, -(g + 1), &di->local, -1, dst, dv, &n2);
            } else {
                int s = di->bound_node[b];
                if (s == cur) { /* at a boundary switch: the rest is the local suffix */
                    if (di->bound_key[b] != dv) continue;
                    l2 = next_hops(t, c, cur, -(g + 1), &di->local, -1, dst, dv, &n2);
                } else {
                    uint64_t x = dist_sw(t, c, di->bound_sw[b], cur);
                    if (x == KEY_INF || x + di->bound_key[b] != dv) continue;
                    l2 = next_hops(t, c, cur, s, NULL, di->bound_sw[b], s, x, &n2);
                }
            }
            if (nsrc == 0) {
                first_off = (int)(l2 - c->hop_arena);
                nl = n2;
            } else {
                if (nsrc == 1)
                    for (int i = 0; i < nl; i++) c->flag[c->hop_arena[first_off + i]] = 1;
                for (int i = 0; i < n2; i++) c->flag[l2[i]] = 1;
            }
            nsrc++;
        }
        const int *list = c->hop_arena + (first_off < 0 ? 0 : first_off);
        if (nsrc > 1) {
            nl = 0;
            for (int i = 0; i < deg; i++)
                if (c->flag[i]) {
                    c->cand[nl++] = i;
                    c->flag[i] = 0;
                }
            list = c->cand;
        }
        DT_ASSERT(nl > 0 && len < t->n_nodes);
        uint64_t h = mix64(((uint64_t)variant << 32) ^ (uint64_t)(cur + 1));
        int e = t->out_links[t->out_start[cur] + list[h % (uint64_t)nl]];
        c->pbuf[len++] = e;
        dv -= link_cost(t, e);
        cur = t->links[e].dst;
    }
    return len;
}

/* The home slot of a pair's paths: (src, dst) only, not the variant, so that the variants of
 * one pair (the 4 ECMP lanes the analytic time and the estimate look up one after another)
 * sit in neighbouring slots of the linear probe and a lane after the first finds its entry in
 * the cache lines the first one loaded. With the variant hashed in, every look-up of a table
 * of millions of paths was a cache miss: 60 % of route()'s own time at 16,384 GPUs went to
 * that first load. The cost: a pair's variants form one probe run, so a pair looked up under
 * many hashes (up to 64 variants) probes past its other variants; dtsim's callers use at most
 * 5 (net.c's 4 ECMP lanes and hash 0).
 * Where a path lives in the table changes nothing it returns. */
static size_t slot_of(const route_cache *c, int src, int dst, int variant)
{
    (void)variant;
    uint64_t h = mix64(((uint64_t)(uint32_t)src << 32) ^ (uint64_t)(uint32_t)dst);
    return (size_t)(h & (c->tab_cap - 1));
}

static void tab_grow(route_cache *c)
{
    size_t old_cap = c->tab_cap;
    path_entry *old = c->tab;
    c->tab_cap = old_cap ? 2 * old_cap : 1024;
    c->tab = dt_xmalloc(c->tab_cap * sizeof *c->tab);
    for (size_t i = 0; i < c->tab_cap; i++) c->tab[i].src = -1;
    for (size_t i = 0; i < old_cap; i++) {
        if (old[i].src < 0) continue;
        size_t s = slot_of(c, old[i].src, old[i].dst, old[i].variant);
        while (c->tab[s].src >= 0) s = (s + 1) & (c->tab_cap - 1);
        c->tab[s] = old[i];
    }
    free(old);
    c->path_bytes += (c->tab_cap - old_cap) * sizeof *c->tab;
}

static const int *store_path(route_cache *c, const int *p, int len)
{
    if (c->n_chunks == 0 || c->chunk_used + len > c->chunk_cap) {
        int cap = len > ARENA_CHUNK ? len : ARENA_CHUNK;
        c->chunks = dt_xrealloc(c->chunks, ((size_t)c->n_chunks + 1) * sizeof *c->chunks);
        c->chunks[c->n_chunks++] = dt_xmalloc((size_t)cap * sizeof(int));
        c->chunk_used = 0;
        c->chunk_cap = cap;
        c->path_bytes += (size_t)cap * sizeof(int);
    }
    int *dst = c->chunks[c->n_chunks - 1] + c->chunk_used;
    memcpy(dst, p, (size_t)len * sizeof *p);
    c->chunk_used += len;
    return dst;
}

static int route(topo *t, int src_gpu, int dst_gpu, uint64_t flow_hash, const int **links,
                 int *n_links, bool remember)
{
    if (src_gpu < 0 || src_gpu >= t->n_gpus || dst_gpu < 0 || dst_gpu >= t->n_gpus)
        return DT_EINPUT;
    if (src_gpu == dst_gpu) {
        *links = no_links;
        *n_links = 0;
        return DT_OK;
    }
    route_cache *c = t->route_cache;
    int variant = (int)(mix64(flow_hash) % ROUTE_VARIANTS);
    pthread_mutex_lock(&c->mu);
    setup(t, c);
    build_core(t, c);
    if (c->tab_cap) {
        for (size_t s = slot_of(c, src_gpu, dst_gpu, variant); c->tab[s].src >= 0;
             s = (s + 1) & (c->tab_cap - 1)) {
            path_entry *pe = &c->tab[s];
            if (pe->src == src_gpu && pe->dst == dst_gpu && pe->variant == variant) {
                *links = pe->links;
                *n_links = pe->len;
                pthread_mutex_unlock(&c->mu);
                return DT_OK;
            }
        }
    }
    if (c->map_bytes > c->map_budget) flush_maps(t, c);
    int len = walk(t, c, t->gpu_node[src_gpu], t->gpu_node[dst_gpu], variant);
    if (len < 0) {
        pthread_mutex_unlock(&c->mu);
        return DT_EINPUT;
    }
    if (!remember) {
        *links = store_path(c, c->pbuf, len);
        *n_links = len;
        pthread_mutex_unlock(&c->mu);
        return DT_OK;
    }
    if (2 * (c->tab_n + 1) > c->tab_cap) tab_grow(c);
    size_t s = slot_of(c, src_gpu, dst_gpu, variant);
    while (c->tab[s].src >= 0) s = (s + 1) & (c->tab_cap - 1);
    c->tab[s] = (path_entry){.src = src_gpu, .dst = dst_gpu, .variant = variant, .len = len,
                             .links = store_path(c, c->pbuf, len)};
    c->tab_n++;
    *links = c->tab[s].links;
    *n_links = len;
    pthread_mutex_unlock(&c->mu);
    return DT_OK;
}

int topo_route(topo *t, int src_gpu, int dst_gpu, uint64_t flow_hash, const int **links,
               int *n_links)
{
    return route(t, src_gpu, dst_gpu, flow_hash, links, n_links, true);
}

int topo_route_unlisted(topo *t, int src_gpu, int dst_gpu, uint64_t flow_hash,
                        const int **links, int *n_links)
{
    return route(t, src_gpu, dst_gpu, flow_hash, links, n_links, false);
}

/* Largest hop count of a route over all GPU pairs, from the same distance decomposition the
 * routes use: per destination one local search plus a lookup per source GPU and boundary
 * switch, O(G^2 |B|) lookups after the shared switch maps. A destination's own map is freed
 * once used unless it was cached before, so memory stays at the switch maps (a switchless
 * torus pays one whole-graph search per destination, as the generic search would). */
int topo_route_diameter(topo *t)
{
    route_cache *c = t->route_cache;
    int diam = 0;
    pthread_mutex_lock(&c->mu);
    setup(t, c);
    build_core(t, c);
    for (int g = 0; g < t->n_gpus; g++) {
        if (c->map_bytes > c->map_budget) flush_maps(t, c);
        bool had = c->dest[g] != NULL;
        dest_info *di = dest_of(t, c, g);
        for (int h = 0; h < t->n_gpus; h++) {
            uint64_t x = dist_to(t, c, di, t->gpu_node[h]);
            if (x == KEY_INF) continue; /* loading rules this out */
            int hops = (int)(x & ((1u << HOP_BITS) - 1));
            if (hops > diam) diam = hops;
        }
        if (!had) {
            c->map_bytes -= map_size(&di->local) + sizeof *di + (size_t)di->n_bound * 16;
            free_dest(di);
            c->dest[g] = NULL;
        }
    }
    pthread_mutex_unlock(&c->mu);
    return diam;
}
