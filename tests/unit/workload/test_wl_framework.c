/* test_wl_framework.c - the scenario's "framework": presets, options and what each changes.
 * Pins down: each preset's defaults (generic = today's behaviour; megatron: gradient reduction
 * after the backward, blocking pipeline sends (overlapped, overlap_p2p_comm, for the interleaved
 * schedule under bf16/fp8), its mixed-precision optimizer's 54 B (fp16) /
 * 38 B (bf16) per parameter, NCCL link efficiency; fsdp: overlapped reduction, NCCL links);
 * options override them; overlap_grad_reduce and parallel.overlap_dp must agree; bad values are
 * errors naming the path. Closed forms on hand-built cases: tp_comm_overlap makes a TP op last
 * max(compute, comm) instead of compute + comm; pp_blocking_sends on a 2-stage GPipe step
 * (10 ms -> 11 ms, hand-traced below); the interleaved schedule's sends blocking (Megatron-LM of
 * 2022, fp16) or overlapped (Megatron-Core's overlap_p2p_comm, bf16: the preset's default there)
 * on a hand-traced pp 2, v 2 step (34 ms, one exchange per steady-state step, -> 30 ms,
 * interleaved_overlap_closed_form); 1F1B with a heavier last stage at that stage's pace
 * (heavy_last_stage_closed_form); delay_grad_reduce holds a later stage's buckets until the end
 * of its backward and its last gradient send (delay_grad_reduce_in_graph); overlap_param_gather moves the ZeRO-1 parameter
 * all-gather from after the optimizer (whole stage, exposed) to before the first forward, layer
 * by layer (only the first layer's exposed); link_efficiency scales a data-parallel all-reduce's
 * bandwidth term; the optimizer op moves optimizer_bytes per parameter of its shard, and
 * Megatron's gradient-buffer passes per parameter of the whole buffer; the embedding's dense
 * weight gradient on every microbatch's first-stage backward; Megatron reduces and keeps bf16
 * gradients in fp32 (megatron_fp32_reduction); a tied embedding's gradient is reduced with the
 * last bucket, an untied output layer's with the first (tied_embedding_reduced_last).
 * Leaves free: op ids and graph size. */
#include <math.h>
#include <string.h>

#include "dtsim/replay.h"
#include "dtsim/run.h"
#include "dtsim/workload.h"
#include "wl_testutil.h"

typedef struct uni { double bw; sim_time_t lat; } uni;
static void uni_path(void *ctx, int a, int b, double *bw, sim_time_t *lat)
{
    (void)a;
    (void)b;
    const uni *u = ctx;
    *bw = u->bw;
    *lat = u->lat;
}

static replay_result run(const wl_graph *g, const uni *u)
{
    replay_config cfg = {.n_gpus = g->n_gpus, .path = u ? uni_path : NULL, .path_ctx = (void *)u};
    replay_result r;
    dt_error e;
    dt_error_clear(&e);
    ck_assert_int_eq(replay_run(g, &cfg, &r, &e), DT_OK);
    ck_assert_int_eq(r.compute + r.comm_exposed + r.bubble + r.straggler_wait, r.step_time);
    replay_result_free(&r); /* the per-lane arrays; the figures stay */
    return r;
}

#define TRANSFORMER                                                                          \
    "\"model\": {\"kind\": \"transformer\", \"layers\": 4, \"hidden\": 1024, \"heads\": 16,"  \
    "\"seq_len\": 512, \"vocab\": 32000}"

START_TEST(presets)
{
    load("{\"topology\": \"x\", " TRANSFORMER ", \"parallel\": {\"dp\": 2}}", 2);
    ck_assert_int_eq(sc.plan.fw.preset, WL_FW_GENERIC);
    ck_assert(sc.plan.overlap_dp && !sc.plan.fw.pp_blocking_sends && !sc.plan.fw.tp_comm_overlap);
    ck_assert(!sc.plan.fw.delay_grad_reduce);
    ck_assert(sc.env.link_nvlink == 0 && sc.env.link_network == 0); /* line rate */
    ck_assert_double_eq(wl_optimizer_bytes(&sc.plan), 28);
    unload();

    load("{\"topology\": \"x\", " TRANSFORMER ", \"parallel\": {\"dp\": 2}, \"precision\": \"fp16\","
         "\"framework\": \"megatron\"}", 2);
    ck_assert_int_eq(sc.plan.fw.preset, WL_FW_MEGATRON);
    ck_assert(!sc.plan.overlap_dp && sc.plan.fw.pp_blocking_sends && sc.plan.fw.delay_grad_reduce);
    ck_assert(!sc.plan.fw.overlap_p2p_comm); /* no interleaved schedule */
    ck_assert(!sc.plan.fw.tp_comm_overlap && !sc.plan.fw.overlap_param_gather);
    ck_assert_double_eq(sc.env.link_nvlink, 0.80);
    ck_assert_double_eq(sc.env.link_network, 0.96);
    /* grad copy 6 + unscale/inf check 8 + norm 4 + Adam 28 + copy back 6 + zeroing 2 */
    ck_assert_double_eq(wl_optimizer_bytes(&sc.plan), 54);
    unload();

    load("{\"topology\": \"x\", " TRANSFORMER ", \"parallel\": {\"dp\": 2},"
         "\"framework\": {\"preset\": \"megatron\", \"overlap_grad_reduce\": true,"
         "\"overlap_param_gather\": true, \"tp_comm_overlap\": true, \"link_efficiency\": \"line\"}}", 2);
    ck_assert(sc.plan.overlap_dp && sc.plan.fw.overlap_param_gather && sc.plan.fw.tp_comm_overlap);
    ck_assert(sc.env.link_nvlink == 1 && sc.env.link_network == 1);
    /* bf16: no loss scaling (no unscale/inf check), fp32 main grads zeroed: 54 - 8 - 6 + 2 */
    ck_assert_double_eq(wl_optimizer_bytes(&sc.plan), 38);
    unload();

    load("{\"topology\": \"x\", " TRANSFORMER ", \"parallel\": {\"dp\": 2, \"overlap_dp\": false},"
         "\"framework\": {\"preset\": \"fsdp\", \"optimizer_bytes\": 36,"
         "\"link_efficiency\": {\"nvlink\": 0.5}}}", 2);
    ck_assert_int_eq(sc.plan.fw.preset, WL_FW_FSDP);
    ck_assert(!sc.plan.overlap_dp); /* parallel.overlap_dp given: it wins over the preset */
    ck_assert_double_eq(sc.env.link_nvlink, 0.5);
    ck_assert_double_eq(sc.env.link_network, 1);
    ck_assert_double_eq(wl_optimizer_bytes(&sc.plan), 36);
    unload();
}
END_TEST

