/* test_wl_replay.c - schedule generation and replay against closed forms.
 * Pins down: GPipe and 1F1B step time (m+p-1)(t_f+t_b) and bubble fraction (p-1)/(m+p-1) with
 * free communication; interleaved bubble (p-1)/(v m); data-parallel step = compute + exposed
 * all-reduce with and without overlap (ring closed form over a uniform fabric); one straggler
 * slows a synchronous DP step by its factor and shows as straggler_wait on its peers; TP
 * all-reduce count per layer; breakdown sums to the step time; exposed communication split by
 * kind (TP, PP, DP, ZeRO) on a hand-computed overlap, parts summing to the total exactly.
 * Leaves free: op ids and the graph's exact size; network contention (analytic costs only). */
#include <string.h>

#include "dtsim/replay.h"
#include "dtsim/workload.h"
#include "testutil.h"

static wl_scenario sc;
static cJSON *sc_json;

static void load(const char *text, int n_gpus)
{
    dt_error e;
    dt_error_clear(&e);
    ck_assert_int_eq(js_parse_text(text, strlen(text), "t.json", &sc_json, &e), DT_OK);
    js_ctx c = {"t.json", &e};
    int rc = wl_scenario_parse(&c, sc_json, &sc);
    ck_assert_msg(rc == DT_OK, "parse: %s: %s", e.path, e.msg);
    rc = wl_scenario_resolve(&c, &sc, n_gpus);
    ck_assert_msg(rc == DT_OK, "resolve: %s: %s", e.path, e.msg);
}

static void unload(void)
{
    wl_scenario_free(&sc);
    cJSON_Delete(sc_json);
}

typedef struct uni { double bw; sim_time_t lat; } uni;
static void uni_path(void *ctx, int a, int b, double *bw, sim_time_t *lat)
{
    (void)a;
    (void)b;
    const uni *u = ctx;
    *bw = u->bw;
    *lat = u->lat;
}

static replay_result run(const wl_graph *g, const uni *u, const double *slow)
{
    replay_config cfg = {.n_gpus = g->n_gpus, .path = u ? uni_path : NULL, .path_ctx = (void *)u,
                      .slowdown = slow};
    replay_result r;
    dt_error e;
    dt_error_clear(&e);
    ck_assert_int_eq(replay_run(g, &cfg, &r, &e), DT_OK);
    ck_assert_int_eq(r.compute + r.comm_exposed + r.bubble + r.straggler_wait, r.step_time);
    replay_result_free(&r); /* the per-lane arrays; the figures stay */
    return r;
}

#define SYN(pp, layers, m, sched, extra)                                                    \
    "{\"topology\": \"x\", \"model\": {\"kind\": \"synthetic\", \"layers\": " #layers        \
    ", \"forward_time\": \"1 ms\", \"backward_time\": \"2 ms\", \"params\": 0},"             \
    "\"parallel\": {\"pp\": " #pp ", \"microbatches\": " #m ", \"schedule\": \"" sched "\"" \
    extra "}}"

static void pipeline_case(const char *text, int p, int m, double tf, double tb)
{
    load(text, p);
    wl_graph *g = wl_graph_build(&sc);
    replay_result r = run(g, NULL, NULL);
    ck_assert_int_eq(r.step_time, (sim_time_t)((m + p - 1) * (tf + tb) * SIM_MS));
    ck_assert_int_eq(r.bubble, (sim_time_t)((p - 1) * (tf + tb) * SIM_MS));
    ck_assert_int_eq(r.compute, (sim_time_t)(m * (tf + tb) * SIM_MS));
    ck_assert_rel((double)r.bubble / r.step_time, (double)(p - 1) / (m + p - 1), 1e-12);
    wl_graph_destroy(g);
    unload();
}

START_TEST(gpipe_closed_form)
{
    pipeline_case(SYN(4, 4, 8, "gpipe", ""), 4, 8, 1, 2);
    pipeline_case(SYN(4, 8, 6, "gpipe", ""), 4, 6, 2, 4);
}
END_TEST

