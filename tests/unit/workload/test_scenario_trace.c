/* test_scenario_trace.c - scenario validation and trace files.
 * Pins down: bad scenarios fail with the JSON path of the offending key and a message saying
 * what was expected (unknown keys with a suggestion, wrong kinds, inconsistent batch sizes,
 * dp x tp x pp against the topology, stragglers naming missing GPUs); a trace written from a
 * run replays to the same step time and breakdown; a hand-written trace (one GPU per lane,
 * inline durations) runs with its closed-form time; bad traces name their paths; a cost's
 * attention head dim times it at that head dim's curve (absent: 128) and a bad one is refused;
 * options.ring_model: steps and fluid agree on an uncontended data-parallel step, auto picks
 * fluid for 64 ranks, a bad value names its path; two sends through the spines into one NIC
 * (each spread over its 4 ECMP lanes) share it as hand-computed, and a start 1 ns later moves
 * the step by 1 ns.
 * Leaves free: message wording beyond the key facts checked. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dtsim/replay.h"
#include "dtsim/run.h"
#include "dtsim/workload.h"
#include "testutil.h"
#define WL_TESTUTIL_NO_FIXTURE
#include "wl_testutil.h"

static int try_run_text(const char *text, run_result *r, dt_error *e)
{
    cJSON *j;
    dt_error_clear(e);
    int rc = js_parse_text(text, strlen(text), "s.json", &j, e);
    ck_assert_int_eq(rc, DT_OK);
    run_options opt = {0};
    rc = run_scenario(j, "s.json", ".", &opt, r, e);
    run_result_free(r);
    cJSON_Delete(j);
    return rc;
}

#define TOPO "\"topology\": {\"generator\": \"dgx\", \"nodes\": 1, \"gpus_per_node\": 8}"
#define SYN "\"model\": {\"kind\": \"synthetic\", \"layers\": 4, \"forward_time\": \"1 ms\", " \
            "\"backward_time\": \"2 ms\", \"params\": 1e6}"

static void bad(const char *text, const char *path, const char *needle)
{
    run_result r;
    dt_error e;
    int rc = try_run_text(text, &r, &e);
    ck_assert_msg(rc == DT_EINPUT, "accepted: %s", text);
    ck_assert_msg(!strcmp(e.path, path), "path '%s', expected '%s' (%s)", e.path, path, e.msg);
    ck_assert_msg(strstr(e.msg, needle) != NULL, "message '%s' lacks '%s'", e.msg, needle);
    ck_assert_str_eq(e.file, "s.json");
}

START_TEST(validation_paths)
{
    bad("{" TOPO ", " SYN ", \"paralel\": {}}", "paralel", "parallel");
    bad("{" TOPO ", " SYN ", \"parallel\": {\"tp\": 3}}", "parallel", "must divide");
    bad("{" TOPO ", " SYN ", \"parallel\": {\"zero\": 4}}", "parallel.zero", "4");
    bad("{" TOPO ", " SYN ", \"parallel\": {\"schedule\": \"zigzag\"}}", "parallel.schedule",
        "zigzag");
    bad("{" TOPO ", " SYN ", \"parallel\": {\"schedule\": \"interleaved\", \"pp\": 2}}",
        "parallel.virtual_stages", "required");
    bad("{" TOPO ", " SYN ", \"global_batch\": 12}", "global_batch", "multiple");
    bad("{" TOPO ", " SYN ", \"stragglers\": [{\"gpu\": 9, \"slowdown\": 2}]}",
        "stragglers[0].gpu", "0..7");
    bad("{" TOPO ", " SYN ", \"stragglers\": [{\"gpu\": 1, \"slowdwn\": 2}]}",
        "stragglers[0].slowdwn", "slowdown");
    bad("{" TOPO ", \"model\": {\"kind\": \"synthetic\", \"layers\": 4, \"forward_time\": "
        "\"1 parsec\", \"backward_time\": \"2 ms\", \"params\": 0}}",
        "model.forward_time", "parsec");
    bad("{" TOPO ", \"model\": {\"kind\": \"transformer\", \"layers\": 4, \"hidden\": 100, "
        "\"heads\": 3, \"seq_len\": 8, \"vocab\": 10}}",
        "model.heads", "divide");
    bad("{" TOPO ", \"model\": {\"kind\": \"synthetic\", \"layers\": 4, \"hidden\": 4, "
        "\"forward_time\": 1, \"backward_time\": 1, \"params\": 0}}",
        "model.hidden", "synthetic");
    bad("{" TOPO ", " SYN ", \"parallel\": {\"placement\": \"tp,tp,dp\"}}", "parallel.placement",
        "exactly once");
    bad("{" TOPO ", " SYN ", \"degraded_links\": [{\"link\": 100000, \"bandwidth_factor\": 0.5}]}",
        "degraded_links[0].link", "directed links");
    bad("{" TOPO ", " SYN ", \"options\": {\"network\": \"fluid\"}}", "options.network", "fluid");
    bad("{" SYN "}", "topology", "required");
}
END_TEST

START_TEST(placement_order)
{
    wl_plan p = {.dp = 2, .tp = 4, .pp = 2,
                 .placement = {WL_AXIS_DP, WL_AXIS_PP, WL_AXIS_TP}};
    ck_assert_int_eq(wl_gpu_of(&p, 1, 0, 3), 1 * 8 + 0 * 4 + 3);
    p.placement[0] = WL_AXIS_TP;
    p.placement[2] = WL_AXIS_DP; /* "tp,pp,dp": DP innermost */
    ck_assert_int_eq(wl_gpu_of(&p, 1, 0, 3), 3 * 4 + 0 * 2 + 1);
}
END_TEST

