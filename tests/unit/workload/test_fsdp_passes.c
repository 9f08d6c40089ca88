/* test_fsdp_passes.c - the memory passes of PyTorch FSDP (FSDP1, flat parameters) and of
 * llm-foundry's MPT layer that dtsim charges (docs/workloads.md, "FSDP's own passes" and
 * "Compute time of an op").
 * Pins down, on hand-computed bytes: FSDP's gradient pre/post-division factors for d ranks; the
 * post-backward stream's passes around a reduction (cast to reduce_dtype, pre-division of the
 * unsharded gradient, post-division and fp32 cast of the shard, accumulation into the saved
 * shard) for DEFAULT (fp32 reduction) and PURE (bf16) mixed precision, sharded and not; the
 * pre-unshard cast of the fp32 shard before an all-gather; the flat gradient's concatenation in
 * every backward (2e per unsharded parameter, on the compute stream); the embedding's dense
 * gradient (zero-fill, and the tied output layer's sum: 4e per element); the cross-entropy's bytes
 * per logit, fp32 and fused; the unpad/pad copies around the flash kernel, MHA and GQA. In the
 * op graph: the backward ops carry the concatenation and the copies, the forward ops the
 * copies, the output layer the fused loss; the ZeRO-3 reduce-scatters and gathers carry their
 * passes as wl_coll.hbm_bytes, which a trace keeps; in the replay those passes slow a
 * memory-bound op beside the collective by exactly the HBM they take (closed form), and nothing
 * without a collective in flight. Bad option values are located errors.
 * Leaves free: op ids, graph size, the step time of a whole scenario. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "dtsim/replay.h"
#include "dtsim/workload.h"
#include "wl_testutil.h"

#define TRANSFORMER                                                                          \
    "\"model\": {\"kind\": \"transformer\", \"layers\": 4, \"hidden\": 1024, \"heads\": 16,"  \
    "\"seq_len\": 512, \"vocab\": 32000}"

static void plan_with(wl_plan *p, wl_framework_preset preset, wl_precision prec, double reduce,
                      int zero)
{
    memset(p, 0, sizeof *p);
    p->fw.preset = preset;
    p->precision = prec;
    p->fw.reduce_bytes = reduce;
    p->zero = zero;
}

/* DefaultState._get_gradient_predivide_factor: double f while d % f == 0 and d / f > f */
START_TEST(divide_factors)
{
    ck_assert_double_eq(wl_fsdp_predivide(1), 1);
    ck_assert_double_eq(wl_fsdp_predivide(2), 2);  /* post 1 */
    ck_assert_double_eq(wl_fsdp_predivide(6), 4);  /* 6 % 4 != 0 stops it: post 1.5 */
    ck_assert_double_eq(wl_fsdp_predivide(8), 4);  /* post 2 */
    ck_assert_double_eq(wl_fsdp_predivide(64), 8); /* post 8 */
}
END_TEST

/* One reduction of G = 1e6 unsharded gradient elements, bf16 training:
 * DEFAULT (reduce fp32), d 8: cast 2 + 4 = 6 G, pre-division (4) 8 G, post-division (2) of the
 * G/8 shard 8 G/8: 15e6 B; accumulating a later microbatch adds 12 G/8 = 1.5e6.
 * PURE (reduce bf16), d 8: no cast, pre 4 G, post 4 G/8, the shard's cast to fp32 6 G/8: 5.25e6.
 * DEFAULT, d 2: pre 2, post 1 (skipped): 6 G + 8 G = 14e6.
 * NO_SHARD (zero 0), DEFAULT, d 8: cast 6 G, pre 8 G, post 8 G on the whole all-reduced
 * gradient: 22e6 (its fp32 result needs no cast; accumulation is implicit).
 * Any other preset, or one rank: 0. */
