/* test_gemm_shapes.c - a transformer's GEMMs as shapes, and how the op graph and traces carry
 * them (docs/workloads.md, "GEMM shapes").
 * Pins down: the forward GEMMs of one layer (Llama-3-8B-like: h 4096, 32 heads, 8 KV heads,
 * SwiGLU f 14336, tp 4, b 2, s 8192) are QKV (16384, 1536, 4096), the attention projection
 * (16384, 4096, 1024), the fused up/gate (16384, 7168, 4096) and the down projection
 * (16384, 4096, 3584), hand-computed; their 2mnk sum to the closed form's forward matmul FLOPs
 * for GPT (f = 4h, GELU), GQA + SwiGLU and MoE (8 experts, top 2: E GEMMs of b·s·k/E tokens);
 * backward shapes are (m, k, n) and (k, n, m); in a built graph every compute op's shapes sum
 * to its matmul FLOPs (forward, backward, full recomputation, the logits on the last stage), and
 * counts beyond 32 bits (50,000 layers x 100,000 experts) stay exact; a synthetic model has none; the time of a graph's op is the GPU's own (two GPUs differing only
 * in their SM count run the same op in their own gpu_gemm_time), and a program's own op_time
 * without gemm_time sees the FLOPs, not the shapes; a trace with gemm_sets written, read and
 * written again is the same bytes (the logits' no_fp8 with it), and bad gemm_sets / gemms (a
 * batch that does not divide its count, a no_fp8 that is not a boolean) and a negative
 * inlane_drain name their JSON paths; under fp8 the logits' GEMMs (forward, data and weight
 * gradient) run at the bf16 rate and the layers' at the fp8 rate, by hand on one H100, and so
 * do the logits' FLOPs where no shapes time the matmul class (wl_layer_op_cost, an op_time
 * without gemm_time, MoE ops under ep), by hand against bf16; an fp8 trace carries them
 * (matmul_no_fp8) through a write and read, and one beyond the matmul FLOPs is refused.
 * Leaves free: op order and ids, the quantization itself (tests/unit/gpu/test_gemm.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtsim/replay.h"
#include "dtsim/workload.h"
#include "testutil.h"

/* The graph of model and parallel on `gpus` GPUs; extra: more top-level members (", ..."). */
static wl_graph *build_with(const char *model, const char *parallel, const char *extra, int gpus,
                            wl_scenario *sc, cJSON **j)
{
    char text[2048];
    snprintf(text, sizeof text, "{\"topology\": \"x\", \"model\": %s, \"parallel\": %s%s}",
             model, parallel, extra);
    dt_error e;
    dt_error_clear(&e);
    ck_assert_int_eq(js_parse_text(text, strlen(text), "t.json", j, &e), DT_OK);
    js_ctx c = {"t.json", &e};
    ck_assert_msg(wl_scenario_parse(&c, *j, sc) == DT_OK, "%s: %s", e.path, e.msg);
    ck_assert_msg(wl_scenario_resolve(&c, sc, gpus) == DT_OK, "%s: %s", e.path, e.msg);
    return wl_graph_build(sc);
}

static wl_graph *build(const char *model, const char *parallel, int gpus, wl_scenario *sc,
                       cJSON **j)
{
    return build_with(model, parallel, "", gpus, sc, j);
}

#define LLAMA "{\"kind\": \"transformer\", \"layers\": 4, \"hidden\": 4096, \"heads\": 32, " \
              "\"kv_heads\": 8, \"ffn\": 14336, \"mlp\": \"swiglu\", \"seq_len\": 8192, " \
              "\"vocab\": 128256}"
#define GPT "{\"kind\": \"transformer\", \"layers\": 4, \"hidden\": 1024, \"heads\": 16, " \
            "\"seq_len\": 2048, \"vocab\": 50257}"
#define MOE "{\"kind\": \"transformer\", \"layers\": 4, \"hidden\": 2048, \"heads\": 16, " \
            "\"ffn\": 5632, \"mlp\": \"swiglu\", \"experts\": 8, \"top_k\": 2, " \
            "\"seq_len\": 4096, \"vocab\": 32000}"
