/* test_contention.c - compute beside overlapped communication (replay_config.contention).
 * Pins down, on hand-built graphs of H100s (132 SMs, 3.35 TB/s HBM at 0.8) over a uniform
 * 100 GB/s fabric without latency:
 * - a 1 ms GEMM beside a 0.5 ms all-gather of its lane ends at 1 ms + 0.5 ms x 7/132 (the
 *   all-gather sends 100 GB/s: ceil(100 / 15) = 7 NCCL channels, leaving 125 SMs to the GEMM
 *   while it runs: rate 125/132), and with a 2 ms all-gather it ends inside it, at
 *   1 ms x 132/125; with the all-gather starting at s its end is continuous in s (the two
 *   forms meet at s = 1 - 0.5 x 125/132 ms), a start 1 ns later moving it by 0 or -0.056 ns;
 * - a memory-bound op beside it loses the all-gather's HBM traffic, 3 bytes per byte sent at
 *   the 100 GB/s it sends: 1 ms + 0.5 ms x 0.3/2.68;
 * - options.comm_contention {"sms": 66}: half the SMs, 1 ms + 0.5 ms / 2; contention off (the
 *   zero value of replay_config): the op stays 1 ms; a collective that starts after the op
 *   ends leaves it alone;
 * - a layer op overlapping its tensor-parallel reduce-scatter (Transformer Engine userbuffers,
 *   16 SMs) lasts 1 ms + 0.5 ms x 16/132, its all-gather (copy engines, 1 SM) 1 ms + 0.5/132;
 *   a reduce-scatter run as the split pipeline (4 chunks) leaves a quarter of it after the GEMM;
 * - an all-reduce issued beside one GEMM of the op (Megatron's asynchronous column-parallel
 *   backward, wl_cost.inlane[].under) costs the op only its excess over that GEMM, or, hidden,
 *   what its 7 channels take from the GEMM (tp_async_beside_gemm, closed forms there); under
 *   tp_comm_overlap the same as Transformer Engine's bulk overlap, on 16 SMs (tp_bulk_beside_gemm);
 * - replay_nccl_sms: 16 on A100 (300 GB/s), 24 on H100, 48 on B200; replay_nccl_channels: 2 for
 *   a 12 GB/s NIC, 4 at 48 GB/s, 24 at H100 NVLink's 360 GB/s and no more beyond, 16 on A100;
 * - a pipeline send of 0.5 ms (50 MB at 100 GB/s) from stage 0 after its first 1 ms op, not
 *   waited for: stage 0's next op, a 1 ms GEMM, ends at 2 ms + 0.5 ms x 7/132 (the send's 7
 *   channels), a 1 ms memory-bound op at 2 ms + 0.5 ms x 0.1/2.68 (the send reads its 100 GB/s
 *   once); stage 1's 2 ms op running while it arrives at 2 ms + 0.5 ms x 7/132 (GEMM) or
 *   2 ms + 0.5 ms x 0.3/2.68 (memory-bound: the receive writes, reads and writes 100 GB/s);
 *   the same in flow mode (a trace on a 100 GB/s switch); a send the sender's next op waits
 *   for (pp_blocking_sends) slows nothing: 2.5 ms and 2 ms, nor one that a collective on the
 *   compute stream waits for (Megatron's MoE backward opens with one); contention off, 2 ms;
 *   a send waited for only by the op after next (overlap_p2p_comm) slows the op between,
 *   2 ms + 0.5 ms x 7/132, and the waiting op ends 1 ms later.
 * Leaves free: the scenario plumbing (cli tests), the flow network beyond one uncontended send. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dtsim/replay.h"
#include "dtsim/run.h"
#include "dtsim/workload.h"
#include "testutil.h"
#define WL_TESTUTIL_NO_FIXTURE
#include "wl_testutil.h"

static void uni_path(void *ctx, int a, int b, double *bw, sim_time_t *lat)
{
    (void)ctx;
    (void)a;
    (void)b;
    *bw = 100e9;
    *lat = 0;
}

static gpu_spec h100(void)
{
    gpu_spec s;
    dt_error e;
    ck_assert_int_eq(gpu_preset("H100-SXM", &s, &e), DT_OK);
    return s;
}

/* Lane 0 runs one compute op of `cost`; lanes 0 and 1 (one GPU each) all-gather `ag_bytes`
 * (0: no collective) on the DP stream, after compute op `after` when >= 0. */
