/* test_json.c - strict JSON loading.
 * Pins down: syntax errors carry line and column; duplicate keys and trailing garbage are
 * rejected with their path; unknown keys suggest the close allowed key; typed getters name the
 * full path, what was expected and what was found. */
#include <string.h>

#include "dtsim/json.h"
#include "testutil.h"

static int parse(const char *text, cJSON **out, dt_error *err)
{
    dt_error_clear(err);
    return js_parse_text(text, strlen(text), "t.json", out, err);
}

START_TEST(syntax_error_position)
{
    cJSON *j = NULL;
    dt_error e;
    ck_assert_int_eq(parse("{\n  \"a\": 1,\n  \"b\": ]\n}", &j, &e), DT_EINPUT);
    ck_assert_int_eq(e.line, 3);
    ck_assert_int_eq(e.column, 8);
    ck_assert_str_eq(e.file, "t.json");
    char buf[1024];
    dt_error_format(&e, buf, sizeof buf);
    ck_assert_msg(strncmp(buf, "t.json:3:8: ", 12) == 0, "got %s", buf);
}
END_TEST

START_TEST(trailing_and_duplicates)
{
    cJSON *j = NULL;
    dt_error e;
    ck_assert_int_eq(parse("{\"a\": 1} x", &j, &e), DT_EINPUT);
    ck_assert_int_eq(parse("{\"links\": [{\"a\": 1}, {\"b\": 1, \"b\": 2}]}", &j, &e), DT_EINPUT);
    ck_assert_str_eq(e.path, "links[1]");
    ck_assert_msg(strstr(e.msg, "duplicate key \"b\"") != NULL, "%s", e.msg);
    ck_assert_int_eq(parse("{\"a\": [1, 2]}", &j, &e), DT_OK);
    cJSON_Delete(j);
}
END_TEST

START_TEST(unknown_keys)
{
    cJSON *j = NULL;
    dt_error e;
    ck_assert_int_eq(parse("{\"bandwith\": 1}", &j, &e), DT_OK);
    js_ctx ctx = {.file = "t.json", .err = &e};
    static const char *const allowed[] = {"src", "dst", "bandwidth", "latency", NULL};
    ck_assert_int_eq(js_check_keys(&ctx, j, "links[3]", allowed), DT_EINPUT);
    ck_assert_str_eq(e.path, "links[3].bandwith");
    ck_assert_msg(strstr(e.msg, "did you mean \"bandwidth\"") != NULL, "%s", e.msg);
    cJSON_Delete(j);
    ck_assert_int_eq(parse("{\"zzz\": 1}", &j, &e), DT_OK);
    ck_assert_int_eq(js_check_keys(&ctx, j, "", allowed), DT_EINPUT);
    ck_assert_str_eq(e.path, "zzz");
    ck_assert_msg(strstr(e.msg, "expected one of: src, dst") != NULL, "%s", e.msg);
    cJSON_Delete(j);
}
END_TEST

START_TEST(typed_getters)
{
    cJSON *j = NULL;
    dt_error e;
    ck_assert_int_eq(parse("{\"bw\": \"fast\", \"n\": 2.5, \"big\": 3000000000, \"lat\": \"1.5 us\","
                           "\"neg\": \"-1 GB/s\", \"s\": 3, \"mode\": \"flw\", \"ok\": \"400 Gb/s\"}",
                           &j, &e),
                     DT_OK);
    js_ctx ctx = {.file = "t.json", .err = &e};
    double d = 0;
    ck_assert_int_eq(js_get_quantity(&ctx, j, "links[0]", "bw", UNIT_BANDWIDTH, true, true, &d),
                     DT_EINPUT);
    ck_assert_str_eq(e.path, "links[0].bw");
    ck_assert_msg(strstr(e.msg, "\"fast\"") != NULL, "%s", e.msg);
    ck_assert_int_eq(js_get_quantity(&ctx, j, "", "neg", UNIT_BANDWIDTH, true, true, &d), DT_EINPUT);
    ck_assert_msg(strstr(e.msg, "positive") != NULL, "%s", e.msg);
    ck_assert_int_eq(js_get_quantity(&ctx, j, "", "ok", UNIT_BANDWIDTH, true, true, &d), DT_OK);
    ck_assert_rel(d, 50e9, 1e-15);
    long long n = 0;
    ck_assert_int_eq(js_get_int(&ctx, j, "", "n", true, 0, 10, &n), DT_EINPUT);
    ck_assert_int_eq(js_get_int(&ctx, j, "", "big", true, 0, 4000000000LL, &n), DT_OK);
    ck_assert_int_eq(n, 3000000000LL);
    ck_assert_int_eq(js_get_int(&ctx, j, "", "missing", false, 0, 10, &n), DT_OK);
    ck_assert_int_eq(n, 3000000000LL);
    ck_assert_int_eq(js_get_int(&ctx, j, "a", "missing", true, 0, 10, &n), DT_EINPUT);
    ck_assert_str_eq(e.path, "a.missing");
    sim_time_t t = 0;
    ck_assert_int_eq(js_get_time(&ctx, j, "", "lat", true, &t), DT_OK);
    ck_assert_int_eq(t, 1500000);
    ck_assert_int_eq(js_get_time(&ctx, j, "", "s", true, &t), DT_OK);
    ck_assert_int_eq(t, 3 * SIM_S);
    static const char *const modes[] = {"flow", "analytic", NULL};
    int m = -1;
    ck_assert_int_eq(js_get_enum(&ctx, j, "", "mode", true, modes, &m), DT_EINPUT);
    ck_assert_msg(strstr(e.msg, "did you mean \"flow\"") != NULL, "%s", e.msg);
    cJSON_Delete(j);
}
END_TEST

START_TEST(missing_file)
{
    cJSON *j = NULL;
    dt_error e;
    dt_error_clear(&e);
    ck_assert_int_eq(js_parse_file("/nonexistent/x.json", &j, &e), DT_EIO);
    ck_assert_str_eq(e.file, "/nonexistent/x.json");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("json");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, syntax_error_position);
    tcase_add_test(tc, trailing_and_duplicates);
    tcase_add_test(tc, unknown_keys);
    tcase_add_test(tc, typed_getters);
    tcase_add_test(tc, missing_file);
    suite_add_tcase(s, tc);
    return dt_run_suite(s);
}