/* experts narrower than the dense MLP, and a shared expert every token passes through */
#define MOE_SHARED "{\"kind\": \"transformer\", \"layers\": 4, \"hidden\": 2048, \"heads\": 16, " \
                   "\"ffn\": 5632, \"expert_ffn\": 1408, \"shared_experts\": 1, \"mlp\": \"swiglu\", " \
                   "\"experts\": 8, \"top_k\": 2, \"seq_len\": 4096, \"vocab\": 32000}"

static double gemm_flops(const gpu_gemm *g, uint32_t n)
{
    double s = 0;
    for (uint32_t i = 0; i < n; i++) s += 2 * g[i].m * g[i].n * g[i].k * g[i].count;
    return s;
}

START_TEST(layer_shapes_by_hand)
{
    wl_scenario sc;
    cJSON *j;
    wl_graph *g = build(LLAMA, "{\"tp\": 4, \"micro_batch_size\": 2, \"sequence_parallel\": true}",
                        4, &sc, &j);
    gpu_gemm f[WL_LAYER_GEMMS_MAX];
    ck_assert_int_eq(wl_layer_gemms(&sc.model, &sc.plan, f), 4);
    const double want[4][3] = {{16384, 1536, 4096}, /* QKV: (4096 + 2 x 1024) / 4 columns */
                               {16384, 4096, 1024}, /* attention projection: 4096 / 4 rows */
                               {16384, 7168, 4096}, /* up and gate: 2 x 14336 / 4 */
                               {16384, 4096, 3584}}; /* down: 14336 / 4 rows */
    for (int i = 0; i < 4; i++) {
        ck_assert(f[i].m == want[i][0] && f[i].n == want[i][1] && f[i].k == want[i][2]);
        ck_assert(f[i].count == 1 && !f[i].no_fp8); /* the layers' GEMMs run in fp8 */
    }
    gpu_gemm b[2];
    wl_gemm_backward(f[0], b);
    ck_assert(b[0].m == 16384 && b[0].n == 4096 && b[0].k == 1536); /* dX = dY Wᵀ */
    ck_assert(b[1].m == 4096 && b[1].n == 1536 && b[1].k == 16384); /* dW = Xᵀ dY */
    ck_assert(!b[0].no_fp8 && !b[1].no_fp8);
    /* the output layer stays in 16 bits, and so do its gradients */
    gpu_gemm lg = wl_logits_gemm(&sc.model, &sc.plan);
    ck_assert(lg.m == 16384 && lg.n == 128256 / 4.0 && lg.k == 4096 && lg.no_fp8);
    wl_gemm_backward(lg, b);
    ck_assert(b[0].m == 16384 && b[0].n == 4096 && b[0].k == 128256 / 4.0 && b[0].no_fp8);
    ck_assert(b[1].m == 4096 && b[1].n == 128256 / 4.0 && b[1].k == 16384 && b[1].no_fp8);
    wl_graph_destroy(g);
    wl_scenario_free(&sc);
    cJSON_Delete(j);
}
END_TEST

START_TEST(layer_shapes_sum_to_closed_form)
{
    const char *models[4] = {GPT, LLAMA, MOE, MOE_SHARED};
    const char *plans[4] = {"{\"tp\": 1, \"micro_batch_size\": 4}",
                            "{\"tp\": 8, \"micro_batch_size\": 1, \"sequence_parallel\": true}",
                            "{\"tp\": 2, \"micro_batch_size\": 2}", "{\"tp\": 2, \"micro_batch_size\": 2}"};
    const int gpus[4] = {1, 8, 2, 2};
    for (int k = 0; k < 4; k++) {
        wl_scenario sc;
        cJSON *j;
        wl_graph *g = build(models[k], plans[k], gpus[k], &sc, &j);
        gpu_gemm f[WL_LAYER_GEMMS_MAX];
        int n = wl_layer_gemms(&sc.model, &sc.plan, f);
        ck_assert_int_eq(n, k == 3 ? 7 : k == 2 ? 5 : 4); /* MoE: the router too; shared: 2 more */
        wl_layer_cost lc;
        wl_layer_cost_get(&sc.model, &sc.plan, &lc);
        ck_assert_rel(gemm_flops(f, (uint32_t)n), lc.fwd_matmul_flops, 1e-14);
        if (k == 2) { /* 8 experts, each 2 x 4096 x 2 / 8 = 2048 tokens */
            ck_assert(f[3].m == 2048 && f[3].count == 8 && f[4].count == 8);
            ck_assert(f[2].m == 4096 && f[2].n == 8 && f[2].k == 2048); /* router on b s / t */
        }
        if (k == 3) { /* experts of 1408 (fc1 2 x 1408 / 2 columns); the shared one on all 8192 tokens */
            ck_assert(f[3].m == 2048 && f[3].n == 1408 && f[4].k == 704);
            ck_assert(f[5].m == 8192 && f[5].n == 1408 && f[5].count == 1 && f[6].k == 704);
        }
        wl_graph_destroy(g);
        wl_scenario_free(&sc);
        cJSON_Delete(j);
    }
}
END_TEST

