/* test_coll_auto.c - `auto` chooses by estimated time among the algorithms of the collective
 * library that runs the group (coll_auto_pick, coll_config.library); `rule` keeps the old rule.
 *
 * Pins down, against the flow simulation of each candidate run alone:
 *  - no library named (ANY): auto is estimate's pick. On 4 regions x 2 GPUs joined by 100 Mb/s,
 *    50 ms links (geo defaults), 256 MiB all-reduce, the rule runs hier (32.51 s) where auto
 *    runs direct (21.58 s), the least of the six candidates in flow, and coll_simulate of auto
 *    is direct's run to the picosecond;
 *  - NCCL: every (op, size, topology) of a grid picks inside NCCL's set (all-reduce ring or
 *    tree; reduce-scatter, all-gather, broadcast, reduce ring; all-to-all direct), in the
 *    analytic object and in coll_simulate; the all-reduces are the faster of ring and tree in
 *    flow, including small ones where the rule runs hd, which NCCL does not have;
 *  - determinism: fresh objects give the same picks, and a run of auto twice the same time
 *    and events;
 *  - the names parse (rule, any, nccl) and `rule` runs coll_auto_choice's algorithm.
 * Leaves free: contention (test_coll_estimate.c checks the concurrent set; auto shares it). */
#include <math.h>
#include <string.h>

#include "coll_testutil.h"

static const coll_config any_cc = {.reduce_bw = -1, .chunk_bytes = 1e18,
                                   .ring_model = COLL_RING_AUTO, .library = COLL_LIB_ANY};
static const coll_config nccl_cc = {.reduce_bw = -1, .chunk_bytes = 1e18,
                                    .ring_model = COLL_RING_AUTO, .library = COLL_LIB_NCCL};

static double flow_alone(topo *t, const coll_config *cc, coll_op op, coll_algo algo, const int *g,
                         int n, double S, coll_algo *ran, uint64_t *events)
{
    coll_spec s = {.op = op, .algo = algo, .group = g, .n = n, .bytes = S, .elem_bytes = 2};
    net_config nc = {.mode = NET_FLOW};
    coll_result r;
    dt_error err;
    dt_error_clear(&err);
    if (coll_simulate(t, &s, cc, &nc, &r, &err) != DT_OK) return -1;
    if (ran) *ran = r.algo;
    if (events) *events = r.events;
    return sim_time_to_s(r.time);
}

static coll_algo pick_of(topo *t, const coll_config *cc, coll_op op, const int *g, int n, double S)
{
    sim_engine *e = sim_engine_create();
    net *nw = net_create(t, e, NULL);
    coll_analytic *a = coll_analytic_create(nw, t, cc);
    coll_spec s = {.op = op, .algo = COLL_AUTO, .group = g, .n = n, .bytes = S, .elem_bytes = 2};
    coll_algo pick = COLL_AUTO;
    dt_error err;
    dt_error_clear(&err);
    ck_assert_int_eq(coll_auto_pick(a, &s, NULL, 0, &pick, &err), DT_OK);
    /* the analytic time of auto runs the same pick */
    sim_time_t x;
    coll_algo ran;
    ck_assert_int_eq(coll_analytic_time(a, &s, &x, &ran, &err), DT_OK);
    ck_assert_int_eq(ran, pick);
    coll_analytic_destroy(a);
    net_destroy(nw);
    sim_engine_destroy(e);
    return pick;
}

