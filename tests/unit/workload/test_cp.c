/* test_cp.c - context parallelism and ring attention (docs/workloads.md, "Context
 * parallelism").
 * Pins down: the KV block one ring step sends, 2 b (s/cp) h (g/a) e / t; cp - 1 steps per
 * layer and pass, forward K and V, backward K, V and their gradients (twice the bytes), so a
 * step's CP bytes per GPU are 3 m L (cp - 1) kv, checked in a run; the exposed ring time on a
 * slow switch against its closed form, per op ring_count (cp - 1) max(0, send - attention/(
 * ring_count cp)), and its in-flight time ring_count (cp - 1) send; with tp, pp, dp and cp together every GPU holds one lane position, the CP
 * ring joins the lanes of one DP rank and stage in CP order, CP ranks sit right outside TP
 * ranks; activations per GPU are the cp = 1 figure / cp; the dense FLOPs of a step do not
 * change; bad input names its key. Flow mode (the ring's sends as flows): on an uncontended
 * switch it equals the closed form to 1e-9; on two switches joined by one link the two TP
 * ranks' sends of a step share it and take twice as long (exposed and in flight by the closed
 * form), a 1 TB/s link hides the ring, and the timeline's ring_attention slices of the critical
 * GPU add up to its CP time in flight. Traces: a cp > 1 graph through the dtsim trace and the
 * Chakra files reads back to the same graph; read as a foreign Chakra trace it holds one send
 * and one matching receive per ring step and GPU (3 m L (cp - 1) kv bytes per GPU) and runs;
 * the trace's ring keys are checked and located. Leaves free: the attention's own cost model
 * (test_attention).
 */
#include <math.h>
#include <string.h>

#include "dtsim/chakra.h"
#include "dtsim/replay.h"
#include "dtsim/run.h"
#include "dtsim/workload.h"
#include "wl_testutil.h"

/* 4 GPUs on one switch at 1 GB/s without latency: cp 4, one microbatch, two layers. */
#define SLOW_RING(cp, gpus)                                                                     \
    "{\"topology\": {\"generator\": \"switch\", \"gpus\": " #gpus ", \"bandwidth\": \"1 GB/s\","   \
    " \"latency\": \"0 s\", \"switch_latency\": \"0 s\", \"gpu\": \"H100-SXM\"},"                  \
    " \"model\": {\"kind\": \"transformer\", \"layers\": 2, \"hidden\": 1024, \"heads\": 16,"      \
    " \"kv_heads\": 4, \"seq_len\": 8192, \"vocab\": 1000}, \"parallel\": {\"cp\": " #cp "},"      \
    " \"global_batch\": 1, \"options\": {\"network\": \"analytic\"}}"

/* One ring block's attention time (ps) on an H100: the op's forward or backward attention
 * FLOPs over L layers at the measured FA2 efficiency for a block of `keys` keys, causal, at head
 * dim 64 (every model here: hidden 1024 over 16 heads) (gpu_attention_eff; the backward in its
 * own class), slowed by FA2's measured attention-dropout ratio (the models keep the default
 * attention_dropout) and scaled to its call's size, `rows` = micro batch x heads / tp (one
 * sequence here: 16 heads, 8 at tp 2), spread over the L x cp blocks. */
static double h100_block_ps(const wl_layer_cost *lc, int bwd, double L, double cp, double keys,
                            double rows)
{
    gpu_spec h100;
    dt_error err;
    ck_assert_int_eq(gpu_preset("H100-SXM", &h100, &err), DT_OK);
    gpu_spec at = h100;
    gpu_op_class cls = bwd ? GPU_OP_ATTENTION_BWD : GPU_OP_ATTENTION;
    at.compute_eff[cls] = gpu_attention_eff(&h100, GPU_ATTN_FA2, keys, 64, true, bwd) /
                          gpu_attention_dropout_factor(&h100, GPU_ATTN_FA2, bwd) *
                          gpu_attention_call_factor(&h100, GPU_ATTN_FA2, keys, 64, rows, true);
    double attn = (double)replay_roofline(&at, cls, GPU_BF16,
                                          L * (bwd ? lc->bwd_attn_flops : lc->fwd_attn_flops), 0);
    return attn / (L * cp);
}

