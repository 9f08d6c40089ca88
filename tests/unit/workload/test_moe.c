/* test_moe.c - mixture of experts and expert parallelism (docs/workloads.md, "Expert
 * parallelism").
 * Pins down: the all-to-all bytes of one MoE layer, b s h e top_k per GPU of which (ep-1)/ep
 * leave, checked in the function and in a run's bytes sent (16 GPUs, 224 MiB by hand); the
 * graph's EP groups (ep consecutive DP ranks of one stage: one DGX box with placement pp,dp,tp)
 * and expert-DP groups (dp/ep ranks with the same EP rank), forward and backward all-to-alls
 * per MoE layer and microbatch; ZeRO-1's layer-by-layer parameter gathers split the same way
 * (dense over dp, experts over dp/ep); parameters, gradients and optimizer state per GPU by hand
 * (experts over ep, their ZeRO shards over dp/ep) and the dispatch buffers; the router's skew:
 * with one expert per rank the loads' max/mean is E / H(E, s) (generalised harmonic number),
 * capped at the capacity factor, the same for the same seed, mean 1 for any ep; and that the
 * busiest rank sets each MoE layer's time: a skewed step is longer than a balanced one by the
 * extra expert time of the busiest rank, layer by layer (within 10 ps). Bad input names its
 * key. ZeRO-3 with expert parallelism: the ZeRO bytes (dense gathers over dp, experts over
 * dp/ep) and parameters per GPU of a step by hand. An explicit head_dim (Qwen3-30B-A3B) by hand: parameters, one layer's forward FLOPs
 * and GEMM shapes, attention FLOPs, activations, the CP ring's KV block, the model FLOPs. Leaves free: which expert is the popular one (a seeded draw), the dense part's costs
 * (test_wl_replay, test_mem). */
#include <math.h>
#include <string.h>

#include "dtsim/replay.h"
#include "dtsim/run.h"
#include "dtsim/workload.h"
#include "wl_testutil.h"

/* 16 H100 in 2 DGX boxes; pp 2, dp 8, ep 8: an EP group is one box. */
#define MOE_MODEL(extra)                                                                        \
    "\"model\": {\"kind\": \"transformer\", \"name\": \"moe\", \"layers\": 4, \"hidden\": 1024,"  \
    " \"heads\": 16, \"seq_len\": 2048, \"vocab\": 32000, \"experts\": 8, \"top_k\": 2,"          \
    " \"expert_ffn\": 2816, \"mlp\": \"swiglu\"" extra "}"
#define MOE_SCENARIO(nodes, extra, parallel)                                                    \
    "{\"topology\": {\"generator\": \"dgx\", \"nodes\": " #nodes ", \"gpus_per_node\": 8,"        \
    " \"gpu\": \"H100-SXM\"}, " MOE_MODEL(extra) ", \"parallel\": {\"tp\": 1, \"pp\": 2,"         \
    " \"ep\": 8, \"micro_batch_size\": 1, \"placement\": \"pp,dp,tp\"" parallel "},"              \
    " \"global_batch\": 32, \"seed\": 1}"

START_TEST(alltoall_bytes)
{
    load(MOE_SCENARIO(2, "", ""), 16);
    double b = 1, s = 2048, h = 1024, e = 2, k = 2, ep = 8;
    ck_assert_rel(wl_moe_alltoall_bytes(&sc.model, &sc.plan), b * s * h * e * k, 1e-15);
    unload();
    /* per GPU: 2 layers per stage x 4 microbatches x 4 all-to-alls (dispatch and combine,
     * forward and backward) x (ep-1)/ep of 8 MiB = 224 MiB */
    run_result r = run_text(MOE_SCENARIO(2, "", ""));
    double want = 2 * 4 * 4 * b * s * h * e * k * (ep - 1) / ep;
    ck_assert_rel(want, 224.0 * 1024 * 1024, 1e-15);
    ck_assert_rel(r.bytes_sent_per_gpu[WL_COMM_EP], want, 1e-12);
    ck_assert_double_gt(r.comm_inflight_by_kind_s[WL_COMM_EP], 0);
    run_result_free(&r);
}
END_TEST

