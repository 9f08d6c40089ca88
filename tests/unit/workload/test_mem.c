/* test_mem.c - memory accounting.
 * Pins down: model-state bytes per ZeRO stage and precision against the ZeRO paper (mixed
 * precision Adam 2Ψ + 2Ψ + 12Ψ and its partitioned forms 2Ψ+2Ψ+12Ψ/N, 2Ψ+14Ψ/N, 16Ψ/N; fp32
 * 4+4+8); Korthikanti et al. activation bytes per layer (sbh(34 + 5as/h), with TP
 * sbh(10 + 24/t + 5as/ht), with TP+SP sbh(34/t + 5as/ht), selective drops 5as/h, full keeps
 * 2sbh); 1F1B holds at most p microbatches on stage 0, GPipe m; run_memory on a scenario;
 * PyTorch FSDP's transient gradient and root-unit buffers, by hand.
 * Leaves free: the small buffers (logits, ZeRO-3 gather) beyond being non-negative. */
#include <string.h>

#include "dtsim/run.h"
#include "dtsim/workload.h"
#include "testutil.h"

START_TEST(zero_paper_model_states)
{
    double psi = 7.5e9, N = 64, p, g, o;
    mem_model_states(psi, 64, 0, WL_FP16, WL_ADAM, &p, &g, &o);
    ck_assert_rel(p + g + o, 16 * psi, 1e-15); /* 120 GB for 7.5B params */
    ck_assert_rel(p, 2 * psi, 1e-15);
    ck_assert_rel(o, 12 * psi, 1e-15);
    mem_model_states(psi, 64, 1, WL_BF16, WL_ADAM, &p, &g, &o);
    ck_assert_rel(p + g + o, 2 * psi + 2 * psi + 12 * psi / N, 1e-15); /* 31.4 GB */
    mem_model_states(psi, 64, 2, WL_BF16, WL_ADAM, &p, &g, &o);
    ck_assert_rel(p + g + o, 2 * psi + 14 * psi / N, 1e-15);         /* 16.6 GB */
    mem_model_states(psi, 64, 3, WL_BF16, WL_ADAM, &p, &g, &o);
    ck_assert_rel(p + g + o, 16 * psi / N, 1e-15);                    /* 1.9 GB */
    ck_assert_rel(p, 2 * psi / N, 1e-15);
    mem_model_states(psi, 64, 0, WL_FP32, WL_ADAM, &p, &g, &o);
    ck_assert_rel(p + g + o, 16 * psi, 1e-15);
    ck_assert_rel(o, 8 * psi, 1e-15);
    mem_model_states(psi, 64, 0, WL_FP32, WL_SGD, &p, &g, &o);
    ck_assert_rel(p + g + o, 12 * psi, 1e-15);
    mem_model_states(psi, 8, 1, WL_BF16, WL_SGD, &p, &g, &o);
    ck_assert_rel(o, 8 * psi / 8, 1e-15);
}
END_TEST

static wl_model gpt(void)
{
    wl_model m = {.kind = WL_TRANSFORMER, .layers = 96, .hidden = 12288, .heads = 96,
                  .seq_len = 2048, .vocab = 51200, .ffn = 4 * 12288.0, .kv_heads = 96,
                  .experts = 1, .top_k = 1, .mlp = WL_MLP_GELU, .tied_embeddings = true};
    return m;
}

START_TEST(korthikanti_activations)
{
    wl_model m = gpt();
    double s = 2048, b = 1, h = 12288, a = 96, t = 8;
    wl_plan p = {.dp = 1, .tp = 1, .pp = 1, .virtual_stages = 1, .microbatches = 1,
                 .micro_batch_size = 1, .precision = WL_BF16};
    ck_assert_rel(mem_activation_per_layer(&m, &p), s * b * h * (34 + 5 * a * s / h), 1e-12);
    p.tp = 8;
    ck_assert_rel(mem_activation_per_layer(&m, &p), s * b * h * (10 + 24 / t + 5 * a * s / (h * t)),
                  1e-12);
    p.sequence_parallel = true;
    ck_assert_rel(mem_activation_per_layer(&m, &p), s * b * h * (34 / t + 5 * a * s / (h * t)),
                  1e-12);
    p.checkpointing = WL_CKPT_SELECTIVE;
    ck_assert_rel(mem_activation_per_layer(&m, &p), s * b * h * 34 / t, 1e-12);
    p.checkpointing = WL_CKPT_FULL;
    ck_assert_rel(mem_activation_per_layer(&m, &p), 2 * s * b * h / t, 1e-12);
    p.sequence_parallel = false;
    ck_assert_rel(mem_activation_per_layer(&m, &p), 2 * s * b * h, 1e-12);
    p.precision = WL_FP32;
    ck_assert_rel(mem_activation_per_layer(&m, &p), 4 * s * b * h, 1e-12);
}
END_TEST