START_TEST(onef1b_closed_form)
{
    pipeline_case(SYN(4, 4, 8, "1f1b", ""), 4, 8, 1, 2);
    pipeline_case(SYN(8, 8, 3, "1f1b", ""), 8, 3, 1, 2);
}
END_TEST

START_TEST(interleaved_bubble)
{
    /* 8 layers, pp 4, v 2: a chunk is one layer (1 ms + 2 ms); a stage does 6 ms per mb. */
    int p = 4, m = 8, v = 2;
    load(SYN(4, 8, 8, "interleaved", ", \"virtual_stages\": 2"), p);
    wl_graph *g = wl_graph_build(&sc);
    replay_result r = run(g, NULL, NULL);
    sim_time_t ideal = (sim_time_t)m * v * 3 * SIM_MS;
    ck_assert_int_eq(r.compute, ideal);
    ck_assert_rel((double)r.bubble / ideal, (double)(p - 1) / (v * m), 1e-12);
    ck_assert_int_eq(r.step_time, ideal + r.bubble);
    wl_graph_destroy(g);
    unload();
}
END_TEST

/* The compute ops of lane `lane` in graph order: 'f' or 'b' each, into out (NUL-ended). */
static void lane_order(const wl_graph *g, uint32_t lane, char *out, size_t cap)
{
    size_t n = 0;
    for (uint32_t i = 0; i < g->n_ops && n + 1 < cap; i++) {
        const wl_op *o = &g->ops[i];
        if (o->lane != lane || o->kind != WL_OP_COMPUTE) continue;
        const char *nm = g->names[o->name];
        if (!strncmp(nm, "forward", 7)) out[n++] = 'f';
        else if (!strncmp(nm, "backward", 8)) out[n++] = 'b';
    }
    out[n] = 0;
}

START_TEST(interleaved_on_pp_microbatches)
{
    /* m = pp = 2, v = 2 (4 layers, a chunk one layer): Megatron's warm-up formula gives the
     * last stage (p - 1 - 1)·2 + (v - 1)·p = 2 chunk forwards, then one forward and one
     * backward at a time; Megatron-LM of 2022 (megatron preset under fp16) runs every forward
     * first when the microbatches number pp (all_warmup_microbatches). Stage 0's formula covers
     * all 4 chunks either way. The step is the same here (one-layer chunks of 1 ms + 2 ms, no
     * communication: ideal 12 ms + the bubble (p - 1)/(v m) of it, 15 ms), the order is not. */
    char o[64];
    const char *fw[2] = {"", ", \"framework\": \"megatron\", \"precision\": \"fp16\""};
    const char *last[2] = {"fffbfbbb", "ffffbbbb"};
    for (int k = 0; k < 2; k++) {
        char text[1024];
        snprintf(text, sizeof text,
                 "{\"topology\": \"x\", \"model\": {\"kind\": \"synthetic\", \"layers\": 4,"
                 " \"forward_time\": \"1 ms\", \"backward_time\": \"2 ms\", \"params\": 0},"
                 " \"parallel\": {\"pp\": 2, \"microbatches\": 2, \"schedule\": \"interleaved\","
                 " \"virtual_stages\": 2}%s}",
                 fw[k]);
        load(text, 2);
        wl_graph *g = wl_graph_build(&sc);
        lane_order(g, 0, o, sizeof o);
        ck_assert_str_eq(o, "ffffbbbb");
        lane_order(g, 1, o, sizeof o);
        ck_assert_str_eq(o, last[k]);
        replay_result r = run(g, NULL, NULL);
        ck_assert_int_eq(r.step_time, 15 * SIM_MS);
        wl_graph_destroy(g);
        unload();
    }
}
END_TEST

/* DP: 4 layers of 1 ms + 2 ms, 4 replicas, 1e8 params (bf16 grads: 5e7 B per layer). */
#define DP_SC(bucket, overlap)                                                              \
    "{\"topology\": \"x\", \"model\": {\"kind\": \"synthetic\", \"layers\": 4,"              \
    "\"forward_time\": \"1 ms\", \"backward_time\": \"2 ms\", \"params\": 1e8},"             \
    "\"parallel\": {\"dp\": 4, \"bucket_size\": \"" bucket "\", \"overlap_dp\": " overlap "}}"

