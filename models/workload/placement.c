/* placement.c - "parallel.placement": "bandwidth": which GPU holds each (dp, pp, tp) rank,
 * read off the topology's routes instead of a fixed formula.
 *
 * The formula (dp, pp, tp outermost to innermost) is right when the GPU numbering follows the
 * fabric (boxes of consecutive GPUs, regions of consecutive boxes) and the plan's heavy axis is
 * the one the formula keeps inside them. Where it is not - a pipeline whose activations are the
 * bulk of the traffic laid across regions, a data-parallel ring visiting sites in an order that
 * makes one slow link its bottleneck - the heuristic below does what a person with the
 * bandwidth matrix would (Yuan et al. 2022 search the same space with an evolutionary
 * scheduler; this is the greedy, documented version, docs/workloads.md):
 *
 *   1. TP groups: the lowest-numbered free GPU and the tp - 1 free GPUs with the fastest routes
 *      to it (a box's NVLink before its network).
 *   2. Of PP and DP, the axis that moves more bytes per GPU per step gets the next-fastest
 *      links: its groups (a pipeline's pp TP groups, or a stage's dp TP groups) are formed the
 *      same way, around the lowest-numbered free TP group; the other axis crosses between them.
 *   3. A pipeline's stages are ordered along the path whose slowest link is fastest; the
 *      replicas (and so the rings of every data-parallel group, which follow the group order
 *      across hosts) around the ring whose slowest link is fastest. Exact (dynamic programming
 *      over subsets) for up to 16 items, greedy nearest-fastest beyond.
 *
 * Bandwidth between two GPUs is the bottleneck of the route the network takes (topo_route,
 * flow hash 0), and between hosts no more than a GPU's share of the links the hosts' GPUs
 * share when all of them talk at once (host_share). Cost: one route per candidate pair,
 * O(n^2 / tp) for the TP groups and O((n / tp)^2) between them, plus a route per GPU of each
 * host pair, plus 2^16 x 16^2 steps per exact ordering. What it does not do: weigh contention between axes (it ranks links, it does not
 * simulate), revisit step 1 after step 2, or search beyond the greedy groups.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dtsim/topo.h"
#include "dtsim/workload.h"

static double route_bw(topo *t, int a, int b)
{
    if (a == b) return INFINITY;
    const int *links = NULL;
    int nl = 0;
    if (topo_route(t, a, b, 0, &links, &nl) != DT_OK) return 0;
    double bw = INFINITY;
    for (int i = 0; i < nl; i++) bw = fmin(bw, t->links[links[i]].bandwidth);
    return bw;
}

/* What a GPU gets between two hosts when every GPU of one talks to its counterpart in the
 * other at once - which is what a data-parallel ring or a pipeline between two boxes or
 * regions does: route GPU k of A to GPU k of B for every k, count the routes on each link,
 * and take the least bandwidth / count. A region pair's one wide-area link carrying 8 GPUs'
 * rings gives each an eighth, where the bare route's bottleneck would show the GPU's own NIC. */
typedef struct hosts_t {
    int n;            /* hosts, GPUs without one counted as their own */
    int *of;          /* per GPU: its host */
    int *first, *cnt; /* GPUs of host h: gpus[first[h] .. + cnt[h]) */
    int *gpus;
    double *share;    /* n x n, < 0 = not computed yet */
    int *uses;        /* per link: routes counted (scratch, kept zero) */
} hosts_t;

static void hosts_init(hosts_t *h, const topo *t)
{
    int n = t->n_gpus, nh = t->n_hosts;
    h->of = dt_xmalloc((size_t)n * sizeof *h->of);
    for (int g = 0; g < n; g++) {
        int x = t->nodes[t->gpu_node[g]].host;
        h->of[g] = x >= 0 ? x : nh++;
    }
    h->n = nh;
    h->first = dt_xcalloc((size_t)nh + 1, sizeof *h->first);
    h->cnt = dt_xcalloc((size_t)nh + 1, sizeof *h->cnt);
    h->gpus = dt_xmalloc((size_t)n * sizeof *h->gpus);
    for (int g = 0; g < n; g++) h->cnt[h->of[g]]++;
    for (int x = 1; x <= nh; x++) h->first[x] = h->first[x - 1] + h->cnt[x - 1];
    int *fill = dt_xcalloc((size_t)nh + 1, sizeof *fill);
    for (int g = 0; g < n; g++) h->gpus[h->first[h->of[g]] + fill[h->of[g]]++] = g;
    free(fill);
    h->share = dt_xmalloc((size_t)nh * nh * sizeof *h->share);
    for (size_t i = 0; i < (size_t)nh * nh; i++) h->share[i] = -1;
    h->uses = dt_xcalloc((size_t)t->n_links + 1, sizeof *h->uses);
}

