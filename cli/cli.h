/* cli.h - the dtsim command's sub-commands and the little they share.
 *
 * The CLI is the top floor: nothing in the library includes it. Each sub-command lives in its own
 * cmd_*.c, parses its own flags, calls the library, and prints: people-friendly aligned text on
 * stdout by default, one JSON document with --json. Errors go to stderr.
 *
 * Exit statuses: 0 success, 1 runtime failure, 2 bad input or usage, 128 + the signal when
 * interrupted (130 SIGINT, 143 SIGTERM; cli/output.c, docs/reliability.md).
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

/* Output files (cli/output.c, docs/reliability.md). cli_outfile_open() checks the target (a
 * missing or regular file is replaced through a hidden temporary DIR/.NAME.tmp.PID.N; "-" is
 * stdout; a character device is written in place; anything else is refused) and hands back a
 * stream whose write errors are kept with their errno. cli_outfile_close()/_commit() finish
 * the file now (flush, fsync, close, checked); nothing is renamed until main() calls
 * cli_output_commit_all() after the command succeeded, so a command's outputs appear together
 * or not at all; cli_outfile_abort() drops one. The structs are the caller's and may move; the
 * state behind them belongs to output.c until commit_all/abort_all. */
typedef struct cli_outfile {
    FILE *f;                 /* write here; NULL once closed */
    const char *path;        /* the target as given (valid until commit_all/abort_all) */
    struct cli_out_rec *rec;
} cli_outfile;
int cli_outfile_open(cli_outfile *o, const char *path, dt_error *err);
/* "-" or /dev/stdout: an output that is stdout (a command then prints its summary elsewhere). */
bool cli_is_stdout(const char *path);
int cli_outfile_commit(cli_outfile *o, dt_error *err);
/* The same as commit (both only finish the file): for commands writing more files than a
 * process may hold open (one per rank of a Chakra trace). */
int cli_outfile_close(cli_outfile *o, dt_error *err);
void cli_outfile_abort(cli_outfile *o);
/* A directory of outputs written by the library (report, goodput --plot): *stage is a fresh
 * hidden directory beside DIR to write into (borrowed until commit_all/abort_all); at commit
 * its files are renamed into DIR (created if missing), each refusing to replace a non-regular
 * file. */
int cli_outdir_stage(const char *dir, const char **stage, dt_error *err);
/* Temporaries NAME.tmp.PID that the library writes into DIR (sweeps) are removed on a signal. */
void cli_output_watch_dir(const char *dir);
/* Installs the SIGINT/SIGTERM/SIGHUP/SIGPIPE handlers (exit 130/143/129/141 after removing
 * this process's temporaries) and wraps stdout; main() calls it first. */
void cli_output_init(void);
/* A library writer says only "write error" (it sees a FILE *): name the output whose write
 * failed and why. cli_report_error() calls it. */
void cli_output_explain(dt_error *err);
/* Finish every output, check stdout, then rename them all into place; on failure remove all. */
int cli_output_commit_all(dt_error *err);
void cli_output_abort_all(void);

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
CLI_COMMAND(cmd_probe);

#endif
