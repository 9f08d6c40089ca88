/* test_ps_servers.c - options.ps_servers: the parameter-server count of a training step's
 * data-parallel all-reduce.
 * Pins down: on a star (generator switch, n = 8 GPUs, links B = 50 GB/s, latency 500 ns,
 * switch 200 ns) a step's exposed DP all-reduce of G bytes (synthetic 1e8 parameters, bf16
 * gradients: G = 2e8 B, one bucket, no overlap) with S servers takes the PS formula
 *   2 a + 2 (n-1) (G/S) / B + (n-1) (G/S) / R,   a = 2 x 500 ns + 200 ns,  R = HBM/3,
 * (each server's downlink carries the n-1 pushes of its shard, then its uplink the n-1 pulls;
 * it reduces n-1 shards at the GPU's reduce rate) for S = 1, 2, 4, 8; the bytes each GPU sends
 * do not depend on S; the count survives a trace round trip; bad counts get located errors.
 * Leaves free: hosts (default S = one per host; the switch has none, so 1). */
#include <stdio.h>
#include <string.h>

#include "dtsim/run.h"
#include "testutil.h"

static int run_text(const char *text, run_result *r, dt_error *e)
{
    cJSON *j;
    dt_error_clear(e);
    ck_assert_int_eq(js_parse_text(text, strlen(text), "s.json", &j, e), DT_OK);
    run_options opt = {0};
    int rc = run_scenario(j, "s.json", ".", &opt, r, e);
    cJSON_Delete(j);
    return rc;
}

#define STAR(options)                                                                            \
    "{\"topology\": {\"generator\": \"switch\", \"gpus\": 8}, \"model\": {\"kind\": \"synthetic\"," \
    " \"layers\": 2, \"forward_time\": \"1 ms\", \"backward_time\": \"2 ms\", \"params\": 1e8},"   \
    " \"parallel\": {\"bucket_size\": \"10 GB\", \"overlap_dp\": false}, \"options\": {" options "}}"

START_TEST(star_against_ps_formula)
{
    const double n = 8, G = 2e8, B = 50e9, a = 2 * 500e-9 + 200e-9, R = 3.35e12 / 3;
    static const int servers[] = {1, 2, 4, 8};
    double sent1 = 0;
    for (int i = 0; i < 4; i++) {
        int S = servers[i];
        char buf[1024];
        snprintf(buf, sizeof buf, STAR("\"dp_algorithm\": \"ps\", \"ps_servers\": %d"), S);
        run_result r;
        dt_error e;
        ck_assert_msg(run_text(buf, &r, &e) == DT_OK, "%s: %s", e.path, e.msg);
        double want = 2 * a + 2 * (n - 1) * (G / S) / B + (n - 1) * (G / S) / R;
        ck_assert_rel(r.comm_exposed_by_kind_s[WL_COMM_DP], want, 1e-6);
        if (i == 0) sent1 = r.bytes_sent_per_gpu_total;
        /* n-1 shards pushed and n-1 pulled per shard: 2 (n-1) G / n per GPU on average */
        ck_assert_rel(r.bytes_sent_per_gpu_total, 2 * (n - 1) * G / n, 1e-12);
        ck_assert_rel(r.bytes_sent_per_gpu_total, sent1, 1e-12);
        run_result_free(&r);
    }
    /* no count: one server per host spanned, and the switch has no hosts: S = 1 */
    run_result r;
    dt_error e;
    ck_assert_int_eq(run_text(STAR("\"dp_algorithm\": \"ps\""), &r, &e), DT_OK);
    ck_assert_rel(r.comm_exposed_by_kind_s[WL_COMM_DP], 2 * a + 2 * 7 * G / B + 7 * G / R, 1e-6);
    run_result_free(&r);
}
END_TEST

static void bad(const char *text, const char *path, const char *needle)
{
    run_result r;
    dt_error e;
    ck_assert_int_eq(run_text(text, &r, &e), DT_EINPUT);
    ck_assert_str_eq(e.path, path);
    ck_assert_msg(strstr(e.msg, needle), "%s", e.msg);
}

START_TEST(bad_counts)
{
    bad(STAR("\"dp_algorithm\": \"ps\", \"ps_servers\": 9"), "options.ps_servers", "at most dp = 8");
    bad(STAR("\"dp_algorithm\": \"ps\", \"ps_servers\": 0"), "options.ps_servers", "0");
    bad(STAR("\"ps_servers\": 2"), "options.ps_servers", "\"ps\" only");
    bad(STAR("\"dp_algorithm\": \"ring\", \"ps_servers\": 2"), "options.ps_servers", "ring");
    /* estimate never runs a parameter server */
    bad(STAR("\"dp_algorithm\": \"estimate\", \"ps_servers\": 2"), "options.ps_servers", "estimate");
}
END_TEST

Suite *suite(void)
{
    Suite *s = suite_create("ps_servers");
    TCase *t = tcase_create("core");
    tcase_add_test(t, star_against_ps_formula);
    tcase_add_test(t, bad_counts);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return dt_run_suite(suite()); }