static void bad(const char *fw, const char *path, const char *msg_part)
{
    char text[1024];
    snprintf(text, sizeof text, "{\"topology\": \"x\", " TRANSFORMER ", \"parallel\": {\"dp\": 2,"
             " \"overlap_dp\": false}, \"framework\": %s}", fw);
    dt_error e;
    ck_assert_int_eq(try_load(text, 2, &e), DT_EINPUT);
    ck_assert_msg(!strcmp(e.path, path), "%s: path %s", fw, e.path);
    ck_assert_msg(strstr(e.msg, msg_part), "%s: %s", fw, e.msg);
}

START_TEST(bad_input)
{
    bad("\"deepspeed\"", "framework", "found \"deepspeed\"");
    bad("3", "framework", "preset name");
    bad("{\"preset\": \"megatron\", \"tp_overlap\": true}", "framework.tp_overlap", "");
    bad("{\"overlap_grad_reduce\": true}", "framework.overlap_grad_reduce", "overlap_dp");
    bad("{\"optimizer_bytes\": 0}", "framework.optimizer_bytes", "");
    bad("{\"link_efficiency\": \"fast\"}", "framework.link_efficiency", "found \"fast\"");
    bad("{\"link_efficiency\": {\"nvlink\": 1.5}}", "framework.link_efficiency.nvlink", "");
    bad("{\"preset\": \"fsdp\", \"reduce_dtype\": \"fp64\"}", "framework.reduce_dtype", "fp64");
    bad("{\"preset\": \"megatron\", \"grad_buffer_bytes\": -1}", "framework.grad_buffer_bytes", "");
    bad("{\"preset\": \"megatron\", \"delay_grad_reduce\": 1}", "framework.delay_grad_reduce", "");
    bad("{\"overlap_p2p_comm\": \"yes\"}", "framework.overlap_p2p_comm", "");
    bad("{\"preset\": \"megatron\", \"tp_async_backward\": 1}", "framework.tp_async_backward", "");
}
END_TEST

/* 4 synthetic layers of 1 ms forward, 2 ms backward on tp 2; each in-lane all-reduce of 0 bytes
 * over 2 GPUs costs 2 (n-1) latencies = 2 ms with a 1 ms link latency: 2 per layer and
 * direction, so 16 ms of TP communication per direction against 4 ms / 8 ms of compute. */
START_TEST(tp_comm_overlap_closed_form)
{
    uni u = {.bw = 1e12, .lat = SIM_MS};
    const char *base = "{\"topology\": \"x\", \"model\": {\"kind\": \"synthetic\", \"layers\": 4,"
                       "\"forward_time\": \"1 ms\", \"backward_time\": \"2 ms\", \"params\": 0},"
                       "\"parallel\": {\"tp\": 2}%s}";
    char text[512];
    snprintf(text, sizeof text, base, "");
    load(text, 2);
    wl_graph *g = wl_graph_build(&sc);
    replay_result r = run(g, &u);
    ck_assert_int_eq(r.step_time, (4 + 16 + 8 + 16) * SIM_MS);
    wl_graph_destroy(g);
    unload();
    snprintf(text, sizeof text, base, ", \"framework\": {\"tp_comm_overlap\": true}");
    load(text, 2);
    g = wl_graph_build(&sc);
    r = run(g, &u);
    ck_assert_int_eq(r.step_time, (16 + 16) * SIM_MS); /* max(4, 16) + max(8, 16) */
    ck_assert_int_eq(r.compute, 12 * SIM_MS);
    ck_assert_int_eq(r.comm_exposed, (12 + 8) * SIM_MS);
    wl_graph_destroy(g);
    unload();
}
END_TEST

/* Transformer Engine's split pipeline (REPLAY_TE_RS_SPLITS) holds the forward's two reduce-
 * scatters per layer (attention projection, MLP down): a 4-layer op's forward cost marks 8 of
 * its reduce-scatters as drained, its backward none (bulk overlap with the weight gradients),
 * or 8 with full recomputation (the recomputed forward's); none without sequence parallelism
 * or tp_comm_overlap. */
START_TEST(tp_overlap_drain_in_graph)
{
    const char *base = "{\"topology\": \"x\", " TRANSFORMER ", \"parallel\": {\"tp\": 2,"
                       "\"sequence_parallel\": %s%s}, \"framework\": {\"tp_comm_overlap\": %s}}";
    const struct { const char *sp, *ckpt, *ovl; int fwd, bwd; } cases[] = {
        {"true", "", "true", 8, 0},
        {"true", ", \"activation_checkpointing\": \"full\"", "true", 8, 8},
        {"true", "", "false", 0, 0},
        {"false", "", "true", 0, 0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char text[768];
        snprintf(text, sizeof text, base, cases[k].sp, cases[k].ckpt, cases[k].ovl);
        load(text, 2);
        wl_graph *g = wl_graph_build(&sc);
        int seen = 0;
        for (uint32_t i = 0; i < g->n_ops; i++) {
            const wl_op *o = &g->ops[i];
            if (o->kind != WL_OP_COMPUTE) continue;
            bool bwd = !strcmp(g->names[o->name], "backward");
            if (!bwd && strcmp(g->names[o->name], "forward")) continue;
            ck_assert_int_eq(g->costs[o->arg].inlane_drain, bwd ? cases[k].bwd : cases[k].fwd);
            seen++;
        }
        ck_assert_int_ge(seen, 2);
        wl_graph_destroy(g);
        unload();
    }
}
END_TEST

/* The in-lane entries of the first backward (or forward) compute op of text's graph, and the
 * number of its layers. */
static const wl_cost *layer_cost(const wl_graph *g, const char *name)
{
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const wl_op *o = &g->ops[i];
        if (o->kind == WL_OP_COMPUTE && !strcmp(g->names[o->name], name)) return &g->costs[o->arg];
    }
    ck_abort_msg("no %s op", name);
    return NULL;
}

/* Entry i of c: op, count, bytes b s h e (e: 2, or gather_e for an all-gather) and GEMM shape. */
static void check_entry(const wl_cost *c, int i, coll_op op, int count, double gather_e, double m,
                        double n, double k)
{
    ck_assert_int_lt(i, c->n_inlane);
    ck_assert_int_eq(c->inlane[i].op, op);
    ck_assert_int_eq(c->inlane[i].count, count);
    ck_assert_double_eq(c->inlane[i].bytes, 512.0 * 1024 * (op == COLL_ALLGATHER ? gather_e : 2));
    ck_assert_double_eq(c->inlane[i].under.m, m);
    ck_assert_double_eq(c->inlane[i].under.n, n);
    ck_assert_double_eq(c->inlane[i].under.k, k);
}

