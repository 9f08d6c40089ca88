/* test_sweep.c - sweep axes, point scenarios, records and the resumable runner.
 * Pins down: crossed axes are row-major (last axis fastest), ranges include their end (additive
 * and multiplicative steps), zipped groups walk in lock step and must agree in length; setting a
 * field by path creates missing objects and refuses missing array elements; a point's scenario
 * has no "sweep"; results.csv has one row per point in point order with the documented columns,
 * identical bytes for 1 and 4 threads and after a resume; a record directory of another scenario
 * is refused; a failing point is recorded with its error, not fatal; a directory locked by
 * another sweep is refused; temporaries a killed run left are cleaned up; editing (or removing) a
 * topology or calibration file the scenario or an axis names, resolved against the scenario's
 * directory, makes a resume refuse like editing the scenario does.
 * Leaves free: the simulation itself (an injected evaluator computes closed-form numbers). */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dtsim/json.h"
#include "dtsim/sweep.h"
#include "testutil.h"

static cJSON *parse(const char *text)
{
    dt_error e = {0};
    cJSON *j = NULL;
    ck_assert_msg(js_parse_text(text, strlen(text), "s.json", &j, &e) == DT_OK, "%s", e.msg);
    return j;
}

static sweep_spec *spec_of(const char *text, int expect_rc, dt_error *e)
{
    cJSON *j = parse(text);
    sweep_spec *s = NULL;
    dt_error_clear(e);
    ck_assert_int_eq(sweep_spec_parse(j, "s.json", &s, e), expect_rc);
    cJSON_Delete(j);
    return s;
}

static double num(const cJSON *v)
{
    ck_assert(cJSON_IsNumber(v));
    return v->valuedouble;
}

START_TEST(cross_and_ranges)
{
    dt_error e;
    sweep_spec *s = spec_of("{\"sweep\": {\"axes\": ["
                            "{\"path\": \"parallel.dp\", \"values\": [1, 2, 4]},"
                            "{\"path\": \"cluster.gpus\", \"range\": [8, 128], \"step\": \"x2\"}]}}",
                            DT_OK, &e);
    ck_assert_uint_eq(sweep_n_points(s), 3 * 5); /* 8 16 32 64 128 */
    ck_assert_uint_eq(sweep_n_columns(s), 2);
    ck_assert_str_eq(sweep_column_name(s, 1), "cluster.gpus");
    /* Point 7 = dp index 1, gpus index 2. */
    ck_assert_int_eq((int)num(sweep_point_value(s, 7, 0)), 2);
    ck_assert_int_eq((int)num(sweep_point_value(s, 7, 1)), 32);
    ck_assert_int_eq((int)num(sweep_point_value(s, 14, 1)), 128);
    sweep_spec_destroy(s);

    s = spec_of("{\"sweep\": {\"axes\": [{\"path\": \"a\", \"range\": [0, 1], \"step\": 0.1}]}}",
                DT_OK, &e);
    ck_assert_uint_eq(sweep_n_points(s), 11);
    ck_assert_double_eq(num(sweep_point_value(s, 10, 0)), 1.0);
    ck_assert_rel(num(sweep_point_value(s, 3, 0)), 0.3, 1e-12);
    sweep_spec_destroy(s);

    s = spec_of("{\"sweep\": {\"axes\": [{\"path\": \"a\", \"range\": [8, 30], \"step\": \"+8\"}]}}",
                DT_OK, &e);
    ck_assert_uint_eq(sweep_n_points(s), 3); /* 8 16 24: 32 is past the end */
    sweep_spec_destroy(s);
}
END_TEST