static void hosts_free(hosts_t *h)
{
    free(h->of);
    free(h->first);
    free(h->cnt);
    free(h->gpus);
    free(h->share);
    free(h->uses);
}

static double host_share(topo *t, hosts_t *h, int A, int B)
{
    double *slot = &h->share[(size_t)A * h->n + B];
    if (*slot >= 0) return *slot;
    int k = h->cnt[A] < h->cnt[B] ? h->cnt[A] : h->cnt[B];
    double best = INFINITY;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < k; i++) {
            const int *links = NULL;
            int nl = 0;
            if (topo_route(t, h->gpus[h->first[A] + i], h->gpus[h->first[B] + i], 0, &links, &nl) != DT_OK)
                continue;
            for (int j = 0; j < nl; j++) {
                int l = links[j];
                if (pass == 0) h->uses[l]++;
                else if (h->uses[l] > 0) {
                    best = fmin(best, t->links[l].bandwidth / h->uses[l]);
                    h->uses[l] = 0;
                }
            }
        }
    *slot = best;
    return best;
}

/* Bandwidth one GPU can count on towards another: inside a host its route's bottleneck (NVLink
 * in a box), between hosts also no more than its share of the hosts' shared links. */
static double pair_bw(topo *t, hosts_t *h, int a, int b)
{
    double r = route_bw(t, a, b);
    if (a == b || h->of[a] == h->of[b]) return r;
    return fmin(r, host_share(t, h, h->of[a], h->of[b]));
}

/* Both directions: a ring or a pipeline uses each link pair both ways. */
static double sym(const double *w, int m, int i, int j) { return fmin(w[i * m + j], w[j * m + i]); }

#define EXACT_MAX 16

/* Order m items so that the slowest link between neighbours is fastest: a ring (closed, out[0]
 * = item 0) or a path (open). w is m x m. Ties: the first found in ascending subset, end and
 * predecessor order, so the result is deterministic. */
static void bottleneck_order(int m, const double *w, bool ring, int *out)
{
    if (m <= 2) {
        for (int i = 0; i < m; i++) out[i] = i;
        return;
    }
    if (m <= EXACT_MAX) {
        size_t full = (size_t)1 << m;
        double *best = dt_xmalloc(full * (size_t)m * sizeof *best);
        signed char *from = dt_xmalloc(full * (size_t)m);
        for (size_t k = 0; k < full * (size_t)m; k++) best[k] = -1;
        for (int j = 0; j < (ring ? 1 : m); j++) {
            best[((size_t)1 << j) * m + j] = INFINITY;
            from[((size_t)1 << j) * m + j] = -1;
        }
        for (size_t S = 1; S < full; S++)
            for (int j = 0; j < m; j++) {
                double v = best[S * m + j];
                if (!(S >> j & 1) || v < 0) continue;
                for (int k = 0; k < m; k++) {
                    if (S >> k & 1) continue;
                    size_t T = S | (size_t)1 << k;
                    double x = fmin(v, sym(w, m, j, k));
                    if (x > best[T * m + k]) {
                        best[T * m + k] = x;
                        from[T * m + k] = (signed char)j;
                    }
                }
            }
        size_t S = full - 1;
        int end = -1;
        double top = -1;
        for (int j = 0; j < m; j++) {
            double x = ring ? fmin(best[S * m + j], sym(w, m, j, 0)) : best[S * m + j];
            if (best[S * m + j] >= 0 && x > top) {
                top = x;
                end = j;
            }
        }
        DT_ASSERT(end >= 0);
        for (int pos = m - 1; pos >= 0; pos--) {
            out[pos] = end;
            int prev = from[S * m + end];
            S &= ~((size_t)1 << end);
            end = prev;
        }
        free(best);
        free(from);
        return;
    }
    /* greedy: from item 0, always on to the unvisited item with the fastest link */
    unsigned char *used = dt_xcalloc((size_t)m, 1);
    out[0] = 0;
    used[0] = 1;
    for (int pos = 1; pos < m; pos++) {
        int pick = -1;
        for (int k = 0; k < m; k++)
            if (!used[k] && (pick < 0 || sym(w, m, out[pos - 1], k) > sym(w, m, out[pos - 1], pick)))
                pick = k;
        out[pos] = pick;
        used[pick] = 1;
    }
    free(used);
}

