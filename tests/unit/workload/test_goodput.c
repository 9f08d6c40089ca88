/* test_goodput.c - failures, checkpoints, restarts, storage (goodput.h) and their scenario
 * sections.
 * Pins down: Young's and Daly's intervals and the renewal-reward goodput against hand-computed
 * numbers; the exact renewal optimum next to Daly's interval; one run's accounting by hand
 * (sync and async checkpoints, a failure during a restart; useful + lost + checkpoint +
 * restart = horizon); the Monte Carlo goodput of exponential failures against the renewal
 * formula within its own 95 % interval at a fixed seed, at every interval the search tries, and
 * the search's best interval next to Daly's; Weibull parts in service fail at the long-run rate
 * N H / MTBF exactly (equilibrium start), new parts of shape < 1 far more often; the storage
 * model's transfer time and the input stall; run_goodput_job's part counts, checkpoint size
 * (14 bytes per parameter, mixed-precision Adam) and write rate through a storage node's
 * max-flow; an input pipeline slower than the step stretches it by the difference; bad
 * sections fail at their JSON path.
 * Leaves free: the search's exact grid, message wording beyond the key facts checked. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "dtsim/goodput.h"
#include "dtsim/run.h"
#include "dtsim/workload.h"
#include "testutil.h"

START_TEST(young_daly_closed_forms)
{
    double d = 60, M = 10800;
    ck_assert_rel(gp_young(d, M), 1138.4199576606, 1e-10); /* sqrt(1,296,000) */
    /* sqrt(2dM)(1 + sqrt(d/2M)/3 + d/(18M)) - d */
    double x = d / (2 * M);
    ck_assert_rel(gp_daly(d, M), sqrt(2 * d * M) * (1 + sqrt(x) / 3 + x / 9) - d, 1e-14);
    ck_assert_rel(gp_daly(d, M), 1098.77132, 1e-6);
    ck_assert_rel(gp_daly(3000, 1000), 1000, 1e-15); /* delta >= 2M: M */
    /* renewal: W / (M e^{R/M} (e^{(W+d)/M} - 1)), by hand */
    ck_assert_rel(gp_renewal_goodput(1000, 100, 500, 10000), 0.818064, 1e-5);
    ck_assert_rel(gp_renewal_goodput(100, 20, 0, INFINITY), 100.0 / 120, 1e-15);
    /* the exact optimum of the renewal formula sits next to Daly's interval when d << M */
    double opt = gp_renewal_optimum(60, 600, 10800);
    ck_assert_rel(opt, gp_daly(60, 10800), 5e-3);
    double g = gp_renewal_goodput(opt, 60, 600, 10800);
    ck_assert(g >= gp_renewal_goodput(opt * 1.02, 60, 600, 10800));
    ck_assert(g >= gp_renewal_goodput(opt * 0.98, 60, 600, 10800));
}
END_TEST

START_TEST(one_run_by_hand)
{
    /* sync: W = 10 (10 steps of 1 s), write 2 s, restart 5 + read 1 */
    gp_job j = {.step_s = 1, .block_s = 2, .restart_s = 5, .read_s = 1, .mode = GP_CKPT_SYNC};
    double f[] = {25, 27, 60};
    double u, l, c, r;
    gp_run_once(&j, 10, f, 3, 100, &u, &l, &c, &r);
    /* life 0-25: work 21, 2 checkpoints durable (20 kept, 1 lost), 4 s writing; restart 25-31
     * hit at 27; restart 27-33; life 33-60: work 23 (20 kept, 3 lost), 4 s writing; restart
     * 60-66; life 66-100: work 30 kept, 4 s writing */
    ck_assert_rel(u, 70, 1e-12);
    ck_assert_rel(l, 4, 1e-12);
    ck_assert_rel(c, 12, 1e-12);
    ck_assert_rel(r, 14, 1e-12);
    ck_assert_rel(u + l + c + r, 100, 1e-12);
    /* async: snapshot 1 s, the write durable 15 s later (longer than W: the next snapshot
     * waits). Cycle = 15 + 1 = 16: snapshots end at 11, 27, 43; durable at 26, 42, 58 */
    gp_job a = {.step_s = 1, .block_s = 1, .durable_s = 15, .restart_s = 0, .read_s = 0,
                .mode = GP_CKPT_ASYNC};
    double f2[] = {45};
    gp_run_once(&a, 10, f2, 1, 50, &u, &l, &c, &r);
    /* by 45: work = 10 + 10 + 10 + min(45-43, 10) = 32; durable by 45: 2 (at 26 and 42) */
    ck_assert_rel(l, 32 - 20, 1e-12);
    ck_assert_rel(c, 45 - 32, 1e-12);
    ck_assert_rel(u, 20 + 5, 1e-12); /* then 5 s of work to the horizon, kept */
    ck_assert_rel(u + l + c + r, 50, 1e-12);
    /* no failure: the whole horizon but the checkpoints */
    gp_run_once(&j, 10, NULL, 0, 100, &u, &l, &c, &r);
    ck_assert_rel(u, 10 * 8 + 4, 1e-12); /* 8 cycles of 12 s, then 4 s of work */
    ck_assert_rel(c, 16, 1e-12);
}
END_TEST