/* GPUs of the participants of collective instance c, in op order (k-th GPU of each lane). */
static int coll_gpus(const wl_graph *g, uint32_t c, int *out)
{
    int n = 0;
    for (uint32_t i = 0; i < g->n_ops; i++)
        if (g->ops[i].kind == WL_OP_COLL && g->ops[i].arg == c)
            out[n++] = g->lane_gpus[(size_t)g->ops[i].lane * g->lane_size];
    return n;
}

START_TEST(groups)
{
    /* 32 GPUs: pp 2 x dp 16, ep 8 -> expert-DP groups of dp/ep = 2 */
    load(MOE_SCENARIO(4, "", ""), 32);
    ck_assert_int_eq(sc.plan.dp, 16);
    wl_graph *g = wl_graph_build(&sc);
    uint32_t dispatch = wl_graph_name(g, "ep_dispatch"), combine = wl_graph_name(g, "ep_combine");
    uint32_t edp = wl_graph_name(g, "expert_dp_allreduce");
    int n_disp = 0, n_comb = 0, n_edp = 0, gpus[64];
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const wl_op *o = &g->ops[i];
        if (o->lane != 0) continue;
        n_disp += o->name == dispatch;
        n_comb += o->name == combine;
        n_edp += o->name == edp;
    }
    /* lane 0: 2 MoE layers x 2 microbatches (global 32 / dp 16) x forward and backward */
    ck_assert_int_eq(n_disp, 2 * 2 * 2);
    ck_assert_int_eq(n_comb, 2 * 2 * 2);
    ck_assert_int_eq(n_edp, 1); /* one bucket: 2 layers of experts are 44 MB / 8 < 25 MB */
    int seen_ep = 0, seen_edp = 0;
    for (uint32_t c = 0; c < g->n_colls; c++) {
        int n = coll_gpus(g, c, gpus);
        if (g->colls[c].op == COLL_ALLTOALL) {
            /* 8 consecutive GPUs: one box (placement pp,dp,tp: gpu = (stage x 16 + d)) */
            ck_assert_int_eq(g->colls[c].kind, WL_COMM_EP);
            ck_assert_int_eq(n, 8);
            for (int i = 0; i < n; i++) ck_assert_int_eq(gpus[i] / 8, gpus[0] / 8);
            seen_ep++;
        } else if (n == 2 && g->colls[c].kind == WL_COMM_DP) {
            /* expert-DP: DP ranks d and d + ep of one stage, holding the same experts */
            ck_assert_int_eq(gpus[1] - gpus[0], 8);
            seen_edp++;
        } else {
            /* dense gradients: all DP ranks of a stage; or the tied embedding's two stages */
            ck_assert_int_eq(n, g->colls[c].kind == WL_COMM_PP ? 2 : 16);
        }
    }
    /* instances: 2 stages x 2 EP groups x 2 layers x 2 microbatches x 4 */
    ck_assert_int_eq(seen_ep, 2 * 2 * 2 * 2 * 4);
    ck_assert_int_eq(seen_edp, 2 * 8);
    wl_graph_destroy(g);
    unload();
}
END_TEST

/* ZeRO-1 with the parameter gather in the next forward (Megatron --overlap-param-gather): each
 * layer's dense parameters are gathered over all DP ranks, its routed experts (1/ep of them)
 * over their expert-DP group only. */
