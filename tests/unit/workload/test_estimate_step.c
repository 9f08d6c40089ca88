/* test_estimate_step.c - "options.dp_algorithm": "estimate" and the default "auto" in a
 * training step (run.c, traffic.c's traffic_phases).
 * Pins down, on the decentralised lab's world-wide setting (8 regions x 8 V100, GPT3-XL pp 8 x
 * dp 8; examples/labs/decentralised/geo-estimate.json): the estimate, costing each candidate
 * with the 8 stages' replica groups on the wide-area links at once, runs direct, so the step,
 * its exposed DP time and the bytes the step sends equal those of "dp_algorithm": "direct" to
 * the last bit, in flow and in analytic mode (the same pick in both); and the step is the
 * lab's 11.45 s against the rule's 24.45 s. The default "auto", with no framework (every
 * candidate), is the same run to the last bit; with "framework": "megatron" (NCCL's ring and
 * tree) it is the ring's or the tree's run, never direct's, and the faster of the two; the
 * library follows the framework unless options.collective_library names one, a written trace
 * carries it, and a bad name is refused at its path. Leaves free: which algorithm wins
 * elsewhere (test_coll_estimate.c, test_coll_auto.c). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dtsim/run.h"
#include "dtsim/workload.h"
#include "testutil.h"

static run_result run_lab_fw(const char *algo, const char *network, const char *framework,
                             const char *write_trace)
{
    cJSON *j;
    dt_error e;
    dt_error_clear(&e);
    ck_assert_int_eq(js_parse_file(DTSIM_SOURCE_DIR "/examples/labs/decentralised/geo-estimate.json", &j, &e),
                     DT_OK);
    cJSON *o = cJSON_GetObjectItemCaseSensitive(j, "options");
    cJSON_ReplaceItemInObjectCaseSensitive(o, "dp_algorithm", cJSON_CreateString(algo));
    if (network) cJSON_AddStringToObject(o, "network", network);
    if (framework) cJSON_AddStringToObject(j, "framework", framework);
    run_options opt = {.write_trace = write_trace};
    run_result r;
    int rc = run_scenario(j, "geo.json", DTSIM_SOURCE_DIR "/examples/labs/decentralised", &opt, &r, &e);
    ck_assert_msg(rc == DT_OK, "%s: %s", e.path, e.msg);
    cJSON_Delete(j);
    return r;
}

static run_result run_lab(const char *algo, const char *network)
{
    return run_lab_fw(algo, network, NULL, NULL);
}

START_TEST(estimate_runs_direct_on_the_world_wide_step)
{
    static const char *nets[] = {"flow", "analytic"};
    for (int k = 0; k < 2; k++) {
        run_result est = run_lab("estimate", nets[k]), dir = run_lab("direct", nets[k]);
        ck_assert_double_eq(est.step_time_s, dir.step_time_s);
        ck_assert_double_eq(est.comm_exposed_by_kind_s[WL_COMM_DP], dir.comm_exposed_by_kind_s[WL_COMM_DP]);
        ck_assert_double_eq(est.bytes_sent_per_gpu[WL_COMM_DP], dir.bytes_sent_per_gpu[WL_COMM_DP]);
        ck_assert_double_eq_tol(est.step_time_s, 11.45, 0.005);
        run_result_free(&est);
        run_result_free(&dir);
    }
    run_result rule = run_lab("rule", NULL);
    ck_assert_double_eq_tol(rule.step_time_s, 24.45, 0.005);
    run_result_free(&rule);
}
END_TEST

START_TEST(auto_without_framework_is_estimate)
{
    static const char *nets[] = {"flow", "analytic"};
    for (int k = 0; k < 2; k++) {
        run_result au = run_lab("auto", nets[k]), est = run_lab("estimate", nets[k]);
        ck_assert_double_eq(au.step_time_s, est.step_time_s);
        ck_assert_double_eq(au.comm_exposed_by_kind_s[WL_COMM_DP], est.comm_exposed_by_kind_s[WL_COMM_DP]);
        ck_assert_double_eq(au.bytes_sent_per_gpu[WL_COMM_DP], est.bytes_sent_per_gpu[WL_COMM_DP]);
        ck_assert_double_eq_tol(au.step_time_s, 11.45, 0.005);
        run_result_free(&au);
        run_result_free(&est);
    }
}
END_TEST

START_TEST(auto_with_a_framework_stays_in_nccls_set)
{
    char path[] = "/tmp/dtsim_test_estimate_step_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    run_result au = run_lab_fw("auto", NULL, "megatron", path);
    run_result ring = run_lab_fw("ring", NULL, "megatron", NULL);
    run_result tree = run_lab_fw("tree", NULL, "megatron", NULL);
    run_result dir = run_lab_fw("direct", NULL, "megatron", NULL);
    ck_assert_msg(au.step_time_s == ring.step_time_s || au.step_time_s == tree.step_time_s,
                  "auto %g s, ring %g s, tree %g s", au.step_time_s, ring.step_time_s, tree.step_time_s);
    ck_assert_double_le(au.step_time_s, ring.step_time_s < tree.step_time_s ? ring.step_time_s : tree.step_time_s);
    ck_assert_double_gt(au.step_time_s, dir.step_time_s * 1.5); /* direct: 11.45 s, not NCCL's */
    /* the trace written by the run names the library */
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char buf[4096];
    size_t got = fread(buf, 1, sizeof buf - 1, f);
    buf[got] = 0;
    fclose(f);
    unlink(path);
    ck_assert_ptr_nonnull(strstr(buf, "\"collective_library\": \"nccl\""));
    run_result_free(&au);
    run_result_free(&ring);
    run_result_free(&tree);
    run_result_free(&dir);
}
END_TEST

