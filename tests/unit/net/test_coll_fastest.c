/* test_coll_fastest.c - the `fastest` algorithm: the least estimated time, not a rule.
 * Pins down: on 4 regions x 2 GPUs joined by 100 Mb/s, 50 ms wide-area links (geo defaults),
 * on 2 DGX boxes and on a switch, for all-reduce, all-gather and broadcast from 4 KiB to
 * 256 MiB, `fastest` costs exactly the least coll_analytic_time over the concrete algorithms
 * that can run the spec (ring .. ps), reports that algorithm (ties to the earlier one), and a
 * flow simulation with `fastest` is the flow simulation of that algorithm, to the picosecond;
 * on the geo topology it beats the rule (`rule`: hier) by more than 1.4x at 256 MiB; send/recv
 * stays direct; the name parses. Leaves free: which algorithm wins where (the estimates'
 * business, pinned by test_coll_analytic.c). */
#include <string.h>

#include "coll_testutil.h"

static void check(topo *t, coll_op op, int n, double S)
{
    int g[64];
    for (int i = 0; i < n; i++) g[i] = i;
    coll_config cc = {.reduce_bw = -1, .chunk_bytes = 1e18};
    sim_engine *e = sim_engine_create();
    net *nw = net_create(t, e, NULL);
    coll_analytic *a = coll_analytic_create(nw, t, &cc);
    dt_error err;
    sim_time_t best = 0;
    coll_algo pick = COLL_AUTO;
    for (int k = COLL_RING; k < COLL_FASTEST; k++) {
        /* ps's reduce and broadcast use its servers as the root: fastest leaves them out */
        if (k == COLL_PS && op != COLL_ALLREDUCE) continue;
        coll_spec s = {.op = op, .algo = (coll_algo)k, .group = g, .n = n, .bytes = S, .elem_bytes = 2};
        sim_time_t x;
        dt_error_clear(&err);
        if (coll_analytic_time(a, &s, &x, NULL, &err) != DT_OK) continue;
        if (pick == COLL_AUTO || x < best) {
            best = x;
            pick = (coll_algo)k;
        }
    }
    ck_assert_int_ne(pick, COLL_AUTO);
    coll_spec f = {.op = op, .algo = COLL_FASTEST, .group = g, .n = n, .bytes = S, .elem_bytes = 2};
    sim_time_t x;
    coll_algo ran;
    dt_error_clear(&err);
    ck_assert_int_eq(coll_analytic_time(a, &f, &x, &ran, &err), DT_OK);
    ck_assert_int_eq(x, best);
    ck_assert_msg(ran == pick, "%s %g B: ran %s, least %s", coll_op_name(op), S,
                  coll_algo_name(ran), coll_algo_name(pick));
    coll_algo choice;
    ck_assert_int_eq(coll_fastest_choice(a, &f, &choice, &err), DT_OK);
    ck_assert_int_eq(choice, pick);
    double sent_f = 0, sent_p = 0;
    coll_spec p = f;
    p.algo = pick;
    ck_assert_int_eq(coll_analytic_bytes(a, &f, &sent_f, &err), DT_OK);
    ck_assert_int_eq(coll_analytic_bytes(a, &p, &sent_p, &err), DT_OK);
    ck_assert_double_eq(sent_f, sent_p);
    coll_analytic_destroy(a);
    net_destroy(nw);
    sim_engine_destroy(e);
    /* the flow simulation runs the chosen algorithm */
    coll_result rf = simulate_checked(t, &f, &cc), rp = simulate_checked(t, &p, &cc);
    ck_assert_int_eq(rf.algo, pick);
    ck_assert_int_eq(rf.time, rp.time);
}

START_TEST(least_estimate_everywhere)
{
    topo *ts[3] = {
        gen((topo_gen_params){.family = TOPO_FAMILY_GEO, .regions = 4, .gpus_per_region = 2}),
        gen((topo_gen_params){.family = TOPO_FAMILY_DGX, .nodes = 2, .gpus_per_node = 8}),
        switch_topo(6)};
    int ns[3] = {8, 16, 6};
    static const coll_op ops[] = {COLL_ALLREDUCE, COLL_ALLGATHER, COLL_BROADCAST};
    for (int i = 0; i < 3; i++) {
        for (int o = 0; o < 3; o++)
            for (double S = 4096; S <= 256.0 * 1048576; S *= 64) check(ts[i], ops[o], ns[i], S);
        topo_destroy(ts[i]);
    }
}
END_TEST

START_TEST(beats_rule_on_geo)
{
    topo *t = gen((topo_gen_params){.family = TOPO_FAMILY_GEO, .regions = 4, .gpus_per_region = 2});
    int g[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    coll_config cc = {.reduce_bw = -1, .chunk_bytes = 1e18};
    /* the rule (auto before it chose by estimated time, test_coll_auto.c) */
    coll_spec au = {.op = COLL_ALLREDUCE, .algo = COLL_RULE, .group = g, .n = 8,
                    .bytes = 256.0 * 1048576, .elem_bytes = 2};
    coll_spec fa = au;
    fa.algo = COLL_FASTEST;
    coll_result ra = simulate_checked(t, &au, &cc), rf = simulate_checked(t, &fa, &cc);
    ck_assert_int_eq(ra.algo, COLL_HIER);
    ck_assert_int_ne(rf.algo, COLL_HIER);
    ck_assert_double_gt(sim_time_to_s(ra.time), 1.4 * sim_time_to_s(rf.time));
    /* send/recv has no algorithm to choose */
    coll_spec sr = {.op = COLL_SENDRECV, .algo = COLL_FASTEST, .group = g, .n = 2, .bytes = 1e6,
                    .root = 1};
    coll_result rs = simulate_checked(t, &sr, &cc);
    ck_assert_int_eq(rs.algo, COLL_DIRECT);
    coll_algo x;
    ck_assert_int_eq(coll_algo_parse("fastest", &x), DT_OK);
    ck_assert_int_eq(x, COLL_FASTEST);
    ck_assert_str_eq(coll_algo_name(COLL_FASTEST), "fastest");
    topo_destroy(t);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("coll_fastest");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, least_estimate_everywhere);
    tcase_add_test(tc, beats_rule_on_geo);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return dt_run_suite(suite()); }