static gp_job exp_job(void)
{
    /* 100 parts of MTBF 1e5 s: the job fails every 1,000 s on average */
    gp_job j = {.step_s = 1, .tokens_per_step = 1e6, .block_s = 20, .restart_s = 50, .read_s = 10,
                .mode = GP_CKPT_SYNC, .interval_steps = 200};
    j.count[GP_GPU] = 100;
    j.cls[GP_GPU] = (gp_class){.mtbf_s = 1e5, .dist = GP_EXPONENTIAL, .shape = 1};
    return j;
}

START_TEST(monte_carlo_matches_renewal)
{
    gp_job j = exp_job();
    gp_options o = {.horizon_s = 2e6, .runs = 200, .seed = 7, .search = true};
    gp_result r;
    dt_error e;
    dt_error_clear(&e);
    ck_assert_int_eq(gp_simulate(&j, &o, &r, &e), DT_OK);
    ck_assert_rel(r.system_mtbf_s, 1000, 1e-12);
    ck_assert_int_ge(r.given, 0);
    const gp_point *g = &r.points[r.given];
    double want = gp_renewal_goodput(200, 20, 60, 1000); /* 0.765423 */
    ck_assert_rel(want, 0.765423, 1e-5);
    ck_assert_rel(g->renewal, want, 1e-12);
    ck_assert_msg(fabs(g->goodput - want) <= g->goodput_ci95,
                  "simulated %.5f +- %.5f, renewal formula %.5f", g->goodput, g->goodput_ci95, want);
    /* every interval the search tried is within its interval of the closed form, bar the
     * ~5 % a 95 % interval misses: at most 1 in 8 points outside, and never by 2x the CI */
    int outside = 0;
    for (int i = 0; i < r.n_points; i++) {
        const gp_point *p = &r.points[i];
        double d = fabs(p->goodput - p->renewal);
        outside += d > p->goodput_ci95;
        ck_assert_msg(d <= 2 * p->goodput_ci95, "K %ld: %.5f vs %.5f +- %.5f", p->steps,
                      p->goodput, p->renewal, p->goodput_ci95);
        ck_assert_rel(p->useful_s + p->lost_s + p->ckpt_s + p->restart_s, o.horizon_s, 1e-9);
    }
    ck_assert_int_le(outside * 8, r.n_points);
    /* the best interval found is where the closed forms put it */
    ck_assert_int_ge(r.best, 0);
    ck_assert_int_ge(r.daly, 0);
    const gp_point *b = &r.points[r.best], *d = &r.points[r.daly];
    ck_assert_rel(r.daly_s, gp_daly(20, 1000), 1e-12);
    ck_assert_rel(r.renewal_opt_s, gp_renewal_optimum(20, 60, 1000), 1e-12);
    ck_assert_msg(fabs(b->interval_s - r.renewal_opt_s) <= 0.3 * r.renewal_opt_s,
                  "best %g s, renewal optimum %g s", b->interval_s, r.renewal_opt_s);
    ck_assert(b->goodput - d->goodput <= b->goodput_ci95);
    ck_assert(b->goodput >= d->goodput);
    /* same seed, same numbers */
    gp_result r2;
    ck_assert_int_eq(gp_simulate(&j, &o, &r2, &e), DT_OK);
    ck_assert_int_eq(r2.n_points, r.n_points);
    for (int i = 0; i < r.n_points; i++) ck_assert(r2.points[i].goodput == r.points[i].goodput);
    gp_result_free(&r2);
    gp_result_free(&r);
}
END_TEST

