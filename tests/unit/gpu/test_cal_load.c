/* test_cal_load.c - calibration files: writing and strict loading (models/gpu/calib.c).
 * Pins down: a written calibration loads back to the same figures; each kind of bad field is an
 * input error naming the file and the JSON path (unknown key with suggestion, wrong version,
 * bad date, derived bandwidth or link figure or summary that disagrees with what it derives
 * from, decreasing sizes, sample count mismatch, top-k keys on an all-reduce fit). The keys an
 * nccl-tests import adds (collective kinds, per-fit ranks, hosts, scope, fit_range, source) load
 * back; an inter-host fit on one host, a range that ends before it starts, samples counted
 * outside the range, a sendrecv link latency other than alpha, ranks on top-k are refused. Applying a
 * calibration to a topology is tests/unit/topo/test_topo_calib.c.
 * Leaves free: the wording of messages beyond the path and the key facts. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dtsim/calib.h"
#include "cal_testutil.h"
#include "testutil.h"

START_TEST(round_trip)
{
    cal_result *c = cal_test_make();
    cJSON *j = cal_result_to_json(c);
    char *text = cJSON_Print(j);
    char path[] = "/tmp/dtsim_cal_XXXXXX";
    int fd = mkstemp(path);
    ck_assert(fd >= 0);
    ck_assert(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    cal_result *d = NULL;
    dt_error err;
    dt_error_clear(&err);
    ck_assert_msg(cal_load_file(path, &d, &err) == DT_OK, "%s: %s", err.path, err.msg);
    unlink(path);
    ck_assert_str_eq(d->backend, "cpu");
    ck_assert_int_eq(d->ranks, 4);
    ck_assert_int_eq(d->n_algos, 2);
    ck_assert_str_eq(d->algos[0].name, "ring");
    ck_assert(d->algos[0].fit.alpha == 60e-6);
    ck_assert(d->algos[0].fit.beta == 1.0 / 2e9);
    ck_assert_int_eq(d->algos[0].n_points, 3);
    ck_assert(d->algos[0].points[1].samples[1] == 2.5e-5);
    ck_assert(d->algos[0].points[1].median == 2.1e-5);
    ck_assert_rel(cal_topk_throughput(d), 1e9, 1e-12);
    ck_assert_ptr_eq(cal_link_fit(d), &d->algos[0]);
    ck_assert_ptr_nonnull(strstr(d->source, "dtsim_cal_"));
    cal_result_destroy(d);
    cal_result_destroy(c);
    cJSON_Delete(j);
    free(text);
}
END_TEST

/* Load j as file "c.json" expecting an input error at path containing want_path and a message
 * containing want_msg. */
static void expect_error(cJSON *j, const char *want_path, const char *want_msg)
{
    dt_error err;
    dt_error_clear(&err);
    js_ctx ctx = {.file = "c.json", .err = &err};
    cal_result *d = NULL;
    ck_assert_int_eq(cal_from_json(&ctx, j, &d), DT_EINPUT);
    ck_assert_ptr_null(d);
    ck_assert_str_eq(err.file, "c.json");
    ck_assert_msg(strstr(err.path, want_path) != NULL, "path '%s' lacks '%s' (%s)", err.path, want_path, err.msg);
    ck_assert_msg(strstr(err.msg, want_msg) != NULL, "message '%s' lacks '%s'", err.msg, want_msg);
    cJSON_Delete(j);
}

static cJSON *fresh(void)
{
    cal_result *c = cal_test_make();
    cJSON *j = cal_result_to_json(c);
    cal_result_destroy(c);
    return j;
}

static cJSON *fit0(cJSON *j) { return cJSON_GetArrayItem(cJSON_GetObjectItem(j, "fits"), 0); }