/* Split items 0..m-1 into m / size groups: the lowest free item and the size - 1 free items
 * with the fastest links to it (ties: lower index). grp[g * size + i]. */
static void greedy_groups(int m, int size, double (*bw)(void *, int, int), void *ctx, int *grp)
{
    unsigned char *used = dt_xcalloc((size_t)m, 1);
    double *score = dt_xmalloc((size_t)m * sizeof *score);
    for (int g = 0, seed = 0; g < m / size; g++) {
        while (used[seed]) seed++;
        used[seed] = 1;
        grp[g * size] = seed;
        if (size > 1)
            for (int k = 0; k < m; k++) score[k] = used[k] ? -1 : bw(ctx, seed, k);
        for (int i = 1; i < size; i++) {
            int pick = -1;
            for (int k = 0; k < m; k++)
                if (!used[k] && (pick < 0 || score[k] > score[pick])) pick = k;
            used[pick] = 1;
            grp[g * size + i] = pick;
        }
    }
    free(score);
    free(used);
}

typedef struct ctx_t {
    topo *t;
    hosts_t *h;
    const double *ubw; /* between units, n_units x n_units */
    int n_units;
} ctx_t;

static double gpu_bw(void *c, int a, int b) { return pair_bw(((ctx_t *)c)->t, ((ctx_t *)c)->h, a, b); }
static double unit_bw(void *c, int a, int b)
{
    const ctx_t *x = c;
    return sym(x->ubw, x->n_units, a, b);
}

