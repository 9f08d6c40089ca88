/* topo_info.c - counts, diameter and bisection bandwidth of a topology.
 *
 * Generated topologies get closed forms from their parameters (t->gen) wherever the family's
 * structure makes the answer exact; everything else uses a stated method:
 *  - diameter: the largest hop count of a route, from the routing module's distance maps
 *    (topo_route_diameter: one search per leaf switch, then a few lookups per GPU pair);
 *    topo_diameter_search() below, one forward Dijkstra per GPU, is the independent check the
 *    tests compare it with;
 *  - bisection: maximum flow (Dinic) from the first half of the GPUs, in index order, to the
 *    second half, with link bandwidths as capacities. It is the exact min cut for that one
 *    balanced partition, hence an upper bound on the true bisection; files listing GPUs in
 *    their natural order (box by box, leaf by leaf) get the usual halving.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "topo_internal.h"

/* ---- generic diameter ---- */

typedef struct hitem {
    uint64_t key;
    int node;
} hitem;

static void hpush(hitem **h, int *n, int *cap, uint64_t key, int node)
{
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 1024;
        *h = dt_xrealloc(*h, (size_t)*cap * sizeof **h);
    }
    int i = (*n)++;
    while (i > 0 && (*h)[(i - 1) / 2].key > key) {
        (*h)[i] = (*h)[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    (*h)[i] = (hitem){key, node};
}

static hitem hpop(hitem *h, int *n)
{
    hitem top = h[0], last = h[--*n];
    int i = 0;
    for (;;) {
        int l = 2 * i + 1;
        if (l >= *n) break;
        if (l + 1 < *n && h[l + 1].key < h[l].key) l++;
        if (h[l].key >= last.key) break;
        h[i] = h[l];
        i = l;
    }
    if (*n > 0) h[i] = last;
    return top;
}

int topo_diameter_search(const topo *t)
{
    int n = t->n_nodes, diam = 0, hn = 0, hcap = 0;
    uint64_t *key = dt_xmalloc(((size_t)n + 1) * sizeof *key);
    hitem *h = NULL;
    for (int g = 0; g < t->n_gpus; g++) {
        int s = t->gpu_node[g];
        for (int v = 0; v < n; v++) key[v] = UINT64_MAX;
        key[s] = 0;
        hn = 0;
        hpush(&h, &hn, &hcap, 0, s);
        while (hn) {
            hitem it = hpop(h, &hn);
            int v = it.node;
            if (it.key != key[v]) continue;
            if (t->nodes[v].kind == TOPO_GPU) {
                int hops = (int)(it.key & 0xffff);
                if (hops > diam) diam = hops;
            }
            if (v != s && !topo_relays(t, v)) continue;
            for (int i = t->out_start[v]; i < t->out_start[v + 1]; i++) {
                const topo_link *l = &t->links[t->out_links[i]];
                sim_time_t lat = l->latency;
                if (t->nodes[l->dst].kind == TOPO_SWITCH) lat += t->switch_latency;
                uint64_t nk = it.key + ((uint64_t)lat << 16) + 1;
                if (nk < key[l->dst]) {
                    key[l->dst] = nk;
                    hpush(&h, &hn, &hcap, nk, l->dst);
                }
            }
        }
    }
    free(key);
    free(h);
    return diam;
}

/* ---- generic bisection: Dinic max flow ---- */

typedef struct arc {
    int to, next;
    double cap;
} arc;

typedef struct flownet {
    arc *a;
    int n_arcs, cap_arcs;
    int *head, *level, *it, *queue;
    int n;
} flownet;

static void add_arc(flownet *f, int u, int v, double c)
{
    if (f->n_arcs + 2 > f->cap_arcs) {
        f->cap_arcs = f->cap_arcs ? 2 * f->cap_arcs : 1024;
        f->a = dt_xrealloc(f->a, (size_t)f->cap_arcs * sizeof *f->a);
    }
    f->a[f->n_arcs] = (arc){v, f->head[u], c};
    f->head[u] = f->n_arcs++;
    f->a[f->n_arcs] = (arc){u, f->head[v], 0};
    f->head[v] = f->n_arcs++;
}

static bool bfs_levels(flownet *f, int s, int t)
{
    for (int v = 0; v < f->n; v++) f->level[v] = -1;
    int qh = 0, qt = 0;
    f->queue[qt++] = s;
    f->level[s] = 0;
    while (qh < qt) {
        int v = f->queue[qh++];
        for (int e = f->head[v]; e >= 0; e = f->a[e].next)
            if (f->a[e].cap > 1e-9 && f->level[f->a[e].to] < 0) {
                f->level[f->a[e].to] = f->level[v] + 1;
                f->queue[qt++] = f->a[e].to;
            }
    }
    return f->level[t] >= 0;
}

/* Iterative blocking-flow search (no recursion: paths can be thousands of nodes long). */
static double augment(flownet *f, int s, int t, int *stack_e)
{
    double total = 0;
    for (;;) {
        int depth = 0, v = s;
        while (v != t) {
            int e;
            for (e = f->it[v]; e >= 0; e = f->a[e].next)
                if (f->a[e].cap > 1e-9 && f->level[f->a[e].to] == f->level[v] + 1) break;
            f->it[v] = e;
            if (e < 0) {
                if (depth == 0) return total;
                f->level[v] = -1; /* dead end */
                depth--;
                v = f->a[stack_e[depth] ^ 1].to;
                continue;
            }
            stack_e[depth++] = e;
            v = f->a[e].to;
        }
        double push = INFINITY;
        for (int i = 0; i < depth; i++)
            if (f->a[stack_e[i]].cap < push) push = f->a[stack_e[i]].cap;
        for (int i = 0; i < depth; i++) {
            f->a[stack_e[i]].cap -= push;
            f->a[stack_e[i] ^ 1].cap += push;
        }
        total += push;
    }
}

double topo_bisection_maxflow(const topo *t)
{
    if (t->n_gpus < 2) return 0;
    flownet f;
    memset(&f, 0, sizeof f);
    f.n = t->n_nodes + 2;
    int S = t->n_nodes, T = t->n_nodes + 1;
    f.head = dt_xmalloc((size_t)f.n * sizeof *f.head);
    for (int v = 0; v < f.n; v++) f.head[v] = -1;
    for (int e = 0; e < t->n_links; e++) add_arc(&f, t->links[e].src, t->links[e].dst, t->links[e].bandwidth);
    double inf = 0;
    for (int e = 0; e < t->n_links; e++) inf += t->links[e].bandwidth;
    inf = inf * 2 + 1;
    int half = t->n_gpus / 2;
    for (int g = 0; g < t->n_gpus; g++) {
        if (g < half) add_arc(&f, S, t->gpu_node[g], inf);
        else add_arc(&f, t->gpu_node[g], T, inf);
    }
    f.level = dt_xmalloc((size_t)f.n * sizeof *f.level);
    f.it = dt_xmalloc((size_t)f.n * sizeof *f.it);
    f.queue = dt_xmalloc((size_t)f.n * sizeof *f.queue);
    int *stack_e = dt_xmalloc((size_t)f.n * sizeof *stack_e);
    double flow = 0;
    while (bfs_levels(&f, S, T)) {
        memcpy(f.it, f.head, (size_t)f.n * sizeof *f.it);
        flow += augment(&f, S, T, stack_e);
    }
    free(stack_e);
    free(f.a);
    free(f.head);
    free(f.level);
    free(f.it);
    free(f.queue);
    return flow;
}

/* Max-flow from a set of nodes to another over the links' bandwidths, under the relay rule:
 * a GPU that does not relay carries flow only as a source or a sink of this question. */
double topo_maxflow(const topo *t, const int *src, int n_src, const int *dst, int n_dst)
{
    if (n_src <= 0 || n_dst <= 0) return 0;
    flownet f;
    memset(&f, 0, sizeof f);
    f.n = t->n_nodes + 2;
    int S = t->n_nodes, T = t->n_nodes + 1;
    f.head = dt_xmalloc((size_t)f.n * sizeof *f.head);
    for (int v = 0; v < f.n; v++) f.head[v] = -1;
    unsigned char *role = dt_xcalloc((size_t)t->n_nodes + 1, 1); /* 1 source, 2 sink */
    for (int i = 0; i < n_src; i++) role[src[i]] |= 1;
    for (int i = 0; i < n_dst; i++) role[dst[i]] |= 2;
    double inf = 1;
    for (int e = 0; e < t->n_links; e++) {
        const topo_link *l = &t->links[e];
        inf += 2 * l->bandwidth;
        if (!topo_relays(t, l->src) && !(role[l->src] & 1)) continue;
        if (!topo_relays(t, l->dst) && !(role[l->dst] & 2)) continue;
        add_arc(&f, l->src, l->dst, l->bandwidth);
    }
    for (int i = 0; i < n_src; i++) add_arc(&f, S, src[i], inf);
    for (int i = 0; i < n_dst; i++) add_arc(&f, dst[i], T, inf);
    f.level = dt_xmalloc((size_t)f.n * sizeof *f.level);
    f.it = dt_xmalloc((size_t)f.n * sizeof *f.it);
    f.queue = dt_xmalloc((size_t)f.n * sizeof *f.queue);
    int *stack_e = dt_xmalloc((size_t)f.n * sizeof *stack_e);
    double flow = 0;
    while (bfs_levels(&f, S, T)) {
        memcpy(f.it, f.head, (size_t)f.n * sizeof *f.it);
        flow += augment(&f, S, T, stack_e);
    }
    free(stack_e);
    free(role);
    free(f.a);
    free(f.head);
    free(f.level);
    free(f.it);
    free(f.queue);
    return flow;
}

/* ---- closed forms ---- */

/* Diameter in hops; -1 when no closed form applies. */
static int closed_diameter(const topo *t)
{
    const topo_gen_params *p = &t->gen;
    int n = t->n_gpus;
    if (n < 2) return 0;
    switch (p->family) {
    case TOPO_FAMILY_RING: return n / 2;
    case TOPO_FAMILY_SWITCH: return 2;
    case TOPO_FAMILY_TORUS: {
        int d = 0;
        for (int i = 0; i < p->n_dims; i++) d += p->dims[i] / 2;
        return d;
    }
    case TOPO_FAMILY_FAT_TREE: {
        int down, up;
        topo_leaf_ports(p, &down, &up);
        int leaves = (n + down - 1) / down, half = p->radix / 2;
        if (leaves == 1) return 2;
        if (p->tiers == 2) return 4;
        return (leaves + half - 1) / half > 1 ? 6 : 4;
    }
    case TOPO_FAMILY_DGX: {
        int down, up;
        topo_leaf_ports(p, &down, &up);
        int per_rail = (p->nodes + down - 1) / down;
        if (p->nodes == 1) return 2;
        return (p->gpus_per_node > 1 || per_rail > 1) ? 6 : 4;
    }
    default: return -1;
    }
}

/* Bisection in B/s; < 0 when no exact closed form applies. */
static double closed_bisection(const topo *t)
{
    const topo_gen_params *p = &t->gen;
    int n = t->n_gpus;
    double B = p->bandwidth;
    if (n < 2) return 0;
    switch (p->family) {
    case TOPO_FAMILY_RING: return 2 * B; /* any two arcs: two links cut (two parallel for n=2) */
    case TOPO_FAMILY_SWITCH: return (n / 2) * B;
    case TOPO_FAMILY_TORUS: {
        /* Planar cut across the largest extent k: N/k rings each cut twice (once if k = 2).
         * Exact (the k-ary n-cube result) when that extent is even. */
        int k = 0;
        for (int i = 0; i < p->n_dims; i++)
            if (p->dims[i] > k) k = p->dims[i];
        if (k % 2) return -1;
        return (double)(n / k) * (k > 2 ? 2 : 1) * B;
    }
    case TOPO_FAMILY_FAT_TREE: {
        int down, up;
        topo_leaf_ports(p, &down, &up);
        if (n <= down) return (n / 2) * B; /* one leaf */
        if (n % down) return -1;           /* a partly filled leaf: no clean halving */
        int leaves = n / down;
        if (leaves % 2) return -1;
        double cut = fmin(n / 2.0, leaves * (double)up / 2.0);
        if (p->tiers == 3) {
            int half = p->radix / 2, pods = (leaves + half - 1) / half;
            if (pods > 1) {
                if (leaves % half || pods % 2) return -1;
                cut = fmin(cut, pods * (double)up * half / 2.0);
            }
        }
        return cut * B;
    }
    case TOPO_FAMILY_DGX: {
        int down, up;
        topo_leaf_ports(p, &down, &up);
        int per_rail = (p->nodes + down - 1) / down;
        if (p->nodes < 2 || p->nodes % 2) return -1;
        double nic = p->nic_bw;
        double cut = p->nodes * (double)p->gpus_per_node / 2.0 * nic;
        if (per_rail > 1) {
            if (p->nodes % down || per_rail % 2) return -1;
            cut = fmin(cut, p->gpus_per_node * (double)per_rail * up / 2.0 * nic);
        }
        return cut;
    }
    default: return -1;
    }
}

int topo_get_info(topo *t, topo_info *out, dt_error *err)
{
    memset(out, 0, sizeof *out);
    out->n_gpus = t->n_gpus;
    out->n_hosts = t->n_hosts;
    out->n_links = t->n_links;
    for (int v = 0; v < t->n_nodes; v++) {
        out->n_switches += t->nodes[v].kind == TOPO_SWITCH;
        out->n_nics += t->nodes[v].kind == TOPO_NIC;
    }
    int d = t->gen.family == TOPO_FAMILY_FILE ? -1 : closed_diameter(t);
    out->diameter_hops = d >= 0 ? d : topo_route_diameter(t);
    double b = t->gen.family == TOPO_FAMILY_FILE ? -1 : closed_bisection(t);
    out->bisection_exact = b >= 0;
    out->bisection_bw = b >= 0 ? b : topo_bisection_maxflow(t);
    return DT_OK;
}
