/* test_host_floor.c - framework.host_forward_per_layer / host_backward_per_layer: the host's
 * dispatch floor on layer ops (docs/workloads.md, "Host dispatch floor").
 * Pins down, on hand-traced synthetic steps (a uniform path, no topology: each in-lane
 * all-reduce of 0 bytes over 2 GPUs costs 2 (n - 1) latencies): a layer op of n layers on one
 * microbatch lasts max(its GPU time, n x the host time), its GPU time being the compute and the
 * tensor-parallel collectives on its stream (floor_binds, floor_against_tp); a fully recomputed
 * backward pays the forward's host time again (recompute_pays_forward); a 1F1B pipeline held
 * by its host runs (L/p)(m + p - 1) layer passes at the host's pace (pipeline_at_host_pace);
 * what the floor adds is compute, reported as host_wait. A floor under the GPU time changes
 * nothing, to the picosecond, with or without contention (floor_not_binding); a floor under
 * contention (a DGX run) still bounds every op from below and keeps the breakdown whole
 * (floor_under_contention); traces carry it (trace_keeps_floor); bad values are errors naming
 * the path (bad_input). Leaves free: how the floor interacts with the exposed part of context
 * parallelism's ring (an upper bound, documented), the per-member split of host_wait under
 * stragglers. */
#include <string.h>

#include "dtsim/replay.h"
#include "dtsim/run.h"
#include "dtsim/workload.h"
#include "wl_testutil.h"

typedef struct uni { double bw; sim_time_t lat; } uni;
static void uni_path(void *ctx, int a, int b, double *bw, sim_time_t *lat)
{
    (void)a;
    (void)b;
    const uni *u = ctx;
    *bw = u->bw;
    *lat = u->lat;
}

/* The scenario `text` for n_gpus, replayed over the uniform path u; the breakdown must sum to the
 * step and the host's wait lie inside compute. */
static replay_result replay_text(const char *text, int n_gpus, const uni *u)
{
    load(text, n_gpus);
    wl_graph *g = wl_graph_build(&sc);
    replay_config cfg = {.n_gpus = g->n_gpus, .path = uni_path, .path_ctx = (void *)u};
    replay_result r;
    dt_error e;
    dt_error_clear(&e);
    ck_assert_int_eq(replay_run(g, &cfg, &r, &e), DT_OK);
    ck_assert_int_eq(r.compute + r.comm_exposed + r.bubble + r.straggler_wait, r.step_time);
    ck_assert_int_le(r.host_wait, r.compute);
    replay_result_free(&r); /* the per-lane arrays; the figures stay */
    wl_graph_destroy(g);
    unload();
    return r;
}

#define SYN(layers, parallel, fw)                                                              \
    "{\"topology\": \"x\", \"model\": {\"kind\": \"synthetic\", \"layers\": " #layers ","     \
    "\"forward_time\": \"1 ms\", \"backward_time\": \"2 ms\", \"params\": 0},"                 \
    "\"parallel\": {" parallel "}, \"framework\": {" fw "}}"

/* 4 layers of 1 ms forward, 2 ms backward, 2 microbatches on one GPU, one op per direction and
 * microbatch. Host 3 ms per layer forward, 5 ms backward: each forward op lasts max(4, 12) =
 * 12 ms, each backward max(8, 20) = 20 ms; the step is 2 x (12 + 20) = 64 ms = layers x
 * microbatches x (3 + 5) ms, all of it compute, of which 64 - 2 x (4 + 8) = 40 ms the GPU
 * waiting for its host. (params 0: the optimizer op costs nothing.) */
