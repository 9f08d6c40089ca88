/* cmd_memory.c - `dtsim memory`: memory per GPU for a scenario's plan (no simulation). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "dtsim/run.h"
#include "dtsim/units.h"

static void help(FILE *out)
{
    fprintf(out,
            "usage: dtsim memory SCENARIO.json [--json]\n"
            "\n"
            "Memory of the most loaded GPU for the scenario's model and parallel plan:\n"
            "parameters, gradients, optimizer states (ZeRO accounting) and activations\n"
            "(Korthikanti et al. 2022, with TP/SP, checkpointing and the pipeline schedule's\n"
            "microbatches in flight). No simulation: fast. Exit status 0 even when the plan\n"
            "does not fit; the output says so (\"fits\": false).\n"
            "\n"
            "options:\n"
            "  --json       one JSON document on stdout\n"
            "  -h, --help   this help\n");
}

static int run(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) {
        help(stdout);
        return CLI_OK;
    }
    const char *file = NULL;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) json = true;
        else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "dtsim memory: unknown option: %s\n(see dtsim memory --help)\n", argv[i]);
            return CLI_USAGE;
        } else if (!file) file = argv[i];
        else {
            fprintf(stderr, "dtsim memory: more than one scenario: %s\n", argv[i]);
            return CLI_USAGE;
        }
    }
    if (!file) {
        fprintf(stderr, "dtsim memory: missing the scenario file\n(see dtsim memory --help)\n");
        return CLI_USAGE;
    }
    struct run_memory m;
    bool fits = false;
    dt_error err;
    dt_error_clear(&err);
    int rc = run_memory_file(file, &m, &fits, &err);
    if (rc != DT_OK) return cli_report_error(&err);
    if (json) {
        cJSON *j = cJSON_CreateObject();
        cJSON *b = cJSON_AddObjectToObject(j, "memory_per_gpu_bytes");
        cJSON_AddNumberToObject(b, "params", m.params);
        cJSON_AddNumberToObject(b, "grads", m.grads);
        cJSON_AddNumberToObject(b, "optimizer", m.optimizer);
        cJSON_AddNumberToObject(b, "activations", m.activations);
        cJSON_AddNumberToObject(b, "peak", m.peak);
        if (isfinite(m.capacity)) cJSON_AddNumberToObject(b, "capacity", m.capacity);
        cJSON_AddBoolToObject(j, "fits", fits);
        char *s = cJSON_Print(j);
        printf("%s\n", s);
        free(s);
        cJSON_Delete(j);
    } else {
        char buf[32];
        printf("%s: memory per GPU (most loaded)\n\n", file);
        const char *lab[] = {"parameters", "gradients", "optimizer", "activations", "peak"};
        double val[] = {m.params, m.grads, m.optimizer, m.activations, m.peak};
        for (int i = 0; i < 5; i++)
            printf("  %-12s %12s\n", lab[i], unit_fmt_size(val[i], buf, sizeof buf));
        if (isfinite(m.capacity))
            printf("  %-12s %12s\n", "capacity", unit_fmt_size(m.capacity, buf, sizeof buf));
        if (fits) printf("\n  fits (%.0f%% of capacity)\n", 100 * m.peak / m.capacity);
        else {
            char b2[32];
            printf("\n  *** DOES NOT FIT: peak %s exceeds the GPU's %s ***\n",
                   unit_fmt_size(m.peak, buf, sizeof buf), unit_fmt_size(m.capacity, b2, sizeof b2));
        }
    }
    return CLI_OK;
}

const cli_command cmd_memory = {.name = "memory", .summary = "Memory per GPU for a scenario's plan", .run = run, .help = help};
