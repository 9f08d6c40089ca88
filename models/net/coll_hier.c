/* coll_hier.c - hierarchical all-reduce: inside each host over NVLink, across hosts per rail.
 *
 * The group's GPUs are grouped by topo node.host (hosts in order of first appearance, GPUs in
 * group order); every host must hold the same number g of them, h hosts in all. Local index l
 * of host i is GPU (i, l). One stream of 2(g-1) + 2(h-1) steps:
 *   1. ring reduce-scatter among the g GPUs of each host (S cut into g segments): GPU (i, l)
 *      ends owning the host's sum of segment (l+1) mod g;
 *   2. ring all-reduce of that segment among the h GPUs (., l) of the same rail l;
 *   3. ring all-gather inside each host.
 * Cost: 2(g-1) alpha_in + 2(g-1)/g S/B_in + 2(h-1) alpha_out + 2(h-1)/h S/(g B_out), against
 * a flat ring's 2(n-1) alpha + 2(n-1)/n S/B_out when the ring crosses hosts on one NIC each:
 * for large S and NVLink much faster than the NIC the ratio tends to g (h-1)/h / ((n-1)/n)
 * ~ g, as each NIC carries 1/g of the data instead of all of it.
 */
#include <stdlib.h>

#include "coll_internal.h"
#include "dtsim/error.h"

enum { G, H };

typedef struct hier_map {
    int *host, *local; /* per rank */
    int *at;           /* host * g + local -> rank */
} hier_map;

static int n_steps(const coll_prog *p, int r, int k)
{
    (void)r;
    (void)k;
    return 2 * (p->i[G] - 1) + 2 * (p->i[H] - 1);
}

/* Ring step on `len` ranks for position pos: RS for u < len-1, then AG (owned = pos+1). */
static void ring_step(int len, int pos, int u, double bytes, double elem, double *send,
                      double *reduce)
{
    if (u < len - 1) {
        *send = coll_part(bytes, elem, len, ((pos - u) % len + len) % len);
        *reduce = coll_part(bytes, elem, len, ((pos - 1 - u) % len + len) % len);
    } else {
        int w = u - (len - 1);
        *send = coll_part(bytes, elem, len, ((pos + 1 - w) % len + len) % len);
        *reduce = 0;
    }
}

static void step(const coll_prog *p, int r, int k, int s, coll_step *out)
{
    (void)k;
    const hier_map *m = p->data;
    int g = p->i[G], h = p->i[H];
    int hi = m->host[r], li = m->local[r];
    int A = g - 1, B = 2 * (h - 1);
    double send = 0, red = 0;
    int peer;
    if (s < A) {
        ring_step(g, li, s, p->bytes, p->elem, &send, &red);
        peer = m->at[hi * g + (li + 1) % g];
    } else if (s < A + B) {
        double owned = coll_part(p->bytes, p->elem, g, (li + 1) % g);
        ring_step(h, hi, s - A, owned, p->elem, &send, &red);
        peer = m->at[((hi + 1) % h) * g + li];
    } else {
        ring_step(g, li, (g - 1) + (s - A - B), p->bytes, p->elem, &send, &red);
        peer = m->at[hi * g + (li + 1) % g];
    }
    out->n_sends = 1;
    out->sends[0] = (coll_send){peer, 0, s, send};
    out->n_recvs = 1;
    out->reduce_bytes = red;
}

int coll_build_hier(coll_prog *p, dt_error *err)
{
    if (p->op != COLL_ALLREDUCE)
        return dt_error_set(err, DT_EINPUT, NULL, "algo", "hier runs allreduce only, not %s",
                            coll_op_name(p->op));
    const topo *t = p->t;
    int n = p->n;
    int nh = t->n_hosts;
    int *host_index = dt_xmalloc(sizeof(int) * (size_t)(nh > 0 ? nh : 1));
    int *count = dt_xcalloc((size_t)(nh > 0 ? nh : 1), sizeof(int));
    for (int i = 0; i < nh; i++) host_index[i] = -1;
    hier_map *m = dt_xcalloc(1, sizeof *m + 3 * (size_t)n * sizeof(int));
    m->host = (int *)(m + 1);
    m->local = m->host + n;
    m->at = m->local + n;
    p->data = m; /* one block: the engine frees it */
    int hosts = 0, rc = DT_OK;
    for (int r = 0; r < n && rc == DT_OK; r++) {
        int th = t->nodes[t->gpu_node[p->gpus[r]]].host;
        if (th < 0 || th >= nh) {
            rc = dt_error_set(err, DT_EINPUT, NULL, "algo",
                              "hier needs hosts in the topology; GPU %d has none", p->gpus[r]);
            break;
        }
        if (host_index[th] < 0) host_index[th] = hosts++;
        m->host[r] = host_index[th];
        m->local[r] = count[th]++;
    }
    int g = hosts > 0 ? n / hosts : 0;
    for (int i = 0; i < nh && rc == DT_OK; i++)
        if (count[i] && count[i] != g)
            rc = dt_error_set(err, DT_EINPUT, NULL, "algo",
                              "hier needs the same number of GPUs on every host; the group has "
                              "%d on one host and %d on another",
                              count[i], g);
    free(host_index);
    free(count);
    if (rc != DT_OK) return rc;
    for (int r = 0; r < n; r++) m->at[m->host[r] * g + m->local[r]] = r;
    p->i[G] = g;
    p->i[H] = hosts;
    p->n_streams = 1;
    p->n_steps = n_steps;
    p->step = step;
    return DT_OK;
}