START_TEST(validation_errors)
{
    cJSON *j = fresh();
    cJSON_AddNumberToObject(j, "rankz", 3);
    expect_error(j, "rankz", "did you mean \"ranks\"");

    j = fresh();
    cJSON_ReplaceItemInObject(j, "version", cJSON_CreateNumber(2));
    expect_error(j, "version", "expected 1");

    j = fresh();
    cJSON_ReplaceItemInObject(j, "date", cJSON_CreateString("yesterday"));
    expect_error(j, "date", "ISO-8601");

    j = fresh();
    cJSON_ReplaceItemInObject(j, "backend", cJSON_CreateString("gpu"));
    expect_error(j, "backend", "");

    j = fresh();
    cJSON_ReplaceItemInObject(fit0(j), "bandwidth", cJSON_CreateString("3 GB/s"));
    expect_error(j, "fits[0].bandwidth", "derived");

    j = fresh();
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(fit0(j), "link"), "bandwidth", cJSON_CreateNumber(1e9));
    expect_error(j, "fits[0].link.bandwidth", "derived");

    j = fresh();
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(fit0(j), "link"), "latency", cJSON_CreateNumber(1e-3));
    expect_error(j, "fits[0].link.latency", "alpha/(2(ranks-1))");

    j = fresh();
    cJSON *p1 = cJSON_GetArrayItem(cJSON_GetObjectItem(fit0(j), "points"), 1);
    cJSON_ReplaceItemInObject(p1, "median", cJSON_CreateNumber(3e-5));
    expect_error(j, "fits[0].points[1].median", "samples give");

    j = fresh();
    p1 = cJSON_GetArrayItem(cJSON_GetObjectItem(fit0(j), "points"), 1);
    cJSON_ReplaceItemInObject(p1, "size", cJSON_CreateString("1 KiB"));
    expect_error(j, "fits[0].points[1].size", "increase");

    j = fresh();
    p1 = cJSON_GetArrayItem(cJSON_GetObjectItem(fit0(j), "points"), 2);
    cJSON_ReplaceItemInArray(cJSON_GetObjectItem(p1, "samples"), 0, cJSON_CreateString("fast"));
    expect_error(j, "fits[0].points[2].samples[0]", "");

    j = fresh();
    cJSON_ReplaceItemInObject(fit0(j), "samples", cJSON_CreateNumber(10));
    expect_error(j, "fits[0].samples", "hold 9");

    j = fresh();
    cJSON_AddNumberToObject(fit0(j), "k_fraction", 0.01);
    expect_error(j, "fits[0].k_fraction", "topk");

    j = fresh();
    cJSON_ReplaceItemInObject(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "fits"), 1), "name", cJSON_CreateString("ring"));
    expect_error(j, "fits[1].name", "twice");

    j = fresh();
    cJSON_DeleteItemFromObject(j, "machine");
    expect_error(j, "machine", "required");

    j = fresh();
    cJSON_ReplaceItemInObject(j, "ranks", cJSON_CreateNumber(1));
    expect_error(j, "fits[0].kind", "ranks >= 2");
}
END_TEST

/* A fit whose alpha calibrate held at 0 (the free fit's -1.8 us +- 2.5 us was noise) loads back
 * with the free figures; a file whose claim the rule (cal_alpha_judge) would not have made, or
 * whose alpha is not the 0 it claims, is refused at the path; and a clearly negative alpha, the
 * case calibrate no longer writes, is refused as before. */