/* Contention (docs/workloads.md, "Compute beside communication"): a ring step's NCCL
 * send/receive sending `rate` B/s per GPU holds replay_nccl_channels(rate) SMs and moves
 * REPLAY_NCCL_P2P_HBM_PER_BYTE x rate of HBM, and the compute op beside it (its attention
 * block included) runs at t1/t0 of its time. For each ring op of scenario `text`'s lane 0, in
 * order (at most 8): whether it is a backward op, its ring passes, and that ratio on an H100.
 * Returns how many. */
static int h100_ring_ops(const char *text, int n_gpus, double rate, int bwd[8], int count[8],
                         double ratio[8])
{
    gpu_spec h100;
    dt_error err;
    ck_assert_int_eq(gpu_preset("H100-SXM", &h100, &err), DT_OK);
    load(text, n_gpus);
    wl_graph *g = wl_graph_build(&sc);
    int n = 0;
    for (uint32_t i = 0; i < g->n_ops; i++) {
        const wl_op *o = &g->ops[i];
        const wl_cost *c = &g->costs[o->arg];
        if (o->kind != WL_OP_COMPUTE || o->lane != 0 || c->ring_count == 0) continue;
        ck_assert_int_lt(n, 8);
        sim_time_t t0 = replay_op_compute_time(g, c, &h100, gpu_op_time, gpu_gemm_time);
        sim_time_t t1 = replay_contended_time(g, c, &h100, gpu_op_time, gpu_gemm_time,
                                              replay_nccl_channels(&h100, rate),
                                              REPLAY_NCCL_P2P_HBM_PER_BYTE * rate);
        bwd[n] = c->flops[GPU_OP_ATTENTION_BWD] > 0;
        count[n] = c->ring_count;
        ratio[n++] = (double)t1 / (double)t0;
        ck_assert_double_gt(ratio[n - 1], 1);
        ck_assert_double_lt(ratio[n - 1], 2);
    }
    wl_graph_destroy(g);
    unload();
    return n;
}

START_TEST(ring_bytes_and_exposed_time)
{
    load(SLOW_RING(4, 4), 4);
    double b = 1, s = 8192, h = 1024, g = 4, a = 16, e = 2, cp = 4, L = 2;
    double kv = 2 * b * (s / cp) * h * (g / a) * e; /* 2.1 MB */
    ck_assert_rel(wl_cp_ring_bytes(&sc.model, &sc.plan), kv, 1e-15);
    wl_layer_cost lc;
    wl_layer_cost_get(&sc.model, &sc.plan, &lc);
    /* 1/cp of the causal attention: b (s/cp) s h x 4 / 2 */
    ck_assert_rel(lc.fwd_attn_flops, 0.5 * 4 * b * (s / cp) * s * h, 1e-15);
    gpu_spec h100;
    dt_error err;
    ck_assert_int_eq(gpu_preset("H100-SXM", &h100, &err), DT_OK);
    /* the H100's measured FA2 efficiency for one ring block of s/cp = 2,048 keys, causal, at
     * head dim h/a = 64: the head-dim-64 panels' 2k bars (forward 262, backward 264), the
     * backward's causal ratio from the panels that measured both forwards (128: 298/362) */
    ck_assert_rel(gpu_attention_eff(&h100, GPU_ATTN_FA2, s / cp, h / a, true, false),
                  262.0 / 989, 1e-12);
    ck_assert_rel(gpu_attention_eff(&h100, GPU_ATTN_FA2, s / cp, h / a, true, true),
                  264.0 * 298 / 362 / 989, 1e-12);
    /* the ring ops (pp 1, one microbatch): the forward, and the backward split per layer (the
     * gradients are reduced over the cp replicas layer by layer), ring_count passes of cp - 1
     * steps each, L in all per direction; each block of attention runs beside its step's
     * send/receive kernels (1 GB/s: 2 SMs, NCCL's fewest, and 4 GB/s of HBM), at r times its
     * time (r of its op's cost) */
    unload();
    ck_assert_int_eq(replay_nccl_channels(&h100, 1e9), 2);
    int bwd[8], count[8], passes[2] = {0, 0};
    double ratio[8], want = 0, all = 0;
    int n = h100_ring_ops(SLOW_RING(4, 4), 4, 1e9, bwd, count, ratio);
    ck_assert_int_eq(n, 3);
    for (int k = 0; k < n; k++) {
        double send = (double)sim_time_from_s((bwd[k] ? 2 : 1) * kv / 1e9);
        double block = h100_block_ps(&lc, bwd[k], L, cp, s / cp, 16);
        ck_assert_double_lt(block * ratio[k], send); /* exposed: the link is slow */
        want += llround(count[k] * (cp - 1) * (send - block * ratio[k]));
        all += llround(count[k] * (cp - 1) * send);
        passes[bwd[k]] += count[k];
    }
    ck_assert_int_eq(passes[0], L);
    ck_assert_int_eq(passes[1], L);
    run_result r = run_text(SLOW_RING(4, 4));
    ck_assert_rel(r.bytes_sent_per_gpu[WL_COMM_CP], 3 * 1 * L * (cp - 1) * kv, 1e-12);
    /* within a picosecond per op: each side rounds its own sums to whole picoseconds */
    ck_assert_double_lt(fabs(r.comm_exposed_by_kind_s[WL_COMM_CP] - sim_time_to_s((sim_time_t)want)),
                        2.5e-12);
    /* in flight: every send, the hidden part under the attention blocks included */
    ck_assert_rel(r.comm_inflight_by_kind_s[WL_COMM_CP], sim_time_to_s((sim_time_t)all), 1e-12);
    ck_assert_double_gt(r.comm_exposed_by_kind_s[WL_COMM_CP], 0.02); /* 6 x 2.1 MB + 6 x 4.2 MB */
    run_result_free(&r);
}
END_TEST