START_TEST(floor_binds)
{
    uni u = {.bw = 1e12, .lat = 0};
    replay_result r = replay_text(SYN(4, "\"microbatches\": 2", ""), 1, &u);
    ck_assert_int_eq(r.step_time, 2 * (4 + 8) * SIM_MS);
    ck_assert_int_eq(r.host_wait, 0);
    r = replay_text(SYN(4, "\"microbatches\": 2", "\"host_forward_per_layer\": \"3 ms\","
                                                  "\"host_backward_per_layer\": \"5 ms\""),
                    1, &u);
    ck_assert_int_eq(r.step_time, 4 * 2 * (3 + 5) * SIM_MS);
    ck_assert_int_eq(r.compute, 64 * SIM_MS);
    ck_assert_int_eq(r.host_wait, 40 * SIM_MS);
    /* only the forward's given: the backward keeps its GPU time, 2 x (12 + 8) */
    r = replay_text(SYN(4, "\"microbatches\": 2", "\"host_forward_per_layer\": \"3 ms\""), 1, &u);
    ck_assert_int_eq(r.step_time, 2 * (12 + 8) * SIM_MS);
    ck_assert_int_eq(r.host_wait, 2 * (12 - 4) * SIM_MS);
}
END_TEST

/* tp 2, a 1 ms link latency: each op's 8 in-lane all-reduces cost 2 ms each, 16 ms beside 4 ms
 * of forward compute (20 ms of GPU time) and 8 ms of backward (24 ms). Host 6 ms per layer
 * forward (24 ms) and 5 ms backward (20 ms): the forward lasts max(4 + 16, 24) = 24 ms (not
 * max(4, 24) + 16 = 40: the host issues the collectives too, and the GPU runs them), the
 * backward keeps its 24 ms. Step 48 ms: compute 4 + 4 (the wait) + 8 = 16 ms, host wait 4 ms,
 * TP exposed 32 ms. */
START_TEST(floor_against_tp)
{
    uni u = {.bw = 1e12, .lat = SIM_MS};
    replay_result r = replay_text(SYN(4, "\"tp\": 2", ""), 2, &u);
    ck_assert_int_eq(r.step_time, (4 + 16 + 8 + 16) * SIM_MS);
    r = replay_text(SYN(4, "\"tp\": 2", "\"host_forward_per_layer\": \"6 ms\","
                                        "\"host_backward_per_layer\": \"5 ms\""),
                    2, &u);
    ck_assert_int_eq(r.step_time, (24 + 24) * SIM_MS);
    ck_assert_int_eq(r.compute, 16 * SIM_MS);
    ck_assert_int_eq(r.host_wait, 4 * SIM_MS);
    ck_assert_int_eq(r.comm_exposed, 32 * SIM_MS);
    /* with --tp-comm-overlap the forward's GPU time is max(4, 16) = 16 ms, so the floor of 24
     * binds by 8 ms; the backward's max(8, 16) = 16 ms against a 20 ms floor: 4 ms */
    r = replay_text(SYN(4, "\"tp\": 2", "\"tp_comm_overlap\": true, "
                                        "\"host_forward_per_layer\": \"6 ms\","
                                        "\"host_backward_per_layer\": \"5 ms\""),
                    2, &u);
    ck_assert_int_eq(r.step_time, (24 + 20) * SIM_MS);
}
END_TEST

/* Full recomputation: the synthetic backward re-runs the forward (4 x (2 + 1) = 12 ms of GPU
 * time); its host runs the forward's code again too: 4 x (5 + 3) = 32 ms. One microbatch: the
 * forward max(4, 12) = 12 ms, the backward 32 ms, step 44 ms. Selective recomputation re-runs
 * only the attention core: the backward's floor stays 4 x 5 = 20 ms (a synthetic model's
 * backward is not lengthened by it either), step 12 + 20 = 32 ms. */
START_TEST(recompute_pays_forward)
{
    uni u = {.bw = 1e12, .lat = 0};
    const char *fw = "\"host_forward_per_layer\": \"3 ms\", \"host_backward_per_layer\": \"5 ms\"";
    char text[640];
    snprintf(text, sizeof text, SYN(4, "\"activation_checkpointing\": \"full\"", "%s"), fw);
    replay_result r = replay_text(text, 1, &u);
    ck_assert_int_eq(r.step_time, (12 + 32) * SIM_MS);
    ck_assert_int_eq(r.host_wait, (12 - 4 + 32 - 12) * SIM_MS);
    snprintf(text, sizeof text, SYN(4, "\"activation_checkpointing\": \"selective\"", "%s"), fw);
    r = replay_text(text, 1, &u);
    ck_assert_int_eq(r.step_time, (12 + 20) * SIM_MS);
}
END_TEST

