/* test_sim_rng.c - deterministic named random streams.
 * Pins down: the stream-seed derivation (golden values: changing it changes every result), same
 * (seed, name) gives the same sequence, a different name or seed gives a different one, draws on
 * one stream do not shift another, and each distribution's range and moments (fixed seeds, so
 * the tolerances are checked once, not flaky).
 * Leaves free: which exact numbers a distribution returns beyond the first uniform draws. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "dtsim/sim.h"
#include "testutil.h"

/* Check's ck_assert* records a checkpoint per passing call (a pipe write when forking); in the
 * long loops below that dominated the run time, ~300x under valgrind. FAST() reports only on
 * failure. */
#define FAST(cond)                                                                          \
    do {                                                                                    \
        if (!(cond)) ck_abort_msg("%s:%d: assertion %s failed", __FILE__, __LINE__, #cond); \
    } while (0)

START_TEST(stream_seed_golden)
{
    /* Computed once from the documented derivation; a change here is a change of every
     * simulated result and must be deliberate. */
    ck_assert_uint_eq(sim_rng_stream_seed(42, "stragglers"), UINT64_C(8430156008244330711));
    ck_assert_uint_eq(sim_rng_stream_seed(0, ""), UINT64_C(7746700682269596633));
    ck_assert_uint_ne(sim_rng_stream_seed(42, "a"), sim_rng_stream_seed(42, "b"));
    /* and the generator behind it: mt19937 seeded with the low 32 bits */
    sim_rng *r = sim_rng_create(42, "stragglers");
    ck_assert_double_eq(sim_rng_uniform(r), 0.0822883490473032);
    ck_assert_double_eq(sim_rng_uniform(r), 0.70424542133696377);
    sim_rng_destroy(r);
    ck_assert_uint_ne(sim_rng_stream_seed(1, "a"), sim_rng_stream_seed(2, "a"));
}
END_TEST

START_TEST(same_seed_same_sequence)
{
    sim_rng *a = sim_rng_create(7, "faults");
    sim_rng *b = sim_rng_create(7, "faults");
    for (int i = 0; i < 1000; i++) {
        FAST(sim_rng_uniform(a) == sim_rng_uniform(b));
        FAST(sim_rng_exponential(a, 3.0) == sim_rng_exponential(b, 3.0));
        FAST(sim_rng_uniform_int(a, 1000003) == sim_rng_uniform_int(b, 1000003));
        FAST(sim_rng_uniform_int(a, UINT64_C(1) << 50) == sim_rng_uniform_int(b, UINT64_C(1) << 50));
    }
    sim_rng_destroy(a);
    sim_rng_destroy(b);
}
END_TEST

static int count_equal(sim_rng *a, sim_rng *b, int n)
{
    int eq = 0;
    for (int i = 0; i < n; i++) eq += sim_rng_uniform(a) == sim_rng_uniform(b);
    return eq;
}

START_TEST(different_name_or_seed_differs)
{
    sim_rng *a = sim_rng_create(7, "faults");
    sim_rng *b = sim_rng_create(7, "stragglers");
    sim_rng *c = sim_rng_create(8, "faults");
    ck_assert_int_eq(count_equal(a, b, 1000), 0);
    sim_rng_destroy(a);
    a = sim_rng_create(7, "faults");
    ck_assert_int_eq(count_equal(a, c, 1000), 0);
    sim_rng_destroy(a);
    sim_rng_destroy(b);
    sim_rng_destroy(c);
}
END_TEST

START_TEST(streams_independent_of_other_draws)
{
    /* Reference: stream B alone. Then B created after A, interleaved with 0..3 draws on A of
     * various kinds: B's sequence must not move. */
    double ref[500];
    sim_rng *b = sim_rng_create(99, "B");
    for (int i = 0; i < 500; i++) ref[i] = sim_rng_normal(b, 1.0, 2.0);
    sim_rng_destroy(b);

    sim_rng *a = sim_rng_create(99, "A");
    for (int i = 0; i < 17; i++) sim_rng_uniform(a);
    b = sim_rng_create(99, "B");
    for (int i = 0; i < 500; i++) {
        for (int j = 0; j < i % 4; j++) sim_rng_lognormal(a, 0.0, 1.0);
        FAST(sim_rng_normal(b, 1.0, 2.0) == ref[i]);
    }
    sim_rng_destroy(a);
    sim_rng_destroy(b);
}
END_TEST

START_TEST(distributions_range_and_moments)
{
    sim_rng *r = sim_rng_create(2024, "moments");
    const int n = 50000;
    double su = 0, se = 0, sn = 0, sn2 = 0, sl = 0;
    uint64_t hist[10] = {0};
    for (int i = 0; i < n; i++) {
        double u = sim_rng_uniform(r);
        FAST(u >= 0.0 && u < 1.0);
        su += u;
        double e = sim_rng_exponential(r, 5.0);
        FAST(e >= 0.0);
        se += e;
        double g = sim_rng_normal(r, 3.0, 0.5);
        sn += g;
        sn2 += (g - 3.0) * (g - 3.0);
        double l = sim_rng_lognormal(r, 0.0, 0.25);
        FAST(l > 0.0);
        sl += log(l);
        uint64_t k = sim_rng_uniform_int(r, 10);
        FAST((k) < (10));
        hist[k]++;
    }
    /* Standard errors at n = 5e4: uniform 0.29/sqrt(n) = 1.3e-3, exponential 5/sqrt(n) = 0.022,
     * normal mean 0.5/sqrt(n) = 2.2e-3 and sd 0.5/sqrt(2n) = 1.6e-3, log of the lognormal
     * 0.25/sqrt(n) = 1.1e-3, histogram bin sqrt(0.09/n) = 1.3e-3: tolerances are about 4.5 of
     * them, so a wrong parameter (mean 5.5 for 5, sigma 0.55 for 0.5) fails. */
    ck_assert_double_eq_tol(su / n, 0.5, 6e-3);
    ck_assert_double_eq_tol(se / n, 5.0, 0.1);
    ck_assert_double_eq_tol(sn / n, 3.0, 1e-2);
    ck_assert_double_eq_tol(sqrt(sn2 / n), 0.5, 8e-3);
    ck_assert_double_eq_tol(sl / n, 0.0, 5e-3);
    for (int k = 0; k < 10; k++) ck_assert_double_eq_tol((double)hist[k] / n, 0.1, 6e-3);
    sim_rng_destroy(r);
}
END_TEST

START_TEST(uniform_int_wide_and_edges)
{
    sim_rng *r = sim_rng_create(5, "wide");
    for (int i = 0; i < 100; i++) ck_assert_uint_eq(sim_rng_uniform_int(r, 1), 0);
    /* n above 2^32 takes the two-draw path: values must stay below n and reach the top half. */
    const uint64_t n = (UINT64_C(3) << 40) + 7;
    int high = 0;
    for (int i = 0; i < 10000; i++) {
        uint64_t x = sim_rng_uniform_int(r, n);
        FAST((x) < (n));
        high += x >= n / 2;
    }
    FAST((high) > (4700));
    ck_assert_int_lt(high, 5300);
    uint64_t x = sim_rng_uniform_int(r, UINT64_MAX);
    ck_assert_uint_lt(x, UINT64_MAX);
    ck_assert_ptr_nonnull(sim_rng_gsl(r));
    sim_rng_destroy(r);
    sim_rng_destroy(NULL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim_rng");
    TCase *t = tcase_create("rng");
    tcase_add_test(t, stream_seed_golden);
    tcase_add_test(t, same_seed_same_sequence);
    tcase_add_test(t, different_name_or_seed_differs);
    tcase_add_test(t, streams_independent_of_other_draws);
    tcase_add_test(t, distributions_range_and_moments);
    tcase_add_test(t, uniform_int_wide_and_edges);
    suite_add_tcase(s, t);
    return dt_run_suite(s);
}
