/* coll_ring.c - ring all-reduce, reduce-scatter and all-gather (and chain broadcast/reduce).
 *
 * The buffer is cut into K chunks (streams), each into n segments on element boundaries. In
 * stream k, rank r at step s < n-1 (reduce-scatter) sends segment (r-s) mod n to r+1, receives
 * segment (r-1-s) mod n from r-1 and reduces it; after n-1 steps it owns the full sum of
 * segment (r+1) mod n. At step n-1+u (all-gather) it forwards segment (r+1-u) mod n and
 * receives (r-u) mod n. All-reduce = both phases, 2(n-1) steps per stream.
 *
 * Chunks: K = ceil(segment / chunk) streams, at most COLL_MAX_RING_CHUNKS, run concurrently and
 * share the links fairly, so in the fluid model chunking leaves the ring's time unchanged
 * (each stream's step takes alpha + seg/K / (B/K)); it is kept for its effect on contention
 * with other traffic and costs K times the events. A 1 GiB all-reduce on 1,024 GPUs has 1 MiB
 * segments and runs as one stream.
 *
 * Broadcast and reduce on a ring are the pipelined chain of coll_tree.c.
 *
 * Ring positions follow the group order, except for groups spanning several hosts with equal
 * GPU counts, which get a rail-aligned order (order_ring below).
 */
#include <math.h>
#include <stdlib.h>

#include "coll_internal.h"
#include "dtsim/error.h"

enum { CHUNKS, RS, AG };

/* p->data: K x n segment sizes (doubles), then at[n] (ring position -> rank) and pos[n]
 * (rank -> ring position). */
static const int *ring_at(const coll_prog *p)
{
    return (const int *)((const double *)p->data + (size_t)p->i[CHUNKS] * p->n);
}

/* Segment sizes are precomputed at build time (K x n doubles): a 1,024-rank ring asks for
 * them four million times. */
static double seg_bytes(const coll_prog *p, int k, int seg)
{
    return ((const double *)p->data)[(size_t)k * p->n + seg];
}

static int n_steps(const coll_prog *p, int r, int k)
{
    (void)r;
    (void)k;
    return (p->i[RS] + p->i[AG]) * (p->n - 1);
}

static void step(const coll_prog *p, int rank, int k, int s, coll_step *out)
{
    int n = p->n;
    const int *at = ring_at(p);
    int r = at[n + rank]; /* ring position */
    int right = at[(r + 1) % n];
    out->n_sends = 1;
    out->n_recvs = 1;
    if (p->i[RS] && s < n - 1) {
        int send_seg = ((r - s) % n + n) % n;
        int recv_seg = ((r - 1 - s) % n + n) % n;
        out->sends[0] = (coll_send){right, k, s, seg_bytes(p, k, send_seg)};
        out->reduce_bytes = seg_bytes(p, k, recv_seg);
    } else {
        /* After a reduce-scatter rank r owns segment r+1; in a plain all-gather, segment r. */
        int u = p->i[RS] ? s - (n - 1) : s;
        int send_seg = ((r + p->i[RS] - u) % n + n) % n;
        out->sends[0] = (coll_send){right, k, s, seg_bytes(p, k, send_seg)};
    }
}

static int cmp_gpu(const void *a, const void *b, void *ctx);

/* Ring order. A group spanning several hosts with the same number g > 1 of GPUs on each is
 * visited host by host (hosts in order of first appearance, GPUs of a host by GPU index, as a
 * proxy for their NIC rail), each host entered at the local index the previous one was left
 * from: host i runs from local index (g-i) mod g round to (g-i-1) mod g, so every host
 * crossing but the wrap-around one stays on one rail (NCCL builds its rings the same way).
 * Any other group keeps its order. Writes at[pos] = rank and at[n + rank] = pos. */