/* 1F1B, pp 2 (2 layers a stage), 4 microbatches, free sends (0 bytes, no latency); GPU 0.1 ms
 * forward and 0.2 ms backward per layer, host 1 ms and 2 ms: every op lasts its floor (F = 2,
 * B = 4 ms) on both stages, so the step is (m + p - 1)(F + B) = 5 x 6 = 30 ms = (L/p)(m + p - 1)
 * layer passes of 3 ms (the n of docs/img/hostfloor/ci.py); stage 0's idle slot is the bubble. */
START_TEST(pipeline_at_host_pace)
{
    uni u = {.bw = 1e12, .lat = 0};
    const char *base = "{\"topology\": \"x\", \"model\": {\"kind\": \"synthetic\", \"layers\": 4,"
                       "\"forward_time\": \"0.1 ms\", \"backward_time\": \"0.2 ms\", \"params\": 0},"
                       "\"parallel\": {\"pp\": 2, \"microbatches\": 4, \"schedule\": \"1f1b\"},"
                       "\"framework\": {\"host_forward_per_layer\": \"1 ms\","
                       "\"host_backward_per_layer\": \"2 ms\"}}";
    replay_result r = replay_text(base, 2, &u);
    ck_assert_int_eq(r.step_time, 30 * SIM_MS);
    ck_assert_int_eq(r.compute, 4 * (2 + 4) * SIM_MS);
    ck_assert_int_eq(r.bubble, 6 * SIM_MS);
    ck_assert_int_eq(r.host_wait, 4 * (1800 + 3600) * SIM_US); /* 4 x (2 - 0.2 + 4 - 0.4) ms */
}
END_TEST

/* A small GPT on a 2-GPU DGX box (dp 2, contention on, the gradient reduction overlapping the
 * backward): host times far under its layers' GPU time change nothing, not a picosecond of any
 * figure; host times far over it make every layer op last its floor: the step is at least
 * layers x (forward + backward host time), and the breakdown still sums to it. */
#define GPT_DGX(fw)                                                                            \
    "{\"topology\": {\"generator\": \"dgx\", \"nodes\": 1, \"gpus_per_node\": 2,"              \
    "\"gpu\": \"H100-SXM\"}, \"model\": {\"kind\": \"transformer\", \"layers\": 4,"            \
    "\"hidden\": 2048, \"heads\": 16, \"seq_len\": 2048, \"vocab\": 32000},"                   \
    "\"parallel\": {\"dp\": 2, \"micro_batch_size\": 2, \"microbatches\": 2},"                 \
    "\"framework\": {\"preset\": \"megatron\", \"overlap_grad_reduce\": true" fw "}}"

static bool same_run(const run_result *a, const run_result *b)
{
    return a->step_time_s == b->step_time_s &&
           !memcmp(&a->breakdown_s, &b->breakdown_s, sizeof a->breakdown_s) &&
           !memcmp(a->comm_exposed_by_kind_s, b->comm_exposed_by_kind_s,
                   sizeof a->comm_exposed_by_kind_s) &&
           !memcmp(a->comm_inflight_by_kind_s, b->comm_inflight_by_kind_s,
                   sizeof a->comm_inflight_by_kind_s) &&
           a->throughput.tflops_per_gpu == b->throughput.tflops_per_gpu &&
           a->events == b->events && a->host_wait_s == b->host_wait_s;
}

START_TEST(floor_not_binding)
{
    run_result plain = run_text(GPT_DGX(""));
    ck_assert(plain.breakdown_s.comm_exposed > 0 || plain.comm_inflight_by_kind_s[WL_COMM_DP] > 0);
    /* 1 ps a layer: every op's GPU time is far longer */
    run_result tiny = run_text(GPT_DGX(", \"host_forward_per_layer\": \"1 ps\","
                                       "\"host_backward_per_layer\": \"1 ps\""));
    ck_assert(same_run(&plain, &tiny));
    ck_assert(tiny.host_wait_s == 0);
    run_result_free(&plain);
    run_result_free(&tiny);
}
END_TEST