static char *tmpname(const char *tag)
{
    static char buf[2][256];
    static int k;
    char *b = buf[k++ & 1];
    snprintf(b, 256, "/tmp/dtsim_test_%s_%ld.json", tag, (long)getpid());
    return b;
}

START_TEST(trace_roundtrip)
{
    const char *text =
        "{\"topology\": {\"generator\": \"dgx\", \"nodes\": 2, \"gpus_per_node\": 8},"
        " \"model\": {\"kind\": \"transformer\", \"layers\": 8, \"hidden\": 1024, \"heads\": 16,"
        "  \"seq_len\": 512, \"vocab\": 32000},"
        " \"parallel\": {\"tp\": 2, \"pp\": 2, \"schedule\": \"1f1b\", \"microbatches\": 4,"
        "  \"zero\": 1, \"bucket_size\": \"8 MB\"},"
        " \"stragglers\": [{\"gpu\": 5, \"slowdown\": 1.3}],"
        " \"jitter\": {\"distribution\": \"lognormal\", \"sigma\": 0.05}, \"seed\": 7}";
    const char *topo_text = "{\"generator\": \"dgx\", \"nodes\": 2, \"gpus_per_node\": 8}";
    char *trace = tmpname("trace"), *topof = tmpname("topo");
    FILE *f = fopen(topof, "w");
    fputs(topo_text, f);
    fclose(f);
    cJSON *j;
    dt_error e;
    dt_error_clear(&e);
    ck_assert_int_eq(js_parse_text(text, strlen(text), "s.json", &j, &e), DT_OK);
    run_options opt = {.write_trace = trace};
    run_result a, b;
    int rc = run_scenario(j, "s.json", ".", &opt, &a, &e);
    ck_assert_msg(rc == DT_OK, "%s: %s", e.path, e.msg);
    run_options ropt = {0};
    rc = run_trace_file(trace, topof, &ropt, &b, &e);
    ck_assert_msg(rc == DT_OK, "%s: %s: %s", e.file, e.path, e.msg);
    ck_assert(a.step_time_s > 0);
    ck_assert(a.breakdown_s.straggler_wait > 0);
    ck_assert(a.step_time_s == b.step_time_s);
    ck_assert(a.breakdown_s.compute == b.breakdown_s.compute);
    ck_assert(a.breakdown_s.comm_exposed == b.breakdown_s.comm_exposed);
    ck_assert(a.breakdown_s.straggler_wait == b.breakdown_s.straggler_wait);
    ck_assert(a.throughput.tflops_per_gpu == b.throughput.tflops_per_gpu);
    ck_assert(a.memory.peak == b.memory.peak);
    ck_assert_int_eq(a.events, b.events);
    /* a different seed changes the jitter, hence the step */
    ropt.have_seed = true;
    ropt.seed = 8;
    ck_assert_int_eq(run_trace_file(trace, topof, &ropt, &b, &e), DT_OK);
    ck_assert(a.step_time_s != b.step_time_s);
    cJSON_Delete(j);
    remove(trace);
    remove(topof);
}
END_TEST

