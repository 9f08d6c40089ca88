/* test_maxmin.c - the max-min fair bandwidth solver (models/maxmin.c) on its own.
 * Pins down: hand-computed rates for small networks (3 flows on 2 links of different capacity,
 * a chain with a long flow, ties), flows with no link, workspace reuse across problems of
 * different sizes, and on random instances the two properties that define max-min fairness:
 * no link over capacity, and every flow has a saturated link on which no flow is faster.
 * Leaves free: the order in which equal shares freeze (only rates are compared). */
#include <math.h>

#include "dtsim/sim.h"
#include "maxmin.h"
#include "testutil.h"

START_TEST(three_flows_two_links)
{
    /* link 0: 10 B/s, link 1: 4 B/s. f0 crosses both, f1 only 0, f2 only 1.
     * Link 1 is the bottleneck: f0 = f2 = 2; f1 takes what is left of link 0: 8. */
    double cap[] = {10, 4};
    int fstart[] = {0, 2, 3, 4};
    int flinks[] = {0, 1, 0, 1};
    double rate[3];
    mm_solver *s = mm_create();
    mm_solve(s, 2, cap, 3, fstart, flinks, rate, NULL);
    ck_assert_rel(rate[0], 2, 1e-15);
    ck_assert_rel(rate[1], 8, 1e-15);
    ck_assert_rel(rate[2], 2, 1e-15);
    mm_destroy(s);
}
END_TEST

START_TEST(chain_with_long_flow)
{
    /* Three unit links in a row; f0 crosses all, f1..f3 one each: all get 1/2.
     * Then capacities 1, 2: f0 on both, f1 on 0, f2 and f3 on 1. Link 0 share 1/2 freezes
     * f0 and f1; link 1 has 2 - 1/2 left for two flows: 3/4 each. */
    mm_solver *s = mm_create();
    double cap3[] = {1, 1, 1};
    int fs3[] = {0, 3, 4, 5, 6};
    int fl3[] = {0, 1, 2, 0, 1, 2};
    double r3[4];
    mm_solve(s, 3, cap3, 4, fs3, fl3, r3, NULL);
    for (int i = 0; i < 4; i++) ck_assert_rel(r3[i], 0.5, 1e-15);

    double cap2[] = {1, 2};
    int fs2[] = {0, 2, 3, 4, 5};
    int fl2[] = {0, 1, 0, 1, 1};
    double r2[4];
    int bn[4];
    mm_solve(s, 2, cap2, 4, fs2, fl2, r2, bn);
    ck_assert_int_eq(bn[0], 0);
    ck_assert_int_eq(bn[1], 0);
    ck_assert_int_eq(bn[2], 1);
    ck_assert_int_eq(bn[3], 1);
    ck_assert_rel(r2[0], 0.5, 1e-15);
    ck_assert_rel(r2[1], 0.5, 1e-15);
    ck_assert_rel(r2[2], 0.75, 1e-15);
    ck_assert_rel(r2[3], 0.75, 1e-15);
    mm_destroy(s);
}
END_TEST

START_TEST(no_link_and_alone)
{
    double cap[] = {5e10};
    int fs[] = {0, 0, 1};
    int fl[] = {0};
    double r[2];
    mm_solver *s = mm_create();
    mm_solve(s, 1, cap, 2, fs, fl, r, NULL);
    ck_assert(isinf(r[0]));
    ck_assert_rel(r[1], 5e10, 1e-15);
    mm_destroy(s);
}
END_TEST

/* Max-min fairness: feasible, and each flow has a bottleneck link that is saturated and on
 * which it has the largest rate. */
static void check_maxmin(int nl, const double *cap, int nf, const int *fs, const int *fl,
                         const double *r)
{
    double used[64] = {0}, maxr[64] = {0};
    for (int f = 0; f < nf; f++)
        for (int k = fs[f]; k < fs[f + 1]; k++) {
            used[fl[k]] += r[f];
            if (r[f] > maxr[fl[k]]) maxr[fl[k]] = r[f];
        }
    for (int l = 0; l < nl; l++) ck_assert_msg(used[l] <= cap[l] * (1 + 1e-12), "link %d over", l);
    for (int f = 0; f < nf; f++) {
        ck_assert(r[f] > 0);
        int ok = 0;
        for (int k = fs[f]; k < fs[f + 1]; k++) {
            int l = fl[k];
            if (used[l] >= cap[l] * (1 - 1e-9) && r[f] >= maxr[l] * (1 - 1e-9)) ok = 1;
        }
        ck_assert_msg(ok, "flow %d has no bottleneck", f);
    }
}

START_TEST(random_instances)
{
    sim_rng *g = sim_rng_create(7, "test_maxmin");
    mm_solver *s = mm_create();
    for (int it = 0; it < 300; it++) {
        int nl = 1 + (int)sim_rng_uniform_int(g, 40);
        int nf = 1 + (int)sim_rng_uniform_int(g, 60);
        double cap[64];
        int fs[64], fl[64 * 6];
        double r[64];
        for (int l = 0; l < nl; l++) cap[l] = 1 + 99 * sim_rng_uniform(g);
        int k = 0;
        for (int f = 0; f < nf; f++) {
            fs[f] = k;
            int hops = 1 + (int)sim_rng_uniform_int(g, 5);
            for (int h = 0; h < hops; h++) {
                int l = (int)sim_rng_uniform_int(g, (uint64_t)nl);
                int dup = 0;
                for (int j = fs[f]; j < k; j++) dup |= fl[j] == l;
                if (!dup) fl[k++] = l;
            }
        }
        fs[nf] = k;
        mm_solve(s, nl, cap, nf, fs, fl, r, NULL);
        check_maxmin(nl, cap, nf, fs, fl, r);
    }
    mm_destroy(s);
    sim_rng_destroy(g);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("maxmin");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, three_flows_two_links);
    tcase_add_test(tc, chain_with_long_flow);
    tcase_add_test(tc, no_link_and_alone);
    tcase_add_test(tc, random_instances);
    suite_add_tcase(s, tc);
    return dt_run_suite(s);
}
