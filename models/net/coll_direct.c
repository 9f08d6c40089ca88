/* coll_direct.c - all-pairs ("direct") algorithms: every transfer posted at once.
 *
 * One stream, one step (all-reduce: two). Rank r posts its sends to r+1, r+2, ... (mod n) in
 * that order and waits for all of them and for its n-1 receives:
 *   alltoall        block j (S/n) of r's buffer to rank j
 *   allgather       r's own block (S/n) to everyone
 *   reduce_scatter  block j to rank j, which reduces the n-1 blocks it receives
 *   allreduce       reduce_scatter, then allgather of the reduced block
 *   broadcast       root sends S to everyone; reduce: everyone sends S to the root
 *   sendrecv        group[0] sends S to group[root] (root defaults to 1)
 * On a non-blocking switch with per-GPU links of bandwidth B an all-to-all takes
 * alpha + (n-1)/n S/B: each GPU's uplink carries n-1 flows of S/n at B/(n-1) each.
 */
#include "coll_internal.h"
#include "dtsim/error.h"

static int n_steps(const coll_prog *p, int r, int k)
{
    (void)r;
    (void)k;
    if (p->n == 1) return 0;
    return p->op == COLL_ALLREDUCE ? 2 : 1;
}

static void step(const coll_prog *p, int r, int k, int s, coll_step *out)
{
    (void)k;
    int n = p->n;
    double S = p->bytes;
    switch (p->op) {
    case COLL_BROADCAST:
        if (r == p->root) {
            for (int j = 1; j < n; j++)
                out->sends[out->n_sends++] = (coll_send){(r + j) % n, 0, 0, S};
        } else {
            out->n_recvs = 1;
        }
        return;
    case COLL_REDUCE:
        if (r == p->root) {
            out->n_recvs = n - 1;
            out->reduce_bytes = (n - 1) * S;
        } else {
            out->sends[out->n_sends++] = (coll_send){p->root, 0, 0, S};
        }
        return;
    case COLL_SENDRECV:
        if (r == 0) out->sends[out->n_sends++] = (coll_send){p->root, 0, 0, S};
        else if (r == p->root) out->n_recvs = 1;
        return;
    default: break;
    }
    int gather = p->op == COLL_ALLGATHER || (p->op == COLL_ALLREDUCE && s == 1);
    int reduce = p->op == COLL_REDUCE_SCATTER || (p->op == COLL_ALLREDUCE && s == 0);
    const double *part = p->data; /* coll_part(S, elem, n, i) for every i */
    coll_send *o = out->sends;
    int peer = r;
    for (int j = 1; j < n; j++) {
        if (++peer == n) peer = 0;
        o[j - 1] = (coll_send){peer, 0, s, part[gather ? r : peer]};
    }
    out->n_sends = n - 1;
    out->n_recvs = n - 1;
    if (reduce) out->reduce_bytes = (n - 1) * part[r];
}

int coll_build_direct(coll_prog *p, dt_error *err)
{
    (void)err;
    /* The n part sizes, computed once (each is two floors and divisions: a million calls for
     * a direct all-reduce on 1,024 GPUs). */
    double *part = dt_xmalloc((size_t)(p->n > 0 ? p->n : 1) * sizeof *part);
    for (int i = 0; i < p->n; i++) part[i] = coll_part(p->bytes, p->elem, p->n, i);
    p->data = part;
    p->n_streams = 1;
    p->n_steps = n_steps;
    p->step = step;
    return DT_OK;
}
