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
 * Shapes over positions p = (rank - root) mod n: chain p-1 <- p -> p+1; heap parent (p-1)/2,
 * children 2p+1, 2p+2. The second dbt tree uses position n-p for p > 0 (root stays): the inner
 * positions 1..n/2-1 of one tree are leaves of the other, so each rank forwards for one tree
 * and mostly sits at the edge of the other (NCCL's complementary-trees idea).
 */
#include <math.h>

#include "coll_internal.h"
#include "dtsim/error.h"

enum { SHAPE, TREES, CHUNKS, UP, DOWN };

static int pos_of(const coll_prog *p, int t, int r)
{
    int q = (r - p->root + p->n) % p->n;
    if (t == 1 && q > 0) q = p->n - q;
    return q;
}

static int rank_of(const coll_prog *p, int t, int q)
{
    if (t == 1 && q > 0) q = p->n - q;
    return (q + p->root) % p->n;
}

static int parent_pos(const coll_prog *p, int q)
{
    if (q == 0) return -1;
    return p->i[SHAPE] == COLL_SHAPE_CHAIN ? q - 1 : (q - 1) / 2;
}

static int children_pos(const coll_prog *p, int q, int out[2])
{
    int k = 0;
    if (p->i[SHAPE] == COLL_SHAPE_CHAIN) {
        if (q + 1 < p->n) out[k++] = q + 1;
    } else {
        if (2 * q + 1 < p->n) out[k++] = 2 * q + 1;
        if (2 * q + 2 < p->n) out[k++] = 2 * q + 2;
    }
    return k;
}

static double chunk_bytes(const coll_prog *p, int t, int c)
{
    double tb = coll_part(p->bytes, p->elem, p->i[TREES], t);
    return coll_part(tb, p->elem, p->i[CHUNKS], c);
}

static int n_steps(const coll_prog *p, int r, int k)
{
    int t = k / 4, role = k % 4, C = p->i[CHUNKS];
    int q = pos_of(p, t, r);
    int kids[2];
    int nk = children_pos(p, q, kids);
    switch (role) {
    case 0: return p->i[UP] && nk > 0 ? C : 0;
    case 1: return p->i[UP] && q > 0 ? C : 0;
    case 2: return p->i[DOWN] && q > 0 ? C : 0;
    default: return p->i[DOWN] && nk > 0 ? C : 0;
    }
}

static void step(const coll_prog *p, int r, int k, int c, coll_step *out)
{
    int t = k / 4, role = k % 4;
    int q = pos_of(p, t, r);
    int kids[2];
    int nk = children_pos(p, q, kids);
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
        out->sends[0] = (coll_send){rank_of(p, t, parent_pos(p, q)), 4 * t + 0, c, b};
        break;
    case 2: out->n_recvs = 1; break;
    default:
        if (q > 0) {
            out->dep_stream = 4 * t + 2;
            out->dep_step = c;
        } else if (p->i[UP]) {
            out->dep_stream = 4 * t + 0;
            out->dep_step = c;
        }
        out->n_sends = nk;
        for (int i = 0; i < nk; i++) out->sends[i] = (coll_send){rank_of(p, t, kids[i]), 4 * t + 2, c, b};
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
    p->n_streams = 4 * trees;
    p->n_steps = n_steps;
    p->step = step;
    return DT_OK;
}

int coll_build_tree(coll_prog *p, dt_error *err) { return coll_build_pipe(p, COLL_SHAPE_HEAP, 1, err); }

int coll_build_dbt(coll_prog *p, dt_error *err)
{
    return coll_build_pipe(p, COLL_SHAPE_HEAP, p->n > 2 ? 2 : 1, err);
}
