/* cmd_report.c - `dtsim report`: Plots and an index from a sweep's results. */
#include <stdio.h>

#include "cli.h"

static void help(FILE *out)
{
    fprintf(out, "usage: dtsim report [options]\n\nPlots and an index from a sweep's results.\n");
}

static int run(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "dtsim report: not implemented yet\n");
    return CLI_FAIL;
}

const cli_command cmd_report = {.name = "report", .summary = "Plots and an index from a sweep's results", .run = run, .help = help};
