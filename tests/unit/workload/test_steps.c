/* test_steps.c - many steps (run_scenario_steps) and the data-parallel plan options that only
 * make sense over many: backup workers, bounded-staleness asynchronous replicas, local SGD; the
 * input pipeline's loader across steps.
 * Pins down: the p50 and p99 of the step time of n = 16 replicas whose only work is one op of
 * lognormal jitter are the quantiles of the max of 16 lognormals, F^-1(p^(1/16)), within three
 * standard errors of the sample quantile; results do not depend on the thread count; step 0 is
 * `dtsim run`; one slow replica out of 4 dropped by one backup worker leaves the others' time
 * and uses 3/4 of the samples; asynchronous replicas with staleness 0 take the synchronous
 * step, with staleness 1 hide the update behind the next step (C + P/n on average, reads one
 * step stale after the first); local SGD every H: (H C + P) / H; a loader twice as slow as the
 * step doubles every period after the prefetched one; bad options fail at their path.
 * Leaves free: the breakdown of asynchronous steps beyond summing to the period. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_randist.h>

#include "dtsim/run.h"
#include "dtsim/workload.h"
#include "testutil.h"

static cJSON *parse(const char *text)
{
    cJSON *j;
    dt_error e;
    ck_assert_int_eq(js_parse_text(text, strlen(text), "s.json", &j, &e), DT_OK);
    return j;
}

static void steps(const char *text, int n, int jobs, run_result *first, run_steps_result *out)
{
    cJSON *j = parse(text);
    dt_error e;
    dt_error_clear(&e);
    run_options opt = {0};
    int rc = run_scenario_steps(j, "s.json", ".", &opt, n, jobs, NULL, NULL, first, out, &e);
    ck_assert_msg(rc == DT_OK, "%s: %s", e.path, e.msg);
    cJSON_Delete(j);
}

static double run1(const char *text)
{
    cJSON *j = parse(text);
    run_result r;
    dt_error e;
    run_options opt = {0};
    ck_assert_int_eq(run_scenario(j, "s.json", ".", &opt, &r, &e), DT_OK);
    run_result_free(&r);
    cJSON_Delete(j);
    return r.step_time_s;
}

/* 16 replicas, one forward of 10 ms each (backward 0, no parameters, free network). */
#define LOGNORMAL                                                                              \
    "{\"topology\": {\"generator\": \"switch\", \"gpus\": 16, \"latency\": 0, "                 \
    "\"switch_latency\": 0}, \"model\": {\"kind\": \"synthetic\", \"layers\": 1, "              \
    "\"forward_time\": \"10 ms\", \"backward_time\": 0, \"params\": 0}, \"parallel\": "         \
    "{\"dp\": 16}, \"jitter\": {\"sigma\": 0.2}}"

START_TEST(max_of_lognormals)
{
    const int N = 4000, n = 16;
    const double sigma = 0.2, mu = -sigma * sigma / 2, t = 0.010;
    run_result f;
    run_steps_result r;
    steps(LOGNORMAL, N, 2, &f, &r);
    ck_assert_int_eq(r.n, N);
    for (int q = 0; q < 2; q++) {
        double p = q ? 0.99 : 0.5;
        /* the max M of n iid X: F_M = F_X^n, so its p-quantile is F_X^-1(p^(1/n)) */
        double u = pow(p, 1.0 / n), z = gsl_cdf_ugaussian_Pinv(u);
        double want = t * exp(mu + sigma * z);
        /* the sample quantile's standard error, sqrt(p(1-p)/N) / f_M(want), with
         * f_M = n F_X^(n-1) f_X and f_X(x) = phi(z) / (x sigma) */
        double fx = gsl_ran_ugaussian_pdf(z) / (want * sigma);
        double fm = n * pow(u, n - 1) * fx;
        double se = sqrt(p * (1 - p) / N) / fm;
        double got = q ? r.p99_s : r.p50_s;
        ck_assert_msg(fabs(got - want) <= 3 * se, "p%g: %.6g s, closed form %.6g s (se %.3g)",
                      100 * p, got, want, se);
    }
    /* thread count does not matter; step 0 is the single run */
    run_result f1;
    run_steps_result r1;
    steps(LOGNORMAL, 300, 1, &f1, &r1);
    run_result f3;
    run_steps_result r3;
    steps(LOGNORMAL, 300, 3, &f3, &r3);
    for (int k = 0; k < 300; k++) ck_assert(r1.step_s[k] == r3.step_s[k] && r1.step_s[k] == r.step_s[k]);
    ck_assert(r1.step_s[0] == run1(LOGNORMAL));
    ck_assert(f1.step_time_s == r1.step_s[0]);
    run_steps_result_free(&r);
    run_steps_result_free(&r1);
    run_steps_result_free(&r3);
    run_result_free(&f);
    run_result_free(&f1);
    run_result_free(&f3);
}
END_TEST

