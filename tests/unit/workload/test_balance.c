/* test_balance.c - "parallel.balance": "speed" (uneven work on mixed clusters).
 * Pins down, against hand-computed steps (synthetic layers of 1 ms forward and 2 ms backward,
 * free communication, the second GPU twice or three times slower):
 * - a two-speed GPipe pipeline of 6 layers and 4 microbatches is split 4 + 2 and steps in
 *   (m + p - 1) x (4 x 3 ms) = 60 ms, where the even 3 + 3 split takes 81 ms (trace below);
 * - two data-parallel replicas, the second 3x slower, share 8 microbatches 6 + 2 and step in
 *   max(6 x 3, 2 x 9) = 18 ms instead of 4 x 9 = 36 ms;
 * - equal GPUs keep the even split and equal microbatches; interleaved replicas get multiples
 *   of pp; the min-max split is optimal (no single move of a layer lowers the slowest stage) on
 *   an H100 + A100 transformer pipeline, and the balanced step beats the even one there;
 * - bad combinations are located errors.
 * Leaves free: the H100 + A100 step time itself (the replay's business). */
#include <string.h>

#include "dtsim/replay.h"
#include "dtsim/run.h"
#include "dtsim/workload.h"
#include "wl_testutil.h"

/* Balance over n H100s with these slowdowns, then replay with free communication. */
static sim_time_t balance_and_step(int n, const double *slow)
{
    gpu_spec gpus[8];
    dt_error e;
    for (int i = 0; i < n; i++) ck_assert_int_eq(gpu_preset("H100-SXM", &gpus[i], &e), DT_OK);
    js_ctx c = {"t.json", &e};
    ck_assert_int_eq(wl_balance_speed(&c, &sc, gpus, n, slow, gpu_op_time), DT_OK);
    wl_graph *g = wl_graph_build(&sc);
    replay_config cfg = {.n_gpus = g->n_gpus, .slowdown = slow};
    replay_result r;
    dt_error_clear(&e);
    ck_assert_int_eq(replay_run(g, &cfg, &r, &e), DT_OK);
    replay_result_free(&r);
    wl_graph_destroy(g);
    return r.step_time;
}

#define SYN(layers, parallel)                                                                   \
    "{\"topology\": \"x\", \"model\": {\"kind\": \"synthetic\", \"layers\": " #layers ","       \
    "\"forward_time\": \"1 ms\", \"backward_time\": \"2 ms\", \"params\": 0}, \"parallel\": "    \
    parallel "}"

/* Stage 1's GPU runs at half speed: a layer costs 3 ms (F 1 + B 2) on stage 0, 6 ms on stage 1.
 * Balanced, 4 layers on stage 0 and 2 on stage 1 cost 12 ms each per microbatch (F 4, B 8) and
 * GPipe takes (m + p - 1)(t_f + t_b) = 5 x 12 = 60 ms. Even, 3 + 3: stage 0 F 3, B 6; stage 1
 * F 6, B 12 per microbatch. Stage 1's forwards [3,9] [9,15] [15,21] [21,27], its backwards
 * [27,39] .. [63,75]; stage 0's last backward waits for 75 and ends at 81 ms. */
START_TEST(two_speed_pipeline_closed_form)
{
    double slow[2] = {1, 2};
    load(SYN(6, "{\"pp\": 2, \"microbatches\": 4, \"schedule\": \"gpipe\", \"balance\": \"speed\"}"), 2);
    sim_time_t t = balance_and_step(2, slow);
    ck_assert_int_eq(sc.plan.stage_layers[0], 4);
    ck_assert_int_eq(sc.plan.stage_layers[1], 2);
    ck_assert_ptr_null(sc.plan.replica_microbatches);
    ck_assert_int_eq(t, 60 * SIM_MS);
    unload();
    /* the even split, for contrast */
    load(SYN(6, "{\"pp\": 2, \"microbatches\": 4, \"schedule\": \"gpipe\"}"), 2);
    ck_assert_int_eq(balance_and_step(2, slow), 81 * SIM_MS);
    unload();
}
END_TEST

/* Replica 1 is 3x slower: 3 ms against 9 ms a microbatch. 8 microbatches: 6 + 2 costs
 * max(18, 18) = 18 ms; the even 4 + 4, 36 ms. */
