/* cmd_goodput.c - `dtsim goodput`: a long job with failures, checkpoints and restarts,
 * simulated over a horizon many times; goodput, tokens per day and the best checkpoint
 * interval next to Young's and Daly's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <errno.h>
#include <unistd.h>

#include "cli.h"
#include "dtsim/goodput.h"
#include "dtsim/report.h"
#include "dtsim/run.h"
#include "dtsim/units.h"

static void help(FILE *out)
{
    fprintf(out,
            "usage: dtsim goodput SCENARIO.json [options]\n"
            "\n"
            "Simulate a training job over a horizon, many times: steps, checkpoints, failures\n"
            "of GPUs, hosts and links, lost work and restarts (the scenario's \"failures\",\n"
            "\"checkpoint\" and \"storage\" sections; docs/goodput.md). Prints the goodput (share\n"
            "of wall-clock time whose training is kept) and tokens per day with 95 %% confidence\n"
            "intervals, at the scenario's checkpoint interval and at the best one found, next\n"
            "to Young's and Daly's closed forms.\n"
            "\n"
            "options:\n"
            "  --horizon TIME       wall-clock time of one run (default 24h; e.g. 7d, 54d)\n"
            "  --runs N             independent failure histories (default 1000)\n"
            "  --seed N             seed of the failure histories (default: the scenario's)\n"
            "  --no-search          only the scenario's interval (needs one)\n"
            "  --min-interval TIME  --max-interval TIME\n"
            "                       range of the search (default Daly's interval / 16 to x 16)\n"
            "  --plot DIR           write DIR/goodput.csv and a gnuplot figure of goodput vs\n"
            "                       interval (DIR/goodput.png, .svg, .gp, .dat)\n"
            "  --network flow|analytic  network model of the simulated step\n"
            "  --json               one JSON document on stdout\n"
            "  --no-progress        no progress bar (drawn on stderr only when a terminal)\n"
            "  -h, --help           this help\n");
}

static int usage(const char *msg, const char *arg)
{
    fprintf(stderr, "dtsim goodput: %s%s%s\n(see dtsim goodput --help)\n", msg, arg ? ": " : "",
            arg ? arg : "");
    return CLI_USAGE;
}

/* 12.3 min, 2.81 h, 4.5 s, 3.2 d, 9.85 years */
static const char *fmt_dur(double s, char *buf, size_t n)
{
    if (!isfinite(s)) snprintf(buf, n, "never");
    else if (s >= 2 * 31557600) snprintf(buf, n, "%.3g years", s / 31557600);
    else if (s >= 2 * 86400) snprintf(buf, n, "%.3g d", s / 86400);
    else if (s >= 2 * 3600) snprintf(buf, n, "%.3g h", s / 3600);
    else if (s >= 120) snprintf(buf, n, "%.3g min", s / 60);
    else unit_fmt_seconds(s, buf, n);
    return buf;
}

/* 5087 -> "5.09 k", 5209177 -> "5.21 M" */
static const char *fmt_si(double x, char *buf, size_t n)
{
    static const char *const pre[] = {"", " k", " M", " G", " T", " P", " E"};
    int i = 0;
    while (fabs(x) >= 1000 && i < 6) {
        x /= 1000;
        i++;
    }
    snprintf(buf, n, "%.3g%s", x, pre[i]);
    return buf;
}

typedef struct bar {
    bool on;
    int last;
} bar;

static void draw(void *ctx, long done, long total)
{
    bar *b = ctx;
    if (!b->on || total <= 0) return;
    enum { W = 30 };
    int pct = (int)(100 * done / total);
    if (pct == b->last) return;
    b->last = pct;
    char cells[W + 1];
    long fill = done * W / total;
    for (int i = 0; i < W; i++) cells[i] = i < fill ? '#' : '.';
    cells[W] = '\0';
    fprintf(stderr, "\r[%s] %3d%%", cells, pct);
    if (done >= total) fprintf(stderr, "\n");
    fflush(stderr);
}