static wl_graph *graph(const wl_cost *cost, double ag_bytes, bool ag_after_op)
{
    wl_graph *g = wl_graph_create(2, 2, 1);
    g->lane_gpus[0] = 0;
    g->lane_gpus[1] = 1;
    uint32_t c = wl_graph_cost(g, cost);
    wl_op o = {.lane = 0, .kind = WL_OP_COMPUTE, .stream = WL_STREAM_COMPUTE, .mb = -1,
               .layer = -1, .arg = c, .name = (uint16_t)wl_graph_name(g, "gemm")};
    uint32_t op = wl_graph_op(g, &o, NULL, 0);
    if (ag_bytes > 0) {
        uint32_t inst = wl_graph_coll(g, COLL_ALLGATHER, ag_bytes);
        for (uint32_t l = 0; l < 2; l++) {
            wl_op a = {.lane = l, .kind = WL_OP_COLL, .stream = WL_STREAM_DP, .mb = -1,
                       .layer = -1, .arg = inst, .name = (uint16_t)wl_graph_name(g, "gather")};
            wl_graph_op(g, &a, l == 0 && ag_after_op ? &op : NULL, l == 0 && ag_after_op ? 1 : 0);
        }
    }
    return g;
}

/* Replays g on two H100s (record on, the contention model as asked, its default SMs when sms is
 * 0) into *r; the run must succeed and its breakdown add up to the step. */
static void run_two_h100(const wl_graph *g, bool contention, int sms, replay_result *r)
{
    gpu_spec sp[2] = {h100(), h100()};
    replay_config cfg = {.n_gpus = 2, .gpus = sp, .path = uni_path, .record = true,
                         .contention = contention, .contention_sms = sms};
    dt_error e;
    dt_error_clear(&e);
    ck_assert_int_eq(replay_run(g, &cfg, r, &e), DT_OK);
    ck_assert_int_eq(r->compute + r->comm_exposed + r->bubble + r->straggler_wait, r->step_time);
}

/* The end of op 0 (the compute op) on two H100s. */
static double op_end_ms(const wl_graph *g, bool contention, int sms)
{
    replay_result r;
    run_two_h100(g, contention, sms, &r);
    double t = sim_time_to_s(r.op_end[0]) * 1e3;
    replay_result_free(&r);
    return t;
}

/* A GEMM of 1 ms on an H100 (flat efficiency 0.7 of 989.5 TFLOP/s, no shapes). */
static wl_cost gemm_1ms(void)
{
    wl_cost c = {0};
    c.flops[GPU_OP_MATMUL] = 1e-3 * 989.5e12 * 0.7;
    return c;
}

/* All-gather of B bytes between 2 GPUs at 100 GB/s: B/2 sent, (B/2)/100e9 s. */
#define AG_BYTES(ms) ((ms) * 1e-3 * 100e9 * 2)

START_TEST(gemm_beside_allgather)
{
    wl_cost c = gemm_1ms();
    wl_graph *g = graph(&c, AG_BYTES(0.5), false);
    ck_assert_rel(op_end_ms(g, true, 0), 1.0 + 0.5 * 7.0 / 132.0, 1e-9);
    ck_assert_rel(op_end_ms(g, false, 0), 1.0, 1e-9);
    ck_assert_rel(op_end_ms(g, true, 66), 1.0 + 0.5 / 2, 1e-9);
    wl_graph_destroy(g);
    /* the all-gather outlasts the GEMM: all of it runs on 125 SMs */
    g = graph(&c, AG_BYTES(2.0), false);
    ck_assert_rel(op_end_ms(g, true, 0), 132.0 / 125.0, 1e-9);
    wl_graph_destroy(g);
    /* after the GEMM: nothing beside it */
    g = graph(&c, AG_BYTES(0.5), true);
    ck_assert_rel(op_end_ms(g, true, 0), 1.0, 1e-9);
    wl_graph_destroy(g);
}
END_TEST

/* Lane 0's 1 ms GEMM (op 0) beside a 0.5 ms all-gather of lanes 0 and 1 that starts when lane 1
 * reaches it, after lane 1's own compute op of s_ms. */
static double gemm_end_with_gather_at(double s_ms)
{
    wl_cost c = gemm_1ms(), w = {0};
    w.flops[GPU_OP_MATMUL] = s_ms * 1e-3 * 989.5e12 * 0.7;
    wl_graph *g = wl_graph_create(2, 2, 1);
    g->lane_gpus[0] = 0;
    g->lane_gpus[1] = 1;
    uint32_t cg = wl_graph_cost(g, &c), cw = wl_graph_cost(g, &w);
    wl_op o = {.lane = 0, .kind = WL_OP_COMPUTE, .stream = WL_STREAM_COMPUTE, .mb = -1,
               .layer = -1, .arg = cg, .name = (uint16_t)wl_graph_name(g, "gemm")};
    wl_graph_op(g, &o, NULL, 0);
    o.lane = 1;
    o.arg = cw;
    uint32_t before = wl_graph_op(g, &o, NULL, 0);
    uint32_t inst = wl_graph_coll(g, COLL_ALLGATHER, AG_BYTES(0.5));
    for (uint32_t l = 0; l < 2; l++) {
        wl_op a = {.lane = l, .kind = WL_OP_COLL, .stream = WL_STREAM_DP, .mb = -1, .layer = -1,
                   .arg = inst, .name = (uint16_t)wl_graph_name(g, "gather")};
        wl_graph_op(g, &a, l == 1 ? &before : NULL, l == 1 ? 1 : 0);
    }
    double t = op_end_ms(g, true, 0);
    wl_graph_destroy(g);
    return t;
}

