/* common.c - error reporting and commit-or-nothing output files for sub-commands. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

int cli_status(int code)
{
    switch (code) {
    case DT_OK: return CLI_OK;
    case DT_EINPUT: return CLI_USAGE;
    default: return CLI_FAIL;
    }
}

int cli_report_error(const dt_error *err)
{
    char buf[DT_ERR_FILE_MAX + DT_ERR_PATH_MAX + DT_ERR_MSG_MAX + 64];
    fprintf(stderr, "dtsim: %s\n", dt_error_format(err, buf, sizeof buf));
    return cli_status(err->code);
}

bool cli_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--")) break;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return true;
    }
    return false;
}

int cli_outfile_open(cli_outfile *o, const char *path, dt_error *err)
{
    memset(o, 0, sizeof *o);
    if (!strcmp(path, "-")) {
        o->f = stdout;
        return DT_OK;
    }
    size_t n = strlen(path) + 32;
    o->path = dt_xstrdup(path);
    o->tmp = dt_xmalloc(n);
    snprintf(o->tmp, n, "%s.tmp.%ld", path, (long)getpid());
    o->f = fopen(o->tmp, "w");
    if (!o->f) {
        int e = errno;
        free(o->path);
        free(o->tmp);
        o->path = o->tmp = NULL;
        return dt_error_set(err, DT_EIO, path, NULL, "cannot write: %s", strerror(e));
    }
    return DT_OK;
}

int cli_outfile_close(cli_outfile *o, dt_error *err)
{
    if (!o->f || o->f == stdout) return DT_OK;
    int bad = ferror(o->f);
    if (fclose(o->f) != 0) bad = 1;
    o->f = NULL;
    if (bad) {
        remove(o->tmp);
        int rc = dt_error_set(err, DT_EIO, o->path, NULL, "write failed");
        free(o->path);
        free(o->tmp);
        o->path = o->tmp = NULL;
        return rc;
    }
    return DT_OK;
}

int cli_outfile_commit(cli_outfile *o, dt_error *err)
{
    if (o->f == stdout) {
        fflush(stdout);
        o->f = NULL;
        return DT_OK;
    }
    if (!o->tmp) return DT_OK; /* nothing open (a failed close removed it already) */
    int bad = o->f ? ferror(o->f) : 0;
    if (o->f && fclose(o->f) != 0) bad = 1;
    o->f = NULL;
    int rc = DT_OK;
    if (bad) {
        remove(o->tmp);
        rc = dt_error_set(err, DT_EIO, o->path, NULL, "write failed");
    } else if (rename(o->tmp, o->path) != 0) {
        rc = dt_error_set(err, DT_EIO, o->path, NULL, "cannot rename from %s: %s", o->tmp,
                          strerror(errno));
        remove(o->tmp);
    }
    free(o->path);
    free(o->tmp);
    o->path = o->tmp = NULL;
    return rc;
}

void cli_outfile_abort(cli_outfile *o)
{
    if (o->f && o->f != stdout) fclose(o->f);
    if (o->f != stdout && o->tmp) remove(o->tmp);
    o->f = NULL;
    free(o->path);
    free(o->tmp);
    o->path = o->tmp = NULL;
}