START_TEST(param_gather_groups)
{
    load("{\"topology\": \"x\", " MOE_MODEL("") ", \"parallel\": {\"pp\": 2, \"ep\": 8,"
         " \"zero\": 1, \"placement\": \"pp,dp,tp\"}, \"global_batch\": 32, \"framework\":"
         " {\"preset\": \"megatron\", \"overlap_param_gather\": true}}", 32);
    wl_graph *g = wl_graph_build(&sc);
    double h = 1024, E = 8, f = 2816, ep = 8, pb = 2;
    double dense = 2 * h * h + 2 * h * h + h * E + 4 * h, experts = E * 3 * h * f / ep;
    uint32_t dense_ag = wl_graph_name(g, "zero_param_allgather");
    uint32_t expert_ag = wl_graph_name(g, "expert_param_allgather");
    int n_dense = 0, n_expert = 0, gpus[64];
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const wl_op *o = &g->ops[i];
        if (o->kind != WL_OP_COLL || o->lane != 1 || o->layer < 0) continue; /* stage 1 of DP rank 0 */
        const wl_coll *c = &g->colls[o->arg];
        if (o->name == dense_ag) {
            /* layers 2 and 3: the last one also holds the output layer (untied: V h) and
             * the final LayerNorm (2h) */
            double want = dense * pb + (o->layer == 3 ? (32000 * h + 2 * h) * pb : 0);
            ck_assert_rel(c->bytes, want, 1e-15);
            ck_assert_int_eq(coll_gpus(g, o->arg, gpus), 16);
            n_dense++;
        } else if (o->name == expert_ag) {
            ck_assert_rel(c->bytes, experts * pb, 1e-15);
            ck_assert_int_eq(coll_gpus(g, o->arg, gpus), 2);
            n_expert++;
        }
    }
    ck_assert_int_eq(n_dense, 2);
    ck_assert_int_eq(n_expert, 2);
    wl_graph_destroy(g);
    unload();
}
END_TEST

START_TEST(memory_by_hand)
{
    /* pp 1 on 8 GPUs, dp 8, ep 4, ZeRO-1; untied embeddings on one stage (both matrices) */
    load("{\"topology\": \"x\", " MOE_MODEL(", \"tied_embeddings\": false, \"shared_experts\": 1")
         ", \"parallel\": {\"ep\": 4, \"zero\": 1}, \"global_batch\": 8}", 8);
    double L = 4, h = 1024, V = 32000, E = 8, f = 2816, ep = 4, dp = 8, kv = 1024;
    double attn = 2 * h * h + 2 * h * kv, expert = 3 * h * f;
    /* dense: the layers' shared parts, both embedding matrices and the final LayerNorm's 2h */
    double dense = L * (attn + expert /* shared */ + h * E /* router */ + 4 * h) + 2 * V * h +
                   2 * h;
    double routed = L * E * expert / ep;
    ck_assert_rel(wl_total_params(&sc.model), dense + L * E * expert, 1e-15);
    mem_breakdown mb;
    mem_compute(&sc.model, &sc.plan, &mb);
    ck_assert_rel(mb.params, 2 * (dense + routed), 1e-12);
    ck_assert_rel(mb.grads, 2 * (dense + routed), 1e-12);
    /* ZeRO-1: dense states over dp 8, the experts' over their dp/ep = 2 replicas */
    ck_assert_rel(mb.optimizer, 12 * dense / dp + 12 * routed / (dp / ep), 1e-12);
    /* dispatch buffers: send b s k h e, receive as much times the busiest rank's load
     * (balanced router: 1) */
    double a2a = 2048.0 * 2 * h * 2;
    ck_assert_rel(mem_moe_dispatch_buffers(&sc.model, &sc.plan), 2 * a2a, 1e-15);
    unload();
}
END_TEST