static int parse(const char *text, wl_scenario *s, dt_error *e)
{
    cJSON *j;
    ck_assert_int_eq(js_parse_text(text, strlen(text), "s.json", &j, e), DT_OK);
    js_ctx c = {.file = "s.json", .err = e};
    memset(s, 0, sizeof *s);
    int rc = wl_scenario_parse(&c, j, s);
    cJSON_Delete(j);
    return rc;
}

#define SCEN(extra)                                                                                \
    "{\"topology\": {\"generator\": \"switch\", \"gpus\": 8}, \"model\": {\"kind\": "              \
    "\"synthetic\", \"layers\": 2, \"forward_time\": \"1 ms\", \"backward_time\": \"2 ms\", "   \
    "\"params\": 1e6}, \"parallel\": {\"dp\": 8}" extra "}"

START_TEST(library_follows_the_framework)
{
    wl_scenario s;
    dt_error e;
    dt_error_clear(&e);
    ck_assert_int_eq(parse(SCEN(""), &s, &e), DT_OK);
    ck_assert_int_eq(s.env.coll_library, COLL_LIB_ANY);
    wl_scenario_free(&s);
    ck_assert_int_eq(parse(SCEN(", \"framework\": \"megatron\""), &s, &e), DT_OK);
    ck_assert_int_eq(s.env.coll_library, COLL_LIB_NCCL);
    wl_scenario_free(&s);
    ck_assert_int_eq(parse(SCEN(", \"framework\": \"fsdp\""), &s, &e), DT_OK);
    ck_assert_int_eq(s.env.coll_library, COLL_LIB_NCCL);
    wl_scenario_free(&s);
    ck_assert_int_eq(parse(SCEN(", \"framework\": \"generic\""), &s, &e), DT_OK);
    ck_assert_int_eq(s.env.coll_library, COLL_LIB_ANY);
    wl_scenario_free(&s);
    ck_assert_int_eq(parse(SCEN(", \"framework\": \"megatron\", \"options\": {\"collective_library\": \"any\"}"),
                           &s, &e), DT_OK);
    ck_assert_int_eq(s.env.coll_library, COLL_LIB_ANY);
    wl_scenario_free(&s);
    ck_assert_int_eq(parse(SCEN(", \"options\": {\"collective_library\": \"nccl\", \"dp_algorithm\": \"rule\"}"),
                           &s, &e), DT_OK);
    ck_assert_int_eq(s.env.coll_library, COLL_LIB_NCCL);
    ck_assert_int_eq(s.env.dp_algorithm, COLL_RULE);
    wl_scenario_free(&s);
    dt_error_clear(&e);
    ck_assert_int_eq(parse(SCEN(", \"options\": {\"collective_library\": \"gloo\"}"), &s, &e), DT_EINPUT);
    ck_assert_str_eq(e.path, "options.collective_library");
    ck_assert_ptr_nonnull(strstr(e.msg, "expected nccl or any, found \"gloo\""));
    wl_scenario_free(&s);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("estimate_step");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, estimate_runs_direct_on_the_world_wide_step);
    tcase_add_test(tc, auto_without_framework_is_estimate);
    tcase_add_test(tc, auto_with_a_framework_stays_in_nccls_set);
    tcase_add_test(tc, library_follows_the_framework);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return dt_run_suite(suite()); }