START_TEST(any_library_picks_the_least_where_the_rule_was_wrong)
{
    topo *t = gen((topo_gen_params){.family = TOPO_FAMILY_GEO, .regions = 4, .gpus_per_region = 2});
    int g[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    double S = 256.0 * 1048576;
    coll_spec s = {.op = COLL_ALLREDUCE, .algo = COLL_RULE, .group = g, .n = 8, .bytes = S,
                   .elem_bytes = 2};
    ck_assert_int_eq(coll_auto_choice(t, &s), COLL_HIER);
    ck_assert_int_eq(pick_of(t, &any_cc, COLL_ALLREDUCE, g, 8, S), COLL_DIRECT);
    coll_algo ran;
    double t_auto = flow_alone(t, &any_cc, COLL_ALLREDUCE, COLL_AUTO, g, 8, S, &ran, NULL);
    double t_rule = flow_alone(t, &any_cc, COLL_ALLREDUCE, COLL_RULE, g, 8, S, NULL, NULL);
    ck_assert_int_eq(ran, COLL_DIRECT);
    /* docs/collectives.md: the rule's hier 32.51 s, direct 21.58 s */
    ck_assert_double_eq_tol(t_rule, 32.51, 0.01);
    ck_assert_double_eq_tol(t_auto, 21.58, 0.01);
    static const coll_algo all[] = {COLL_RING, COLL_TREE, COLL_DBT, COLL_HD, COLL_DIRECT, COLL_HIER};
    for (int c = 0; c < 6; c++) {
        double x = flow_alone(t, &any_cc, COLL_ALLREDUCE, all[c], g, 8, S, NULL, NULL);
        ck_assert_double_gt(x, 0);
        if (all[c] == COLL_DIRECT) ck_assert_double_eq(x, t_auto); /* to the picosecond */
        else ck_assert_msg(x > t_auto, "%s %g s beats auto's %g s", coll_algo_name(all[c]), x, t_auto);
    }
    topo_destroy(t);
}
END_TEST

static int in_nccl(coll_op op, coll_algo a)
{
    switch (op) {
    case COLL_ALLREDUCE: return a == COLL_RING || a == COLL_TREE;
    case COLL_ALLTOALL:
    case COLL_SENDRECV: return a == COLL_DIRECT;
    default: return a == COLL_RING;
    }
}

START_TEST(nccl_library_never_leaves_nccls_set)
{
    topo *ts[4] = {
        gen((topo_gen_params){.family = TOPO_FAMILY_GEO, .regions = 4, .gpus_per_region = 2}),
        gen((topo_gen_params){.family = TOPO_FAMILY_DGX, .nodes = 2, .gpus_per_node = 8}),
        switch_topo(8),
        gen((topo_gen_params){.family = TOPO_FAMILY_DGX, .nodes = 12, .gpus_per_node = 4, .radix = 8}),
    };
    int g[16];
    for (int i = 0; i < 16; i++) g[i] = i;
    static const coll_op ops[] = {COLL_ALLREDUCE, COLL_REDUCE_SCATTER, COLL_ALLGATHER,
                                  COLL_BROADCAST, COLL_REDUCE, COLL_ALLTOALL};
    static const double sizes[] = {4096, 262144, 64.0 * 1048576};
    int hd_by_rule = 0;
    for (int ti = 0; ti < 4; ti++) {
        int n = ts[ti]->n_gpus < 16 ? ts[ti]->n_gpus : 16;
        for (int oi = 0; oi < 6; oi++)
            for (int si = 0; si < 3; si++) {
                coll_algo p = pick_of(ts[ti], &nccl_cc, ops[oi], g, n, sizes[si]);
                ck_assert_msg(in_nccl(ops[oi], p), "topology %d %s %g B: %s", ti,
                              coll_op_name(ops[oi]), sizes[si], coll_algo_name(p));
                coll_algo ran;
                double x = flow_alone(ts[ti], &nccl_cc, ops[oi], COLL_AUTO, g, n, sizes[si], &ran, NULL);
                ck_assert_double_ge(x, 0);
                ck_assert_int_eq(ran, p);
                coll_spec s = {.op = ops[oi], .group = g, .n = n, .bytes = sizes[si]};
                if (ops[oi] != COLL_ALLREDUCE) continue;
                hd_by_rule += coll_auto_choice(ts[ti], &s) == COLL_HD;
                /* the faster of NCCL's two in flow */
                double r = flow_alone(ts[ti], &nccl_cc, COLL_ALLREDUCE, COLL_RING, g, n, sizes[si], NULL, NULL);
                double tr = flow_alone(ts[ti], &nccl_cc, COLL_ALLREDUCE, COLL_TREE, g, n, sizes[si], NULL, NULL);
                ck_assert_msg(x <= fmin(r, tr) * (1 + 1e-9), "topology %d %g B: auto %s %g s, ring %g, tree %g",
                              ti, sizes[si], coll_algo_name(p), x, r, tr);
            }
    }
    ck_assert_int_eq(hd_by_rule, 4); /* the 4 KiB all-reduces the rule ran as hd */
    for (int ti = 0; ti < 4; ti++) topo_destroy(ts[ti]);
}
END_TEST

START_TEST(auto_is_deterministic)
{
    topo *t = gen((topo_gen_params){.family = TOPO_FAMILY_DGX, .nodes = 12, .gpus_per_node = 4,
                                    .radix = 8});
    int g[48];
    for (int i = 0; i < 48; i++) g[i] = i;
    for (int lib = 0; lib < 2; lib++) {
        const coll_config *cc = lib ? &nccl_cc : &any_cc;
        for (double S = 4096; S < 1e9; S *= 64) {
            coll_algo a1 = pick_of(t, cc, COLL_ALLREDUCE, g, 48, S);
            coll_algo a2 = pick_of(t, cc, COLL_ALLREDUCE, g, 48, S);
            ck_assert_int_eq(a1, a2);
        }
        uint64_t e1 = 0, e2 = 0;
        coll_algo r1, r2;
        double x1 = flow_alone(t, cc, COLL_REDUCE_SCATTER, COLL_AUTO, g, 48, 64e6, &r1, &e1);
        double x2 = flow_alone(t, cc, COLL_REDUCE_SCATTER, COLL_AUTO, g, 48, 64e6, &r2, &e2);
        ck_assert_double_eq(x1, x2);
        ck_assert_int_eq(e1, e2);
        ck_assert_int_eq(r1, r2);
    }
    topo_destroy(t);
}
END_TEST

START_TEST(names_and_rule)
{
    coll_algo a;
    ck_assert_int_eq(coll_algo_parse("rule", &a), DT_OK);
    ck_assert_int_eq(a, COLL_RULE);
    ck_assert_str_eq(coll_algo_name(COLL_RULE), "rule");
    coll_library l;
    ck_assert_int_eq(coll_library_parse("nccl", &l), DT_OK);
    ck_assert_int_eq(l, COLL_LIB_NCCL);
    ck_assert_int_eq(coll_library_parse("any", &l), DT_OK);
    ck_assert_int_eq(l, COLL_LIB_ANY);
    ck_assert_int_eq(coll_library_parse("gloo", &l), DT_EINPUT);
    ck_assert_str_eq(coll_library_name(COLL_LIB_NCCL), "nccl");
    /* rule runs the rule's algorithm whatever the library */
    topo *t = gen((topo_gen_params){.family = TOPO_FAMILY_DGX, .nodes = 2, .gpus_per_node = 8});
    int g[16];
    for (int i = 0; i < 16; i++) g[i] = i;
    coll_algo ran;
    ck_assert_double_gt(flow_alone(t, &nccl_cc, COLL_ALLREDUCE, COLL_RULE, g, 16, 64e6, &ran, NULL), 0);
    ck_assert_int_eq(ran, COLL_HIER);
    ck_assert_double_gt(flow_alone(t, &nccl_cc, COLL_ALLREDUCE, COLL_RULE, g, 16, 4096, &ran, NULL), 0);
    ck_assert_int_eq(ran, COLL_HD);
    topo_destroy(t);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("coll_auto");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, any_library_picks_the_least_where_the_rule_was_wrong);
    tcase_add_test(tc, nccl_library_never_leaves_nccls_set);
    tcase_add_test(tc, auto_is_deterministic);
    tcase_add_test(tc, names_and_rule);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return dt_run_suite(suite()); }