START_TEST(with_tp_pp_dp)
{
    const char *text =
        "{\"topology\": {\"generator\": \"dgx\", \"nodes\": 2, \"gpus_per_node\": 8,"
        " \"gpu\": \"H100-SXM\"}, \"model\": {\"kind\": \"transformer\", \"layers\": 4,"
        " \"hidden\": 1024, \"heads\": 16, \"kv_heads\": 8, \"seq_len\": 8192, \"vocab\": 32000,"
        " \"mlp\": \"swiglu\", \"ffn\": 2816}, \"parallel\": {\"tp\": 2, \"pp\": 2, \"cp\": 2,"
        " \"sequence_parallel\": true, \"schedule\": \"1f1b\", \"zero\": 1}, \"global_batch\": 8}";
    load(text, 16);
    ck_assert_int_eq(sc.plan.dp, 2);
    wl_graph *g = wl_graph_build(&sc);
    ck_assert_int_eq(g->n_lanes, 2 * 2 * 2); /* dp x cp x pp lanes of tp GPUs */
    int seen[16] = {0};
    for (int l = 0; l < g->n_lanes; l++)
        for (int k = 0; k < 2; k++) seen[g->lane_gpus[l * 2 + k]]++;
    for (int i = 0; i < 16; i++) ck_assert_int_eq(seen[i], 1);
    /* replica r = d x cp + c, lane r x pp + stage; CP rank c's TP group at c x tp, so the
     * ring partner of a lane is 2 GPUs away (tp 2) and the two CP ranks share the same box */
    for (int r = 0; r < 4; r++)
        for (int st = 0; st < 2; st++) {
            int l = r * 2 + st, nx = (int)g->cp_next[l];
            ck_assert_int_eq(nx, (r / 2 * 2 + (r % 2 + 1) % 2) * 2 + st);
            ck_assert_int_eq(abs(g->lane_gpus[nx * 2] - g->lane_gpus[l * 2]), 2);
            ck_assert_int_eq(g->lane_gpus[nx * 2] / 8, g->lane_gpus[l * 2] / 8);
        }
    /* dense gradients are reduced over the dp x cp = 4 replicas of a stage */
    for (uint32_t c = 0; c < g->n_colls; c++) {
        int n = 0;
        for (uint32_t i = 0; i < g->n_ops; i++) n += g->ops[i].kind == WL_OP_COLL && g->ops[i].arg == c;
        if (g->colls[c].kind == WL_COMM_DP || g->colls[c].kind == WL_COMM_ZERO) ck_assert_int_eq(n, 4);
    }
    wl_graph_destroy(g);
    /* activations per GPU: the cp = 1 figure over cp; the model FLOPs do not change */
    double act = mem_activation_per_layer(&sc.model, &sc.plan);
    wl_plan one = sc.plan;
    one.cp = 1;
    ck_assert_rel(act, mem_activation_per_layer(&sc.model, &one) / 2, 1e-15);
    ck_assert_rel(wl_model_flops_per_step(&sc.model, 8), 3 * 8 * (4 * (2 * 8192.0 *
                      (2 * 1024.0 * 1024 + 2 * 1024.0 * 512 + 3 * 1024.0 * 2816) +
                      4 * 8192.0 * 8192 * 1024) + 2 * 8192.0 * 1024 * 32000), 1e-14);
    unload();
    run_result r = run_text(text);
    ck_assert_int_eq(r.n_gpus, 16);
    /* 2 layers per stage x 4 microbatches x 3 kv per layer (forward kv, backward 2 kv) */
    double kv = 2 * 1.0 * 4096 * 1024 * 0.5 * 2 / 2;
    ck_assert_rel(r.bytes_sent_per_gpu[WL_COMM_CP], 2 * 4 * 3 * (2 - 1) * kv, 1e-12);
    ck_assert_double_gt(r.step_time_s, 0);
    run_result_free(&r);
}
END_TEST