START_TEST(floor_under_contention)
{
    run_result plain = run_text(GPT_DGX(""));
    run_result held = run_text(GPT_DGX(", \"host_forward_per_layer\": \"20 ms\","
                                       "\"host_backward_per_layer\": \"30 ms\""));
    double floor = 2 * 4 * 0.050; /* microbatches x layers x (20 + 30) ms */
    ck_assert_double_ge(held.step_time_s, floor);
    /* what is not the layers' floor is what the step ran beside or after them: no more than the
     * whole plain step */
    ck_assert_double_le(held.step_time_s, floor + plain.step_time_s);
    double b = held.breakdown_s.compute + held.breakdown_s.comm_exposed +
               held.breakdown_s.bubble + held.breakdown_s.straggler_wait;
    ck_assert_rel(b, held.step_time_s, 1e-9);
    /* the wait is the floor less the GPU work under it, which the plain run's compute bounds */
    ck_assert_double_le(held.host_wait_s, held.breakdown_s.compute);
    ck_assert_double_ge(held.host_wait_s, floor - plain.breakdown_s.compute * 1.01);
    run_result_free(&plain);
    run_result_free(&held);
}
END_TEST

/* A trace written from a graph with a floor carries it on each layer cost ("host", seconds) and
 * reads it back to the picosecond. */
START_TEST(trace_keeps_floor)
{
    load(SYN(4, "\"activation_checkpointing\": \"full\"",
             "\"host_forward_per_layer\": \"3 ms\", \"host_backward_per_layer\": \"5 ms\""),
         1);
    wl_graph *g = wl_graph_build(&sc);
    wl_graph *h = graph_through_trace(g);
    ck_assert_uint_eq(h->n_costs, g->n_costs);
    int fwd = 0, bwd = 0;
    for (uint32_t i = 0; i < g->n_costs; i++) {
        ck_assert_int_eq(h->costs[i].host, g->costs[i].host);
        fwd += g->costs[i].host == 12 * SIM_MS;
        bwd += g->costs[i].host == 32 * SIM_MS;
    }
    ck_assert_int_ge(fwd, 1);
    ck_assert_int_ge(bwd, 1);
    wl_graph_destroy(h);
    wl_graph_destroy(g);
    unload();
}
END_TEST

static void bad(const char *fw, const char *path, const char *msg_part)
{
    char text[1024];
    snprintf(text, sizeof text, SYN(4, "", "%s"), fw);
    load_refused(text, 1, path, msg_part);
}

START_TEST(bad_input)
{
    bad("\"host_forward_per_layer\": \"-1 ms\"", "framework.host_forward_per_layer",
        "expected a non-negative time, found \"-1 ms\"");
    bad("\"host_backward_per_layer\": -0.001", "framework.host_backward_per_layer",
        "expected a non-negative time, found -0.001");
    bad("\"host_backward_per_layer\": \"3 parsecs\"", "framework.host_backward_per_layer",
        "unknown time unit \"parsecs\"");
    bad("\"host_forward_per_layer\": true", "framework.host_forward_per_layer",
        "expected a time such as");
    bad("\"host_forward_per_layer\": \"1e30 s\"", "framework.host_forward_per_layer",
        "time out of range");
    bad("\"host_per_layer\": \"1 ms\"", "framework.host_per_layer", "host_forward_per_layer");
    /* plain numbers are seconds, as every time in a scenario */
    load(SYN(4, "", "\"host_forward_per_layer\": 0.0025"), 1);
    ck_assert_int_eq(sc.plan.fw.host_fwd, 2500 * SIM_US);
    ck_assert_int_eq(sc.plan.fw.host_bwd, 0);
    unload();
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("host_floor");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, floor_binds);
    tcase_add_test(tc, floor_against_tp);
    tcase_add_test(tc, recompute_pays_forward);
    tcase_add_test(tc, pipeline_at_host_pace);
    tcase_add_test(tc, floor_not_binding);
    tcase_add_test(tc, floor_under_contention);
    tcase_add_test(tc, trace_keeps_floor);
    tcase_add_test(tc, bad_input);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return dt_run_suite(suite()); }
