/* test_mem.c - memory accounting.
 * Pins down: model-state bytes per ZeRO stage and precision against the ZeRO paper (mixed
 * precision Adam 2Ψ + 2Ψ + 12Ψ and its partitioned forms 2Ψ+2Ψ+12Ψ/N, 2Ψ+14Ψ/N, 16Ψ/N; fp32
 * 4+4+8); Korthikanti et al. activation bytes per layer (sbh(34 + 5as/h), with TP
 * sbh(10 + 24/t + 5as/ht), with TP+SP sbh(34/t + 5as/ht), selective drops 5as/h, full keeps
 * 2sbh); 1F1B holds at most p microbatches on stage 0, GPipe m; run_memory on a scenario.
 * The final norm (2h LayerNorm, h RMSNorm) by hand: in the parameter count (Llama-2-7B's and
 * Qwen3-30B-A3B's published counts), the memory of the stage that holds it, the last stage's
 * optimizer op and gradient reduction;
 * the layers' norms whole on every TP rank (per-GPU parameters at tp 1, 2, 8) and their
 * gradients' TP all-reduce under sequence parallelism; ZeRO-3's root gathers and reductions
 * (embedding, final norm) by hand; PyTorch FSDP's transient gradient and root-unit buffers.
 * Leaves free: the small buffers (logits, ZeRO-3 gather) beyond being non-negative. */
#include <string.h>

#include "dtsim/run.h"
#include "dtsim/workload.h"
#include "testutil.h"
#include "wl_testutil.h"

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

/* Korthikanti's count term by term beyond GPT's shape: Llama 3.1 405B's layer (GQA: 16 of 128
 * heads for K and V; SwiGLU FFN 53,248; no dropout, as NVIDIA's recipes run it), flash
 * attention, at the plan of the DGX H100 run tests/validation-bridge/D-llama31-405b-576-bf16
 * (tp 8 with sequence parallelism, cp 2: 4,096 of the 8,192 tokens). Per token: QKV input 2h, Q
 * and the projection's input 2h each, K and V 2h/8 each, the MLP input 2h, gate and up 4f,
 * their product 2f, the norms' inputs 4h: 12.5h + 6f = 524,288 B; over t = 8 and 4,096
 * tokens, 256 MiB. With GPT's shape (g = a, dropout) the same terms give 34sbh (above). */