START_TEST(reduce_passes)
{
    wl_plan p;
    plan_with(&p, WL_FW_FSDP, WL_BF16, 4, 3);
    ck_assert_double_eq(wl_fsdp_reduce_pass_bytes(&p, 1e6, 8, false), 15e6);
    ck_assert_double_eq(wl_fsdp_reduce_pass_bytes(&p, 1e6, 8, true), 16.5e6);
    ck_assert_double_eq(wl_fsdp_reduce_pass_bytes(&p, 1e6, 2, false), 14e6);
    ck_assert_double_eq(wl_fsdp_reduce_pass_bytes(&p, 1e6, 1, false), 0);
    plan_with(&p, WL_FW_FSDP, WL_BF16, 0, 3); /* PURE: the training precision */
    ck_assert_double_eq(wl_fsdp_reduce_pass_bytes(&p, 1e6, 8, false), 5.25e6);
    plan_with(&p, WL_FW_FSDP, WL_BF16, 4, 0);
    ck_assert_double_eq(wl_fsdp_reduce_pass_bytes(&p, 1e6, 8, true), 22e6);
    plan_with(&p, WL_FW_GENERIC, WL_BF16, 4, 3);
    ck_assert_double_eq(wl_fsdp_reduce_pass_bytes(&p, 1e6, 8, false), 0);
    plan_with(&p, WL_FW_MEGATRON, WL_BF16, 4, 1);
    ck_assert_double_eq(wl_fsdp_reduce_pass_bytes(&p, 1e6, 8, false), 0);
}
END_TEST

/* The pre-unshard cast: read 4, write e per shard element; none in fp32. The flat gradient's
 * concatenation: 2e per unsharded parameter, fsdp only. */
START_TEST(gather_and_flat_grad)
{
    wl_plan p;
    plan_with(&p, WL_FW_FSDP, WL_BF16, 4, 3);
    ck_assert_double_eq(wl_fsdp_gather_pass_bytes(&p, 1e6, 8), 6 * 1e6 / 8);
    ck_assert_double_eq(wl_fsdp_flat_grad_bytes(&p), 4);
    plan_with(&p, WL_FW_FSDP, WL_FP32, 0, 3);
    ck_assert_double_eq(wl_fsdp_gather_pass_bytes(&p, 1e6, 8), 0);
    ck_assert_double_eq(wl_fsdp_flat_grad_bytes(&p), 8);
    plan_with(&p, WL_FW_GENERIC, WL_BF16, 0, 3);
    ck_assert_double_eq(wl_fsdp_gather_pass_bytes(&p, 1e6, 8), 0);
    ck_assert_double_eq(wl_fsdp_flat_grad_bytes(&p), 0);
}
END_TEST

/* Per logit, bf16: fp32 loss e + 32 forward, 12 + e backward; fused e and 2e. Per token and
 * layer, bf16, h 1024: MHA (q = k = v = 1024 wide) forward 2 (2 x 3072 + 3 x 1024) = 18,432 B,
 * backward 2 (2 x 1024 + 5 x 3072) = 34,816 B; GQA with 4 KV heads of 16 (k, v 256 wide, qkv
 * 1536) forward 2 (3072 + 3072) = 12,288, backward 2 (2048 + 7680) = 19,456; without the option,
 * or unfused, 0. */
START_TEST(loss_and_unpad_bytes)
{
    load("{\"topology\": \"x\", " TRANSFORMER ", \"precision\": \"bf16\"}", 1);
    ck_assert_double_eq(wl_cross_entropy_bytes(&sc.plan, false), 34);
    ck_assert_double_eq(wl_cross_entropy_bytes(&sc.plan, true), 14);
    ck_assert_double_eq(wl_attention_unpad_bytes(&sc.model, &sc.plan, false), 0);
    unload();
    load("{\"topology\": \"x\", " TRANSFORMER ", \"precision\": \"bf16\", \"framework\": {\"preset\":"
         " \"fsdp\", \"cross_entropy\": \"fused\", \"attention_unpad\": true}}", 1);
    ck_assert_double_eq(wl_cross_entropy_bytes(&sc.plan, false), 2);
    ck_assert_double_eq(wl_cross_entropy_bytes(&sc.plan, true), 4);
    ck_assert_double_eq(wl_attention_unpad_bytes(&sc.model, &sc.plan, false), 18432);
    ck_assert_double_eq(wl_attention_unpad_bytes(&sc.model, &sc.plan, true), 34816);
    sc.model.kv_heads = 4;
    ck_assert_double_eq(wl_attention_unpad_bytes(&sc.model, &sc.plan, false), 12288);
    ck_assert_double_eq(wl_attention_unpad_bytes(&sc.model, &sc.plan, true), 19456);
    sc.model.attention = WL_ATTN_UNFUSED;
    ck_assert_double_eq(wl_attention_unpad_bytes(&sc.model, &sc.plan, false), 0);
    unload();
}
END_TEST