START_TEST(alpha_held_at_zero)
{
    cal_result *c = cal_test_make();
    c->algos[0].fit = (cal_fit){.alpha = 0, .beta = 1.0 / 2e9, .alpha_ci = 0, .beta_ci = 1e-11, .r2 = 0.99,
                                .n_samples = 9, .dof = 8, .alpha_held = true, .free_alpha = -1.8e-6, .free_alpha_ci = 2.5e-6};
    cJSON *j = cal_result_to_json(c);
    cal_result_destroy(c);
    const cJSON *h = cJSON_GetObjectItem(fit0(j), "alpha_free");
    ck_assert_ptr_nonnull(h);
    ck_assert(cJSON_GetObjectItem(h, "alpha")->valuedouble == -1.8e-6);
    ck_assert(cJSON_GetObjectItem(h, "alpha_ci95")->valuedouble == 2.5e-6);
    ck_assert_ptr_null(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "fits"), 1), "alpha_free"));
    dt_error err;
    dt_error_clear(&err);
    js_ctx ctx = {.file = "c.json", .err = &err};
    cal_result *d = NULL;
    ck_assert_msg(cal_from_json(&ctx, j, &d) == DT_OK, "%s: %s", err.path, err.msg);
    ck_assert(d->algos[0].fit.alpha_held && !d->algos[1].fit.alpha_held);
    ck_assert(d->algos[0].fit.alpha == 0 && d->algos[0].fit.free_alpha == -1.8e-6 && d->algos[0].fit.free_alpha_ci == 2.5e-6);
    ck_assert_int_eq(d->algos[0].fit.dof, 8); /* 9 samples, one parameter */
    cal_result_destroy(d);

    cJSON *k = cJSON_Duplicate(j, 1);
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(fit0(k), "alpha_free"), "alpha_ci95", cJSON_CreateNumber(1.5e-6));
    expect_error(k, "fits[0].alpha_free.alpha", "reaches 0");
    k = cJSON_Duplicate(j, 1);
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(fit0(k), "alpha_free"), "alpha", cJSON_CreateNumber(3e-6));
    expect_error(k, "fits[0].alpha_free.alpha", "found 3e-06");
    k = cJSON_Duplicate(j, 1);
    cJSON_AddNumberToObject(cJSON_GetObjectItem(fit0(k), "alpha_free"), "beta", 1e-9);
    expect_error(k, "fits[0].alpha_free.beta", "");
    k = cJSON_Duplicate(j, 1);
    cJSON_ReplaceItemInObject(fit0(k), "alpha_ci95", cJSON_CreateNumber(1e-7));
    expect_error(k, "fits[0].alpha", "alpha was held at 0");
    cJSON_Delete(j);

    j = fresh();
    cJSON_ReplaceItemInObject(fit0(j), "alpha", cJSON_CreateNumber(-1.8e-6));
    cJSON_ReplaceItemInObject(fit0(j), "alpha_ci95", cJSON_CreateNumber(1.5e-6));
    expect_error(j, "fits[0].alpha", "a negative latency (-1.8e-06 s) whose 95 % interval (+-1.5e-06 s) does not reach 0");
}
END_TEST

START_TEST(load_missing_file)
{
    cal_result *d = NULL;
    dt_error err;
    dt_error_clear(&err);
    ck_assert_int_ne(cal_load_file("/nonexistent/calib.json", &d, &err), DT_OK);
    ck_assert_ptr_null(d);
    ck_assert_str_eq(err.file, "/nonexistent/calib.json");
}
END_TEST

/* what `calibrate --from-nccl-tests` writes: a sendrecv fit over 8 ranks inside a host, fitted on
 * its last two sizes, and an all-reduce fit across 2 hosts */
static cal_result *nccl_make(void)
{
    cal_result *c = cal_test_make();
    snprintf(c->backend, sizeof c->backend, "nccl-tests");
    snprintf(c->origin, sizeof c->origin, "a.log, b.log");
    c->cores = 0;
    cal_algo *a = &c->algos[0];
    snprintf(a->name, sizeof a->name, "nccltests_sendrecv");
    a->kind = CAL_KIND_SENDRECV;
    a->ranks = 8;
    a->fit_from = 65536;
    a->fit_to = 1048576;
    a->fit_worst = 0.01;
    a->fit.n_samples = 6;
    cal_algo *e = &c->algos[1]; /* the top-k fit becomes an inter-host all-reduce */
    snprintf(e->name, sizeof e->name, "nccltests_allreduce_inter");
    e->kind = CAL_KIND_ALLREDUCE;
    e->k_fraction = 0;
    e->ranks = 16;
    e->hosts = 2;
    e->scope = CAL_SCOPE_INTER;
    return c;
}