/* Every compute op of g with shapes has them summing to its matmul FLOPs; returns how many. */
static int check_graph(const wl_graph *g)
{
    int with = 0;
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const wl_op *o = &g->ops[i];
        if (o->kind != WL_OP_COMPUTE) continue;
        const wl_cost *c = &g->costs[o->arg];
        uint32_t n;
        const gpu_gemm *gs = wl_cost_gemms(g, c, &n);
        if (!n) continue;
        with++;
        ck_assert_rel(gemm_flops(gs, n), c->flops[GPU_OP_MATMUL], 1e-12);
    }
    return with;
}

START_TEST(graph_costs_carry_shapes)
{
    /* pp 2 (the logits on the last stage), full recomputation (forward shapes again in the
     * backward), per-layer backward ops (dp 2 reduces the last microbatch per layer) */
    wl_scenario sc;
    cJSON *j;
    wl_graph *g = build(GPT, "{\"tp\": 2, \"pp\": 2, \"dp\": 2, \"micro_batch_size\": 2, "
                             "\"microbatches\": 4, \"activation_checkpointing\": \"full\"}", 8, &sc, &j);
    ck_assert_int_gt(check_graph(g), 0);
    /* a last-stage backward of one layer with the logits: 4 layer GEMMs forward again, their
     * 8 gradients, the logits' 2 gradients */
    bool seen = false;
    for (uint32_t i = 0; i < g->n_ops && !seen; i++) {
        const wl_op *o = &g->ops[i];
        if (o->kind != WL_OP_COMPUTE || o->layer != 3 || strcmp(g->names[o->name], "backward"))
            continue;
        uint32_t n;
        const gpu_gemm *gs = wl_cost_gemms(g, &g->costs[o->arg], &n);
        if (n != 14) continue;
        ck_assert(gs[12].m == 4096 && gs[12].n == 1024 && gs[12].k == 50257 / 2.0); /* logits dX */
        seen = true;
    }
    ck_assert(seen);
    wl_graph_destroy(g);
    wl_scenario_free(&sc);
    cJSON_Delete(j);
    /* counts beyond 32 bits: 50,000 layers of 100,000 experts in one op (5e9 GEMMs a shape) */
    g = build("{\"kind\": \"transformer\", \"layers\": 50000, \"hidden\": 64, \"heads\": 1, "
              "\"experts\": 100000, \"seq_len\": 8, \"vocab\": 10}", "{\"micro_batch_size\": 1}",
              1, &sc, &j);
    ck_assert_int_gt(check_graph(g), 0);
    wl_graph_destroy(g);
    wl_scenario_free(&sc);
    cJSON_Delete(j);
    /* a synthetic model has no shapes */
    g = build("{\"kind\": \"synthetic\", \"layers\": 2, \"forward_time\": \"1 ms\", "
              "\"backward_time\": \"2 ms\", \"params\": 1e6}", "{\"dp\": 2}", 2, &sc, &j);
    ck_assert_uint_eq(g->n_gemm_sets, 0);
    wl_graph_destroy(g);
    wl_scenario_free(&sc);
    cJSON_Delete(j);
}
END_TEST

