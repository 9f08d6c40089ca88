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
 * Cache design (docs/architecture.md, "Topology and routing", has the measurements):
 * the distance from any node v to a destination GPU d is split at the last switch s on the
 * path:  dist(v, d) = min( local_d(v), min over s in B_d of D_s(v) + c_d(s) )
 *  - local_d and the boundary B_d (with suffix costs c_d) come from a backward Dijkstra from d
 *    that does not expand through switches: for a GPU behind a NIC or NVSwitch it touches 2-4
 *    nodes; in a switchless ring or torus it covers the whole graph.
 *  - D_s is a full backward Dijkstra to switch s, shared by every GPU that hangs off s: a leaf
 *    switch with 32 GPUs below pays one search for all of them. An NVSwitch whose GPUs do not
 *    relay is reached only from its own GPUs, so its map has 9 entries.
 * Maps covering more than a quarter of the nodes are dense arrays (8 B/node), smaller ones
 * sorted sparse arrays. A route then walks from the source, taking at each node one of the
 * out-links that stays on a shortest path; the choice among several is a hash of the flow's
 * variant and the node, so different flows spread over parallel links and spines while one
 * flow always gets the same path.
 * Paths are cached per (src, dst, variant) with variant = mix(flow_hash) mod 64 and stored in
 * an append-only arena, so returned pointers stay valid until topo_destroy(). Distance maps
 * are dropped (all at once) when they exceed a budget at the start of a route call; paths are
 * never dropped. A mutex makes concurrent topo_route() calls on one topology safe.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "topo_internal.h"

#define KEY_INF UINT64_MAX
#define HOP_BITS 16
#define ROUTE_VARIANTS 64
#define MAP_BUDGET_BYTES ((size_t)256 << 20)
#define ARENA_CHUNK 65536

typedef struct distmap {
    int n;         /* entries (n_nodes when dense) */
    bool dense;
    uint64_t *key; /* dense: per node; sparse: per entry */
    int *node;     /* sparse: sorted node indices */
} distmap;

typedef struct dest_info {
    distmap local;
    int n_bound;
    int *bound_node;
    uint64_t *bound_key;
} dest_info;

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
    distmap **sw_map;         /* per node; only switches get one */
    dest_info **dest;         /* per GPU */
    size_t map_bytes, map_budget;
    /* Dijkstra scratch, reset through the touched list */
    uint64_t *key;
    unsigned char *done;
    int *touched, n_touched;
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