START_TEST(activations_gqa_swiglu_no_dropout)
{
    wl_model m = {.kind = WL_TRANSFORMER, .layers = 126, .hidden = 16384, .heads = 128,
                  .kv_heads = 16, .seq_len = 8192, .vocab = 51200, .ffn = 53248,
                  .experts = 1, .top_k = 1, .mlp = WL_MLP_SWIGLU, .norm = WL_NORM_RMSNORM,
                  .no_attention_dropout = true, .attention = WL_ATTN_FLASH};
    wl_plan p = {.dp = 4, .tp = 8, .pp = 9, .cp = 2, .virtual_stages = 7, .microbatches = 63,
                 .micro_batch_size = 1, .precision = WL_BF16, .sequence_parallel = true,
                 .schedule = WL_INTERLEAVED};
    double h = 16384, f = 53248, tok = 4096, t = 8;
    ck_assert_rel(mem_activation_per_layer(&m, &p), tok * (12.5 * h + 6 * f) / t, 1e-15);
    ck_assert_rel(mem_activation_per_layer(&m, &p), 268435456.0, 1e-15);
    /* stage 0 of the interleaved schedule holds (p - 1)·2 + (v - 1)·p + 1 = 71 chunks of 2
     * layers: 35.5 GiB, where Korthikanti's GPT terms (K and V as wide as Q, two dropout
     * masks: 18h + 6f per token) had given 41.6 GiB and a run that fitted DOES NOT FIT */
    ck_assert_rel(mem_inflight(&p, 0) * 14 * mem_activation_per_layer(&m, &p),
                  71.0 * 2 * 268435456.0, 1e-12);
    /* without sequence parallelism the norms' and the two first GEMMs' inputs (8sbh; no
     * dropout masks here) are whole on every TP rank */
    p.sequence_parallel = false;
    ck_assert_rel(mem_activation_per_layer(&m, &p), tok * (8 * h + (4.5 * h + 6 * f) / t), 1e-12);
    /* with dropout: the two 1-byte masks, h per token each, are back (replicated without SP) */
    m.no_attention_dropout = false;
    ck_assert_rel(mem_activation_per_layer(&m, &p), tok * (10 * h + (4.5 * h + 6 * f) / t), 1e-12);
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
    /* m = pp = 8, v = 2: the last stage warms up (v - 1)p = 8 chunk forwards and holds 9 of the
     * 16 chunks; Megatron-LM of 2022 (megatron preset, fp16) runs all 16 forwards first
     * (all_warmup_microbatches), so it holds all 8 microbatches; Megatron-Core (bf16) and the
     * other presets keep the formula; stage 0's formula covers every chunk anyway */
    p.microbatches = 8;
    ck_assert_rel(mem_inflight(&p, 7), 9.0 / 2, 1e-15);
    ck_assert_int_eq(wl_pipeline_warmup(&p, 7, 8), 8);
    p.fw.preset = WL_FW_MEGATRON;
    p.precision = WL_FP16;
    ck_assert_rel(mem_inflight(&p, 7), 8, 1e-15);
    ck_assert_int_eq(wl_pipeline_warmup(&p, 7, 8), 16);
    ck_assert_int_eq(wl_pipeline_warmup(&p, 7, 16), 8); /* m = 2 pp: the formula */
    ck_assert_rel(mem_inflight(&p, 0), 8, 1e-15);
    p.precision = WL_BF16;
    ck_assert_rel(mem_inflight(&p, 7), 9.0 / 2, 1e-15);
    p.fw.preset = WL_FW_GENERIC;
    p.precision = 0;

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
 * output layer's gradient 2 V h: 131,072,000 B, and the root's final LayerNorm 2 x 2h =
 * 4,096 B; 282,120,192 in all. PURE (reduce bf16): 2 P + max(4, 2) P = 6 P: 206,598,144.
 * Untied, the root holds both matrices: 347,656,192. The generic preset's ZeRO-3 holds the
 * gathered root alone, 2 V h + 2 x 2h = 65,540,096 B, beside the two gathered layers both
 * presets hold.
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
    ck_assert_double_eq(mem_fsdp_buffers(&m, &p, 0), 282116096 + 4096);
    mem_breakdown with, without;
    mem_compute(&m, &p, &with);
    p.fw.preset = WL_FW_GENERIC;
    ck_assert_double_eq(mem_fsdp_buffers(&m, &p, 0), 0);
    mem_compute(&m, &p, &without);
    ck_assert_rel(with.buffers - without.buffers, 282120192 - 65540096, 1e-15);
    ck_assert_rel(with.peak - without.peak, 282120192 - 65540096, 1e-15);
    p.fw.preset = WL_FW_FSDP;
    p.fw.reduce_bytes = 0; /* PURE: the training precision */
    ck_assert_double_eq(mem_fsdp_buffers(&m, &p, 0), 206598144);
    p.fw.reduce_bytes = 2;
    ck_assert_double_eq(mem_fsdp_buffers(&m, &p, 0), 206598144);
    p.fw.reduce_bytes = 4;
    m.tied_embeddings = false;
    ck_assert_double_eq(mem_fsdp_buffers(&m, &p, 0), 347656192);
    m.tied_embeddings = true;
    p.zero = 2;
    ck_assert_double_eq(mem_fsdp_buffers(&m, &p, 0), 12 * P);
    p.zero = 3;
    p.pp = 2;
    p.dp = 4;
    ck_assert_double_eq(mem_fsdp_buffers(&m, &p, 0), 12 * P + 2 * Vh);
    ck_assert_double_eq(mem_fsdp_buffers(&m, &p, 1), 12 * P + 4 * Vh + 2 * 2048);
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

/* Llama-2-7B (meta-llama/Llama-2-7b-hf config.json: h 4096, 32 layers, 32 heads, ffn 11008,
 * SwiGLU, V 32000, untied, RMSNorm), by hand with RMSNorm's h per norm:
 *   layer  4h^2 = 67,108,864 + 3hf = 135,266,304 + 2 norms 2h = 8,192    = 202,383,360
 *   model  32 x 202,383,360 + 2 x 32000 x 4096 + the final norm's 4,096  = 6,738,415,616
 * the checkpoint's count exactly (llama.cpp's general.parameter_count). As LayerNorms (weight
 * and bias): 32 x 8,192 + 4,096 more. Qwen3-30B-A3B (test_moe.c's layer) with RMSNorm:
 * 48 x (623,124,480 - 4,096 + 2 x 2,048) ... = 48 x 623,120,384 + 2 x 151,936 x 2048 + 2,048 =
 * 30,532,110,336: the checkpoint's 30,532,122,624 less its per-head q and k norms (48 x 2 x 128
 * = 12,288), which dtsim does not model. */
#define LLAMA2_7B(norm)                                                                          \
    "{\"topology\": \"x\", \"model\": {\"kind\": \"transformer\", \"layers\": 32, \"hidden\": 4096," \
    " \"heads\": 32, \"seq_len\": 4096, \"vocab\": 32000, \"ffn\": 11008, \"mlp\": \"swiglu\","      \
    " \"tied_embeddings\": false" norm "}}"

START_TEST(norm_params_published)
{
    load(LLAMA2_7B(", \"norm\": \"rmsnorm\""), 1);
    ck_assert_double_eq(wl_norm_params(&sc.model), 4096);
    ck_assert_double_eq(wl_layer_params(&sc.model), 202383360.0);
    ck_assert_double_eq(wl_total_params(&sc.model), 6738415616.0);
    ck_assert_double_eq(sc.model.params, 6738415616.0);
    unload();
    load(LLAMA2_7B(""), 1); /* default: LayerNorm */
    ck_assert_double_eq(wl_norm_params(&sc.model), 8192);
    ck_assert_double_eq(wl_total_params(&sc.model), 6738415616.0 + 32 * 8192 + 4096);
    unload();
    load("{\"topology\": \"x\", \"model\": {\"kind\": \"transformer\", \"layers\": 48, \"hidden\": 2048,"
         " \"heads\": 32, \"head_dim\": 128, \"kv_heads\": 4, \"seq_len\": 4096, \"vocab\": 151936,"
         " \"tied_embeddings\": false, \"mlp\": \"swiglu\", \"experts\": 128, \"top_k\": 8,"
         " \"expert_ffn\": 768, \"norm\": \"rmsnorm\"}}", 1);
    ck_assert_double_eq(wl_layer_params(&sc.model), 623120384.0);
    ck_assert_double_eq(wl_total_params(&sc.model), 30532122624.0 - 48 * 2 * 128);
    unload();
    /* a model that is not a transformer has no norms; a bad kind is refused where it stands */
    wl_model syn = {.kind = WL_SYNTHETIC, .hidden = 1024};
    ck_assert_double_eq(wl_norm_params(&syn), 0);
    dt_error e;
    ck_assert_int_eq(try_load(LLAMA2_7B(", \"norm\": \"batchnorm\""), 1, &e), DT_EINPUT);
    ck_assert_str_eq(e.path, "model.norm");
}
END_TEST

/* The final norm on the GPUs that hold it: 4 layers, h 1024, f 4096, V 32000, tied, tp 2,
 * bf16, Adam, ZeRO-1 over dp 2, by hand:
 *   layer  linears 4h^2 + 2hf = 12,582,912, / tp = 6,291,456 per GPU, and its two LayerNorms
 *          4h = 4,096 whole on each TP rank (Megatron replicates norm weights): 6,295,552
 *   embedding V h / tp = 16,384,000; final LayerNorm 2h = 2,048, whole on each TP rank
 * pp 1: Ψ = 4 x 6,295,552 + 16,384,000 + 2,048 = 41,568,256 per GPU: parameters 2Ψ =
 * 83,136,512 B, gradients as much, optimizer states 12Ψ/2 = 249,409,536 B; RMSNorm (h per
 * norm): 4 x (6,291,456 + 2,048) + 16,384,000 + 1,024 = 41,559,040.
 * pp 2 (2 layers a stage, each stage its copy of the tied matrix): stage 0 holds
 * 2 x 6,295,552 + 16,384,000 = 28,975,104, stage 1 2,048 more, 28,977,152: its optimizer op
 * moves 28 B (Adam) per parameter of its shard (Ψ/2) and its gradient reduce-scatters 2Ψ B. */
#define SMALL(norm, pp)                                                                           \
    "{\"topology\": \"x\", \"model\": {\"kind\": \"transformer\", \"layers\": 4, \"hidden\": 1024," \
    " \"heads\": 16, \"seq_len\": 512, \"vocab\": 32000" norm "}, \"parallel\": {\"tp\": 2,"        \
    " \"pp\": " #pp ", \"dp\": 2, \"zero\": 1}, \"precision\": \"bf16\", \"global_batch\": 8}"

START_TEST(final_norm_memory_and_graph)
{
    mem_breakdown mb;
    load(SMALL("", 1), 4);
    ck_assert_double_eq(wl_tp_rank_params(&sc.model, wl_layer_params(&sc.model), 1, 2), 6295552);
    mem_compute(&sc.model, &sc.plan, &mb);
    ck_assert_rel(mb.params, 83136512, 1e-15);
    ck_assert_rel(mb.grads, 83136512, 1e-15);
    ck_assert_rel(mb.optimizer, 249409536, 1e-15);
    unload();
    load(SMALL(", \"norm\": \"rmsnorm\"", 1), 4);
    mem_compute(&sc.model, &sc.plan, &mb);
    ck_assert_rel(mb.params, 2 * 41559040.0, 1e-15);
    ck_assert_rel(mb.optimizer, 12 * 41559040.0 / 2, 1e-15);
    unload();

    load(SMALL("", 2), 8);
    wl_graph *g = wl_graph_build(&sc);
    const double psi[2] = {28975104, 28977152};
    double rs[8] = {0};
    int seen[2] = {0, 0};
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const wl_op *o = &g->ops[i];
        if (o->kind == WL_OP_COLL && g->colls[o->arg].op == COLL_REDUCE_SCATTER)
            rs[o->lane] += g->colls[o->arg].bytes;
        if (strcmp(g->names[o->name], "optimizer_step")) continue;
        double bytes = g->costs[o->arg].bytes[GPU_OP_OPTIMIZER];
        int st = fabs(bytes - psi[1] / 2 * 28) < 1e-6 ? 1 : 0;
        ck_assert_rel(bytes, psi[st] / 2 * 28, 1e-15);
        seen[st]++;
    }
    ck_assert_int_eq(seen[0], 2); /* one optimizer op per lane: 2 replicas of each stage */
    ck_assert_int_eq(seen[1], 2);
    int lanes[2] = {0, 0};
    for (int l = 0; l < g->n_lanes; l++) {
        int st = fabs(rs[l] - 2 * psi[1]) < 1e-6 ? 1 : 0;
        ck_assert_rel(rs[l], 2 * psi[st], 1e-15);
        lanes[st]++;
    }
    ck_assert_int_eq(lanes[0], 2);
    ck_assert_int_eq(lanes[1], 2);
    wl_graph_destroy(g);
    unload();
}
END_TEST

