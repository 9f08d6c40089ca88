/* balance.c - uneven work on mixed clusters: "parallel.balance": "speed".
 *
 * An even split runs a mixed cluster at the pace of its slowest GPUs: an H100 stage next to an
 * A100 stage idles a third of the time. Balancing gives each pipeline stage layers in
 * proportion to its speed and each data-parallel replica microbatches in proportion to its
 * own (docs/workloads.md, "Uneven work on mixed clusters", derives both). Speeds come from the
 * compute model itself - the time it gives one layer on the GPU's spec - so a balanced plan is
 * balanced for the very op times the replay will use (roofline, measured tables, stragglers).
 *
 * Both splits are one problem: share `total` units over n bins, bin i costing u x A_i + B_i
 * for u units, at least `lo` units each, minimising the largest cost. The optimum is found
 * exactly by bisecting on the largest cost V (bin i takes max(lo, floor((V - B_i) / A_i))
 * units), then handing back the surplus at the smallest feasible V from the bins that cost
 * most. Costs are integer picoseconds held in doubles (exact below 2^53 ps, about 2.5 hours
 * per op; beyond that the split is still monotone and deterministic, only not provably
 * optimal). O(n x 64), whatever the number of layers or microbatches.
 */
#include <math.h>
#include <stdlib.h>

#include "dtsim/replay.h"
#include "dtsim/workload.h"

sim_time_t wl_cost_time(const wl_cost *c, const gpu_spec *sp, gpu_precision prec,
                        sim_time_t (*op_time)(const gpu_spec *, gpu_op_class, gpu_precision,
                                              double, double))
{
    /* a cost built outside a graph has no GEMM shapes: the replay's formula without them */
    return replay_cost_time(c, sp, prec, NULL, 0, op_time, NULL);
}

/* Units of bin i at largest cost V (A_i = 0: a free bin takes everything). */
static double units_at(double V, double A, double B, double lo, double total)
{
    if (A <= 0) return V >= B ? total : lo;
    double u = floor((V - B) / A);
    return u < lo ? lo : u > total ? total : u;
}

/* The min-max split described above; out[i] >= lo, summing to total (lo * n <= total). */
static void minmax_split(int n, const double *A, const double *B, long long lo, long long total,
                         long long *out)
{
    double hi = 0, low = 0;
    for (int i = 0; i < n; i++) {
        double c = (double)total * A[i] + B[i];
        if (c > hi) hi = c;
    }
    /* invariant: count(hi) >= total; find the least such V (integer steps) */
    for (int it = 0; it < 200 && hi - low > 0.5; it++) {
        double mid = floor((low + hi) / 2);
        if (mid <= low || mid >= hi) break;
        double cnt = 0;
        for (int i = 0; i < n; i++) cnt += units_at(mid, A[i], B[i], (double)lo, (double)total);
        if (cnt >= (double)total) hi = mid;
        else low = mid;
    }
    long long sum = 0;
    for (int i = 0; i < n; i++) {
        out[i] = (long long)units_at(hi, A[i], B[i], (double)lo, (double)total);
        sum += out[i];
    }
    /* hand back the surplus from the costliest bins (ties: the highest index, so that the
     * lowest-index bins keep theirs, as a one-at-a-time greedy would give them) */
    while (sum > total) {
        int best = -1;
        double bc = -1;
        for (int i = 0; i < n; i++) {
            if (out[i] <= lo) continue;
            double c = (double)out[i] * A[i] + B[i];
            if (c >= bc) {
                bc = c;
                best = i;
            }
        }
        DT_ASSERT(best >= 0);
        out[best]--;
        sum--;
    }
}

/* Time of a cost on the slowest GPU of a lane (its straggler slowdown applied). */
static double lane_time(const wl_plan *p, int d, int st, const wl_cost *c, const gpu_spec *gpus,
                        const double *slowdown, gpu_precision prec,
                        sim_time_t (*op_time)(const gpu_spec *, gpu_op_class, gpu_precision,
                                              double, double))
{
    double t = 0;
    for (int k = 0; k < p->tp; k++) {
        int g = wl_gpu_of(p, d, st, k);
        double x = (double)wl_cost_time(c, &gpus[g], prec, op_time) * (slowdown ? slowdown[g] : 1);
        if (x > t) t = x;
    }
    return t;
}