START_TEST(gemm_end_continuous_in_gather_start)
{
    /* The all-gather (7 channels: the GEMM at 125/132 of its rate while it runs) starting at s.
     * Inside the GEMM (s + 0.5 <= its end): 1 + 0.5 x 7/132 ms whatever s. Outlasting it
     * (s >= 1 - 0.5 x 125/132 = 0.52652 ms): s + (1 - s) x 132/125. After it (s >= 1): 1 ms.
     * The two forms meet at s = 0.52652 (1.026515 ms): the end is continuous in s, and a start
     * 1 ns later moves it by 0 or by 1 ns x (1 - 132/125) = -0.056 ns, never by which part of
     * the op the start falls in. */
    const double ns = 1e-6; /* in ms */
    double in = 1.0 + 0.5 * 7.0 / 132.0;
    ck_assert_rel(gemm_end_with_gather_at(0.2), in, 1e-9);
    ck_assert_double_eq_tol(gemm_end_with_gather_at(0.2 + ns) - gemm_end_with_gather_at(0.2), 0, 3e-9);
    double s = 0.8, out = s + (1 - s) * 132.0 / 125.0;
    ck_assert_rel(gemm_end_with_gather_at(s), out, 1e-9);
    ck_assert_double_eq_tol(gemm_end_with_gather_at(s + ns) - gemm_end_with_gather_at(s),
                            ns * (1 - 132.0 / 125.0), 3e-9);
    double knee = 1 - 0.5 * 125.0 / 132.0;
    ck_assert_double_eq_tol(gemm_end_with_gather_at(knee - ns), in, 3e-9);
    ck_assert_double_eq_tol(gemm_end_with_gather_at(knee + ns), in + ns * (1 - 132.0 / 125.0), 3e-9);
    ck_assert_rel(gemm_end_with_gather_at(1.0 + ns), 1.0, 1e-9);
    ck_assert_double_eq_tol(gemm_end_with_gather_at(1.0 - ns), 1.0 + ns * (132.0 / 125.0 - 1), 3e-9);
}
END_TEST

START_TEST(memory_bound_beside_allgather)
{
    /* 1 ms of HBM traffic at 0.8 x 3.35 TB/s = 2.68 TB/s; the all-gather sends 100 GB/s and
     * moves 3x that through HBM: 0.3 TB/s less for the op while it runs */
    wl_cost c = {0};
    c.bytes[GPU_OP_ELEMENTWISE] = 1e-3 * 3.35e12 * 0.8;
    wl_graph *g = graph(&c, AG_BYTES(0.5), false);
    ck_assert_rel(op_end_ms(g, true, 0), 1.0 + 0.5 * 0.3 / 2.68, 1e-9);
    wl_graph_destroy(g);
}
END_TEST

/* One lane of two GPUs: a 1 ms GEMM op overlapping (inlane_overlap) a TP collective of `ms`,
 * `drain` of its reduce-scatters run as Transformer Engine's split pipeline. */
static double tp_op_drain_ms(coll_op op, double ms, int drain, bool contention)
{
    wl_graph *g = wl_graph_create(2, 1, 2);
    g->lane_gpus[0] = 0;
    g->lane_gpus[1] = 1;
    wl_cost c = gemm_1ms();
    c.inlane[0].op = op;
    c.inlane[0].bytes = AG_BYTES(ms);
    c.inlane[0].count = 2;
    c.n_inlane = 1;
    c.inlane_overlap = true;
    c.inlane_drain = drain;
    uint32_t k = wl_graph_cost(g, &c);
    wl_op o = {.lane = 0, .kind = WL_OP_COMPUTE, .stream = WL_STREAM_COMPUTE, .mb = -1,
               .layer = -1, .arg = k, .name = (uint16_t)wl_graph_name(g, "layer")};
    wl_graph_op(g, &o, NULL, 0);
    double t = op_end_ms(g, contention, 0);
    wl_graph_destroy(g);
    return t;
}

