/* common.c - error reporting for sub-commands (output files: output.c). */
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
    dt_error e = *err;
    cli_output_explain(&e);
    fprintf(stderr, "dtsim: %s\n", dt_error_format(&e, buf, sizeof buf));
    return cli_status(e.code);
}

bool cli_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--")) break;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return true;
    }
    return false;
}
