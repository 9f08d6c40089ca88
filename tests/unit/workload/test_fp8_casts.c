/* test_fp8_casts.c - Transformer Engine's FP8 casts and transposes of one layer, against the
 * kernel-by-kernel hand counts of docs/workloads.md ("FP8 casts and transposes").
 * Pins down (bytes per layer and microbatch, e = 2, fp8 elements of 1 byte, T tokens):
 *   the megatron preset (TE LayerNormLinear for QKV and MLP up, Linear for the projection and
 *     MLP down), a Llama-7B layer (h 4096, MHA, SwiGLU f 11008, no biases, no dropout):
 *     tp 1: forward T (2h + 4f) on top of the 16-bit count (the two input casts with their
 *     transposes 4q + 4f, the norms writing fp8: -2h), backward T (24h + 8f) (four output
 *     gradients cast and transposed: 4 qkv + 4h + 8f + 4h; the two norm outputs transposed: 4h);
 *     tp 2 with sequence parallelism: forward T (h/2 + 3f/2), backward T (18h + 5f);
 *     plus the amax and scale update, (8 x 1024 + 8) B for each of 12 forward and 8 backward
 *     fp8 tensors; the weights cast and transposed once per step: 4 B per weight on the GPU;
 *   a GPT layer (GeLU, biases, dropout) at tp 2 without sequence parallelism: forward 8h,
 *     backward 26h per token on top of 30h and 54h;
 *   the fsdp preset (te.Linear on every GEMM, norms apart) of an MPT layer: forward 28h,
 *     backward 36h per token on top of 36h and 74h;
 *   the op graph: a forward op carries 1/microbatches of its layers' weight casts;
 *   bf16 and fp16 plans carry none of it.
 * Leaves free: the 16-bit counts themselves (test_elementwise) and the GEMMs' own traffic. */
#include <string.h>

#include "wl_testutil.h"

#define GPT(h, heads, extra)                                                                  \
    "\"model\": {\"kind\": \"transformer\", \"layers\": 4, \"hidden\": " #h ", \"heads\": " #heads \
    ", \"seq_len\": 512, \"vocab\": 32000" extra "}"
#define LLAMA                                                                                  \
    GPT(4096, 32, ", \"ffn\": 11008, \"mlp\": \"swiglu\", \"attention_dropout\": false")

/* the amax history (1,024 fp32 entries) read and written, scale and inverse written */
static const double SLOT = 8 * 1024.0 + 8;

static double tokens(void) { return sc.plan.micro_batch_size * sc.model.seq_len / wl_cp(&sc.plan); }

START_TEST(megatron_llama)
{
    double h = 4096, f = 11008, w = 4 * h * h + 3 * h * f; /* the layer's weights */
    wl_layer_cost lc;
    load("{\"topology\": \"x\", " LLAMA ", \"precision\": \"fp8\", \"framework\": \"megatron\"}", 1);
    wl_layer_cost_get(&sc.model, &sc.plan, &lc);
    double T = tokens();
    ck_assert_rel(lc.fwd_elem_bytes, T * (20 * h + 6 * f + 2 * h + 4 * f) + 12 * SLOT, 1e-12);
    ck_assert_rel(lc.bwd_elem_bytes, T * (24 * h + 10 * f + 24 * h + 8 * f) + 8 * SLOT, 1e-12);
    ck_assert_rel(lc.fp8_weight_bytes, 4 * w, 1e-12);
    ck_assert_rel(lc.dense_fp8_weight_bytes, 4 * w, 1e-12);
    unload();
    /* tp 2, sequence parallel: the input casts of the row-parallel GEMMs have no transpose (it
     * is done in the backward), the output gradients of the row-parallel ones are cast on the
     * shard and transposed after the gather, the norms run on the shard */
    load("{\"topology\": \"x\", " LLAMA ", \"parallel\": {\"tp\": 2, \"sequence_parallel\": "
         "true}, \"precision\": \"fp8\", \"framework\": \"megatron\"}", 2);
    wl_layer_cost_get(&sc.model, &sc.plan, &lc);
    T = tokens();
    ck_assert_rel(lc.fwd_elem_bytes, T * (10 * h + 3 * f + h / 2 + 1.5 * f) + 12 * SLOT, 1e-12);
    ck_assert_rel(lc.bwd_elem_bytes, T * (12 * h + 5 * f + 18 * h + 5 * f) + 8 * SLOT, 1e-12);
    ck_assert_rel(lc.fp8_weight_bytes, 4 * w / 2, 1e-12);
    unload();
    /* the same plan in bf16: no casts */
    load("{\"topology\": \"x\", " LLAMA ", \"parallel\": {\"tp\": 2, \"sequence_parallel\": "
         "true}, \"precision\": \"bf16\", \"framework\": \"megatron\"}", 2);
    wl_layer_cost_get(&sc.model, &sc.plan, &lc);
    ck_assert_rel(lc.fwd_elem_bytes, tokens() * (10 * h + 3 * f), 1e-12);
    ck_assert(lc.fp8_weight_bytes == 0 && lc.dense_fp8_weight_bytes == 0);
    unload();
}
END_TEST

