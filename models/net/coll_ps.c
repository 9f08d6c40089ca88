/* coll_ps.c - parameter-server all-reduce.
 *
 * The first S ranks of the group (spec.servers, default min(n, hosts spanned) or 1) also act
 * as servers; server j owns shard j (1/S of the buffer). Stream j of every rank handles shard
 * j in two steps:
 *   step 0  push: every other rank sends its shard j to server j; the server receives n-1
 *           pushes and reduces them ((n-1) shard bytes);
 *   step 1  pull: server j sends the updated shard to the n-1 others.
 * Cost with per-GPU links of bandwidth B (switch): each server's downlink carries (n-1) S/S_n
 * bytes twice over, so about 2 alpha + 2 (n-1) S / (S_n B) when S_n divides the work evenly:
 * with one server a ps all-reduce is n/2 times slower than a ring at large sizes.
 *
 * Reduce and broadcast are the two halves on their own, with the S servers as the (sharded)
 * root and the root argument unused: reduce is step 0 (every rank pushes shard j of its buffer
 * to server j, which sums), broadcast step 1 (server j sends shard j to everyone). They exist
 * for what pushes one size and pulls another: top-k through a parameter server pushes r G
 * (index, value) pairs and pulls their union (docs/workloads.md). `fastest` never picks them
 * (coll_fastest_choice): a caller asking for a reduce expects one root to hold the result.
 */
#include "coll_internal.h"
#include "dtsim/error.h"

static int n_steps(const coll_prog *p, int r, int k)
{
    (void)r;
    (void)k;
    return p->n > 1 ? (p->op == COLL_ALLREDUCE ? 2 : 1) : 0;
}

static void step(const coll_prog *p, int r, int k, int s, coll_step *out)
{
    int n = p->n, server = (int)((long)k * n / p->n_streams);
    double shard = coll_part(p->bytes, p->elem, p->n_streams, k);
    /* the phase: 0 push, 1 pull (broadcast is the pull alone, as its step 0) */
    int phase = p->op == COLL_BROADCAST ? 1 : s;
    if (phase == 0) {
        if (r == server) {
            out->n_recvs = n - 1;
            out->reduce_bytes = (n - 1) * shard;
        } else {
            out->n_sends = 1;
            out->sends[0] = (coll_send){server, k, 0, shard};
        }
    } else {
        if (r == server) {
            for (int j = 1; j < n; j++)
                out->sends[out->n_sends++] = (coll_send){(r + j) % n, k, s, shard};
        } else {
            out->n_recvs = 1;
        }
    }
}

int coll_build_ps(coll_prog *p, dt_error *err)
{
    if (p->op != COLL_ALLREDUCE && p->op != COLL_REDUCE && p->op != COLL_BROADCAST)
        return dt_error_set(err, DT_EINPUT, NULL, "algo",
                            "ps runs allreduce, reduce and broadcast only, not %s",
                            coll_op_name(p->op));
    int S = p->servers;
    if (S <= 0) {
        /* Default: one server per host the group spans (BytePS-style colocated servers). */
        const topo *t = p->t;
        int hosts = 0;
        for (int r = 0; r < p->n; r++) {
            int h = t->nodes[t->gpu_node[p->gpus[r]]].host, seen = 0;
            for (int q = 0; q < r && !seen; q++)
                seen = t->nodes[t->gpu_node[p->gpus[q]]].host == h;
            if (!seen) hosts++;
        }
        S = hosts > 0 ? hosts : 1;
    }
    if (S > p->n)
        return dt_error_set(err, DT_EINPUT, NULL, "servers",
                            "expected at most %d servers (the group size), found %d", p->n, S);
    p->n_streams = S;
    p->n_steps = n_steps;
    p->step = step;
    return DT_OK;
}
