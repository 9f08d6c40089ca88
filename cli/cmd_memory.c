/* cmd_memory.c - `dtsim memory`: Memory per GPU for a scenario's plan. */
#include <stdio.h>

#include "cli.h"

static void help(FILE *out)
{
    fprintf(out, "usage: dtsim memory [options]\n\nMemory per GPU for a scenario's plan.\n");
}

static int run(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "dtsim memory: not implemented yet\n");
    return CLI_FAIL;
}

const cli_command cmd_memory = {.name = "memory", .summary = "Memory per GPU for a scenario's plan", .run = run, .help = help};