static double tokens_day(const gp_job *j, double goodput)
{
    return j->step_s > 0 ? goodput * j->tokens_per_step / j->step_s * 86400 : 0;
}

static cJSON *point_json(const gp_job *j, const gp_point *p)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "steps", (double)p->steps);
    cJSON_AddNumberToObject(o, "interval_s", p->interval_s);
    cJSON_AddNumberToObject(o, "goodput", p->goodput);
    if (isfinite(p->goodput_ci95)) cJSON_AddNumberToObject(o, "goodput_ci95", p->goodput_ci95);
    cJSON_AddNumberToObject(o, "tokens_per_day", tokens_day(j, p->goodput));
    if (isfinite(p->goodput_ci95))
        cJSON_AddNumberToObject(o, "tokens_per_day_ci95", tokens_day(j, p->goodput_ci95));
    cJSON_AddNumberToObject(o, "useful_s", p->useful_s);
    cJSON_AddNumberToObject(o, "lost_s", p->lost_s);
    cJSON_AddNumberToObject(o, "checkpoint_s", p->ckpt_s);
    cJSON_AddNumberToObject(o, "restart_s", p->restart_s);
    cJSON_AddNumberToObject(o, "failures", p->failures);
    if (isfinite(p->renewal)) cJSON_AddNumberToObject(o, "renewal", p->renewal);
    return o;
}

static void print_json(const char *file, const gp_job *j, const run_result *step,
                       const gp_options *o, const gp_result *r)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "scenario", file);
    cJSON_AddNumberToObject(root, "gpus", step->n_gpus);
    cJSON_AddNumberToObject(root, "horizon_s", o->horizon_s);
    cJSON_AddNumberToObject(root, "runs", o->runs);
    char seed[24]; /* as an exact integer: a double would round seeds above 2^53 */
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)o->seed);
    cJSON_AddRawToObject(root, "seed", seed);
    cJSON_AddNumberToObject(root, "step_time_s", j->step_s);
    cJSON_AddNumberToObject(root, "tokens_per_step", j->tokens_per_step);
    cJSON *parts = cJSON_AddObjectToObject(root, "parts");
    for (int c = 0; c < GP_N_CLASSES; c++) {
        if (!(j->cls[c].mtbf_s > 0)) continue;
        cJSON *p = cJSON_AddObjectToObject(parts, gp_class_name(c));
        cJSON_AddNumberToObject(p, "count", (double)j->count[c]);
        cJSON_AddNumberToObject(p, "mtbf_s", j->cls[c].mtbf_s);
        cJSON_AddStringToObject(p, "distribution", j->cls[c].dist == GP_WEIBULL ? "weibull" : "exponential");
        if (j->cls[c].dist == GP_WEIBULL) cJSON_AddNumberToObject(p, "shape", j->cls[c].shape);
    }
    if (isfinite(r->system_mtbf_s)) cJSON_AddNumberToObject(root, "system_mtbf_s", r->system_mtbf_s);
    cJSON *ck = cJSON_AddObjectToObject(root, "checkpoint");
    cJSON_AddStringToObject(ck, "mode", j->mode == GP_CKPT_SYNC ? "sync" : "async");
    cJSON_AddNumberToObject(ck, "bytes", j->ckpt_bytes);
    cJSON_AddNumberToObject(ck, "blocking_s", j->block_s);
    cJSON_AddNumberToObject(ck, "durable_after_s", j->durable_s);
    cJSON_AddNumberToObject(ck, "read_s", j->read_s);
    cJSON_AddNumberToObject(ck, "restart_s", j->restart_s);
    if (isfinite(r->young_s)) cJSON_AddNumberToObject(root, "young_s", r->young_s);
    if (isfinite(r->daly_s)) cJSON_AddNumberToObject(root, "daly_s", r->daly_s);
    if (isfinite(r->renewal_opt_s)) cJSON_AddNumberToObject(root, "renewal_optimum_s", r->renewal_opt_s);
    if (r->given >= 0) cJSON_AddItemToObject(root, "given", point_json(j, &r->points[r->given]));
    if (r->best >= 0) cJSON_AddItemToObject(root, "best", point_json(j, &r->points[r->best]));
    if (r->daly >= 0) cJSON_AddItemToObject(root, "daly", point_json(j, &r->points[r->daly]));
    cJSON *pts = cJSON_AddArrayToObject(root, "points");
    for (int i = 0; i < r->n_points; i++) cJSON_AddItemToArray(pts, point_json(j, &r->points[i]));
    char *s = cJSON_Print(root);
    printf("%s\n", s);
    free(s);
    cJSON_Delete(root);
}