/* Two switches of two GPUs each, joined by one link of `bw` each way; GPU links 1 TB/s, no
 * latency anywhere. tp 2 x cp 2: CP rank 0 is GPUs 0-1 on switch A, rank 1 GPUs 2-3 on B, so a
 * ring step's two sends (0->2, 1->3) share the A->B link. */
#define TWO_SWITCHES(bw, network)                                                               \
    "{\"topology\": {\"format\": \"dtsim-topology\", \"version\": 1, \"name\": \"ab\","            \
    " \"gpu\": {\"preset\": \"H100-SXM\"}, \"switch_latency\": \"0 s\", \"nodes\": ["             \
    "{\"name\": \"A\", \"kind\": \"switch\"}, {\"name\": \"B\", \"kind\": \"switch\"},"              \
    "{\"name\": \"g0\", \"kind\": \"gpu\"}, {\"name\": \"g1\", \"kind\": \"gpu\"},"                  \
    "{\"name\": \"g2\", \"kind\": \"gpu\"}, {\"name\": \"g3\", \"kind\": \"gpu\"}], \"links\": ["     \
    "{\"src\": \"g0\", \"dst\": \"A\", \"bandwidth\": \"1 TB/s\", \"latency\": \"0 s\"},"            \
    "{\"src\": \"g1\", \"dst\": \"A\", \"bandwidth\": \"1 TB/s\", \"latency\": \"0 s\"},"            \
    "{\"src\": \"g2\", \"dst\": \"B\", \"bandwidth\": \"1 TB/s\", \"latency\": \"0 s\"},"            \
    "{\"src\": \"g3\", \"dst\": \"B\", \"bandwidth\": \"1 TB/s\", \"latency\": \"0 s\"},"            \
    "{\"src\": \"A\", \"dst\": \"B\", \"bandwidth\": \"" bw "\", \"latency\": \"0 s\"}]},"          \
    " \"model\": {\"kind\": \"transformer\", \"layers\": 2, \"hidden\": 1024, \"heads\": 16,"      \
    " \"kv_heads\": 4, \"seq_len\": 8192, \"vocab\": 1000}, \"parallel\": {\"tp\": 2, \"cp\": 2,"  \
    " \"overlap_dp\": false}, \"global_batch\": 1, \"options\": {\"network\": \"" network "\"}}"

/* Exposed ring time of a step of TWO_SWITCHES, closed form: one forward and one backward op,
 * each L (cp - 1) ring steps that last max(block, send) with send = share x bytes / bw (the
 * sends of the step's two TP ranks on one link: share 2 in flow mode, 1 in analytic mode,
 * which costs each send alone). */
static double two_switch_exposed(double bw, double share, double *in_flight)
{
    /* contention: the attention block beside a step's sends runs at r times its time (its op's),
     * the sends' contention-free pace being the link's bandwidth (each alone) */
    int bwd[8], count[8];
    double r[8];
    int n = h100_ring_ops(TWO_SWITCHES("1 GB/s", "flow"), 4, bw, bwd, count, r);
    load(TWO_SWITCHES("1 GB/s", "flow"), 4);
    double kv = wl_cp_ring_bytes(&sc.model, &sc.plan), L = 2, cp = 2;
    ck_assert_rel(kv, 2 * 1.0 * (8192 / cp) * 1024 * (4.0 / 16) * 2 / 2, 1e-15);
    wl_layer_cost lc;
    wl_layer_cost_get(&sc.model, &sc.plan, &lc);
    unload();
    double want = 0, all = 0;
    for (int k = 0; k < n; k++) {
        /* ring blocks of s/cp = 4,096 keys */
        double send = 1e12 * share * (bwd[k] ? 2 : 1) * kv / bw;
        double block = h100_block_ps(&lc, bwd[k], L, cp, 8192 / cp, 8) * r[k];
        want += count[k] * (cp - 1) * fmax(0, send - block);
        all += count[k] * (cp - 1) * fmax(send, 0);
    }
    *in_flight = all * 1e-12;
    return want * 1e-12;
}

