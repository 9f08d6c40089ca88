/* cmd_collective.c - `dtsim collective`: Simulate one collective on a topology. */
#include <stdio.h>

#include "cli.h"

static void help(FILE *out)
{
    fprintf(out, "usage: dtsim collective [options]\n\nSimulate one collective on a topology.\n");
}

static int run(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "dtsim collective: not implemented yet\n");
    return CLI_FAIL;
}

const cli_command cmd_collective = {.name = "collective", .summary = "Simulate one collective on a topology", .run = run, .help = help};