/* Parameters per GPU at tp 1, 2 and 8, by hand (the model above: 4 layers, h 1024, f 4096,
 * V 32000, tied, LayerNorm, pp 1, dp 2, ZeRO-1, bf16 Adam). Each layer's linears
 * 12,582,912 / t, its two LayerNorms 4,096 and the final one 2,048 whole on every TP rank, the
 * embedding 32,768,000 / t:
 *   t 1: 4 x 12,587,008           + 32,768,000 + 2,048 = 83,118,080
 *   t 2: 4 x (6,291,456 + 4,096)  + 16,384,000 + 2,048 = 41,568,256
 *   t 8: 4 x (1,572,864 + 4,096)  +  4,096,000 + 2,048 = 10,405,888
 * (dividing the norms by t too gave 10,391,552 at t 8: 4 x 4,096 x 7/8 = 14,336 fewer).
 * The memory holds 2Ψ of parameters and of gradients, each lane reduce-scatters 2Ψ B and its
 * optimizer op moves 28 B per parameter of its shard Ψ/2 (Megatron under bf16: fp32
 * gradients, 4Ψ, and 38 B). With sequence parallelism the
 * stage's norms, 4 x 4,096 + 2,048 = 18,432 elements, are all-reduced over the TP group once
 * before the step, inside the optimizer op: 36,864 B in the bf16 gradient buffer (generic),
 * 73,728 B in Megatron's fp32 main_grad; nothing without it, nor at t 1. */