START_TEST(imbalance_max_over_mean)
{
    wl_model m = {.kind = WL_TRANSFORMER, .layers = 4, .hidden = 64, .heads = 4, .kv_heads = 4,
                  .seq_len = 64, .vocab = 100, .ffn = 256, .experts = 16, .top_k = 2,
                  .router_zipf = 1.2, .router_seed = 7};
    double H = 0;
    for (int i = 1; i <= 16; i++) H += pow(i, -1.2);
    double loads[16], again[16];
    for (int layer = 0; layer < 4; layer++) {
        /* one expert per rank: the busiest holds the top Zipf share, E / H(E, s) of the mean */
        wl_moe_rank_loads(&m, 16, layer, m.router_seed, loads);
        double mx = 0, sum = 0;
        for (int e = 0; e < 16; e++) {
            mx = fmax(mx, loads[e]);
            sum += loads[e];
        }
        ck_assert_rel(sum / 16, 1, 1e-14);
        ck_assert_rel(mx, 16 / H, 1e-14); /* 5.21 */
        wl_moe_rank_loads(&m, 16, layer, m.router_seed, again);
        ck_assert(!memcmp(loads, again, sizeof loads));
    }
    ck_assert_rel(wl_moe_max_load(&m, 16), 16 / H, 1e-14); /* over all MoE layers */
    /* 4 experts per rank: still mean 1, max at most the one-per-rank max */
    for (int layer = 0; layer < 4; layer++) {
        wl_moe_rank_loads(&m, 4, layer, m.router_seed, loads);
        double mx = 0, sum = 0;
        for (int e = 0; e < 4; e++) {
            mx = fmax(mx, loads[e]);
            sum += loads[e];
        }
        ck_assert_rel(sum / 4, 1, 1e-14);
        ck_assert(mx > 1 && mx < 16 / H);
    }
    /* capacity factor 2: no expert computes more than twice its share (the rest is dropped) */
    m.capacity_factor = 2;
    wl_moe_rank_loads(&m, 16, 0, m.router_seed, loads);
    double mx = 0;
    for (int e = 0; e < 16; e++) mx = fmax(mx, loads[e]);
    ck_assert_rel(mx, 2, 1e-15);
    /* balanced router */
    m.capacity_factor = 0;
    m.router_zipf = 0;
    wl_moe_rank_loads(&m, 8, 0, m.router_seed, loads);
    for (int e = 0; e < 8; e++) ck_assert_rel(loads[e], 1, 1e-15);
}
END_TEST

/* The busiest EP rank sets the layer time: pp 1, one microbatch, 8 GPUs in one box, ep 8 (one
 * expert per GPU), gradients reduced after the backward. Skewed minus balanced step time =
 * sum over MoE layers of the busiest rank's extra expert time, forward and backward. */
#define ONE_BOX(zipf)                                                                           \
    "{\"topology\": {\"generator\": \"dgx\", \"nodes\": 1, \"gpus_per_node\": 8,"                 \
    " \"gpu\": \"H100-SXM\"}, " MOE_MODEL(", \"router_zipf\": " zipf)                             \
    ", \"parallel\": {\"ep\": 8, \"overlap_dp\": false}, \"global_batch\": 8,"                    \
    " \"options\": {\"network\": \"analytic\"}}"

START_TEST(slowest_expert_sets_layer_time)
{
    run_result flat = run_text(ONE_BOX("0"));
    run_result skew = run_text(ONE_BOX("1.5"));
    load(ONE_BOX("1.5"), 8);
    wl_layer_cost lc;
    wl_layer_cost_get(&sc.model, &sc.plan, &lc);
    ck_assert_rel(lc.expert_matmul_flops, 2 * 2048.0 * 3 * 1024 * 2816 * 2, 1e-15);
    gpu_spec h100;
    dt_error e;
    ck_assert_int_eq(gpu_preset("H100-SXM", &h100, &e), DT_OK);
    double F = lc.expert_matmul_flops, loads[8];
    sim_time_t extra = 0;
    for (int l = 0; l < 4; l++) {
        wl_moe_rank_loads(&sc.model, 8, l, sc.model.router_seed, loads);
        double mx = 0;
        for (int i = 0; i < 8; i++) mx = fmax(mx, loads[i]);
        ck_assert_rel(mx, 8 / (1 + pow(2, -1.5) + pow(3, -1.5) + pow(4, -1.5) + pow(5, -1.5) +
                               pow(6, -1.5) + pow(7, -1.5) + pow(8, -1.5)), 1e-14);
        for (int bwd = 1; bwd <= 2; bwd++)
            /* (the generator's order of operations: a 1-ulp change may move a picosecond) */
            extra += replay_roofline(&h100, GPU_OP_MATMUL, GPU_BF16, bwd * (F * mx), 0) -
                     replay_roofline(&h100, GPU_OP_MATMUL, GPU_BF16, bwd * F, 0);
    }
    unload();
    ck_assert_double_gt(sim_time_to_s(extra), 1e-4);
    /* within 10 ps over the 8 expert ops (each op rounds up to the picosecond on its own) */
    ck_assert(fabs(skew.step_time_s - flat.step_time_s - sim_time_to_s(extra)) <= 10e-12);
    /* the other ranks wait for it at the combine all-to-all: straggler wait, not compute */
    ck_assert_double_gt(skew.max_straggler_wait_s, 0.5 * sim_time_to_s(extra));
    run_result_free(&flat);
    run_result_free(&skew);
}
END_TEST