static double op_bytes(const wl_graph *g, const char *name, int layer, int cls)
{
    for (uint32_t i = 0; i < g->n_ops; i++)
        if (g->ops[i].lane == 0 && g->ops[i].layer == layer && !strcmp(g->names[g->ops[i].name], name))
            return g->costs[g->ops[i].arg].bytes[cls];
    ck_abort_msg("no %s op of layer %d", name, layer);
    return 0;
}

/* ZeRO-3 over 2 GPUs, one microbatch of 2 x 512 tokens, bf16, fsdp with fp32 reduction, fused
 * loss and unpad copies, against the same plan on generic: per-layer ops. A middle layer's
 * forward gains 1024 tokens x 18,432 B of copies and its own kernels' difference (MPT's block
 * 46 h B per token against generic's 68 h); its backward 1024 x 34,816 B of copies, the
 * kernels' difference (84 h against 136 h) and its P parameters' flat gradient, 4 P; the last layer's (the output layer's fused loss instead
 * of the fp32 one) (2 + 4 - 34 - 14) B per logit, 1024 x 32000 logits; the first layer's
 * backward also the tied embedding's V h parameters' concatenation (4 B each) and its dense
 * gradient's zero-fill and autograd's sum with the output layer's (2 + 6 B each). Its reduce-scatter carries
 * 14 P (cast 6, pre-division by 2 8, post-division by 1 none), its gathers 6 P/2. */
START_TEST(passes_in_graph)
{
    const char *fmt = "{\"topology\": \"x\", " TRANSFORMER ", \"parallel\": {\"dp\": 2, \"zero\": 3,"
                      " \"micro_batch_size\": 2}, \"precision\": \"bf16\", \"framework\": %s}";
    char text[1024];
    double fwd[2][4], bwd[2][4];
    for (int k = 0; k < 2; k++) {
        snprintf(text, sizeof text, fmt,
                 k ? "{\"preset\": \"fsdp\", \"reduce_dtype\": \"fp32\", \"cross_entropy\": \"fused\","
                     " \"attention_unpad\": true}"
                   : "\"generic\"");
        load(text, 2);
        wl_graph *g = wl_graph_build(&sc);
        for (int l = 0; l < 4; l++) {
            fwd[k][l] = op_bytes(g, "forward", l, GPU_OP_ELEMENTWISE);
            bwd[k][l] = op_bytes(g, "backward", l, GPU_OP_ELEMENTWISE);
        }
        double P = wl_layer_params(&sc.model), rs = 0, ag = 0;
        int n_rs = 0, n_ag = 0;
        for (uint32_t i = 0; i < g->n_colls; i++) {
            const wl_coll *c = &g->colls[i];
            if (c->op == COLL_REDUCE_SCATTER && fabs(c->bytes - (k ? 4 : 2) * P) < 1) {
                rs = c->hbm_bytes;
                n_rs++;
            }
            if (c->op == COLL_ALLGATHER && fabs(c->bytes - 2 * P) < 1) {
                ag = c->hbm_bytes;
                n_ag++;
            }
        }
        ck_assert_int_ge(n_rs, 2); /* the middle layers' reductions (fp32 under fsdp here) */
        ck_assert_int_ge(n_ag, 2);
        if (k) {
            ck_assert_rel(rs, 14 * P, 1e-12);
            ck_assert_rel(ag, 3 * P, 1e-12);
        } else {
            ck_assert_double_eq(rs, 0);
            ck_assert_double_eq(ag, 0);
        }
        wl_graph_destroy(g);
        if (k == 1) {
            double P1 = wl_layer_params(&sc.model), V = 32000, h = 1024, toks = 1024;
            for (int l = 0; l < 4; l++) {
                double dl = l == 3 ? toks * V * (2 - 34) : 0;
                double bl = l == 3 ? toks * V * (4 - 14) : 0;
                double emb = l == 0 ? V * h * (4 + 8) : 0; /* concatenation; zero-fill and tied sum */
                /* the layer's own kernels: MPT's eager block (46 h B per token forward, 84 h
                 * backward; docs/workloads.md, "Elementwise traffic of a layer") against
                 * generic's 34 e h and 68 e h */
                ck_assert_rel(fwd[1][l] - fwd[0][l], toks * (18432 + (46 - 68) * h) + dl, 1e-9);
                ck_assert_rel(bwd[1][l] - bwd[0][l],
                              toks * (34816 + (84 - 136) * h) + 4 * P1 + emb + bl, 1e-9);
            }
        }
        unload();
    }
}
END_TEST