#define SMALLTP(tp, extra)                                                                        \
    "{\"topology\": \"x\", \"model\": {\"kind\": \"transformer\", \"layers\": 4, \"hidden\": 1024," \
    " \"heads\": 16, \"seq_len\": 512, \"vocab\": 32000}, \"parallel\": {\"tp\": " #tp ","         \
    " \"pp\": 1, \"dp\": 2, \"zero\": 1" extra "}, \"precision\": \"bf16\", \"global_batch\": 8}"

static void check_tp_rank(const char *text, int n_gpus, double psi, double norm_ar_bytes, double gb,
                          double opt)
{
    mem_breakdown mb;
    load(text, n_gpus);
    mem_compute(&sc.model, &sc.plan, &mb);
    ck_assert_rel(mb.params, 2 * psi, 1e-15);
    ck_assert_rel(mb.grads, gb * psi, 1e-15);
    ck_assert_rel(mb.optimizer, 12 * psi / 2, 1e-15);
    wl_graph *g = wl_graph_build(&sc);
    double rs[16] = {0};
    int opts = 0;
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const wl_op *o = &g->ops[i];
        if (o->kind == WL_OP_COLL && g->colls[o->arg].op == COLL_REDUCE_SCATTER)
            rs[o->lane] += g->colls[o->arg].bytes;
        if (strcmp(g->names[o->name], "optimizer_step")) continue;
        const wl_cost *c = &g->costs[o->arg];
        ck_assert_rel(c->bytes[GPU_OP_OPTIMIZER], psi / 2 * opt, 1e-15);
        if (norm_ar_bytes > 0) {
            ck_assert_int_eq(c->n_inlane, 1);
            ck_assert_int_eq(c->inlane[0].op, COLL_ALLREDUCE);
            ck_assert_int_eq(c->inlane[0].count, 1);
            ck_assert_double_eq(c->inlane[0].bytes, norm_ar_bytes);
        } else {
            ck_assert_int_eq(c->n_inlane, 0);
        }
        opts++;
    }
    ck_assert_int_eq(opts, 2); /* one lane per replica */
    for (int l = 0; l < g->n_lanes; l++)
        ck_assert_rel(rs[l], gb * psi, 1e-15);
    wl_graph_destroy(g);
    unload();
}

