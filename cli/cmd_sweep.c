/* cmd_sweep.c - `dtsim sweep`: run a scenario over a grid of what-if axes. */
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "dtsim/json.h"
#include "dtsim/sweep.h"
#include "dtsim/workload.h"

static void help(FILE *out)
{
    fprintf(out,
            "usage: dtsim sweep SCENARIO --out DIR [--jobs N] [--fresh] [--no-progress] [--json]\n"
            "       dtsim sweep SCENARIO --list [--json]\n"
            "\n"
            "Run every point of the scenario's \"sweep\" (axes over any field, crossed or zipped;\n"
            "see docs/sweeps.md) and write DIR/results.csv and DIR/results.json, one row per\n"
            "point in point order whatever --jobs is.\n"
            "\n"
            "Each finished point is stored at once in DIR/points/; re-running the same command\n"
            "after an interruption skips the points already done. A DIR holding another\n"
            "scenario's points is refused unless --fresh.\n"
            "\n"
            "  --out DIR       results directory (created if missing)\n"
            "  --jobs N        worker threads (default: the number of online CPUs)\n"
            "  --fresh         ignore and overwrite previous points in DIR\n"
            "  --no-progress   no progress bar (it is drawn on stderr only when a terminal)\n"
            "  --json          print a JSON summary on stdout\n"
            "  --list          only list the points (point number and axis values), run nothing\n"
            "\n"
            "Under mpirun (mpirun -np N dtsim sweep ...), points are divided among ranks and\n"
            "rank 0 writes the same files.\n");
}

typedef struct bar {
    bool on;
} bar;

static void fmt_dur(char *buf, size_t n, double s)
{
    if (s < 60)
        snprintf(buf, n, "%.0fs", s);
    else if (s < 3600)
        snprintf(buf, n, "%dm%02ds", (int)(s / 60), (int)s % 60);
    else
        snprintf(buf, n, "%dh%02dm", (int)(s / 3600), ((int)s % 3600) / 60);
}

static void draw(void *ctx, size_t done, size_t total, size_t resumed, double elapsed)
{
    bar *b = ctx;
    if (!b->on) return;
    enum { W = 30 };
    char cells[W + 1];
    size_t fill = total ? done * W / total : W;
    for (size_t i = 0; i < W; i++) cells[i] = i < fill ? '#' : '.';
    cells[W] = '\0';
    char eta[32] = "?";
    size_t ran = done - resumed;
    if (done == total)
        snprintf(eta, sizeof eta, "done");
    else if (ran > 0)
        fmt_dur(eta, sizeof eta, elapsed / (double)ran * (double)(total - done));
    fprintf(stderr, "\r[%s] %zu/%zu points", cells, done, total);
    if (resumed) fprintf(stderr, " (%zu resumed)", resumed);
    fprintf(stderr, "  ETA %-8s", eta);
    if (done == total) fputc('\n', stderr);
    fflush(stderr);
}

/* --list: one line per point (its number, then each axis value as JSON), or a JSON array,
 * straight from the expansion: nothing runs and nothing is written. */
static int list_points(const char *file, bool json)
{
    dt_error err;
    dt_error_clear(&err);
    cJSON *sc = NULL;
    sweep_spec *spec = NULL;
    if (js_parse_file(file, &sc, &err) || sweep_spec_parse(sc, file, &spec, &err)) {
        cJSON_Delete(sc);
        return cli_report_error(&err);
    }
    size_t nc = sweep_n_columns(spec);
    cJSON *arr = json ? cJSON_CreateArray() : NULL;
    if (!json) {
        printf("point");
        for (size_t c = 0; c < nc; c++) printf(",%s", sweep_column_name(spec, c));
        printf("\n");
    }
    for (size_t p = 0; p < sweep_n_points(spec); p++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "point", (double)p);
        cJSON *ax = cJSON_AddObjectToObject(o, "axes");
        for (size_t c = 0; c < nc; c++)
            cJSON_AddItemToObject(ax, sweep_column_name(spec, c),
                                  cJSON_Duplicate(sweep_point_value(spec, p, c), 1));
        if (json) {
            cJSON_AddItemToArray(arr, o);
            continue;
        }
        printf("%zu", p);
        for (size_t c = 0; c < nc; c++) {
            char *t = cJSON_PrintUnformatted(sweep_point_value(spec, p, c));
            printf(",%s", t);
            free(t);
        }
        printf("\n");
        cJSON_Delete(o);
    }
    if (json) {
        char *t = cJSON_Print(arr);
        printf("%s\n", t);
        free(t);
        cJSON_Delete(arr);
    }
    sweep_spec_destroy(spec);
    cJSON_Delete(sc);
    return CLI_OK;
}

/* An axis on a path the scenario format does not have ("parallel.dq"), or that cannot be set,
 * fails every point alike: find it on point 0 before anything runs or is written, so it is
 * bad input (exit 2) rather than N failed points. Checks needing the topology stay per point. */
static int check_first_point(const cJSON *sc, const char *file, dt_error *err)
{
    sweep_spec *spec = NULL;
    int rc = sweep_spec_parse(sc, file, &spec, err);
    if (rc != DT_OK || sweep_n_points(spec) == 0) {
        sweep_spec_destroy(spec);
        return rc;
    }
    cJSON *p0 = sweep_point_scenario(spec, sc, 0, file, err);
    if (!p0) rc = err->code ? err->code : DT_EINPUT;
    if (p0) {
        js_ctx ctx = {file, err};
        wl_scenario ws;
        rc = wl_scenario_parse(&ctx, p0, &ws);
        if (rc == DT_OK) wl_scenario_free(&ws);
    }
    if (rc != DT_OK) {
        size_t n = strlen(err->msg);
        snprintf(err->msg + n, sizeof err->msg - n, " (at sweep point 0)");
    }
    cJSON_Delete(p0);
    sweep_spec_destroy(spec);
    return rc;
}