START_TEST(zip)
{
    dt_error e;
    sweep_spec *s = spec_of("{\"sweep\": {\"axes\": ["
                            "{\"zip\": [{\"path\": \"parallel.tp\", \"values\": [1, 2, 4]},"
                            "           {\"path\": \"parallel.dp\", \"values\": [8, 4, 2]}]},"
                            "{\"path\": \"gpu\", \"values\": [\"A100-SXM\", \"H100-SXM\"]}]}}",
                            DT_OK, &e);
    ck_assert_uint_eq(sweep_n_points(s), 6);
    ck_assert_int_eq((int)num(sweep_point_value(s, 4, 0)), 4);
    ck_assert_int_eq((int)num(sweep_point_value(s, 4, 1)), 2);
    ck_assert_str_eq(sweep_point_value(s, 4, 2)->valuestring, "A100-SXM");
    sweep_spec_destroy(s);

    s = spec_of("{\"sweep\": {\"mode\": \"zip\", \"axes\": ["
                "{\"path\": \"a\", \"values\": [1, 2, 3]}, {\"path\": \"b\", \"range\": [1, 3]}]}}",
                DT_OK, &e);
    ck_assert_uint_eq(sweep_n_points(s), 3);
    sweep_spec_destroy(s);

    spec_of("{\"sweep\": {\"mode\": \"zip\", \"axes\": ["
            "{\"path\": \"a\", \"values\": [1, 2, 3]}, {\"path\": \"b\", \"values\": [1]}]}}",
            DT_EINPUT, &e);
    ck_assert_msg(strstr(e.msg, "\"a\" has 3, \"b\" has 1") != NULL, "%s", e.msg);
}
END_TEST

START_TEST(bad_axes)
{
    dt_error e;
    spec_of("{\"sweep\": {\"axes\": [{\"path\": \"a\", \"valeus\": [1]}]}}", DT_EINPUT, &e);
    ck_assert_str_eq(e.path, "sweep.axes[0].valeus");
    ck_assert_msg(strstr(e.msg, "did you mean \"values\"") != NULL, "%s", e.msg);
    spec_of("{\"sweep\": {\"axes\": [{\"path\": \"a\", \"values\": [1], \"range\": [1, 2]}]}}",
            DT_EINPUT, &e);
    ck_assert_str_eq(e.path, "sweep.axes[0]");
    spec_of("{\"sweep\": {\"axes\": [{\"path\": \"a\", \"range\": [4, 1]}]}}", DT_EINPUT, &e);
    ck_assert_str_eq(e.path, "sweep.axes[0].range");
    spec_of("{\"sweep\": {\"axes\": [{\"path\": \"a\", \"range\": [1, 4], \"step\": \"x1\"}]}}",
            DT_EINPUT, &e);
    ck_assert_str_eq(e.path, "sweep.axes[0].step");
    spec_of("{\"sweep\": {\"axes\": [{\"path\": \"a\", \"values\": [1]},"
            "{\"path\": \"a\", \"values\": [2]}]}}", DT_EINPUT, &e);
    ck_assert_msg(strstr(e.msg, "swept twice") != NULL, "%s", e.msg);
    spec_of("{\"model\": {}}", DT_EINPUT, &e);
    ck_assert_str_eq(e.path, "sweep");
}
END_TEST

START_TEST(set_by_path)
{
    dt_error e = {0};
    cJSON *j = parse("{\"parallel\": {\"dp\": 1}, \"links\": [{\"bw\": 1}, {\"bw\": 2}]}");
    cJSON *v = cJSON_CreateNumber(8);
    ck_assert_int_eq(sweep_json_set(j, "parallel.dp", v, "s.json", &e), DT_OK);
    ck_assert_int_eq(sweep_json_set(j, "faults.straggler.level", v, "s.json", &e), DT_OK);
    ck_assert_int_eq(sweep_json_set(j, "links[1].bw", v, "s.json", &e), DT_OK);
    char *t = cJSON_PrintUnformatted(j);
    ck_assert_str_eq(t, "{\"parallel\":{\"dp\":8},\"links\":[{\"bw\":1},{\"bw\":8}],"
                        "\"faults\":{\"straggler\":{\"level\":8}}}");
    free(t);
    ck_assert_int_eq(sweep_json_set(j, "links[5].bw", v, "s.json", &e), DT_EINPUT);
    ck_assert_str_eq(e.path, "links");
    ck_assert_int_eq(sweep_json_set(j, "parallel.dp.x", v, "s.json", &e), DT_EINPUT);
    ck_assert_int_eq(sweep_json_set(j, "a..b", v, "s.json", &e), DT_EINPUT);
    cJSON_Delete(v);
    cJSON_Delete(j);
}
END_TEST

