/* cmd_sweep.c - `dtsim sweep`: Run a scenario over a grid of what-if axes. */
#include <stdio.h>

#include "cli.h"

static void help(FILE *out)
{
    fprintf(out, "usage: dtsim sweep [options]\n\nRun a scenario over a grid of what-if axes.\n");
}

static int run(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "dtsim sweep: not implemented yet\n");
    return CLI_FAIL;
}

const cli_command cmd_sweep = {.name = "sweep", .summary = "Run a scenario over a grid of what-if axes", .run = run, .help = help};
