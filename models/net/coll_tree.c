/* coll_tree.c - pipelined trees: `tree` (binary), `dbt` (double binary tree) and the chain
 * that ring broadcast/reduce use.
 *
 * Step program, per tree t (streams 4t .. 4t+3 of every rank), data of the tree cut in C chunks:
 *   4t+0 up-recv    chunk c: receive from every child, reduce their partial sums
 *   4t+1 up-send    chunk c: send the partial sum to the parent (after 4t+0 step c, if inner)
 *   4t+2 down-recv  chunk c: receive the result from the parent
 *   4t+3 down-send  chunk c: send it to every child (after 4t+2 step c; the root after 4t+0)
 * Reduce uses the up half, broadcast the down half, all-reduce both (chunk c goes down as soon
 * as the root has it, so the two phases overlap like NCCL's tree).
 *
 * Shapes: a chain (ring broadcast/reduce) or binary heap over positions p = (rank - root) mod n,
 * the second dbt tree using position n-p for p > 0; or, for groups spanning several hosts with
 * equal GPU counts, host-aware trees (build_hosts): chains inside hosts, a binary tree of hosts
 * joining the chains' heads, the second tree mirrored with reversed chains. Parents and
 * children are computed once per collective (p->data), so steps are table lookups.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coll_internal.h"
#include "dtsim/error.h"

enum { SHAPE, TREES, CHUNKS, UP, DOWN };

#define MAX_KIDS 3 /* host-aware trees: next in the host's chain + two child hosts */

/* p->data: per tree t, parent[t*n + r] (-1 at the root), nkid[t*n + r], kid[(t*n + r)*3 + i]. */
typedef struct tree_map {
    int *parent, *nkid, *kid;
} tree_map;

static tree_map map_of(const coll_prog *p)
{
    int *base = p->data;
    size_t tn = (size_t)p->i[TREES] * p->n;
    return (tree_map){base, base + tn, base + 2 * tn};
}

static void add_kid(tree_map m, int n, int t, int parent, int kid)
{
    size_t at = (size_t)t * n + parent;
    DT_ASSERT(m.nkid[at] < MAX_KIDS);
    m.kid[at * MAX_KIDS + m.nkid[at]++] = kid;
    m.parent[(size_t)t * n + kid] = parent;
}