/* Flow mode: the ring's sends are flows. On TWO_SWITCHES the two TP ranks' sends of a step
 * share the A-B link, so each takes twice as long as it would alone (analytic mode's
 * contention-free cost); across a slow link the ring is exposed, across a fast one hidden. */
START_TEST(ring_flows_share_links)
{
    double infl, want = two_switch_exposed(1e9, 2, &infl);
    ck_assert_double_gt(want, 0.01);
    run_result r = run_text(TWO_SWITCHES("1 GB/s", "flow"));
    ck_assert_rel(r.comm_exposed_by_kind_s[WL_COMM_CP], want, 1e-9);
    ck_assert_rel(r.comm_inflight_by_kind_s[WL_COMM_CP], infl, 1e-9);
    double step_flow = r.step_time_s;
    run_result_free(&r);
    /* the timeline carries the ring: GPU 0's ring_attention spans (hidden under the compute,
     * and the exposed tail) are the CP time in flight, its exposed ones labelled CP, not TP */
    {
        const char *text = TWO_SWITCHES("1 GB/s", "flow");
        cJSON *j;
        dt_error e;
        ck_assert_int_eq(js_parse_text(text, strlen(text), "s.json", &j, &e), DT_OK);
        run_options opt = {.record_timeline = true};
        ck_assert_int_eq(run_scenario(j, "s.json", ".", &opt, &r, &e), DT_OK);
        cJSON_Delete(j);
        const run_timeline *tl = r.timeline;
        ck_assert_ptr_nonnull(tl);
        double ring = 0;
        for (size_t i = 0; i < tl->n_spans; i++) {
            const run_span *sp = &tl->spans[i];
            if (sp->gpu != r.critical_gpu || strcmp(tl->names[sp->name], "ring_attention")) continue;
            ck_assert_int_eq(sp->comm, WL_COMM_CP);
            ring += sim_time_to_s(sp->end - sp->start);
        }
        ck_assert_rel(ring, infl, 1e-9);
        run_result_free(&r);
    }
    /* analytic mode costs each send alone: half the send time */
    double want1 = two_switch_exposed(1e9, 1, &infl);
    r = run_text(TWO_SWITCHES("1 GB/s", "analytic"));
    ck_assert_rel(r.comm_exposed_by_kind_s[WL_COMM_CP], want1, 1e-9);
    ck_assert_double_lt(r.step_time_s, step_flow);
    run_result_free(&r);
    /* a 1 TB/s link: each send (2 x 1 MB at 0.5 TB/s = 4 us) is shorter than its block */
    r = run_text(TWO_SWITCHES("1 TB/s", "flow"));
    ck_assert_double_eq(r.comm_exposed_by_kind_s[WL_COMM_CP], 0);
    ck_assert_double_gt(r.comm_inflight_by_kind_s[WL_COMM_CP], 0);
    ck_assert_double_lt(r.step_time_s, step_flow - want * 0.99);
    run_result_free(&r);
}
END_TEST

/* Flow mode on SLOW_RING (one switch, each GPU's own 1 GB/s link: no two sends share one)
 * gives the analytic closed form of ring_bytes_and_exposed_time exactly. */
