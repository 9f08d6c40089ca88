/* test_elementwise.c - the elementwise traffic of one transformer layer, per framework preset,
 * against the kernel-by-kernel hand counts of docs/workloads.md ("Elementwise traffic of a
 * layer"), and the tied embedding's gradient sum on a one-stage pipeline.
 * Pins down (bytes per token of the microbatch, e the element size, f the activation width):
 *   megatron, bf16 (Megatron-Core v0.7 + Transformer Engine), GeLU with biases and dropout:
 *     forward 10eh + 2h + 2ef, backward 18eh + 2h + 4ef (38 h and 70 h at f = 4h, e = 2: the
 *     19 and 35 s.b.h.e of the docs); tp 8 with sequence parallelism a t-th of that, without it
 *     the norms and dropout-adds whole; SwiGLU without biases or dropout 10eh + 3ef and
 *     12eh + 5ef; an MoE layer's activation over (top_k + shared) expert widths;
 *   megatron, fp16 (Megatron-LM of 2022, Korthikanti's cases), unfused attention, MHA: the QKV
 *     bias add, context permute copy, QKV bias gradient and split's cat on top: 54 h and 92 h
 *     at f = 4h, e = 2 (27 and 46 s.b.h.e); 8 h more backward where apex runs its
 *     non-persistent layernorm (a hidden size outside its list);
 *   fsdp (llm-foundry's MPT in eager PyTorch): GeLU with biases, no dropout 36 h and 74 h (18
 *     and 37 s.b.h.e); SwiGLU without biases 10eh + 5ef and 16eh + 9ef;
 *   generic: Korthikanti's 34 s.b.h.e forward, twice that backward;
 *   the megatron preset at pp 1 charges the tied embedding's gradient sum (4e per V x h element)
 *   in the first layer's backward also when the last microbatch's backward is split per layer.
 * Leaves free: the op graph's other terms (test_lm_head, test_fsdp_passes, test_wl_framework). */
#include <string.h>

#include "wl_testutil.h"

#define GPT(h, heads, extra)                                                                  \
    "\"model\": {\"kind\": \"transformer\", \"layers\": 4, \"hidden\": " #h ", \"heads\": " #heads \
    ", \"seq_len\": 512, \"vocab\": 32000" extra "}"

/* per-token forward and backward bytes of the loaded scenario's layer (an MoE layer's when it
 * has experts, dense otherwise) */
static void per_token(double *fwd, double *bwd, double *dfwd, double *dbwd)
{
    wl_layer_cost lc;
    wl_layer_cost_get(&sc.model, &sc.plan, &lc);
    double toks = sc.plan.micro_batch_size * sc.model.seq_len / wl_cp(&sc.plan);
    *fwd = lc.fwd_elem_bytes / toks;
    *bwd = lc.bwd_elem_bytes / toks;
    if (dfwd) *dfwd = lc.dense_fwd_elem_bytes / toks;
    if (dbwd) *dbwd = lc.dense_bwd_elem_bytes / toks;
}

