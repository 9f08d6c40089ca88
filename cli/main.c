/* main.c - `dtsim`: dispatch to sub-commands. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const cli_command *const commands[] = {
    &cmd_run, &cmd_memory, &cmd_collective, &cmd_topo, &cmd_calibrate,
    &cmd_sweep, &cmd_plan, &cmd_report, &cmd_validate, NULL};

static void usage(FILE *out)
{
    fprintf(out,
            "dtsim %s - discrete-event simulator of GPU training clusters\n\n"
            "usage: dtsim COMMAND [options]\n"
            "       dtsim help COMMAND\n"
            "       dtsim --version\n\n"
            "commands:\n",
            DTSIM_VERSION);
    for (const cli_command *const *c = commands; *c; c++)
        fprintf(out, "  %-12s %s\n", (*c)->name, (*c)->summary);
    fprintf(out, "\nEvery command accepts --json for machine-readable output and --help.\n"
                 "Exit status: 0 success, 1 failure, 2 invalid input or usage.\n");
}

static const cli_command *find(const char *name)
{
    for (const cli_command *const *c = commands; *c; c++)
        if (strcmp((*c)->name, name) == 0) return *c;
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_USAGE;
    }
    const char *name = argv[1];
    if (!strcmp(name, "--help") || !strcmp(name, "-h")) {
        usage(stdout);
        return CLI_OK;
    }
    if (!strcmp(name, "--version") || !strcmp(name, "version")) {
        printf("dtsim %s\n", DTSIM_VERSION);
        return CLI_OK;
    }
    if (!strcmp(name, "help")) {
        if (argc < 3) {
            usage(stdout);
            return CLI_OK;
        }
        const cli_command *c = find(argv[2]);
        if (!c) {
            fprintf(stderr, "dtsim: unknown command '%s' (see dtsim --help)\n", argv[2]);
            return CLI_USAGE;
        }
        c->help(stdout);
        return CLI_OK;
    }
    const cli_command *c = find(name);
    if (!c) {
        fprintf(stderr, "dtsim: unknown command '%s' (see dtsim --help)\n", name);
        return CLI_USAGE;
    }
    if (cli_wants_help(argc - 1, argv + 1)) {
        c->help(stdout);
        return CLI_OK;
    }
    return c->run(argc - 1, argv + 1);
}