static const char *scenario_text =
    "{\"parallel\": {\"dp\": 1, \"tp\": 1}, \"cluster\": {\"gpus\": 8},"
    " \"sweep\": {\"axes\": [{\"path\": \"parallel.tp\", \"values\": [1, 2, 3]},"
    "                       {\"path\": \"cluster.gpus\", \"range\": [8, 64], \"step\": \"x2\"}]}}";

START_TEST(point_scenario_and_hash)
{
    dt_error e;
    cJSON *j = parse(scenario_text);
    sweep_spec *s = NULL;
    ck_assert_int_eq(sweep_spec_parse(j, "s.json", &s, &e), DT_OK);
    cJSON *p = sweep_point_scenario(s, j, 5, "s.json", &e);
    char *t = cJSON_PrintUnformatted(p);
    ck_assert_str_eq(t, "{\"parallel\":{\"dp\":1,\"tp\":2},\"cluster\":{\"gpus\":16}}");
    free(t);
    uint64_t h = sweep_hash(j);
    ck_assert(h == sweep_hash(j));
    ck_assert(h != sweep_hash(p));
    cJSON_Delete(p);
    sweep_spec_destroy(s);
    cJSON_Delete(j);
}
END_TEST

/* Closed-form stand-in for run_scenario: step = gpus / tp ms; tp 3 is "indivisible". */
static int fake_eval(void *ctx, const cJSON *sc, const char *file, const char *base_dir,
                     run_result *out, dt_error *err)
{
    int *calls = ctx;
    if (calls) __atomic_fetch_add(calls, 1, __ATOMIC_RELAXED);
    double tp = cJSON_GetObjectItem(cJSON_GetObjectItem(sc, "parallel"), "tp")->valuedouble;
    double g = cJSON_GetObjectItem(cJSON_GetObjectItem(sc, "cluster"), "gpus")->valuedouble;
    if (tp == 3)
        return dt_error_set(err, DT_EINPUT, file, "parallel.tp", "heads 32 not divisible by tp 3");
    memset(out, 0, sizeof *out);
    out->step_time_s = g / tp * 1e-3;
    out->breakdown_s.compute = out->step_time_s * 0.75;
    out->throughput.tokens_per_s = 1e6 * tp;
    out->n_gpus = (int)g;
    out->fits = true;
    out->cost_per_step_usd = out->step_time_s * g * 2.0 / 3600;
    return DT_OK;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    ck_assert_int_eq((long)fread(buf, 1, (size_t)n, f), n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

static void run_into(const cJSON *sc, const char *dir, int jobs, bool fresh, int *calls,
                     int expect_rc, sweep_summary *sum)
{
    dt_error e = {0};
    sweep_config cfg = {.scenario = sc, .file = "s.json", .base_dir = ".", .out_dir = dir,
                        .jobs = jobs, .fresh = fresh, .eval = fake_eval, .eval_ctx = calls,
                        .mpi_size = 1};
    ck_assert_msg(sweep_run(&cfg, sum, &e) == expect_rc, "%s", e.msg);
}

START_TEST(run_resume_and_determinism)
{
    char tmpl[] = "/tmp/dtsim_sweep_XXXXXX";
    ck_assert(mkdtemp(tmpl) != NULL);
    char d1[600], d4[600], f[700];
    snprintf(d1, sizeof d1, "%s/j1", tmpl);
    snprintf(d4, sizeof d4, "%s/j4", tmpl);
    cJSON *sc = parse(scenario_text);
    sweep_summary sum;
    int calls = 0;
    run_into(sc, d1, 1, false, &calls, DT_OK, &sum);
    ck_assert_uint_eq(sum.total, 12);
    ck_assert_uint_eq(sum.ran, 12);
    ck_assert_uint_eq(sum.failed, 4); /* tp = 3 at 4 GPU counts */
    ck_assert_int_eq(sum.first_failed, 8);
    ck_assert_msg(strstr(sum.first_error, "heads 32 not divisible by tp 3"), "%s", sum.first_error);
    ck_assert_int_eq(calls, 12);
    run_into(sc, d4, 4, false, NULL, DT_OK, &sum);

    snprintf(f, sizeof f, "%s/results.csv", d1);
    char *csv1 = slurp(f);
    snprintf(f, sizeof f, "%s/results.csv", d4);
    char *csv4 = slurp(f);
    ck_assert_str_eq(csv1, csv4);
    ck_assert_int_eq(count_lines(csv1), 13);
    ck_assert_msg(!strncmp(csv1, "point,parallel.tp,cluster.gpus,status,step_time_s,compute_s,", 60),
                  "%.80s", csv1);
    /* Point 5: tp 2, 16 GPUs -> 8 ms. */
    ck_assert_msg(strstr(csv1, "\n5,2,16,ok,0.008,0.006,") != NULL, "%s", csv1);
    ck_assert_msg(strstr(csv1, "\n8,3,8,error,") != NULL, "%s", csv1);
    ck_assert_msg(strstr(csv1, "heads 32 not divisible by tp 3") != NULL, "%s", csv1);

    /* results.json parses and lists the points in order. */
    snprintf(f, sizeof f, "%s/results.json", d1);
    char *js = slurp(f);
    cJSON *r = parse(js);
    cJSON *pts = cJSON_GetObjectItem(r, "points");
    ck_assert_int_eq(cJSON_GetArraySize(pts), 12);
    ck_assert_int_eq((int)num(cJSON_GetObjectItem(cJSON_GetArrayItem(pts, 11), "point")), 11);
    cJSON_Delete(r);
    free(js);

    /* Resume: lose three records, re-run: only those run, the CSV is the same bytes. */
    for (int p = 2; p <= 10; p += 4) {
        snprintf(f, sizeof f, "%s/points/%08d.json", d1, p);
        ck_assert_int_eq(unlink(f), 0);
    }
    calls = 0;
    run_into(sc, d1, 2, false, &calls, DT_OK, &sum);
    ck_assert_int_eq(calls, 3);
    ck_assert_uint_eq(sum.resumed, 9);
    snprintf(f, sizeof f, "%s/results.csv", d1);
    char *again = slurp(f);
    ck_assert_str_eq(again, csv4);
    free(again);

    /* Another scenario into the same directory is refused; --fresh starts over. */
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(sc, "parallel"), "dp", cJSON_CreateNumber(2));
    run_into(sc, d1, 1, false, NULL, DT_EINPUT, &sum);
    calls = 0;
    run_into(sc, d1, 1, true, &calls, DT_OK, &sum);
    ck_assert_int_eq(calls, 12);

    free(csv1);
    free(csv4);
    cJSON_Delete(sc);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpl);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

static void write_file(const char *dir, const char *name, const char *text)
{
    char f[700];
    snprintf(f, sizeof f, "%s/%s", dir, name);
    FILE *fp = fopen(f, "w");
    ck_assert_msg(fp != NULL, "cannot write %s", f);
    fputs(text, fp);
    fclose(fp);
}

/* Runs the sweep with base_dir = dir (the scenario's directory), from another working
 * directory, and returns the status; the error message goes to msg. */
static int run_in(const cJSON *sc, const char *dir, const char *out, bool fresh, int *calls,
                  char *msg, size_t msg_size)
{
    dt_error e = {0};
    sweep_summary sum;
    sweep_config cfg = {.scenario = sc, .file = "s.json", .base_dir = dir, .out_dir = out,
                        .jobs = 1, .fresh = fresh, .eval = fake_eval, .eval_ctx = calls,
                        .mpi_size = 1};
    int rc = sweep_run(&cfg, &sum, &e);
    snprintf(msg, msg_size, "%s", e.msg);
    return rc;
}

/* Editing a file the scenario names by path (topology, calibration, a topology an axis sweeps)
 * makes a resume refuse, exactly as editing the scenario text does. */
START_TEST(resume_sees_referenced_files)
{
    char tmpl[] = "/tmp/dtsim_sweep_XXXXXX";
    ck_assert(mkdtemp(tmpl) != NULL);
    char d[700], out[700], msg[DT_ERR_MSG_MAX];
    snprintf(d, sizeof d, "%s/cal", tmpl);
    ck_assert_int_eq(mkdir(d, 0777), 0);
    snprintf(d, sizeof d, "%s/sub", tmpl);
    ck_assert_int_eq(mkdir(d, 0777), 0);
    snprintf(out, sizeof out, "%s/out", tmpl);
    write_file(tmpl, "topo.json", "{\"v\": 1}");
    write_file(tmpl, "sub/other.json", "{\"v\": 2}");
    write_file(tmpl, "cal/fit.json", "{\"v\": 3}");
    cJSON *sc = parse(
        "{\"parallel\": {\"dp\": 1, \"tp\": 1}, \"cluster\": {\"gpus\": 8},"
        " \"topology\": \"topo.json\", \"options\": {\"calibration\": \"cal/fit.json\"},"
        " \"sweep\": {\"axes\": [{\"zip\": [{\"path\": \"parallel.tp\", \"values\": [1, 2]},"
        "   {\"path\": \"topology\", \"values\": [\"topo.json\", \"sub/other.json\"]}]}]}}");
    int calls = 0;
    ck_assert_int_eq(run_in(sc, tmpl, out, false, &calls, msg, sizeof msg), DT_OK);
    ck_assert_int_eq(calls, 2);
    calls = 0;
    ck_assert_int_eq(run_in(sc, tmpl, out, false, &calls, msg, sizeof msg), DT_OK);
    ck_assert_int_eq(calls, 0); /* nothing changed: everything resumed */

    static const char *const edited[] = {"topo.json", "cal/fit.json", "sub/other.json"};
    for (int i = 0; i < 3; i++) {
        write_file(tmpl, edited[i], "{\"v\": 9}");
        calls = 0;
        ck_assert_int_eq(run_in(sc, tmpl, out, false, &calls, msg, sizeof msg), DT_EINPUT);
        ck_assert_int_eq(calls, 0);
        ck_assert_msg(strstr(msg, "holds results of another scenario, or of other contents of "
                                  "the topology or calibration files it names") &&
                          strstr(msg, "--fresh to start over"),
                      "%s: %s", edited[i], msg);
        ck_assert_int_eq(run_in(sc, tmpl, out, true, &calls, msg, sizeof msg), DT_OK);
        ck_assert_int_eq(calls, 2);
    }
    /* A named file that disappears is a change too. */
    snprintf(d, sizeof d, "%s/cal/fit.json", tmpl);
    ck_assert_int_eq(unlink(d), 0);
    ck_assert_int_eq(run_in(sc, tmpl, out, false, &calls, msg, sizeof msg), DT_EINPUT);

    cJSON_Delete(sc);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpl);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(lock_and_strays)
{
    char tmpl[] = "/tmp/dtsim_sweep_XXXXXX";
    ck_assert(mkdtemp(tmpl) != NULL);
    char f[700];
    cJSON *sc = parse(scenario_text);
    sweep_summary sum;
    /* A directory another sweep holds is refused, whatever the scenario. */
    snprintf(f, sizeof f, "%s/.lock", tmpl);
    int fd = open(f, O_RDWR | O_CREAT, 0666);
    ck_assert(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0);
    dt_error e = {0};
    sweep_config cfg = {.scenario = sc, .file = "s.json", .base_dir = ".", .out_dir = tmpl,
                        .jobs = 1, .eval = fake_eval, .mpi_size = 1};
    ck_assert_int_eq(sweep_run(&cfg, &sum, &e), DT_EIO);
    ck_assert_msg(strstr(e.msg, "another dtsim sweep"), "%s", e.msg);
    close(fd);
    /* A temporary left by a killed run is removed; the sweep then runs whole. */
    snprintf(f, sizeof f, "%s/points/00000001.json.tmp.99999", tmpl);
    FILE *t = fopen(f, "w");
    ck_assert(t != NULL);
    fputs("{\"scenario_hash\": \"trunc", t);
    fclose(t);
    run_into(sc, tmpl, 2, false, NULL, DT_OK, &sum);
    ck_assert_uint_eq(sum.ran, 12);
    ck_assert_int_eq(access(f, F_OK), -1);
    cJSON_Delete(sc);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpl);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("sweep");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, cross_and_ranges);
    tcase_add_test(tc, zip);
    tcase_add_test(tc, bad_axes);
    tcase_add_test(tc, set_by_path);
    tcase_add_test(tc, point_scenario_and_hash);
    tcase_add_test(tc, run_resume_and_determinism);
    tcase_add_test(tc, resume_sees_referenced_files);
    tcase_add_test(tc, lock_and_strays);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return dt_run_suite(suite()); }