START_TEST(megatron_core)
{
    double f, b, h = 2048;
    /* GPT: GeLU, biases, dropout 0.1 (attention dropout on) */
    load("{\"topology\": \"x\", " GPT(2048, 16, "") ", \"precision\": \"bf16\", "
         "\"framework\": \"megatron\"}", 1);
    per_token(&f, &b, NULL, NULL);
    ck_assert_rel(f, 38 * h, 1e-12); /* 10eh + 2h + 2e 4h */
    ck_assert_rel(b, 70 * h, 1e-12); /* 18eh + 2h + 4e 4h */
    unload();
    /* tp 8: sequence parallelism splits everything; without it the 22 h and 38 h outside the
     * TP regions run whole on every rank */
    load("{\"topology\": \"x\", " GPT(2048, 16, "") ", \"parallel\": {\"tp\": 8, "
         "\"sequence_parallel\": true}, \"precision\": \"bf16\", \"framework\": \"megatron\"}", 8);
    per_token(&f, &b, NULL, NULL);
    ck_assert_rel(f, 38 * h / 8, 1e-12);
    ck_assert_rel(b, 70 * h / 8, 1e-12);
    unload();
    load("{\"topology\": \"x\", " GPT(2048, 16, "") ", \"parallel\": {\"tp\": 8}, "
         "\"precision\": \"bf16\", \"framework\": \"megatron\"}", 8);
    per_token(&f, &b, NULL, NULL);
    ck_assert_rel(f, 22 * h + 16 * h / 8, 1e-12);
    ck_assert_rel(b, 38 * h + 32 * h / 8, 1e-12);
    unload();
    /* Llama-like: SwiGLU (f 11008), no biases, no dropout (fp8 adds Transformer Engine's
     * casts to this count: test_fp8_casts) */
    load("{\"topology\": \"x\", " GPT(4096, 32, ", \"ffn\": 11008, \"mlp\": \"swiglu\", "
                                               "\"attention_dropout\": false")
         ", \"precision\": \"bf16\", \"framework\": \"megatron\"}", 1);
    per_token(&f, &b, NULL, NULL);
    ck_assert_rel(f, 20 * 4096.0 + 6 * 11008.0, 1e-12);
    ck_assert_rel(b, 24 * 4096.0 + 10 * 11008.0, 1e-12);
    unload();
    /* MoE: top 2 of 8 experts of width 1024 and one shared expert; the model's other layers
     * dense (ffn 4096) */
    load("{\"topology\": \"x\", " GPT(1024, 16, ", \"ffn\": 4096, \"mlp\": \"swiglu\", "
                                               "\"attention_dropout\": false, \"experts\": 8, "
                                               "\"top_k\": 2, \"expert_ffn\": 1024, "
                                               "\"shared_experts\": 1, \"moe_layer_freq\": 2")
         ", \"precision\": \"bf16\", \"framework\": \"megatron\"}", 1);
    double df, db;
    per_token(&f, &b, &df, &db);
    ck_assert_rel(f, 20 * 1024.0 + 6 * 3 * 1024.0, 1e-12);
    ck_assert_rel(b, 24 * 1024.0 + 10 * 3 * 1024.0, 1e-12);
    ck_assert_rel(df, 20 * 1024.0 + 6 * 4096.0, 1e-12);
    ck_assert_rel(db, 24 * 1024.0 + 10 * 4096.0, 1e-12);
    unload();
}
END_TEST

START_TEST(megatron_2022)
{
    double f, b;
    /* K-22B's layer: h 6144 (apex's persistent layernorm), MHA, unfused, dropout, fp16 */
    load("{\"topology\": \"x\", " GPT(6144, 64, ", \"attention\": \"unfused\"")
         ", \"precision\": \"fp16\", \"framework\": \"megatron\"}", 1);
    per_token(&f, &b, NULL, NULL);
    /* forward 10eh + 2h (norms, dropout-adds), 2e 4h (bias-GeLU), 2e 3h (QKV bias add), 2eh
     * (context copy); backward 18eh + 2h, 4e 4h, e 3h (QKV bias gradient), 2e 3h (split's
     * cat), 2eh (context copy) */
    ck_assert_rel(f, 54 * 6144.0, 1e-12);
    ck_assert_rel(b, 92 * 6144.0, 1e-12);
    unload();
    /* h 6000 is not in apex's persistent list: FusedLayerNorm's backward re-reads dy and x */
    load("{\"topology\": \"x\", " GPT(6000, 60, ", \"attention\": \"unfused\"")
         ", \"precision\": \"fp16\", \"framework\": \"megatron\"}", 1);
    per_token(&f, &b, NULL, NULL);
    ck_assert_rel(f, 54 * 6000.0, 1e-12);
    ck_assert_rel(b, 100 * 6000.0, 1e-12);
    unload();
}
END_TEST