/* One lane of two GPUs: a 1 ms GEMM op overlapping (inlane_overlap) a TP collective of 0.5 ms. */
static double tp_op_ms(coll_op op)
{
    wl_graph *g = wl_graph_create(2, 1, 2);
    g->lane_gpus[0] = 0;
    g->lane_gpus[1] = 1;
    wl_cost c = gemm_1ms();
    c.inlane[0].op = op;
    c.inlane[0].bytes = AG_BYTES(0.5); /* reduce-scatter and all-gather: the same time on 2 */
    c.inlane[0].count = 1;
    c.n_inlane = 1;
    c.inlane_overlap = true;
    uint32_t k = wl_graph_cost(g, &c);
    wl_op o = {.lane = 0, .kind = WL_OP_COMPUTE, .stream = WL_STREAM_COMPUTE, .mb = -1,
               .layer = -1, .arg = k, .name = (uint16_t)wl_graph_name(g, "layer")};
    wl_graph_op(g, &o, NULL, 0);
    double t = op_end_ms(g, true, 0);
    ck_assert_rel(op_end_ms(g, false, 0), 1.0, 1e-9); /* max(C, W) */
    wl_graph_destroy(g);
    return t;
}

START_TEST(tp_overlap_userbuffers)
{
    ck_assert_rel(tp_op_ms(COLL_REDUCE_SCATTER), 1.0 + 0.5 * 16.0 / 132.0, 1e-9);
    ck_assert_rel(tp_op_ms(COLL_ALLGATHER), 1.0 + 0.5 * 1.0 / 132.0, 1e-9);
}
END_TEST

/* One lane of two GPUs: an op of 2 ms of GEMM work holding `count` all-reduces of `ms` each,
 * issued beside a GEMM of 1 ms (wl_cost.inlane[].under: Megatron's column-parallel backward),
 * and, with blocking_ms > 0, one blocking all-reduce of that time after its compute. The
 * GEMMs on the flat roofline (op_time given: no shape model), so the GEMM under takes 1 ms. */
static double tp_async_op_ms_as(coll_op op, bool ub, double ms, int count, double blocking_ms,
                                bool contention)
{
    wl_graph *g = wl_graph_create(2, 1, 2);
    g->lane_gpus[0] = 0;
    g->lane_gpus[1] = 1;
    wl_cost c = gemm_1ms();
    c.flops[GPU_OP_MATMUL] *= 2;
    /* 2mnk = 1 ms at 0.7 of 989.5 TFLOP/s */
    double k = 1e-3 * 989.5e12 * 0.7 / (2.0 * 4096 * 4096);
    c.inlane[0].op = op;
    /* on 2 GPUs an all-reduce takes B/100 GB/s, a reduce-scatter B/200 GB/s */
    c.inlane[0].bytes = ms * 1e-3 * (op == COLL_ALLREDUCE ? 100e9 : 200e9);
    c.inlane_overlap = ub;
    c.inlane[0].count = count;
    c.inlane[0].under = (gpu_gemm){4096, 4096, k, 1, 1, false};
    c.n_inlane = 1;
    if (blocking_ms > 0) {
        c.inlane[1].op = COLL_ALLREDUCE;
        c.inlane[1].bytes = blocking_ms * 1e-3 * 100e9;
        c.inlane[1].count = 1;
        c.n_inlane = 2;
    }
    uint32_t id = wl_graph_cost(g, &c);
    wl_op o = {.lane = 0, .kind = WL_OP_COMPUTE, .stream = WL_STREAM_COMPUTE, .mb = -1,
               .layer = -1, .arg = id, .name = (uint16_t)wl_graph_name(g, "backward")};
    wl_graph_op(g, &o, NULL, 0);
    gpu_spec sp[2] = {h100(), h100()};
    replay_config cfg = {.n_gpus = 2, .gpus = sp, .path = uni_path, .record = true,
                         .contention = contention, .op_time = replay_roofline};
    replay_result r;
    dt_error e;
    dt_error_clear(&e);
    ck_assert_int_eq(replay_run(g, &cfg, &r, &e), DT_OK);
    double t = sim_time_to_s(r.op_end[0]) * 1e3;
    replay_result_free(&r);
    wl_graph_destroy(g);
    return t;
}

static double tp_async_op_ms(double ms, int count, double blocking_ms, bool contention)
{
    return tp_async_op_ms_as(COLL_ALLREDUCE, false, ms, count, blocking_ms, contention);
}

/* Megatron's asynchronous column-parallel backward: an all-reduce of C beside a GEMM of G0 = 1
 * ms. Without the contention model the op waits only for what C takes beyond it: C 0.5 ms ->
 * 2 ms, C 1.5 ms -> 2.5 ms. With it the all-reduce's kernels hold ceil(100 GB/s / 15) = 7 NCCL
 * channels, the GEMM under it runs on 125 of 132 SMs (G1 = 132/125 ms): C 0.5 ms costs the op
 * C (1 - G0/G1) = 0.5 x 7/132 ms; C 1.5 ms outlasts G1 and costs C - G0 = 0.5 ms. Two of them
 * twice that; a blocking all-reduce of 0.3 ms beside them adds its whole 0.3 ms. */
