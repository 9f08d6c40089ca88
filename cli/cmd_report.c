/* cmd_report.c - `dtsim report`: plots and an index from a sweep's results. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "dtsim/limits.h"
#include "dtsim/report.h"

static void help(FILE *out)
{
    fprintf(out,
            "usage: dtsim report DIR [--json]\n"
            "       dtsim report TABLE.csv|TABLE.json|TIMELINE.json --out DIR [--json]\n"
            "\n"
            "Turn DIR/results.csv (from `dtsim sweep --out DIR`) into gnuplot plots in DIR/report/:\n"
            "  scaling     throughput and efficiency vs GPUs, against ideal linear\n"
            "  breakdown   step time per point, stacked: compute, exposed comm, bubble, stragglers\n"
            "  memory      peak memory per GPU vs the GPU's capacity\n"
            "  busbw       bus bandwidth vs message size (when the CSV has size and busbw columns)\n"
            "each as NAME.png and NAME.svg with its NAME.dat and NAME.gp beside it (edit the .gp and\n"
            "run gnuplot to restyle), plus index.md and index.html. A plot is made only when its\n"
            "columns are present. Needs gnuplot with pngcairo (gnuplot-nox); $DTSIM_GNUPLOT picks\n"
            "another binary.\n"
            "\n"
            "The second form reads any CSV, or a JSON array of flat objects such as\n"
            "`dtsim collective --op allreduce --size 1KiB:1GiB:x2 --json` writes (one busbw line\n"
            "per \"algo\"), and writes the plots into DIR. Given a timeline from\n"
            "`dtsim run --timeline T.json`, it draws each GPU's state over the step (timeline.png).\n");
}

static int run(int argc, char **argv)
{
    const char *dir = NULL, *out = NULL;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) {
            json = true;
        } else if (!strcmp(argv[i], "--out") && i + 1 < argc) {
            out = argv[++i];
        } else if (!strcmp(argv[i], "--out")) {
            fprintf(stderr, "dtsim report: %s needs a value (see dtsim report --help)\n", argv[i]);
            return CLI_USAGE;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "dtsim report: unknown option %s (see dtsim report --help)\n", argv[i]);
            return CLI_USAGE;
        } else if (!dir) {
            dir = argv[i];
        } else {
            fprintf(stderr, "dtsim report: one directory only\n");
            return CLI_USAGE;
        }
    }
    if (!dir) {
        fprintf(stderr, "dtsim report: expected DIR (a sweep's --out directory)\n");
        return CLI_USAGE;
    }
    dt_error err;
    dt_error_clear(&err);
    rep_report_summary sum;
    struct stat st;
    bool is_file = stat(dir, &st) == 0 && S_ISREG(st.st_mode);
    if (is_file && !out) {
        fprintf(stderr, "dtsim report: %s is a file: say where the plots go with --out DIR\n", dir);
        return CLI_USAGE;
    }
    if (!is_file && out) {
        /* a table file that is missing or not a file: say that, not how --out is used */
        size_t n = strlen(dir);
        bool table = (n > 5 && !strcmp(dir + n - 5, ".json")) || (n > 4 && !strcmp(dir + n - 4, ".csv"));
        if (table && !(stat(dir, &st) == 0 && S_ISDIR(st.st_mode))) {
            FILE *f = dt_open_input(dir, "r", NULL, &err);
            if (f) fclose(f);
            if (!f) return cli_report_error(&err);
        }
        fprintf(stderr, "dtsim report: --out goes with a table file; a sweep directory's plots go "
                        "to DIR/report\n");
        return CLI_USAGE;
    }
    /* Where the plots went, for the summary. A trailing slash as typed ("results/", as in
     * docs/reports.md) is dropped so the paths print as results/report/index.md, not with "//". */
    char where[1024];
    snprintf(where, sizeof where, "%s", is_file ? out : dir);
    for (size_t n = strlen(where); n > 1 && where[n - 1] == '/';) where[--n] = 0;
    if (!is_file) {
        size_t n = strlen(where);
        snprintf(where + n, sizeof where - n, "%s", strcmp(where, "/") ? "/report" : "report");
    }
    /* The report is drawn into a hidden directory beside its target and moved into place by
     * main() once everything succeeded (cli/output.c): a failed or interrupted report leaves
     * neither half a report nor the previous one mixed with a new one. */
    char input[1024];
    snprintf(input, sizeof input, is_file ? "%s" : "%s/results.csv", dir);
    const char *stage = NULL;
    /* (a missing input fails on reading, before anything is written: no stage for it) */
    int rc = access(input, F_OK) != 0 ? DT_OK : cli_outdir_stage(where, &stage, &err);
    if (!rc) rc = rep_report_file(input, stage ? stage : where, &sum, &err);
    if (rc) return cli_report_error(&err);
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "input", dir);
        cJSON_AddStringToObject(o, "dir", where);
        cJSON_AddNumberToObject(o, "rows", sum.rows);
        cJSON *p = cJSON_AddArrayToObject(o, "plots");
        for (int i = 0; i < sum.n_plots; i++) cJSON_AddItemToArray(p, cJSON_CreateString(sum.plots[i]));
        char *t = cJSON_Print(o);
        printf("%s\n", t);
        free(t);
        cJSON_Delete(o);
    } else {
        printf("report  %s/index.md  (and index.html)\n", where);
        printf("rows    %d\n", sum.rows);
        for (int i = 0; i < sum.n_plots; i++)
            printf("plot    %-10s %s/%s.png  .svg  .gp  .dat\n", sum.plots[i], where,
                   sum.plots[i]);
        if (sum.n_plots == 0) printf("plots   none apply to these columns\n");
    }
    return CLI_OK;
}

const cli_command cmd_report = {.name = "report", .summary = "Plots and an index from a sweep's results", .run = run, .help = help};