/* Two lanes, one GPU each, one forward-layer op each on the same cost with shapes. */
static wl_graph *two_lane_graph(void)
{
    wl_graph *g = wl_graph_create(2, 2, 1);
    g->lane_gpus[0] = 0;
    g->lane_gpus[1] = 1;
    gpu_gemm gs[2] = {{4096, 3072, 8192, 1, 1, false}, {2048, 1536, 4096, 2, 1, false}};
    wl_cost c = {0};
    c.flops[GPU_OP_MATMUL] = gemm_flops(gs, 2);
    c.gemm_set = wl_graph_gemm_set(g, gs, 2);
    uint32_t cost = wl_graph_cost(g, &c);
    for (uint32_t l = 0; l < 2; l++) {
        wl_op o = {.lane = l, .kind = WL_OP_COMPUTE, .stream = WL_STREAM_COMPUTE, .mb = -1,
                   .layer = -1, .arg = cost, .name = (uint16_t)wl_graph_name(g, "forward")};
        wl_graph_op(g, &o, NULL, 0);
    }
    return g;
}

START_TEST(time_per_gpu)
{
    wl_graph *g = two_lane_graph();
    gpu_spec sp[2];
    dt_error e;
    ck_assert_int_eq(gpu_preset("H100-SXM", &sp[0], &e), DT_OK);
    sp[1] = sp[0];
    sp[1].sms = 100; /* other waves: 4 of 100 tiles for 384, 1 of 100 for 96 */
    replay_config cfg = {.n_gpus = 2, .gpus = sp, .record = true};
    replay_result r;
    ck_assert_int_eq(replay_run(g, &cfg, &r, &e), DT_OK);
    const gpu_gemm *gs = g->gemms;
    ck_assert_int_eq(r.op_end[0], gpu_gemm_time(&sp[0], GPU_BF16, gs, 2));
    ck_assert_int_eq(r.op_end[1], gpu_gemm_time(&sp[1], GPU_BF16, gs, 2));
    ck_assert_int_ne(r.op_end[0], r.op_end[1]);
    replay_result_free(&r);
    /* a program with its own op_time and no gemm_time replaces the compute model: it sees
     * the matmul FLOPs */
    cfg.op_time = gpu_op_time;
    ck_assert_int_eq(replay_run(g, &cfg, &r, &e), DT_OK);
    sim_time_t flat = gpu_op_time(&sp[0], GPU_OP_MATMUL, GPU_BF16, g->costs[0].flops[GPU_OP_MATMUL], 0);
    ck_assert_int_eq(r.op_end[0], flat);
    ck_assert_int_eq(r.op_end[1], flat);
    replay_result_free(&r);
    wl_graph_destroy(g);
}
END_TEST

/* A GPT of h 1024 at s 2048 with a 32,768 vocabulary, b 1, on one H100 in fp8: the one-stage
 * forward op holds 2 layers' GEMMs and the logits (2048, 32768, 1024). Both the logits and QKV
 * (2048, 3072, 1024) fill 32/33 of their waves (2048 tiles of 256 x 128 in 16 waves of 132;
 * QKV best in 128 x 128 tiles, 384 in 3 waves), so by hand: logits 2·2048·32768·1024 /
 * (0.7 x 989.5 TFLOP/s x 32/33) = 204,625,598.8 ps at the bf16 peak (102,312,799.4 at fp8's
 * 1,979), QKV 9,591,824.8 ps at fp8's (19,183,649.7 at bf16's). */