START_TEST(fsdp_mpt)
{
    double f, b;
    /* MPT-7B's block: GeLU, biases (no_bias false), no dropout (resid_pdrop 0) */
    load("{\"topology\": \"x\", " GPT(4096, 32, ", \"attention_dropout\": false")
         ", \"precision\": \"bf16\", \"framework\": \"fsdp\"}", 1);
    per_token(&f, &b, NULL, NULL);
    /* forward 2 x 2eh (norms) + 2 x 3eh (adds) + 2e 4h (GeLU); backward 2 x 5eh (norms) + 2 x
     * 3eh (residual sums) + 2eh (out_proj, down_proj bias reductions) + 3e 4h (GeLU) + e 3h + e
     * 4h (Wqkv, up_proj bias reductions) */
    ck_assert_rel(f, 36 * 4096.0, 1e-12);
    ck_assert_rel(b, 74 * 4096.0, 1e-12);
    unload();
    /* SwiGLU (an MPTGLU or a Llama block): silu and the product, no biases */
    load("{\"topology\": \"x\", " GPT(4096, 32, ", \"ffn\": 11008, \"mlp\": \"swiglu\", "
                                               "\"attention_dropout\": false")
         ", \"precision\": \"bf16\", \"framework\": \"fsdp\"}", 1);
    per_token(&f, &b, NULL, NULL);
    ck_assert_rel(f, 20 * 4096.0 + 10 * 11008.0, 1e-12);
    ck_assert_rel(b, 32 * 4096.0 + 18 * 11008.0, 1e-12);
    unload();
}
END_TEST

START_TEST(generic_default)
{
    double f, b;
    load("{\"topology\": \"x\", " GPT(1024, 16, "") ", \"precision\": \"bf16\"}", 1);
    per_token(&f, &b, NULL, NULL);
    ck_assert_rel(f, 34 * 2 * 1024.0, 1e-12);
    ck_assert_rel(b, 2 * 34 * 2 * 1024.0, 1e-12);
    unload();
}
END_TEST

/* the first layer's backward of each microbatch: with dp 2 and gradient overlap the last
 * microbatch's backward is split per layer; tied or not, its bytes differ by the tied sum */
static double first_layer_bwd(const char *tied, int mb)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"topology\": \"x\", " GPT(1024, 16, ", \"tied_embeddings\": %s")
             ", \"parallel\": {\"dp\": 2, \"microbatches\": 2}, \"precision\": \"bf16\", "
             "\"framework\": {\"preset\": \"megatron\", \"overlap_grad_reduce\": true}}",
             tied);
    load(text, 2);
    wl_graph *g = wl_graph_build(&sc);
    double bytes = -1;
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const wl_op *o = &g->ops[i];
        if (o->lane != 0 || o->mb != mb || strcmp(g->names[o->name], "backward")) continue;
        if (o->layer == 0 || (mb == 0 && bytes < 0)) bytes = g->costs[o->arg].bytes[GPU_OP_ELEMENTWISE];
    }
    wl_graph_destroy(g);
    unload();
    return bytes;
}

START_TEST(tied_sum_one_stage)
{
    /* microbatch 0: one op for the whole backward (first and last layer); microbatch 1: split,
     * layer 0's op: both carry V h 4e = 32000 x 1024 x 8 B more when tied */
    double d0 = first_layer_bwd("true", 0) - first_layer_bwd("false", 0);
    double d1 = first_layer_bwd("true", 1) - first_layer_bwd("false", 1);
    ck_assert_rel(d1, 32000.0 * 1024 * 8, 1e-12);
    ck_assert_rel(d0, 32000.0 * 1024 * 8, 1e-12);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("elementwise");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, megatron_core);
    tcase_add_test(tc, megatron_2022);
    tcase_add_test(tc, fsdp_mpt);
    tcase_add_test(tc, generic_default);
    tcase_add_test(tc, tied_sum_one_stage);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return dt_run_suite(suite()); }
