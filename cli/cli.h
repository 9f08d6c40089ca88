/* cli.h - the dtsim command's sub-commands and the little they share.
 *
 * The CLI is the top floor: nothing in the library includes it. Each sub-command lives in its own
 * cmd_*.c, parses its own flags, calls the library, and prints: people-friendly aligned text on
 * stdout by default, one JSON document with --json. Errors go to stderr.
 *
 * Exit statuses: 0 success, 1 runtime failure, 2 bad input or usage.
 */
#ifndef DTSIM_CLI_H
#define DTSIM_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "dtsim/error.h"

enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

typedef struct cli_command {
    const char *name;
    const char *summary;                 /* one line for `dtsim --help` */
    int (*run)(int argc, char **argv);   /* argv[0] is the sub-command name */
    void (*help)(FILE *out);             /* full help for `dtsim help NAME` / NAME --help */
} cli_command;

/* Print "dtsim: <formatted error>" to stderr and return the exit status for its code. */
int cli_report_error(const dt_error *err);
/* Exit status for a dt_status. */
int cli_status(int code);
/* True if argv contains --help or -h. */
bool cli_wants_help(int argc, char **argv);

/* Commit-or-nothing output files: write to PATH.tmp.PID, rename on success, remove on failure. */
typedef struct cli_outfile {
    FILE *f;
    char *path, *tmp;
} cli_outfile;
int cli_outfile_open(cli_outfile *o, const char *path, dt_error *err);
int cli_outfile_commit(cli_outfile *o, dt_error *err);
/* Close the temporary now (checked) and rename it at commit: for commands writing more files
 * than a process may hold open (one per rank of a Chakra trace). */
int cli_outfile_close(cli_outfile *o, dt_error *err);
void cli_outfile_abort(cli_outfile *o);

#define CLI_COMMAND(id) extern const cli_command id
CLI_COMMAND(cmd_run);
CLI_COMMAND(cmd_memory);
CLI_COMMAND(cmd_collective);
CLI_COMMAND(cmd_topo);
CLI_COMMAND(cmd_calibrate);
CLI_COMMAND(cmd_sweep);
CLI_COMMAND(cmd_plan);
CLI_COMMAND(cmd_report);
CLI_COMMAND(cmd_goodput);
CLI_COMMAND(cmd_validate);
CLI_COMMAND(cmd_federated);

#endif