/* 4 replicas of 4 layers (1 ms forward, 2 ms backward), GPU 3 twice as slow, free network. */
#define SLOW(extra)                                                                            \
    "{\"topology\": {\"generator\": \"switch\", \"gpus\": 4, \"latency\": 0, "                  \
    "\"switch_latency\": 0}, \"model\": {\"kind\": \"synthetic\", \"layers\": 4, "              \
    "\"forward_time\": \"1 ms\", \"backward_time\": \"2 ms\", \"params\": 0}, "                 \
    "\"parallel\": {\"dp\": 4" extra "}, \"stragglers\": [{\"gpu\": 3, \"slowdown\": 2}]}"

START_TEST(backup_workers)
{
    ck_assert_rel(run1(SLOW("")), 0.024, 1e-9);
    cJSON *j = parse(SLOW(", \"backup_workers\": 1"));
    run_result r;
    dt_error e;
    run_options opt = {0};
    ck_assert_int_eq(run_scenario(j, "s.json", ".", &opt, &r, &e), DT_OK);
    ck_assert_rel(r.step_time_s, 0.012, 1e-9); /* the straggler is dropped */
    ck_assert_int_eq(r.dropped_replicas, 1);
    ck_assert_rel(r.samples_used, 3, 1e-12);    /* 3 of the 4 samples */
    ck_assert_rel(r.throughput.samples_per_s, 3 / 0.012, 1e-9);
    run_result_free(&r);
    cJSON_Delete(j);
    run_result f;
    run_steps_result s;
    steps(SLOW(", \"backup_workers\": 1"), 10, 2, &f, &s);
    ck_assert_rel(s.mean_s, 0.012, 1e-9);
    ck_assert_rel(s.dropped_mean, 1, 1e-12);
    run_steps_result_free(&s);
    run_result_free(&f);
}
END_TEST

/* 2 replicas, one layer of 10 + 20 ms, 5e6 parameters (10 MB of bf16 gradients) reduced after
 * the backward over 1 GB/s: the update P is about 10 ms. */
#define ASYNC(extra)                                                                           \
    "{\"topology\": {\"generator\": \"switch\", \"gpus\": 2, \"bandwidth\": \"1 GB/s\", "       \
    "\"latency\": 0, \"switch_latency\": 0}, \"model\": {\"kind\": \"synthetic\", "             \
    "\"layers\": 1, \"forward_time\": \"10 ms\", \"backward_time\": \"20 ms\", "                \
    "\"params\": 5e6}, \"parallel\": {\"dp\": 2, \"overlap_dp\": false" extra "}}"

START_TEST(async_and_local_sgd)
{
    double Ts = run1(ASYNC(""));
    cJSON *j = parse(ASYNC(", \"local_sgd\": 4"));
    run_result r;
    dt_error e;
    run_options opt = {0};
    ck_assert_int_eq(run_scenario(j, "s.json", ".", &opt, &r, &e), DT_OK);
    double Tl = r.local_step_s, P = Ts - Tl;
    ck_assert_rel(r.sync_step_s, Ts, 1e-12);
    ck_assert_rel(P, 0.010, 0.01); /* 10 MB at 1 GB/s (and its reduction) */
    ck_assert_rel(r.step_time_s, (3 * Tl + Ts) / 4, 1e-9);
    cJSON_Delete(j);
    run_result_free(&r);
    const int n = 40;
    run_result f;
    run_steps_result s;
    steps(ASYNC(", \"local_sgd\": 4"), n, 2, &f, &s);
    ck_assert_rel(s.mean_s, (4 * Tl + P) / 4, 1e-9);
    ck_assert_int_eq(s.sync_steps, 10);
    run_steps_result_free(&s);
    run_result_free(&f);
    /* staleness 0: synchronous; 1: the update overlaps the next step's compute */
    steps(ASYNC(", \"staleness\": 0"), n, 2, &f, &s);
    ck_assert_rel(s.mean_s, Tl + P, 1e-9);
    ck_assert(s.staleness_max == 0);
    run_steps_result_free(&s);
    run_result_free(&f);
    steps(ASYNC(", \"staleness\": 1"), n, 2, &f, &s);
    ck_assert_rel(s.mean_s, Tl + P / n, 1e-9);
    ck_assert_rel(s.staleness_mean, (n - 1.0) / n, 1e-12);
    ck_assert(s.staleness_max == 1);
    ck_assert_rel(f.step_time_s, s.mean_s, 1e-12);
    double b = f.breakdown_s.compute + f.breakdown_s.comm_exposed + f.breakdown_s.bubble +
               f.breakdown_s.straggler_wait;
    ck_assert_rel(b, f.step_time_s, 1e-9);
    run_steps_result_free(&s);
    run_result_free(&f);
}
END_TEST