/* Megatron's backward of a column-parallel linear (tp_async_backward, the megatron preset's
 * default): 4 layers of h 1,024 (16 heads, f 4h), s 512, micro batch 1, t 2. QKV's forward GEMM
 * is (512, 3·1024/2, 1024), its data gradient (512, 1024, 1536), its weight gradient (1024,
 * 1536, 512); fc1's (512, 2048, 1024) -> (512, 1024, 2048) and (1024, 2048, 512). With sequence
 * parallelism the backward op has 8 blocking all-gathers (the row-parallel output gradients),
 * 4 re-gathers under QKV's and 4 under fc1's data-gradient GEMM, 4 reduce-scatters under each
 * weight-gradient GEMM; without, one all-reduce under each weight-gradient GEMM per layer and
 * nothing blocking; full recomputation adds the forward's 8 + 8 blocking. The forward keeps its
 * 8 all-gathers and 8 reduce-scatters; the generic preset and "tp_async_backward": false keep
 * the backward's blocking pairs; a trace carries the shapes (read back equal). Under fp8 every
 * all-gather moves 1-byte elements (Transformer Engine gathers fp8 tensors), the reduce-scatters
 * and all-reduces 2. Under tp_comm_overlap (sequence parallel) the backward has the same entries,
 * Transformer Engine's userbuffers running them as its bulk overlap. */
/* a 4-layer op's entries: sequence parallel with the backward's collectives beside their GEMMs
 * (the row-parallel output gradients' 8 all-gathers pooled; QKV's and fc1's re-gathers beside
 * their data-gradient GEMMs, reduce-scatters beside their weight-gradient GEMMs), all pooled,
 * and without sequence parallelism the all-reduces beside the weight-gradient GEMMs */
#define SP_BESIDE                                                                            \
    {{COLL_ALLGATHER, 8, 0, 0, 0}, {COLL_ALLGATHER, 4, 512, 1024, 1536},                      \
     {COLL_REDUCE_SCATTER, 4, 1024, 1536, 512}, {COLL_ALLGATHER, 4, 512, 1024, 2048},         \
     {COLL_REDUCE_SCATTER, 4, 1024, 2048, 512}}
#define SP_POOLED {{COLL_ALLGATHER, 8, 0, 0, 0}, {COLL_REDUCE_SCATTER, 8, 0, 0, 0}}
#define AR_BESIDE {{COLL_ALLREDUCE, 4, 1024, 1536, 512}, {COLL_ALLREDUCE, 4, 1024, 2048, 512}}

START_TEST(tp_async_backward_in_graph)
{
    typedef struct { coll_op op; int count; double m, n, k; } entry;
    static const struct {
        const char *sp, *ckpt, *fw, *name, *prec;
        int n;
        entry e[WL_MAX_INLANE];
    } cases[] = {
        {"true", "", "\"megatron\"", "backward", "bf16", 5,
         SP_BESIDE},
        /* fp8: Transformer Engine gathers fp8 tensors (1 byte), reduce-scatters 16-bit outputs */
        {"true", "", "\"megatron\"", "backward", "fp8", 5,
         SP_BESIDE},
        {"true", "", "\"generic\"", "forward", "fp8", 2,
         SP_POOLED},
        {"false", "", "\"megatron\"", "backward", "fp8", 2,
         AR_BESIDE},
        {"true", "", "\"megatron\"", "forward", "bf16", 2,
         SP_POOLED},
        {"false", "", "\"megatron\"", "backward", "bf16", 2,
         AR_BESIDE},
        {"true", ", \"activation_checkpointing\": \"full\"", "\"megatron\"", "backward", "bf16", 6,
         {{COLL_ALLGATHER, 16, 0, 0, 0}, {COLL_REDUCE_SCATTER, 8, 0, 0, 0},
          {COLL_ALLGATHER, 4, 512, 1024, 1536}, {COLL_REDUCE_SCATTER, 4, 1024, 1536, 512},
          {COLL_ALLGATHER, 4, 512, 1024, 2048}, {COLL_REDUCE_SCATTER, 4, 1024, 2048, 512}}},
        {"true", "", "{\"preset\": \"megatron\", \"tp_async_backward\": false}", "backward", "bf16", 2,
         SP_POOLED},
        {"true", "", "\"generic\"", "backward", "bf16", 2,
         SP_POOLED},
        /* tp_comm_overlap: the same collectives beside the same GEMMs (userbuffers' bulk), any
         * preset; the forward's stay pooled */
        {"true", "", "{\"preset\": \"generic\", \"tp_comm_overlap\": true}", "backward", "bf16", 5,
         SP_BESIDE},
        {"true", "", "{\"preset\": \"generic\", \"tp_comm_overlap\": true}", "forward", "bf16", 2,
         SP_POOLED},
    };
    const char *base = "{\"topology\": \"x\", " TRANSFORMER ", \"parallel\": {\"tp\": 2,"
                       "\"sequence_parallel\": %s%s}, \"framework\": %s, \"precision\": \"%s\"}";
    for (size_t q = 0; q < sizeof cases / sizeof cases[0]; q++) {
        char text[768];
        snprintf(text, sizeof text, base, cases[q].sp, cases[q].ckpt, cases[q].fw, cases[q].prec);
        double ge = strcmp(cases[q].prec, "fp8") ? 2 : 1;
        load(text, 2);
        ck_assert_int_eq(sc.plan.fw.tp_async_backward, strstr(cases[q].fw, "megatron") &&
                                                           !strstr(cases[q].fw, "false"));
        wl_graph *g = wl_graph_build(&sc);
        /* the first graph also through a trace, which must carry the shapes */
        wl_graph *t = q == 0 ? graph_through_trace(g) : NULL;
        for (int w = 0; w < (t ? 2 : 1); w++) {
            const wl_cost *c = layer_cost(w ? t : g, cases[q].name);
            ck_assert_int_eq(c->n_inlane, cases[q].n);
            for (int i = 0; i < cases[q].n; i++) {
                const entry *x = &cases[q].e[i];
                check_entry(c, i, x->op, x->count, ge, x->m, x->n, x->k);
            }
        }
        if (t) wl_graph_destroy(t);
        wl_graph_destroy(g);
        unload();
    }
}
END_TEST

/* 2 stages of one layer (1 ms forward, 2 ms backward), GPipe, 2 microbatches; a send of 0
 * bytes costs the 0.5 ms latency. Without blocking: stage 0 F0 [0,1] F1 [1,2]; stage 1 F0
 * [1.5,2.5] F1 [2.5,3.5] B0 [3.5,5.5] B1 [5.5,7.5]; stage 0 B0 [6,8] B1 [8,10]: 10 ms. Blocking
 * (a stage's next compute waits for its send): stage 0 F1 [1.5,2.5], its send [2.5,3];
 * stage 1 F1 [3,4] B0 [4,6], send [6,6.5], B1 [6.5,8.5], send [8.5,9]; stage 0 B0 [6.5,8.5]
 * B1 [9,11]: 11 ms. */