/* A trace keeps a collective's hbm_bytes: written, read back, the same figure. */
START_TEST(trace_keeps_passes)
{
    load("{\"topology\": \"x\", " TRANSFORMER ", \"parallel\": {\"dp\": 2, \"zero\": 3},"
         "\"precision\": \"bf16\", \"framework\": {\"preset\": \"fsdp\", \"reduce_dtype\": \"fp32\"}}", 2);
    wl_graph *g = wl_graph_build(&sc);
    wl_graph *h = graph_through_trace(g);
    ck_assert_uint_eq(h->n_colls, g->n_colls);
    int with = 0;
    for (uint32_t i = 0; i < g->n_colls; i++) {
        ck_assert_double_eq(h->colls[i].hbm_bytes, g->colls[i].hbm_bytes);
        with += g->colls[i].hbm_bytes > 0;
    }
    ck_assert_int_gt(with, 0);
    wl_graph_destroy(h);
    wl_graph_destroy(g);
    unload();
}
END_TEST

static void uni_path(void *ctx, int a, int b, double *bw, sim_time_t *lat)
{
    (void)ctx;
    (void)a;
    (void)b;
    *bw = 100e9;
    *lat = 0;
}

/* End of a 1 ms op on lane 0 of two H100s (3.35 TB/s x 0.8 = 2.68 TB/s achieved, 989.5
 * TFLOP/s bf16 at the flat 0.7), memory-bound or a GEMM (no shapes), beside a 0.5 ms
 * all-gather of both lanes over 100 GB/s links (1e8 B output: 5e7 B sent each, 7 NCCL
 * channels) that carries `passes` bytes of framework passes. */
static double op_end_ms(double passes, bool gemm)
{
    wl_graph *g = wl_graph_create(2, 2, 1);
    g->lane_gpus[0] = 0;
    g->lane_gpus[1] = 1;
    wl_cost cc = {0};
    if (gemm)
        cc.flops[GPU_OP_MATMUL] = 1e-3 * 989.5e12 * 0.7;
    else
        cc.bytes[GPU_OP_ELEMENTWISE] = 1e-3 * 3.35e12 * 0.8;
    uint32_t c = wl_graph_cost(g, &cc);
    wl_op o = {.lane = 0, .kind = WL_OP_COMPUTE, .stream = WL_STREAM_COMPUTE, .mb = -1,
               .layer = -1, .arg = c, .name = (uint16_t)wl_graph_name(g, "op")};
    wl_graph_op(g, &o, NULL, 0);
    uint32_t inst = wl_graph_coll(g, COLL_ALLGATHER, 1e8);
    g->colls[inst].hbm_bytes = passes;
    for (uint32_t l = 0; l < 2; l++) {
        wl_op a = {.lane = l, .kind = WL_OP_COLL, .stream = WL_STREAM_DP, .mb = -1, .layer = -1,
                   .arg = inst, .name = (uint16_t)wl_graph_name(g, "gather")};
        wl_graph_op(g, &a, NULL, 0);
    }
    gpu_spec sp[2];
    dt_error e;
    dt_error_clear(&e);
    ck_assert_int_eq(gpu_preset("H100-SXM", &sp[0], &e), DT_OK);
    sp[1] = sp[0];
    replay_config cfg = {.n_gpus = 2, .gpus = sp, .path = uni_path, .record = true,
                         .contention = true};
    replay_result r;
    ck_assert_int_eq(replay_run(g, &cfg, &r, &e), DT_OK);
    double t = sim_time_to_s(r.op_end[0]) * 1e3;
    replay_result_free(&r);
    wl_graph_destroy(g);
    return t;
}

