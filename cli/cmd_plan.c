/* cmd_plan.c - `dtsim plan`: Search parallel plans that fit, best first. */
#include <stdio.h>

#include "cli.h"

static void help(FILE *out)
{
    fprintf(out, "usage: dtsim plan [options]\n\nSearch parallel plans that fit, best first.\n");
}

static int run(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "dtsim plan: not implemented yet\n");
    return CLI_FAIL;
}

const cli_command cmd_plan = {.name = "plan", .summary = "Search parallel plans that fit, best first", .run = run, .help = help};