static void order_ring(const coll_prog *p, int *at)
{
    int n = p->n;
    const topo *t = p->t;
    int hosts = 0, g = 0, ok = n > 2;
    int *hid = dt_xmalloc(sizeof(int) * (size_t)n); /* host order index per rank */
    int *first = dt_xmalloc(sizeof(int) * (size_t)(t->n_hosts > 0 ? t->n_hosts : 1));
    for (int h = 0; h < t->n_hosts; h++) first[h] = -1;
    for (int r = 0; r < n && ok; r++) {
        int h = t->nodes[t->gpu_node[p->gpus[r]]].host;
        if (h < 0 || h >= t->n_hosts) ok = 0;
        else {
            if (first[h] < 0) first[h] = hosts++;
            hid[r] = first[h];
        }
    }
    if (ok && hosts > 1 && n % hosts == 0) {
        g = n / hosts;
        /* bucket ranks by host, then sort each host's ranks by GPU index */
        int *cnt = dt_xcalloc((size_t)hosts, sizeof(int));
        for (int r = 0; r < n; r++) cnt[hid[r]]++;
        for (int h = 0; h < hosts; h++)
            if (cnt[h] != g) ok = 0;
        if (ok && g > 1) {
            int *fill = dt_xcalloc((size_t)hosts, sizeof(int));
            int *by = dt_xmalloc(sizeof(int) * (size_t)n);
            for (int r = 0; r < n; r++) by[hid[r] * g + fill[hid[r]]++] = r;
            for (int h = 0; h < hosts; h++) {
                int *b = by + (size_t)h * g;
                /* insertion sort by GPU index: g is small (GPUs per host) */
                for (int i = 1; i < g; i++)
                    for (int j = i; j > 0 && cmp_gpu(&b[j - 1], &b[j], (void *)p) > 0; j--) {
                        int tmp = b[j];
                        b[j] = b[j - 1];
                        b[j - 1] = tmp;
                    }
                int start = ((g - h) % g + g) % g;
                for (int i = 0; i < g; i++) at[h * g + i] = b[(start + i) % g];
            }
            free(fill);
            free(by);
        } else {
            ok = 0;
        }
        free(cnt);
    } else {
        ok = 0;
    }
    if (!ok)
        for (int r = 0; r < n; r++) at[r] = r;
    for (int q = 0; q < n; q++) at[n + at[q]] = q;
    free(hid);
    free(first);
}

static int cmp_gpu(const void *a, const void *b, void *ctx)
{
    const coll_prog *p = ctx;
    int ga = p->gpus[*(const int *)a], gb = p->gpus[*(const int *)b];
    return (ga > gb) - (ga < gb);
}

static void ring_edges(const coll_prog *p, int *src, int *dst, double *bytes, double *reduce_bytes);
static int ring_steps(const coll_prog *p);

int coll_build_ring(coll_prog *p, dt_error *err)
{
    switch (p->op) {
    case COLL_ALLREDUCE: p->i[RS] = 1, p->i[AG] = 1; break;
    case COLL_REDUCE_SCATTER: p->i[RS] = 1, p->i[AG] = 0; break;
    case COLL_ALLGATHER: p->i[RS] = 0, p->i[AG] = 1; break;
    case COLL_BROADCAST:
    case COLL_REDUCE: return coll_build_pipe(p, COLL_SHAPE_CHAIN, 1, err);
    default:
        return dt_error_set(err, DT_EINPUT, NULL, "algo",
                            "ring runs allreduce, reduce_scatter, allgather, broadcast and "
                            "reduce, not %s (try direct)",
                            coll_op_name(p->op));
    }
    double K = ceil(p->bytes / p->n / p->chunk);
    if (K < 1) K = 1;
    if (K > COLL_MAX_RING_CHUNKS) K = COLL_MAX_RING_CHUNKS;
    p->i[CHUNKS] = (int)K;
    double *seg = dt_xmalloc(sizeof(double) * (size_t)K * (size_t)p->n + 2 * sizeof(int) * (size_t)p->n);
    for (int k = 0; k < (int)K; k++) {
        double sb = coll_part(p->bytes, p->elem, (int)K, k);
        for (int i = 0; i < p->n; i++) seg[(size_t)k * p->n + i] = coll_part(sb, p->elem, p->n, i);
    }
    p->data = seg;
    order_ring(p, (int *)(seg + (size_t)K * p->n));
    p->n_streams = (int)K;
    p->n_steps = n_steps;
    p->step = step;
    p->form = COLL_FORM_RING;
    p->ring_edges = ring_edges;
    p->ring_steps = ring_steps;
    return DT_OK;
}

/* The program as a ring of edges (coll_internal.h, COLL_FORM_RING). Over the whole collective the sender at position q
 * sends, per stream: in reduce-scatter every segment but (q+1); in the all-gather after it
 * every segment but (q+2); in a plain all-gather every segment but (q+1). The receiver at
 * position q+1 reduces every segment but its own position's. Summed over streams: O(nK). */
static void ring_edges(const coll_prog *p, int *src, int *dst, double *bytes, double *reduce_bytes)
{
    int n = p->n, K = p->i[CHUNKS];
    const int *at = ring_at(p);
    for (int q = 0; q < n; q++) {
        src[q] = at[q];
        dst[q] = at[(q + 1) % n];
        bytes[q] = reduce_bytes[q] = 0;
    }
    for (int k = 0; k < K; k++) {
        double tot = 0;
        for (int i = 0; i < n; i++) tot += seg_bytes(p, k, i);
        for (int q = 0; q < n; q++) {
            int q1 = (q + 1) % n;
            if (p->i[RS]) {
                bytes[q] += tot - seg_bytes(p, k, q1);
                reduce_bytes[q] += tot - seg_bytes(p, k, q1);
            }
            if (p->i[AG]) bytes[q] += tot - seg_bytes(p, k, (q + 1 + p->i[RS]) % n);
        }
    }
}

static int ring_steps(const coll_prog *p) { return (p->i[RS] + p->i[AG]) * (p->n - 1); }