START_TEST(inflight_by_schedule)
{
    wl_plan p = {.dp = 1, .tp = 1, .pp = 8, .virtual_stages = 1, .microbatches = 32,
                 .micro_batch_size = 1, .schedule = WL_1F1B};
    ck_assert_rel(mem_inflight(&p, 0), 8, 0);
    ck_assert_rel(mem_inflight(&p, 7), 1, 0);
    p.schedule = WL_GPIPE;
    ck_assert_rel(mem_inflight(&p, 0), 32, 0);
    p.schedule = WL_1F1B;
    p.microbatches = 4; /* fewer microbatches than stages: all of them */
    ck_assert_rel(mem_inflight(&p, 0), 4, 0);
    /* interleaved, v = 2: (p-1)*2 + (v-1)p + 1 = 23 chunks of half a stage */
    p.microbatches = 32;
    p.schedule = WL_INTERLEAVED;
    p.virtual_stages = 2;
    ck_assert_rel(mem_inflight(&p, 0), 23.0 / 2, 1e-15);

    /* the most loaded GPU is stage 0 with 1F1B; GPipe holds all m there */
    wl_model m = gpt();
    p = (wl_plan){.dp = 1, .tp = 8, .pp = 8, .virtual_stages = 1, .microbatches = 32,
                  .micro_batch_size = 1, .schedule = WL_1F1B, .precision = WL_BF16,
                  .sequence_parallel = true, .checkpointing = WL_CKPT_SELECTIVE};
    mem_breakdown b1, bg;
    mem_compute(&m, &p, &b1);
    p.schedule = WL_GPIPE;
    mem_compute(&m, &p, &bg);
    double per_mb = 12 * 34.0 * 2048 * 12288 / 8; /* 12 layers per stage */
    ck_assert_rel(b1.activations, 8 * per_mb, 1e-12);
    ck_assert_rel(bg.activations, 32 * per_mb, 1e-12);
    ck_assert_int_eq(b1.stage, 0);
    ck_assert(b1.buffers >= 0);
}
END_TEST

/* PyTorch FSDP's transient buffers (mem_fsdp_buffers, docs/workloads.md "Memory"), by hand
 * for 4 layers of h 1024, f 4096, V 32,000 on 8 GPUs in bf16: one layer's parameters
 * P = 4h^2 + 2hf + 4h = 12,587,008, the embedding V h = 32,768,000.
 * DEFAULT (reduce fp32, ZeRO-3): the unit being reduced (2 + 4) P, the next unit max(2 x 2,
 * 2 + 4) P: 12 P = 151,044,096 B; the root's tied embedding kept unsharded 2 V h and the
 * output layer's gradient 2 V h: 131,072,000 B; 282,116,096 in all. PURE (reduce bf16): 2 P
 * + max(4, 2) P = 6 P: 206,594,048. Untied, the root holds both matrices: 347,652,096.
 * ZeRO-2 (SHARD_GRAD_OP: the parameters stay whole, counted as parameters): 12 P alone. pp 2:
 * stage 0 the input embedding, stage 1 its copy and the output gradient. Nothing for other
 * presets, one rank, or unsharded gradients (NO_SHARD). mem_compute adds it to the buffers. */
