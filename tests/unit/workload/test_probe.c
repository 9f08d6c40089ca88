/* test_probe.c - run_probe_scenario: the planner's memory and step-time lower bound.
 * Pins down: the bound never exceeds the simulated step (flow mode) over a grid of plans on 8
 * and 16 H100s (tp, pp, GPipe-free schedules 1F1B and interleaved v 2, micro batch 1 and 2,
 * ZeRO 0/1/3, checkpointing none/selective/full, sequence parallelism, Megatron's overlapped
 * TP, a straggler, an uneven split, one DP member per host, analytic mode, a relaying ring); on
 * one GPU without wave quantisation ("sms": 0: the GEMM shape model then is the flat roofline
 * the bound uses), where nothing but compute happens, it equals the step to a nanosecond; the
 * memory equals run_memory's; the cache gives the same answers as no cache; a bad plan is the scenario
 * loader's error; jitter gives no bound (0).
 * Leaves free: how tight the bound is (docs/sweeps.md quotes it for GPT-3). */
#include <stdio.h>
#include <string.h>

#include "dtsim/json.h"
#include "dtsim/run.h"
#include "testutil.h"

static cJSON *parse(const char *text)
{
    cJSON *j = NULL;
    dt_error e = {0};
    ck_assert_int_eq(js_parse_text(text, strlen(text), "p.json", &j, &e), DT_OK);
    return j;
}

/* A 12-layer GPT on `nodes` DGX H100 boxes with the given "parallel" object and extras. */
static cJSON *scenario(int nodes, const char *parallel, const char *extra)
{
    char text[2048], topology[256];
    if (nodes > 0)
        snprintf(topology, sizeof topology, "{\"generator\": \"dgx\", \"nodes\": %d, \"gpus_per_node\": 8,"
                 " \"gpu\": \"H100-SXM\"}", nodes);
    else /* a ring of 8 GPUs, which forward for each other */
        snprintf(topology, sizeof topology, "{\"generator\": \"ring\", \"gpus\": 8, \"gpu\": \"H100-SXM\"}");
    snprintf(text, sizeof text,
             "{\"topology\": %s,"
             " \"model\": {\"kind\": \"transformer\", \"layers\": 12, \"hidden\": 1024,"
             " \"heads\": 16, \"seq_len\": 1024, \"vocab\": 50257},"
             " \"parallel\": %s, \"global_batch\": 32%s%s}",
             topology, parallel, extra[0] ? ", " : "", extra);
    return parse(text);
}

/* Returns the bound over the step (0 < ratio <= 1). */
static double check_bound_json(cJSON *j, const char *parallel, const char *extra,
                               run_probe_cache *cache, double tokens)
{
    dt_error e = {0};
    run_probe pr;
    ck_assert_msg(run_probe_scenario(j, "p.json", ".", cache, &pr, &e) == DT_OK, "%s: %s: %s",
                  parallel, e.path, e.msg);
    run_options o = {0};
    run_result r;
    ck_assert_msg(run_scenario(j, "p.json", ".", &o, &r, &e) == DT_OK, "%s: %s", parallel, e.msg);
    double T = r.step_time_s, lb = pr.step_lower_bound_s;
    ck_assert_msg(lb > 0 && lb <= T, "%s %s: bound %.9g s above the step %.9g s", parallel, extra,
                  lb, T);
    ck_assert(pr.memory.peak == r.memory.peak && pr.fits == r.fits);
    ck_assert_rel(pr.cost_per_hour_total * T / 3600, r.cost_per_step_usd, 1e-12);
    ck_assert_rel(pr.tokens_per_step, tokens, 0);
    run_result_free(&r);
    return lb / T;
}

static double check_bound(int nodes, const char *parallel, const char *extra, run_probe_cache *cache)
{
    cJSON *j = scenario(nodes, parallel, extra);
    double x = check_bound_json(j, parallel, extra, cache, 32.0 * 1024);
    cJSON_Delete(j);
    return x;
}

