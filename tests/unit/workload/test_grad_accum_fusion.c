/* test_grad_accum_fusion.c - framework.gradient_accumulation_fusion, Megatron's
 * --no-gradient-accumulation-fusion (docs/workloads.md, "Framework behaviour").
 * Pins down, by hand on a GPT layer (h 1024, 16 heads, f 4h with GeLU and biases, s 512, b 1,
 * tp 2 without sequence parallelism, bf16, megatron preset): with the fusion (the default) a
 * layer's backward moves only its own elementwise kernels, per token 18eh + 2h whole on every
 * TP rank and 4ef split over t (docs/workloads.md, "Elementwise traffic of a layer"):
 * 512 x (36,864 + 2,048 + 16,384) = 28,311,552 B; without it the DDP hook's main_grad.add_
 * over the layer's linear weights on the rank, 12h^2 / t = 6,291,456 elements, each read in
 * bf16 (2) and its fp32 main_grad read and written (4 + 4): 62,914,560 B more. On an H100
 * (3.35 TB/s at memory_eff 0.8: 2.68 TB/s) the elementwise class of that backward takes
 * 10.564 us with the fusion and 34.040 us without: 23.476 us more per layer and microbatch.
 * Also: the output layer's V/t x h weight takes the same 10 B per element on the last stage
 * when untied; tied on one stage (pp 1) the embedding's one hook covers it and the
 * zero_out_wgrad torch.zeros goes (20 -> 18 B per element); every microbatch's backward carries
 * it; fp16 (Megatron-LM of 2022: fp16 main_grad) 6 B; an MoE layer's local experts count, its
 * router does not; false under generic or fsdp is refused. Leaves free: op ids, other classes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dtsim/gpu.h"
#include "dtsim/workload.h"
#include "wl_testutil.h"

#define MODEL(tied)                                                                             \
    "\"model\": {\"kind\": \"transformer\", \"layers\": 4, \"hidden\": 1024, \"heads\": 16,"     \
    " \"seq_len\": 512, \"vocab\": 32000, \"tied_embeddings\": " tied "}"

static void load_fw(const char *tied_model, const char *par, const char *prec, const char *fusion,
                    int gpus)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"topology\": \"x\", %s, \"parallel\": {%s}, \"precision\": \"%s\","
             " \"framework\": {\"preset\": \"megatron\"%s}}",
             tied_model, par, prec, fusion);
    load(text, gpus);
}

static const char *const UNFUSED = ", \"gradient_accumulation_fusion\": false";

START_TEST(one_layer_by_hand)
{
    gpu_spec h100;
    dt_error err;
    ck_assert_int_eq(gpu_preset("H100-SXM", &h100, &err), DT_OK);
    ck_assert_double_eq(h100.hbm_bw * h100.memory_eff, 2.68e12); /* the rate used by hand */
    double bytes[2];
    sim_time_t time[2];
    for (int k = 0; k < 2; k++) {
        load_fw(MODEL("false"), "\"tp\": 2, \"pp\": 2, \"microbatches\": 2", "bf16",
                k ? UNFUSED : "", 4);
        ck_assert(sc.plan.fw.grad_accum_unfused == (k == 1));
        ck_assert_double_eq(wl_wgrad_hook_bytes(&sc.plan), k ? 10 : 0);
        wl_cost c;
        wl_layer_op_cost(&sc, &sc.plan, true, false, false, 1, &c); /* a middle layer */
        bytes[k] = c.bytes[GPU_OP_ELEMENTWISE];
        time[k] = wl_cost_time(&c, &h100, GPU_BF16, gpu_op_time);
        /* the forward is not touched */
        wl_cost f;
        wl_layer_op_cost(&sc, &sc.plan, false, false, false, 1, &f);
        ck_assert_double_eq(f.bytes[GPU_OP_ELEMENTWISE], 512.0 * (20 * 1024 + 2 * 1024 + 2 * 2 * 4096 / 2));
        unload();
    }
    ck_assert_double_eq(bytes[0], 28311552);
    ck_assert_double_eq(bytes[1], 28311552 + 62914560);
    /* only the elementwise class moved: its roofline time, rounded up to whole picoseconds */
    sim_time_t with = (sim_time_t)ceil(28311552 / 2.68e12 * 1e12);
    sim_time_t without = (sim_time_t)ceil((28311552 + 62914560) / 2.68e12 * 1e12);
    ck_assert_int_eq(with, 10564012);
    ck_assert_int_eq(without, 34039595); /* 34,039,594.03 ps */
    /* the op's time is the sum of its classes' (other classes unchanged), each rounded on its
     * own: the difference within a picosecond of the hand one, 23.476 us */
    ck_assert_int_le(llabs((long long)(time[1] - time[0]) - (long long)(without - with)), 1);
    ck_assert_int_gt(time[1] - time[0], 23475000);
}
END_TEST