/* Qwen3-30B-A3B (Qwen/Qwen3-30B-A3B config.json: hidden 2048, 48 layers, 32 heads of width 128
 * (head_dim: queries 4096 wide, twice the hidden size), 4 KV heads, 128 experts of width 768,
 * top 8, vocab 151,936, untied embeddings), one layer by hand:
 *   Q 2048 x 4096 + K, V 2048 x 512 each + O 4096 x 2048          =  18,874,368
 *   one expert (SwiGLU) 3 x 2048 x 768 = 4,718,592; router 2048 x 128 = 262,144
 *   layer: 18,874,368 + 128 x 4,718,592 + 262,144 + 4 x 2048      = 623,124,480
 *   model: 48 x 623,124,480 + 2 x 151,936 x 2048 + 2 x 2048       = 30,532,308,992 (30.5 B)
 *   active per token: 18,874,368 + 8 x 4,718,592 + 262,144         =  56,885,248
 * so one layer's forward GEMMs on a 4096-token sequence: 2 x 4096 x 56,885,248 =
 * 466,003,951,616 FLOPs, its causal flash attention half of 4 s^2 a d = 137,438,953,472, the
 * QKV GEMM 4096 x 5120 x 2048 and the projection 4096 x 2048 x 4096; activations (no
 * recomputation) 3sbh + 8sb(ad) + 8 (3sbh + 6sbf) + 4sbh = 545,259,520 bytes; the KV block of a
 * CP 2 ring step 2 x 2048 x 512 x 2 = 4,194,304 bytes; model FLOPs of one sequence
 * 3 (48 (2 s P_active + 4 s^2 a d) + 2 s h V) = 114,334,176,903,168. */
#define QWEN3(extra)                                                                            \
    "{\"topology\": \"x\", \"model\": {\"kind\": \"transformer\", \"layers\": 48, \"hidden\": 2048," \
    " \"heads\": 32, \"head_dim\": 128, \"kv_heads\": 4, \"seq_len\": 4096, \"vocab\": 151936,"    \
    " \"tied_embeddings\": false, \"mlp\": \"swiglu\", \"experts\": 128, \"top_k\": 8,"            \
    " \"expert_ffn\": 768}" extra "}"

