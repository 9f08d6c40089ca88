/* test_maxmin.c - the max-min fair bandwidth solver (models/maxmin.c) on its own.
 * Pins down: hand-computed rates for small networks (3 flows on 2 links of different capacity,
 * a chain with a long flow, ties), flows with no link, workspace reuse across problems of
 * different sizes, and on random instances the two properties that define max-min fairness:
 * no link over capacity, and every flow has a saturated link on which no flow is faster; and that
 * dropping links that duplicate a tighter link's flows changes no rate and no bottleneck, and
 * that what the solver then shows of its classes (mm_dedup_view) gives every link's load bit for
 * bit.
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


/* Dropping duplicate links is exact: ring-like instances (weighted lane flows crossing long
 * chains of links that carry only them, plus short flows on some of those links, parallel links
 * of equal and unequal capacity) give bit-identical rates and bottlenecks with and without it;
 * and it must have had something to drop. */
START_TEST(duplicate_links_exact)
{
    sim_rng *r = sim_rng_create(7, "maxmin.dedup");
    mm_solver *a = mm_create(), *b = mm_create();
    mm_set_dedup_threshold(a, 0);
    mm_set_dedup_threshold(b, 1 << 30);
    for (int inst = 0; inst < 200; inst++) {
        int nl = 40 + (int)sim_rng_uniform_int(r, 200), nf = 2 + (int)sim_rng_uniform_int(r, 30);
        double *cap = malloc((size_t)nl * sizeof *cap), *w = malloc((size_t)nf * sizeof *w);
        for (int l = 0; l < nl; l++) /* few distinct capacities: equal-capacity duplicates */
            cap[l] = 1e9 * (1 + (double)(int)sim_rng_uniform_int(r, 3));
        int *fs = malloc((size_t)(nf + 1) * sizeof *fs), *fl = malloc((size_t)nf * nl * sizeof *fl);
        int k = 0, lanes = 1 + (int)sim_rng_uniform_int(r, 4);
        for (int f = 0; f < nf; f++) {
            fs[f] = k;
            if (f < lanes) { /* lanes of one ring: the same long chain, a lane-private link each */
                w[f] = 1.0 / lanes;
                for (int l = 0; l < nl / 2; l++) fl[k++] = l;
                fl[k++] = nl / 2 + f;
                if (sim_rng_uniform(r) < 0.3) fl[k++] = 3; /* crossing one link twice */
            } else { /* short flows: two or three links anywhere */
                w[f] = 1;
                int h = 1 + (int)sim_rng_uniform_int(r, 3);
                for (int j = 0; j < h; j++) fl[k++] = (int)sim_rng_uniform_int(r, (uint64_t)nl);
            }
        }
        fs[nf] = k;
        double *ra = malloc((size_t)nf * sizeof *ra), *rb = malloc((size_t)nf * sizeof *rb);
        int *ba = malloc((size_t)nf * sizeof *ba), *bb = malloc((size_t)nf * sizeof *bb);
        mm_solve_weighted(a, nl, cap, nf, fs, fl, w, ra, ba);
        mm_solve_weighted(b, nl, cap, nf, fs, fl, w, rb, bb);
        for (int f = 0; f < nf; f++) {
            ck_assert_msg(ra[f] == rb[f], "instance %d flow %d: %.17g vs %.17g", inst, f, ra[f], rb[f]);
            ck_assert_int_eq(ba[f], bb[f]);
        }
        /* mm_dedup_view: each link's load summed over the reduced lists, a dropped link taking
         * its representative's, is bit for bit a pass over the full lists; a representative is
         * kept and no wider than the links it stands for */
        const int *cls, *rep, *rfs, *rfl;
        ck_assert(mm_dedup_view(a, &cls, &rep, &rfs, &rfl));
        double *ref = calloc((size_t)nl, sizeof *ref), *red = calloc((size_t)nl, sizeof *red);
        int dropped = 0;
        for (int f = 0; f < nf; f++) {
            for (int j = fs[f]; j < fs[f + 1]; j++) ref[fl[j]] += ra[f];
            for (int j = rfs[f]; j < rfs[f + 1]; j++) red[rfl[j]] += ra[f];
        }
        for (int l = 0; l < nl; l++) {
            if (cls[l] < 0) continue; /* crossed by no flow */
            int rp = rep[cls[l]];
            ck_assert_int_eq(cls[rp], cls[l]);
            ck_assert(cap[rp] <= cap[l]);
            dropped += rp != l;
            ck_assert_msg(red[rp] == ref[l], "load, instance %d link %d: %.17g vs %.17g", inst, l, red[rp], ref[l]);
        }
        ck_assert_int_gt(dropped, 0);
        free(ref), free(red);
        ck_assert(!mm_dedup_view(b, &cls, &rep, &rfs, &rfl));
        /* the caller's incidence counts per link (the network's entry counts) give the same
         * answer as the solver's own count, bit for bit, with and without dropping links */
        int *ln = calloc((size_t)nl, sizeof *ln);
        for (int j = 0; j < k; j++) ln[fl[j]]++;
        mm_solve_counted(a, nl, cap, nf, fs, fl, w, ln, rb, bb);
        for (int f = 0; f < nf; f++) {
            ck_assert_msg(ra[f] == rb[f], "counted, instance %d flow %d", inst, f);
            ck_assert_int_eq(ba[f], bb[f]);
        }
        mm_solve_counted(b, nl, cap, nf, fs, fl, w, ln, rb, bb);
        for (int f = 0; f < nf; f++) {
            ck_assert_msg(ra[f] == rb[f], "counted, no drop, instance %d flow %d", inst, f);
            ck_assert_int_eq(ba[f], bb[f]);
        }
        free(ln);
        free(cap), free(w), free(fs), free(fl), free(ra), free(rb), free(ba), free(bb);
    }
    mm_destroy(a);
    mm_destroy(b);
    sim_rng_destroy(r);
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
    tcase_add_test(tc, duplicate_links_exact);
    suite_add_tcase(s, tc);
    return dt_run_suite(s);
}
