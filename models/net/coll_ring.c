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
 * GPU counts g > 1, which run R = g rings (NCCL's channels), each in a rail-aligned order that
 * crosses the hosts on its own rail and carries 1/R of the buffer (order_rings below).
 */
#include <math.h>
#include <stdlib.h>

#include "coll_internal.h"
#include "dtsim/error.h"

enum { CHUNKS, RS, AG, RINGS };

/* p->data: K x n segment sizes (doubles), then at[R x n] (ring r's position -> rank at
 * [r*n, r*n + n)) and pos[R x n] (ring r's rank -> position). Stream k runs ring k mod R. */
static const int *ring_at(const coll_prog *p, int ring)
{
    return (const int *)((const double *)p->data + (size_t)p->i[CHUNKS] * p->n) + (size_t)ring * p->n;
}

static const int *ring_pos(const coll_prog *p, int ring)
{
    return ring_at(p, ring) + (size_t)p->i[RINGS] * p->n;
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
    int n = p->n, ring = k % p->i[RINGS];
    const int *at = ring_at(p, ring);
    int r = ring_pos(p, ring)[rank]; /* ring position */
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

/* Host-major order. A group spanning several hosts with the same number g > 1 of GPUs on
 * each: by[h*g + i] = the i-th GPU (by GPU index, a proxy for its NIC rail) of the h-th host
 * (hosts in order of first appearance); returns g. Any other group: returns 0 (by unused). */
static int host_order(const coll_prog *p, int *by)
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
        int *cnt = dt_xcalloc((size_t)hosts, sizeof(int));
        for (int r = 0; r < n; r++) cnt[hid[r]]++;
        for (int h = 0; h < hosts; h++)
            if (cnt[h] != g) ok = 0;
        if (ok && g > 1) {
            int *fill = dt_xcalloc((size_t)hosts, sizeof(int));
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
            }
            free(fill);
        } else {
            ok = 0;
        }
        free(cnt);
    } else {
        ok = 0;
    }
    free(hid);
    free(first);
    return ok ? g : 0;
}

/* Ring orders (docs/collectives.md, "Rings per rail"). A group spanning several hosts with g > 1
 * GPUs on each runs R rings, NCCL's channels: ring r visits the hosts in order, entering each at
 * the local index the previous one was left from, with its own offset o = r*g/R: host h runs
 * from local index (o-h) mod g round to (o-h-1) mod g. Every host crossing but the wrap-around
 * one stays on one rail (rail (o-h-1) mod g from host h to h+1), and the R rings cross each
 * host boundary on R different rails, so with R = g every GPU's NIC carries exactly one ring's
 * crossing (NCCL's ring search gives each channel its own NIC, entering and leaving a host on
 * it: NVIDIA/nccl#1313, #1933). Any other group is one ring in its own order. Writes at and
 * pos of every ring (layout above). */
static void order_rings(const coll_prog *p, int g, const int *by, int *at)
{
    int n = p->n, R = p->i[RINGS];
    int *pos = at + (size_t)R * n;
    for (int ring = 0; ring < R; ring++) {
        int *a = at + (size_t)ring * n, *ps = pos + (size_t)ring * n;
        if (g > 1) {
            int o = (int)((long)ring * g / R);
            for (int h = 0; h < n / g; h++) {
                int start = ((o - h) % g + g) % g;
                for (int i = 0; i < g; i++) a[h * g + i] = by[h * g + (start + i) % g];
            }
        } else {
            for (int r = 0; r < n; r++) a[r] = r;
        }
        for (int q = 0; q < n; q++) ps[a[q]] = q;
    }
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
    int *by = dt_xmalloc(sizeof(int) * (size_t)p->n);
    int g = host_order(p, by);
    int R = 1;
    if (g > 1) {
        int cap = p->max_rings > 0 ? p->max_rings : COLL_MAX_RINGS;
        R = g < cap ? g : cap;
    }
    /* Each ring carries 1/R of the buffer, cut into Kc chunks (streams) of at most `chunk` per
     * segment; R x Kc streams in all, Kc capped so that they stay within COLL_MAX_RING_CHUNKS
     * (or R, when R alone exceeds it). */
    double Kc = ceil(p->bytes / R / p->n / p->chunk);
    int kc_cap = COLL_MAX_RING_CHUNKS / R > 1 ? COLL_MAX_RING_CHUNKS / R : 1;
    if (Kc < 1) Kc = 1;
    if (Kc > kc_cap) Kc = kc_cap;
    int K = R * (int)Kc;
    p->i[CHUNKS] = K;
    p->i[RINGS] = R;
    double *seg = dt_xmalloc(sizeof(double) * (size_t)K * (size_t)p->n + 2 * sizeof(int) * (size_t)R * (size_t)p->n);
    for (int k = 0; k < K; k++) {
        double sb = coll_part(p->bytes, p->elem, K, k);
        for (int i = 0; i < p->n; i++) seg[(size_t)k * p->n + i] = coll_part(sb, p->elem, p->n, i);
    }
    p->data = seg;
    order_rings(p, g, by, (int *)(seg + (size_t)K * p->n));
    free(by);
    p->n_streams = K;
    p->n_steps = n_steps;
    p->step = step;
    p->form = COLL_FORM_RING;
    p->rings = R;
    p->ring_edges = ring_edges;
    p->ring_steps = ring_steps;
    return DT_OK;
}

/* The program as rings of edges (coll_internal.h, COLL_FORM_RING). Over the whole collective
 * the sender at position q of a ring sends, per stream of that ring: in reduce-scatter every
 * segment but (q+1); in the all-gather after it every segment but (q+2); in a plain all-gather
 * every segment but (q+1). The receiver at position q+1 reduces every segment but its own
 * position's. Summed over streams: O(nK). */
static void ring_edges(const coll_prog *p, int *src, int *dst, double *bytes, double *reduce_bytes)
{
    int n = p->n, K = p->i[CHUNKS], R = p->i[RINGS];
    for (int ring = 0; ring < R; ring++) {
        const int *at = ring_at(p, ring);
        for (int q = 0; q < n; q++) {
            src[ring * n + q] = at[q];
            dst[ring * n + q] = at[(q + 1) % n];
            bytes[ring * n + q] = reduce_bytes[ring * n + q] = 0;
        }
    }
    for (int k = 0; k < K; k++) {
        double tot = 0;
        double *b = bytes + (size_t)(k % R) * n, *rb = reduce_bytes + (size_t)(k % R) * n;
        for (int i = 0; i < n; i++) tot += seg_bytes(p, k, i);
        for (int q = 0; q < n; q++) {
            int q1 = (q + 1) % n;
            if (p->i[RS]) {
                b[q] += tot - seg_bytes(p, k, q1);
                rb[q] += tot - seg_bytes(p, k, q1);
            }
            if (p->i[AG]) b[q] += tot - seg_bytes(p, k, (q + 1 + p->i[RS]) % n);
        }
    }
}

static int ring_steps(const coll_prog *p) { return (p->i[RS] + p->i[AG]) * (p->n - 1); }

void coll_ring_exposed_reduction(const coll_prog *p, const int *dst, double *red)
{
    int n = p->n, R = p->rings, Kc = p->n_streams / R;
    double *per = dt_xcalloc((size_t)n, sizeof *per); /* per rank: its slowest ring's */
    for (int q = 0; q < R * n; q++) {
        double x = Kc == 1 ? red[q] : red[q] / ((n - 1) * (double)Kc);
        if (x > per[dst[q]]) per[dst[q]] = x;
    }
    for (int q = 0; q < R * n; q++) red[q] = q < n ? per[dst[q]] : 0;
    free(per);
}