static double mean_failures(double shape, gp_start start, int runs)
{
    gp_job j = {.step_s = 1, .block_s = 1, .mode = GP_CKPT_SYNC, .interval_steps = 100, .start = start};
    j.count[GP_HOST] = 1000;
    j.cls[GP_HOST] = (gp_class){.mtbf_s = 1e6, .dist = GP_WEIBULL, .shape = shape};
    gp_options o = {.horizon_s = 1e4, .runs = runs, .seed = 3};
    gp_result r;
    dt_error e;
    ck_assert_int_eq(gp_simulate(&j, &o, &r, &e), DT_OK);
    double f = r.points[r.given].failures;
    gp_result_free(&r);
    return f;
}

START_TEST(weibull_parts)
{
    /* in service (equilibrium): exactly N H / MTBF = 10 failures per run in expectation, for
     * any shape; the sampling error of 4000 runs is well under 3 % */
    ck_assert_rel(mean_failures(0.5, GP_START_STATIONARY, 4000), 10, 0.04);
    ck_assert_rel(mean_failures(3, GP_START_STATIONARY, 4000), 10, 0.04);
    /* all new, shape 0.5: N F(H) = 1000 (1 - exp(-sqrt(1e4 / 5e5))) = 131.9 first failures,
     * plus their replacements' early deaths */
    double f = mean_failures(0.5, GP_START_NEW, 400);
    ck_assert(f > 131.9 * 0.97);
    ck_assert(f < 131.9 * 1.25);
}
END_TEST

START_TEST(storage_model)
{
    stor_spec s = {.present = true, .bandwidth = 100e9, .host_bandwidth = 10e9, .latency_s = 0.5};
    ck_assert_rel(stor_transfer_s(&s, 4, INFINITY, 1e12), 0.5 + 1e12 / 40e9, 1e-12);
    ck_assert_rel(stor_transfer_s(&s, 40, INFINITY, 1e12), 0.5 + 1e12 / 100e9, 1e-12);
    ck_assert_rel(stor_transfer_s(&s, 40, 20e9, 1e12), 0.5 + 1e12 / 20e9, 1e-12);
    ck_assert(stor_transfer_s(&s, 4, INFINITY, 0) == 0);
    stor_input in = {.present = true, .bytes_per_sample = 1, .prefetch = 2};
    ck_assert_rel(stor_input_stall_s(&in, 3, 2), 1, 1e-15);
    ck_assert(stor_input_stall_s(&in, 1, 2) == 0);
    in.prefetch = 0;
    ck_assert_rel(stor_input_stall_s(&in, 1, 2), 1, 1e-15);
}
END_TEST

/* Two hosts of 2 GPUs on a switch, a storage server behind a 10 GB/s link. */
#define TOPO                                                                                   \
    "\"topology\": {\"nodes\": [{\"name\": \"a0\", \"kind\": \"gpu\", \"host\": \"a\"},"     \
    " {\"name\": \"a1\", \"kind\": \"gpu\", \"host\": \"a\"}, {\"name\": \"b0\", \"kind\": "  \
    "\"gpu\", \"host\": \"b\"}, {\"name\": \"b1\", \"kind\": \"gpu\", \"host\": \"b\"},"      \
    " {\"name\": \"sw\", \"kind\": \"switch\"}, {\"name\": \"nas\", \"kind\": \"host\"}],"    \
    " \"gpu_forwarding\": false, \"links\": [{\"src\": \"a0\", \"dst\": \"sw\", \"bandwidth\":" \
    " \"50 GB/s\", \"latency\": \"1 us\"}, {\"src\": \"a1\", \"dst\": \"sw\", \"bandwidth\": " \
    "\"50 GB/s\", \"latency\": \"1 us\"}, {\"src\": \"b0\", \"dst\": \"sw\", \"bandwidth\": "  \
    "\"50 GB/s\", \"latency\": \"1 us\"}, {\"src\": \"b1\", \"dst\": \"sw\", \"bandwidth\": "  \
    "\"50 GB/s\", \"latency\": \"1 us\"}, {\"src\": \"nas\", \"dst\": \"sw\", \"bandwidth\": " \
    "\"10 GB/s\", \"latency\": \"1 us\"}]}"