START_TEST(dp_overlap_closed_form)
{
    uni u = {.bw = 100e9, .lat = 5 * SIM_US};
    int n = 4;
    double layer_bytes = 2 * 1e8 / 4;
    /* ring all-reduce of one layer's gradients */
    sim_time_t ar_layer = 2 * (n - 1) * u.lat + sim_time_from_s(2.0 * (n - 1) / n * layer_bytes / u.bw);
    sim_time_t ar_all = 2 * (n - 1) * u.lat + sim_time_from_s(2.0 * (n - 1) / n * 4 * layer_bytes / u.bw);
    sim_time_t compute = 12 * SIM_MS;

    /* one bucket per layer, overlapped: only the last layer's all-reduce is exposed
     * (each all-reduce, 1.5 ms + latency, hides under the next layer's 2 ms backward) */
    load(DP_SC("50 MB", "true"), n);
    wl_graph *g = wl_graph_build(&sc);
    replay_result r = run(g, &u, NULL);
    ck_assert_int_eq(r.step_time, compute + ar_layer);
    ck_assert_int_eq(r.comm_exposed, ar_layer);
    wl_graph_destroy(g);
    unload();

    /* same buckets, no overlap: all four after the backward pass */
    load(DP_SC("50 MB", "false"), n);
    g = wl_graph_build(&sc);
    r = run(g, &u, NULL);
    ck_assert_int_eq(r.step_time, compute + 4 * ar_layer);
    wl_graph_destroy(g);
    unload();

    /* one big bucket: one all-reduce of everything after the backward, overlap or not */
    load(DP_SC("1 GB", "true"), n);
    g = wl_graph_build(&sc);
    r = run(g, &u, NULL);
    ck_assert_int_eq(r.step_time, compute + ar_all);
    wl_graph_destroy(g);
    unload();
}
END_TEST

START_TEST(straggler_slows_dp)
{
    load(DP_SC("50 MB", "true"), 4);
    wl_graph *g = wl_graph_build(&sc);
    double slow[4] = {1, 1, 1.5, 1};
    replay_result r = run(g, NULL, slow);
    /* free communication: the step is the slowest replica's compute */
    ck_assert_int_eq(r.step_time, 18 * SIM_MS);
    ck_assert_int_eq(r.critical_gpu, 0);
    ck_assert_int_eq(r.compute, 12 * SIM_MS);
    ck_assert_int_eq(r.straggler_wait, 6 * SIM_MS);
    wl_graph_destroy(g);
    unload();
}
END_TEST

START_TEST(tp_allreduce_count)
{
    load("{\"topology\": \"x\", \"model\": {\"kind\": \"transformer\", \"layers\": 8, "
         "\"hidden\": 1024, \"heads\": 16, \"seq_len\": 512, \"vocab\": 32000},"
         "\"parallel\": {\"tp\": 4, \"pp\": 2, \"microbatches\": 2}}",
         8);
    wl_graph *g = wl_graph_build(&sc);
    int fwd = 0, bwd = 0;
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const wl_op *o = &g->ops[i];
        if (o->kind != WL_OP_COMPUTE) continue;
        const wl_cost *c = &g->costs[o->arg];
        const char *nm = g->names[o->name];
        if (!strcmp(nm, "forward") || !strcmp(nm, "backward")) {
            ck_assert_int_eq(c->n_inlane, 1);
            ck_assert_int_eq(c->inlane[0].op, COLL_ALLREDUCE);
            /* one op per 4-layer stage: 2 all-reduces per layer */
            ck_assert_int_eq(c->inlane[0].count, 2 * 4);
            ck_assert_rel(c->inlane[0].bytes, 512.0 * 1024 * 2, 1e-15);
            if (nm[0] == 'f') fwd++; else bwd++;
        }
    }
    ck_assert_int_eq(fwd, 2 * 2); /* dp 1: 2 stages x 2 microbatches */
    ck_assert_int_eq(bwd, 4);
    ck_assert_int_eq(g->n_lanes, 2);
    ck_assert_int_eq(g->lane_size, 4);
    /* TP innermost: lane 0 is GPUs 0-3, stage 1 of replica 0 is GPUs 4-7 */
    ck_assert_int_eq(g->lane_gpus[4], 4);
    wl_graph_destroy(g);
    unload();
}
END_TEST