int wl_place_by_bandwidth(const js_ctx *c, wl_scenario *s, topo *t)
{
    wl_plan *p = &s->plan;
    if (!p->place_by_bandwidth) return DT_OK;
    int tp = p->tp, pp = p->pp, dp = p->dp, n = t->n_gpus, nu = n / tp;
    DT_ASSERT(n == tp * pp * dp);
    /* the search compares every pair of GPUs (TP groups) and holds a units x units bandwidth
     * matrix: quadratic, so bounded here, before anything is allocated, rather than by the
     * machine's memory (1,024 GPUs: 0.3 s; 4,096: 16x that) */
    if (n > WL_PLACE_MAX_GPUS)
        return js_fail(c, "parallel", "placement",
                       "\"bandwidth\" searches over pairs of GPUs: at most %d GPUs, found %d; "
                       "use a fixed placement order for larger clusters",
                       WL_PLACE_MAX_GPUS, n);
    hosts_t hs;
    hosts_init(&hs, t);
    ctx_t x = {.t = t, .h = &hs, .n_units = nu};
    /* 1. TP groups */
    int *unit = dt_xmalloc((size_t)n * sizeof *unit); /* unit u's GPUs: unit[u * tp + k] */
    greedy_groups(n, tp, gpu_bw, &x, unit);
    double *ubw = dt_xmalloc((size_t)nu * nu * sizeof *ubw);
    for (int u = 0; u < nu; u++)
        for (int v = 0; v < nu; v++) ubw[u * nu + v] = pair_bw(t, &hs, unit[u * tp], unit[v * tp]);
    x.ubw = ubw;
    /* 2. bytes per GPU per step: a pipeline stage sends each microbatch's activation forward
     * and its gradient back; a replica all-reduces its stage's gradients (a ring moves
     * 2 (d-1)/d of them) */
    double e = wl_precision_bytes(p->precision);
    double act = s->model.kind == WL_TRANSFORMER
                     ? p->micro_batch_size * s->model.seq_len * s->model.hidden * e
                     : s->model.act_bytes_per_layer;
    double pp_bytes = pp > 1 ? 2.0 * p->microbatches * act / tp : 0;
    double dp_bytes = dp > 1 ? 2.0 * (dp - 1) / dp * s->model.params / ((double)pp * tp) * e : 0;
    bool pp_inside = pp > 1 && pp_bytes >= dp_bytes;
    /* A[d * pp + st]: the unit holding replica d's stage st */
    int *A = dt_xmalloc((size_t)nu * sizeof *A);
    int m = nu > 1 ? nu : 1;
    int *grp = dt_xmalloc((size_t)m * sizeof *grp);
    int big = pp > dp ? pp : dp;
    int *ord = dt_xmalloc((size_t)big * sizeof *ord);
    double *w = dt_xmalloc((size_t)big * big * sizeof *w);
    int *tmp = dt_xmalloc((size_t)nu * sizeof *tmp);
    if (pp_inside) {
        /* pipelines inside fast domains, stages along their fastest path */
        greedy_groups(nu, pp, unit_bw, &x, grp);
        for (int d = 0; d < dp; d++) {
            const int *g = &grp[d * pp];
            for (int i = 0; i < pp; i++)
                for (int j = 0; j < pp; j++) w[i * pp + j] = ubw[g[i] * nu + g[j]];
            bottleneck_order(pp, w, false, ord);
            for (int st = 0; st < pp; st++) tmp[d * pp + st] = g[ord[st]];
        }
        /* replicas around the ring whose slowest link (over every stage's ring) is fastest */
        for (int i = 0; i < dp; i++)
            for (int j = 0; j < dp; j++) {
                double v = INFINITY;
                for (int st = 0; st < pp; st++) v = fmin(v, ubw[tmp[i * pp + st] * nu + tmp[j * pp + st]]);
                w[i * dp + j] = v;
            }
        bottleneck_order(dp, w, true, ord);
        for (int d = 0; d < dp; d++)
            for (int st = 0; st < pp; st++) A[d * pp + st] = tmp[ord[d] * pp + st];
    } else {
        /* each stage's data-parallel group inside a fast domain, replicas around its fastest
         * ring; the stages along the fastest path between groups */
        greedy_groups(nu, dp, unit_bw, &x, grp);
        for (int st = 0; st < pp; st++) {
            const int *g = &grp[st * dp];
            for (int i = 0; i < dp; i++)
                for (int j = 0; j < dp; j++) w[i * dp + j] = ubw[g[i] * nu + g[j]];
            bottleneck_order(dp, w, true, ord);
            for (int d = 0; d < dp; d++) tmp[st * dp + d] = g[ord[d]];
        }
        for (int i = 0; i < pp; i++)
            for (int j = 0; j < pp; j++) {
                double v = INFINITY;
                for (int d = 0; d < dp; d++) v = fmin(v, ubw[tmp[i * dp + d] * nu + tmp[j * dp + d]]);
                w[i * pp + j] = v;
            }
        bottleneck_order(pp, w, false, ord);
        for (int st = 0; st < pp; st++)
            for (int d = 0; d < dp; d++) A[d * pp + st] = tmp[ord[st] * dp + d];
    }
    int *map = dt_xmalloc((size_t)n * sizeof *map);
    free(p->gpu_map);
    p->gpu_map = NULL; /* wl_gpu_of below: the formula's slot */
    for (int d = 0; d < dp; d++)
        for (int st = 0; st < pp; st++)
            for (int k = 0; k < tp; k++) map[wl_gpu_of(p, d, st, k)] = unit[A[d * pp + st] * tp + k];
    p->gpu_map = map;
    free(tmp);
    free(w);
    free(ord);
    free(grp);
    free(A);
    free(ubw);
    free(unit);
    hosts_free(&hs);
    return DT_OK;
}
