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
#include <stdio.h>
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

/* ---- tiers ---- */

/* "rail3.leaf12" -> "leaf", "agg3.1" -> "agg": a node name without digits, its last non-empty
 * dotted part. */
static void tier_name(const char *name, char *buf, size_t n)
{
    char tmp[256];
    size_t k = 0;
    for (const char *s = name; *s && k + 1 < sizeof tmp; s++)
        if (*s < '0' || *s > '9') tmp[k++] = *s;
    while (k > 0 && tmp[k - 1] == '.') k--;
    tmp[k] = '\0';
    const char *dot = strrchr(tmp, '.');
    const char *part = dot ? dot + 1 : tmp;
    size_t len = strlen(part) < n - 1 ? strlen(part) : n - 1;
    memcpy(buf, part, len);
    buf[len] = '\0';
}

/* Breadth-first levels from every GPU at once (GPUs do not relay here: a tier is made of
 * switches and NICs), then the nodes that lead to the top level, then the links up between
 * consecutive levels of those nodes. O(nodes + links). */
static void find_tiers(const topo *t, topo_info *out)
{
    int n = t->n_nodes;
    int *lev = dt_xmalloc(((size_t)n + 1) * sizeof *lev), *q = dt_xmalloc(((size_t)n + 1) * sizeof *q);
    unsigned char *upward = dt_xcalloc((size_t)n + 1, 1);
    int qh = 0, qt = 0, top = 0;
    for (int v = 0; v < n; v++) lev[v] = -1;
    for (int g = 0; g < t->n_gpus; g++) {
        lev[t->gpu_node[g]] = 0;
        q[qt++] = t->gpu_node[g];
    }
    while (qh < qt) {
        int v = q[qh++];
        if (lev[v] > 0 && t->nodes[v].kind == TOPO_GPU) continue;
        for (int i = t->out_start[v]; i < t->out_start[v + 1]; i++) {
            int w = t->links[t->out_links[i]].dst;
            if (lev[w] >= 0) continue;
            lev[w] = lev[v] + 1;
            if (lev[w] > top) top = lev[w];
            q[qt++] = w;
        }
    }
    /* upward: at the top level, or with a link up to an upward node (walk levels downwards) */
    for (int v = 0; v < n; v++) upward[v] = lev[v] == top && top > 0;
    for (int k = top - 1; k >= 0; k--)
        for (int v = 0; v < n; v++) {
            if (lev[v] != k || upward[v]) continue;
            for (int i = t->out_start[v]; i < t->out_start[v + 1] && !upward[v]; i++) {
                int w = t->links[t->out_links[i]].dst;
                if (lev[w] == k + 1 && upward[w]) upward[v] = 1;
            }
        }
    int nt = top < TOPO_MAX_TIERS ? top : TOPO_MAX_TIERS;
    out->n_tiers = nt;
    out->tier_bisection = 0;
    for (int k = 0; k < nt; k++) {
        topo_tier *T = &out->tiers[k];
        memset(T, 0, sizeof *T);
        T->level = k;
    }
    /* per node: bandwidth in from below and up */
    double *in_bw = dt_xcalloc((size_t)n + 1, sizeof *in_bw), *up_bw = dt_xcalloc((size_t)n + 1, sizeof *up_bw);
    for (int l = 0; l < t->n_links; l++) {
        int a = t->links[l].src, b = t->links[l].dst;
        int k = lev[a];
        if (k < 0 || k >= nt || lev[b] != k + 1 || !upward[a] || !upward[b]) continue;
        topo_tier *T = &out->tiers[k];
        if (T->n_links++ == 0) {
            tier_name(t->nodes[a].name, T->from, sizeof T->from);
            tier_name(t->nodes[b].name, T->to, sizeof T->to);
        }
        T->up_bw += t->links[l].bandwidth;
        up_bw[a] += t->links[l].bandwidth;
        in_bw[b] += t->links[l].bandwidth;
    }
    for (int v = 0; v < n; v++) {
        int k = lev[v];
        if (k >= 1 && k < nt && up_bw[v] > 0 && in_bw[v] / up_bw[v] > out->tiers[k].worst)
            out->tiers[k].worst = in_bw[v] / up_bw[v];
    }
    for (int k = 0; k < nt; k++) {
        topo_tier *T = &out->tiers[k];
        T->bisection = T->up_bw / 2;
        T->oversubscription = k > 0 && T->up_bw > 0 ? out->tiers[k - 1].up_bw / T->up_bw : 0;
        if (k == 0 || T->bisection < out->tier_bisection) out->tier_bisection = T->bisection;
    }
    free(in_bw);
    free(up_bw);
    free(lev);
    free(q);
    free(upward);
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
    double b = t->gen.family == TOPO_FAMILY_FILE ? -1 : closed_bisection(t);
    /* The exact methods cost a search per GPU: a 262,144-GPU file would take hours. Past the
     * bound both are left out (and said so) rather than half-computed. */
    double work = (double)t->n_gpus * ((double)t->n_nodes + (double)t->n_links);
    if ((d < 0 || b < 0) && work > TOPO_INFO_MAX_WORK) {
        out->metrics_skipped = true;
        out->diameter_hops = -1;
        out->bisection_bw = 0;
    } else {
        out->diameter_hops = d >= 0 ? d : topo_route_diameter(t);
        out->bisection_exact = b >= 0;
        out->bisection_bw = b >= 0 ? b : topo_bisection_maxflow(t);
    }
    find_tiers(t, out);
    for (int i = 0; i < t->n_gpus; i++) {
        const gpu_spec *g = &t->gpus[i];
        int p = GPU_BF16;
        while (p > 0 && g->peak_flops[p] <= 0) p--;
        out->sum_peak_bf16 += g->peak_flops[p];
        out->sum_hbm_bytes += g->hbm_bytes;
        out->sum_cost_per_hour += g->cost_per_hour;
        int k = 0;
        while (k < out->n_gpu_types && strcmp(out->gpu_types[k].name, g->name)) k++;
        if (k == out->n_gpu_types) {
            if (k == TOPO_INFO_GPU_TYPES) continue;
            struct topo_gpu_type *ty = &out->gpu_types[k];
            snprintf(ty->name, sizeof ty->name, "%s", g->name);
            ty->peak_bf16 = g->peak_flops[p];
            ty->hbm_bytes = g->hbm_bytes;
            ty->cost_per_hour = g->cost_per_hour;
            out->n_gpu_types++;
        }
        out->gpu_types[k].count++;
    }
    if (t->gen.family == TOPO_FAMILY_FAT_TREE || t->gen.family == TOPO_FAMILY_DGX) {
        out->asked_oversubscription = t->gen.oversubscription;
        out->radix = t->gen.radix;
        topo_leaf_ports(&t->gen, &out->leaf_down, &out->leaf_up);
    }
    return DT_OK;
}