START_TEST(tp_rank_params_by_hand)
{
    check_tp_rank(SMALLTP(1, ""), 2, 83118080, 0, 2, 28);
    check_tp_rank(SMALLTP(2, ""), 4, 41568256, 0, 2, 28);
    check_tp_rank(SMALLTP(8, ""), 16, 10405888, 0, 2, 28);
    check_tp_rank(SMALLTP(2, ", \"sequence_parallel\": true"), 4, 41568256, 36864, 2, 28);
    check_tp_rank(SMALLTP(8, ", \"sequence_parallel\": true"), 16, 10405888, 36864, 2, 28);
    /* Megatron under bf16 keeps fp32 main gradients (its reduce_dtype): 4 B per element; its
     * optimizer step moves 38 B per parameter (wl_optimizer_bytes) */
    check_tp_rank("{\"topology\": \"x\", \"model\": {\"kind\": \"transformer\", \"layers\": 4,"
                  " \"hidden\": 1024, \"heads\": 16, \"seq_len\": 512, \"vocab\": 32000},"
                  " \"parallel\": {\"tp\": 8, \"pp\": 1, \"dp\": 2, \"zero\": 1,"
                  " \"sequence_parallel\": true}, \"framework\": {\"preset\": \"megatron\"},"
                  " \"precision\": \"bf16\", \"global_batch\": 8}",
                  16, 10405888, 73728, 4, 38);
    ck_assert_double_eq(wl_tp_rank_params(&(wl_model){.kind = WL_SYNTHETIC}, 800, 4, 8), 100);
}
END_TEST