int wl_balance_speed(const js_ctx *c, wl_scenario *s, const gpu_spec *gpus, int n_gpus,
                     const double *slowdown,
                     sim_time_t (*op_time)(const gpu_spec *, gpu_op_class, gpu_precision,
                                           double, double))
{
    (void)c;
    wl_plan *p = &s->plan;
    if (p->balance != WL_BALANCE_SPEED || s->model.kind == WL_PARAMS) return DT_OK;
    DT_ASSERT(n_gpus == p->dp * p->tp * p->pp);
    int pp = p->pp, dp = p->dp, v = p->virtual_stages;
    gpu_precision prec = wl_gpu_precision(p->precision);
    /* one layer's forward + backward, and what holding the embedding (first virtual stage) or
     * the output layer (last) adds, per microbatch */
    wl_cost f, b, ff, bf, fl, bl;
    wl_layer_op_cost(s, p, false, false, false, 1, &f);
    wl_layer_op_cost(s, p, true, false, false, 1, &b);
    wl_layer_op_cost(s, p, false, true, false, 1, &ff);
    wl_layer_op_cost(s, p, true, true, false, 1, &bf);
    wl_layer_op_cost(s, p, false, false, true, 1, &fl);
    wl_layer_op_cost(s, p, true, false, true, 1, &bl);
    size_t nl = (size_t)dp * pp;
    double *tau = dt_xmalloc(nl * sizeof *tau), *extra = dt_xcalloc(nl, sizeof *extra);
    for (int d = 0; d < dp; d++)
        for (int st = 0; st < pp; st++) {
            size_t i = (size_t)d * pp + st;
            double one = lane_time(p, d, st, &f, gpus, slowdown, prec, op_time) +
                         lane_time(p, d, st, &b, gpus, slowdown, prec, op_time);
            tau[i] = one;
            if (st == 0)
                extra[i] += fmax(0, lane_time(p, d, st, &ff, gpus, slowdown, prec, op_time) +
                                        lane_time(p, d, st, &bf, gpus, slowdown, prec, op_time) - one);
            if (st == pp - 1)
                extra[i] += fmax(0, lane_time(p, d, st, &fl, gpus, slowdown, prec, op_time) +
                                        lane_time(p, d, st, &bl, gpus, slowdown, prec, op_time) - one);
        }
    long long *u = dt_xmalloc(((size_t)(pp > dp ? pp : dp)) * sizeof *u);
    double *A = dt_xmalloc(((size_t)(pp > dp ? pp : dp)) * sizeof *A);
    double *B = dt_xmalloc(((size_t)(pp > dp ? pp : dp)) * sizeof *B);
    /* layers: a stage runs at its slowest lane (the replicas share the split) */
    if (pp > 1) {
        for (int st = 0; st < pp; st++) {
            A[st] = B[st] = 0;
            for (int d = 0; d < dp; d++) {
                A[st] = fmax(A[st], tau[(size_t)d * pp + st]);
                B[st] = fmax(B[st], extra[(size_t)d * pp + st]);
            }
        }
        minmax_split(pp, A, B, v, s->model.layers, u);
        /* a stage's layers over its model chunks, as evenly as they go (earlier chunks take
         * the remainder) */
        for (int st = 0; st < pp; st++)
            for (int ch = 0; ch < v; ch++)
                p->stage_layers[ch * pp + st] = (int)(u[st] / v + (ch < u[st] % v));
    }
    /* microbatches: replica d's time for m_d of them is about (m_d + pp - 1) x its slowest
     * stage's time per microbatch (the pipeline's fill and drain), in units of pp with the
     * interleaved schedule */
    if (dp > 1) {
        int q = p->schedule == WL_INTERLEAVED ? pp : 1;
        bool uneven = false;
        for (int d = 0; d < dp; d++) {
            double T = 0;
            for (int st = 0; st < pp; st++) {
                size_t i = (size_t)d * pp + st;
                T = fmax(T, wl_stage_layer_count(p, s->model.layers, st) * tau[i] + extra[i]);
            }
            A[d] = q * T;
            B[d] = (pp - 1) * T;
        }
        long long total = (long long)dp * p->microbatches / q;
        minmax_split(dp, A, B, 1, total, u);
        for (int d = 0; d < dp; d++) uneven |= u[d] * q != p->microbatches;
        if (uneven) {
            free(p->replica_microbatches);
            p->replica_microbatches = dt_xmalloc((size_t)dp * sizeof *p->replica_microbatches);
            for (int d = 0; d < dp; d++) p->replica_microbatches[d] = (int)(u[d] * q);
        }
    }
    free(u);
    free(A);
    free(B);
    free(tau);
    free(extra);
    return DT_OK;
}