START_TEST(hand_written_trace)
{
    /* GPU 0 computes 2 ms, sends 1 GB to GPU 1 over the DGX's NVLink, GPU 1 computes 1 ms;
     * meanwhile both join an all-reduce that waits for GPU 1's first op (3 ms). */
    const char *text =
        "{\"format\": \"dtsim-trace\", \"version\": 1, \"gpus\": 2,"
        " \"environment\": {\"network\": \"analytic\"},"
        " \"collectives\": [{\"op\": \"allreduce\", \"bytes\": 0}],"
        " \"ops\": ["
        "  {\"gpu\": 0, \"kind\": \"compute\", \"duration\": \"2 ms\"},"
        "  {\"gpu\": 0, \"kind\": \"send\", \"to\": 1, \"bytes\": 0, \"deps\": [0]},"
        "  {\"gpu\": 1, \"kind\": \"compute\", \"duration\": \"3 ms\"},"
        "  {\"gpu\": 1, \"kind\": \"compute\", \"duration\": \"1 ms\", \"deps\": [1]},"
        "  {\"gpu\": 0, \"kind\": \"collective\", \"collective\": 0},"
        "  {\"gpu\": 1, \"kind\": \"collective\", \"collective\": 0, \"deps\": [2]}"
        " ]}";
    const char *topo_json = "{\"generator\": \"dgx\", \"nodes\": 1, \"gpus_per_node\": 2,"
                       " \"nvlink_latency\": \"1 ns\"}";
    run_result r = run_trace_text(text, topo_json);
    /* GPU 1: 3 ms compute, then (stream order) the 1 ms op whose send arrived at 2 ms + 1 ns:
     * 4 ms. The all-reduce starts when GPU 1 reaches it at 3 ms (GPU 0 waited 3 ms). */
    ck_assert_rel(r.step_time_s, 4e-3, 1e-12);
    run_result_free(&r);
    /* a dep on a missing op names its path */
    dt_error e;
    ck_assert_int_eq(try_trace_text("{\"format\": \"dtsim-trace\", \"version\": 1, \"gpus\": 1,"
                                    " \"ops\": [{\"gpu\": 0, \"kind\": \"compute\", \"duration\": 1,"
                                    " \"deps\": [4]}]}",
                                    topo_json, &r, &e),
                     DT_EINPUT);
    ck_assert_str_eq(e.path, "ops[0].deps[0]");
}
END_TEST

/* A cost's flash attention carries the head dim (the kernel's tiles: docs/workloads.md,
 * "Attention kernels"): 1 TFLOP of causal FA2 forward at 2,048 on an H100 takes
 * 1e12 / (989.5e12 x 262/989) at head dim 64 and 1e12 / (989.5e12 x 298/989) without one (a
 * trace written before costs carried it: 128); a head dim that is no whole number from 1 to
 * 100,000 is refused with its path. Likewise its dropout (a boolean) and its call's rows (a
 * number from 1), each changing the time by its factor. */