START_TEST(megatron_flops)
{
    load("{\"topology\": \"x\", \"model\": {\"kind\": \"transformer\", \"layers\": 96, "
         "\"hidden\": 12288, \"heads\": 96, \"seq_len\": 2048, \"vocab\": 51200},"
         "\"parallel\": {\"activation_checkpointing\": \"full\"}, \"global_batch\": 1536}",
         1536);
    double B = 1536, s = 2048, l = 96, h = 12288, V = 51200;
    double megatron = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
    ck_assert_rel(wl_hw_flops_per_step(&sc.model, &sc.plan, B), megatron, 1e-12);
    double model = 72 * B * s * l * h * h * (1 + s / (6 * h)) + 6 * B * s * h * V;
    ck_assert_rel(wl_model_flops_per_step(&sc.model, B), model, 1e-12);
    /* GPT-3: ~175 B parameters (biases left out) */
    ck_assert_rel(wl_total_params(&sc.model), 174.6e9, 0.01);
    unload();
}
END_TEST

static int count_named(const wl_graph *g, uint32_t lane, const char *name)
{
    int n = 0;
    for (uint32_t i = 0; i < g->n_ops; i++)
        if (g->ops[i].lane == lane && !strcmp(g->names[g->ops[i].name], name)) n++;
    return n;
}

START_TEST(topk_compression_closed_form)
{
    /* one bucket of 2e8 B (1e8 bf16 gradients), ratio 1%: top-k takes 1e8 / 2e10 = 5 ms on the
     * compute stream, then an all-gather of 4 x 1e6 (index, value) pairs of 6 B */
    uni u = {.bw = 100e9, .lat = 0};
    load("{\"topology\": \"x\", \"model\": {\"kind\": \"synthetic\", \"layers\": 4,"
         "\"forward_time\": \"1 ms\", \"backward_time\": \"2 ms\", \"params\": 1e8},"
         "\"parallel\": {\"dp\": 4, \"bucket_size\": \"1 GB\", \"compression\": {\"ratio\": 0.01}}}",
         4);
    wl_graph *g = wl_graph_build(&sc);
    ck_assert_int_eq(count_named(g, 0, "topk_compress"), 1);
    ck_assert_int_eq(count_named(g, 0, "topk_allgather"), 1);
    ck_assert_int_eq(count_named(g, 0, "dp_allreduce"), 0);
    double ag_bytes = 4 * 0.01 * 1e8 * 6;
    int found = 0;
    for (uint32_t c = 0; c < g->n_colls; c++)
        if (g->colls[c].op == COLL_ALLGATHER) {
            ck_assert_rel(g->colls[c].bytes, ag_bytes, 1e-12);
            found++;
        }
    ck_assert_int_eq(found, 1);
    replay_result r = run(g, &u, NULL);
    sim_time_t ag = sim_time_from_s(3.0 / 4 * ag_bytes / u.bw);
    ck_assert_int_eq(r.step_time, 12 * SIM_MS + 5 * SIM_MS + ag);
    wl_graph_destroy(g);
    unload();
}
END_TEST

