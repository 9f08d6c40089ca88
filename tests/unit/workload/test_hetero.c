/* test_hetero.c - mixed clusters: price, peak and MFU per GPU, and the scenario "gpu" override.
 * Pins down: a 2 x H100 + 2 x A100 data-parallel step costs T x (2 x 2.50 + 2 x 1.80) / 3600
 * USD and its MFU is the model FLOP rate over 2 x 989.5 + 2 x 312 TFLOP/s, whatever order the
 * topology lists the GPUs in (three orders, identical bytes of result); the per-type table
 * counts each type; a dgx generator with the scenario's "gpu": "B200" steps exactly like the
 * generator built with B200 (NVLink 900 GB/s, not the H100's 450), and a generator's explicit
 * "nvlink" is kept; a topology file with NVLink written for another GPU is refused at "gpu",
 * one without an intra-host fabric accepts the override. Leaves free: the step time of the mixed
 * cluster itself (the replay's business, tested there). */
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
    int rc = run_scenario(j, "s.json", DTSIM_SOURCE_DIR, &opt, r, e);
    cJSON_Delete(j);
    return rc;
}

static run_result must_run(const char *text)
{
    run_result r;
    dt_error e;
    int rc = run_text(text, &r, &e);
    ck_assert_msg(rc == DT_OK, "%s: %s", e.path, e.msg);
    return r;
}

/* four GPUs on one switch, in the order given; a small GPT, dp 4 */
static void mixed(char *buf, size_t size, const char *g0, const char *g1, const char *g2,
                  const char *g3)
{
    const char *g[4] = {g0, g1, g2, g3};
    int n = snprintf(buf, size, "{\"topology\": {\"format\": \"dtsim-topology\", \"version\": 1,"
                                " \"name\": \"mix\", \"nodes\": [{\"name\": \"sw\", \"kind\": \"switch\"}");
    for (int i = 0; i < 4; i++)
        n += snprintf(buf + n, size - (size_t)n,
                      ", {\"name\": \"g%d\", \"kind\": \"gpu\", \"gpu\": \"%s\"}", i, g[i]);
    n += snprintf(buf + n, size - (size_t)n, "], \"links\": [");
    for (int i = 0; i < 4; i++)
        n += snprintf(buf + n, size - (size_t)n,
                      "%s{\"src\": \"g%d\", \"dst\": \"sw\", \"bandwidth\": \"100 Gb/s\", "
                      "\"latency\": \"1 us\"}", i ? ", " : "", i);
    snprintf(buf + n, size - (size_t)n,
             "]}, \"model\": {\"kind\": \"transformer\", \"layers\": 4, \"hidden\": 1024,"
             " \"heads\": 16, \"seq_len\": 1024, \"vocab\": 50257}, \"parallel\": {\"dp\": 4,"
             " \"micro_batch_size\": 4}, \"global_batch\": 16, \"precision\": \"bf16\"}");
}

START_TEST(cost_independent_of_order)
{
    char buf[4096];
    static const char *const orders[3][4] = {{"H100-SXM", "H100-SXM", "A100-SXM", "A100-SXM"},
                                             {"A100-SXM", "A100-SXM", "H100-SXM", "H100-SXM"},
                                             {"A100-SXM", "H100-SXM", "A100-SXM", "H100-SXM"}};
    run_result r[3];
    for (int k = 0; k < 3; k++) {
        mixed(buf, sizeof buf, orders[k][0], orders[k][1], orders[k][2], orders[k][3]);
        r[k] = must_run(buf);
    }
    for (int k = 0; k < 3; k++) {
        double T = r[k].step_time_s;
        ck_assert_double_gt(T, 0);
        /* the true price: each GPU its own (2.50 and 1.80 USD/h, gpu.c's presets) */
        ck_assert_rel(r[k].cost_per_step_usd, T * (2 * 2.50 + 2 * 1.80) / 3600, 1e-12);
        ck_assert_rel(r[k].cost_per_hour_total, 8.60, 1e-12);
        ck_assert_rel(r[k].peak_flops_total, 2 * 989.5e12 + 2 * 312e12, 1e-12);
        /* MFU = model FLOP/s over the summed peaks; tflops_per_gpu x 4 is the model FLOP/s */
        ck_assert_rel(r[k].throughput.mfu, r[k].throughput.tflops_per_gpu * 4e12 / 2603e12, 1e-12);
        ck_assert_int_eq(r[k].n_gpu_types, 2);
        ck_assert_int_eq(r[k].gpu_types[0].count, 2);
        ck_assert_int_eq(r[k].gpu_types[1].count, 2);
        /* nothing depends on the order: the same figures to the last bit */
        ck_assert(r[k].step_time_s == r[0].step_time_s);
        ck_assert(r[k].cost_per_step_usd == r[0].cost_per_step_usd);
        ck_assert(r[k].throughput.mfu == r[0].throughput.mfu);
    }
    ck_assert_str_eq(r[0].gpu_types[0].name, "H100-SXM");
    ck_assert_str_eq(r[1].gpu_types[0].name, "A100-SXM");
    for (int k = 0; k < 3; k++) run_result_free(&r[k]);
}
END_TEST

