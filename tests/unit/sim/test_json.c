/* test_json.c - strict JSON loading.
 * Pins down: syntax errors carry line and column; duplicate keys and trailing garbage are
 * rejected with their path; unknown keys suggest the close allowed key; typed getters name the
 * full path, what was expected and what was found. Limits (dtsim/limits.h): duplicate keys of
 * large objects (50,000 keys) found through the hash set (first repeat named, at its object's path); nesting
 * of exactly 64 accepted and 65 refused at the 65th bracket; non-regular files refused with
 * DT_EIO; the memory budget read from DTSIM_MAX_MEMORY and compared with the estimate. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dtsim/json.h"
#include "dtsim/limits.h"
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

/* An object of n keys k0..k(n-1) with key k`dup` repeated at the end, under "o". */
static char *big_object(int n, int dup)
{
    size_t cap = (size_t)n * 16 + 64, len = 0;
    char *s = malloc(cap);
    len += (size_t)snprintf(s + len, cap - len, "{\"o\": {");
    for (int i = 0; i < n; i++) len += (size_t)snprintf(s + len, cap - len, "\"k%d\": %d,", i, i);
    if (dup >= 0)
        len += (size_t)snprintf(s + len, cap - len, "\"k%d\": 0}}", dup);
    else
        len += (size_t)snprintf(s + len, cap - len, "\"end\": 0}}");
    return s;
}

START_TEST(duplicates_in_large_objects)
{
    cJSON *j = NULL;
    dt_error e;
    char *s = big_object(50000, 49999); /* pairwise: 1.25e9 comparisons; hashed: 5e4 inserts */
    ck_assert_int_eq(parse(s, &j, &e), DT_EINPUT);
    ck_assert_str_eq(e.path, "o");
    ck_assert_msg(strstr(e.msg, "duplicate key \"k49999\"") != NULL, "%s", e.msg);
    free(s);
    s = big_object(50000, -1); /* no repeat: accepted, every key kept */
    ck_assert_int_eq(parse(s, &j, &e), DT_OK);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "o")), 50001);
    cJSON_Delete(j);
    free(s);
    s = big_object(17, 3); /* just past the pairwise size */
    ck_assert_int_eq(parse(s, &j, &e), DT_EINPUT);
    ck_assert_msg(strstr(e.msg, "duplicate key \"k3\"") != NULL, "%s", e.msg);
    free(s);
}
END_TEST

START_TEST(nesting_limit)
{
    char s[2 * DT_MAX_JSON_DEPTH + 8];
    cJSON *j = NULL;
    dt_error e;
    for (int depth = DT_MAX_JSON_DEPTH; depth <= DT_MAX_JSON_DEPTH + 1; depth++) {
        memset(s, '[', (size_t)depth);
        memset(s + depth, ']', (size_t)depth);
        s[2 * depth] = '\0';
        int rc = parse(s, &j, &e);
        if (depth == DT_MAX_JSON_DEPTH) {
            ck_assert_int_eq(rc, DT_OK);
            cJSON_Delete(j);
        } else {
            ck_assert_int_eq(rc, DT_EINPUT);
            ck_assert_int_eq(e.line, 1);
            ck_assert_int_eq(e.column, DT_MAX_JSON_DEPTH + 1); /* the 65th '[' */
            ck_assert_msg(strstr(e.msg, "nested deeper than 64") != NULL, "%s", e.msg);
        }
    }
    /* brackets inside strings do not count */
    char q[200];
    snprintf(q, sizeof q, "{\"a\": \"%.*s\"}", 100, "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[");
    ck_assert_int_eq(parse(q, &j, &e), DT_OK);
    cJSON_Delete(j);
}
END_TEST

START_TEST(non_regular_files)
{
    cJSON *j = NULL;
    dt_error e;
    dt_error_clear(&e);
    ck_assert_int_eq(js_parse_file("/dev/null", &j, &e), DT_EIO);
    ck_assert_msg(strstr(e.msg, "a character device, not a regular file") != NULL, "%s", e.msg);
    dt_error_clear(&e);
    ck_assert_int_eq(js_parse_file("/", &j, &e), DT_EIO);
    ck_assert_msg(strstr(e.msg, "Is a directory") != NULL, "%s", e.msg);
    char fifo[] = "/tmp/dtsim-test-fifo-XXXXXX";
    int fd = mkstemp(fifo);
    ck_assert(fd >= 0);
    close(fd);
    unlink(fifo);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    dt_error_clear(&e); /* would block in fopen without O_NONBLOCK: the test would time out */
    ck_assert_int_eq(js_parse_file(fifo, &j, &e), DT_EIO);
    ck_assert_msg(strstr(e.msg, "FIFO") != NULL, "%s", e.msg);
    unlink(fifo);
}
END_TEST

START_TEST(memory_budget)
{
    setenv("DTSIM_MAX_MEMORY", "16MiB", 1);
    ck_assert(dt_memory_limit() == 16.0 * 1024 * 1024);
    dt_error e;
    dt_error_clear(&e);
    ck_assert_int_eq(dt_check_memory(16.0 * 1024 * 1024, "x", "f.json", "p", &e), DT_OK);
    ck_assert_int_eq(dt_check_memory(17.0 * 1024 * 1024, "x", "f.json", "p", &e), DT_ENOMEM);
    ck_assert_str_eq(e.file, "f.json");
    ck_assert_str_eq(e.path, "p");
    ck_assert_msg(strstr(e.msg, "above the limit of 16 MiB") != NULL, "%s", e.msg);
    /* 300,000 numbers: about 24 MB as parsed nodes, over the 16 MiB budget: refused unparsed */
    size_t n = 300000;
    char *s = malloc(2 * n + 2);
    s[0] = '[';
    for (size_t i = 0; i < n; i++) {
        s[1 + 2 * i] = '1';
        s[2 + 2 * i] = i + 1 < n ? ',' : ']';
    }
    s[2 * n + 1] = '\0';
    cJSON *j = NULL;
    ck_assert_int_eq(parse(s, &j, &e), DT_ENOMEM);
    ck_assert_msg(strstr(e.msg, "parsing this JSON file would need about") != NULL, "%s", e.msg);
    setenv("DTSIM_MAX_MEMORY", "1GiB", 1);
    ck_assert_int_eq(parse(s, &j, &e), DT_OK);
    ck_assert_int_eq(cJSON_GetArraySize(j), 300000);
    cJSON_Delete(j);
    free(s);
    unsetenv("DTSIM_MAX_MEMORY");
    ck_assert(dt_memory_limit() > 0);
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
    tcase_add_test(tc, duplicates_in_large_objects);
    tcase_add_test(tc, nesting_limit);
    tcase_add_test(tc, non_regular_files);
    tcase_add_test(tc, memory_budget);
    suite_add_tcase(s, tc);
    return dt_run_suite(s);
}
