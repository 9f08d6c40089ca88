/* cmd_run.c - `dtsim run`: simulate one training step of a scenario (or replay a trace). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <unistd.h>

#include "cli.h"
#include "dtsim/chakra.h"
#include "dtsim/report.h"
#include "dtsim/run.h"
#include "dtsim/units.h"

static void help(FILE *out)
{
    fprintf(out,
            "usage: dtsim run SCENARIO.json [options]\n"
            "       dtsim run --trace TRACE.json --topology TOPOLOGY.json [options]\n"
            "       dtsim run --trace-chakra DIR_OR_PREFIX --topology TOPOLOGY.json [options]\n"
            "\n"
            "Simulate one training step: step time, its breakdown for the critical GPU,\n"
            "throughput and memory per GPU (docs/workloads.md).\n"
            "\n"
            "options:\n"
            "  --json                 one JSON document on stdout\n"
            "  --seed N               override the scenario's seed (jitter streams)\n"
            "  --network flow|analytic  network model: max-min shared flows (default) or\n"
            "                         uncontended closed forms\n"
            "  --write-trace FILE     also write the step's op graph as a trace file\n"
            "  --write-chakra PREFIX  also write it as a Chakra execution trace: PREFIX.<gpu>.et\n"
            "                         per GPU and PREFIX.comm_groups.json (ASTRA-sim's groups);\n"
            "                         a directory gets DIR/trace.<gpu>.et (docs/formats.md)\n"
            "  --trace FILE           replay a trace instead of a scenario (needs --topology)\n"
            "  --trace-chakra P       replay a Chakra execution trace: the files P.0.et, P.1.et\n"
            "                         ... or the one such family in directory P (one GPU per\n"
            "                         rank; needs --topology)\n"
            "  --chakra-groups FILE   ASTRA-sim communicator groups for --trace-chakra\n"
            "  --topology FILE        topology for --trace and --trace-chakra\n"
            "  --timeline FILE        also write a Perfetto/Chrome trace of the step (open it in\n"
            "                         ui.perfetto.dev; docs/reports.md)\n"
            "  --timeline-gpus SEL    keep only these GPUs in the timeline, e.g. 0-7,64, and the\n"
            "                         links of their hosts (docs/reports.md)\n"
            "  --steps N              simulate N steps, each with its own jitter draws: mean,\n"
            "                         p50, p99 and max step time (docs/workloads.md, \"Many steps\");\n"
            "                         the breakdown, timeline and trace are step 0's\n"
            "  --jobs J               threads for --steps (default: the online cores)\n"
            "  --no-progress          no progress bar for --steps (drawn on stderr, terminals only)\n"
            "  --links N              list the N most loaded links with what used them (default\n"
            "                         5, 0 for none; docs/workloads.md, \"Diagnostics\")\n"
            "  -h, --help             this help\n");
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
    fprintf(stderr, "\r[%s] %ld/%ld steps", cells, done, total);
    if (done >= total) fprintf(stderr, "\n");
    fflush(stderr);
}

static int usage(const char *msg, const char *arg)
{
    fprintf(stderr, "dtsim run: %s%s%s\n(see dtsim run --help)\n", msg, arg ? ": " : "",
            arg ? arg : "");
    return CLI_USAGE;
}

static void add_dp_json(cJSON *j, const run_result *r)
{
    if (r->backup_workers > 0) {
        cJSON *b = cJSON_AddObjectToObject(j, "backup_workers");
        cJSON_AddNumberToObject(b, "k", r->backup_workers);
        cJSON_AddNumberToObject(b, "dropped_replicas", r->dropped_replicas);
        cJSON_AddNumberToObject(b, "samples_used", r->samples_used);
    }
    if (r->local_sgd > 1) {
        cJSON *b = cJSON_AddObjectToObject(j, "local_sgd");
        cJSON_AddNumberToObject(b, "every", r->local_sgd);
        cJSON_AddNumberToObject(b, "local_step_s", r->local_step_s);
        cJSON_AddNumberToObject(b, "sync_step_s", r->sync_step_s);
    }
    if (r->staleness >= 0) {
        cJSON *b = cJSON_AddObjectToObject(j, "asynchronous");
        cJSON_AddNumberToObject(b, "staleness_bound", r->staleness);
        cJSON_AddNumberToObject(b, "steps", r->async_steps);
        cJSON_AddNumberToObject(b, "staleness_mean", r->staleness_mean);
        cJSON_AddNumberToObject(b, "staleness_max", r->staleness_max);
    }
}

static void add_steps_json(cJSON *j, const run_steps_result *s)
{
    cJSON *o = cJSON_AddObjectToObject(j, "steps");
    cJSON_AddNumberToObject(o, "n", s->n);
    cJSON_AddNumberToObject(o, "mean_s", s->mean_s);
    cJSON_AddNumberToObject(o, "stddev_s", s->stddev_s);
    cJSON_AddNumberToObject(o, "min_s", s->min_s);
    cJSON_AddNumberToObject(o, "p50_s", s->p50_s);
    cJSON_AddNumberToObject(o, "p99_s", s->p99_s);
    cJSON_AddNumberToObject(o, "max_s", s->max_s);
    cJSON_AddNumberToObject(o, "data_stall_mean_s", s->stall_mean_s);
    if (s->dropped_mean > 0) cJSON_AddNumberToObject(o, "dropped_replicas_mean", s->dropped_mean);
    if (s->sync_steps > 0) cJSON_AddNumberToObject(o, "averaging_steps", s->sync_steps);
    if (s->staleness_mean >= 0) {
        cJSON_AddNumberToObject(o, "staleness_mean", s->staleness_mean);
        cJSON_AddNumberToObject(o, "staleness_max", s->staleness_max);
    }
    cJSON *a = cJSON_AddArrayToObject(o, "step_times_s");
    for (int k = 0; k < s->n; k++) cJSON_AddItemToArray(a, cJSON_CreateNumber(s->step_s[k]));
}

/* Expert and context parallel kinds appear only in runs that have them, so a dense run's
 * JSON keeps the keys it always had. */