START_TEST(ring_flows_uncontended_closed_form)
{
    const char *flow = SLOW_RING(4, 4);
    char text[2048];
    snprintf(text, sizeof text, "%s", flow);
    char *a = strstr(text, "\"analytic\"");
    ck_assert_ptr_nonnull(a);
    memcpy(a, "\"flow\"    ", 10);
    run_result f = run_text(text), an = run_text(SLOW_RING(4, 4));
    ck_assert_double_gt(an.comm_exposed_by_kind_s[WL_COMM_CP], 0.02);
    ck_assert_rel(f.comm_exposed_by_kind_s[WL_COMM_CP], an.comm_exposed_by_kind_s[WL_COMM_CP], 1e-9);
    ck_assert_rel(f.comm_inflight_by_kind_s[WL_COMM_CP], an.comm_inflight_by_kind_s[WL_COMM_CP], 1e-9);
    ck_assert_rel(f.bytes_sent_per_gpu[WL_COMM_CP], an.bytes_sent_per_gpu[WL_COMM_CP], 1e-15);
    ck_assert_rel(f.step_time_s, an.step_time_s, 1e-9);
    run_result_free(&f);
    run_result_free(&an);
}
END_TEST

/* The ring's sends slow the compute beside them (options.comm_contention, default on): on one
 * switch at 100 GB/s a step's KV block (2 MB forward, 4 MB backward) takes 21 or 42 us, less
 * than its attention block, so nothing is exposed; each send/receive holds ceil(100 / 15) = 7
 * SMs and 4 x 100 GB/s of HBM while it runs, and a ring op of compute W runs at 1/r of its
 * rate for its count (cp - 1) sends: W + (1 - 1/r) count (cp - 1) send. The step with
 * contention minus without is the sum over lane 0's three ring ops, in both network modes
 * (flow: every GPU's link carries one send each way, so a flow takes its alone time). */
#define FAST_RING(network, extra)                                                                 \
    "{\"topology\": {\"generator\": \"switch\", \"gpus\": 4, \"bandwidth\": \"100 GB/s\","         \
    " \"latency\": \"0 s\", \"switch_latency\": \"0 s\", \"gpu\": \"H100-SXM\"},"                  \
    " \"model\": {\"kind\": \"transformer\", \"layers\": 2, \"hidden\": 1024, \"heads\": 16,"      \
    " \"kv_heads\": 4, \"seq_len\": 8192, \"vocab\": 1000}, \"parallel\": {\"cp\": 4,"             \
    " \"overlap_dp\": false}, \"global_batch\": 1, \"options\": {\"network\": \"" network "\""    \
    extra "}}"

START_TEST(ring_sends_slow_compute)
{
    gpu_spec h100;
    dt_error err;
    ck_assert_int_eq(gpu_preset("H100-SXM", &h100, &err), DT_OK);
    ck_assert_int_eq(replay_nccl_channels(&h100, 100e9), 7);
    int bwd[8], count[8];
    double r[8];
    int n = h100_ring_ops(FAST_RING("analytic", ""), 4, 100e9, bwd, count, r);
    ck_assert_int_eq(n, 3);
    load(FAST_RING("analytic", ""), 4);
    double kv = wl_cp_ring_bytes(&sc.model, &sc.plan), cp = 4;
    unload();
    double want = 0;
    for (int k = 0; k < n; k++) {
        double send = (double)sim_time_from_s((bwd[k] ? 2 : 1) * kv / 100e9);
        want += (1 - 1 / r[k]) * count[k] * (cp - 1) * send;
    }
    ck_assert_double_gt(want, 1e6); /* a few microseconds */
    static const char *const modes[2][2] = {
        {FAST_RING("analytic", ""), FAST_RING("analytic", ", \"comm_contention\": false")},
        {FAST_RING("flow", ""), FAST_RING("flow", ", \"comm_contention\": false")}};
    for (int m = 0; m < 2; m++) {
        run_result on = run_text(modes[m][0]), off = run_text(modes[m][1]);
        ck_assert_double_eq(on.comm_exposed_by_kind_s[WL_COMM_CP], 0);
        ck_assert_double_eq(off.comm_exposed_by_kind_s[WL_COMM_CP], 0);
        ck_assert_double_eq(on.comm_inflight_by_kind_s[WL_COMM_CP],
                            off.comm_inflight_by_kind_s[WL_COMM_CP]);
        /* within a few picoseconds: each op's stretch is rounded on its own */
        ck_assert_double_lt(fabs(on.step_time_s - off.step_time_s - want * 1e-12), 5e-12);
        run_result_free(&on);
        run_result_free(&off);
    }
}
END_TEST

#define MODEL(extra)                                                                            \
    "\"model\": {\"kind\": \"transformer\", \"layers\": 2, \"hidden\": 64, \"heads\": 4,"         \
    " \"seq_len\": 96, \"vocab\": 100" extra "}"