START_TEST(fsdp_buffers)
{
    wl_model m = {.kind = WL_TRANSFORMER, .layers = 4, .hidden = 1024, .heads = 16,
                  .seq_len = 512, .vocab = 32000, .ffn = 4096, .kv_heads = 16, .experts = 1,
                  .top_k = 1, .mlp = WL_MLP_GELU, .tied_embeddings = true};
    wl_plan p = {.dp = 8, .tp = 1, .pp = 1, .zero = 3, .virtual_stages = 1, .microbatches = 1,
                 .micro_batch_size = 1, .precision = WL_BF16};
    p.fw.preset = WL_FW_FSDP;
    p.fw.reduce_bytes = 4;
    double P = 12587008, Vh = 32768000;
    ck_assert_double_eq(wl_layer_params(&m), P);
    ck_assert_double_eq(mem_fsdp_buffers(&m, &p, 0), 282116096);
    mem_breakdown with, without;
    mem_compute(&m, &p, &with);
    p.fw.preset = WL_FW_GENERIC;
    ck_assert_double_eq(mem_fsdp_buffers(&m, &p, 0), 0);
    mem_compute(&m, &p, &without);
    ck_assert_rel(with.buffers - without.buffers, 282116096, 1e-15);
    ck_assert_rel(with.peak - without.peak, 282116096, 1e-15);
    p.fw.preset = WL_FW_FSDP;
    p.fw.reduce_bytes = 0; /* PURE: the training precision */
    ck_assert_double_eq(mem_fsdp_buffers(&m, &p, 0), 206594048);
    p.fw.reduce_bytes = 2;
    ck_assert_double_eq(mem_fsdp_buffers(&m, &p, 0), 206594048);
    p.fw.reduce_bytes = 4;
    m.tied_embeddings = false;
    ck_assert_double_eq(mem_fsdp_buffers(&m, &p, 0), 347652096);
    m.tied_embeddings = true;
    p.zero = 2;
    ck_assert_double_eq(mem_fsdp_buffers(&m, &p, 0), 12 * P);
    p.zero = 3;
    p.pp = 2;
    p.dp = 4;
    ck_assert_double_eq(mem_fsdp_buffers(&m, &p, 0), 12 * P + 2 * Vh);
    ck_assert_double_eq(mem_fsdp_buffers(&m, &p, 1), 12 * P + 4 * Vh);
    p.pp = 1;
    p.dp = 1;
    ck_assert_double_eq(mem_fsdp_buffers(&m, &p, 0), 0);
    p.dp = 8;
    p.zero = 0;
    ck_assert_double_eq(mem_fsdp_buffers(&m, &p, 0), 0);
    /* MoE, 4 experts of f 1024 (2 h f each) every layer, ep 2, PURE, ZeRO-2 (no root): the
     * layer's dense part 4h^2 + router 4h + norms 4h = 4,202,496 and its 2 local experts
     * 4,194,304 when their expert-DP group has 2 ranks (dp 4): 6 x 8,396,800 = 50,380,800 B;
     * at dp 2 nothing reduces the experts' gradients: 6 x 4,202,496 = 25,214,976 B. */
    m.experts = 4;
    m.top_k = 2;
    m.expert_ffn = 1024;
    p.zero = 2;
    p.fw.reduce_bytes = 0;
    p.ep = 2;
    p.dp = 4;
    ck_assert_double_eq(wl_layer_params(&m), 12591104);
    ck_assert_double_eq(mem_fsdp_buffers(&m, &p, 0), 50380800);
    p.dp = 2;
    ck_assert_double_eq(mem_fsdp_buffers(&m, &p, 0), 25214976);
}
END_TEST

START_TEST(run_memory_scenario)
{
    const char *text =
        "{\"topology\": {\"generator\": \"dgx\", \"nodes\": 8, \"gpus_per_node\": 8},"
        " \"model\": {\"kind\": \"params\", \"params\": 7.5e9},"
        " \"parallel\": {\"zero\": 3}}";
    cJSON *j;
    dt_error e;
    dt_error_clear(&e);
    ck_assert_int_eq(js_parse_text(text, strlen(text), "m.json", &j, &e), DT_OK);
    struct run_memory m;
    bool fits = false;
    int rc = run_memory(j, "m.json", ".", &m, &fits, &e);
    ck_assert_msg(rc == DT_OK, "%s: %s", e.path, e.msg);
    ck_assert_rel(m.params + m.grads + m.optimizer, 16 * 7.5e9 / 64, 1e-12);
    ck_assert(fits);
    ck_assert(m.capacity > 1e10);
    cJSON_Delete(j);
    /* 175B on 8 GPUs without ZeRO cannot fit */
    text = "{\"topology\": {\"generator\": \"dgx\", \"nodes\": 1, \"gpus_per_node\": 8},"
           " \"model\": {\"kind\": \"params\", \"params\": 175e9}}";
    ck_assert_int_eq(js_parse_text(text, strlen(text), "m.json", &j, &e), DT_OK);
    ck_assert_int_eq(run_memory(j, "m.json", ".", &m, &fits, &e), DT_OK);
    ck_assert(!fits);
    ck_assert_rel(m.peak, 16 * 175e9, 1e-12);
    cJSON_Delete(j);
}
END_TEST

Suite *suite(void)
{
    Suite *s = suite_create("mem");
    TCase *t = tcase_create("core");
    tcase_add_test(t, zero_paper_model_states);
    tcase_add_test(t, korthikanti_activations);
    tcase_add_test(t, inflight_by_schedule);
    tcase_add_test(t, run_memory_scenario);
    tcase_add_test(t, fsdp_buffers);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return dt_run_suite(suite()); }