/* ZeRO-3's gathers and reductions of the root parameters (the embedding and the final norm),
 * by hand: 4 layers, h 1024, f 4096, V 32000, tp 1, pp 1, dp 2, 4 microbatches, bf16. A
 * layer's gather is 12,587,008 x 2 = 25,174,016 B; the root, tied: 32,768,000 + 2,048 =
 * 32,770,048 parameters, 65,540,096 B, carried by each microbatch's first forward gather
 * (layer 0's): 90,714,112 B, then 7 layer gathers (3 forward, 4 backward). Per lane and step
 * 4 x (90,714,112 + 7 x 25,174,016) = 1,067,728,896 B. The reduce-scatters, one bucket per
 * layer (25 MB buckets): layers 3, 2, 1 25,174,016 B, layer 0 with the root 90,714,112 B.
 * Untied the root holds both matrices, 2 x 32,768,000 + 2,048 = 65,538,048 parameters:
 * 131,076,096 B, so 156,250,112 B in layer 0's gather and reduction, and layer 3's bucket
 * stays 25,174,016 B (its output layer and final norm wait for the root's reduction). */
#define ZERO3(tied)                                                                               \
    "{\"topology\": \"x\", \"model\": {\"kind\": \"transformer\", \"layers\": 4, \"hidden\": 1024," \
    " \"heads\": 16, \"seq_len\": 512, \"vocab\": 32000, \"tied_embeddings\": " #tied "},"        \
    " \"parallel\": {\"tp\": 1, \"pp\": 1, \"dp\": 2, \"zero\": 3}, \"precision\": \"bf16\","     \
    " \"global_batch\": 8}"

static void check_zero3_root(const char *text, double root0)
{
    const double layer = 25174016;
    load(text, 2);
    wl_graph *g = wl_graph_build(&sc);
    int n_ag = 0, n_rs = 0;
    double ag_sum = 0;
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const wl_op *o = &g->ops[i];
        if (o->lane != 0 || o->kind != WL_OP_COLL) continue;
        double bytes = g->colls[o->arg].bytes;
        if (!strcmp(g->names[o->name], "zero3_param_gather")) {
            /* every microbatch's first gather is layer 0's forward, with the root */
            ck_assert_double_eq(bytes, n_ag % 8 == 0 ? root0 : layer);
            ag_sum += bytes;
            n_ag++;
        } else if (g->colls[o->arg].op == COLL_REDUCE_SCATTER) {
            /* backward order: layers 3, 2, 1, then 0 with the root */
            ck_assert_double_eq(bytes, n_rs % 4 == 3 ? root0 : layer);
            n_rs++;
        }
    }
    ck_assert_int_eq(n_ag, 32);
    ck_assert_int_eq(n_rs, 16);
    ck_assert_double_eq(ag_sum, 4 * (root0 + 7 * layer));
    wl_graph_destroy(g);
    unload();
}

START_TEST(zero3_root_by_hand)
{
    check_zero3_root(ZERO3(true), 90714112);
    check_zero3_root(ZERO3(false), 156250112);
}
END_TEST

Suite *suite(void)
{
    Suite *s = suite_create("mem");
    TCase *t = tcase_create("core");
    tcase_add_test(t, zero_paper_model_states);
    tcase_add_test(t, korthikanti_activations);
    tcase_add_test(t, activations_gqa_swiglu_no_dropout);
    tcase_add_test(t, inflight_by_schedule);
    tcase_add_test(t, run_memory_scenario);
    tcase_add_test(t, norm_params_published);
    tcase_add_test(t, final_norm_memory_and_graph);
    tcase_add_test(t, tp_rank_params_by_hand);
    tcase_add_test(t, zero3_root_by_hand);
    tcase_add_test(t, fsdp_buffers);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return dt_run_suite(suite()); }