START_TEST(zero_collectives)
{
    /* ZeRO-3, 4 layers, 2 microbatches: a gather before every layer's forward and backward,
     * a gradient reduce-scatter bucket per layer and microbatch (bucket = one layer). */
    load("{\"topology\": \"x\", \"model\": {\"kind\": \"synthetic\", \"layers\": 4,"
         "\"forward_time\": \"1 ms\", \"backward_time\": \"2 ms\", \"params\": 1e8},"
         "\"parallel\": {\"dp\": 2, \"zero\": 3, \"microbatches\": 2, \"bucket_size\": \"50 MB\"}}",
         2);
    wl_graph *g = wl_graph_build(&sc);
    ck_assert_int_eq(count_named(g, 0, "zero3_param_gather"), 2 * 2 * 4);
    ck_assert_int_eq(count_named(g, 0, "zero_grad_reduce_scatter"), 2 * 4);
    ck_assert_int_eq(count_named(g, 0, "zero_param_allgather"), 0);
    ck_assert_int_eq(count_named(g, 1, "zero3_param_gather"), 2 * 2 * 4);
    replay_result r = run(g, NULL, NULL);
    ck_assert_int_eq(r.step_time, 2 * 12 * SIM_MS); /* free communication */
    wl_graph_destroy(g);
    unload();
    /* ZeRO-1: reduce-scatter on the last microbatch only, one parameter all-gather after */
    load("{\"topology\": \"x\", \"model\": {\"kind\": \"synthetic\", \"layers\": 4,"
         "\"forward_time\": \"1 ms\", \"backward_time\": \"2 ms\", \"params\": 1e8},"
         "\"parallel\": {\"dp\": 2, \"zero\": 1, \"microbatches\": 2, \"bucket_size\": \"50 MB\"}}",
         2);
    g = wl_graph_build(&sc);
    ck_assert_int_eq(count_named(g, 0, "dp_reduce_scatter"), 4);
    ck_assert_int_eq(count_named(g, 0, "zero_param_allgather"), 1);
    ck_assert_int_eq(count_named(g, 0, "optimizer_step"), 1);
    wl_graph_destroy(g);
    unload();
}
END_TEST

/* Microbatches (in units of a whole stage) whose activations a lane holds at its peak, walking
 * its compute ops in program order: a chunk forward adds 1/v, a chunk backward frees 1/v. */
static double peak_inflight(const wl_graph *g, uint32_t lane, int v)
{
    double cur = 0, peak = 0;
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const wl_op *o = &g->ops[i];
        if (o->lane != lane || o->kind != WL_OP_COMPUTE) continue;
        const char *nm = g->names[o->name];
        if (!strcmp(nm, "forward")) cur += 1.0 / v;
        else if (!strcmp(nm, "backward")) cur -= 1.0 / v;
        if (cur > peak) peak = cur;
    }
    return peak;
}

START_TEST(schedule_matches_memory_model)
{
    /* The memory model's microbatches in flight (mem_inflight) must be what the generated
     * schedule actually holds, on every stage. */
    const char *cases[] = {SYN(4, 8, 8, "gpipe", ""), SYN(4, 8, 8, "1f1b", ""),
                           SYN(4, 8, 2, "1f1b", ""),
                           SYN(4, 8, 8, "interleaved", ", \"virtual_stages\": 2"),
                           SYN(4, 16, 4, "interleaved", ", \"virtual_stages\": 4")};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        load(cases[c], 4);
        wl_graph *g = wl_graph_build(&sc);
        for (int st = 0; st < 4; st++)
            ck_assert_msg(fabs(peak_inflight(g, (uint32_t)st, sc.plan.virtual_stages) -
                               mem_inflight(&sc.plan, st)) < 1e-9,
                          "case %zu stage %d: schedule holds %g, memory model says %g", c, st,
                          peak_inflight(g, (uint32_t)st, sc.plan.virtual_stages),
                          mem_inflight(&sc.plan, st));
        wl_graph_destroy(g);
        unload();
    }
}
END_TEST


/* Exposed communication by kind, on a hand-built graph of two lanes of two GPUs (uniform paths,
 * 100 GB/s, 1 us): lane 0 computes 10 ms with an in-layer (TP) all-reduce of 8 MB, then sends
 * 20 MB to lane 1 (PP) while both lanes all-reduce 100 MB (DP), then all-gather 40 MB (ZeRO).
 * Lane 1 only joins the collectives. On lane 0 (the critical one: both end together, lowest
 * wins) the TP all-reduce is exposed alone, the send and the all-reduce overlap (equal shares),
 * the rest of the all-reduce and the gather are alone. */