START_TEST(tp_async_beside_gemm)
{
    ck_assert_rel(tp_async_op_ms(0.5, 1, 0, false), 2.0, 1e-9);
    ck_assert_rel(tp_async_op_ms(1.5, 1, 0, false), 2.5, 1e-9);
    ck_assert_rel(tp_async_op_ms(0.5, 1, 0, true), 2.0 + 0.5 * 7.0 / 132.0, 1e-9);
    ck_assert_rel(tp_async_op_ms(1.5, 1, 0, true), 2.5, 1e-9);
    ck_assert_rel(tp_async_op_ms(0.5, 2, 0, true), 2.0 + 2 * 0.5 * 7.0 / 132.0, 1e-9);
    ck_assert_rel(tp_async_op_ms(0.5, 2, 0.3, true), 2.3 + 2 * 0.5 * 7.0 / 132.0, 1e-9);
    ck_assert_rel(tp_async_op_ms(1.5, 1, 0.3, false), 2.8, 1e-9);
}
END_TEST

/* The same beside a GEMM under tp_comm_overlap: Transformer Engine's bulk userbuffers overlap of a
 * reduce-scatter (its 16 SMs, REPLAY_TE_BULK_SMS, not NCCL's 7 channels; its HBM bytes do not
 * touch a GEMM on the flat roofline): C 0.5 ms costs 0.5 x 16/132 ms; C 1.5 ms outlasts G1 =
 * 132/116 ms and costs C - G0 = 0.5 ms; without contention 2 and 2.5 ms. */
START_TEST(tp_bulk_beside_gemm)
{
    ck_assert_rel(tp_async_op_ms_as(COLL_REDUCE_SCATTER, true, 0.5, 1, 0, true), 2.0 + 0.5 * 16.0 / 132.0, 1e-9);
    ck_assert_rel(tp_async_op_ms_as(COLL_REDUCE_SCATTER, true, 1.5, 1, 0, true), 2.5, 1e-9);
    ck_assert_rel(tp_async_op_ms_as(COLL_REDUCE_SCATTER, true, 0.5, 1, 0, false), 2.0, 1e-9);
    ck_assert_rel(tp_async_op_ms_as(COLL_REDUCE_SCATTER, true, 1.5, 1, 0, false), 2.5, 1e-9);
    /* the same reduce-scatter as an NCCL one (no tp_comm_overlap): 7 channels */
    ck_assert_rel(tp_async_op_ms_as(COLL_REDUCE_SCATTER, false, 0.5, 1, 0, true), 2.0 + 0.5 * 7.0 / 132.0, 1e-9);
}
END_TEST

/* Transformer Engine's pipelined reduce-scatters (4 splits): two reduce-scatters of 0.2 ms under
 * a 1 ms GEMM hide, but each pipelined one leaves its last split, 0.05 ms: 1.05 ms with one,
 * 1.1 with both; with the userbuffers' 16 SMs charged as well, 1 ms + 2 x 0.2 ms x 16/132 + the
 * drains. An all-gather has no drain, and a reduce-scatter that outlasts the GEMM (2 x 0.8 ms)
 * is exposed by its excess, 0.6 ms, which already holds the drain. */
START_TEST(tp_overlap_drain)
{
    ck_assert_rel(tp_op_drain_ms(COLL_REDUCE_SCATTER, 0.2, 0, false), 1.0, 1e-9);
    ck_assert_rel(tp_op_drain_ms(COLL_REDUCE_SCATTER, 0.2, 1, false), 1.05, 1e-9);
    ck_assert_rel(tp_op_drain_ms(COLL_REDUCE_SCATTER, 0.2, 2, false), 1.1, 1e-9);
    ck_assert_rel(tp_op_drain_ms(COLL_REDUCE_SCATTER, 0.2, 2, true),
                  1.0 + 2 * 0.2 * 16.0 / 132.0 + 0.1, 1e-9);
    ck_assert_rel(tp_op_drain_ms(COLL_ALLGATHER, 0.2, 2, false), 1.0, 1e-9);
    ck_assert_rel(tp_op_drain_ms(COLL_REDUCE_SCATTER, 0.8, 2, false), 1.6, 1e-9);
}
END_TEST

START_TEST(nccl_sms_per_gpu)
{
    const char *names[] = {"A100-SXM", "H100-SXM", "H200-SXM", "B200"};
    int want[] = {16, 24, 24, 48};
    for (int i = 0; i < 4; i++) {
        gpu_spec s;
        dt_error e;
        ck_assert_int_eq(gpu_preset(names[i], &s, &e), DT_OK);
        ck_assert_int_eq(replay_nccl_sms(&s), want[i]);
    }
    gpu_spec h = h100(), a;
    dt_error e;
    ck_assert_int_eq(gpu_preset("A100-SXM", &a, &e), DT_OK);
    ck_assert_int_eq(replay_nccl_channels(&h, 12e9), 2);
    ck_assert_int_eq(replay_nccl_channels(&h, 48e9), 4);
    ck_assert_int_eq(replay_nccl_channels(&h, 360e9), 24);
    ck_assert_int_eq(replay_nccl_channels(&h, 1e12), 24);
    ck_assert_int_eq(replay_nccl_channels(&a, 360e9), 16);
}
END_TEST