void topo_route_cache_init(topo *t)
{
    route_cache *c = dt_xcalloc(1, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    c->map_budget = MAP_BUDGET_BYTES;
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

static void flush_maps(const topo *t, route_cache *c)
{
    if (c->sw_map)
        for (int v = 0; v < t->n_nodes; v++) {
            if (!c->sw_map[v]) continue;
            free_map(c->sw_map[v]);
            free(c->sw_map[v]);
            c->sw_map[v] = NULL;
        }
    if (c->dest)
        for (int g = 0; g < t->n_gpus; g++) {
            dest_info *d = c->dest[g];
            if (!d) continue;
            free_map(&d->local);
            free(d->bound_node);
            free(d->bound_key);
            free(d);
            c->dest[g] = NULL;
        }
    if (c->hops)
        for (size_t i = 0; i < c->hops_cap; i++) c->hops[i].v = -1;
    c->hops_n = 0;
    c->hop_used = 0;
    c->map_bytes = 0;
}

void topo_route_cache_flush(topo *t)
{
    route_cache *c = t->route_cache;
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    flush_maps(t, c);
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
    free(c->sw_map);
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
    size_t n = c->map_bytes + c->path_bytes;
    if (c->in_start)
        n += ((size_t)t->n_nodes + 1 + (size_t)t->n_links) * sizeof(int) +
             (size_t)t->n_nodes * (sizeof(uint64_t) + 1 + sizeof(int) + 2 * sizeof(void *));
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
    c->sw_map = dt_xcalloc((size_t)n + 1, sizeof *c->sw_map);
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

/* Backward Dijkstra to target. local: do not expand through switches (they become the
 * boundary). Leaves results in c->key for the touched nodes. */
static void search_back(const topo *t, route_cache *c, int target, bool local)
{
    c->n_touched = 0;
    c->heap_n = 0;
    c->key[target] = 0;
    c->touched[c->n_touched++] = target;
    heap_push(c, 0, target);
    while (c->heap_n) {
        heap_item it = heap_pop(c);
        int w = it.node;
        if (c->done[w] || it.key != c->key[w]) continue;
        c->done[w] = 1;
        bool expand = w == target ||
                      (topo_relays(t, w) && !(local && t->nodes[w].kind == TOPO_SWITCH));
        if (!expand) continue;
        for (int i = c->in_start[w]; i < c->in_start[w + 1]; i++) {
            int e = c->in_links[i], u = t->links[e].src;
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

/* Turn the touched nodes selected by keep() into a map; reset the scratch afterwards. */
static void build_map(const topo *t, route_cache *c, distmap *m, const int *sel, int n_sel)
{
    memset(m, 0, sizeof *m);
    if ((size_t)n_sel * 4 > (size_t)t->n_nodes) {
        m->dense = true;
        m->n = t->n_nodes;
        m->key = dt_xmalloc(((size_t)t->n_nodes + 1) * sizeof *m->key);
        for (int v = 0; v < t->n_nodes; v++) m->key[v] = KEY_INF;
        for (int i = 0; i < n_sel; i++) m->key[sel[i]] = c->key[sel[i]];
    } else {
        m->n = n_sel;
        m->node = dt_xmalloc(((size_t)n_sel + 1) * sizeof *m->node);
        m->key = dt_xmalloc(((size_t)n_sel + 1) * sizeof *m->key);
        memcpy(m->node, sel, (size_t)n_sel * sizeof *sel);
        qsort(m->node, (size_t)n_sel, sizeof *m->node, cmp_int);
        for (int i = 0; i < n_sel; i++) m->key[i] = c->key[m->node[i]];
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

static const distmap *switch_map(const topo *t, route_cache *c, int s)
{
    if (c->sw_map[s]) return c->sw_map[s];
    search_back(t, c, s, false);
    distmap *m = dt_xmalloc(sizeof *m);
    build_map(t, c, m, c->touched, c->n_touched);
    reset_scratch(c);
    c->sw_map[s] = m;
    return m;
}

static dest_info *dest_of(const topo *t, route_cache *c, int g)
{
    if (c->dest[g]) return c->dest[g];
    int d = t->gpu_node[g];
    search_back(t, c, d, true);
    /* Split touched nodes: switches other than d form the boundary, the rest the local map.
     * The touched list is partitioned in place (both parts are sorted afterwards). */
    int nl = 0, nb = 0;
    int *sel = dt_xmalloc(((size_t)c->n_touched + 1) * sizeof *sel);
    int *bnd = dt_xmalloc(((size_t)c->n_touched + 1) * sizeof *bnd);
    for (int i = 0; i < c->n_touched; i++) {
        int v = c->touched[i];
        if (v != d && t->nodes[v].kind == TOPO_SWITCH) bnd[nb++] = v;
        else sel[nl++] = v;
    }
    dest_info *di = dt_xcalloc(1, sizeof *di);
    build_map(t, c, &di->local, sel, nl);
    qsort(bnd, (size_t)nb, sizeof *bnd, cmp_int);
    di->n_bound = nb;
    di->bound_node = bnd;
    di->bound_key = dt_xmalloc(((size_t)nb + 1) * sizeof *di->bound_key);
    for (int i = 0; i < nb; i++) di->bound_key[i] = c->key[bnd[i]];
    c->map_bytes += sizeof *di + (size_t)nb * 12;
    free(sel);
    reset_scratch(c);
    c->dest[g] = di;
    return di;
}

static uint64_t dist_to(const topo *t, route_cache *c, const dest_info *di, int v)
{
    uint64_t best = map_get(&di->local, v);
    for (int i = 0; i < di->n_bound; i++) {
        uint64_t x = map_get(switch_map(t, c, di->bound_node[i]), v);
        if (x != KEY_INF && x + di->bound_key[i] < best) best = x + di->bound_key[i];
    }
    return best;
}

/* Next-hop list of node v towards target: the out-link positions i (CSR order) whose link
 * e = (v -> w) keeps a shortest path, cost(e) + D(w) == D(v), with w allowed to relay (or the
 * target itself), dv being v's distance. target >= 0 is a switch with map m; target < 0 is GPU
 * -(target+1)'s local map m (v is then in that map, or is a boundary switch of it and dv its
 * suffix cost), tnode the target's node. The list depends only on (v, target). Cached: a route then costs a few lookups per hop instead of one
 * distance evaluation per neighbour. */
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
                            int tnode, uint64_t dv, int *n)
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
        uint64_t dw = map_get(m, w);
        if (dw != KEY_INF && dw + link_cost(t, e) == dv) out[cnt++] = i;
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
    uint64_t dv = dist_to(t, c, di, src);
    if (dv == KEY_INF) return -1;
    int cur = src, len = 0;
    while (cur != dst) {
        int first_off = -1, nl = 0, nsrc = 0, deg = t->out_start[cur + 1] - t->out_start[cur];
        /* Gather the lists; from the second one on, mark positions in c->flag (lists live in
         * an arena that next_hops may move, so the first is kept as an offset). */
        for (int b = -1; b < di->n_bound; b++) {
            const int *l2 = NULL;
            int n2 = 0;
            if (b < 0) {
                if (map_get(&di->local, cur) != dv) continue;
                l2 = next_hops(t, c, cur, -(g + 1), &di->local, dst, dv, &n2);
            } else {
                int s = di->bound_node[b];
                if (s == cur) { /* at a boundary switch: the rest is the local suffix */
                    if (di->bound_key[b] != dv) continue;
                    l2 = next_hops(t, c, cur, -(g + 1), &di->local, dst, dv, &n2);
                } else {
                    const distmap *m = switch_map(t, c, s);
                    uint64_t x = map_get(m, cur);
                    if (x == KEY_INF || x + di->bound_key[b] != dv) continue;
                    l2 = next_hops(t, c, cur, s, m, s, x, &n2);
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

static size_t slot_of(const route_cache *c, int src, int dst, int variant)
{
    uint64_t h = mix64(((uint64_t)(uint32_t)src << 32) ^ ((uint64_t)(uint32_t)dst << 6) ^
                       (uint64_t)variant);
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

int topo_route(topo *t, int src_gpu, int dst_gpu, uint64_t flow_hash, const int **links,
               int *n_links)
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
            c->map_bytes -= map_size(&di->local) + sizeof *di + (size_t)di->n_bound * 12;
            free_map(&di->local);
            free(di->bound_node);
            free(di->bound_key);
            free(di);
            c->dest[g] = NULL;
        }
    }
    pthread_mutex_unlock(&c->mu);
    return diam;
}
