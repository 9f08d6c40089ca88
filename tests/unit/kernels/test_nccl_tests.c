/* test_nccl_tests.c - reading nccl-tests logs and fitting them (kernels/cal_nccl_tests.c).
 * Pins down, on logs built here in nccl-tests' formats (current, and the old one without the
 * Group and root columns, with an `error` column of floats and times in ms):
 *  - what is read: collective, ranks and hosts from the device list, communicators split by
 *    NCCL_TESTS_SPLIT_MASK (ranks per communicator), dtype, iterations, every row's two times;
 *  - mpirun's "[0]" tags (also glued inside rows) and several runs in one file;
 *  - the collective inferred from busbw/algbw when nothing names it (all-reduce over n ranks
 *    gives n; an all_gather/alltoall ambiguity is refused), ranks inferred without a device list;
 *  - refusals with the line: a new table before the last one closed, a row whose busbw is not
 *    algbw x the factor, a file that is a directory;
 *  - the fit: on rows lying exactly on T = 20 us + S / 100 GB/s above 1 MiB and flat below, the
 *    chosen range starts at 1 MiB and alpha, beta come back; --fit-range forces a range; the
 *    tolerance decides; inter-host when the ranks span hosts; logs of one shape merge and a
 *    second shape of the same collective and scope is refused.
 * Leaves free: message wording beyond the quoted parts. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtsim/calib.h"
#include "dtsim/kern.h"
#include "testutil.h"

typedef struct buf {
    char *s;
    size_t n, cap;
} buf;

static void put(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char tmp[1024];
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (b->n + (size_t)k + 1 > b->cap) {
        b->cap = (b->n + (size_t)k + 1) * 2;
        b->s = realloc(b->s, b->cap);
    }
    memcpy(b->s + b->n, tmp, (size_t)k + 1);
    b->n += (size_t)k;
}

/* the time column as nccl-tests prints it (us) */
static void fmt_time(double us, char *out, size_t n)
{
    if (us >= 10000) snprintf(out, n, "%7.0f", us);
    else if (us >= 100) snprintf(out, n, "%7.1f", us);
    else snprintf(out, n, "%7.2f", us);
}

/* A current-format log of `op`: n ranks over `hosts` hosts, rows of size 2^lo .. 2^hi with
 * time t(S) (us); busbw factor f. */
static void current_log(buf *b, const char *test, int n, int hosts, int lo, int hi, double (*t)(double), double f,
                        const char *redop)
{
    put(b, "# nccl-tests version 2.17.6 nccl-headers=22807 nccl-library=22807\n");
    if (test) put(b, "# Collective test starting: %s\n", test);
    put(b, "# nThread 1 nGpus 1 minBytes %.0f maxBytes %.0f step: 2(factor) warmup iters: 3 iters: 40 agg iters: 1 "
            "validation: 1 graph: 0\n#\n# Using devices\n", ldexp(1, lo), ldexp(1, hi));
    for (int r = 0; r < n; r++)
        put(b, "#  Rank %2d Group  0 Pid %6d on %10s device %2d [0x%02x] NVIDIA H100 80GB HBM3\n", r, 1000 + r,
            r * hosts / n == 0 ? "hostA" : r * hosts / n == 1 ? "hostB" : "hostC", r % 8, r);
    put(b, "#\n#                                                              out-of-place                       "
           "in-place          \n");
    put(b, "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
           "busbw #wrong\n");
    put(b, "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  "
           "(GB/s)       \n");
    for (int e = lo; e <= hi; e++) {
        double S = ldexp(1, e), us = t(S);
        char ts[32];
        fmt_time(us, ts, sizeof ts);
        double us_p = atof(ts); /* what a reader sees */
        (void)us_p;
        double alg = S / us / 1e3;
        put(b, "%12.0f  %12.0f  %8s  %6s  %6i  %7s  %6.2f  %6.2f  %5i  %7s  %6.2f  %6.2f  %5i\n", S, S / 4, "float",
            redop, -1, ts, alg, alg * f, 0, ts, alg, alg * f, 0);
    }
    put(b, "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 12.345 \n#\n");
}

/* on the line 20 us + S / (100 GB/s) from 1 MiB, flat at 40 us below (a latency-bound regime) */
static double kinked(double S) { return S >= 1048576 ? 20 + S / 100e3 : 40; }