START_TEST(fp8_logits_at_bf16)
{
    wl_scenario sc;
    cJSON *j;
    wl_graph *g = build_with("{\"kind\": \"transformer\", \"layers\": 2, \"hidden\": 1024, "
                             "\"heads\": 16, \"seq_len\": 2048, \"vocab\": 32768}",
                             "{\"micro_batch_size\": 1}", ", \"precision\": \"fp8\"", 1, &sc, &j);
    ck_assert_int_eq(g->precision, GPU_FP8);
    gpu_spec h;
    dt_error e;
    ck_assert_int_eq(gpu_preset("H100-SXM", &h, &e), DT_OK);
    int checked = 0;
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const wl_op *o = &g->ops[i];
        if (o->kind != WL_OP_COMPUTE || strcmp(g->names[o->name], "forward")) continue;
        uint32_t n;
        const gpu_gemm *gs = wl_cost_gemms(g, &g->costs[o->arg], &n);
        /* QKV, projection, MLP up and down (2 layers each); the logits once */
        ck_assert_uint_eq(n, 4 + 1);
        const gpu_gemm *lg = &gs[n - 1], *qkv = &gs[0];
        ck_assert(lg->m == 2048 && lg->n == 32768 && lg->k == 1024 && lg->count == 1 && lg->no_fp8);
        ck_assert(qkv->m == 2048 && qkv->n == 3072 && qkv->k == 1024 && qkv->count == 2 &&
                  !qkv->no_fp8);
        ck_assert_int_eq(gpu_gemm_time(&h, GPU_FP8, lg, 1), 204625599LL);
        gpu_gemm one = *qkv;
        one.count = 1;
        ck_assert_int_eq(gpu_gemm_time(&h, GPU_FP8, &one, 1), 9591825LL);
        /* the op's GEMMs: the layers' at fp8, the logits at bf16, rounded once */
        sim_time_t all = gpu_gemm_time(&h, GPU_FP8, gs, (int)n);
        sim_time_t layers = gpu_gemm_time(&h, GPU_FP8, gs, (int)n - 1);
        ck_assert_int_le(llabs(all - layers - 204625599LL), 1);
        /* and the op's time is its GEMMs' plus its other classes (attention at bf16) */
        wl_cost rest = g->costs[o->arg];
        rest.gemm_set = 0;
        rest.flops[GPU_OP_MATMUL] = rest.matmul_no_fp8 = 0;
        ck_assert_int_eq(replay_op_compute_time(g, &g->costs[o->arg], &h, gpu_op_time, gpu_gemm_time),
                         sim_time_add(all, replay_op_compute_time(g, &rest, &h, gpu_op_time, NULL)));
        checked++;
    }
    ck_assert_int_eq(checked, 1);
    /* the backward: the logits' data and weight gradients, 2 x the forward's time at bf16 */
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const wl_op *o = &g->ops[i];
        if (o->kind != WL_OP_COMPUTE || strcmp(g->names[o->name], "backward")) continue;
        uint32_t n;
        const gpu_gemm *gs = wl_cost_gemms(g, &g->costs[o->arg], &n);
        if (n == 0 || !gs[n - 1].no_fp8) continue;
        ck_assert_uint_eq(n, 2 * 4 + 2); /* each layer GEMM's two gradients; the logits' */
        ck_assert(gs[n - 2].no_fp8);
        for (uint32_t k = 0; k + 2 < n; k++) ck_assert(!gs[k].no_fp8);
        ck_assert_int_le(llabs(gpu_gemm_time(&h, GPU_FP8, &gs[n - 2], 2) - 2 * 204625599LL), 2);
        checked++;
    }
    ck_assert_int_eq(checked, 2);
    wl_graph_destroy(g);
    wl_scenario_free(&sc);
    cJSON_Delete(j);
}
END_TEST

/* The matmul class of cost c on spec at prec: its time less that of the same cost without it. */
static sim_time_t matmul_part(const wl_cost *c, const gpu_spec *spec, gpu_precision prec)
{
    wl_cost rest = *c;
    rest.gemm_set = 0;
    rest.flops[GPU_OP_MATMUL] = rest.matmul_no_fp8 = 0;
    return wl_cost_time(c, spec, prec, gpu_op_time) - wl_cost_time(&rest, spec, prec, gpu_op_time);
}

/* Costs without GEMM shapes (speed balancing, federated clients: wl_layer_op_cost; a graph's op
 * under an op_time without gemm_time; MoE ops under ep) time the matmul class from its FLOPs:
 * under fp8 the logits' share at the bf16 peak there too. By hand, the GPT of fp8_logits_at_bf16
 * on one H100 (peaks 989.5 and 1979 TFLOP/s, matmul efficiency 0.7): one layer's GEMMs
 * 2·2048·12·1024² = 51,539,607,552 FLOPs, the logits 2·2048·32768·1024 = 137,438,953,472.
 *   bf16: 188,978,561,024 / 692.65e12 = 272,834,131 ps (rounded up)
 *   fp8:  51,539,607,552 / 1385.3e12 = 37,204,655 ps + 137,438,953,472 / 692.65e12
 *         = 198,424,823 ps: 235,629,478 ps (all at fp8 it was 136,417,066)
 *   backward (data and weight gradients, twice each): 74,409,309 + 396,849,646 = 471,258,955
 *   at fp8, 545,668,263 at bf16. */