static void row(const char *label, const gp_job *j, const gp_point *p, double horizon)
{
    char a[32], b[32], c[32], d[32], e[32];
    printf("  %-8s %10s  %6.2f %% +- %-5.2f %9s +- %-8s %9s %9s %9s %7.2f\n", label,
           fmt_dur(p->interval_s, a, sizeof a), 100 * p->goodput,
           isfinite(p->goodput_ci95) ? 100 * p->goodput_ci95 : 0.0,
           fmt_si(tokens_day(j, p->goodput), b, sizeof b),
           fmt_si(isfinite(p->goodput_ci95) ? tokens_day(j, p->goodput_ci95) : 0, c, sizeof c),
           fmt_dur(p->lost_s, d, sizeof d), fmt_dur(p->ckpt_s, e, sizeof e),
           fmt_dur(p->restart_s, (char[32]){0}, 32), p->failures);
    (void)horizon;
}

static void print_human(const char *file, const gp_job *j, const run_result *step,
                        const gp_options *o, const gp_result *r)
{
    char a[32], b[32], c[32];
    printf("%s: %d GPUs, %d runs of %s (seed %llu)\n", file, step->n_gpus, o->runs,
           fmt_dur(o->horizon_s, a, sizeof a), (unsigned long long)o->seed);
    if (step->summary[0]) printf("  %s\n", step->summary);
    printf("\n  %-18s %s, %s tokens\n", "step", fmt_dur(j->step_s, a, sizeof a),
           fmt_si(j->tokens_per_step, b, sizeof b));
    for (int k = 0; k < GP_N_CLASSES; k++) {
        if (!(j->cls[k].mtbf_s > 0) || j->count[k] == 0) continue;
        char lab[32], sh[32] = "";
        snprintf(lab, sizeof lab, "%s failures", gp_class_name(k));
        if (j->cls[k].dist == GP_WEIBULL) snprintf(sh, sizeof sh, ", Weibull k %.3g", j->cls[k].shape);
        printf("  %-18s %ld parts, MTBF %s each%s\n", lab, j->count[k],
               fmt_dur(j->cls[k].mtbf_s, a, sizeof a), sh);
    }
    printf("  %-18s %s (the whole job, long-run)\n", "system MTBF", fmt_dur(r->system_mtbf_s, a, sizeof a));
    printf("  %-18s %s, %s: training stops %s per checkpoint", "checkpoint",
           unit_fmt_size(j->ckpt_bytes, a, sizeof a), j->mode == GP_CKPT_SYNC ? "sync" : "async",
           fmt_dur(j->block_s, b, sizeof b));
    if (j->mode == GP_CKPT_ASYNC) printf(", durable %s later", fmt_dur(j->durable_s, c, sizeof c));
    printf("\n  %-18s %s to relaunch + %s to read the checkpoint back\n", "restart",
           fmt_dur(j->restart_s, a, sizeof a), fmt_dur(j->read_s, b, sizeof b));
    printf("\n  %-8s %10s  %-16s %-21s %9s %9s %9s %7s\n", "", "interval", "goodput (95 % CI)",
           "tokens/day", "lost", "ckpt", "restart", "fails");
    if (r->given >= 0) row("given", j, &r->points[r->given], o->horizon_s);
    if (r->best >= 0) row("best", j, &r->points[r->best], o->horizon_s);
    if (r->daly >= 0) row("Daly", j, &r->points[r->daly], o->horizon_s);
    printf("  (lost, ckpt, restart: mean time per run spent on work thrown away, checkpoints, "
           "restarts)\n");
    printf("\n  %-18s %s  sqrt(2 delta M), delta = %s, M = %s\n", "Young", fmt_dur(r->young_s, a, sizeof a),
           fmt_dur(j->block_s, b, sizeof b), fmt_dur(r->system_mtbf_s, c, sizeof c));
    printf("  %-18s %s  (Daly 2006, higher order)\n", "Daly", fmt_dur(r->daly_s, a, sizeof a));
    if (isfinite(r->renewal_opt_s))
        printf("  %-18s %s  (exact optimum of the renewal formula: exponential failures)\n",
               "renewal optimum", fmt_dur(r->renewal_opt_s, a, sizeof a));
    if (r->best >= 0 && r->daly >= 0) {
        const gp_point *bp = &r->points[r->best], *dp = &r->points[r->daly];
        double diff = bp->goodput - dp->goodput;
        printf("  best - Daly: %+.3f %% of goodput (%s)\n", 100 * diff,
               isfinite(bp->goodput_ci95) && diff <= bp->goodput_ci95 ? "within the confidence interval"
                                                                      : "beyond the confidence interval");
    }
    if (!isfinite(r->system_mtbf_s)) printf("  no part can fail: checkpointing only costs time\n");
    printf("  %ld failures drawn over all runs\n", r->failures_drawn);
}