#define SYN "\"model\": {\"kind\": \"synthetic\", \"layers\": 4, \"forward_time\": \"1 ms\", " \
            "\"backward_time\": \"2 ms\", \"params\": 1e9}"

static cJSON *parse(const char *text)
{
    cJSON *j;
    dt_error e;
    ck_assert_int_eq(js_parse_text(text, strlen(text), "s.json", &j, &e), DT_OK);
    return j;
}

START_TEST(goodput_job_from_scenario)
{
    cJSON *j = parse("{" TOPO ", " SYN ", \"failures\": {\"gpu\": {\"mtbf\": \"1000 h\"}, "
                     "\"link\": {\"mtbf\": \"5000 h\"}, \"restart\": \"5 min\"}, \"checkpoint\": "
                     "{\"interval\": {\"steps\": 100}}, \"storage\": {\"node\": \"nas\", "
                     "\"bandwidth\": \"1 TB/s\"}}");
    gp_job g;
    run_result step;
    dt_error e;
    dt_error_clear(&e);
    run_options opt = {0};
    int rc = run_goodput_job(j, "s.json", ".", &opt, &g, &step, &e);
    ck_assert_msg(rc == DT_OK, "%s: %s", e.path, e.msg);
    ck_assert_int_eq(g.count[GP_GPU], 4);
    ck_assert_int_eq(g.count[GP_HOST], 2);
    ck_assert_int_eq(g.count[GP_LINK], 5);
    ck_assert_rel(g.ckpt_bytes, 14e9, 1e-12);          /* 1e9 params, bf16 + Adam states */
    ck_assert_rel(g.write_bw, 10e9, 1e-9);             /* the nas link is the max-flow */
    ck_assert_rel(g.block_s, 14e9 / 10e9, 1e-9);
    ck_assert_rel(g.read_s, 1.4, 1e-9);
    ck_assert_rel(g.restart_s, 300, 1e-12);
    ck_assert_int_eq(g.interval_steps, 100);
    ck_assert_rel(g.step_s, step.step_time_s, 1e-15);
    run_result_free(&step);
    cJSON_Delete(j);
}
END_TEST

START_TEST(input_stall)
{
    /* the step without input: 4 layers x 3 ms = 12 ms (dp 4, one microbatch, free comm aside) */
    cJSON *j = parse("{" TOPO ", " SYN "}");
    run_result r0, r1;
    dt_error e;
    run_options opt = {0};
    ck_assert_int_eq(run_scenario(j, "s.json", ".", &opt, &r0, &e), DT_OK);
    cJSON_Delete(j);
    /* 4 samples of 125 MB through 2 hosts of 1 GB/s: 0.25 s a step; prefetch hides 1 step */
    j = parse("{" TOPO ", " SYN ", \"storage\": {\"host_bandwidth\": \"1 GB/s\"}, \"input\": "
              "{\"bytes_per_sample\": \"125 MB\", \"prefetch\": 1}}");
    ck_assert_int_eq(run_scenario(j, "s.json", ".", &opt, &r1, &e), DT_OK);
    ck_assert(r1.has_input);
    ck_assert_rel(r1.input_read_s, 0.25, 1e-12);
    ck_assert_rel(r1.breakdown_s.data_stall, 0.25 - r0.step_time_s, 1e-9);
    ck_assert_rel(r1.step_time_s, 0.25, 1e-9);
    ck_assert_rel(r1.throughput.samples_per_s, 4 / 0.25, 1e-9);
    cJSON_Delete(j);
}
END_TEST

