/* test_cal_fit.c - the alpha-beta fitter.
 * Pins down: exact data gives exact alpha and beta (R^2 = 1); synthetic samples made with known
 * alpha and beta plus seeded multiplicative Gaussian noise (GSL) are recovered within their 95%
 * confidence intervals, and over 200 seeds the intervals cover the truth close to 95% of the time
 * (between 88% and 99.5%: a too-narrow interval would fail here); a few wild outliers (a
 * preempted thread) do not move the robust fit; the ring-to-link mapping is the closed form;
 * too few samples or sizes are input errors.
 * Leaves free: the exact iteration path of the robust solver. */
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "dtsim/kern.h"
#include <string.h>

#include "testutil.h"

#define NS 8
static const double sizes[NS] = {1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216};

/* reps samples per size of alpha + beta*S, times (1 + noise*N(0,1)) */
static size_t synth(double alpha, double beta, double noise, int reps, unsigned long seed, double *x, double *t)
{
    gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(g, seed);
    size_t n = 0;
    for (int i = 0; i < NS; i++)
        for (int r = 0; r < reps; r++) {
            x[n] = sizes[i];
            t[n++] = (alpha + beta * sizes[i]) * (1 + gsl_ran_gaussian(g, noise));
        }
    gsl_rng_free(g);
    return n;
}

START_TEST(exact_line)
{
    double x[NS], t[NS];
    for (int i = 0; i < NS; i++) {
        x[i] = sizes[i];
        t[i] = 5e-6 + sizes[i] / 10e9;
    }
    cal_fit f;
    ck_assert_int_eq(cal_fit_alpha_beta(x, t, NS, &f, NULL), DT_OK);
    ck_assert_rel(f.alpha, 5e-6, 1e-9);
    ck_assert_rel(f.beta, 1e-10, 1e-9);
    ck_assert_rel(f.r2, 1.0, 1e-12);
    ck_assert_int_eq(f.n_samples, NS);
    ck_assert_int_eq(f.dof, NS - 2);
}
END_TEST

START_TEST(recovers_within_ci)
{
    double x[NS * 10], t[NS * 10];
    const double alpha = 20e-6, beta = 1.0 / 3e9;
    size_t n = synth(alpha, beta, 0.05, 10, 12345, x, t);
    cal_fit f;
    ck_assert_int_eq(cal_fit_alpha_beta(x, t, n, &f, NULL), DT_OK);
    ck_assert_msg(fabs(f.alpha - alpha) <= f.alpha_ci, "alpha %g ± %g vs %g", f.alpha, f.alpha_ci, alpha);
    ck_assert_msg(fabs(f.beta - beta) <= f.beta_ci, "beta %g ± %g vs %g", f.beta, f.beta_ci, beta);
    /* and the intervals are informative: a few percent, not the whole axis */
    ck_assert(f.alpha_ci < 0.2 * alpha);
    ck_assert(f.beta_ci < 0.05 * beta);
    ck_assert(f.r2 > 0.99);
}
END_TEST

START_TEST(ci_coverage)
{
    double x[NS * 5], t[NS * 5];
    const double alpha = 50e-6, beta = 1.0 / 1e9;
    int cover_a = 0, cover_b = 0, runs = 200;
    for (int s = 1; s <= runs; s++) {
        size_t n = synth(alpha, beta, 0.03, 5, (unsigned long)s, x, t);
        cal_fit f;
        ck_assert_int_eq(cal_fit_alpha_beta(x, t, n, &f, NULL), DT_OK);
        cover_a += fabs(f.alpha - alpha) <= f.alpha_ci;
        cover_b += fabs(f.beta - beta) <= f.beta_ci;
    }
    ck_assert_msg(cover_a >= 0.88 * runs && cover_a <= 0.995 * runs, "alpha coverage %d/%d", cover_a, runs);
    ck_assert_msg(cover_b >= 0.88 * runs && cover_b <= 0.995 * runs, "beta coverage %d/%d", cover_b, runs);
}
END_TEST

START_TEST(outliers_ignored)
{
    double x[NS * 10], t[NS * 10];
    const double alpha = 10e-6, beta = 1.0 / 5e9;
    size_t n = synth(alpha, beta, 0.02, 10, 99, x, t);
    t[3] *= 20;  /* a preempted sample at 1 KiB */
    t[45] *= 8;  /* and one at 256 KiB */
    cal_fit f;
    ck_assert_int_eq(cal_fit_alpha_beta(x, t, n, &f, NULL), DT_OK);
    ck_assert_rel(f.alpha, alpha, 0.05);
    ck_assert_rel(f.beta, beta, 0.02);
}
END_TEST

START_TEST(ring_link_closed_form)
{
    double la, lb;
    /* n = 4: T = 6 a + 1.5 S / B. alpha = 60 us, beta = 1/(2 GB/s) -> a = 10 us, B = 1.5 * 2 = 3 GB/s */
    cal_ring_link(60e-6, 1.0 / 2e9, 4, &la, &lb);
    ck_assert_rel(la, 10e-6, 1e-12);
    ck_assert_rel(lb, 3e9, 1e-12);
    cal_ring_link(8e-6, 1.0 / 1e9, 2, &la, &lb); /* n = 2: T = 2 a + S / B */
    ck_assert_rel(la, 4e-6, 1e-12);
    ck_assert_rel(lb, 1e9, 1e-12);
}
END_TEST

START_TEST(bad_input)
{
    double x[4] = {1, 1, 1, 1}, t[4] = {1e-6, 2e-6, 1e-6, 1e-6};
    cal_fit f;
    dt_error err;
    dt_error_clear(&err);
    ck_assert_int_eq(cal_fit_alpha_beta(x, t, 2, &f, &err), DT_EINPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "at least 3"));
    ck_assert_int_eq(cal_fit_alpha_beta(x, t, 4, &f, &err), DT_EINPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "2 or more sizes"));
    double x2[3] = {1, 2, 3}, t2[3] = {1e-6, -1, 1e-6};
    ck_assert_int_eq(cal_fit_alpha_beta(x2, t2, 3, &f, &err), DT_EINPUT);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("cal_fit");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, exact_line);
    tcase_add_test(tc, recovers_within_ci);
    tcase_add_test(tc, ci_coverage);
    tcase_add_test(tc, outliers_ignored);
    tcase_add_test(tc, ring_link_closed_form);
    tcase_add_test(tc, bad_input);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return dt_run_suite(suite()); }