/* The same plan's step graph (pp 2, untied, 2 microbatches): every microbatch's backward of a
 * stage carries its 2 layers' hooks, and the last stage's also the output layer's 32,000 / 2 x
 * 1024 weight at 10 B per element (163,840,000 B); the first stage's embedding keeps its
 * 2e + 2 x 4 = 12 B per element either way. */
START_TEST(every_microbatch_in_graph)
{
    double sum[2][2] = {{0}};
    int seen[2][2] = {{0}};
    for (int k = 0; k < 2; k++) {
        load_fw(MODEL("false"), "\"tp\": 2, \"pp\": 2, \"microbatches\": 2", "bf16",
                k ? UNFUSED : "", 4);
        ck_assert_double_eq(wl_embedding_wgrad_bytes(&sc.plan, false), 12);
        wl_graph *g = wl_graph_build(&sc);
        for (uint32_t i = 0; i < g->n_ops; i++) {
            const wl_op *o = &g->ops[i];
            if (o->kind != WL_OP_COMPUTE || o->lane > 1 || strcmp(g->names[o->name], "backward"))
                continue;
            ck_assert_int_lt(o->mb, 2);
            sum[k][o->lane] += g->costs[o->arg].bytes[GPU_OP_ELEMENTWISE];
            seen[k][o->lane] |= 1 << o->mb;
        }
        wl_graph_destroy(g);
        unload();
    }
    for (int st = 0; st < 2; st++) {
        ck_assert_int_eq(seen[0][st], 3);
        ck_assert_int_eq(seen[1][st], 3);
    }
    ck_assert_double_eq(sum[1][0] - sum[0][0], 2 * 2 * 62914560.0);
    ck_assert_double_eq(sum[1][1] - sum[0][1], 2 * (2 * 62914560.0 + 16000.0 * 1024 * 10));
}
END_TEST

/* Tied on one stage (pp 1, tp 1): the embedding's V x h gradient per element is the zero-fill
 * (e), autograd's sum with the output layer's (2e + e) and the hook (e + 8): 18 B without the
 * fusion, where the fused path adds the output layer's torch.zeros (e): 20. No separate output
 * layer charge; the layers' 4 x 12h^2 elements at 10 B. */
START_TEST(tied_one_stage)
{
    double bwd[2];
    for (int k = 0; k < 2; k++) {
        load_fw(MODEL("true"), "\"microbatches\": 1", "bf16", k ? UNFUSED : "", 1);
        ck_assert_double_eq(wl_embedding_wgrad_bytes(&sc.plan, true), k ? 18 : 20);
        wl_cost c;
        wl_layer_op_cost(&sc, &sc.plan, true, true, true, 4, &c);
        bwd[k] = c.bytes[GPU_OP_ELEMENTWISE];
        unload();
    }
    ck_assert_double_eq(bwd[1] - bwd[0], 4 * 12.0 * 1024 * 1024 * 10 - 32000.0 * 1024 * 2);
}
END_TEST

