/* cmd_topo.c - `dtsim topo`: Generate, validate and describe topologies. */
#include <stdio.h>

#include "cli.h"

static void help(FILE *out)
{
    fprintf(out, "usage: dtsim topo [options]\n\nGenerate, validate and describe topologies.\n");
}

static int run(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "dtsim topo: not implemented yet\n");
    return CLI_FAIL;
}

const cli_command cmd_topo = {.name = "topo", .summary = "Generate, validate and describe topologies", .run = run, .help = help};