static const char *attn_trace(char *buf, size_t n, const char *head_dim)
{
    snprintf(buf, n,
             "{\"format\": \"dtsim-trace\", \"version\": 1, \"gpus\": 1,"
             " \"costs\": [{\"duration\": 0, \"flops\": {\"attention\": 1e12},"
             " \"attention\": {\"seq\": 2048, \"kernel\": \"fa2\", \"causal\": true%s}}],"
             " \"ops\": [{\"gpu\": 0, \"kind\": \"compute\", \"cost\": 0}]}",
             head_dim);
    return buf;
}

START_TEST(trace_attention_head_dim)
{
    const char *h100 = "{\"generator\": \"dgx\", \"nodes\": 1, \"gpus_per_node\": 1,"
                       " \"gpu\": \"H100-SXM\"}";
    char buf[512];
    run_result r = run_trace_text(attn_trace(buf, sizeof buf, ", \"head_dim\": 64"), h100);
    ck_assert_double_lt(fabs(r.step_time_s - 1e12 / (989.5e12 * 262 / 989)), 2e-12);
    run_result_free(&r);
    r = run_trace_text(attn_trace(buf, sizeof buf, ""), h100);
    ck_assert_double_lt(fabs(r.step_time_s - 1e12 / (989.5e12 * 298 / 989)), 2e-12);
    run_result_free(&r);
    const char *badv[] = {", \"head_dim\": 64.5", ", \"head_dim\": 0", ", \"head_dim\": \"64\""};
    for (int i = 0; i < 3; i++) {
        dt_error e;
        ck_assert_int_eq(try_trace_text(attn_trace(buf, sizeof buf, badv[i]), h100, &r, &e),
                         DT_EINPUT);
        ck_assert_str_eq(e.path, "costs[0].attention.head_dim");
    }
    /* dropout: FA2's measured forward ratio 1.21; rows 8 at 2,048 (16 tiles, W = 8 x 136 / 132
     * against the benchmark's 128 rows: W = 128 x 136 / 132, each over W + 16) */
    r = run_trace_text(attn_trace(buf, sizeof buf, ", \"dropout\": true"), h100);
    ck_assert_double_lt(fabs(r.step_time_s - 1.21e12 / (989.5e12 * 298 / 989)), 2e-12);
    run_result_free(&r);
    double w0 = 8 * 136 / 132.0, w1 = 128 * 136 / 132.0;
    double f = w0 / (w0 + 16) / (w1 / (w1 + 16));
    r = run_trace_text(attn_trace(buf, sizeof buf, ", \"rows\": 8"), h100);
    ck_assert_double_lt(fabs(r.step_time_s - 1e12 / (989.5e12 * 298 / 989 * f)), 2e-12);
    run_result_free(&r);
    const char *badr[] = {", \"dropout\": 1", ", \"rows\": 0", ", \"rows\": \"8\""};
    const char *badp[] = {"costs[0].attention.dropout", "costs[0].attention.rows",
                          "costs[0].attention.rows"};
    for (int i = 0; i < 3; i++) {
        dt_error e;
        ck_assert_int_eq(try_trace_text(attn_trace(buf, sizeof buf, badr[i]), h100, &r, &e),
                         DT_EINPUT);
        ck_assert_str_eq(e.path, badp[i]);
    }
}
END_TEST