/* Two pipeline stages of one H100 each. Stage 0 computes a 1 ms GEMM, then sends `bytes` to
 * stage 1 (PP stream) and computes `next`, after the send too when `blocking`; stage 1 computes
 * `recv_side` from time 0 (none when NULL). Returns the ends (ms) of `next` and of `recv_side`. */
/* The start both pipeline-send graphs share: two lanes on GPUs 0 and 1, lane 0's 1 ms GEMM (*o,
 * the compute op template, costs it) and its send of `bytes` to lane 1 after it. */
static wl_graph *gemm_then_send(double bytes, wl_op *o, uint32_t *first, uint32_t *send)
{
    wl_graph *g = wl_graph_create(2, 2, 1);
    g->lane_gpus[0] = 0;
    g->lane_gpus[1] = 1;
    wl_cost a = gemm_1ms();
    uint16_t nm = (uint16_t)wl_graph_name(g, "op");
    *o = (wl_op){.lane = 0, .kind = WL_OP_COMPUTE, .stream = WL_STREAM_COMPUTE, .mb = -1,
                 .layer = -1, .arg = wl_graph_cost(g, &a), .name = nm};
    *first = wl_graph_op(g, o, NULL, 0);
    wl_op snd = {.lane = 0, .kind = WL_OP_SEND, .stream = WL_STREAM_PP, .mb = -1, .layer = -1,
                 .arg = 1, .bytes = bytes, .name = nm};
    *send = wl_graph_op(g, &snd, first, 1);
    return g;
}

static void two_stages(const wl_cost *next, const wl_cost *recv_side, double bytes, bool blocking,
                       bool contention, double *next_ms, double *recv_ms)
{
    wl_op o;
    uint32_t first, send;
    wl_graph *g = gemm_then_send(bytes, &o, &first, &send);
    uint16_t nm = o.name;
    o.arg = wl_graph_cost(g, next);
    uint32_t deps[2] = {first, send};
    uint32_t n_op = wl_graph_op(g, &o, deps, blocking ? 2 : 1);
    uint32_t r_op = UINT32_MAX;
    if (recv_side) {
        wl_op r = {.lane = 1, .kind = WL_OP_COMPUTE, .stream = WL_STREAM_COMPUTE, .mb = -1,
                   .layer = -1, .arg = wl_graph_cost(g, recv_side), .name = nm};
        r_op = wl_graph_op(g, &r, NULL, 0);
    }
    replay_result res;
    run_two_h100(g, contention, 0, &res);
    /* the send itself: 0.5 ms after the first op, whatever it slows */
    ck_assert_rel(sim_time_to_s(res.op_end[send]) * 1e3, 1.0 + bytes / 100e9 * 1e3, 1e-9);
    *next_ms = sim_time_to_s(res.op_end[n_op]) * 1e3;
    *recv_ms = recv_side ? sim_time_to_s(res.op_end[r_op]) * 1e3 : 0;
    replay_result_free(&res);
    wl_graph_destroy(g);
}

/* A 2 ms op of kind like: GEMM or memory-bound. */
static wl_cost twice(wl_cost c)
{
    for (int k = 0; k < GPU_OP_CLASS_COUNT; k++) {
        c.flops[k] *= 2;
        c.bytes[k] *= 2;
    }
    return c;
}

/* 1 ms of HBM traffic at 0.8 x 3.35 TB/s = 2.68 TB/s */
static wl_cost hbm_1ms(void)
{
    wl_cost c = {0};
    c.bytes[GPU_OP_ELEMENTWISE] = 1e-3 * 3.35e12 * 0.8;
    return c;
}

#define SEND_BYTES 50e6 /* 0.5 ms at 100 GB/s: 100 GB/s per GPU, 7 NCCL channels */