/* A small Mixtral-like MoE (8 experts, top 2, Zipf-skewed router) or a long sequence for CP. */
static double check_moe_cp_on(int nodes, const char *topo_extra, const char *parallel, bool moe)
{
    char text[2048];
    snprintf(text, sizeof text,
             "{\"topology\": {\"generator\": \"dgx\", \"nodes\": %d, \"gpus_per_node\": 8,"
             " \"gpu\": \"H100-SXM\"%s},"
             " \"model\": {\"kind\": \"transformer\", \"layers\": 4, \"hidden\": 1024,"
             " \"heads\": 16, \"kv_heads\": 4, \"ffn\": 3584, \"mlp\": \"swiglu\","
             " \"seq_len\": %d, \"vocab\": 32000, \"tied_embeddings\": false%s},"
             " \"parallel\": %s, \"global_batch\": 16, \"framework\": \"megatron\"}",
             nodes, topo_extra, moe ? 4096 : 65536,
             moe ? ", \"experts\": 8, \"top_k\": 2, \"expert_ffn\": 3584, \"router_zipf\": 1.0,"
                   " \"capacity_factor\": 0"
                 : "",
             parallel);
    cJSON *j = parse(text);
    double x = check_bound_json(j, parallel, "", NULL, 16.0 * (moe ? 4096 : 65536));
    cJSON_Delete(j);
    return x;
}

static double check_moe_cp(int nodes, const char *parallel, bool moe)
{
    return check_moe_cp_on(nodes, "", parallel, moe);
}

START_TEST(bound_below_the_step)
{
    static const char *const plans[] = {
        "{\"tp\": 1, \"pp\": 1}",
        "{\"tp\": 2, \"pp\": 1, \"zero\": 1}",
        "{\"tp\": 8, \"pp\": 1, \"sequence_parallel\": true}",
        "{\"tp\": 1, \"pp\": 1, \"zero\": 3, \"micro_batch_size\": 2}",
        "{\"tp\": 2, \"pp\": 2, \"schedule\": \"1f1b\"}",
        "{\"tp\": 2, \"pp\": 2, \"schedule\": \"interleaved\", \"virtual_stages\": 2}",
        "{\"tp\": 1, \"pp\": 4, \"schedule\": \"interleaved\", \"virtual_stages\": 3,"
        " \"micro_batch_size\": 2}",
        "{\"tp\": 4, \"pp\": 2, \"activation_checkpointing\": \"full\", \"zero\": 1}",
        "{\"tp\": 2, \"pp\": 4, \"activation_checkpointing\": \"selective\","
        " \"sequence_parallel\": true}",
        "{\"tp\": 1, \"pp\": 2, \"stage_layers\": [4, 8]}",
        "{\"tp\": 1, \"pp\": 8, \"micro_batch_size\": 4}",
        /* one DP member per host (2 nodes): the bound counts only the members' NICs */
        "{\"tp\": 8, \"pp\": 1, \"zero\": 1}",
        "{\"tp\": 4, \"pp\": 2, \"zero\": 1, \"placement\": \"pp,dp,tp\"}",
        "{\"tp\": 8, \"pp\": 1}",
    };
    run_probe_cache *cache = run_probe_cache_create();
    for (size_t i = 0; i < sizeof plans / sizeof plans[0]; i++) {
        check_bound(1, plans[i], "", cache);
        check_bound(2, plans[i], "", NULL);
    }
    check_bound(1, "{\"tp\": 4, \"pp\": 2}", "\"framework\": {\"preset\": \"megatron\","
                " \"tp_comm_overlap\": true}", cache);
    check_bound(2, "{\"tp\": 2, \"pp\": 4}", "\"stragglers\": [{\"gpu\": 5, \"slowdown\": 1.5}]",
                cache);
    check_bound(1, "{\"tp\": 2, \"pp\": 2}", "\"precision\": \"fp8\"", cache);
    check_bound(2, "{\"tp\": 8, \"pp\": 1, \"zero\": 1}", "\"options\": {\"network\": \"analytic\"}",
                cache);
    check_bound(2, "{\"tp\": 1, \"pp\": 1, \"zero\": 2}", "\"options\": {\"network\": \"analytic\"}",
                cache);
    /* GPUs that relay (a ring): the host cut */
    check_bound(0, "{\"tp\": 2, \"pp\": 1, \"zero\": 1}", "", cache);
    /* the DP stream's serial work: ZeRO-2 reduce-scatters every microbatch, ZeRO-3 also gathers
     * each layer before each of its ops; without overlap_dp every bucket after the backward */
    check_bound(2, "{\"tp\": 1, \"pp\": 1, \"zero\": 2, \"overlap_dp\": true}", "", cache);
    check_bound(2, "{\"tp\": 2, \"pp\": 1, \"zero\": 3, \"overlap_dp\": true}", "", cache);
    check_bound(2, "{\"tp\": 1, \"pp\": 2, \"zero\": 1, \"overlap_dp\": false}", "", cache);
    check_bound(2, "{\"tp\": 1, \"pp\": 1, \"zero\": 2, \"overlap_dp\": false}", "", cache);
    check_bound(2, "{\"tp\": 1, \"pp\": 1, \"zero\": 3}",
                "\"options\": {\"network\": \"analytic\"}", cache);
    run_probe_cache_destroy(cache);
}
END_TEST