/* fp16 under megatron is Megatron-LM of 2022, whose main_grad is fp16 (reduce_dtype the
 * training precision): the hook reads 2 and reads and writes 2 + 2: 6 B. bf16 with
 * reduce_dtype bf16 (--grad-reduce-in-bf16) likewise 6. */
START_TEST(main_grad_dtype)
{
    load_fw(MODEL("false"), "\"microbatches\": 1", "fp16", UNFUSED, 1);
    ck_assert_double_eq(wl_wgrad_hook_bytes(&sc.plan), 6);
    unload();
    load_fw(MODEL("false"), "\"microbatches\": 1", "bf16",
            ", \"gradient_accumulation_fusion\": false, \"reduce_dtype\": \"bf16\"", 1);
    ck_assert_double_eq(wl_wgrad_hook_bytes(&sc.plan), 6);
    unload();
    load_fw(MODEL("false"), "\"microbatches\": 1", "bf16", ", \"gradient_accumulation_fusion\": true", 1);
    ck_assert_double_eq(wl_wgrad_hook_bytes(&sc.plan), 0);
    unload();
}
END_TEST

/* An MoE layer (4 experts of f 4h, top 2, ep 2, tp 2): the rank's weights are the attention's
 * 4h^2 and 4 / 2 experts' 8h^2 each, / t: 10 x 20h^2 / 2 = 100h^2 B; its router (h x E, a torch
 * parameter, not a fused linear) is not among them. A dense layer's 10 x 12h^2 / 2. */
START_TEST(moe_local_experts)
{
    load("{\"topology\": \"x\", \"model\": {\"kind\": \"transformer\", \"layers\": 2,"
         " \"hidden\": 1024, \"heads\": 16, \"seq_len\": 512, \"vocab\": 32000, \"experts\": 4,"
         " \"top_k\": 2}, \"parallel\": {\"tp\": 2, \"dp\": 2, \"ep\": 2}, \"precision\": \"bf16\","
         " \"framework\": {\"preset\": \"megatron\", \"gradient_accumulation_fusion\": false}}", 4);
    wl_layer_cost lc;
    wl_layer_cost_get(&sc.model, &sc.plan, &lc);
    double h2 = 1024.0 * 1024;
    ck_assert_double_eq(lc.wgrad_hook_bytes, 100 * h2);
    ck_assert_double_eq(lc.dense_wgrad_hook_bytes, 60 * h2);
    unload();
}
END_TEST

START_TEST(bad_input)
{
    load_refused("{\"topology\": \"x\", " MODEL("false") ", \"precision\": \"bf16\","
                 " \"framework\": {\"preset\": \"fsdp\", \"gradient_accumulation_fusion\": false}}",
                 1, "framework.gradient_accumulation_fusion", "megatron preset");
    load_refused("{\"topology\": \"x\", " MODEL("false") ", \"framework\":"
                 " {\"gradient_accumulation_fusion\": false}}",
                 1, "framework.gradient_accumulation_fusion", "\"generic\"");
    load_refused("{\"topology\": \"x\", " MODEL("false") ", \"framework\": {\"preset\":"
                 " \"megatron\", \"gradient_accumulation_fusion\": 0}}",
                 1, "framework.gradient_accumulation_fusion", "");
    /* true is what every preset does already: accepted */
    load("{\"topology\": \"x\", " MODEL("false") ", \"framework\": {\"preset\": \"fsdp\","
         " \"gradient_accumulation_fusion\": true}}", 1);
    ck_assert_double_eq(wl_wgrad_hook_bytes(&sc.plan), 0);
    unload();
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("grad_accum_fusion");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, one_layer_by_hand);
    tcase_add_test(tc, every_microbatch_in_graph);
    tcase_add_test(tc, tied_one_stage);
    tcase_add_test(tc, main_grad_dtype);
    tcase_add_test(tc, moe_local_experts);
    tcase_add_test(tc, bad_input);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return dt_run_suite(suite());
}