static int parse(const buf *b, const char *file, int hint, cal_nccl_log *log, dt_error *err)
{
    dt_error_clear(err);
    return cal_nccl_parse(b->s, b->n, file, hint, log, err);
}

START_TEST(current_format_and_fit)
{
    buf b = {0};
    current_log(&b, "all_reduce_perf", 8, 1, 10, 30, kinked, 1.75, "sum");
    cal_nccl_log log;
    dt_error err;
    ck_assert_msg(parse(&b, "x.log", -1, &log, &err) == DT_OK, "%s", err.msg);
    ck_assert_int_eq(log.n_runs, 1);
    const cal_nccl_run *r = &log.runs[0];
    ck_assert_int_eq(r->kind, CAL_KIND_ALLREDUCE);
    ck_assert_int_eq(r->ranks, 8);
    ck_assert_int_eq(r->hosts, 1);
    ck_assert_int_eq(r->iters, 40);
    ck_assert_int_eq(r->warmup, 3);
    ck_assert_str_eq(r->dtype, "fp32");
    ck_assert_str_eq(r->gpu, "NVIDIA H100 80GB HBM3");
    ck_assert_int_eq(r->n_rows, 21);
    ck_assert_double_eq_tol(r->time[0][0], 40e-6, 1e-12);
    cal_result *c = NULL;
    ck_assert_int_eq(cal_from_nccl_runs(log.runs, log.n_runs, NULL, &c, &err), DT_OK);
    ck_assert_int_eq(c->n_algos, 1);
    const cal_algo *a = &c->algos[0];
    ck_assert_str_eq(a->name, "nccltests_allreduce");
    ck_assert_int_eq(a->scope, CAL_SCOPE_INTRA);
    ck_assert_double_eq(a->fit_from, 1048576);
    ck_assert_double_eq(a->fit_to, ldexp(1, 30));
    ck_assert_rel(a->fit.alpha, 20e-6, 1e-3);
    ck_assert_rel(1.0 / a->fit.beta, 100e9, 1e-3);
    ck_assert_int_eq(a->n_points, 21);          /* every size kept */
    ck_assert_int_eq(a->fit.n_samples, 2 * 11); /* fitted: 1 MiB .. 1 GiB, two samples each */
    ck_assert_int_eq(c->ranks, 8);
    ck_assert_str_eq(c->backend, "nccl-tests");
    cal_result_destroy(c);

    /* a forced range fits what it is told, misses and all */
    cal_nccl_options o = {.size_from = 1024, .size_to = ldexp(1, 30)};
    ck_assert_int_eq(cal_from_nccl_runs(log.runs, log.n_runs, &o, &c, &err), DT_OK);
    ck_assert_double_eq(c->algos[0].fit_from, 1024);
    ck_assert(c->algos[0].fit_worst > 0.05);
    cal_result_destroy(c);
    /* a tolerance below the printing precision finds no range of 3 sizes */
    cal_nccl_options tight = {.tolerance = 1e-9};
    ck_assert_int_eq(cal_from_nccl_runs(log.runs, log.n_runs, &tight, &c, &err), DT_EINPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "no run of 3 or more consecutive sizes"));
    cal_nccl_log_free(&log);
    free(b.s);
}
END_TEST