/* Where the DP stream is the work: ZeRO-3, dp 8 on one switch of 10 GB/s links (each GPU its
 * own cut, and the ring all-gather brings each GPU the (n - 1)/n of a layer the cut bound
 * charges). The DP stream's 2 m L = 48 layer gathers, m = 2 root gathers (the embedding and
 * the final norm, with each microbatch's first forward gather) and m = 2 reduce-scatters bound
 * the step at 0.134 s of its 0.196 s (69 %); the bound without it (compute chain, last bucket) was
 * 0.0099 s; the same plan's ZeRO-0 bound is 0.043 s (the unsharded optimizer step). */
START_TEST(zero3_bound_follows_the_dp_stream)
{
    const char *tmpl = "{\"topology\": {\"generator\": \"switch\", \"gpus\": 8, \"bandwidth\": \"10 GB/s\"},"
                       " \"model\": {\"kind\": \"transformer\", \"layers\": 12, \"hidden\": 1024,"
                       " \"heads\": 16, \"seq_len\": 1024, \"vocab\": 50257},"
                       " \"parallel\": {\"tp\": 1, \"pp\": 1, \"zero\": %d}, \"global_batch\": 16}";
    char text[1024];
    double lb[2];
    for (int i = 0; i < 2; i++) {
        snprintf(text, sizeof text, tmpl, i ? 3 : 0);
        cJSON *j = parse(text);
        double r = check_bound_json(j, text, "", NULL, 16.0 * 1024);
        dt_error e = {0};
        run_probe pr;
        ck_assert_int_eq(run_probe_scenario(j, "p.json", ".", NULL, &pr, &e), DT_OK);
        lb[i] = pr.step_lower_bound_s;
        if (i) ck_assert_msg(r > 0.6, "ZeRO-3 bound only %.3f of the step", r);
        cJSON_Delete(j);
    }
    ck_assert_msg(lb[1] > 2.5 * lb[0], "ZeRO-3 bound %.4g s, ZeRO-0 %.4g s", lb[1], lb[0]);
}
END_TEST

/* run_options.deadline_s: a step longer than the deadline stops there (stopped_at_deadline, the
 * step reported as the deadline, fewer events); one at or under it runs to the very same end;
 * backup workers (whose step is not one replay's end) ignore it. */
START_TEST(deadline_stops_the_step)
{
    cJSON *j = scenario(2, "{\"tp\": 2, \"pp\": 4, \"zero\": 1}", "");
    dt_error e = {0};
    run_options o = {0};
    run_result full, cut, over, same;
    ck_assert_int_eq(run_scenario(j, "p.json", ".", &o, &full, &e), DT_OK);
    ck_assert(!full.stopped_at_deadline);
    double T = full.step_time_s;
    o.deadline_s = 0.5 * T;
    ck_assert_int_eq(run_scenario(j, "p.json", ".", &o, &cut, &e), DT_OK);
    ck_assert(cut.stopped_at_deadline);
    ck_assert_rel(cut.step_time_s, 0.5 * T, 1e-9);
    ck_assert(cut.events < full.events);
    o.deadline_s = T * (1 + 1e-9);
    ck_assert_int_eq(run_scenario(j, "p.json", ".", &o, &over, &e), DT_OK);
    ck_assert(!over.stopped_at_deadline && over.step_time_s == T && over.events == full.events);
    /* exactly the step: the last op ends at the deadline, which counts as within it */
    o.deadline_s = T;
    ck_assert_int_eq(run_scenario(j, "p.json", ".", &o, &same, &e), DT_OK);
    ck_assert(!same.stopped_at_deadline && same.step_time_s == T);
    run_result_free(&full);
    run_result_free(&cut);
    run_result_free(&over);
    run_result_free(&same);
    cJSON_Delete(j);
    j = scenario(2, "{\"tp\": 1, \"pp\": 1, \"backup_workers\": 1}", "");
    o.deadline_s = 0;
    ck_assert_int_eq(run_scenario(j, "p.json", ".", &o, &full, &e), DT_OK);
    o.deadline_s = 0.5 * full.step_time_s;
    ck_assert_int_eq(run_scenario(j, "p.json", ".", &o, &cut, &e), DT_OK);
    ck_assert(!cut.stopped_at_deadline && cut.step_time_s == full.step_time_s);
    run_result_free(&full);
    run_result_free(&cut);
    cJSON_Delete(j);
}
END_TEST

