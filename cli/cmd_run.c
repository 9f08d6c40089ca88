/* cmd_run.c - `dtsim run`: Simulate one training step of a scenario. */
#include <stdio.h>

#include "cli.h"

static void help(FILE *out)
{
    fprintf(out, "usage: dtsim run [options]\n\nSimulate one training step of a scenario.\n");
}

static int run(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "dtsim run: not implemented yet\n");
    return CLI_FAIL;
}

const cli_command cmd_run = {.name = "run", .summary = "Simulate one training step of a scenario", .run = run, .help = help};