static void bad(const char *text, const char *path, const char *needle)
{
    cJSON *j = parse(text);
    wl_scenario s;
    dt_error e;
    dt_error_clear(&e);
    js_ctx c = {"s.json", &e};
    int rc = wl_scenario_parse(&c, j, &s);
    if (rc == DT_OK) wl_scenario_free(&s);
    ck_assert_msg(rc == DT_EINPUT, "accepted: %s", text);
    ck_assert_msg(!strcmp(e.path, path), "path '%s', expected '%s' (%s)", e.path, path, e.msg);
    ck_assert_msg(strstr(e.msg, needle) != NULL, "message '%s' lacks '%s'", e.msg, needle);
    cJSON_Delete(j);
}

START_TEST(bad_sections)
{
#define B "{" TOPO ", " SYN ", "
    bad(B "\"failures\": {\"gpu\": {\"mtbf\": \"10 yr\"}, \"restart\": 60}}", "failures.gpu.mtbf",
        "unknown time unit");
    bad(B "\"failures\": {\"gpu\": {\"mtbf\": \"1000 h\", \"distribution\": \"weibull\"}, "
          "\"restart\": 60}}", "failures.gpu.shape", "required");
    bad(B "\"failures\": {\"gpu\": {\"mtbf\": \"1000 h\", \"shape\": 2}, \"restart\": 60}}",
        "failures.gpu.shape", "weibull");
    bad(B "\"failures\": {\"gpu\": {\"mtbf\": \"1000 h\"}}}", "failures.restart", "required");
    bad(B "\"failures\": {\"restart\": 60}}", "failures", "at least one");
    bad(B "\"failures\": {\"gpus\": {\"mtbf\": 1}, \"restart\": 60}}", "failures.gpus", "gpu");
    bad(B "\"checkpoint\": {\"interval\": \"1 h\"}}", "checkpoint", "storage");
    bad(B "\"checkpoint\": {\"interval\": {\"step\": 3}}, \"storage\": {\"bandwidth\": 1e9}}",
        "checkpoint.interval.step", "steps");
    bad(B "\"checkpoint\": {\"interval\": true}, \"storage\": {\"bandwidth\": 1e9}}",
        "checkpoint.interval", "auto");
    bad(B "\"checkpoint\": {\"snapshot_bandwidth\": \"1 GB/s\"}, \"storage\": {\"bandwidth\": 1e9}}",
        "checkpoint.snapshot_bandwidth", "async");
    bad(B "\"storage\": {\"latency\": \"1 ms\"}}", "storage", "bandwidth");
    bad(B "\"storage\": {\"bandwith\": \"1 GB/s\"}}", "storage.bandwith", "bandwidth");
    bad(B "\"input\": {\"bytes_per_sample\": \"1 MB\"}}", "input", "storage");
    bad(B "\"input\": {\"bytes_per_sample\": \"1 MB\", \"prefetch\": -1}, \"storage\": "
          "{\"bandwidth\": 1e9}}", "input.prefetch", "-1");
#undef B
    /* an unknown storage node is found when the topology is there */
    cJSON *j = parse("{" TOPO ", " SYN ", \"storage\": {\"node\": \"nsa\"}, \"input\": "
                     "{\"bytes_per_sample\": 1000}}");
    run_result r;
    dt_error e;
    run_options opt = {0};
    ck_assert_int_eq(run_scenario(j, "s.json", ".", &opt, &r, &e), DT_EINPUT);
    ck_assert_str_eq(e.path, "storage.node");
    ck_assert_str_eq(e.file, "s.json");
    cJSON_Delete(j);
}
END_TEST

Suite *suite(void)
{
    Suite *s = suite_create("goodput");
    TCase *t = tcase_create("core");
    tcase_add_test(t, young_daly_closed_forms);
    tcase_add_test(t, one_run_by_hand);
    tcase_add_test(t, monte_carlo_matches_renewal);
    tcase_add_test(t, weibull_parts);
    tcase_add_test(t, storage_model);
    tcase_add_test(t, goodput_job_from_scenario);
    tcase_add_test(t, input_stall);
    tcase_add_test(t, bad_sections);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return dt_run_suite(suite()); }