START_TEST(head_dim_by_hand)
{
    load(QWEN3(""), 1);
    const wl_model *m = &sc.model;
    ck_assert_double_eq(wl_q_width(m), 4096);
    ck_assert_double_eq(wl_kv_width(m), 512);
    ck_assert_double_eq(wl_layer_params(m), 623124480.0);
    ck_assert_double_eq(wl_total_params(m), 30532308992.0);
    ck_assert_double_eq(m->params, 30532308992.0);
    wl_layer_cost lc;
    wl_layer_cost_get(m, &sc.plan, &lc);
    ck_assert_rel(lc.fwd_matmul_flops, 466003951616.0, 1e-15);
    ck_assert_rel(lc.fwd_attn_flops, 137438953472.0, 1e-15);
    gpu_gemm gs[WL_LAYER_GEMMS_MAX];
    int n = wl_layer_gemms(m, &sc.plan, gs);
    ck_assert_int_ge(n, 2);
    ck_assert(gs[0].m == 4096 && gs[0].n == 5120 && gs[0].k == 2048 && gs[0].count == 1);
    ck_assert(gs[1].m == 4096 && gs[1].n == 2048 && gs[1].k == 4096 && gs[1].count == 1);
    double sum = 0;
    for (int i = 0; i < n; i++) sum += 2 * gs[i].m * gs[i].n * gs[i].k * gs[i].count;
    ck_assert_rel(sum, 466003951616.0, 1e-15);
    /* per token: attention 2h + 4q + 4kv + h (the QKV input, Q and the projection's input at
     * the query width 4,096, K and V at the key/value width 512, the dropout mask) = 24,576,
     * MLP 8 x (3h + 6f) = 86,016, norms 4h = 8,192: 118,784 B x 4,096 tokens */
    ck_assert_rel(mem_activation_per_layer(m, &sc.plan), 486539264.0, 1e-15);
    ck_assert_rel(wl_model_flops_per_step(m, 1), 114334176903168.0, 1e-15);
    wl_plan cp2 = sc.plan;
    cp2.cp = 2;
    ck_assert_rel(wl_cp_ring_bytes(m, &cp2), 4194304.0, 1e-15);
    unload();
    /* without head_dim nothing changes: d = h / a */
    load("{\"topology\": \"x\", \"model\": {\"kind\": \"transformer\", \"layers\": 2, \"hidden\": 1024,"
         " \"heads\": 16, \"head_dim\": 64, \"kv_heads\": 4, \"seq_len\": 512, \"vocab\": 1000}}", 1);
    wl_model with = sc.model;
    unload();
    load("{\"topology\": \"x\", \"model\": {\"kind\": \"transformer\", \"layers\": 2, \"hidden\": 1024,"
         " \"heads\": 16, \"kv_heads\": 4, \"seq_len\": 512, \"vocab\": 1000}}", 1);
    ck_assert_double_eq(wl_total_params(&with), wl_total_params(&sc.model));
    ck_assert_double_eq(wl_model_flops_per_step(&with, 1), wl_model_flops_per_step(&sc.model, 1));
    unload();
}
END_TEST

/* ZeRO-3 with expert parallelism (FSDP2 with EP): each layer's gathers assemble the dense part
 * over all dp replicas and this GPU's 1/ep of the routed experts over the expert-DP group.
 * dp 16, ep 8 (expert-DP groups of 2), 4 layers, 2 microbatches, by hand:
 *   dense layer  4h^2 (attention, no GQA) + hE (router) + 4h = 4,206,592 params = 8,413,184 B
 *   experts      8 x 3 x 1024 x 2816 / ep 8 = 8,650,752 params on this GPU  = 17,301,504 B
 * one gather per layer op, forward and backward: 2 microbatches x 2 x 4 = 16 each, a ring
 * all-gather sending (n-1)/n of its output: 16 (15/16 8,413,184 + 1/2 17,301,504) =
 * 264,609,792, and the root unit (the tied embedding 32,768,000 and the final LayerNorm 2,048:
 * 65,540,096 B) with each microbatch's first forward gather, 2 x 15/16 x 65,540,096 =
 * 122,887,680: 387,497,472 ZeRO bytes per GPU; parameters per GPU (embedding 32,768,000 on the stage, tied, and the final
 * LayerNorm's 2h = 2,048): (4 x 4,206,592 + 32,768,000 + 2,048) x 2 / 16 +
 * 4 x 8 x 8,650,752 / 8 x 2 / 2 = 40,802,560 B. */
