/* cmd_calibrate.c - `dtsim calibrate`: Time real kernels and fit latency/bandwidth models. */
#include <stdio.h>

#include "cli.h"

static void help(FILE *out)
{
    fprintf(out, "usage: dtsim calibrate [options]\n\nTime real kernels and fit latency/bandwidth models.\n");
}

static int run(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "dtsim calibrate: not implemented yet\n");
    return CLI_FAIL;
}

const cli_command cmd_calibrate = {.name = "calibrate", .summary = "Time real kernels and fit latency/bandwidth models", .run = run, .help = help};