static bool kind_shown(const run_result *r, int k)
{
    return k < WL_COMM_EP || r->comm_exposed_by_kind_s[k] > 0 ||
           r->comm_inflight_by_kind_s[k] > 0 || r->bytes_sent_per_gpu[k] > 0;
}

static void print_json(const run_result *r, const run_steps_result *steps)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "step_time_s", r->step_time_s);
    cJSON *b = cJSON_AddObjectToObject(j, "breakdown_s");
    cJSON_AddNumberToObject(b, "compute", r->breakdown_s.compute);
    cJSON_AddNumberToObject(b, "comm_exposed", r->breakdown_s.comm_exposed);
    cJSON_AddNumberToObject(b, "bubble", r->breakdown_s.bubble);
    cJSON_AddNumberToObject(b, "straggler_wait", r->breakdown_s.straggler_wait);
    cJSON_AddNumberToObject(b, "data_stall", r->breakdown_s.data_stall);
    /* part of compute, not a sixth share: only where a host floor is set, so that runs without
     * one keep their bytes */
    if (r->host_wait_s > 0) cJSON_AddNumberToObject(j, "host_wait_s", r->host_wait_s);
    cJSON *ek = cJSON_AddObjectToObject(j, "comm_exposed_by_kind_s");
    cJSON *fk = cJSON_AddObjectToObject(j, "comm_in_flight_by_kind_s");
    for (int k = 0; k < WL_COMM_KIND_COUNT; k++) {
        if (!kind_shown(r, k)) continue;
        cJSON_AddNumberToObject(ek, wl_comm_kind_name((wl_comm_kind)k), r->comm_exposed_by_kind_s[k]);
        cJSON_AddNumberToObject(fk, wl_comm_kind_name((wl_comm_kind)k), r->comm_inflight_by_kind_s[k]);
    }
    cJSON_AddNumberToObject(j, "critical_gpu", r->critical_gpu);
    cJSON *w = cJSON_AddObjectToObject(j, "max_straggler_wait");
    cJSON_AddNumberToObject(w, "gpu", r->max_straggler_wait_gpu);
    cJSON_AddNumberToObject(w, "seconds", r->max_straggler_wait_s);
    cJSON *t = cJSON_AddObjectToObject(j, "throughput");
    cJSON_AddNumberToObject(t, "samples_per_s", r->throughput.samples_per_s);
    cJSON_AddNumberToObject(t, "tokens_per_s", r->throughput.tokens_per_s);
    cJSON_AddNumberToObject(t, "tflops_per_gpu", r->throughput.tflops_per_gpu);
    cJSON_AddNumberToObject(t, "mfu", r->throughput.mfu);
    cJSON *m = cJSON_AddObjectToObject(j, "memory_per_gpu_bytes");
    cJSON_AddNumberToObject(m, "params", r->memory.params);
    cJSON_AddNumberToObject(m, "grads", r->memory.grads);
    cJSON_AddNumberToObject(m, "optimizer", r->memory.optimizer);
    cJSON_AddNumberToObject(m, "activations", r->memory.activations);
    cJSON_AddNumberToObject(m, "peak", r->memory.peak);
    if (isfinite(r->memory.capacity)) cJSON_AddNumberToObject(m, "capacity", r->memory.capacity);
    cJSON_AddBoolToObject(j, "fits", r->fits);
    cJSON_AddNumberToObject(j, "gpus", r->n_gpus);
    cJSON_AddNumberToObject(j, "cost_per_step_usd", r->cost_per_step_usd);
    cJSON_AddNumberToObject(j, "cost_per_hour_usd", r->cost_per_hour_total);
    cJSON_AddNumberToObject(j, "peak_flops_total", r->peak_flops_total);
    cJSON *gt = cJSON_AddArrayToObject(j, "gpu_types");
    for (int k = 0; k < r->n_gpu_types; k++) {
        const struct run_gpu_type *ty = &r->gpu_types[k];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", ty->name);
        cJSON_AddNumberToObject(o, "count", ty->count);
        cJSON_AddNumberToObject(o, "peak_flops", ty->peak_flops);
        cJSON_AddNumberToObject(o, "cost_per_hour_usd", ty->cost_per_hour);
        cJSON_AddNumberToObject(o, "hbm_bytes", ty->hbm_bytes);
        cJSON_AddItemToArray(gt, o);
    }
    cJSON *bs = cJSON_AddObjectToObject(j, "bytes_sent_per_gpu");
    cJSON_AddNumberToObject(bs, "total", r->bytes_sent_per_gpu_total);
    for (int k = 0; k < WL_COMM_KIND_COUNT; k++)
        if (kind_shown(r, k))
            cJSON_AddNumberToObject(bs, wl_comm_kind_name((wl_comm_kind)k), r->bytes_sent_per_gpu[k]);
    if (r->links) {
        cJSON_AddNumberToObject(j, "links_loaded", r->links_loaded);
        cJSON *ls = cJSON_AddArrayToObject(j, "links");
        for (int i = 0; i < r->n_links; i++) {
            const run_link_load *x = &r->links[i];
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "link", x->name);
            cJSON_AddNumberToObject(o, "index", x->link);
            cJSON_AddStringToObject(o, "where", x->intra_host ? "host" : "fabric");
            cJSON_AddNumberToObject(o, "bandwidth", x->bandwidth);
            cJSON_AddNumberToObject(o, "bytes", x->bytes);
            cJSON_AddNumberToObject(o, "utilisation", x->utilisation);
            cJSON_AddNumberToObject(o, "busy_s", x->busy_s);
            cJSON_AddNumberToObject(o, "alike", x->alike);
            cJSON *us = cJSON_AddArrayToObject(o, "used_by");
            for (int u = 0; u < x->n_users; u++) {
                cJSON *y = cJSON_CreateObject();
                cJSON_AddStringToObject(y, "op", x->users[u].op);
                cJSON_AddStringToObject(y, "comm", wl_comm_kind_name((wl_comm_kind)x->users[u].kind));
                cJSON_AddNumberToObject(y, "bytes", x->users[u].bytes);
                cJSON_AddItemToArray(us, y);
            }
            cJSON_AddItemToArray(ls, o);
        }
    }
    cJSON_AddNumberToObject(j, "events", (double)r->events);
    char seed[24]; /* as an exact integer: a double would round seeds above 2^53 */
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)r->seed);
    cJSON_AddRawToObject(j, "seed", seed);
    add_dp_json(j, r);
    if (steps) add_steps_json(j, steps);
    if (r->has_input) {
        cJSON *in = cJSON_AddObjectToObject(j, "input");
        cJSON_AddNumberToObject(in, "read_s", r->input_read_s);
        cJSON_AddNumberToObject(in, "prefetch", r->input_prefetch);
    }
    if (r->calibration_note[0]) cJSON_AddStringToObject(j, "calibration", r->calibration_note);
    cJSON_AddNumberToObject(j, "wall_s", r->wall_s);
    char *s = cJSON_Print(j);
    printf("%s\n", s);
    free(s);
    cJSON_Delete(j);
}