/* MoE (ep 1, 2, 4, 8; with pp and tp) and context parallelism (cp 2, 4, 8) get a bound from
 * the op graph (its longest path): positive, never above the step, and close to it. The
 * thresholds sit above what each part of the bound added (the figures in the comments: the
 * bound's fraction of the step without that part), so each part is held. */
START_TEST(moe_and_cp_bound_below_the_step)
{
    static const char *const moe[] = {
        "{\"tp\": 1, \"pp\": 1, \"ep\": 8}",
        "{\"tp\": 1, \"pp\": 1, \"ep\": 1}",
        "{\"tp\": 2, \"pp\": 1, \"ep\": 4, \"sequence_parallel\": true}",
        "{\"tp\": 1, \"pp\": 2, \"ep\": 2, \"zero\": 1}",
        "{\"tp\": 1, \"pp\": 2, \"ep\": 4, \"activation_checkpointing\": \"full\"}",
    };
    for (size_t i = 0; i < sizeof moe / sizeof moe[0]; i++) {
        double r = check_moe_cp(1, moe[i], true);
        /* one box: the reductions inside the host are bounded by each member GPU's in-links
         * (ep 1: 0.77 when only the host's cut counted, which needs nothing inside a host) */
        ck_assert_msg(r > 0.85, "%s: bound %.3f of the step", moe[i], r);
        /* pipelined: the longest path through the graph holds the fill and the drain, which
         * the busiest lane's sum (0.84 of the step for both) left out, and the sends between
         * the stages (0.95-0.98 without them) */
        if (strstr(moe[i], "\"pp\": 2")) ck_assert_msg(r > 0.975, "%s: bound %.3f of the step", moe[i], r);
        /* tensor parallel: the in-lane collectives the replay charges each op (0.91 without) */
        if (strstr(moe[i], "\"tp\": 2")) ck_assert_msg(r > 0.97, "%s: bound %.3f of the step", moe[i], r);
        /* two boxes: the data-parallel reductions and gathers cross the hosts' NICs, and their
         * cut bounds are on the path (0.70-0.84 of the step without them) */
        r = check_moe_cp(2, moe[i], true);
        ck_assert_msg(r > 0.85, "%s on 2 boxes: bound %.3f of the step", moe[i], r);
    }
    static const char *const cp[] = {
        "{\"tp\": 1, \"pp\": 1, \"cp\": 8, \"zero\": 1}",
        "{\"tp\": 2, \"pp\": 1, \"cp\": 4, \"sequence_parallel\": true}",
        "{\"tp\": 1, \"pp\": 2, \"cp\": 2, \"activation_checkpointing\": \"full\"}",
    };
    for (size_t i = 0; i < sizeof cp / sizeof cp[0]; i++) {
        double r = check_moe_cp(1, cp[i], false);
        /* long sequences: attention compute dominates, the bound is close (pp 2 too: the
         * pipeline's fill and drain are on the longest path; the busiest lane gave 0.90; tp 2:
         * 0.97 without the in-lane collectives) */
        ck_assert_msg(r > 0.985, "%s: bound %.3f of the step", cp[i], r);
        check_moe_cp(2, cp[i], false);
    }
    /* the stages on two boxes joined by 10 Gb/s (pp outermost: a stage per box): the
     * activations and gradients crossing between them are on the path (0.53 without) */
    double r = check_moe_cp_on(2, ", \"nic\": \"10 Gb/s\"", "{\"tp\": 1, \"pp\": 2, \"ep\": 4, \"placement\": \"pp,dp,tp\"}", true);
    ck_assert_msg(r > 0.95, "pipeline over 10 Gb/s: bound %.3f of the step", r);
}
END_TEST