START_TEST(pipeline_send_slows_both_stages)
{
    wl_cost gm = gemm_1ms(), hb = hbm_1ms(), gm2 = twice(gm), hb2 = twice(hb);
    double nx, rv;
    /* SMs: the send's 7 channels on both GPUs while it is in flight, [1, 1.5] ms */
    two_stages(&gm, &gm2, SEND_BYTES, false, true, &nx, &rv);
    ck_assert_rel(nx, 2.0 + 0.5 * 7.0 / 132.0, 1e-9);
    ck_assert_rel(rv, 2.0 + 0.5 * 7.0 / 132.0, 1e-9);
    /* HBM: the sender reads 100 GB/s, the receiver writes, reads and writes 300 GB/s */
    two_stages(&hb, &hb2, SEND_BYTES, false, true, &nx, &rv);
    ck_assert_rel(nx, 2.0 + 0.5 * 0.1 / 2.68, 1e-9);
    ck_assert_rel(rv, 2.0 + 0.5 * 0.3 / 2.68, 1e-9);
    /* contention off: free */
    two_stages(&gm, &gm2, SEND_BYTES, false, false, &nx, &rv);
    ck_assert_rel(nx, 2.0, 1e-9);
    ck_assert_rel(rv, 2.0, 1e-9);
}
END_TEST

START_TEST(blocking_send_slows_nothing)
{
    /* stage 0's next op waits for the send (Megatron's blocking exchange): it runs alone after
     * it, and the receiver, inside its own exchange in Megatron, is not charged either */
    wl_cost gm = gemm_1ms(), gm2 = twice(gm), hb = hbm_1ms(), hb2 = twice(hb);
    double nx, rv;
    two_stages(&gm, &gm2, SEND_BYTES, true, true, &nx, &rv);
    ck_assert_rel(nx, 2.5, 1e-9);
    ck_assert_rel(rv, 2.0, 1e-9);
    two_stages(&hb, &hb2, SEND_BYTES, true, true, &nx, &rv);
    ck_assert_rel(nx, 2.5, 1e-9);
    ck_assert_rel(rv, 2.0, 1e-9);
}
END_TEST

/* A send that only an op on the compute stream other than a compute op waits for blocks too:
 * Megatron's MoE backward opens with an all-to-all there (wl_schedule's split MoE layer). Here a
 * collective of stage 0 alone (no time) on its compute stream waits for the send, and stage 1's
 * 2 ms GEMM running while the bytes arrive is not slowed. */
START_TEST(blocking_send_before_compute_stream_collective)
{
    wl_graph *g = wl_graph_create(2, 2, 1);
    g->lane_gpus[0] = 0;
    g->lane_gpus[1] = 1;
    wl_cost a = gemm_1ms(), b = twice(gemm_1ms());
    uint16_t nm = (uint16_t)wl_graph_name(g, "op");
    wl_op o = {.lane = 0, .kind = WL_OP_COMPUTE, .stream = WL_STREAM_COMPUTE, .mb = -1,
               .layer = -1, .arg = wl_graph_cost(g, &a), .name = nm};
    uint32_t first = wl_graph_op(g, &o, NULL, 0);
    wl_op snd = {.lane = 0, .kind = WL_OP_SEND, .stream = WL_STREAM_PP, .mb = -1, .layer = -1,
                 .arg = 1, .bytes = SEND_BYTES, .name = nm};
    uint32_t send = wl_graph_op(g, &snd, &first, 1);
    wl_op a2a = {.lane = 0, .kind = WL_OP_COLL, .stream = WL_STREAM_COMPUTE, .mb = -1,
                 .layer = -1, .arg = wl_graph_coll(g, COLL_ALLTOALL, 1e6), .name = nm};
    wl_graph_op(g, &a2a, &send, 1);
    wl_op r = {.lane = 1, .kind = WL_OP_COMPUTE, .stream = WL_STREAM_COMPUTE, .mb = -1,
               .layer = -1, .arg = wl_graph_cost(g, &b), .name = nm};
    uint32_t r_op = wl_graph_op(g, &r, NULL, 0);
    replay_result res;
    run_two_h100(g, true, 0, &res);
    ck_assert_rel(sim_time_to_s(res.op_end[r_op]) * 1e3, 2.0, 1e-9);
    replay_result_free(&res);
    wl_graph_destroy(g);
}
END_TEST

/* Megatron-Core's overlap_p2p_comm (interleaved schedule): the send after forward k is waited
 * for before forward k + 1, and backward k runs beside it. Stage 0: a 1 ms GEMM, its 50 MB send
 * (0.5 ms, 7 channels), a 1 ms GEMM that does not wait for it, then a 1 ms GEMM that does. The
 * send does not block (the op right after the compute it follows runs beside it): that op loses
 * the send's channels for 0.5 ms and ends at 2 + 0.5 x 7/132 ms, the waiting op 1 ms later; a
 * blocking send (the op right after waits) slows nothing (2.5 and 3.5 ms). */