START_TEST(zero3_with_ep)
{
    const char *text = "{\"topology\": {\"generator\": \"dgx\", \"nodes\": 2, \"gpus_per_node\": 8,"
                       " \"gpu\": \"H100-SXM\"}, " MOE_MODEL("") ", \"parallel\": {\"pp\": 1, \"dp\": 16,"
                       " \"ep\": 8, \"zero\": 3, \"micro_batch_size\": 1}, \"global_batch\": 32}";
    run_result r = run_text(text);
    ck_assert_rel(r.bytes_sent_per_gpu[WL_COMM_ZERO], 264609792.0 + 2 * 15.0 / 16 * 65540096,
                  1e-12);
    ck_assert_rel(r.bytes_sent_per_gpu[WL_COMM_ZERO], 387497472.0, 1e-12);
    ck_assert_rel(r.memory.params, 40802560.0, 1e-12);
    ck_assert_double_gt(r.step_time_s, 0);
    run_result_free(&r);
}
END_TEST

START_TEST(bad_input)
{
    load_refused("{\"topology\": \"x\", " MOE_MODEL("") ", \"parallel\": {\"ep\": 3}}", 6, "parallel.ep",
        "divide the model's experts");
    load_refused("{\"topology\": \"x\", " MOE_MODEL("") ", \"parallel\": {\"ep\": 8, \"dp\": 4}}", 4,
        "parallel.ep", "must divide dp");
    load_refused("{\"topology\": \"x\", \"model\": {\"kind\": \"transformer\", \"layers\": 2, \"hidden\": 64,"
        " \"heads\": 4, \"seq_len\": 64, \"vocab\": 100, \"router_zipf\": 1}}", 1,
        "model.router_zipf", "needs a mixture of experts");
    load_refused("{\"topology\": \"x\", " MOE_MODEL(", \"capacity_factor\": 0.5") "}", 1,
        "model.capacity_factor", "at least 1");
    load_refused("{\"topology\": \"x\", \"model\": {\"kind\": \"transformer\", \"layers\": 2, \"hidden\": 64,"
        " \"heads\": 4, \"seq_len\": 64, \"vocab\": 100}, \"parallel\": {\"ep\": 2}}", 2,
        "parallel.ep", "divide the model's experts");
    load_refused("{\"topology\": \"x\", \"model\": {\"kind\": \"transformer\", \"layers\": 2,"
        " \"hidden\": 64, \"heads\": 3, \"seq_len\": 64, \"vocab\": 100}}", 1, "model.heads",
        "or give \"head_dim\"");
    load_refused("{\"topology\": \"x\", \"model\": {\"kind\": \"transformer\", \"layers\": 2,"
        " \"hidden\": 64, \"heads\": 3, \"head_dim\": 0.5, \"seq_len\": 64, \"vocab\": 100}}", 1,
        "model.head_dim", "");
    load_refused("{\"topology\": \"x\", \"model\": {\"kind\": \"transformer\", \"layers\": 2,"
        " \"hidden\": 64, \"heads\": 3, \"head_dim\": 20.5, \"seq_len\": 64, \"vocab\": 100}}", 1,
        "model.head_dim", "a whole number");
    load_refused("{\"topology\": \"x\", \"model\": {\"kind\": \"params\", \"params\": 1e9,"
        " \"head_dim\": 128}}", 1, "model.head_dim", "not a key");
    /* heads of their own width need not divide the hidden size */
    load("{\"topology\": \"x\", \"model\": {\"kind\": \"transformer\", \"layers\": 2,"
         " \"hidden\": 64, \"heads\": 3, \"head_dim\": 20, \"seq_len\": 64, \"vocab\": 100}}", 1);
    ck_assert_double_eq(wl_q_width(&sc.model), 60);
    unload();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("moe");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, alltoall_bytes);
    tcase_add_test(tc, groups);
    tcase_add_test(tc, param_gather_groups);
    tcase_add_test(tc, memory_by_hand);
    tcase_add_test(tc, imbalance_max_over_mean);
    tcase_add_test(tc, slowest_expert_sets_layer_time);
    tcase_add_test(tc, head_dim_by_hand);
    tcase_add_test(tc, zero3_with_ep);
    tcase_add_test(tc, bad_input);
    suite_add_tcase(s, tc);
    return dt_run_suite(s);
}