START_TEST(two_speed_replicas_closed_form)
{
    double slow[2] = {1, 3};
    load(SYN(1, "{\"dp\": 2, \"microbatches\": 4, \"balance\": \"speed\"}"), 2);
    sim_time_t t = balance_and_step(2, slow);
    ck_assert_ptr_nonnull(sc.plan.replica_microbatches);
    ck_assert_int_eq(sc.plan.replica_microbatches[0], 6);
    ck_assert_int_eq(sc.plan.replica_microbatches[1], 2);
    ck_assert_int_eq(wl_max_replica_microbatches(&sc.plan), 6);
    ck_assert_int_eq(t, 18 * SIM_MS);
    unload();
    load(SYN(1, "{\"dp\": 2, \"microbatches\": 4}"), 2);
    ck_assert_int_eq(balance_and_step(2, slow), 36 * SIM_MS);
    unload();
}
END_TEST

START_TEST(equal_gpus_stay_even)
{
    double slow[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    load(SYN(24, "{\"pp\": 4, \"dp\": 2, \"microbatches\": 8, \"balance\": \"speed\"}"), 8);
    balance_and_step(8, slow);
    for (int i = 0; i < 4; i++) ck_assert_int_eq(sc.plan.stage_layers[i], 6);
    ck_assert_ptr_null(sc.plan.replica_microbatches);
    unload();
    /* interleaved: replicas get multiples of pp (2); v 2 chunks share a stage's layers */
    double slow4[4] = {1, 1, 3, 3};
    load(SYN(8, "{\"pp\": 2, \"dp\": 2, \"microbatches\": 4, \"schedule\": \"interleaved\","
                "\"virtual_stages\": 2, \"balance\": \"speed\"}"), 4);
    balance_and_step(4, slow4);
    ck_assert_ptr_nonnull(sc.plan.replica_microbatches);
    ck_assert_int_eq(sc.plan.replica_microbatches[0] % 2, 0);
    ck_assert_int_eq(sc.plan.replica_microbatches[1] % 2, 0);
    ck_assert_int_eq(sc.plan.replica_microbatches[0] + sc.plan.replica_microbatches[1], 8);
    ck_assert_int_gt(sc.plan.replica_microbatches[0], sc.plan.replica_microbatches[1]);
    for (int i = 0; i < 4; i++) ck_assert_int_eq(sc.plan.stage_layers[i], 2);
    unload();
}
END_TEST

/* Two H100 stages, then two A100 stages (one GPU each); GPT-style 1.3 B model. */
#define MIX(balance)                                                                             \
    "{\"topology\": {\"format\": \"dtsim-topology\", \"version\": 1, \"name\": \"mix\", "         \
    "\"nodes\": [{\"name\": \"sw\", \"kind\": \"switch\"}, {\"name\": \"g0\", \"kind\": \"gpu\","  \
    " \"gpu\": \"H100-SXM\"}, {\"name\": \"g1\", \"kind\": \"gpu\", \"gpu\": \"H100-SXM\"},"     \
    " {\"name\": \"g2\", \"kind\": \"gpu\", \"gpu\": \"A100-SXM\"}, {\"name\": \"g3\", \"kind\":" \
    " \"gpu\", \"gpu\": \"A100-SXM\"}], \"links\": [{\"src\": \"g0\", \"dst\": \"sw\", "          \
    "\"bandwidth\": \"400 Gb/s\", \"latency\": \"1 us\"}, {\"src\": \"g1\", \"dst\": \"sw\", "     \
    "\"bandwidth\": \"400 Gb/s\", \"latency\": \"1 us\"}, {\"src\": \"g2\", \"dst\": \"sw\", "     \
    "\"bandwidth\": \"400 Gb/s\", \"latency\": \"1 us\"}, {\"src\": \"g3\", \"dst\": \"sw\", "     \
    "\"bandwidth\": \"400 Gb/s\", \"latency\": \"1 us\"}]}, \"model\": {\"kind\": "               \
    "\"transformer\", \"layers\": 24, \"hidden\": 2048, \"heads\": 16, \"seq_len\": 2048, "        \
    "\"vocab\": 50257}, \"parallel\": {\"pp\": 4, \"micro_batch_size\": 1, \"schedule\": "         \
    "\"1f1b\"" balance "}, \"global_batch\": 16, \"precision\": \"bf16\"}"

static run_result must_run(const char *text)
{
    cJSON *j;
    dt_error e;
    dt_error_clear(&e);
    ck_assert_int_eq(js_parse_text(text, strlen(text), "s.json", &j, &e), DT_OK);
    run_options opt = {0};
    run_result r;
    int rc = run_scenario(j, "s.json", DTSIM_SOURCE_DIR, &opt, &r, &e);
    ck_assert_msg(rc == DT_OK, "%s: %s", e.path, e.msg);
    cJSON_Delete(j);
    return r;
}

/* Per microbatch time of a stage holding n layers (first / last: the embedding / logits). */
static double stage_time(const wl_scenario *s, const gpu_spec *g, int n, bool first, bool last)
{
    wl_cost f, b;
    wl_layer_op_cost(s, &s->plan, false, first, last, n, &f);
    wl_layer_op_cost(s, &s->plan, true, first, last, n, &b);
    gpu_precision pr = wl_gpu_precision(s->plan.precision);
    return (double)wl_cost_time(&f, g, pr, gpu_op_time) + (double)wl_cost_time(&b, g, pr, gpu_op_time);
}

START_TEST(mixed_h100_a100_pipeline)
{
    run_result even = must_run(MIX(""));
    run_result bal = must_run(MIX(", \"balance\": \"speed\""));
    ck_assert_msg(strstr(bal.summary, "balanced by speed: layers "), "%s", bal.summary);
    /* the H100 stages take more layers than the A100 stages; the step is well below the even
     * split's (measured 551 ms even, 262 ms balanced 10+10+3+1: 2.1x; the bound leaves room for
     * model changes, not for no balancing) */
    ck_assert_double_lt(bal.step_time_s, even.step_time_s / 1.3);
    /* optimality of the split the summary reports: moving one layer between any two stages
     * does not lower the slowest stage (costs as the compute model gives them) */
    load(MIX(", \"balance\": \"speed\""), 4);
    gpu_spec g[4];
    dt_error e;
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(gpu_preset(i < 2 ? "H100-SXM" : "A100-SXM", &g[i], &e), DT_OK);
    js_ctx c = {"t.json", &e};
    ck_assert_int_eq(wl_balance_speed(&c, &sc, g, 4, NULL, gpu_op_time), DT_OK);
    int n[4], sum = 0;
    for (int i = 0; i < 4; i++) sum += n[i] = sc.plan.stage_layers[i];
    ck_assert_int_eq(sum, 24);
    ck_assert_int_gt(n[1], n[2]);
    double worst = 0;
    for (int i = 0; i < 4; i++) worst = fmax(worst, stage_time(&sc, &g[i], n[i], i == 0, i == 3));
    for (int from = 0; from < 4; from++)
        for (int to = 0; to < 4; to++) {
            if (from == to || n[from] == 1) continue;
            double w = 0;
            for (int i = 0; i < 4; i++) {
                int k = n[i] + (i == to) - (i == from);
                w = fmax(w, stage_time(&sc, &g[i], k, i == 0, i == 3));
            }
            ck_assert_msg(w >= worst, "moving a layer from stage %d to %d: %g < %g", from, to, w, worst);
        }
    char want[64];
    snprintf(want, sizeof want, "layers %d+%d+%d+%d", n[0], n[1], n[2], n[3]);
    ck_assert_msg(strstr(bal.summary, want), "%s lacks %s", bal.summary, want);
    unload();
    run_result_free(&even);
    run_result_free(&bal);
}
END_TEST

static void bad(const char *parallel, int n_gpus, const char *path, const char *msg_part)
{
    char text[1024];
    snprintf(text, sizeof text, "{\"topology\": \"x\", \"model\": {\"kind\": \"synthetic\", "
             "\"layers\": 4, \"forward_time\": \"1 ms\", \"backward_time\": \"2 ms\", "
             "\"params\": 0}, \"parallel\": %s}", parallel);
    dt_error e;
    ck_assert_int_eq(try_load(text, n_gpus, &e), DT_EINPUT);
    ck_assert_msg(!strcmp(e.path, path), "%s: path %s (%s)", parallel, e.path, e.msg);
    ck_assert_msg(strstr(e.msg, msg_part), "%s: %s", parallel, e.msg);
}

START_TEST(bad_input)
{
    bad("{\"pp\": 2, \"balance\": \"fast\"}", 2, "parallel.balance", "speed");
    bad("{\"pp\": 2, \"balance\": \"speed\", \"stage_layers\": [1, 3]}", 2, "parallel.balance",
        "stage_layers");
    bad("{\"dp\": 2, \"zero\": 2, \"balance\": \"speed\"}", 2, "parallel.balance", "ZeRO-2");
    bad("{\"dp\": 2, \"backup_workers\": 1, \"balance\": \"speed\"}", 2, "parallel.balance",
        "backup workers");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("balance");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, two_speed_pipeline_closed_form);
    tcase_add_test(tc, two_speed_replicas_closed_form);
    tcase_add_test(tc, equal_gpus_stay_even);
    tcase_add_test(tc, mixed_h100_a100_pipeline);
    tcase_add_test(tc, bad_input);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return dt_run_suite(suite()); }