START_TEST(timeline_spans)
{
    const char *text =
        "{\"topology\": {\"generator\": \"dgx\", \"nodes\": 1, \"gpus_per_node\": 8},"
        " \"model\": {\"kind\": \"transformer\", \"layers\": 4, \"hidden\": 1024, \"heads\": 16,"
        "  \"seq_len\": 512, \"vocab\": 32000},"
        " \"parallel\": {\"tp\": 2, \"pp\": 2, \"microbatches\": 4}}";
    cJSON *j;
    dt_error e;
    dt_error_clear(&e);
    ck_assert_int_eq(js_parse_text(text, strlen(text), "s.json", &j, &e), DT_OK);
    run_options opt = {.record_timeline = true};
    run_result r;
    int rc = run_scenario(j, "s.json", ".", &opt, &r, &e);
    ck_assert_msg(rc == DT_OK, "%s: %s", e.path, e.msg);
    ck_assert_ptr_nonnull(r.timeline);
    const run_timeline *tl = r.timeline;
    ck_assert_int_eq(tl->n_gpus, 8);
    ck_assert(tl->n_spans > 0 && tl->n_link_spans > 0);
    /* The critical GPU's compute spans add up to its compute time (no stragglers: its own
     * time is its lane's), and every span lies inside the step. */
    sim_time_t T = sim_time_from_s(r.step_time_s), comp = 0;
    int tp_spans = 0;
    for (size_t i = 0; i < tl->n_spans; i++) {
        const run_span *sp = &tl->spans[i];
        ck_assert(sp->start >= 0 && sp->end <= T && sp->end > sp->start);
        ck_assert((size_t)sp->name < tl->n_names);
        if (sp->gpu == r.critical_gpu && sp->stream == RUN_STREAM_COMPUTE) comp += sp->end - sp->start;
        if (sp->stream == RUN_STREAM_TP) tp_spans++;
    }
    ck_assert_int_eq(comp, sim_time_from_s(r.breakdown_s.compute));
    ck_assert(tp_spans > 0);
    for (size_t i = 0; i < tl->n_link_spans; i++)
        ck_assert((size_t)tl->link_spans[i].link < tl->n_links);
    run_result_free(&r);
    ck_assert_ptr_null(r.timeline);
    cJSON_Delete(j);
}
END_TEST

static double step_of(const char *text)
{
    run_result r;
    dt_error e;
    cJSON *j;
    dt_error_clear(&e);
    ck_assert_int_eq(js_parse_text(text, strlen(text), "s.json", &j, &e), DT_OK);
    run_options opt = {0};
    int rc = run_scenario(j, "s.json", ".", &opt, &r, &e);
    ck_assert_msg(rc == DT_OK, "%s: %s", e.path, e.msg);
    cJSON_Delete(j);
    return r.step_time_s;
}

START_TEST(degraded_link_closed_form)
{
    /* 2 replicas on 2 DGX boxes (one GPU each, 50 GB/s NICs), one 200 MB all-reduce after the
     * backward: 2e8 / 50e9 = 4 ms; halving one NIC uplink makes it 8 ms. */
#define DEG(extra)                                                                          \
    "{\"topology\": {\"generator\": \"dgx\", \"nodes\": 2, \"gpus_per_node\": 1},"          \
    " \"model\": {\"kind\": \"synthetic\", \"layers\": 2, \"forward_time\": \"1 ms\","      \
    "  \"backward_time\": \"2 ms\", \"params\": 1e8},"                                       \
    " \"parallel\": {\"bucket_size\": \"1 GB\"}, \"options\": {\"network\": \"analytic\"}" extra "}"
    double base = step_of(DEG(""));
    double slow = step_of(DEG(", \"degraded_links\": [{\"link\": {\"src\": \"node0.nic0\","
                              " \"dst\": \"rail0.leaf0\"}, \"bandwidth_factor\": 0.5}]"));
    ck_assert_rel(slow - base, 4e-3, 1e-9);
    /* the same seed gives the same jittered step; another seed another */
    double j1 = step_of(DEG(", \"jitter\": {\"sigma\": 0.1}, \"seed\": 3"));
    double j2 = step_of(DEG(", \"jitter\": {\"sigma\": 0.1}, \"seed\": 3"));
    double j3 = step_of(DEG(", \"jitter\": {\"sigma\": 0.1}, \"seed\": 4"));
    ck_assert(j1 == j2);
    ck_assert(j1 != j3);
#undef DEG
}
END_TEST

