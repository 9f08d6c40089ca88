/* coll_cost.c - alpha-beta closed forms of the collective algorithms (see coll.h).
 *
 * These are oracles: tests compare the step programs run over the flow model against them,
 * and docs/collectives.md quotes them. The simulator never uses them to produce a result.
 */
#include <math.h>

#include "dtsim/coll.h"

static int ilog2(int n)
{
    int k = 0;
    while ((1 << (k + 1)) <= n) k++;
    return k;
}

double coll_closed_form(coll_op op, coll_algo algo, int n, double S, double a, double B)
{
    if (n <= 1) return 0;
    double f = (double)(n - 1) / n;
    switch (algo) {
    case COLL_RING:
        if (op == COLL_ALLREDUCE) return 2 * (n - 1) * a + 2 * f * S / B;
        if (op == COLL_REDUCE_SCATTER || op == COLL_ALLGATHER) return (n - 1) * a + f * S / B;
        return NAN;
    case COLL_HD: {
        int k = ilog2(n), p = 1 << k;
        if (op == COLL_ALLREDUCE) {
            double t = 2 * k * a + 2.0 * (p - 1) / p * S / B;
            if (p != n) t += 2 * (a + S / B);
            return t;
        }
        if ((op == COLL_REDUCE_SCATTER || op == COLL_ALLGATHER) && p == n) return k * a + f * S / B;
        return NAN;
    }
    case COLL_DIRECT:
        if (op == COLL_ALLTOALL || op == COLL_ALLGATHER || op == COLL_REDUCE_SCATTER)
            return a + f * S / B;
        return NAN;
    default: return NAN;
    }
}

double coll_closed_form_pipeline(int stages, int chunks, int fanout, double S, double a, double B)
{
    return (stages + chunks - 1) * (a + fanout * S / chunks / B);
}

double coll_closed_form_hier(int g, int h, double S, double a_in, double b_in, double a_out,
                             double b_out)
{
    double t = 0;
    if (g > 1) t += 2 * (g - 1) * a_in + 2.0 * (g - 1) / g * S / b_in;
    if (h > 1) t += 2 * (h - 1) * a_out + 2.0 * (h - 1) / h * S / (g * b_out);
    return t;
}

double coll_closed_form_rails(coll_op op, int g, int h, double S, double a, double b_in,
                              double b_out)
{
    int n = g * h;
    if (g < 2 || h < 2 || (op != COLL_ALLREDUCE && op != COLL_REDUCE_SCATTER && op != COLL_ALLGATHER))
        return NAN;
    double f = op == COLL_ALLREDUCE ? 2 : 1;
    double rate = fmin(b_out, b_in / (g - 1)); /* one ring's: its NIC edge, or its share of NVLink */
    return f * (n - 1) * a + f * (n - 1) / n * S / (g * rate);
}
