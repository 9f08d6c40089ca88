/* cmd_run.c - `dtsim run`: simulate one training step of a scenario (or replay a trace). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
            "  -h, --help             this help\n");
}

static int usage(const char *msg, const char *arg)
{
    fprintf(stderr, "dtsim run: %s%s%s\n(see dtsim run --help)\n", msg, arg ? ": " : "",
            arg ? arg : "");
    return CLI_USAGE;
}

static void print_json(const run_result *r)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "step_time_s", r->step_time_s);
    cJSON *b = cJSON_AddObjectToObject(j, "breakdown_s");
    cJSON_AddNumberToObject(b, "compute", r->breakdown_s.compute);
    cJSON_AddNumberToObject(b, "comm_exposed", r->breakdown_s.comm_exposed);
    cJSON_AddNumberToObject(b, "bubble", r->breakdown_s.bubble);
    cJSON_AddNumberToObject(b, "straggler_wait", r->breakdown_s.straggler_wait);
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
    cJSON_AddNumberToObject(j, "events", (double)r->events);
    cJSON_AddNumberToObject(j, "seed", (double)r->seed);
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

static void print_human(const char *what, const run_result *r)
{
    char buf[64];
    double T = r->step_time_s;
    printf("%s: %d GPUs, one training step\n", what, r->n_gpus);
    if (r->summary[0]) printf("  %s\n", r->summary);
    printf("\n");
    printf("  %-16s %12s\n", "step time", unit_fmt_seconds(T, buf, sizeof buf));
    printf("\nbreakdown (critical GPU %d: the one that finishes last)\n", r->critical_gpu);
    row_time("compute", r->breakdown_s.compute, T);
    row_time("comm exposed", r->breakdown_s.comm_exposed, T);
    row_time("pipeline bubble", r->breakdown_s.bubble, T);
    row_time("straggler wait", r->breakdown_s.straggler_wait, T);
    if (r->max_straggler_wait_s > r->breakdown_s.straggler_wait)
        printf("  %-16s %12s  (GPU %d: longest wait for late peers)\n", "worst wait",
               unit_fmt_seconds(r->max_straggler_wait_s, buf, sizeof buf),
               r->max_straggler_wait_gpu);
    printf("  ");
    rep_breakdown_bar(r, 40, stdout);
    printf("\nthroughput\n");
    printf("  %-16s %12s samples/s\n", "samples", fmt_si(r->throughput.samples_per_s, buf, 32));
    if (r->throughput.tokens_per_s > 0)
        printf("  %-16s %12s tokens/s\n", "tokens", fmt_si(r->throughput.tokens_per_s, buf, 32));
    if (r->throughput.tflops_per_gpu > 0) {
        printf("  %-16s %12.1f TFLOP/s\n", "per GPU", r->throughput.tflops_per_gpu);
        printf("  %-16s %11.1f %%\n", "MFU", 100 * r->throughput.mfu);
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
    if (r->calibration_note[0]) printf("  %s\n", r->calibration_note);
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
    run_options opt = {0};
    const char *scenario = NULL, *trace = NULL, *topology = NULL, *chakra = NULL;
    graph_out gout = {0};
    bool json = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_val = i + 1 < argc;
        if (!strcmp(a, "--json")) json = true;
        else if (!strcmp(a, "--seed")) {
            if (!has_val) return usage("--seed needs a value", NULL);
            char *e;
            unsigned long long v = strtoull(argv[++i], &e, 10);
            if (*e || argv[i][0] == '-' || !argv[i][0]) return usage("--seed expects a non-negative integer", argv[i]);
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
    if (trace || chakra) { /* the replays write their graph through on_graph */
        gout.trace = opt.write_trace;
        opt.write_trace = NULL;
    }
    if (gout.trace || gout.chakra) {
        opt.on_graph = write_graph;
        opt.on_graph_ctx = &gout;
    }
    opt.warn = print_warning;
    if (opt.timeline_gpus && !opt.timeline) return usage("--timeline-gpus goes with --timeline", NULL);
    run_result r;
    dt_error err;
    dt_error_clear(&err);
    int rc = trace    ? run_trace_file(trace, topology, &opt, &r, &err)
             : chakra ? run_chakra(chakra, topology, &opt, &r, &err)
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
                                   .step_end = (sim_time_t)llround(r.step_time_s * 1e12)};
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
    if (json) print_json(&r);
    else print_human(trace ? trace : chakra ? chakra : scenario, &r);
    if (!r.fits) fprintf(stderr, "dtsim run: warning: the plan does not fit in GPU memory\n");
    run_result_free(&r);
    return CLI_OK;
}

const cli_command cmd_run = {.name = "run", .summary = "Simulate one training step of a scenario", .run = run, .help = help};