/* DIR/goodput.csv and its report, drawn into a hidden directory beside DIR and moved into it
 * with the command's other outputs (cli/output.c). */
static int write_plot(const char *dir, const gp_job *j, const gp_result *r, dt_error *err)
{
    const char *stage;
    int rc = cli_outdir_stage(dir, &stage, err);
    if (rc) return rc;
    char path[4200];
    snprintf(path, sizeof path, "%s/goodput.csv", stage);
    FILE *f = fopen(path, "w");
    if (!f) return dt_error_set(err, DT_EIO, path, NULL, "cannot write: %s", strerror(errno));
    fprintf(f, "steps,interval_s,goodput,goodput_ci95,renewal,tokens_per_day,tokens_per_day_ci95,"
               "lost_s,checkpoint_s,restart_s,failures,young_s,daly_s,best\n");
    for (int i = 0; i < r->n_points; i++) {
        const gp_point *p = &r->points[i];
        fprintf(f, "%ld,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%d\n",
                p->steps, p->interval_s, p->goodput, p->goodput_ci95, p->renewal,
                tokens_day(j, p->goodput), tokens_day(j, p->goodput_ci95), p->lost_s, p->ckpt_s,
                p->restart_s, p->failures, r->young_s, r->daly_s, i == r->best);
    }
    errno = 0;
    int e = fflush(f) != 0 || ferror(f) ? (errno ? errno : EIO) : 0;
    if (fclose(f) != 0 && !e) e = errno;
    if (e) return dt_error_set(err, DT_EIO, dir, NULL, "writing goodput.csv failed: %s", strerror(e));
    rep_report_summary sum;
    return rep_report_file(path, stage, &sum, err);
}

