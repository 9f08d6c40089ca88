/* test_cal_load.c - calibration files: writing and strict loading (models/gpu/calib.c).
 * Pins down: a written calibration loads back to the same figures; each kind of bad field is an
 * input error naming the file and the JSON path (unknown key with suggestion, wrong version,
 * bad date, derived bandwidth or link figure or summary that disagrees with what it derives
 * from, decreasing sizes, sample count mismatch, top-k keys on an all-reduce fit). Applying a
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

static Suite *suite(void)
{
    Suite *s = suite_create("cal_load");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, round_trip);
    tcase_add_test(tc, validation_errors);
    tcase_add_test(tc, load_missing_file);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return dt_run_suite(suite()); }