START_TEST(hosts_and_groups)
{
    buf b = {0};
    current_log(&b, NULL, 16, 2, 20, 24, kinked, 2.0 * 15 / 16, "sum");
    cal_nccl_log log;
    dt_error err;
    ck_assert_msg(parse(&b, "run.all_reduce_perf.out", -1, &log, &err) == DT_OK, "%s", err.msg);
    ck_assert_int_eq(log.runs[0].kind, CAL_KIND_ALLREDUCE); /* from the file name */
    ck_assert_int_eq(log.runs[0].hosts, 2);
    ck_assert_int_eq(log.runs[0].gpus_per_host, 8);
    ck_assert_str_eq(log.runs[0].hostnames, "hostA,hostB");
    cal_result *c = NULL;
    ck_assert_int_eq(cal_from_nccl_runs(log.runs, log.n_runs, NULL, &c, &err), DT_OK);
    ck_assert_int_eq(c->algos[0].scope, CAL_SCOPE_INTER);
    ck_assert_int_eq(c->algos[0].hosts, 2);
    ck_assert_str_eq(c->algos[0].name, "nccltests_allreduce_inter");
    cal_result_destroy(c);
    cal_nccl_log_free(&log);
    free(b.s);

    /* NCCL_TESTS_SPLIT_MASK: two communicators of 4; busbw uses 4 ranks */
    buf g = {0};
    put(&g, "# Using devices\n");
    for (int r = 0; r < 8; r++)
        put(&g, "#  Rank %2d Group %2d Pid %6d on      host0 device %2d [0x01] GPU\n", r % 4, r / 4, 10 + r, r);
    put(&g, "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
            "busbw #wrong\n");
    double f4 = 1.5;
    for (int e = 20; e <= 22; e++) {
        double S = ldexp(1, e), us = 10 + S / 50e3, alg = S / us / 1e3;
        char ts[32];
        fmt_time(us, ts, sizeof ts);
        put(&g, "%12.0f  %12.0f  float  sum  -1  %7s  %6.2f  %6.2f  0  %7s  %6.2f  %6.2f  0\n", S, S / 4, ts, alg, alg * f4,
            ts, alg, alg * f4);
    }
    put(&g, "# Avg bus bandwidth    : 1\n");
    ck_assert_msg(parse(&g, "g.log", CAL_KIND_ALLREDUCE, &log, &err) == DT_OK, "%s", err.msg);
    ck_assert_int_eq(log.runs[0].ranks, 4);
    ck_assert_int_eq(log.runs[0].groups, 2);
    cal_nccl_log_free(&log);
    free(g.s);
}
END_TEST

START_TEST(old_format_tags_and_units)
{
    /* nccl-tests of 2018: no Group, no root, `error` as a float; mpirun's "[0]" tags, one glued
     * to a field; times in ms */
    buf b = {0};
    put(&b, "[0] # nThread 1 nGpus 1 minBytes 1048576 maxBytes 4194304 step: 2(factor) warmup iters: 5 iters: 20 "
            "validation: 1\n[0] #\n[0] # Using devices\n");
    for (int r = 0; r < 4; r++) put(&b, "[0] #   Rank  %d Pid  %d on node%d device  %d [0x1b] Tesla V100-SXM2-16GB\n", r, 40 + r, r / 2, r % 2);
    put(&b, "[0] #\n[0] #                                                 out-of-place                    in-place\n");
    put(&b, "[0] #       size         count    type   redop     time  algbw  busbw  error     time  algbw  busbw  error\n");
    put(&b, "[0] #        (B)    (elements)                      (ms) (GB/s) (GB/s)            (ms) (GB/s) (GB/s)\n");
    double f = 1.5;
    for (int e = 20; e <= 22; e++) {
        double S = ldexp(1, e), ms = 0.05 + S / 10e6, alg = S / (ms * 1e-3) / 1e9;
        put(&b, "[0] %12.0f  %12.0f   float     sum[0]  %7.3f %6.2f %6.2f  0e+00  %7.3f %6.2f %6.2f  0e+00\n", S, S / 4,
            ms, alg, alg * f, ms, alg, alg * f);
    }
    put(&b, "[0] # Out of bounds values : 0 OK\n[0] # Avg bus bandwidth    : 5.1\n");
    cal_nccl_log log;
    dt_error err;
    ck_assert_msg(parse(&b, "old.log", -1, &log, &err) == DT_OK, "%s", err.msg);
    const cal_nccl_run *r = &log.runs[0];
    ck_assert_int_eq(r->kind, CAL_KIND_ALLREDUCE); /* 1.5 = 2(n-1)/n with n = 4 */
    ck_assert_int_eq(r->ranks, 4);
    ck_assert_int_eq(r->hosts, 2);
    ck_assert_double_eq_tol(r->time[1][2], 0.05e-3 + 4194304 / 10e9, 1e-6); /* printed %7.3f ms */
    cal_nccl_log_free(&log);
    free(b.s);
}
END_TEST