START_TEST(fp8_logits_at_bf16_flat)
{
    const double FL = 51539607552.0, FV = 137438953472.0;
    gpu_spec h;
    dt_error e;
    ck_assert_int_eq(gpu_preset("H100-SXM", &h, &e), DT_OK);
    const char *prec[2] = {", \"precision\": \"fp8\"", ", \"precision\": \"bf16\""};
    for (int i = 0; i < 2; i++) {
        wl_scenario sc;
        cJSON *j;
        wl_graph *g = build_with("{\"kind\": \"transformer\", \"layers\": 2, \"hidden\": 1024, "
                                 "\"heads\": 16, \"seq_len\": 2048, \"vocab\": 32768}",
                                 "{\"micro_batch_size\": 1}", prec[i], 1, &sc, &j);
        gpu_precision gp = i == 0 ? GPU_FP8 : GPU_BF16;
        ck_assert_int_eq(g->precision, gp);
        wl_cost f, b;
        wl_layer_op_cost(&sc, &sc.plan, false, false, true, 1, &f);
        wl_layer_op_cost(&sc, &sc.plan, true, false, true, 1, &b);
        ck_assert(f.gemm_set == 0 && b.gemm_set == 0);
        ck_assert(f.flops[GPU_OP_MATMUL] == FL + FV && b.flops[GPU_OP_MATMUL] == 2 * (FL + FV));
        ck_assert(f.matmul_no_fp8 == (i == 0 ? FV : 0) && b.matmul_no_fp8 == (i == 0 ? 2 * FV : 0));
        ck_assert_int_eq(matmul_part(&f, &h, gp), i == 0 ? 235629478LL : 272834131LL);
        ck_assert_int_eq(matmul_part(&b, &h, gp), i == 0 ? 471258955LL : 545668263LL);
        /* the graph's forward (both layers and the logits) under an op_time without gemm_time:
         * the same split, 2 x 37,204,654.26 rounded once and the logits' 198,424,823; bf16
         * (2 x 51,539,607,552 + 137,438,953,472) / 692.65e12 = 347,243,440 */
        int checked = 0;
        for (uint32_t k = 0; k < g->n_ops; k++) {
            const wl_op *o = &g->ops[k];
            if (o->kind != WL_OP_COMPUTE || strcmp(g->names[o->name], "forward")) continue;
            const wl_cost *c = &g->costs[o->arg];
            wl_cost rest = *c;
            rest.gemm_set = 0;
            rest.flops[GPU_OP_MATMUL] = rest.matmul_no_fp8 = 0;
            ck_assert_int_eq(replay_op_compute_time(g, c, &h, gpu_op_time, NULL) -
                                 replay_op_compute_time(g, &rest, &h, gpu_op_time, NULL),
                             i == 0 ? 74409309LL + 198424823LL : 347243440LL);
            checked++;
        }
        ck_assert_int_eq(checked, 1);
        wl_graph_destroy(g);
        wl_scenario_free(&sc);
        cJSON_Delete(j);
    }
    /* an MoE op under expert parallelism has no shapes even with a graph and the run's
     * gemm_time: its logits (2·4096·32000·2048 FLOPs forward) at bf16, the rest at fp8 */
    wl_scenario sc;
    cJSON *j;
    wl_graph *g = build_with(MOE, "{\"ep\": 2, \"micro_batch_size\": 1}",
                             ", \"precision\": \"fp8\"", 2, &sc, &j);
    int checked = 0;
    for (uint32_t k = 0; k < g->n_ops; k++) {
        const wl_op *o = &g->ops[k];
        const wl_cost *c = &g->costs[o->arg];
        if (o->kind != WL_OP_COMPUTE || strcmp(g->names[o->name], "forward") ||
            !(c->matmul_no_fp8 > 0))
            continue;
        ck_assert(c->gemm_set == 0 && c->matmul_no_fp8 == 2.0 * 4096 * 32000 * 2048);
        wl_cost rest = *c;
        rest.flops[GPU_OP_MATMUL] = rest.matmul_no_fp8 = 0;
        ck_assert_int_eq(replay_op_compute_time(g, c, &h, gpu_op_time, gpu_gemm_time) -
                             replay_op_compute_time(g, &rest, &h, gpu_op_time, gpu_gemm_time),
                         gpu_op_time(&h, GPU_OP_MATMUL, GPU_FP8,
                                     c->flops[GPU_OP_MATMUL] - c->matmul_no_fp8, 0) +
                             gpu_op_time(&h, GPU_OP_MATMUL, GPU_BF16, c->matmul_no_fp8, 0));
        checked++;
    }
    ck_assert_int_ge(checked, 1);
    wl_graph_destroy(g);
    wl_scenario_free(&sc);
    cJSON_Delete(j);
}
END_TEST