START_TEST(megatron_gpt_no_sp)
{
    double h = 2048;
    wl_layer_cost lc;
    load("{\"topology\": \"x\", " GPT(2048, 16, "") ", \"parallel\": {\"tp\": 2}, "
         "\"precision\": \"fp8\", \"framework\": \"megatron\"}", 2);
    wl_layer_cost_get(&sc.model, &sc.plan, &lc);
    double T = tokens();
    /* forward: projection and MLP down inputs cast and transposed (4 h/2 + 4 f/2), the norms
     * (whole on each rank) writing fp8 (-2h); backward: QKV 4 (3h)/2 + 2h, projection 4h, MLP
     * up 4 f/2 + 2h, MLP down 4h */
    ck_assert_rel(lc.fwd_elem_bytes, T * (30 * h + 8 * h) + 12 * SLOT, 1e-12);
    ck_assert_rel(lc.bwd_elem_bytes, T * (54 * h + 26 * h) + 8 * SLOT, 1e-12);
    ck_assert_rel(lc.fp8_weight_bytes, 4 * 12 * h * h / 2, 1e-12);
    unload();
}
END_TEST

START_TEST(fsdp_te_linear)
{
    double h = 4096;
    wl_layer_cost lc;
    load("{\"topology\": \"x\", " GPT(4096, 32, ", \"attention_dropout\": false")
         ", \"precision\": \"fp8\", \"framework\": \"fsdp\"}", 1);
    wl_layer_cost_get(&sc.model, &sc.plan, &lc);
    double T = tokens();
    /* every input cast and transposed in the forward (4h, 4h, 4h, 4f); the gradients in the
     * backward (4 3h, 4h, 4f, 4h) */
    ck_assert_rel(lc.fwd_elem_bytes, T * (36 * h + 28 * h) + 12 * SLOT, 1e-12);
    ck_assert_rel(lc.bwd_elem_bytes, T * (74 * h + 36 * h) + 8 * SLOT, 1e-12);
    unload();
}
END_TEST

/* the elementwise bytes of the first forward op of lane 0 */
static double forward_bytes(const char *precision, int microbatches)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"topology\": \"x\", " LLAMA ", \"parallel\": {\"microbatches\": %d}, "
             "\"precision\": \"%s\", \"framework\": \"megatron\"}",
             microbatches, precision);
    load(text, 1);
    wl_graph *g = wl_graph_build(&sc);
    double bytes = -1;
    for (uint32_t i = 0; i < g->n_ops && bytes < 0; i++) {
        const wl_op *o = &g->ops[i];
        if (o->lane == 0 && !strcmp(g->names[o->name], "forward"))
            bytes = g->costs[o->arg].bytes[GPU_OP_ELEMENTWISE];
    }
    wl_graph_destroy(g);
    unload();
    return bytes;
}

START_TEST(weights_once_per_step)
{
    /* 4 layers, 4 B per weight, spread over the step's forwards: 1/2 against 1/4 of them */
    double h = 4096, f = 11008, w = 4 * (4 * h * h + 3 * h * f);
    ck_assert_rel(forward_bytes("fp8", 2) - forward_bytes("fp8", 4), 4 * w * (0.5 - 0.25), 1e-9);
    ck_assert(forward_bytes("bf16", 2) == forward_bytes("bf16", 4));
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("fp8_casts");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, megatron_llama);
    tcase_add_test(tc, megatron_gpt_no_sp);
    tcase_add_test(tc, fsdp_te_linear);
    tcase_add_test(tc, weights_once_per_step);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return dt_run_suite(suite()); }