START_TEST(inference_and_refusals)
{
    cal_nccl_log log;
    dt_error err;
    /* no device list: all-reduce over 8 from the ratio 1.75 */
    buf b = {0};
    put(&b, "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
            "busbw #wrong\n");
    for (int e = 20; e <= 22; e++) {
        double S = ldexp(1, e), us = 10 + S / 50e3, alg = S / us / 1e3;
        char ts[32];
        fmt_time(us, ts, sizeof ts);
        put(&b, "%12.0f %12.0f float sum -1 %7s %6.2f %6.2f 0 %7s %6.2f %6.2f 0\n", S, S / 4, ts, alg, alg * 1.75, ts,
            alg, alg * 1.75);
    }
    buf two = {0};
    put(&two, "%s# Avg bus bandwidth : 1\n%s# Avg bus bandwidth : 1\n", b.s, b.s); /* two runs in one file */
    put(&b, "# Avg bus bandwidth : 1\n");
    ck_assert_msg(parse(&b, "anon.log", -1, &log, &err) == DT_OK, "%s", err.msg);
    ck_assert_int_eq(log.runs[0].kind, CAL_KIND_ALLREDUCE);
    ck_assert_int_eq(log.runs[0].ranks, 8);
    ck_assert_int_eq(log.n_warnings, 1);
    ck_assert_ptr_nonnull(strstr(log.warnings[0], "no device list"));
    cal_nccl_log_free(&log);
    ck_assert_msg(parse(&two, "two.log", -1, &log, &err) == DT_OK, "%s", err.msg);
    ck_assert_int_eq(log.n_runs, 2);
    /* two runs of one shape merge: four samples per size */
    cal_result *c = NULL;
    ck_assert_int_eq(cal_from_nccl_runs(log.runs, log.n_runs, NULL, &c, &err), DT_OK);
    ck_assert_int_eq(c->n_algos, 1);
    ck_assert_int_eq(c->algos[0].points[0].n_samples, 4);
    cal_result_destroy(c);
    /* a second shape (other rank count) of the same collective and scope is refused */
    log.runs[1].ranks = 16;
    ck_assert_int_eq(cal_from_nccl_runs(log.runs, log.n_runs, NULL, &c, &err), DT_EINPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "a second all_reduce_perf run"));
    cal_nccl_log_free(&log);

    /* a new table while the last is open */
    buf open2 = {0};
    put(&open2, "%s%s# Avg bus bandwidth : 1\n", b.s, b.s);
    char *cut = strstr(open2.s, "# Avg bus bandwidth : 1\n#");
    ck_assert_ptr_nonnull(cut);
    memmove(cut, cut + strlen("# Avg bus bandwidth : 1\n"), strlen(cut + strlen("# Avg bus bandwidth : 1\n")) + 1);
    open2.n = strlen(open2.s);
    ck_assert_int_eq(parse(&open2, "open.log", -1, &log, &err), DT_EINPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "line 5: a new table starts, but the one at line 1 never ended"));

    /* busbw not algbw x the factor of the named collective */
    buf named = {0};
    current_log(&named, NULL, 8, 1, 20, 22, kinked, 1.75, "sum");
    ck_assert_int_eq(parse(&named, "x.log", CAL_KIND_REDUCE_SCATTER, &log, &err), DT_EINPUT);
    ck_assert_msg(strstr(err.msg, "line 17: busbw") != NULL, "%s", err.msg);
    free(named.s);

    /* (n-1)/n with redop none: all_gather or alltoall? */
    buf ag = {0};
    put(&ag, "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n");
    for (int e = 20; e <= 22; e++) {
        double S = ldexp(1, e), us = 10 + S / 50e3, alg = S / us / 1e3;
        put(&ag, "%.0f %.0f float none -1 %.2f %.2f %.2f 0 %.2f %.2f %.2f 0\n", S, S / 32, us, alg, alg * 0.875, us, alg,
            alg * 0.875);
    }
    put(&ag, "# Avg bus bandwidth : 1\n");
    ck_assert_int_eq(parse(&ag, "ag.log", -1, &log, &err), DT_EINPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "fits all_gather and alltoall alike"));
    ck_assert_int_eq(parse(&ag, "ag.log", CAL_KIND_ALLGATHER, &log, &err), DT_OK);
    ck_assert_int_eq(log.runs[0].ranks, 8);
    cal_nccl_log_free(&log);

    dt_error_clear(&err);
    ck_assert_int_eq(cal_nccl_parse_file(DTSIM_SOURCE_DIR "/tests", -1, &log, &err), DT_EIO); /* a directory cannot be read: exit 1, as the README says */
    ck_assert_ptr_nonnull(strstr(err.msg, "Is a directory"));
    free(b.s);
    free(two.s);
    free(open2.s);
    free(ag.s);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("nccl_tests");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, current_format_and_fit);
    tcase_add_test(tc, hosts_and_groups);
    tcase_add_test(tc, old_format_tags_and_units);
    tcase_add_test(tc, inference_and_refusals);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return dt_run_suite(suite()); }