/* 5087 -> "5.09 k", 5209177 -> "5.21 M" */
static const char *fmt_si(double x, char *buf, size_t n)
{
    static const char *const pre[] = {"", " k", " M", " G", " T", " P"};
    int i = 0;
    while (x >= 1000 && i < 5) {
        x /= 1000;
        i++;
    }
    snprintf(buf, n, "%.3g%s", x, pre[i]);
    return buf;
}

static void row_time(const char *label, double s, double total)
{
    char buf[32];
    printf("  %-16s %12s", label, s == 0 ? "0 s" : unit_fmt_seconds(s, buf, sizeof buf));
    if (total > 0) printf("  %5.1f%%", 100 * s / total);
    printf("\n");
}

static void row_size(const char *label, double b)
{
    char buf[32];
    printf("  %-16s %12s\n", label, unit_fmt_size(b, buf, sizeof buf));
}

/* The most loaded links as a table; links loaded alike are one row ("(+N alike)"). */
static void print_links(const run_result *r)
{
    if (r->n_links <= 0) return;
    printf("\nmost loaded links (of %d that carried traffic; util = bytes / bandwidth / step)\n",
           r->links_loaded);
    char(*nm)[128] = calloc((size_t)r->n_links, sizeof *nm);
    if (!nm) return;
    int w = 4;
    for (int i = 0; i < r->n_links; i++) {
        const run_link_load *x = &r->links[i];
        if (x->alike) snprintf(nm[i], sizeof nm[i], "%s (+%d alike)", x->name, x->alike);
        else snprintf(nm[i], sizeof nm[i], "%s", x->name);
        if ((int)strlen(nm[i]) > w) w = (int)strlen(nm[i]);
    }
    printf("  %-*s %11s %11s %6s %10s  %-6s %s\n", w, "link", "bandwidth", "bytes", "util", "busy",
           "where", "used by");
    for (int i = 0; i < r->n_links; i++) {
        const run_link_load *x = &r->links[i];
        char b1[32], b2[32], b3[32];
        printf("  %-*s %11s %11s %5.1f%% %10s  %-6s ", w, nm[i],
               unit_fmt_bandwidth(x->bandwidth, b1, sizeof b1), unit_fmt_size(x->bytes, b2, sizeof b2),
               100 * x->utilisation, x->busy_s > 0 ? unit_fmt_seconds(x->busy_s, b3, sizeof b3) : "-",
               x->intra_host ? "host" : "fabric");
        for (int u = 0; u < x->n_users; u++)
            printf("%s%s %s (%s)", u ? ", " : "", x->users[u].op,
                   unit_fmt_size(x->users[u].bytes, b1, sizeof b1),
                   wl_comm_kind_abbrev((wl_comm_kind)x->users[u].kind));
        printf("\n");
    }
    free(nm);
}

