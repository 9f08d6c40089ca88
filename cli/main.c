/* main.c - `dtsim`: dispatch to sub-commands.
 *
 * Built twice (CMakeLists.txt): `dtsim` (DTSIM_LEAN) links the core library without MPI, CUDA
 * or NCCL and hands the commands that need them to `dtsim-full`, the same program linked with
 * everything, by exec: same process, arguments and environment (an mpirun rank stays the rank
 * it was). So `dtsim run` starts in a millisecond and runs where those libraries are absent.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "dtsim/sweep.h"
#include "dtsim/units.h"

static const cli_command *const commands[] = {
    &cmd_run, &cmd_memory, &cmd_collective, &cmd_topo, &cmd_calibrate,
    &cmd_sweep, &cmd_plan, &cmd_report, &cmd_goodput, &cmd_validate, &cmd_federated, &cmd_probe, NULL};

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
                 "--max-memory SIZE (any command) bounds the memory dtsim plans to use (default: half\n"
                 "the physical memory); an input that would need more is refused.\n"
                 "Exit status: 0 success, 1 failure, 2 invalid input or usage.\n");
}

static const cli_command *find(const char *name)
{
    for (const cli_command *const *c = commands; *c; c++)
        if (strcmp((*c)->name, name) == 0) return *c;
    return NULL;
}

#ifdef DTSIM_LEAN
/* calibrate --backend mpi|cuda|nccl, probe unless it reports on a file (--from), and a sweep
 * that mpirun started. */
static const char *needs_full(int argc, char **argv)
{
    if (!strcmp(argv[1], "probe")) {
        for (int i = 2; i < argc; i++)
            if (!strcmp(argv[i], "--from")) return NULL;
        return "cuda";
    }
    if (!strcmp(argv[1], "calibrate"))
        for (int i = 2; i + 1 < argc; i++)
            if (!strcmp(argv[i], "--backend") &&
                (!strcmp(argv[i + 1], "mpi") || !strcmp(argv[i + 1], "cuda") ||
                 !strcmp(argv[i + 1], "nccl")))
                return argv[i + 1];
    if (!strcmp(argv[1], "sweep") && sweep_mpi_launched()) return "mpi";
    return NULL;
}

/* Replace this process by dtsim-full: $DTSIM_FULL, else dtsim-full beside this executable.
 * Returns only on failure. */
static int exec_full(char **argv, const char *what)
{
    char path[PATH_MAX];
    const char *env = getenv("DTSIM_FULL");
    if (env && *env) {
        snprintf(path, sizeof path, "%s", env);
    } else {
        ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
        if (n < 0) n = 0;
        path[n] = '\0';
        char *slash = strrchr(path, '/');
        size_t dir = slash ? (size_t)(slash - path) + 1 : 0;
        snprintf(path + dir, sizeof path - dir, "dtsim-full");
    }
    execv(path, argv);
    fprintf(stderr,
            "dtsim: %s needs %s, which this dtsim leaves to dtsim-full (dtsim linked with MPI, "
            "CUDA and NCCL); could not start %s: install it beside dtsim or set DTSIM_FULL\n",
            argv[1], what, path);
    return CLI_FAIL;
}
#endif

/* `--max-memory SIZE` (or --max-memory=SIZE), accepted by every command anywhere after
 * `dtsim`: removed from argv here and handed to the library as DTSIM_MAX_MEMORY, which
 * dt_memory_limit() reads (and dtsim-full inherits through exec). Returns -1 on a bad value. */
static int take_max_memory(int *argc, char **argv)
{
    int out = 1;
    for (int i = 1; i < *argc; i++) {
        const char *v = NULL;
        if (!strcmp(argv[i], "--max-memory")) {
            if (i + 1 >= *argc) {
                fprintf(stderr, "dtsim: --max-memory needs a size such as 8GiB\n");
                return -1;
            }
            v = argv[++i];
        } else if (!strncmp(argv[i], "--max-memory=", 13)) {
            v = argv[i] + 13;
        } else {
            argv[out++] = argv[i];
            continue;
        }
        double b = 0;
        char why[256];
        if (unit_parse_size(v, &b, why, sizeof why) != DT_OK || !(b >= 1 << 20)) {
            fprintf(stderr, "dtsim: --max-memory: expected a size of at least 1 MiB such as "
                            "8GiB, found '%s'\n", v);
            return -1;
        }
        setenv("DTSIM_MAX_MEMORY", v, 1);
    }
    argv[out] = NULL;
    *argc = out;
    return 0;
}

static int dispatch(int argc, char **argv)
{
    if (take_max_memory(&argc, argv)) return CLI_USAGE;
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
#ifdef DTSIM_LEAN
    const char *what = needs_full(argc, argv);
    if (what && !cli_wants_help(argc - 1, argv + 1)) return exec_full(argv, what);
#endif
    if (cli_wants_help(argc - 1, argv + 1)) {
        c->help(stdout);
        return CLI_OK;
    }
    return c->run(argc - 1, argv + 1);
}

/* Every command's outputs are committed here, together, once it has succeeded (cli/output.c):
 * a command that fails, or whose stdout cannot be written, leaves none of them. */
int main(int argc, char **argv)
{
    cli_output_init();
    int rc = dispatch(argc, argv);
    if (rc == CLI_OK) {
        dt_error err;
        dt_error_clear(&err);
        if (cli_output_commit_all(&err) != DT_OK) rc = cli_report_error(&err);
    } else {
        cli_output_abort_all();
    }
    return rc;
}