START_TEST(flow_matches_analytic_without_contention)
{
    /* A pipeline over 4 boxes: one send at a time on each path, so flows never share a link and
     * the network model must give the closed form (up to picosecond rounding per send). */
#define PIPE(net)                                                                           \
    "{\"topology\": {\"generator\": \"dgx\", \"nodes\": 4, \"gpus_per_node\": 1},"          \
    " \"model\": {\"kind\": \"synthetic\", \"layers\": 4, \"forward_time\": \"1 ms\","      \
    "  \"backward_time\": \"2 ms\", \"params\": 0, \"activation_bytes\": \"20 MB\"},"          \
    " \"parallel\": {\"pp\": 4, \"microbatches\": 4, \"schedule\": \"gpipe\"},"            \
    " \"options\": {\"network\": \"" net "\"}}"
    double flow = step_of(PIPE("flow")), analytic = step_of(PIPE("analytic"));
    ck_assert(analytic > 21e-3 + 6 * 20e6 / 50e9); /* 7 x 3 ms plus 6 sends on the critical path */
    ck_assert_rel(flow, analytic, 1e-9);
#undef PIPE
}
END_TEST

static run_result run_ok(const char *text)
{
    cJSON *j;
    dt_error e;
    dt_error_clear(&e);
    ck_assert_int_eq(js_parse_text(text, strlen(text), "s.json", &j, &e), DT_OK);
    run_options opt = {0};
    run_result r;
    int rc = run_scenario(j, "s.json", ".", &opt, &r, &e);
    ck_assert_msg(rc == DT_OK, "%s: %s", e.path, e.msg);
    cJSON_Delete(j);
    return r;
}

/* One step of the two-send trace below: GPU 0 sends S to GPU 16 at 0 and then computes 5 ms;
 * GPU 4 computes d, then sends S to GPU 16 (with_b), or nothing. */
static double two_sends(double d_ms, int with_b)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"format\": \"dtsim-trace\", \"version\": 1, \"gpus\": 17, \"ops\": ["
             " {\"gpu\": 0, \"kind\": \"send\", \"to\": 16, \"bytes\": \"50 MB\"},"
             " {\"gpu\": 0, \"kind\": \"compute\", \"duration\": \"5 ms\", \"deps\": [0]},"
             " {\"gpu\": 4, \"kind\": \"compute\", \"duration\": \"%.9f ms\"},"
             " {\"gpu\": 4, \"kind\": \"send\", \"to\": 16, \"bytes\": \"%s\", \"deps\": [2]}"
             "]}",
             d_ms, with_b ? "50 MB" : "0 B");
    run_result r = run_trace_text(text, "{\"generator\": \"dgx\", \"nodes\": 12,"
                                        " \"gpus_per_node\": 4, \"radix\": 8}");
    double t = r.step_time_s;
    run_result_free(&r);
    return t;
}

START_TEST(send_across_spines_spread)
{
    /* 12 DGX boxes of 4 GPUs, radix 8 (rail leaves of 4 boxes, 4 spines), 400 Gb/s NICs
     * (50 GB/s, line rate): GPUs 0 and 4 (boxes 0 and 1, rail 0) each send S = 50 MB to GPU 16
     * (box 4, behind another leaf: through the spines, so each send is spread over its pair's
     * 4 ECMP lanes at once, run.c send_fn). Both share GPU 16's NIC: the first runs alone at
     * B until the second starts at d, then each at B/2, so its bytes are done at 2S/B - d and
     * GPU 0's 5 ms compute ends at lat + 2S/B - d + 5 ms: the step (GPU 4's send ends at 2S/B
     * + lat, earlier). Alone it is lat + S/B + 5 ms. So the step with the second send is the
     * step alone + S/B - d whatever the route latency, and a start 1 ns later ends the step
     * 1 ns earlier: a tiny change of a transfer's start moves the ends by as much. */
    double B = 50e9, S = 50e6;
    double alone = two_sends(0.3, 0);
    double at = two_sends(0.3, 1), later = two_sends(0.300001, 1);
    ck_assert_double_eq_tol(at, alone + S / B - 0.3e-3, 2e-12);
    ck_assert_double_eq_tol(later - at, -1e-9, 2e-12);
}
END_TEST

