/* bench_estimate.c - the `estimate` algorithm's costs against the flow simulation, for the
 * data-parallel groups of a pipeline-parallel step on DGX rail fabrics (radix 64 unless said).
 *
 * Each case: G groups, one per (pipeline stage, rail), each the GPUs of one rail on the
 * stage's boxes (box = stage + stages x replica, the default "dp,pp,tp" placement; case 1:
 * stage x replicas + replica, as test_coll_estimate.c), all
 * starting one collective at the same instant. For ring and direct (and hd where it runs):
 * the flow time alone (the first group) and of all G at once, beside coll_estimate_time's
 * figures for the same, and what the rule, the estimate alone and the estimate with the set
 * pick. Figures go to docs/collectives.md ("`estimate`").
 *   bench_estimate        cases 1, 1b, 2 (seconds)
 *   bench_estimate big    also case 3: 768 boxes, 128 groups (30 s on the build machine:
 *                         128 direct reduce-scatters are 289 k flows)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtsim/coll.h"
#include "dtsim/net.h"
#include "dtsim/topo.h"
#include "../unit/net/coll_set.h"

static void bench(const char *label, int nodes, int gpn, int radix, int stages, int replicas,
                  int rails, int contiguous, coll_op op, double S)
{
    topo *t = NULL;
    dt_error err;
    dt_error_clear(&err);
    topo_gen_params p = {.family = TOPO_FAMILY_DGX, .nodes = nodes, .gpus_per_node = gpn,
                         .radix = radix};
    if (topo_generate(&p, &t, &err) != DT_OK) {
        fprintf(stderr, "bench_estimate: %s\n", err.msg);
        exit(1);
    }
    int n = replicas, m = stages * rails;
    int *gs = malloc(sizeof *gs * (size_t)m * n);
    for (int st = 0; st < stages; st++)
        for (int r = 0; r < rails; r++)
            for (int b = 0; b < n; b++) {
                int box = contiguous ? st * n + b : st + stages * b;
                gs[((size_t)st * rails + r) * n + b] = box * gpn + r;
            }
    sim_engine *e = sim_engine_create();
    net *nw = net_create(t, e, NULL);
    coll_analytic *an = coll_analytic_create(nw, t, &step_cc);
    coll_spec s = {.op = op, .algo = COLL_ESTIMATE, .group = gs, .n = n, .bytes = S, .elem_bytes = 2};
    coll_algo alone, with;
    coll_estimate_choice(an, &s, NULL, 0, &alone, &err);
    coll_estimate_choice(an, &s, gs, m, &with, &err);
    printf("%s: %s %.4g B, %d groups of %d on %d boxes x %d GPUs, radix %d\n", label,
           coll_op_name(op), S, m, n, nodes, gpn, radix);
    printf("  picks: rule %s, estimate alone %s, estimate with the %d groups %s\n",
           coll_algo_name(coll_auto_choice(t, &s)), coll_algo_name(alone), m, coll_algo_name(with));
    static const coll_algo cands[] = {COLL_RING, COLL_HD, COLL_DIRECT};
    for (int c = 0; c < 3; c++) {
        coll_spec q = s;
        q.algo = cands[c];
        sim_time_t e1 = 0, em = 0;
        if (coll_estimate_time(an, &q, NULL, 0, &e1, &err) != DT_OK) continue;
        coll_estimate_time(an, &q, gs, m, &em, &err);
        double x1 = flow_set(t, op, cands[c], gs, 1, n, S), xm = flow_set(t, op, cands[c], gs, m, n, S);
        printf("  %-7s alone: flow %9.4f ms, estimate %9.4f ms   all %3d: flow %9.4f ms, estimate %9.4f ms\n",
               coll_algo_name(cands[c]), x1 * 1e3, sim_time_to_s(e1) * 1e3, m, xm * 1e3,
               sim_time_to_s(em) * 1e3);
    }
    coll_analytic_destroy(an);
    net_destroy(nw);
    sim_engine_destroy(e);
    topo_destroy(t);
    free(gs);
}

int main(int argc, char **argv)
{
    int big = argc > 1 && !strcmp(argv[1], "big");
    /* 1: test_coll_estimate's case - two stages' rail-0 groups meeting on one leaf (radix 8) */
    bench("1", 12, 4, 8, 2, 6, 1, 1, COLL_ALLREDUCE, 64e6);
    /* 1b: the same groups, 4 MB reduce-scatter: where the ring's lower bound picks wrong */
    bench("1b", 12, 4, 8, 2, 6, 1, 1, COLL_REDUCE_SCATTER, 4e6);
    /* 2: M-70B's DP reduce-scatter (tp 8, pp 2, dp 48 on 96 boxes, 470 MB bucket) */
    bench("2", 96, 8, 64, 2, 48, 8, 0, COLL_REDUCE_SCATTER, 469770240);
    /* 3: M-462B's (tp 8, pp 16, dp 48 on 768 boxes, 1.02 GB bucket) */
    if (big) bench("3", 768, 8, 64, 16, 48, 8, 0, COLL_REDUCE_SCATTER, 1019234304);
    return 0;
}