static int run(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) {
        help(stdout);
        return CLI_OK;
    }
    run_options ropt = {0};
    gp_options o = {.horizon_s = 86400, .runs = 1000, .search = true};
    const char *scenario = NULL, *plot = NULL;
    bool json = false, progress = true, have_seed = false;
    uint64_t seed = 0;
    double min_iv = 0, max_iv = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_val = i + 1 < argc;
        char why[256];
        if (!strcmp(a, "--json")) json = true;
        else if (!strcmp(a, "--no-progress")) progress = false;
        else if (!strcmp(a, "--no-search")) o.search = false;
        else if (!strcmp(a, "--horizon") || !strcmp(a, "--min-interval") || !strcmp(a, "--max-interval")) {
            if (!has_val) return usage("needs a time such as 24h", a);
            double s;
            if (unit_parse(UNIT_TIME, argv[++i], &s, why, sizeof why) != DT_OK)
                return usage(why, a);
            if (!(s > 0) || s > 1e10) return usage("expected a positive time up to 1e10 s", argv[i]);
            if (!strcmp(a, "--horizon")) o.horizon_s = s;
            else if (!strcmp(a, "--min-interval")) min_iv = s;
            else max_iv = s;
        } else if (!strcmp(a, "--runs")) {
            if (!has_val) return usage("--runs needs a number", NULL);
            char *e;
            long v = strtol(argv[++i], &e, 10);
            if (*e || v < 1 || v > 1000000) return usage("--runs expects 1 to 1000000", argv[i]);
            o.runs = (int)v;
        } else if (!strcmp(a, "--seed")) {
            if (!has_val) return usage("--seed needs a value", NULL);
            char *e;
            errno = 0; /* strtoull saturates at 2^64 - 1 with ERANGE: refuse, do not clamp */
            unsigned long long v = strtoull(argv[++i], &e, 10);
            if (*e || errno == ERANGE || argv[i][0] == '-' || !argv[i][0])
                return usage("--seed expects a non-negative integer below 2^64", argv[i]);
            have_seed = true;
            seed = v;
        } else if (!strcmp(a, "--plot")) {
            if (!has_val) return usage("--plot needs a directory", NULL);
            plot = argv[++i];
        } else if (!strcmp(a, "--network")) {
            if (!has_val) return usage("--network needs flow or analytic", NULL);
            const char *v = argv[++i];
            ropt.have_network = true;
            if (!strcmp(v, "flow")) ropt.network = NET_FLOW;
            else if (!strcmp(v, "analytic")) ropt.network = NET_ANALYTIC;
            else return usage("--network expects flow or analytic", v);
        } else if (a[0] == '-' && a[1]) {
            return usage("unknown option", a);
        } else if (!scenario) {
            scenario = a;
        } else {
            return usage("more than one scenario", a);
        }
    }
    if (!scenario) return usage("needs a scenario file", NULL);
    dt_error err;
    dt_error_clear(&err);
    gp_job job;
    run_result step;
    int rc = run_goodput_job_file(scenario, &ropt, &job, &step, &err);
    run_result_free(&step);
    if (rc) return cli_report_error(&err);
    o.seed = have_seed ? seed : step.seed;
    /* the search range in whole steps */
    if (min_iv > 0) o.min_steps = (long)fmax(1, floor(min_iv / job.step_s));
    if (max_iv > 0) o.max_steps = (long)fmax(1, ceil(max_iv / job.step_s));
    if (min_iv > 0 && max_iv > 0 && max_iv < min_iv)
        return usage("--max-interval is below --min-interval", NULL);
    if (!o.search && job.interval_steps <= 0)
        return usage("--no-search needs the scenario's checkpoint interval (\"interval\": \"30 min\" "
                     "or {\"steps\": N})", NULL);
    bar b = {.on = progress && !json && isatty(STDERR_FILENO), .last = -1};
    o.progress = draw;
    o.progress_ctx = &b;
    gp_result r;
    rc = gp_simulate(&job, &o, &r, &err);
    if (rc) {
        if (!err.file[0]) snprintf(err.file, sizeof err.file, "%s", scenario);
        return cli_report_error(&err);
    }
    if (plot) rc = write_plot(plot, &job, &r, &err);
    if (rc == DT_OK) {
        if (json) print_json(scenario, &job, &step, &o, &r);
        else print_human(scenario, &job, &step, &o, &r);
    }
    gp_result_free(&r);
    if (rc) return cli_report_error(&err);
    return CLI_OK;
}

const cli_command cmd_goodput = {.name = "goodput",
                                 .summary = "Goodput of a long job with failures and checkpoints",
                                 .run = run,
                                 .help = help};