START_TEST(blocking_sends_closed_form)
{
    uni u = {.bw = 1e12, .lat = SIM_MS / 2};
    const char *base = "{\"topology\": \"x\", \"model\": {\"kind\": \"synthetic\", \"layers\": 2,"
                       "\"forward_time\": \"1 ms\", \"backward_time\": \"2 ms\", \"params\": 0,"
                       "\"activation_bytes\": 0}, \"parallel\": {\"pp\": 2, \"microbatches\": 2,"
                       "\"schedule\": \"gpipe\"}%s}";
    char text[512];
    snprintf(text, sizeof text, base, "");
    load(text, 2);
    wl_graph *g = wl_graph_build(&sc);
    ck_assert_int_eq(run(g, &u).step_time, 10 * SIM_MS);
    wl_graph_destroy(g);
    unload();
    snprintf(text, sizeof text, base, ", \"framework\": {\"pp_blocking_sends\": true}");
    load(text, 2);
    g = wl_graph_build(&sc);
    replay_result r = run(g, &u);
    ck_assert_int_eq(r.step_time, 11 * SIM_MS);
    /* the critical GPU, stage 0: computes 1 + 1 + 2 + 2 ms, its two activation sends (0.5 ms
     * each) are exposed, and the rest, 4 ms, is waiting for stage 1: the bubble */
    ck_assert_int_eq(r.compute, 6 * SIM_MS);
    ck_assert_int_eq(r.comm_exposed, 1 * SIM_MS);
    ck_assert_int_eq(r.bubble, 4 * SIM_MS);
    ck_assert_int_eq(r.straggler_wait, 0);
    wl_graph_destroy(g);
    unload();
}
END_TEST

/* The interleaved schedule's sends, blocking or overlapped (Megatron-Core's overlap_p2p_comm),
 * hand-traced: pp 2, v 2 (virtual stages 0-3, vs v on stage v % 2), 4 microbatches, one layer
 * per virtual stage (1 ms forward, 2 ms backward), every send 0.5 ms (its latency). Megatron's
 * order (warm-up of (p - rank - 1) x 2 + (v - 1) p forwards: 4 on stage 0, 2 on stage 1), Fv.m
 * the forward of virtual stage v for microbatch m, Bv.m its backward. Blocking, as Megatron's
 * schedules exchange (a warm-up forward's send, then a cool-down backward's, waited for before
 * the next compute; each steady-state step, a forward then a backward, ends with one exchange
 * of both: the forward's activation leaves after the backward, the two sends run one after the
 * other on the stage's pipeline stream, and the next forward waits for both and for the
 * gradient of the backward after it):
 *   stage 0: F0.0 [0,1] F0.1 [1.5,2.5] F2.0 [3,4] F2.1 [4.5,5.5] F0.2 [8,9] (B3.0's gradient,
 *            7.5 + 0.5) B2.0 [9,11] (sends [11,11.5], [11.5,12]) F0.3 [12,13] B2.1 [13,15]
 *            F2.2 [16,17] (B1.0's gradient at 16) B0.0 [17,19] F2.3 [20,21] (B1.1's at 20)
 *            B0.1 [21,23] B2.2 [23.5,25.5] B2.3 [27,29] B0.2 [29.5,31.5] B0.3 [32,34]
 *   stage 1: F1.0 [1.5,2.5] F1.1 [3,4] F3.0 [4.5,5.5] B3.0 [5.5,7.5] F3.1 [8,9] B3.1 [9,11]
 *            F1.2 [12,13] (B2.0's gradient at 12) B1.0 [13,15] (sends [15,15.5], [15.5,16])
 *            F1.3 [16,17] B1.1 [17,19] F3.2 [20,21] B3.2 [21,23] F3.3 [23.5,24.5]
 *            B3.3 [24.5,26.5] B1.2 [27,29] B1.3 [29.5,31.5]
 * : 34 ms (each stage's sends as one exchange after the backward, separate exchanges had given
 * 33.5: the steady state's wait is the same two sends, and a forward now also waits for a
 * gradient its backward needs). Overlapped (a forward waits for the stage's previous forward
 * send, a backward for its previous backward send; the warm-up and cool-down, one direction
 * only, run as before):
 *   stage 0: F0.0 [0,1] F0.1 [1.5,2.5] F2.0 [3,4] F2.1 [4.5,5.5] F0.2 [6,7] B2.0 [8,10]
 *            F0.3 [10,11] B2.1 [11,13] F2.2 [13,14] B0.0 [14,16] F2.3 [16,17] B0.1 [17,19]
 *            B2.2 [20,22] B2.3 [23,25] B0.2 [25.5,27.5] B0.3 [28,30]
 *   stage 1: F1.0 [1.5,2.5] F1.1 [3,4] F3.0 [4.5,5.5] B3.0 [5.5,7.5] F3.1 [7.5,8.5]
 *            B3.1 [8.5,10.5] F1.2 [10.5,11.5] B1.0 [11.5,13.5] F1.3 [13.5,14.5] B1.1 [14.5,16.5]
 *            F3.2 [16.5,17.5] B3.2 [17.5,19.5] F3.3 [19.5,20.5] B3.3 [20.5,22.5] B1.2 [23,25]
 *            B1.3 [25.5,27.5]
 * : 30 ms, each steady-state send hidden under the opposite direction's compute (e.g. stage 0's
 * F0.3 follows B2.0 at once, its send of F0.2 having arrived at 7.5). Stage 0 computes 4 x 1 +
 * 4 x 1 + 8 x 2 = 24 ms in both. The megatron preset picks the overlap for bf16 (Megatron-Core)
 * and blocking for fp16 (Megatron-LM of 2022). (Megatron v0.6 refused pp 2 with interleaving;
 * later versions allow it with the overlap on; the order is the same for any p.) */