/* One GPU: no communication, no pipeline; the step is the compute ops back to back. */
START_TEST(one_gpu_is_exact)
{
    static const char *const plans[] = {"{\"micro_batch_size\": 4}",
                                        "{\"micro_batch_size\": 1, \"activation_checkpointing\": \"full\"}"};
    for (int i = 0; i < 2; i++) {
        char text[1024];
        snprintf(text, sizeof text,
                 "{\"topology\": {\"generator\": \"switch\", \"gpus\": 1},"
                 /* no SMs to quantise waves over: GEMMs on the flat roofline, as the bound */
                 " \"gpu\": {\"preset\": \"A100-SXM\", \"sms\": 0},"
                 " \"model\": {\"kind\": \"transformer\", \"layers\": 4, \"hidden\": 512,"
                 " \"heads\": 8, \"seq_len\": 512, \"vocab\": 1000},"
                 " \"parallel\": %s, \"global_batch\": 8}", plans[i]);
        cJSON *j = parse(text);
        dt_error e = {0};
        run_probe pr;
        ck_assert_int_eq(run_probe_scenario(j, "p.json", ".", NULL, &pr, &e), DT_OK);
        run_options o = {0};
        run_result r;
        ck_assert_int_eq(run_scenario(j, "p.json", ".", &o, &r, &e), DT_OK);
        ck_assert_msg(pr.step_lower_bound_s <= r.step_time_s &&
                          r.step_time_s - pr.step_lower_bound_s < 1e-9,
                      "bound %.12g, step %.12g", pr.step_lower_bound_s, r.step_time_s);
        run_result_free(&r);
        cJSON_Delete(j);
    }
}
END_TEST

START_TEST(memory_errors_and_no_bound)
{
    run_probe_cache *cache = run_probe_cache_create();
    cJSON *j = scenario(1, "{\"tp\": 2, \"pp\": 2, \"zero\": 1}", "");
    dt_error e = {0};
    run_probe pr;
    ck_assert_int_eq(run_probe_scenario(j, "p.json", ".", cache, &pr, &e), DT_OK);
    struct run_memory m;
    bool fits;
    ck_assert_int_eq(run_memory(j, "p.json", ".", &m, &fits, &e), DT_OK);
    ck_assert(m.peak == pr.memory.peak && m.capacity == pr.memory.capacity && fits == pr.fits);
    ck_assert_int_eq(pr.n_gpus, 8);
    cJSON_Delete(j);
    /* tp 3 does not divide 16 heads: the loader's error, path and all */
    j = scenario(1, "{\"tp\": 4, \"pp\": 3}", "");
    ck_assert_int_eq(run_probe_scenario(j, "p.json", ".", cache, &pr, &e), DT_EINPUT);
    ck_assert_msg(strstr(e.msg, "must divide") || strstr(e.msg, "must equal"), "%s", e.msg);
    cJSON_Delete(j);
    /* jitter: a step is not a lane's own work, no bound */
    j = scenario(1, "{\"tp\": 2, \"pp\": 2}", "\"jitter\": {\"distribution\": \"lognormal\", \"sigma\": 0.1}");
    ck_assert_msg(run_probe_scenario(j, "p.json", ".", cache, &pr, &e) == DT_OK, "%s", e.msg);
    ck_assert(pr.step_lower_bound_s == 0);
    cJSON_Delete(j);
    run_probe_cache_destroy(cache);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("probe");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, bound_below_the_step);
    tcase_add_test(tc, one_gpu_is_exact);
    tcase_add_test(tc, zero3_bound_follows_the_dp_stream);
    tcase_add_test(tc, deadline_stops_the_step);
    tcase_add_test(tc, moe_and_cp_bound_below_the_step);
    tcase_add_test(tc, memory_errors_and_no_bound);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return dt_run_suite(suite()); }
