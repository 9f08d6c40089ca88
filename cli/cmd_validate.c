/* cmd_validate.c - `dtsim validate`: re-simulate the published runs of the validation suite and
 * print how far each prediction is from the measurement (validate.h, docs/validation.md). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dtsim/validate.h"

static void help(FILE *out)
{
    fprintf(out,
            "usage: dtsim validate [DIR] [--case ID]... [--json] [--threads N]\n"
            "                      [--max-median PCT] [--max-worst PCT]\n"
            "\n"
            "Run the validation suite in DIR (default tests/validation): every case of\n"
            "DIR/manifest.json is a published training run (scenario + measured step time or\n"
            "model TFLOP/s per GPU) or an nccl-tests measurement (collective + bus bandwidth).\n"
            "Prints measured, predicted and the error per case, sign + when dtsim is optimistic\n"
            "(predicts more throughput than was measured), and median / mean / worst |error|.\n"
            "\n"
            "options:\n"
            "  --case ID          run only this case (repeatable)\n"
            "  --json             one JSON document on stdout (`dtsim report` draws its parity\n"
            "                     plot: save it as a .json file)\n"
            "  --threads N        cases run N at a time (default: one per core)\n"
            "  --max-median PCT   exit 1 when the median |error| exceeds PCT percent\n"
            "  --max-worst PCT    exit 1 when a case's |error| exceeds PCT, or a case fails\n"
            "  -h, --help         this help\n"
            "\n"
            "The suite, its sources and assumptions, and the table as it came out: docs/validation.md.\n");
}

static int usage(const char *msg, const char *arg)
{
    fprintf(stderr, "dtsim validate: %s%s%s\n(see dtsim validate --help)\n", msg, arg ? ": " : "",
            arg ? arg : "");
    return CLI_USAGE;
}

/* Measured/predicted in the metric's display unit. */
static double shown(val_metric m, double v)
{
    switch (m) {
    case VAL_TFLOPS: return v / 1e12;
    case VAL_BUSBW: return v / 1e9;
    default: return v;
    }
}

static void print_json(const char *dir, const val_results *r)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "format", "dtsim-validation-results");
    cJSON_AddNumberToObject(j, "version", 1);
    cJSON_AddStringToObject(j, "suite", dir);
    cJSON *cs = cJSON_AddArrayToObject(j, "cases");
    for (int i = 0; i < r->n; i++) {
        const val_case *c = &r->cases[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "id", c->id);
        cJSON_AddStringToObject(o, "metric", val_metric_name(c->metric));
        cJSON_AddStringToObject(o, "unit", val_metric_unit(c->metric));
        cJSON_AddNumberToObject(o, "measured", shown(c->metric, c->measured));
        cJSON_AddStringToObject(o, "status", c->ok ? "ok" : "failed");
        if (c->ok) {
            cJSON_AddNumberToObject(o, "predicted", shown(c->metric, c->predicted));
            cJSON_AddNumberToObject(o, "error", c->error);
        } else {
            cJSON_AddStringToObject(o, "message", c->message);
        }
        if (c->ok && c->file) {
            const run_result *rr = &c->run;
            cJSON_AddNumberToObject(o, "step_time_s", rr->step_time_s);
            cJSON_AddNumberToObject(o, "tflops_per_gpu", rr->throughput.tflops_per_gpu);
            cJSON_AddNumberToObject(o, "mfu", rr->throughput.mfu);
            cJSON_AddNumberToObject(o, "gpus", rr->n_gpus);
            cJSON *b = cJSON_AddObjectToObject(o, "breakdown_s");
            cJSON_AddNumberToObject(b, "compute", rr->breakdown_s.compute);
            cJSON_AddNumberToObject(b, "comm_exposed", rr->breakdown_s.comm_exposed);
            cJSON_AddNumberToObject(b, "bubble", rr->breakdown_s.bubble);
            cJSON_AddNumberToObject(b, "straggler_wait", rr->breakdown_s.straggler_wait);
            cJSON_AddNumberToObject(o, "memory_peak_bytes", rr->memory.peak);
            if (isfinite(rr->memory.capacity))
                cJSON_AddNumberToObject(o, "memory_capacity_bytes", rr->memory.capacity);
            cJSON_AddBoolToObject(o, "fits", rr->fits);
        }
        if (c->ok && !c->file) {
            cJSON_AddStringToObject(o, "algo", c->algo);
            cJSON_AddNumberToObject(o, "sizes", c->n_sizes);
            cJSON_AddNumberToObject(o, "busbw_min_GBps", c->busbw_min / 1e9);
            cJSON_AddNumberToObject(o, "busbw_max_GBps", c->busbw_max / 1e9);
        }
        if (c->file) cJSON_AddStringToObject(o, "scenario", c->file);
        cJSON_AddStringToObject(o, "source", c->source);
        cJSON *as = cJSON_AddArrayToObject(o, "assumptions");
        for (int k = 0; k < c->n_assumptions; k++)
            cJSON_AddItemToArray(as, cJSON_CreateString(c->assumptions[k]));
        cJSON_AddItemToArray(cs, o);
    }
    cJSON *s = cJSON_AddObjectToObject(j, "summary");
    cJSON_AddNumberToObject(s, "cases", r->n);
    cJSON_AddNumberToObject(s, "ran", r->n_ok);
    cJSON_AddNumberToObject(s, "median_abs_error", r->median_abs);
    cJSON_AddNumberToObject(s, "mean_abs_error", r->mean_abs);
    cJSON_AddNumberToObject(s, "worst_abs_error", r->worst_abs);
    if (r->worst >= 0) cJSON_AddStringToObject(s, "worst_case", r->cases[r->worst].id);
    char *txt = cJSON_Print(j);
    printf("%s\n", txt);
    free(txt);
    cJSON_Delete(j);
}