START_TEST(interleaved_overlap_closed_form)
{
    uni u = {.bw = 1e12, .lat = SIM_MS / 2};
    static const struct { const char *fw, *prec; bool overlap; sim_time_t step; } cases[] = {
        {"\"megatron\"", "bf16", true, 30 * SIM_MS},
        {"\"megatron\"", "fp16", false, 34 * SIM_MS},
        {"{\"preset\": \"megatron\", \"pp_blocking_sends\": true}", "bf16", false, 34 * SIM_MS},
        {"{\"preset\": \"megatron\", \"overlap_p2p_comm\": false}", "bf16", false, 34 * SIM_MS},
        {"{\"overlap_p2p_comm\": true}", "bf16", true, 30 * SIM_MS},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char text[1024];
        snprintf(text, sizeof text,
                 "{\"topology\": \"x\", \"model\": {\"kind\": \"synthetic\", \"layers\": 4,"
                 "\"forward_time\": \"1 ms\", \"backward_time\": \"2 ms\", \"params\": 0,"
                 "\"activation_bytes\": 0}, \"parallel\": {\"pp\": 2, \"microbatches\": 4,"
                 "\"schedule\": \"interleaved\", \"virtual_stages\": 2}, \"precision\": \"%s\","
                 "\"framework\": %s}", cases[k].prec, cases[k].fw);
        load(text, 2);
        ck_assert_msg(sc.plan.fw.overlap_p2p_comm == cases[k].overlap, "case %zu", k);
        ck_assert_msg(sc.plan.fw.pp_blocking_sends == (k != 0 && k != 4), "case %zu", k);
        wl_graph *g = wl_graph_build(&sc);
        /* with the overlap, a compute op waits only for its own lane's send of its direction:
         * every send but each stage's last of a direction with no later compute of it (stage 0's
         * F2.3, stage 1's B1.3), 22; blocking, every send but stage 1's B1.3, 23 */
        int waits = 0;
        for (uint32_t i = 0; i < g->n_ops; i++) {
            const wl_op *o = &g->ops[i];
            if (o->kind != WL_OP_COMPUTE) continue;
            for (uint32_t d = 0; d < o->n_deps; d++) {
                const wl_op *x = &g->ops[g->deps[o->dep_start + d]];
                if (x->kind != WL_OP_SEND || x->lane != o->lane) continue;
                waits++;
                if (cases[k].overlap)
                    ck_assert_str_eq(g->names[x->name], strcmp(g->names[o->name], "forward")
                                                            ? "send_gradient" : "send_activation");
            }
        }
        ck_assert_int_eq(waits, cases[k].overlap ? 22 : 23);
        /* blocking: the steady-state forwards' activations leave after the backward that
         * follows them (stage 0: F0.2, F0.3, F2.2, F2.3; stage 1: F1.2, F1.3; F3.x send
         * nothing); overlapped, every activation leaves after its forward */
        int after_bwd = 0;
        for (uint32_t i = 0; i < g->n_ops; i++) {
            const wl_op *o = &g->ops[i];
            if (o->kind != WL_OP_SEND || strcmp(g->names[o->name], "send_activation")) continue;
            ck_assert_int_eq(o->n_deps, 1);
            after_bwd += !strcmp(g->names[g->ops[g->deps[o->dep_start]].name], "backward");
        }
        ck_assert_int_eq(after_bwd, cases[k].overlap ? 0 : 6);
        replay_result r = run(g, &u);
        ck_assert_msg(r.step_time == cases[k].step, "case %zu: %lld", k, (long long)r.step_time);
        ck_assert_int_eq(r.compute, 24 * SIM_MS);
        wl_graph_destroy(g);
        unload();
    }
    /* outside the interleaved schedule the option is off, as arguments.py sets it (the
     * preset's sends then block); asked for together with blocking sends it is an error */
    load("{\"topology\": \"x\", " TRANSFORMER ", \"parallel\": {\"pp\": 2, \"microbatches\": 4,"
         "\"schedule\": \"1f1b\"}, \"framework\": {\"preset\": \"megatron\","
         "\"overlap_p2p_comm\": true}}", 2);
    ck_assert(!sc.plan.fw.overlap_p2p_comm && sc.plan.fw.pp_blocking_sends);
    unload();
    dt_error e;
    ck_assert_int_eq(try_load("{\"topology\": \"x\", " TRANSFORMER ", \"parallel\": {\"pp\": 2,"
                              "\"microbatches\": 4, \"schedule\": \"interleaved\","
                              "\"virtual_stages\": 2}, \"framework\": {\"preset\": \"megatron\","
                              "\"pp_blocking_sends\": true, \"overlap_p2p_comm\": true}}", 2, &e),
                     DT_EINPUT);
    ck_assert_str_eq(e.path, "framework.overlap_p2p_comm");
    ck_assert(strstr(e.msg, "pp_blocking_sends"));
}
END_TEST

/* 1F1B with blocking sends and a heavier last stage, the shape of Korthikanti's 1T run (64
 * stages, the logits on the last): pp 4, m 8, stage layers 1, 1, 1, 2, forward 1 ms and
 * backward 2 ms per layer, sends of latency c = 0.5 ms. Megatron's schedule (warm-up of
 * p - rank - 1 forwards, then one forward and one backward, each exchange waited for) runs at
 * the slowest stage's pace once filled: the last stage starts after the fill (p-1)(F + c) =
 * 4.5 ms, then runs m cycles of its forward, backward and gradient send, 8 x (2 + 4 + 0.5) = 52
 * ms (the others keep up: their cycle is 1 + 2 + 2c = 4 ms, and an activation is ready 4 ms
 * after the gradient before it), then the drain back to stage 0, (p-1) B + (p-2) c = 7 ms:
 * 63.5 ms in all. */
START_TEST(heavy_last_stage_closed_form)
{
    uni u = {.bw = 1e12, .lat = SIM_MS / 2};
    load("{\"topology\": \"x\", \"model\": {\"kind\": \"synthetic\", \"layers\": 5,"
         "\"forward_time\": \"1 ms\", \"backward_time\": \"2 ms\", \"params\": 0,"
         "\"activation_bytes\": 0}, \"parallel\": {\"pp\": 4, \"microbatches\": 8,"
         "\"schedule\": \"1f1b\", \"stage_layers\": [1, 1, 1, 2]},"
         "\"framework\": {\"pp_blocking_sends\": true}}", 4);
    wl_graph *g = wl_graph_build(&sc);
    ck_assert_int_eq(run(g, &u).step_time, 63 * SIM_MS + SIM_MS / 2);
    wl_graph_destroy(g);
    unload();
}
END_TEST

/* delay_grad_reduce (Megatron-Core --delay-grad-reduce, default on): pp 2, dp 2, 1F1B, overlap
 * on. The first stage's buckets are reduced during its last backward (its first reduce-scatter
 * comes before its last backward op in the graph); the last stage's wait for the end of its
 * backward (every reduce-scatter after it) and for its last gradient send (blocking in
 * Megatron's cool-down, before grad_sync_func), each after its NaN-check and scaling passes. With
 * the option off both stages reduce during their last backward. */
START_TEST(delay_grad_reduce_in_graph)
{
    for (int delay = 0; delay < 2; delay++) {
        char doc[1024];
        snprintf(doc, sizeof doc, "{\"topology\": \"x\", " TRANSFORMER ", \"parallel\": {\"dp\": 2,"
                 "\"pp\": 2, \"microbatches\": 4, \"schedule\": \"1f1b\", \"zero\": 1},"
                 "\"framework\": {\"preset\": \"megatron\", \"overlap_grad_reduce\": true,"
                 "\"delay_grad_reduce\": %s}}", delay ? "true" : "false");
        load(doc, 4);
        wl_graph *g = wl_graph_build(&sc);
        for (uint32_t lane = 0; lane < (uint32_t)g->n_lanes; lane++) {
            /* the stage: the first sends no gradient, the last no activation */
            int last_bwd = -1, first_rs = -1, sends_grad = 0, passes = 0;
            const char *first_passes_dep = NULL;
            for (uint32_t i = 0; i < g->n_ops; i++) {
                const wl_op *o = &g->ops[i];
                if (o->lane != lane) continue;
                const char *name = g->names[o->name];
                if (!strcmp(name, "backward")) last_bwd = (int)i;
                if (!strcmp(name, "send_gradient")) sends_grad = 1;
                if (!strcmp(name, "grad_bucket_passes") && passes++ == 0)
                    first_passes_dep = g->names[g->ops[g->deps[o->dep_start]].name];
                if (!strcmp(name, "dp_reduce_scatter") && first_rs < 0) first_rs = (int)i;
            }
            ck_assert_int_ge(first_rs, 0);
            bool later_stage = sends_grad;
            if (later_stage && delay)
                ck_assert_int_gt(first_rs, last_bwd);
            else
                ck_assert_int_lt(first_rs, last_bwd);
            ck_assert_int_eq(passes, delay ? 2 : 0); /* one bucket per layer, 2 layers a stage */
            /* a later stage's sync starts after its last backward's blocking gradient send
             * (send_backward, then grad_sync_func) */
            if (later_stage && delay) ck_assert_str_eq(first_passes_dep, "send_gradient");
        }
        wl_graph_destroy(g);
        unload();
    }
}
END_TEST