/* Flat shapes over positions q = (rank - root) mod n (the second tree: n - q for q > 0). */
static void build_flat(const coll_prog *p, tree_map m, int t)
{
    int n = p->n;
    for (int q = 1; q < n; q++) {
        int pq = p->i[SHAPE] == COLL_SHAPE_CHAIN ? q - 1 : (q - 1) / 2;
        int a = t == 1 && pq > 0 ? n - pq : pq, b = t == 1 ? n - q : q;
        add_kid(m, n, t, (a + p->root) % n, (b + p->root) % n);
    }
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Rank at index i of host h's chain in tree tr: tree 0 in host order; tree 1 reversed, except
 * that the root (index 0 of host 0) stays first. */
static int chain_at(const int *by, int g, int tr, int h, int i)
{
    if (tr == 0 || (h == 0 && i == 0)) return by[h * g + i];
    return h == 0 ? by[g - i] : by[h * g + g - 1 - i];
}

/* Host-aware (NCCL-like): inside each host a chain, across hosts a binary tree of the hosts
 * whose edges join the chains' heads. Hosts in order of first appearance with the root's host
 * first; a host's GPUs sorted by GPU index (rail proxy), the root's host starting at the root.
 * Tree 0: chains run in that order, so heads are local index 0 and every inter-host edge
 * joins two rail-0 NICs. Tree 1 mirrors the host tree (h -> H-h for h > 0) and reverses the
 * chains, so its heads sit on the last rail: the two trees use different NICs and mostly
 * different inner hosts. Returns 0 (nothing built) unless the group spans several hosts
 * with the same number g > 1 of GPUs on each. */
static int build_hosts(const coll_prog *p, tree_map m)
{
    const topo *t = p->t;
    int n = p->n, H = 0;
    if (t->n_hosts < 2) return 0;
    int *first = dt_xmalloc(sizeof(int) * (size_t)t->n_hosts);
    int *hid = dt_xmalloc(sizeof(int) * (size_t)n);
    int ok = 1;
    for (int h = 0; h < t->n_hosts; h++) first[h] = -1;
    /* the root's host first */
    for (int k = 0; k < n && ok; k++) {
        int r = (p->root + k) % n;
        int h = t->nodes[t->gpu_node[p->gpus[r]]].host;
        if (h < 0 || h >= t->n_hosts) ok = 0;
        else {
            if (first[h] < 0) first[h] = H++;
            hid[r] = first[h];
        }
    }
    int g = ok && H > 1 && n % H == 0 ? n / H : 0;
    int *cnt = dt_xcalloc((size_t)(H > 0 ? H : 1), sizeof(int));
    for (int r = 0; r < n && g; r++) cnt[hid[r]]++;
    for (int h = 0; h < H && g; h++)
        if (cnt[h] != g) g = 0;
    if (g < 2) {
        free(first);
        free(hid);
        free(cnt);
        return 0;
    }
    /* by[h*g + i]: ranks of host h, root host rotated to start at the root */
    int *by = dt_xmalloc(sizeof(int) * (size_t)n);
    int *key = dt_xmalloc(sizeof(int) * 2 * (size_t)g);
    memset(cnt, 0, sizeof(int) * (size_t)H);
    for (int r = 0; r < n; r++) by[hid[r] * g + cnt[hid[r]]++] = r;
    for (int h = 0; h < H; h++) {
        int *b = by + (size_t)h * g;
        for (int i = 0; i < g; i++) {
            key[2 * i] = p->gpus[b[i]];
            key[2 * i + 1] = b[i];
        }
        qsort(key, (size_t)g, 2 * sizeof(int), cmp_int);
        int start = 0;
        for (int i = 0; i < g; i++) {
            b[i] = key[2 * i + 1];
            if (h == 0 && b[i] == p->root) start = i;
        }
        if (h == 0 && start) { /* rotate so the root leads its host's chain */
            for (int i = 0; i < g; i++) key[i] = b[(start + i) % g];
            memcpy(b, key, sizeof(int) * (size_t)g);
        }
    }
    for (int tr = 0; tr < p->i[TREES]; tr++) {
        for (int h = 0; h < H; h++)
            for (int i = 1; i < g; i++)
                add_kid(m, n, tr, chain_at(by, g, tr, h, i - 1), chain_at(by, g, tr, h, i));
        for (int q = 1; q < H; q++) { /* host-tree positions; tree 1 mirrors hosts */
            int pq = (q - 1) / 2;
            int hc = tr == 1 ? H - q : q, hp = tr == 1 && pq > 0 ? H - pq : pq;
            add_kid(m, n, tr, chain_at(by, g, tr, hp, 0), chain_at(by, g, tr, hc, 0));
        }
    }
    free(first);
    free(hid);
    free(cnt);
    free(by);
    free(key);
    return 1;
}

static double chunk_bytes(const coll_prog *p, int t, int c)
{
    double tb = coll_part(p->bytes, p->elem, p->i[TREES], t);
    return coll_part(tb, p->elem, p->i[CHUNKS], c);
}

static int n_steps(const coll_prog *p, int r, int k)
{
    int t = k / 4, role = k % 4, C = p->i[CHUNKS];
    tree_map m = map_of(p);
    size_t at = (size_t)t * p->n + r;
    int nk = m.nkid[at], inner = m.parent[at] >= 0;
    switch (role) {
    case 0: return p->i[UP] && nk > 0 ? C : 0;
    case 1: return p->i[UP] && inner ? C : 0;
    case 2: return p->i[DOWN] && inner ? C : 0;
    default: return p->i[DOWN] && nk > 0 ? C : 0;
    }
}

static void step(const coll_prog *p, int r, int k, int c, coll_step *out)
{
    int t = k / 4, role = k % 4;
    tree_map m = map_of(p);
    size_t at = (size_t)t * p->n + r;
    int nk = m.nkid[at], parent = m.parent[at];
    const int *kids = m.kid + at * MAX_KIDS;
    double b = chunk_bytes(p, t, c);
    switch (role) {
    case 0:
        out->n_recvs = nk;
        out->reduce_bytes = nk * b;
        break;
    case 1:
        if (nk > 0) {
            out->dep_stream = 4 * t + 0;
            out->dep_step = c;
        }
        out->n_sends = 1;
        out->sends[0] = (coll_send){parent, 4 * t + 0, c, b};
        break;
    case 2: out->n_recvs = 1; break;
    default:
        if (parent >= 0) {
            out->dep_stream = 4 * t + 2;
            out->dep_step = c;
        } else if (p->i[UP]) {
            out->dep_stream = 4 * t + 0;
            out->dep_step = c;
        }
        out->n_sends = nk;
        for (int i = 0; i < nk; i++) out->sends[i] = (coll_send){kids[i], 4 * t + 2, c, b};
        break;
    }
}

int coll_build_pipe(coll_prog *p, int shape, int trees, dt_error *err)
{
    switch (p->op) {
    case COLL_BROADCAST: p->i[UP] = 0, p->i[DOWN] = 1; break;
    case COLL_REDUCE: p->i[UP] = 1, p->i[DOWN] = 0; break;
    case COLL_ALLREDUCE: p->i[UP] = 1, p->i[DOWN] = 1; break;
    default:
        return dt_error_set(err, DT_EINPUT, NULL, "algo",
                            "a pipelined %s runs broadcast, reduce or allreduce, not %s",
                            shape == COLL_SHAPE_CHAIN ? "chain" : "tree", coll_op_name(p->op));
    }
    p->i[SHAPE] = shape;
    p->i[TREES] = trees;
    double per_tree = p->bytes / trees;
    double C = ceil(per_tree / p->chunk);
    if (C < 1) C = 1;
    if (C > COLL_MAX_PIPE_CHUNKS) C = COLL_MAX_PIPE_CHUNKS;
    p->i[CHUNKS] = (int)C;
    size_t tn = (size_t)trees * p->n;
    int *base = dt_xmalloc(sizeof(int) * tn * (2 + MAX_KIDS));
    p->data = base; /* the engine frees it */
    tree_map m = map_of(p);
    for (size_t i = 0; i < tn; i++) {
        m.parent[i] = -1;
        m.nkid[i] = 0;
    }
    if (shape != COLL_SHAPE_HEAP || !build_hosts(p, m))
        for (int t = 0; t < trees; t++) build_flat(p, m, t);
    p->n_streams = 4 * trees;
    p->n_steps = n_steps;
    p->step = step;
    p->form = COLL_FORM_PIPE;
    return DT_OK;
}

int coll_build_tree(coll_prog *p, dt_error *err) { return coll_build_pipe(p, COLL_SHAPE_HEAP, 1, err); }

int coll_build_dbt(coll_prog *p, dt_error *err)
{
    return coll_build_pipe(p, COLL_SHAPE_HEAP, p->n > 2 ? 2 : 1, err);
}