static void print_human(const char *dir, const val_results *r)
{
    printf("dtsim validate: %d cases from %s/manifest.json (error: + = dtsim optimistic)\n\n", r->n,
           dir);
    printf("%-24s %-15s %10s %10s %8s  %s\n", "case", "metric", "measured", "predicted", "error",
           "breakdown");
    for (int i = 0; i < r->n; i++) {
        const val_case *c = &r->cases[i];
        char metric[32];
        snprintf(metric, sizeof metric, "%s", c->metric == VAL_STEP_TIME ? "step time s"
                                              : c->metric == VAL_TFLOPS  ? "TFLOP/s per GPU"
                                                                         : "busbw GB/s");
        printf("%-24s %-15s %10.4g ", c->id, metric, shown(c->metric, c->measured));
        if (!c->ok) {
            printf("%10s %8s  %s\n", "-", "FAILED", c->message);
            continue;
        }
        printf("%10.4g %+7.1f%%  ", shown(c->metric, c->predicted), 100 * c->error);
        if (c->file) {
            const run_result *rr = &c->run;
            double T = rr->step_time_s > 0 ? rr->step_time_s : 1;
            printf("compute %4.1f%% comm %4.1f%% bubble %4.1f%%%s", 100 * rr->breakdown_s.compute / T,
                   100 * rr->breakdown_s.comm_exposed / T, 100 * rr->breakdown_s.bubble / T,
                   rr->fits ? "" : "  DOES NOT FIT");
        } else {
            printf("%s, %d sizes, %.4g-%.4g GB/s", c->algo, c->n_sizes, c->busbw_min / 1e9,
                   c->busbw_max / 1e9);
        }
        printf("\n");
    }
    printf("\n%d of %d cases ran; |error|: median %.1f %%, mean %.1f %%, worst %.1f %%", r->n_ok,
           r->n, 100 * r->median_abs, 100 * r->mean_abs, 100 * r->worst_abs);
    if (r->worst >= 0) printf(" (%s)", r->cases[r->worst].id);
    printf("\n");
}

static int parse_pct(const char *s, double *out)
{
    char *e;
    double v = strtod(s, &e);
    if (e == s || *e || !(v >= 0) || !isfinite(v)) return -1;
    *out = v / 100;
    return 0;
}

static int run(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) {
        help(stdout);
        return CLI_OK;
    }
    const char *dir = NULL;
    bool json = false;
    double max_median = -1, max_worst = -1;
    const char **only = dt_xcalloc((size_t)argc + 1, sizeof *only);
    int n_only = 0, threads = 0, rc = CLI_OK;
    for (int i = 1; i < argc && rc == CLI_OK; i++) {
        const char *a = argv[i];
        bool has_val = i + 1 < argc;
        if (!strcmp(a, "--json")) json = true;
        else if (!strcmp(a, "--case")) {
            if (!has_val) rc = usage("--case needs a case id", NULL);
            else only[n_only++] = argv[++i];
        } else if (!strcmp(a, "--threads")) {
            char *e = NULL;
            long v = has_val ? strtol(argv[i + 1], &e, 10) : 0;
            if (!has_val || *e || v < 1 || v > 1024) rc = usage("--threads expects 1 to 1024", has_val ? argv[i + 1] : NULL);
            else threads = (int)v, i++;
        } else if (!strcmp(a, "--max-median") || !strcmp(a, "--max-worst")) {
            double *dst = a[6] == 'm' ? &max_median : &max_worst;
            if (!has_val || parse_pct(argv[i + 1], dst))
                rc = usage("expects a percentage such as 8", a);
            else i++;
        } else if (a[0] == '-' && a[1]) {
            rc = usage("unknown option", a);
        } else if (!dir) {
            dir = a;
        } else {
            rc = usage("more than one suite directory", a);
        }
    }
    if (rc != CLI_OK) {
        free(only);
        return rc;
    }
    if (!dir) dir = "tests/validation";
    val_options opt = {.only = only, .n_only = n_only, .threads = threads};
    val_results r;
    dt_error err;
    dt_error_clear(&err);
    int st = val_run(dir, &opt, &r, &err);
    free(only);
    if (st != DT_OK) return cli_report_error(&err);
    if (json) print_json(dir, &r);
    else print_human(dir, &r);
    rc = CLI_OK;
    if (max_median >= 0 && r.median_abs > max_median) {
        fprintf(stderr, "dtsim validate: median |error| %.1f %% exceeds the bound %.1f %%\n",
                100 * r.median_abs, 100 * max_median);
        rc = CLI_FAIL;
    }
    if (max_worst >= 0) {
        for (int i = 0; i < r.n; i++) {
            const val_case *c = &r.cases[i];
            if (!c->ok) {
                fprintf(stderr, "dtsim validate: case %s failed: %s\n", c->id, c->message);
                rc = CLI_FAIL;
            } else if (fabs(c->error) > max_worst) {
                fprintf(stderr, "dtsim validate: case %s |error| %.1f %% exceeds the bound %.1f %%\n",
                        c->id, 100 * fabs(c->error), 100 * max_worst);
                rc = CLI_FAIL;
            }
        }
    }
    val_results_free(&r);
    return rc;
}

const cli_command cmd_validate = {"validate", "re-simulate published training runs: predicted vs measured",
                                  run, help};