static void print_steps(const run_result *r, const run_steps_result *s)
{
    char a[32], b[32], c[32], d[32], e[32];
    printf("\n%d steps (each with its own jitter draws; the breakdown above is step 0's)\n", s->n);
    printf("  %-16s %12s  p50 %s  p99 %s  max %s\n", "step time, mean",
           unit_fmt_seconds(s->mean_s, a, sizeof a), unit_fmt_seconds(s->p50_s, b, sizeof b),
           unit_fmt_seconds(s->p99_s, c, sizeof c), unit_fmt_seconds(s->max_s, d, sizeof d));
    printf("  %-16s %12s  min %s\n", "stddev", unit_fmt_seconds(s->stddev_s, a, sizeof a),
           unit_fmt_seconds(s->min_s, e, sizeof e));
    if (r->has_input)
        printf("  %-16s %12s per step on average\n", "data stall", unit_fmt_seconds(s->stall_mean_s, a, sizeof a));
    if (r->backup_workers > 0)
        printf("  %-16s %12.3g replicas per step dropped (their gradients discarded)\n",
               "backup workers", s->dropped_mean);
    if (s->sync_steps > 0)
        printf("  %-16s %12d of %d steps averaged the replicas (local SGD every %d)\n", "averaging",
               s->sync_steps, s->n, r->local_sgd);
    if (s->staleness_mean >= 0)
        printf("  %-16s %12.3g steps on average, %g at worst (bound %d)\n", "staleness",
               s->staleness_mean, s->staleness_max, r->staleness);
}