START_TEST(bad_input)
{
    load_refused("{\"topology\": \"x\", " MODEL(", \"attention\": \"unfused\"") ", \"parallel\": {\"cp\": 2}}",
        2, "model.attention", "needs \"flash\"");
    load_refused("{\"topology\": \"x\", " MODEL("") ", \"parallel\": {\"cp\": 5}}", 5, "parallel.cp",
        "2 x cp must divide seq_len");
    load_refused("{\"topology\": \"x\", " MODEL("") ", \"parallel\": {\"cp\": 2, \"dp\": 2}}", 2,
        "parallel", "dp x tp x pp x cp");
    load_refused("{\"topology\": \"x\", " MODEL("") ", \"parallel\": {\"cp\": 4}}", 6, "parallel",
        "must divide the topology's 6 GPUs");
    load_refused("{\"topology\": \"x\", " MODEL("") ", \"parallel\": {\"cp\": 2, \"local_sgd\": 4}}", 4,
        "parallel.local_sgd", "not modelled with cp > 1");
}
END_TEST

/* A cp > 1 graph through both trace formats: the dtsim trace carries the ring
 * ("context_parallel") and each cost's ring sends ("ring") and reads back to the same graph;
 * the Chakra files read back (dtsim's reading) to the same graph, and read as a foreign trace
 * (dtsim's attributes ignored, as ASTRA-sim reads them) hold one send and one matching receive
 * per ring step and GPU, moving the step's CP bytes, 3 m L (cp - 1) kv per GPU. */
START_TEST(cp_traces)
{
    load(TWO_SWITCHES("1 GB/s", "flow"), 4);
    double kv = wl_cp_ring_bytes(&sc.model, &sc.plan);
    wl_graph *g = wl_graph_build(&sc);
    unload();
    trace_env env = {0};
    snprintf(env.name, sizeof env.name, "cp");
    char *t1 = dump_trace(g, &env);
    ck_assert_ptr_nonnull(strstr(t1, "\"context_parallel\": {\"cp\": 2, \"next\": [1, 0]}"));
    ck_assert_ptr_nonnull(strstr(t1, "\"ring\": {\"bytes\": "));
    dt_error e;
    dt_error_clear(&e);
    cJSON *j = cJSON_Parse(t1);
    js_ctx ctx = {"t.json", &e};
    wl_graph *g2 = NULL;
    trace_env env2;
    ck_assert_int_eq(trace_read(&ctx, j, &g2, &env2), DT_OK);
    cJSON_Delete(j);
    ck_assert_int_eq(g2->cp, 2);
    char *t2 = dump_trace(g2, &env2);
    ck_assert_str_eq(t1, t2);
    /* Chakra: 4 ranks written, read back */
    chakra_read_options o = {0};
    wl_graph *g3 = NULL;
    trace_env env3;
    int rc = chakra_roundtrip(g, &env, 4, &o, &g3, &env3, &e);
    ck_assert_msg(rc == DT_OK, "%s: %s", e.path, e.msg);
    char *t3 = dump_trace(g3, &env3);
    ck_assert_str_eq(t1, t3);
    /* foreign: per GPU 1 forward op of 2 layers, 1 backward: 2 + 2 ring steps (cp - 1 = 1) */
    o.ignore_dtsim = true;
    wl_graph *g4 = NULL;
    trace_env env4;
    rc = chakra_roundtrip(g, &env, 4, &o, &g4, &env4, &e);
    ck_assert_msg(rc == DT_OK, "%s: %s", e.path, e.msg);
    int sends = 0;
    double bytes = 0;
    for (uint32_t i = 0; i < g4->n_ops; i++)
        if (g4->ops[i].kind == WL_OP_SEND && !strcmp(g4->names[g4->ops[i].name], "ring_send")) {
            sends++;
            bytes += g4->ops[i].bytes;
        }
    ck_assert_int_eq(sends, 4 * (2 + 2));
    ck_assert_rel(bytes / 4, 3 * 1 * 2 * (2 - 1) * kv, 1e-15);
    /* it runs: every receive meets its send (an unmatched one would be refused, a cycle reported) */
    replay_config rcfg = {.n_gpus = 4};
    replay_result rr;
    ck_assert_int_eq(replay_run(g4, &rcfg, &rr, &e), DT_OK);
    replay_result_free(&rr);
    free(t1);
    free(t2);
    free(t3);
    wl_graph_destroy(g);
    wl_graph_destroy(g2);
    wl_graph_destroy(g3);
    wl_graph_destroy(g4);
    trace_env_free(&env2);
    trace_env_free(&env3);
    trace_env_free(&env4);
}
END_TEST