START_TEST(nccl_tests_fields)
{
    cal_result *c = nccl_make();
    cJSON *j = cal_result_to_json(c);
    dt_error err;
    dt_error_clear(&err);
    js_ctx ctx = {.file = "n.json", .err = &err};
    cal_result *d = NULL;
    ck_assert_msg(cal_from_json(&ctx, j, &d) == DT_OK, "%s: %s", err.path, err.msg);
    ck_assert_str_eq(d->origin, "a.log, b.log");
    ck_assert_int_eq(d->cores, 0);
    ck_assert_int_eq(d->algos[0].kind, CAL_KIND_SENDRECV);
    ck_assert_int_eq(d->algos[0].ranks, 8);
    ck_assert(d->algos[0].fit_from == 65536 && d->algos[0].fit_to == 1048576);
    ck_assert_int_eq(d->algos[1].scope, CAL_SCOPE_INTER);
    ck_assert_int_eq(d->algos[1].hosts, 2);
    ck_assert_int_eq(cal_fit_ranks(d, &d->algos[1]), 16);
    ck_assert_ptr_eq(cal_link_fit(d), &d->algos[0]);
    ck_assert_ptr_eq(cal_link_fit_scope(d, CAL_SCOPE_INTER), &d->algos[1]);
    cal_result_destroy(d);
    cJSON_Delete(j);

    cJSON *x;
#define NJ() (x = cal_result_to_json(c))
    NJ();
    cJSON_ReplaceItemInObject(cJSON_GetArrayItem(cJSON_GetObjectItem(x, "fits"), 1), "hosts", cJSON_CreateNumber(1));
    expect_error(x, "fits[1].hosts", "2 or more hosts");
    NJ();
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(fit0(x), "fit_range"), "to", cJSON_CreateNumber(1024));
    expect_error(x, "fits[0].fit_range.to", "below");
    NJ();
    cJSON_ReplaceItemInObject(fit0(x), "samples", cJSON_CreateNumber(9));
    expect_error(x, "fits[0].samples", "inside fit_range hold 6");
    NJ();
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(fit0(x), "link"), "latency", cJSON_CreateNumber(1e-5));
    expect_error(x, "fits[0].link.latency", "the number alpha = ");
    NJ();
    cJSON_ReplaceItemInObject(cJSON_GetArrayItem(cJSON_GetObjectItem(x, "fits"), 1), "scope", cJSON_CreateString("rack"));
    expect_error(x, "fits[1].scope", "");
    NJ();
    cJSON_ReplaceItemInObject(fit0(x), "kind", cJSON_CreateString("gather"));
    expect_error(x, "fits[0].kind", "");
    cal_result_destroy(c);

    j = fresh();
    cJSON_AddNumberToObject(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "fits"), 1), "ranks", 4);
    expect_error(j, "fits[1].kind", "not top-k");

    cal_kind k;
    ck_assert_int_eq(cal_kind_parse("All-Reduce", &k), DT_OK);
    ck_assert_int_eq(k, CAL_KIND_ALLREDUCE);
    ck_assert_int_eq(cal_kind_parse("all_gather", &k), DT_OK);
    ck_assert_int_eq(k, CAL_KIND_ALLGATHER);
    ck_assert_int_eq(cal_kind_parse("scatter", &k), DT_EINPUT);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("cal_load");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, nccl_tests_fields);
    tcase_add_test(tc, round_trip);
    tcase_add_test(tc, validation_errors);
    tcase_add_test(tc, load_missing_file);
    tcase_add_test(tc, alpha_held_at_zero);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return dt_run_suite(suite()); }