START_TEST(loader_across_steps)
{
    /* 4 samples of 1 GB over 4 hosts' 1 GB/s: 1 s a step's read; the step is 24 ms */
    const char *text = "{\"topology\": {\"generator\": \"switch\", \"gpus\": 4, \"latency\": 0, "
                       "\"switch_latency\": 0}, \"model\": {\"kind\": \"synthetic\", \"layers\": "
                       "4, \"forward_time\": \"1 ms\", \"backward_time\": \"5 ms\", \"params\": 0}, "
                       "\"storage\": {\"host_bandwidth\": \"1 GB/s\"}, \"input\": "
                       "{\"bytes_per_sample\": \"1 GB\", \"prefetch\": 1}}";
    run_result f;
    run_steps_result s;
    steps(text, 5, 1, &f, &s);
    double T = 0.024, r = 1.0;
    ck_assert_rel(s.step_s[0], T, 1e-9);           /* its batch was prefetched */
    for (int k = 1; k < 5; k++) {
        ck_assert_rel(s.step_s[k], r, 1e-9);       /* then the loader sets the pace */
        ck_assert_rel(s.stall_s[k], r - T, 1e-9);
    }
    ck_assert_rel(s.mean_s, (T + 4 * r) / 5, 1e-9);
    run_steps_result_free(&s);
    run_result_free(&f);
}
END_TEST

static void bad(const char *text, const char *path, const char *needle)
{
    cJSON *j = parse(text);
    run_result r;
    dt_error e;
    dt_error_clear(&e);
    run_options opt = {0};
    int rc = run_scenario(j, "s.json", ".", &opt, &r, &e);
    ck_assert_msg(rc == DT_EINPUT, "accepted: %s", text);
    ck_assert_msg(!strcmp(e.path, path), "path '%s', expected '%s' (%s)", e.path, path, e.msg);
    ck_assert_msg(strstr(e.msg, needle) != NULL, "message '%s' lacks '%s'", e.msg, needle);
    cJSON_Delete(j);
}

START_TEST(bad_options)
{
#define BASE(plan)                                                                             \
    "{\"topology\": {\"generator\": \"switch\", \"gpus\": 4}, \"model\": {\"kind\": "          \
    "\"synthetic\", \"layers\": 4, \"forward_time\": \"1 ms\", \"backward_time\": \"2 ms\", "    \
    "\"params\": 1e6}, \"parallel\": " plan "}"
    bad(BASE("{\"backup_workers\": 4}"), "parallel.backup_workers", "below dp");
    bad(BASE("{\"dp\": 2, \"pp\": 2, \"backup_workers\": 1}"), "parallel.backup_workers", "pp 1");
    bad(BASE("{\"staleness\": 1, \"zero\": 1}"), "parallel.staleness", "zero 0");
    bad(BASE("{\"dp\": 1, \"pp\": 4, \"local_sgd\": 8}"), "parallel.local_sgd", "dp > 1");
    bad(BASE("{\"staleness\": 1, \"local_sgd\": 8}"), "parallel.local_sgd", "choose one");
    bad(BASE("{\"backup_workers\": -1}"), "parallel.backup_workers", "-1");
    bad(BASE("{\"local_sgd\": 0}"), "parallel.local_sgd", "0");
#undef BASE
}
END_TEST

Suite *suite(void)
{
    Suite *s = suite_create("steps");
    TCase *t = tcase_create("core");
    tcase_add_test(t, max_of_lognormals);
    tcase_add_test(t, backup_workers);
    tcase_add_test(t, async_and_local_sgd);
    tcase_add_test(t, loader_across_steps);
    tcase_add_test(t, bad_options);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return dt_run_suite(suite()); }