START_TEST(overlapped_send_slows_the_op_between)
{
    for (int blocking = 0; blocking < 2; blocking++) {
        wl_op o;
        uint32_t first, send;
        wl_graph *g = gemm_then_send(SEND_BYTES, &o, &first, &send);
        uint32_t mid = wl_graph_op(g, &o, blocking ? &send : &first, 1);
        uint32_t d[2] = {mid, send};
        uint32_t last = wl_graph_op(g, &o, d, 2);
        replay_result res;
        run_two_h100(g, true, 0, &res);
        double slow = blocking ? 0.5 : 0.5 * 7.0 / 132.0;
        ck_assert_rel(sim_time_to_s(res.op_end[send]) * 1e3, 1.5, 1e-9);
        ck_assert_rel(sim_time_to_s(res.op_end[mid]) * 1e3, 2.0 + slow, 1e-9);
        ck_assert_rel(sim_time_to_s(res.op_end[last]) * 1e3, 3.0 + slow, 1e-9);
        replay_result_free(&res);
        wl_graph_destroy(g);
    }
}
END_TEST

/* The same two stages as a trace on two H100s under one 100 GB/s switch without latency, in
 * `network` mode: GPU 0's 1 ms GEMM, its 50 MB send to GPU 1 after it and, when `sender`, a
 * 1 ms memory-bound op after the GEMM (and after the send when `blocking`); otherwise GPU 1's
 * 2 ms memory-bound op from time 0 (and, when `blocking`, a GPU 0 op of no work waiting for the
 * send, which makes it a blocking one). Returns the step time in ms: the slowed op's end. */
static double trace_step_ms(const char *network, bool sender, bool blocking)
{
    char text[2048];
    snprintf(text, sizeof text,
             "{\"format\": \"dtsim-trace\", \"version\": 1, \"gpus\": 2,"
             " \"environment\": {\"network\": \"%s\"},"
             " \"costs\": [{\"flops\": {\"matmul\": %.17g}},"
             "  {\"bytes\": {\"elementwise\": %.17g}}, {\"bytes\": {\"elementwise\": %.17g}}],"
             " \"ops\": ["
             "  {\"gpu\": 0, \"kind\": \"compute\", \"cost\": 0},"
             "  {\"gpu\": 0, \"kind\": \"send\", \"to\": 1, \"bytes\": %.17g, \"deps\": [0]},"
             "  %s ]}",
             network, 1e-3 * 989.5e12 * 0.7, 1e-3 * 3.35e12 * 0.8, 2e-3 * 3.35e12 * 0.8,
             SEND_BYTES,
             sender ? (blocking ? "{\"gpu\": 0, \"kind\": \"compute\", \"cost\": 1, \"deps\": [0, 1]}"
                                : "{\"gpu\": 0, \"kind\": \"compute\", \"cost\": 1, \"deps\": [0]}")
                    : (blocking ? "{\"gpu\": 1, \"kind\": \"compute\", \"cost\": 2},"
                                  " {\"gpu\": 0, \"kind\": \"compute\", \"duration\": 0, \"deps\": [1]}"
                                : "{\"gpu\": 1, \"kind\": \"compute\", \"cost\": 2}"));
    run_result r = run_trace_text(text, "{\"generator\": \"switch\", \"gpus\": 2, \"bandwidth\":"
                                        " \"100 GB/s\", \"latency\": \"0 s\", \"switch_latency\":"
                                        " \"0 s\", \"gpu\": \"H100-SXM\"}");
    double t = r.step_time_s * 1e3;
    run_result_free(&r);
    return t;
}

START_TEST(pipeline_send_both_modes)
{
    static const char *const modes[2] = {"analytic", "flow"};
    for (int m = 0; m < 2; m++) {
        ck_assert_rel(trace_step_ms(modes[m], true, false), 2.0 + 0.5 * 0.1 / 2.68, 1e-9);
        ck_assert_rel(trace_step_ms(modes[m], false, false), 2.0 + 0.5 * 0.3 / 2.68, 1e-9);
        ck_assert_rel(trace_step_ms(modes[m], true, true), 2.5, 1e-9);
        ck_assert_rel(trace_step_ms(modes[m], false, true), 2.0, 1e-9);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("contention");
    TCase *t = tcase_create("core");
    tcase_add_test(t, gemm_beside_allgather);
    tcase_add_test(t, gemm_end_continuous_in_gather_start);
    tcase_add_test(t, memory_bound_beside_allgather);
    tcase_add_test(t, tp_overlap_userbuffers);
    tcase_add_test(t, tp_overlap_drain);
    tcase_add_test(t, tp_async_beside_gemm);
    tcase_add_test(t, tp_bulk_beside_gemm);
    tcase_add_test(t, nccl_sms_per_gpu);
    tcase_add_test(t, pipeline_send_slows_both_stages);
    tcase_add_test(t, blocking_send_slows_nothing);
    tcase_add_test(t, blocking_send_before_compute_stream_collective);
    tcase_add_test(t, overlapped_send_slows_the_op_between);
    tcase_add_test(t, pipeline_send_both_modes);
    suite_add_tcase(s, t);
    return dt_run_suite(s);
}
