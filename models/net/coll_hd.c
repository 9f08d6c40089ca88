/* coll_hd.c - recursive halving-doubling (Rabenseifner): all-reduce, reduce-scatter, all-gather.
 *
 * Power of two n = 2^k: halving step i (i = 0..k-1) pairs rank v with v ^ (n >> (i+1)); each
 * holds a block of n/2^i segments, sends the half its partner keeps and reduces the half it
 * keeps, so after k steps rank v owns the sum of segment v (a reduce-scatter). Doubling step j
 * pairs v with v ^ 2^j and swaps the blocks they own (an all-gather). Cost on a non-blocking
 * switch: 2 log2(n) alpha + 2 (n-1)/n S/B for the all-reduce.
 *
 * Other n (all-reduce only): with p the largest power of two below n and r = n - p, the first
 * 2r ranks pair up: even ones send their whole buffer to their odd neighbour, which reduces it
 * (one extra step, S bytes); the p survivors run the power-of-two algorithm; then the odd ones
 * send the result back (one more step). Cost 2 log2(p) alpha + 2(p-1)/p S/B + 2 (alpha + S/B).
 * Ranks with nothing to do in a step run an empty step (no time, a few CPU cycles).
 */
#include "coll_internal.h"
#include "dtsim/error.h"

enum { P2, LOG, REM, RS, AG, PP };

static int vrank(const coll_prog *p, int r)
{
    int rem = p->i[REM];
    if (r < 2 * rem) return (r & 1) ? r / 2 : -1;
    return r - rem;
}

static int real_rank(const coll_prog *p, int v)
{
    int rem = p->i[REM];
    return v < rem ? 2 * v + 1 : v + rem;
}

static int n_steps(const coll_prog *p, int r, int k)
{
    (void)r;
    (void)k;
    return 2 * p->i[PP] + (p->i[RS] + p->i[AG]) * p->i[LOG];
}

static void step(const coll_prog *p, int r, int k, int s, coll_step *out)
{
    (void)k;
    int n2 = p->i[P2], lg = p->i[LOG], rem = p->i[REM];
    int last = n_steps(p, r, 0) - 1;
    int v = vrank(p, r);
    if (p->i[PP] && (s == 0 || s == last)) {
        if (r >= 2 * rem) return;
        int is_extra = !(r & 1);
        if (s == 0) {
            if (is_extra) {
                out->n_sends = 1;
                out->sends[0] = (coll_send){r + 1, 0, 0, p->bytes};
            } else {
                out->n_recvs = 1;
                out->reduce_bytes = p->bytes;
            }
        } else {
            if (is_extra) {
                out->n_recvs = 1;
            } else {
                out->n_sends = 1;
                out->sends[0] = (coll_send){r - 1, 0, last, p->bytes};
            }
        }
        return;
    }
    if (v < 0) return; /* an extra rank idles in the power-of-two part */
    int i = s - p->i[PP];
    out->n_sends = 1;
    out->n_recvs = 1;
    if (p->i[RS] && i < lg) {
        int d = n2 >> (i + 1);
        int partner = v ^ d;
        int base = v & ~(2 * d - 1);
        int send_lo = base + ((v & d) ? 0 : d);
        int keep_lo = base + (v & d);
        out->sends[0] = (coll_send){real_rank(p, partner), 0, s,
                                    coll_parts(p->bytes, p->elem, n2, send_lo, send_lo + d)};
        out->reduce_bytes = coll_parts(p->bytes, p->elem, n2, keep_lo, keep_lo + d);
    } else {
        int j = p->i[RS] ? i - lg : i;
        int d = 1 << j;
        int partner = v ^ d;
        int lo = v & ~(d - 1);
        out->sends[0] = (coll_send){real_rank(p, partner), 0, s,
                                    coll_parts(p->bytes, p->elem, n2, lo, lo + d)};
    }
}

int coll_build_hd(coll_prog *p, dt_error *err)
{
    int n = p->n, n2 = 1, lg = 0;
    while (n2 * 2 <= n) {
        n2 *= 2;
        lg++;
    }
    p->i[P2] = n2;
    p->i[LOG] = lg;
    p->i[REM] = n - n2;
    p->i[PP] = n != n2;
    switch (p->op) {
    case COLL_ALLREDUCE: p->i[RS] = 1, p->i[AG] = 1; break;
    case COLL_REDUCE_SCATTER: p->i[RS] = 1, p->i[AG] = 0; break;
    case COLL_ALLGATHER: p->i[RS] = 0, p->i[AG] = 1; break;
    default:
        return dt_error_set(err, DT_EINPUT, NULL, "algo",
                            "hd runs allreduce, reduce_scatter and allgather, not %s",
                            coll_op_name(p->op));
    }
    if (p->op != COLL_ALLREDUCE && n != n2)
        return dt_error_set(err, DT_EINPUT, NULL, "algo",
                            "hd %s needs a power-of-two group, found %d GPUs (use ring)",
                            coll_op_name(p->op), n);
    p->n_streams = 1;
    p->n_steps = n_steps;
    p->step = step;
    return DT_OK;
}