static int count_named(const wl_graph *g, const char *name)
{
    int n = 0;
    for (uint32_t i = 0; i < g->n_ops; i++) n += !strcmp(g->names[g->ops[i].name], name);
    return n;
}

/* ZeRO-1 on dp 2: 4 synthetic layers, 1e8 parameters (bf16: 5e7 B per layer). Without the
 * option, one all-gather of the whole stage (2e8 B) follows the optimizer, exposed; with it,
 * one per layer before the first forward, each (0.25 ms + latency) hidden under the previous
 * layer's 1 ms forward but the first: the step is shorter by AG(2e8 B) - AG(5e7 B). */
START_TEST(overlap_param_gather_closed_form)
{
    uni u = {.bw = 100e9, .lat = 5 * SIM_US};
    int n = 2;
    sim_time_t ag_layer = (n - 1) * u.lat + sim_time_from_s((n - 1.0) / n * 5e7 / u.bw);
    sim_time_t ag_all = (n - 1) * u.lat + sim_time_from_s((n - 1.0) / n * 2e8 / u.bw);
    const char *base = "{\"topology\": \"x\", \"model\": {\"kind\": \"synthetic\", \"layers\": 4,"
                       "\"forward_time\": \"1 ms\", \"backward_time\": \"2 ms\", \"params\": 1e8},"
                       "\"parallel\": {\"dp\": 2, \"zero\": 1}%s}";
    char text[512];
    snprintf(text, sizeof text, base, "");
    load(text, 2);
    wl_graph *g = wl_graph_build(&sc);
    ck_assert_int_eq(count_named(g, "zero_param_allgather"), 2); /* one per replica */
    sim_time_t t_plain = run(g, &u).step_time;
    wl_graph_destroy(g);
    unload();
    snprintf(text, sizeof text, base, ", \"framework\": {\"overlap_param_gather\": true}");
    load(text, 2);
    g = wl_graph_build(&sc);
    ck_assert_int_eq(count_named(g, "zero_param_allgather"), 2 * 4); /* per layer */
    /* the first forward op waits for its layer's gather */
    for (uint32_t i = 0; i < g->n_ops; i++)
        if (!strcmp(g->names[g->ops[i].name], "forward")) {
            const wl_op *o = &g->ops[i];
            ck_assert_int_eq(o->n_deps, 1);
            ck_assert_str_eq(g->names[g->ops[g->deps[o->dep_start]].name], "zero_param_allgather");
            break;
        }
    sim_time_t t_over = run(g, &u).step_time;
    ck_assert_int_eq(t_plain - t_over, ag_all - ag_layer);
    wl_graph_destroy(g);
    unload();
}
END_TEST

/* The optimizer op of a megatron fp16 run moves 54 B per parameter of its ZeRO-1 shard. */
START_TEST(optimizer_bytes_in_graph)
{
    load("{\"topology\": \"x\", " TRANSFORMER ", \"parallel\": {\"dp\": 2, \"zero\": 1},"
         "\"precision\": \"fp16\", \"framework\": \"megatron\"}", 2);
    wl_graph *g = wl_graph_build(&sc);
    /* tied, pp 1: 4 layers, the embedding and the final LayerNorm's 2h */
    double psi = 4 * wl_layer_params(&sc.model) + wl_embedding_params(&sc.model) +
                 2 * sc.model.hidden;
    int found = 0;
    for (uint32_t i = 0; i < g->n_ops; i++)
        if (!strcmp(g->names[g->ops[i].name], "optimizer_step")) {
            ck_assert_rel(g->costs[g->ops[i].arg].bytes[GPU_OP_OPTIMIZER], psi / 2 * 54, 1e-12);
            found++;
        }
    ck_assert_int_eq(found, 2);
    wl_graph_destroy(g);
    unload();
}
END_TEST

/* reduce_dtype: FSDP (ZeRO-3, bf16) reduce-scatters each layer's gradients, Ψ_layer x 2 bytes;
 * with "reduce_dtype": "fp32" (Composer's mixed_precision DEFAULT) Ψ_layer x 4, the parameter
 * all-gathers staying at 2 bytes. */
START_TEST(reduce_dtype_in_graph)
{
    for (int k = 0; k < 2; k++) {
        load(k ? "{\"topology\": \"x\", " TRANSFORMER ", \"parallel\": {\"dp\": 2, \"zero\": 3},"
                 "\"framework\": {\"preset\": \"fsdp\", \"reduce_dtype\": \"fp32\"}}"
               : "{\"topology\": \"x\", " TRANSFORMER ", \"parallel\": {\"dp\": 2, \"zero\": 3},"
                 "\"framework\": \"fsdp\"}",
             2);
        wl_graph *g = wl_graph_build(&sc);
        double layer = wl_layer_params(&sc.model);
        int rs = 0, ag = 0;
        for (uint32_t i = 0; i < g->n_ops; i++) {
            const wl_op *o = &g->ops[i];
            if (o->kind != WL_OP_COLL || o->lane != 0) continue;
            const wl_coll *c = &g->colls[o->arg];
            if (c->op == COLL_REDUCE_SCATTER && o->layer == 1) {
                ck_assert_rel(c->bytes, layer * (k ? 4 : 2), 1e-12);
                rs++;
            } else if (c->op == COLL_ALLGATHER && fabs(c->bytes / (layer * 2) - 1) < 1e-12) {
                ag++; /* a middle layer's gather (the first's carries the embedding) */
            }
        }
        ck_assert_int_eq(rs, 1);
        ck_assert_int_ge(ag, 1);
        wl_graph_destroy(g);
        unload();
    }
}
END_TEST

/* Megatron under bf16 reduces gradients in fp32 by default (Megatron-LM arguments.py:
 * accumulate_allreduce_grads_in_fp32 unless --grad-reduce-in-bf16, which "reduce_dtype": "bf16"
 * says) and keeps them in an fp32 main_grad buffer: a ZeRO-1 step's gradient reduce-scatter
 * moves Ψ x 4 bytes in all buckets, and the gradients take 4 B per parameter against 2 (the
 * Megatron-LM README's 6 + 12/d for bf16 parameters with fp32 gradients and the distributed
 * optimizer); fp16 and the explicit bf16 reduction keep 2. An fp8 run is a bf16 run with
 * Transformer Engine's fp8 GEMMs (--fp8-format needs --bf16): fp32 as well. */
