/* test_precision.c - what a precision means per op class, and the elementwise traffic that TP
 * does not split.
 * Pins down: fp8 runs only matmul FLOPs at the fp8 peak (Transformer Engine), attention FLOPs
 * at the bf16 peak (hand-computed op time on an H100); tf32 stores 4-byte values (activations
 * twice the 16-bit formulas, model states 4 + 4 + 8 bytes per parameter with Adam, no master
 * copy) and computes at the TF32 peak; a scenario accepts "tf32"; the layer's elementwise bytes
 * are 34·s·b·h·e/t with sequence parallelism and (10 + 24/t)·s·b·h·e without (Korthikanti's
 * replicated layernorms and dropouts). Leaves free: other classes (test_wl_replay). */
#include <string.h>

#include "dtsim/replay.h"
#include "dtsim/workload.h"
#include "testutil.h"

/* One op with matmul and attention FLOPs on one H100, replayed at `prec`. */
static sim_time_t one_op(gpu_precision prec, double mm, double attn)
{
    wl_graph *g = wl_graph_create(1, 1, 1);
    g->lane_gpus[0] = 0;
    g->precision = prec;
    wl_cost c = {0};
    c.flops[GPU_OP_MATMUL] = mm;
    c.flops[GPU_OP_ATTENTION] = attn;
    uint32_t cost = wl_graph_cost(g, &c);
    wl_op o = {.lane = 0, .kind = WL_OP_COMPUTE, .stream = WL_STREAM_COMPUTE,
               .name = (uint16_t)wl_graph_name(g, "forward"), .mb = 0, .layer = 0, .arg = cost};
    wl_graph_op(g, &o, NULL, 0);
    gpu_spec h100;
    dt_error e;
    dt_error_clear(&e);
    ck_assert_int_eq(gpu_preset("H100-SXM", &h100, &e), DT_OK);
    replay_config cfg = {.n_gpus = 1, .gpus = &h100};
    replay_result r;
    ck_assert_int_eq(replay_run(g, &cfg, &r, &e), DT_OK);
    replay_result_free(&r);
    wl_graph_destroy(g);
    return r.step_time;
}

START_TEST(fp8_only_gemms)
{
    gpu_spec h;
    dt_error e;
    dt_error_clear(&e);
    ck_assert_int_eq(gpu_preset("H100-SXM", &h, &e), DT_OK);
    double mm = 1e15, attn = 2e14;
    double want = mm / (h.peak_flops[GPU_FP8] * h.compute_eff[GPU_OP_MATMUL]) +
                  attn / (h.peak_flops[GPU_BF16] * h.compute_eff[GPU_OP_ATTENTION]);
    /* 1e15 / (1979e12 x 0.7) + 2e14 / (989.5e12 x 0.5) = 0.722 + 0.404 s */
    ck_assert_rel((double)one_op(GPU_FP8, mm, attn) / SIM_S, want, 1e-9);
    double bf16 = (mm / h.compute_eff[GPU_OP_MATMUL] + attn / h.compute_eff[GPU_OP_ATTENTION]) /
                  h.peak_flops[GPU_BF16];
    ck_assert_rel((double)one_op(GPU_BF16, mm, attn) / SIM_S, bf16, 1e-9);
}
END_TEST

START_TEST(tf32)
{
    ck_assert_double_eq(wl_precision_bytes(WL_TF32), 4);
    ck_assert_int_eq(wl_gpu_precision(WL_TF32), GPU_TF32);
    double pa, gr, op;
    mem_model_states(1e9, 1, 0, WL_TF32, WL_ADAM, &pa, &gr, &op);
    ck_assert(pa == 4e9 && gr == 4e9 && op == 8e9);
    const char *text = "{\"topology\": \"x\", \"model\": {\"kind\": \"transformer\", \"layers\": 2, "
                       "\"hidden\": 1024, \"heads\": 16, \"seq_len\": 512, \"vocab\": 32000}, "
                       "\"precision\": \"tf32\"}";
    cJSON *j = NULL;
    dt_error err;
    dt_error_clear(&err);
    ck_assert_int_eq(js_parse_text(text, strlen(text), "t.json", &j, &err), DT_OK);
    js_ctx c = {"t.json", &err};
    wl_scenario sc;
    ck_assert_int_eq(wl_scenario_parse(&c, j, &sc), DT_OK);
    ck_assert_int_eq(sc.plan.precision, WL_TF32);
    /* activations: the 16-bit formula x 2 (flash attention: 34 s b h) */
    ck_assert_rel(mem_activation_per_layer(&sc.model, &sc.plan), 2 * 34 * 512 * 1024.0, 1e-12);
    wl_scenario_free(&sc);
    cJSON_Delete(j);
}
END_TEST

START_TEST(elementwise_replicated_without_sp)
{
    wl_model m = {.kind = WL_TRANSFORMER, .layers = 8, .hidden = 4096, .heads = 32,
                  .seq_len = 2048, .vocab = 51200, .ffn = 4 * 4096.0, .kv_heads = 32,
                  .experts = 1, .top_k = 1, .mlp = WL_MLP_GELU, .tied_embeddings = true};
    wl_plan p = {.dp = 1, .tp = 8, .pp = 1, .virtual_stages = 1, .microbatches = 1,
                 .micro_batch_size = 1, .precision = WL_BF16};
    double sbh = 2048 * 4096.0, e = 2;
    wl_layer_cost lc;
    wl_layer_cost_get(&m, &p, &lc);
    ck_assert_rel(lc.fwd_elem_bytes, 13 * sbh * e, 1e-15); /* 10 + 24/8 */
    p.sequence_parallel = true;
    wl_layer_cost_get(&m, &p, &lc);
    ck_assert_rel(lc.fwd_elem_bytes, 34.0 / 8 * sbh * e, 1e-15);
    p.tp = 1;
    p.sequence_parallel = false;
    wl_layer_cost_get(&m, &p, &lc);
    ck_assert_rel(lc.fwd_elem_bytes, 34 * sbh * e, 1e-15);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("precision");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, fp8_only_gemms);
    tcase_add_test(tc, tf32);
    tcase_add_test(tc, elementwise_replicated_without_sp);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return dt_run_suite(suite()); }