static char *write_mem(const wl_graph *g, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    trace_env env;
    memset(&env, 0, sizeof env);
    dt_error e;
    ck_assert_int_eq(trace_write(f, g, &env, &e), DT_OK);
    fclose(f);
    return buf;
}

static int read_text(const char *text, wl_graph **g, dt_error *e)
{
    cJSON *j = NULL;
    dt_error_clear(e);
    ck_assert_int_eq(js_parse_text(text, strlen(text), "t.json", &j, e), DT_OK);
    js_ctx c = {"t.json", e};
    trace_env env;
    int rc = trace_read(&c, j, g, &env);
    if (rc == DT_OK) trace_env_free(&env);
    cJSON_Delete(j);
    return rc;
}

START_TEST(trace_identity)
{
    /* bf16, then fp8 (whose last-stage costs carry the logits' matmul_no_fp8) */
    const char *prec[2] = {"", ", \"precision\": \"fp8\""};
    for (int p = 0; p < 2; p++) {
        wl_scenario sc;
        cJSON *j;
        wl_graph *g = build_with(LLAMA, "{\"tp\": 2, \"pp\": 2, \"micro_batch_size\": 1, "
                                        "\"microbatches\": 2}", prec[p], 4, &sc, &j);
        size_t n1, n2;
        char *t1 = write_mem(g, &n1);
        ck_assert(strstr(t1, "\"gemm_sets\"") && strstr(t1, "\"gemms\": 0"));
        /* the logits' GEMMs carry their 16 bits (written only when set) */
        ck_assert(strstr(t1, "\"no_fp8\": true") && !strstr(t1, "\"no_fp8\": false"));
        ck_assert((strstr(t1, "\"matmul_no_fp8\"") != NULL) == (p == 1));
        wl_graph *back = NULL;
        dt_error e;
        ck_assert_msg(read_text(t1, &back, &e) == DT_OK, "%s: %s", e.path, e.msg);
        ck_assert_uint_eq(back->n_gemm_sets, g->n_gemm_sets);
        ck_assert_uint_eq(back->n_gemms, g->n_gemms);
        for (uint32_t i = 0; i < g->n_gemms; i++) ck_assert(back->gemms[i].no_fp8 == g->gemms[i].no_fp8);
        ck_assert_uint_eq(back->n_costs, g->n_costs);
        for (uint32_t i = 0; i < g->n_costs; i++)
            ck_assert(back->costs[i].matmul_no_fp8 == g->costs[i].matmul_no_fp8);
        ck_assert_int_eq(check_graph(back), check_graph(g));
        char *t2 = write_mem(back, &n2);
        ck_assert_uint_eq(n1, n2);
        ck_assert(memcmp(t1, t2, n1) == 0);
        free(t1);
        free(t2);
        wl_graph_destroy(back);
        wl_graph_destroy(g);
        wl_scenario_free(&sc);
        cJSON_Delete(j);
    }
}
END_TEST

static void bad(const char *sets, const char *cost, const char *path, const char *needle)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"format\": \"dtsim-trace\", \"version\": 1, \"gpus\": 1, %s%s \"costs\": [%s],"
             " \"ops\": [{\"gpu\": 0, \"kind\": \"compute\", \"cost\": 0}]}",
             sets, sets[0] ? "," : "", cost);
    wl_graph *g = NULL;
    dt_error e;
    ck_assert_msg(read_text(text, &g, &e) == DT_EINPUT, "accepted: %s", text);
    ck_assert_msg(!strcmp(e.path, path), "path '%s', expected '%s' (%s)", e.path, path, e.msg);
    ck_assert_msg(strstr(e.msg, needle) != NULL, "message '%s' lacks '%s'", e.msg, needle);
}