START_TEST(megatron_fp32_reduction)
{
    static const char *const fw[4] = {"\"megatron\"",
                                      "{\"preset\": \"megatron\", \"reduce_dtype\": \"bf16\"}",
                                      "\"megatron\"", "\"megatron\""};
    static const char *const prec[4] = {"bf16", "bf16", "fp16", "fp8"};
    static const double elem[4] = {4, 2, 2, 4};
    for (int k = 0; k < 4; k++) {
        char doc[1024];
        snprintf(doc, sizeof doc, "{\"topology\": \"x\", " TRANSFORMER ", \"parallel\": {\"dp\": 4, "
                 "\"zero\": 1}, \"precision\": \"%s\", \"framework\": %s}", prec[k], fw[k]);
        load(doc, 4);
        ck_assert_double_eq(sc.plan.fw.reduce_bytes, k == 0 || k == 3 ? 4 : k == 1 ? 2 : 0);
        wl_graph *g = wl_graph_build(&sc);
        /* Ψ: every parameter, the final norm's 2h included (pp 1: all on this stage) */
        double rs = 0, psi = wl_total_params(&sc.model);
        for (uint32_t i = 0; i < g->n_ops; i++) {
            const wl_op *o = &g->ops[i];
            if (o->kind == WL_OP_COLL && o->lane == 0 && g->colls[o->arg].op == COLL_REDUCE_SCATTER)
                rs += g->colls[o->arg].bytes;
        }
        ck_assert_rel(rs, psi * elem[k], 1e-9);
        mem_breakdown m = {0};
        mem_compute(&sc.model, &sc.plan, &m);
        ck_assert_rel(m.grads, psi * elem[k], 1e-9);
        ck_assert_rel(m.params, psi * 2, 1e-9);
        wl_graph_destroy(g);
        unload();
    }
}
END_TEST

/* The embedding's gradient joins the bucket of the backward op that completes it. 4 layers,
 * h 1024, V 32000, dp 2, bf16, overlapped all-reduce buckets (25 MB: one per layer, a layer
 * being 12.6 M parameters, 25.2 MB). Tied on one stage the matrix is one parameter used twice:
 * autograd sums both contributions and fires its ready hook after the lookup's backward, the
 * last op, so the buckets carry L + N, L, L, L + E parameters (x 2 B; N the final norm's 2h) in
 * op order and the last one waits for layer 0's backward; untied (two matrices) the output
 * layer's is ready after the last layer's backward: L + E + N, L, L, L + E. Total bytes are the same either way. */
START_TEST(tied_embedding_reduced_last)
{
    for (int tied = 0; tied < 2; tied++) {
        char doc[512];
        snprintf(doc, sizeof doc, "{\"topology\": \"x\", \"model\": {\"kind\": \"transformer\", "
                 "\"layers\": 4, \"hidden\": 1024, \"heads\": 16, \"seq_len\": 512, \"vocab\": "
                 "32000, \"tied_embeddings\": %s}, \"parallel\": {\"dp\": 2}}", tied ? "true" : "false");
        load(doc, 2);
        wl_graph *g = wl_graph_build(&sc);
        double L = wl_layer_params(&sc.model), E = 32000.0 * 1024, N = 2 * 1024;
        /* the final LayerNorm's 2h ride with the output layer, in the first bucket */
        double want[4] = {(tied ? L + N : L + E + N) * 2, L * 2, L * 2, (L + E) * 2};
        int n = 0;
        for (uint32_t i = 0; i < g->n_ops; i++) {
            const wl_op *o = &g->ops[i];
            if (o->kind != WL_OP_COLL || o->lane != 0 || g->colls[o->arg].op != COLL_ALLREDUCE)
                continue;
            ck_assert_int_lt(n, 4);
            ck_assert_rel(g->colls[o->arg].bytes, want[n], 1e-12);
            /* each bucket waits for the backward op of the layer that completes it */
            const wl_op *after = &g->ops[g->deps[o->dep_start]];
            ck_assert_str_eq(g->names[after->name], "backward");
            ck_assert_int_eq(after->layer, 3 - n);
            n++;
        }
        ck_assert_int_eq(n, 4);
        wl_graph_destroy(g);
        unload();
    }
}
END_TEST

/* Megatron-Core's gradient buffer (bf16, fp32 main_grad) on a 4-layer model, h 1024, V 32000,
 * dp 2, ZeRO-1. The optimizer op moves 38 B per parameter of its shard (42 less the zeroing)
 * and, in the elementwise class, 16 B per parameter of the whole buffer: zero (4), NaN-check
 * norm (4), scale by 1/d (4 + 4). At dp 1 the scaling by 1 is skipped: 8 B. fp16 (Megatron-LM
 * of 2022) and fsdp: none; framework.grad_buffer_bytes overrides. The embedding's dense weight
 * gradient adds V h (2 e + 2 x 4 + 4 e) = 32000 x 1024 x 20 = 655,360,000 B to every
 * microbatch's backward of the first stage (tied, pp 1): generic charges none. Of the 16 B, the
 * NaN-check norm and the scaling (12 B, 3 x 4) run per bucket on the compute stream just before
 * its reduce-scatter (start_grad_sync), inside the last backward with overlap_grad_reduce, after
 * it without (then each after the reduce-scatter before it: synchronous collectives); 4 buckets of one layer each, Ψ x 12 B in all; the zeroing, 4 B, stays with the
 * optimizer. */