START_TEST(ring_model_option)
{
    /* Data parallelism over 64 boxes: the gradient all-reduces are rings of 64, which `auto`
     * runs as fluid rings (a few events per collective) and `steps` as 2 x 63 x 64 transfers;
     * with nothing else on the network both give the same step within 0.5%. */
#define DP64(model)                                                                         \
    "{\"topology\": {\"generator\": \"dgx\", \"nodes\": 64, \"gpus_per_node\": 1},"        \
    " \"model\": {\"kind\": \"synthetic\", \"layers\": 4, \"forward_time\": \"1 ms\","      \
    "  \"backward_time\": \"2 ms\", \"params\": 1e8},"                                       \
    " \"parallel\": {\"dp\": 64, \"bucket_size\": \"100 MB\"}, \"global_batch\": 64"      \
    model "}"
    run_result st = run_ok(DP64(", \"options\": {\"ring_model\": \"steps\"}"));
    run_result fl = run_ok(DP64(", \"options\": {\"ring_model\": \"fluid\"}"));
    run_result au = run_ok(DP64(""));
    ck_assert(st.breakdown_s.comm_exposed > 1e-3); /* the all-reduce is exposed: it matters */
    ck_assert_rel(fl.step_time_s, st.step_time_s, 0.005);
    ck_assert(au.step_time_s == fl.step_time_s);
    ck_assert_int_eq(au.events, fl.events);
    ck_assert_uint_gt(st.events, 10 * fl.events);
    /* A trace keeps the ring model: replaying one written with "steps" runs steps again. */
    char *trace = tmpname("rmtrace"), *topof = tmpname("rmtopo");
    FILE *f = fopen(topof, "w");
    fputs("{\"generator\": \"dgx\", \"nodes\": 64, \"gpus_per_node\": 1}", f);
    fclose(f);
    const char *text = DP64(", \"options\": {\"ring_model\": \"steps\"}");
    cJSON *j;
    dt_error e;
    dt_error_clear(&e);
    ck_assert_int_eq(js_parse_text(text, strlen(text), "s.json", &j, &e), DT_OK);
    run_options opt = {.write_trace = trace};
    run_result a, b;
    ck_assert_int_eq(run_scenario(j, "s.json", ".", &opt, &a, &e), DT_OK);
    run_options ropt = {0};
    int rc = run_trace_file(trace, topof, &ropt, &b, &e);
    ck_assert_msg(rc == DT_OK, "%s: %s: %s", e.file, e.path, e.msg);
    ck_assert_int_eq(b.events, st.events);
    ck_assert(b.step_time_s == st.step_time_s);
    run_result_free(&a);
    run_result_free(&b);
    cJSON_Delete(j);
    remove(trace);
    remove(topof);
    run_result_free(&st);
    run_result_free(&fl);
    run_result_free(&au);
    bad(DP64(", \"options\": {\"ring_model\": \"fluidd\"}"), "options.ring_model", "fluidd");
#undef DP64
}
END_TEST

Suite *suite(void)
{
    Suite *s = suite_create("scenario_trace");
    TCase *t = tcase_create("core");
    tcase_add_test(t, validation_paths);
    tcase_add_test(t, placement_order);
    tcase_add_test(t, trace_roundtrip);
    tcase_add_test(t, hand_written_trace);
    tcase_add_test(t, trace_attention_head_dim);
    tcase_add_test(t, timeline_spans);
    tcase_add_test(t, degraded_link_closed_form);
    tcase_add_test(t, flow_matches_analytic_without_contention);
    tcase_add_test(t, ring_model_option);
    tcase_add_test(t, send_across_spines_spread);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return dt_run_suite(suite()); }