static void print_dp(const run_result *r)
{
    char a[32], b[32];
    if (r->backup_workers > 0)
        printf("  backup workers: %d of dp dropped this step, the update used %.4g samples\n",
               r->dropped_replicas, r->samples_used);
    if (r->local_sgd > 1 && r->sync_step_s > 0)
        printf("  local SGD: %d - 1 local steps of %s and one averaging step of %s; the step time "
               "is their mean\n", r->local_sgd, unit_fmt_seconds(r->local_step_s, a, sizeof a),
               unit_fmt_seconds(r->sync_step_s, b, sizeof b));
    if (r->staleness >= 0)
        printf("  asynchronous replicas (staleness bound %d): mean period over %d steps; reads "
               "%.3g steps stale on average, %g at worst\n", r->staleness, r->async_steps,
               r->staleness_mean, r->staleness_max);
}

static void print_human(const char *what, const run_result *r, const run_steps_result *steps)
{
    char buf[64];
    double T = r->step_time_s;
    printf("%s: %d GPUs, %s\n", what, r->n_gpus, steps ? "many training steps" : "one training step");
    if (r->summary[0]) printf("  %s\n", r->summary);
    printf("\n");
    printf("  %-16s %12s\n", "step time", unit_fmt_seconds(T, buf, sizeof buf));
    printf("\nbreakdown (critical GPU %d: the one that finishes last)\n", r->critical_gpu);
    row_time("compute", r->breakdown_s.compute, T);
    if (r->host_wait_s > 0)
        printf("  %-16s %12s  %5.1f%%  of it the GPU waiting for the host's dispatch\n", "  host wait",
               unit_fmt_seconds(r->host_wait_s, buf, sizeof buf), T > 0 ? 100 * r->host_wait_s / T : 0.0);
    row_time("comm exposed", r->breakdown_s.comm_exposed, T);
    for (int k = 0; k < WL_COMM_KIND_COUNT; k++) {
        double x = r->comm_exposed_by_kind_s[k], f = r->comm_inflight_by_kind_s[k];
        if (x == 0 && f == 0) continue;
        char lb[40], fb[32];
        snprintf(lb, sizeof lb, "  %s", wl_comm_kind_abbrev((wl_comm_kind)k));
        printf("  %-16s %12s  %5.1f%%  %s, in flight %s\n", lb,
               x == 0 ? "0 s" : unit_fmt_seconds(x, buf, sizeof buf), T > 0 ? 100 * x / T : 0.0,
               wl_comm_kind_label((wl_comm_kind)k),
               f == 0 ? "0 s" : unit_fmt_seconds(f, fb, sizeof fb));
    }
    row_time("pipeline bubble", r->breakdown_s.bubble, T);
    row_time("straggler wait", r->breakdown_s.straggler_wait, T);
    if (r->has_input) row_time("data stall", r->breakdown_s.data_stall, T);
    if (r->max_straggler_wait_s > r->breakdown_s.straggler_wait)
        printf("  %-16s %12s  (GPU %d: longest wait for late peers)\n", "worst wait",
               unit_fmt_seconds(r->max_straggler_wait_s, buf, sizeof buf),
               r->max_straggler_wait_gpu);
    printf("  ");
    rep_breakdown_bar(r, 40, stdout);
    if (r->has_input)
        printf("  input: a step's samples take %s to read, prefetch %d batch%s\n",
               unit_fmt_seconds(r->input_read_s, buf, sizeof buf), r->input_prefetch,
               r->input_prefetch == 1 ? "" : "es");
    printf("\nthroughput\n");
    printf("  %-16s %12s samples/s\n", "samples", fmt_si(r->throughput.samples_per_s, buf, 32));
    if (r->throughput.tokens_per_s > 0)
        printf("  %-16s %12s tokens/s\n", "tokens", fmt_si(r->throughput.tokens_per_s, buf, 32));
    if (r->throughput.tflops_per_gpu > 0) {
        printf("  %-16s %12.1f TFLOP/s\n", "per GPU", r->throughput.tflops_per_gpu);
        printf("  %-16s %11.1f %%%s\n", "MFU", 100 * r->throughput.mfu,
               r->n_gpu_types > 1 ? "  (model FLOP/s over the summed peaks of every GPU)" : "");
    }
    if (r->n_gpu_types > 1) {
        /* a mixed cluster: each type's own figures, and what the even share of work one GPU
         * does is of its own peak */
        printf("\nGPUs by type       count   peak/GPU      USD/h/GPU   its MFU\n");
        for (int k = 0; k < r->n_gpu_types; k++) {
            const struct run_gpu_type *ty = &r->gpu_types[k];
            printf("  %-16s %5d %8.1f TFLOP/s %10.2f %8.1f %%\n", ty->name, ty->count,
                   ty->peak_flops / 1e12, ty->cost_per_hour,
                   ty->peak_flops > 0 ? 100 * r->throughput.tflops_per_gpu * 1e12 / ty->peak_flops : 0.0);
        }
        printf("  %-16s %5d %8.1f TFLOP/s %10.2f\n", "all", r->n_gpus, r->peak_flops_total / 1e12,
               r->cost_per_hour_total);
    }
    printf("\nmemory per GPU (most loaded)\n");
    row_size("parameters", r->memory.params);
    row_size("gradients", r->memory.grads);
    row_size("optimizer", r->memory.optimizer);
    row_size("activations", r->memory.activations);
    row_size("peak", r->memory.peak);
    if (isfinite(r->memory.capacity)) row_size("capacity", r->memory.capacity);
    if (!r->fits)
        printf("\n  *** DOES NOT FIT: peak %s exceeds the GPU's %s ***\n",
               unit_fmt_size(r->memory.peak, buf, 32),
               unit_fmt_size(r->memory.capacity, buf + 32, 32));
    if (r->cost_per_step_usd > 0) printf("\n  %-16s %12.4f USD\n", "cost per step", r->cost_per_step_usd);
    printf("\ntraffic (bytes each GPU sends per step, mean over GPUs)\n");
    row_size("total", r->bytes_sent_per_gpu_total);
    for (int k = 0; k < WL_COMM_KIND_COUNT; k++)
        if (r->bytes_sent_per_gpu[k] > 0) {
            char lb[40];
            snprintf(lb, sizeof lb, "  %s", wl_comm_kind_abbrev((wl_comm_kind)k));
            row_size(lb, r->bytes_sent_per_gpu[k]);
        }
    print_links(r);
    if (r->calibration_note[0]) printf("  %s\n", r->calibration_note);
    print_dp(r);
    if (steps) print_steps(r, steps);
    printf("\n  %llu events, %.3f s wall, seed %llu\n", (unsigned long long)r->events, r->wall_s,
           (unsigned long long)r->seed);
}