START_TEST(grad_buffer_in_graph)
{
    static const struct { const char *fw; int dp; double opt, buf, bkt; } cases[] = {
        {"\"megatron\"", 2, 38, 16, 12},
        {"{\"preset\": \"megatron\", \"overlap_grad_reduce\": true}", 2, 38, 16, 12},
        {"\"megatron\"", 1, 38, 8, 0},
        {"{\"preset\": \"megatron\", \"reduce_dtype\": \"bf16\"}", 2, 38, 8, 6},
        {"{\"preset\": \"megatron\", \"grad_buffer_bytes\": 5}", 2, 38, 5, 0},
        {"\"fsdp\"", 2, 28, 0, 0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char text[1024];
        snprintf(text, sizeof text,
                 "{\"topology\": \"x\", " TRANSFORMER ", \"parallel\": {\"dp\": %d, \"zero\": 1},"
                 "\"precision\": \"bf16\", \"framework\": %s}",
                 cases[k].dp, cases[k].fw);
        load(text, cases[k].dp);
        ck_assert_double_eq(wl_grad_buffer_bytes(&sc.plan), cases[k].buf);
        ck_assert_double_eq(wl_grad_buffer_bucket_bytes(&sc.plan), cases[k].bkt);
        bool overlap = sc.plan.overlap_dp;
        wl_graph *g = wl_graph_build(&sc);
        double psi = 4 * wl_layer_params(&sc.model) + wl_embedding_params(&sc.model) +
                     2 * sc.model.hidden; /* + the final LayerNorm */
        int found = 0, rs = 0;
        double passes = 0;
        for (uint32_t i = 0; i < g->n_ops; i++) {
            const wl_op *o = &g->ops[i];
            if (o->lane != 0) continue;
            const char *name = g->names[o->name];
            if (!strcmp(name, "optimizer_step")) {
                const wl_cost *c = &g->costs[o->arg];
                ck_assert_rel(c->bytes[GPU_OP_OPTIMIZER], psi / cases[k].dp * cases[k].opt, 1e-12);
                /* the zeroing (and all of a user's grad_buffer_bytes) stays with the optimizer */
                ck_assert_rel(c->bytes[GPU_OP_ELEMENTWISE], psi * (cases[k].buf - cases[k].bkt), 1e-12);
                found++;
            } else if (!strcmp(name, "grad_bucket_passes")) {
                passes += g->costs[o->arg].bytes[GPU_OP_ELEMENTWISE];
                /* with overlap inside the last backward: after a layer's backward, and the
                 * next layer's backward after it but for the last bucket; without, after it */
                bool later = passes > g->costs[o->arg].bytes[GPU_OP_ELEMENTWISE];
                ck_assert_str_eq(g->names[g->ops[g->deps[o->dep_start]].name],
                                 overlap ? "backward" : later ? "grad_bucket_passes" : "backward");
                /* without overlap the reductions are synchronous: a later bucket's passes also
                 * wait for the reduce-scatter before them */
                ck_assert_int_eq(o->n_deps, !overlap && later ? 2 : 1);
                if (o->n_deps == 2)
                    ck_assert_str_eq(g->names[g->ops[g->deps[o->dep_start + 1]].name],
                                     "dp_reduce_scatter");
            } else if (!strcmp(name, "dp_reduce_scatter")) {
                /* each bucket's reduce-scatter waits for its passes (start_grad_sync); under
                 * fsdp the last one (nothing computes beside it) for FSDP's cast and
                 * pre-division on the post-backward stream (test_fsdp_passes) */
                const char *dep = g->names[g->ops[g->deps[o->dep_start]].name];
                bool fsdp_last = sc.plan.fw.preset == WL_FW_FSDP && rs == 3;
                ck_assert_str_eq(dep, cases[k].bkt > 0 ? "grad_bucket_passes"
                                      : fsdp_last       ? "fsdp_pre_reduce_passes"
                                                        : "backward");
                rs++;
            }
        }
        ck_assert_int_eq(found, 1);
        ck_assert_int_eq(rs, cases[k].dp > 1 ? 4 : 0);
        ck_assert_rel(passes + 1, psi * cases[k].bkt + 1, 1e-12);
        wl_graph_destroy(g);
        unload();
    }
    load("{\"topology\": \"x\", " TRANSFORMER ", \"precision\": \"fp16\", \"framework\": \"megatron\"}", 1);
    ck_assert_double_eq(wl_grad_buffer_bytes(&sc.plan), 0);
    unload();

    double bwd[2];
    for (int k = 0; k < 2; k++) {
        load(k ? "{\"topology\": \"x\", " TRANSFORMER ", \"parallel\": {\"microbatches\": 2},"
                 "\"precision\": \"bf16\", \"framework\": \"megatron\"}"
               : "{\"topology\": \"x\", " TRANSFORMER ", \"parallel\": {\"microbatches\": 2},"
                 "\"precision\": \"bf16\"}",
             1);
        wl_graph *g = wl_graph_build(&sc);
        int n = 0;
        for (uint32_t i = 0; i < g->n_ops; i++)
            if (!strcmp(g->names[g->ops[i].name], "backward")) {
                double b = g->costs[g->ops[i].arg].bytes[GPU_OP_ELEMENTWISE];
                if (n++) ck_assert_double_eq(b, bwd[k]); /* every microbatch alike */
                bwd[k] = b;
            }
        ck_assert_int_eq(n, 2);
        wl_graph_destroy(g);
        unload();
    }
    /* the embedding's 20 B per element, and the layers' own kernels: Megatron-Core's 70 h B per
     * token backward (35 e h: docs/workloads.md, "Elementwise traffic of a layer") against
     * generic's 136 h, over 4 layers of 512 tokens */
    ck_assert_rel(bwd[1] - bwd[0], 32000.0 * 1024 * 20 + 4 * 512 * (70.0 - 136) * 1024, 1e-12);
}
END_TEST

/* link_efficiency on a real topology: one DP all-reduce of S = 2e9 B after the backward over 2
 * GPUs of one box (NVLink 450 GB/s, the dgx generator's default). At half the link rate its
 * bandwidth term 2 (n-1)/n S/B = S/B = 4.44 ms doubles; latency and the receiver's reduction
 * (not a link) stay: the exposed communication grows by S/B (1 %: the latencies). */
START_TEST(link_efficiency_scales_dp)
{
    const char *base =
        "{\"topology\": {\"generator\": \"dgx\", \"nodes\": 1, \"gpus_per_node\": 2},"
        "\"model\": {\"kind\": \"synthetic\", \"layers\": 1, \"forward_time\": \"1 ms\","
        "\"backward_time\": \"2 ms\", \"params\": 1e9}, \"parallel\": {\"dp\": 2,"
        "\"overlap_dp\": false, \"bucket_size\": \"10 GB\"}%s}";
    double comm[2];
    for (int k = 0; k < 2; k++) {
        char text[1024];
        snprintf(text, sizeof text, base,
                 k ? ", \"framework\": {\"link_efficiency\": {\"nvlink\": 0.5, \"network\": 0.5}}" : "");
        cJSON *j = NULL;
        dt_error e;
        dt_error_clear(&e);
        ck_assert_int_eq(js_parse_text(text, strlen(text), "t.json", &j, &e), DT_OK);
        run_result r;
        run_options opt = {0};
        ck_assert_msg(run_scenario(j, "t.json", NULL, &opt, &r, &e) == DT_OK, "%s", e.msg);
        comm[k] = r.breakdown_s.comm_exposed;
        run_result_free(&r);
        cJSON_Delete(j);
    }
    ck_assert_rel(comm[1] - comm[0], 2e9 / 450e9, 0.01);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("wl_framework");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, presets);
    tcase_add_test(tc, bad_input);
    tcase_add_test(tc, tp_comm_overlap_closed_form);
    tcase_add_test(tc, tp_overlap_drain_in_graph);
    tcase_add_test(tc, tp_async_backward_in_graph);
    tcase_add_test(tc, blocking_sends_closed_form);
    tcase_add_test(tc, interleaved_overlap_closed_form);
    tcase_add_test(tc, heavy_last_stage_closed_form);
    tcase_add_test(tc, delay_grad_reduce_in_graph);
    tcase_add_test(tc, overlap_param_gather_closed_form);
    tcase_add_test(tc, optimizer_bytes_in_graph);
    tcase_add_test(tc, reduce_dtype_in_graph);
    tcase_add_test(tc, megatron_fp32_reduction);
    tcase_add_test(tc, grad_buffer_in_graph);
    tcase_add_test(tc, tied_embedding_reduced_last);
    tcase_add_test(tc, link_efficiency_scales_dp);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return dt_run_suite(suite()); }