START_TEST(exposed_comm_by_kind)
{
    uni u = {.bw = 100e9, .lat = SIM_US};
    wl_graph *g = wl_graph_create(4, 2, 2);
    for (int i = 0; i < 4; i++) g->lane_gpus[i] = i;
    wl_cost c = {.fixed = 10 * SIM_MS, .n_inlane = 1};
    c.inlane[0].op = COLL_ALLREDUCE;
    c.inlane[0].bytes = 8e6;
    c.inlane[0].count = 1;
    uint32_t cost = wl_graph_cost(g, &c);
    uint32_t ar = wl_graph_coll(g, COLL_ALLREDUCE, 100e6);
    uint32_t ag = wl_graph_coll_kind(g, COLL_ALLGATHER, 40e6, WL_COMM_ZERO);
    ck_assert_int_eq(g->colls[ar].kind, WL_COMM_DP);
    uint32_t nm = wl_graph_name(g, "op");
    wl_op a = {.lane = 0, .kind = WL_OP_COMPUTE, .stream = WL_STREAM_COMPUTE, .name = (uint16_t)nm,
               .mb = -1, .layer = -1, .arg = cost};
    uint32_t ida = wl_graph_op(g, &a, NULL, 0);
    wl_op snd = {.lane = 0, .kind = WL_OP_SEND, .stream = WL_STREAM_PP, .name = (uint16_t)nm,
                 .mb = -1, .layer = -1, .arg = 1, .bytes = 20e6};
    wl_graph_op(g, &snd, &ida, 1);
    wl_op d0 = {.lane = 0, .kind = WL_OP_COLL, .stream = WL_STREAM_DP, .name = (uint16_t)nm,
                .mb = -1, .layer = -1, .arg = ar};
    uint32_t idd = wl_graph_op(g, &d0, &ida, 1);
    wl_op z0 = d0;
    z0.arg = ag;
    wl_graph_op(g, &z0, &idd, 1);
    wl_op d1 = d0, z1 = z0;
    d1.lane = z1.lane = 1;
    wl_graph_op(g, &d1, NULL, 0);
    wl_graph_op(g, &z1, NULL, 0);

    replay_result r = run(g, &u, NULL);
    /* ring closed forms over n GPUs (replay_coll_time): all-reduce 2(n-1)(a + B/(n bw)),
     * all-gather (n-1)(a + B/(n bw)), send a + B/bw */
    sim_time_t tp = 2 * (u.lat + sim_time_from_s(8e6 / 2 / u.bw));
    sim_time_t pp = u.lat + sim_time_from_s(20e6 / u.bw);
    sim_time_t dp = 2 * (u.lat + sim_time_from_s(100e6 / 2 / u.bw));
    sim_time_t zero = u.lat + sim_time_from_s(40e6 / 2 / u.bw);
    ck_assert_int_eq(r.critical_gpu, 0);
    ck_assert_int_eq(r.step_time, 10 * SIM_MS + tp + dp + zero);
    ck_assert_int_eq(r.compute, 10 * SIM_MS);
    ck_assert_int_eq(r.comm_exposed, tp + dp + zero);
    ck_assert_int_eq(r.comm_by_kind[WL_COMM_TP], tp);
    /* the send's span is shared with the all-reduce; the odd picosecond goes to PP (lower) */
    ck_assert_int_eq(r.comm_by_kind[WL_COMM_PP], pp - pp / 2);
    ck_assert_int_eq(r.comm_by_kind[WL_COMM_DP], dp - (pp - pp / 2));
    ck_assert_int_eq(r.comm_by_kind[WL_COMM_ZERO], zero);
    sim_time_t sum = 0;
    for (int k = 0; k < WL_COMM_KIND_COUNT; k++) sum += r.comm_by_kind[k];
    ck_assert_int_eq(sum, r.comm_exposed);
    ck_assert_int_eq(r.comm_inflight[WL_COMM_TP], tp);
    ck_assert_int_eq(r.comm_inflight[WL_COMM_PP], pp);
    ck_assert_int_eq(r.comm_inflight[WL_COMM_DP], dp);
    ck_assert_int_eq(r.comm_inflight[WL_COMM_ZERO], zero);
    wl_graph_destroy(g);
}
END_TEST