/* Files written from the step's op graph through run_options.on_graph, committed together
 * once the step has simulated (a failed run leaves none). */
typedef struct graph_out {
    const char *chakra;      /* --write-chakra */
    const char *trace;       /* --write-trace of a replayed trace */
    cli_outfile *files;
    int n_files;
} graph_out;

static cli_outfile *new_file(graph_out *o)
{
    o->files = dt_xrealloc(o->files, (size_t)(o->n_files + 1) * sizeof *o->files);
    cli_outfile *f = &o->files[o->n_files++];
    memset(f, 0, sizeof *f);
    return f;
}

static int write_graph(void *ctx, const wl_graph *g, const trace_env *env, const topo *t, dt_error *err)
{
    graph_out *o = ctx;
    int rc = DT_OK;
    if (o->trace) {
        cli_outfile *f = new_file(o);
        rc = cli_outfile_open(f, o->trace, err);
        if (rc == DT_OK) rc = trace_write(f->f, g, env, err);
        if (rc == DT_OK) rc = cli_outfile_close(f, err);
    }
    if (rc == DT_OK && o->chakra) {
        chakra_export *x = NULL;
        rc = chakra_export_create(g, env, t->gpus, &x, err);
        if (rc == DT_EINPUT && !err->file[0]) snprintf(err->file, sizeof err->file, "%.500s", o->chakra);
        /* PREFIX, or DIR/trace when it names a directory */
        char prefix[4096];
        struct stat st;
        size_t pl = strlen(o->chakra);
        if ((pl && o->chakra[pl - 1] == '/') || (stat(o->chakra, &st) == 0 && S_ISDIR(st.st_mode)))
            snprintf(prefix, sizeof prefix, "%s%strace", o->chakra, pl && o->chakra[pl - 1] == '/' ? "" : "/");
        else
            snprintf(prefix, sizeof prefix, "%s", o->chakra);
        char path[4200];
        for (int r = 0; rc == DT_OK && r < chakra_export_ranks(x); r++) {
            cli_outfile *f = new_file(o);
            snprintf(path, sizeof path, "%s.%d.et", prefix, r);
            rc = cli_outfile_open(f, path, err);
            if (rc == DT_OK) rc = chakra_export_write_rank(x, r, f->f, err);
            if (rc == DT_OK) rc = cli_outfile_close(f, err);
            else if (!err->file[0]) snprintf(err->file, sizeof err->file, "%.500s", path);
        }
        if (rc == DT_OK) {
            cli_outfile *f = new_file(o);
            snprintf(path, sizeof path, "%s.comm_groups.json", prefix);
            rc = cli_outfile_open(f, path, err);
            if (rc == DT_OK) rc = chakra_export_write_groups(x, f->f, err);
            if (rc == DT_OK) rc = cli_outfile_close(f, err);
        }
        chakra_export_destroy(x);
    }
    return rc;
}