#define TP8(topology, gpu)                                                                       \
    "{\"topology\": " topology ", " gpu "\"model\": {\"kind\": \"transformer\", \"layers\": 4,"  \
    " \"hidden\": 4096, \"heads\": 32, \"seq_len\": 2048, \"vocab\": 32000}, \"parallel\": {\"tp\":" \
    " 8, \"micro_batch_size\": 1}, \"global_batch\": 4, \"precision\": \"bf16\"}"

START_TEST(gpu_override_regenerates)
{
    run_result over = must_run(TP8("{\"generator\": \"dgx\", \"nodes\": 2, \"gpus_per_node\": 8}",
                                   "\"gpu\": \"B200\", "));
    run_result built = must_run(TP8("{\"generator\": \"dgx\", \"nodes\": 2, \"gpus_per_node\": 8,"
                                    " \"gpu\": \"B200\"}", ""));
    /* the generator's own H100 with a B200 spec on top: the old behaviour, NVLink 450 GB/s */
    run_result kept = must_run(TP8("{\"generator\": \"dgx\", \"nodes\": 2, \"gpus_per_node\": 8,"
                                   " \"nvlink\": \"450 GB/s\"}", "\"gpu\": \"B200\", "));
    ck_assert(over.step_time_s == built.step_time_s);
    ck_assert_str_eq(over.gpu_types[0].name, "B200");
    ck_assert_int_eq(over.gpu_types[0].count, 16);
    /* tp 8 all-reduces on NVLink: at half the bandwidth the step is longer */
    ck_assert_double_gt(kept.step_time_s, 1.05 * over.step_time_s);
    run_result_free(&over);
    run_result_free(&built);
    run_result_free(&kept);
}
END_TEST

START_TEST(gpu_override_file)
{
    run_result r;
    dt_error e;
    /* dgx-4x8.json: H100 boxes with NVSwitch links written at 450 GB/s */
    int rc = run_text(TP8("\"topologies/dgx-4x8.json\"", "\"gpu\": \"B200\", "), &r, &e);
    ck_assert_int_eq(rc, DT_EINPUT);
    ck_assert_str_eq(e.path, "gpu");
    ck_assert_msg(strstr(e.msg, "topologies/dgx-4x8.json") && strstr(e.msg, "900 GB/s"), "%s", e.msg);
    /* the same NVLink figure (H200 has the H100's): accepted, the specs replaced */
    r = must_run(TP8("\"topologies/dgx-4x8.json\"", "\"gpu\": \"H200-SXM\", "));
    ck_assert_str_eq(r.gpu_types[0].name, "H200-SXM");
    ck_assert_int_eq(r.gpu_types[0].count, 32);
    run_result_free(&r);
    /* a switch topology has no intra-host fabric to be wrong about */
    r = must_run("{\"topology\": \"topologies/switch-16.json\", \"gpu\": \"B200\", \"model\":"
                 " {\"kind\": \"synthetic\", \"layers\": 2, \"forward_time\": \"1 ms\","
                 " \"backward_time\": \"2 ms\", \"params\": 1e6}}");
    ck_assert_str_eq(r.gpu_types[0].name, "B200");
    run_result_free(&r);
}
END_TEST

Suite *suite(void)
{
    Suite *s = suite_create("hetero");
    TCase *t = tcase_create("core");
    tcase_add_test(t, cost_independent_of_order);
    tcase_add_test(t, gpu_override_regenerates);
    tcase_add_test(t, gpu_override_file);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return dt_run_suite(suite()); }