/* While the all-gather runs (0.5 ms) a memory-bound op loses the HBM NCCL takes (3 x 100
 * GB/s: rate 2.38/2.68) and a GEMM the SMs of NCCL's 7 channels (rate 125/132). Passes of
 * 0.134 GB take the whole GPU for 0.134 GB / 2.68 TB/s = 0.05 ms, a share of 0.1 of the
 * all-gather's 0.5 ms, and the op runs at 0.9 of that rate: it ends at 1 + 0.5 x (1 - 0.9 x
 * rate) ms, the GEMM included (under the earlier HBM-only charge it lost nothing to them).
 * Passes of 0.67 GB (0.25 ms alone, a share of 0.5) and of 1.34 GB (0.5 ms, share 1) both
 * leave it half of the GPU: two streams of equal priority. */
START_TEST(replay_charges_passes)
{
    double mem = 2.38 / 2.68, mm = 125.0 / 132.0;
    ck_assert_rel(op_end_ms(0, false), 1.0 + 0.5 * 0.3 / 2.68, 1e-9);
    ck_assert_rel(op_end_ms(0.134e9, false), 1.0 + 0.5 * (1 - 0.9 * mem), 1e-9);
    ck_assert_rel(op_end_ms(0, true), 1.0 + 0.5 * 7.0 / 132.0, 1e-9);
    ck_assert_rel(op_end_ms(0.134e9, true), 1.0 + 0.5 * (1 - 0.9 * mm), 1e-9);
    ck_assert_rel(op_end_ms(0.67e9, true), 1.0 + 0.5 * (1 - 0.5 * mm), 1e-9);
    ck_assert_rel(op_end_ms(1.34e9, true), 1.0 + 0.5 * (1 - 0.5 * mm), 1e-9);
    /* the share itself: bytes / achieved HBM bandwidth / t0 */
    gpu_spec sp;
    dt_error e;
    dt_error_clear(&e);
    ck_assert_int_eq(gpu_preset("H100-SXM", &sp, &e), DT_OK);
    ck_assert_rel(replay_passes_phi(&sp, 0.134e9, 0.5e-3), 0.1, 1e-12);
    ck_assert_double_eq(replay_passes_phi(&sp, 0, 0.5e-3), 0);
    ck_assert_double_eq(replay_passes_share(0.7), REPLAY_PASSES_MAX_SHARE);
}
END_TEST

/* The last reduction (the optimizer waits for it: nothing computes beside it). ZeRO-3 over 8
 * GPUs, 2 microbatches, fsdp with fp32 reduction: the last backward op (layer 0 of microbatch
 * 1) completes layer 0 and the root unit, the tied embedding and the final LayerNorm (ZeRO-3
 * reduces the root after the backward's end), G = P + V h + 2h elements. Its post-backward passes
 * become ops of their own on the DP stream: before the reduce-scatter the cast (2 + 4) and
 * the pre-division by 4 (2 x 4): 14 G; after it the post-division by 2 of the G/8 shard (8 G/8)
 * and the accumulation into microbatch 0's saved shard (12 G/8): 2.5 G; the collective keeps
 * no passes of its own, and the optimizer waits for the post op. In the replay (H100, 2.68
 * TB/s achieved) each lasts its bytes at that bandwidth. Every earlier reduction keeps its
 * passes on the collective (layer 1's of microbatch 1: 14 P + 2.5 P). */