static int run(int argc, char **argv)
{
    const char *file = NULL, *out = NULL;
    long jobs = sysconf(_SC_NPROCESSORS_ONLN);
    bool fresh = false, json = false, progress = true, list = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--out") && i + 1 < argc) {
            out = argv[++i];
        } else if (!strcmp(a, "--jobs") && i + 1 < argc) {
            char *end = NULL;
            jobs = strtol(argv[++i], &end, 10);
            if (*end || jobs < 1 || jobs > 4096) {
                fprintf(stderr, "dtsim sweep: --jobs expects a count from 1 to 4096, found \"%s\"\n",
                        argv[i]);
                return CLI_USAGE;
            }
        } else if (!strcmp(a, "--fresh")) {
            fresh = true;
        } else if (!strcmp(a, "--json")) {
            json = true;
        } else if (!strcmp(a, "--list")) {
            list = true;
        } else if (!strcmp(a, "--no-progress")) {
            progress = false;
        } else if (!strcmp(a, "--out") || !strcmp(a, "--jobs")) {
            fprintf(stderr, "dtsim sweep: %s needs a value (see dtsim sweep --help)\n", a);
            return CLI_USAGE;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "dtsim sweep: unknown option %s (see dtsim sweep --help)\n", a);
            return CLI_USAGE;
        } else if (!file) {
            file = a;
        } else {
            fprintf(stderr, "dtsim sweep: one scenario only (got %s and %s)\n", file, a);
            return CLI_USAGE;
        }
    }
    if (file && list) return list_points(file, json);
    if (!file || !out) {
        fprintf(stderr, "dtsim sweep: expected SCENARIO and --out DIR (see dtsim sweep --help)\n");
        return CLI_USAGE;
    }
    if (jobs < 1) jobs = 1;

    dt_error err;
    dt_error_clear(&err);
    int rank = 0, size = 1;
    bool mpi = sweep_mpi_launched();
    if (mpi && sweep_mpi_init(&rank, &size, &err) != DT_OK) return cli_report_error(&err);

    cJSON *sc = NULL;
    int rc = js_parse_file(file, &sc, &err);
    int status = CLI_OK;
    if (rc) {
        status = rank == 0 ? cli_report_error(&err) : cli_status(rc);
    } else {
        char *dir_copy = dt_xstrdup(file);
        bar b = {.on = progress && rank == 0 && isatty(STDERR_FILENO)};
        sweep_config cfg = {.scenario = sc, .file = file, .base_dir = dirname(dir_copy),
                            .out_dir = out, .jobs = (int)jobs, .fresh = fresh,
                            .progress = draw, .progress_ctx = &b,
                            .mpi_rank = rank, .mpi_size = size};
        sweep_summary sum;
        rc = check_first_point(sc, file, &err);
        if (rc == DT_OK) { /* an interrupted sweep leaves no NAME.tmp.PID of its own */
            char pts[4200];
            snprintf(pts, sizeof pts, "%s/points", out);
            cli_output_watch_dir(out);
            cli_output_watch_dir(pts);
            rc = sweep_run(&cfg, &sum, &err);
        }
        if (rc) {
            status = rank == 0 ? cli_report_error(&err) : cli_status(rc);
        } else if (rank == 0) {
            if (json) {
                cJSON *o = cJSON_CreateObject();
                char hx[17];
                snprintf(hx, sizeof hx, "%016" PRIx64, sum.hash);
                cJSON_AddStringToObject(o, "scenario", file);
                cJSON_AddStringToObject(o, "scenario_hash", hx);
                cJSON_AddNumberToObject(o, "points", (double)sum.total);
                cJSON_AddNumberToObject(o, "resumed", (double)sum.resumed);
                cJSON_AddNumberToObject(o, "ran", (double)sum.ran);
                cJSON_AddNumberToObject(o, "failed", (double)sum.failed);
                if (sum.first_failed >= 0) {
                    cJSON *ff = cJSON_AddObjectToObject(o, "first_failure");
                    cJSON_AddNumberToObject(ff, "point", (double)sum.first_failed);
                    cJSON_AddStringToObject(ff, "error", sum.first_error);
                }
                cJSON_AddNumberToObject(o, "ranks", size);
                cJSON_AddStringToObject(o, "out", out);
                char *t = cJSON_Print(o);
                printf("%s\n", t);
                free(t);
                cJSON_Delete(o);
            } else {
                printf("sweep   %s\n", file);
                printf("points  %zu (%zu run, %zu resumed, %zu failed)%s\n", sum.total, sum.ran,
                       sum.resumed, sum.failed, size > 1 ? "" : "");
                if (size > 1) printf("ranks   %d\n", size);
                printf("results %s/results.csv\n        %s/results.json\n", out, out);
            }
            if (sum.failed > 0)
                fprintf(stderr, "dtsim sweep: %zu of %zu points failed (status and error columns "
                                "of results.csv say why), first point %ld: %s\n",
                        sum.failed, sum.total, sum.first_failed, sum.first_error);
            if (sum.total > 0 && sum.failed == sum.total) status = CLI_FAIL;
        }
        free(dir_copy);
    }
    cJSON_Delete(sc);
    if (mpi) sweep_mpi_finalize();
    return status;
}

const cli_command cmd_sweep = {.name = "sweep", .summary = "Run a scenario over a grid of what-if axes", .run = run, .help = help};