START_TEST(trace_errors)
{
    const char *ok = "\"gemm_sets\": [[{\"m\": 128, \"n\": 256, \"k\": 64, \"count\": 2}]]";
    /* the matmul FLOPs are the shapes' when left out */
    char text[1024];
    snprintf(text, sizeof text,
             "{\"format\": \"dtsim-trace\", \"version\": 1, \"gpus\": 1, %s, \"costs\": "
             "[{\"gemms\": 0}], \"ops\": [{\"gpu\": 0, \"kind\": \"compute\", \"cost\": 0}]}", ok);
    wl_graph *g = NULL;
    dt_error e;
    ck_assert_msg(read_text(text, &g, &e) == DT_OK, "%s: %s", e.path, e.msg);
    ck_assert(g->costs[0].flops[GPU_OP_MATMUL] == 2.0 * 2 * 128 * 256 * 64);
    wl_graph_destroy(g);
    bad("", "{\"gemms\": 0}", "costs[0].gemms", "no \"gemm_sets\"");
    bad(ok, "{\"gemms\": 1}", "costs[0].gemms", "from 0 to 0");
    bad(ok, "{\"gemms\": 0, \"flops\": {\"matmul\": 5}}", "costs[0].flops.matmul", "sum to");
    bad("\"gemm_sets\": [[{\"m\": 0, \"n\": 1, \"k\": 1}]]", "{}", "gemm_sets[0][0].m", "positive");
    bad("\"gemm_sets\": [[{\"m\": 1, \"n\": 1, \"k\": 1, \"count\": 0}]]", "{}",
        "gemm_sets[0][0].count", "1");
    bad("\"gemm_sets\": [[{\"m\": 1, \"n\": 1, \"kk\": 1}]]", "{}", "gemm_sets[0][0].kk", "k");
    bad("\"gemm_sets\": [[]]", "{}", "gemm_sets[0]", "1 to");
    /* TP overlap's drained reduce-scatters: a count */
    bad("", "{\"inlane_drain\": -1}", "costs[0].inlane_drain", "0");
    /* an in-lane collective issued beside a GEMM: a shape of positive dimensions, nothing else */
    bad("", "{\"inlane\": [{\"op\": \"allreduce\", \"bytes\": 8, \"under\": {\"m\": 0, \"n\": 1, \"k\": 1}}]}",
        "costs[0].inlane[0].under.m", "positive");
    bad("", "{\"inlane\": [{\"op\": \"allreduce\", \"bytes\": 8, \"under\": {\"m\": 1, \"n\": 1, \"k\": 1, \"count\": 2}}]}",
        "costs[0].inlane[0].under.count", "");
    bad("", "{\"inlane\": [{\"op\": \"allreduce\", \"bytes\": 8, \"under\": 3}]}",
        "costs[0].inlane[0].under", "");
    /* a batched call's size divides the GEMMs it launches */
    bad("\"gemm_sets\": [[{\"m\": 1, \"n\": 1, \"k\": 1, \"count\": 4, \"batch\": 3}]]", "{}",
        "gemm_sets[0][0].batch", "divisor of count (4), found 3");
    bad("\"gemm_sets\": [[{\"m\": 1, \"n\": 1, \"k\": 1, \"batch\": 0}]]", "{}",
        "gemm_sets[0][0].batch", "1");
    bad("\"gemm_sets\": {}", "{}", "gemm_sets", "array");
    bad("\"gemm_sets\": [[{\"m\": 1, \"n\": 1, \"k\": 1, \"no_fp8\": 1}]]", "{}",
        "gemm_sets[0][0].no_fp8", "expected true or false");
    /* the 16-bit share of the matmul FLOPs is part of them */
    bad("", "{\"flops\": {\"matmul\": 5}, \"matmul_no_fp8\": 6}", "costs[0].matmul_no_fp8",
        "more than the cost's matmul FLOPs (5)");
    bad("", "{\"matmul_no_fp8\": -1}", "costs[0].matmul_no_fp8", "non-negative");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("gemm_shapes");
    TCase *tc = tcase_create("shapes");
    tcase_add_test(tc, layer_shapes_by_hand);
    tcase_add_test(tc, layer_shapes_sum_to_closed_form);
    tcase_add_test(tc, graph_costs_carry_shapes);
    tcase_add_test(tc, time_per_gpu);
    tcase_add_test(tc, fp8_logits_at_bf16);
    tcase_add_test(tc, fp8_logits_at_bf16_flat);
    tcase_add_test(tc, trace_identity);
    tcase_add_test(tc, trace_errors);
    suite_add_tcase(s, tc);
    return dt_run_suite(s);
}