/* The parts sum to the exposed total on generated steps mixing the kinds (tp, pp, interleaving,
 * ZeRO-3 and ZeRO-1, compression, expert all-to-alls, ring attention), in analytic uniform
 * paths; every kind appears in some case. */
START_TEST(exposed_parts_sum)
{
    const char *cases[] = {
        "{\"topology\": \"x\", \"model\": {\"kind\": \"transformer\", \"layers\": 8, \"hidden\": 1024,"
        "\"heads\": 16, \"seq_len\": 1024, \"vocab\": 32000}, \"parallel\": {\"tp\": 2, \"pp\": 2,"
        "\"dp\": 2, \"zero\": 1, \"schedule\": \"interleaved\", \"virtual_stages\": 2,"
        "\"microbatches\": 4, \"bucket_size\": \"10 MB\"}}",
        "{\"topology\": \"x\", \"model\": {\"kind\": \"transformer\", \"layers\": 4, \"hidden\": 1024,"
        "\"heads\": 16, \"seq_len\": 1024, \"vocab\": 32000}, \"parallel\": {\"tp\": 2, \"pp\": 2,"
        "\"dp\": 2, \"zero\": 3, \"microbatches\": 4}}",
        /* expert all-to-alls (ep) and ring attention (cp) */
        "{\"topology\": \"x\", \"model\": {\"kind\": \"transformer\", \"layers\": 4, \"hidden\": 1024,"
        "\"heads\": 16, \"seq_len\": 1024, \"vocab\": 32000, \"experts\": 4, \"top_k\": 2},"
        " \"parallel\": {\"tp\": 2, \"pp\": 2, \"dp\": 2, \"ep\": 2, \"zero\": 1, \"microbatches\": 4}}",
        "{\"topology\": \"x\", \"model\": {\"kind\": \"transformer\", \"layers\": 4, \"hidden\": 1024,"
        "\"heads\": 16, \"seq_len\": 1024, \"vocab\": 32000}, \"parallel\": {\"tp\": 2, \"pp\": 2,"
        "\"cp\": 2, \"microbatches\": 4}}",
    };
    uni u = {.bw = 50e9, .lat = 2 * SIM_US};
    int seen[WL_COMM_KIND_COUNT] = {0};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        load(cases[i], 8);
        wl_graph *g = wl_graph_build(&sc);
        replay_result r = run(g, &u, NULL);
        sim_time_t sum = 0;
        for (int k = 0; k < WL_COMM_KIND_COUNT; k++) {
            sum += r.comm_by_kind[k];
            ck_assert(r.comm_by_kind[k] <= r.comm_inflight[k]);
            seen[k] += r.comm_inflight[k] > 0;
        }
        ck_assert_int_eq(sum, r.comm_exposed);
        wl_graph_destroy(g);
        unload();
    }
    for (int k = 0; k < WL_COMM_KIND_COUNT; k++) /* every kind was there */
        ck_assert_msg(seen[k] > 0, "no %s communication in any case", wl_comm_kind_name(k));
}
END_TEST

Suite *suite(void)
{
    Suite *s = suite_create("wl_replay");
    TCase *t = tcase_create("core");
    tcase_add_test(t, gpipe_closed_form);
    tcase_add_test(t, onef1b_closed_form);
    tcase_add_test(t, interleaved_bubble);
    tcase_add_test(t, interleaved_on_pp_microbatches);
    tcase_add_test(t, dp_overlap_closed_form);
    tcase_add_test(t, straggler_slows_dp);
    tcase_add_test(t, tp_allreduce_count);
    tcase_add_test(t, megatron_flops);
    tcase_add_test(t, topk_compression_closed_form);
    tcase_add_test(t, zero_collectives);
    tcase_add_test(t, schedule_matches_memory_model);
    tcase_add_test(t, exposed_comm_by_kind);
    tcase_add_test(t, exposed_parts_sum);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return dt_run_suite(suite()); }