START_TEST(last_reduction_serial)
{
    load("{\"topology\": \"x\", " TRANSFORMER ", \"parallel\": {\"dp\": 8, \"zero\": 3,"
         " \"micro_batch_size\": 1, \"microbatches\": 2}, \"precision\": \"bf16\","
         " \"framework\": {\"preset\": \"fsdp\", \"reduce_dtype\": \"fp32\"}}", 8);
    wl_graph *g = wl_graph_build(&sc);
    double P = wl_layer_params(&sc.model), G = P + 32000.0 * 1024 + 2 * 1024;
    int n_pre = 0, n_post = 0;
    uint32_t pre = UINT32_MAX, post = UINT32_MAX, opt = UINT32_MAX, rs1 = UINT32_MAX;
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const wl_op *o = &g->ops[i];
        const char *nm = g->names[o->name];
        if (!strcmp(nm, "fsdp_pre_reduce_passes")) n_pre++;
        if (!strcmp(nm, "fsdp_post_reduce_passes")) n_post++;
        if (o->lane != 0) continue;
        if (!strcmp(nm, "fsdp_pre_reduce_passes")) pre = i;
        if (!strcmp(nm, "fsdp_post_reduce_passes")) post = i;
        if (!strcmp(nm, "optimizer_step")) opt = i;
        if (!strcmp(nm, "zero_grad_reduce_scatter") && o->mb == 1 && o->layer == 1) rs1 = i;
    }
    ck_assert_int_eq(n_pre, 8); /* one each per lane */
    ck_assert_int_eq(n_post, 8);
    ck_assert(pre != UINT32_MAX && post != UINT32_MAX && opt != UINT32_MAX && rs1 != UINT32_MAX);
    const wl_op *a = &g->ops[pre], *b = &g->ops[post];
    ck_assert_int_eq(a->stream, WL_STREAM_DP);
    ck_assert_int_eq(a->kind, WL_OP_COMPUTE);
    ck_assert_int_eq(b->stream, WL_STREAM_DP);
    ck_assert_rel(g->costs[a->arg].bytes[GPU_OP_ELEMENTWISE], 14 * G, 1e-12);
    ck_assert_rel(g->costs[b->arg].bytes[GPU_OP_ELEMENTWISE], 2.5 * G, 1e-12);
    /* pre <- last backward; reduce-scatter <- pre; post <- reduce-scatter; optimizer <- post */
    ck_assert_uint_eq(a->n_deps, 1);
    ck_assert_str_eq(g->names[g->ops[g->deps[a->dep_start]].name], "backward");
    ck_assert_uint_eq(b->n_deps, 1);
    uint32_t rs = g->deps[b->dep_start];
    ck_assert_str_eq(g->names[g->ops[rs].name], "zero_grad_reduce_scatter");
    ck_assert_uint_eq(g->ops[rs].n_deps, 1);
    ck_assert_uint_eq(g->deps[g->ops[rs].dep_start], pre);
    ck_assert_rel(g->colls[g->ops[rs].arg].bytes, 4 * G, 1e-12);
    ck_assert_double_eq(g->colls[g->ops[rs].arg].hbm_bytes, 0);
    ck_assert_rel(g->colls[g->ops[rs1].arg].hbm_bytes, 16.5 * P, 1e-12);
    bool waits = false;
    for (uint32_t k = 0; k < g->ops[opt].n_deps; k++) waits |= g->deps[g->ops[opt].dep_start + k] == post;
    ck_assert(waits);

    gpu_spec sp[8];
    dt_error e;
    dt_error_clear(&e);
    ck_assert_int_eq(gpu_preset("H100-SXM", &sp[0], &e), DT_OK);
    for (int k = 1; k < 8; k++) sp[k] = sp[0];
    replay_config cfg = {.n_gpus = 8, .gpus = sp, .path = uni_path, .record = true, .contention = true};
    replay_result r;
    ck_assert_int_eq(replay_run(g, &cfg, &r, &e), DT_OK);
    ck_assert_rel(sim_time_to_s(r.op_end[pre] - r.op_start[pre]), 14 * G / 2.68e12, 1e-6);
    ck_assert_rel(sim_time_to_s(r.op_end[post] - r.op_start[post]), 2.5 * G / 2.68e12, 1e-6);
    ck_assert(r.op_start[rs] >= r.op_end[pre] && r.op_start[post] >= r.op_end[rs]);
    replay_result_free(&r);
    wl_graph_destroy(g);
    unload();
}
END_TEST

static void bad(const char *fw, const char *path, const char *msg_part)
{
    char text[1024];
    snprintf(text, sizeof text, "{\"topology\": \"x\", " TRANSFORMER ", \"framework\": %s}", fw);
    load_refused(text, 1, path, msg_part);
}

START_TEST(bad_input)
{
    bad("{\"preset\": \"fsdp\", \"cross_entropy\": \"bf16\"}", "framework.cross_entropy", "bf16");
    bad("{\"preset\": \"fsdp\", \"attention_unpad\": 1}", "framework.attention_unpad", "");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("fsdp_passes");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, divide_factors);
    tcase_add_test(tc, reduce_passes);
    tcase_add_test(tc, gather_and_flat_grad);
    tcase_add_test(tc, loss_and_unpad_bytes);
    tcase_add_test(tc, passes_in_graph);
    tcase_add_test(tc, trace_keeps_passes);
    tcase_add_test(tc, replay_charges_passes);
    tcase_add_test(tc, last_reduction_serial);
    tcase_add_test(tc, bad_input);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return dt_run_suite(suite());
}