/* Trace input: the ring's keys are checked and located. */
static void trace_refused(const char *text, const char *path, const char *needle)
{
    dt_error e;
    dt_error_clear(&e);
    cJSON *j = NULL;
    ck_assert_int_eq(js_parse_text(text, strlen(text), "t.json", &j, &e), DT_OK);
    js_ctx ctx = {"t.json", &e};
    wl_graph *g = NULL;
    trace_env env;
    ck_assert_int_eq(trace_read(&ctx, j, &g, &env), DT_EINPUT);
    ck_assert_ptr_null(g);
    ck_assert_msg(!strcmp(e.path, path), "path %s, want %s", e.path, path);
    ck_assert_msg(strstr(e.msg, needle) != NULL, "message %s, want %s", e.msg, needle);
    ck_assert_str_eq(e.file, "t.json");
    cJSON_Delete(j);
}

#define TRACE(cp, cost)                                                                         \
    "{\"format\": \"dtsim-trace\", \"version\": 1, \"gpus\": 4, \"lanes\": [[0], [1], [2], [3]]" \
    cp ", \"costs\": [{\"duration\": \"1 ms\"" cost "}], \"ops\": [{\"lane\": 0, \"kind\": "   \
    "\"compute\", \"cost\": 0}]}"

START_TEST(trace_bad_input)
{
    trace_refused(TRACE("", ", \"ring\": {\"bytes\": \"1 MB\"}"), "costs[0].ring",
                  "need the trace's \"context_parallel\" ring");
    trace_refused(TRACE(", \"context_parallel\": {\"cp\": 3, \"next\": [1, 2, 0, 3]}", ""),
                  "context_parallel.cp", "a divisor of the trace's 4 lanes");
    trace_refused(TRACE(", \"context_parallel\": {\"cp\": 1, \"next\": [0]}", ""),
                  "context_parallel.cp", "");
    trace_refused(TRACE(", \"context_parallel\": {\"cp\": 2}", ""), "context_parallel.next",
                  "required");
    trace_refused(TRACE(", \"context_parallel\": {\"cp\": 2, \"next\": [1, 0]}", ""),
                  "context_parallel.next", "one entry per lane (4), found 2");
    trace_refused(TRACE(", \"context_parallel\": {\"cp\": 2, \"next\": [1, 0, 3, 3]}", ""),
                  "context_parallel.next[3]", "another lane");
    trace_refused(TRACE(", \"context_parallel\": {\"cp\": 2, \"next\": [1, 0, 0, 2]}", ""),
                  "context_parallel.next[2]", "already the next lane");
    trace_refused(TRACE(", \"context_parallel\": {\"cp\": 2, \"next\": [1, 2, 3, 0]}", ""),
                  "context_parallel.next[0]", "ring holds 4 lanes, expected cp = 2");
    trace_refused(TRACE(", \"context_parallel\": {\"cp\": 2, \"next\": [1, 0, 3, 2], \"x\": 1}", ""),
                  "context_parallel.x", "");
    trace_refused(TRACE(", \"context_parallel\": {\"cp\": 2, \"next\": [1, 0, 3, 2]}",
                        ", \"ring\": {\"bytes\": \"1 MB\", \"count\": -1}"),
                  "costs[0].ring.count", "");
    trace_refused(TRACE(", \"context_parallel\": {\"cp\": 2, \"next\": [1, 0, 3, 2]}",
                        ", \"ring\": {\"count\": 2}"),
                  "costs[0].ring.bytes", "");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cp");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, ring_bytes_and_exposed_time);
    tcase_add_test(tc, with_tp_pp_dp);
    tcase_add_test(tc, ring_flows_share_links);
    tcase_add_test(tc, ring_sends_slow_compute);
    tcase_add_test(tc, ring_flows_uncontended_closed_form);
    tcase_add_test(tc, bad_input);
    tcase_add_test(tc, cp_traces);
    tcase_add_test(tc, trace_bad_input);
    suite_add_tcase(s, tc);
    return dt_run_suite(s);
}
