/* error.h - the two error channels of dtsim.
 *
 * Bad user input (a file, a flag) is reported by returning a negative dt_status and filling a
 * caller-owned dt_error: which file, which JSON path, line/column when known, and a message
 * saying what was expected and what was found. Library code never prints and never exits.
 *
 * Broken internal invariants are bugs, not input errors: DT_ASSERT aborts with file:line.
 */
#ifndef DTSIM_ERROR_H
#define DTSIM_ERROR_H

#include <stddef.h>

typedef enum dt_status {
    DT_OK = 0,
    DT_EINPUT = -1,       /* the user's input is invalid (exit status 2 in the CLI) */
    DT_EIO = -2,          /* a file could not be read or written */
    DT_ENOMEM = -3,       /* allocation failed */
    DT_EUNSUPPORTED = -4, /* valid request this build or machine cannot serve (no GPU, no MPI) */
    DT_EINTERNAL = -5     /* something failed that should not (e.g. a library call) */
} dt_status;

#define DT_ERR_FILE_MAX 512
#define DT_ERR_PATH_MAX 256
#define DT_ERR_MSG_MAX 768

/* Caller-owned, plain data; zero-initialise or dt_error_clear() before use. */
typedef struct dt_error {
    int code;                        /* a dt_status, DT_OK when nothing went wrong */
    char file[DT_ERR_FILE_MAX];      /* input file, "" when not about a file */
    char path[DT_ERR_PATH_MAX];      /* JSON path such as links[3].bandwidth, "" at top level */
    int line, column;                /* 1-based; 0 when unknown (cJSON keeps no positions) */
    char msg[DT_ERR_MSG_MAX];        /* what was expected and what was found */
} dt_error;

void dt_error_clear(dt_error *err);

/* Fill err (if non-NULL) and return code. file and path may be NULL. */
int dt_error_set(dt_error *err, int code, const char *file, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* "FILE:LINE:COL: PATH: message", omitting the parts that are unknown. Returns buf. */
const char *dt_error_format(const dt_error *err, char *buf, size_t size);

/* Short description of a status code. */
const char *dt_strerror(int code);

/* Internal invariant: abort with file:line and the failed condition. Not for input errors. */
#define DT_ASSERT(cond)                                                                     \
    do {                                                                                    \
        if (!(cond)) dt_assert_fail(#cond, __FILE__, __LINE__);                             \
    } while (0)
_Noreturn void dt_assert_fail(const char *what, const char *file, int line);

/* malloc/calloc/realloc that abort on failure: the simulator's working memory is an
 * internal resource, not user input, and a half-built model helps nobody. */
void *dt_xmalloc(size_t n);
void *dt_xcalloc(size_t n, size_t size);
void *dt_xrealloc(void *p, size_t n);
char *dt_xstrdup(const char *s);

#endif