static void finish_graph_out(graph_out *o, bool commit, dt_error *err, int *rc)
{
    for (int i = 0; i < o->n_files; i++) {
        if (commit && *rc == DT_OK) *rc = cli_outfile_commit(&o->files[i], err);
        else cli_outfile_abort(&o->files[i]);
    }
    free(o->files);
    o->files = NULL;
    o->n_files = 0;
}

static void print_warning(void *ctx, const dt_error *w)
{
    (void)ctx;
    char buf[DT_ERR_FILE_MAX + DT_ERR_PATH_MAX + DT_ERR_MSG_MAX + 64];
    fprintf(stderr, "dtsim: warning: %s\n", dt_error_format(w, buf, sizeof buf));
}

static int run(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) {
        help(stdout);
        return CLI_OK;
    }
    run_options opt = {.links = 5};
    const char *scenario = NULL, *trace = NULL, *topology = NULL, *chakra = NULL;
    graph_out gout = {0};
    bool json = false, progress = true;
    long n_steps = 0, jobs = sysconf(_SC_NPROCESSORS_ONLN);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_val = i + 1 < argc;
        if (!strcmp(a, "--json")) json = true;
        else if (!strcmp(a, "--seed")) {
            if (!has_val) return usage("--seed needs a value", NULL);
            char *e;
            errno = 0; /* strtoull saturates at 2^64 - 1 with ERANGE: refuse, do not clamp */
            unsigned long long v = strtoull(argv[++i], &e, 10);
            if (*e || errno == ERANGE || argv[i][0] == '-' || !argv[i][0])
                return usage("--seed expects a non-negative integer below 2^64", argv[i]);
            opt.have_seed = true;
            opt.seed = v;
        } else if (!strcmp(a, "--network")) {
            if (!has_val) return usage("--network needs flow or analytic", NULL);
            const char *v = argv[++i];
            opt.have_network = true;
            if (!strcmp(v, "flow")) opt.network = NET_FLOW;
            else if (!strcmp(v, "analytic")) opt.network = NET_ANALYTIC;
            else return usage("--network expects flow or analytic", v);
        } else if (!strcmp(a, "--write-trace")) {
            if (!has_val) return usage("--write-trace needs a file name", NULL);
            opt.write_trace = argv[++i];
        } else if (!strcmp(a, "--trace")) {
            if (!has_val) return usage("--trace needs a file name", NULL);
            trace = argv[++i];
        } else if (!strcmp(a, "--trace-chakra")) {
            if (!has_val) return usage("--trace-chakra needs a directory or a file prefix", NULL);
            chakra = argv[++i];
        } else if (!strcmp(a, "--chakra-groups")) {
            if (!has_val) return usage("--chakra-groups needs a file name", NULL);
            opt.chakra_groups = argv[++i];
        } else if (!strcmp(a, "--write-chakra")) {
            if (!has_val) return usage("--write-chakra needs a file prefix or a directory", NULL);
            gout.chakra = argv[++i];
        } else if (!strcmp(a, "--timeline")) {
            if (!has_val) return usage("--timeline needs a file name", NULL);
            opt.timeline = argv[++i];
            opt.record_timeline = true;
        } else if (!strcmp(a, "--timeline-gpus")) {
            if (!has_val) return usage("--timeline-gpus needs GPU ids such as 0-7,64", NULL);
            opt.timeline_gpus = argv[++i];
        } else if (!strcmp(a, "--steps") || !strcmp(a, "--jobs")) {
            if (!has_val) return usage("needs a count", a);
            char *e;
            long v = strtol(argv[++i], &e, 10);
            long max = !strcmp(a, "--steps") ? 1000000 : 1024;
            if (*e || !argv[i][0] || v < 1 || v > max)
                return usage(!strcmp(a, "--steps") ? "--steps expects 1 to 1000000"
                                                   : "--jobs expects 1 to 1024", argv[i]);
            if (!strcmp(a, "--steps")) n_steps = v;
            else jobs = v;
        } else if (!strcmp(a, "--no-progress")) {
            progress = false;
        } else if (!strcmp(a, "--links")) {
            if (!has_val) return usage("--links needs a count", NULL);
            char *e;
            long v = strtol(argv[++i], &e, 10);
            if (*e || !argv[i][0] || v < 0 || v > 100000)
                return usage("--links expects a count from 0 to 100000", argv[i]);
            opt.links = (int)v;
        } else if (!strcmp(a, "--topology")) {
            if (!has_val) return usage("--topology needs a file name", NULL);
            topology = argv[++i];
        } else if (a[0] == '-' && a[1]) {
            return usage("unknown option", a);
        } else if (!scenario) {
            scenario = a;
        } else {
            return usage("more than one scenario", a);
        }
    }
    if ((trace != NULL) + (chakra != NULL) + (scenario != NULL) > 1)
        return usage("give one of a scenario, --trace and --trace-chakra", NULL);
    if ((trace || chakra) && !topology) return usage(trace ? "--trace needs --topology" : "--trace-chakra needs --topology", NULL);
    if (!trace && !chakra && topology) return usage("--topology goes with --trace or --trace-chakra", NULL);
    if (!trace && !chakra && !scenario) return usage("missing the scenario file", NULL);
    if (opt.chakra_groups && !chakra) return usage("--chakra-groups goes with --trace-chakra", NULL);
    /* every run writes its graph through on_graph, so the trace goes through cli/output.c
     * like the command's other outputs (the library's own writer renames as it goes) */
    gout.trace = opt.write_trace;
    opt.write_trace = NULL;
    if (gout.trace || gout.chakra) {
        opt.on_graph = write_graph;
        opt.on_graph_ctx = &gout;
    }
    opt.warn = print_warning;
    if (opt.timeline_gpus && !opt.timeline) return usage("--timeline-gpus goes with --timeline", NULL);
    if ((trace || chakra) && n_steps) return usage("--steps needs a scenario", NULL);
    if (n_steps && gout.chakra) return usage("--write-chakra writes one step: leave out --steps", NULL);
    run_result r;
    run_steps_result steps = {0};
    dt_error err;
    dt_error_clear(&err);
    bar b = {.on = progress && !json && isatty(STDERR_FILENO) && n_steps > 1, .last = -1};
    int rc = trace    ? run_trace_file(trace, topology, &opt, &r, &err)
             : chakra ? run_chakra(chakra, topology, &opt, &r, &err)
             : n_steps ? run_scenario_steps_file(scenario, &opt, (int)n_steps, (int)jobs, draw, &b,
                                                 &r, &steps, &err)
                       : run_scenario_file(scenario, &opt, &r, &err);
    finish_graph_out(&gout, rc == DT_OK, &err, &rc);
    if (rc != DT_OK) {
        run_result_free(&r);
        return cli_report_error(&err);
    }
    if (opt.timeline && r.timeline) {
        cli_outfile of = {0};
        bool *mask = NULL;
        rc = rep_gpu_select_parse(opt.timeline_gpus, r.timeline->n_gpus, "--timeline-gpus", &mask,
                                  &err);
        rep_timeline_options to = {.gpus = mask, .links = true,
                                   .step_end = (sim_time_t)llround(r.step_time_s * 1e12),
                                   .scenario = r.name[0] ? r.name : trace ? trace : scenario};
        if (!rc) rc = cli_outfile_open(&of, opt.timeline, &err);
        if (!rc) rc = rep_timeline_write(r.timeline, &to, of.f, &err);
        if (!rc) rc = cli_outfile_commit(&of, &err);
        else if (of.f) cli_outfile_abort(&of);
        free(mask);
        if (rc) {
            run_result_free(&r);
            return cli_report_error(&err);
        }
    }
    if (json) print_json(&r, n_steps ? &steps : NULL);
    else print_human(trace ? trace : chakra ? chakra : scenario, &r, n_steps ? &steps : NULL);
    if (!r.fits) fprintf(stderr, "dtsim run: warning: the plan does not fit in GPU memory\n");
    run_result_free(&r);
    run_steps_result_free(&steps);
    return CLI_OK;
}

const cli_command cmd_run = {.name = "run", .summary = "Simulate one training step of a scenario", .run = run, .help = help};
