/* limits.c - the memory budget and the refusal of inputs that are not regular files.
 *
 * Estimates are checked against the budget before allocating: dt_xmalloc aborts on failure
 * (the simulator's working memory is not user input), so the only way to turn "this input
 * would not fit" into a message is to say so before asking for the memory.
 */
#include "dtsim/limits.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dtsim/units.h"

double dt_memory_limit(void)
{
    const char *env = getenv("DTSIM_MAX_MEMORY");
    double lim = 0;
    char why[256];
    if (env && *env && unit_parse_size(env, &lim, why, sizeof why) == DT_OK && lim > 0)
        return lim; /* the user's word: no further cap */
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    lim = pages > 0 && page > 0 ? 0.5 * (double)pages * (double)page : 4.0 * (1 << 30);
    /* Under ulimit -v / -d the allocator fails long before physical memory runs out; keep a
     * quarter of the limit for what the estimates leave out (code, stacks, libraries). */
    int which[] = {RLIMIT_AS, RLIMIT_DATA};
    for (int i = 0; i < 2; i++) {
        struct rlimit r;
        if (getrlimit(which[i], &r) == 0 && r.rlim_cur != RLIM_INFINITY &&
            0.75 * (double)r.rlim_cur < lim)
            lim = 0.75 * (double)r.rlim_cur;
    }
    return lim;
}

int dt_check_memory(double bytes, const char *what, const char *file, const char *path,
                    dt_error *err)
{
    double lim = dt_memory_limit();
    if (bytes <= lim) return DT_OK;
    char need[32], have[32];
    unit_fmt_size(bytes, need, sizeof need);
    unit_fmt_size(lim, have, sizeof have);
    /* DT_ENOMEM (exit 1): the same input may run on a larger machine or budget */
    return dt_error_set(err, DT_ENOMEM, file, path,
                        "%s would need about %s of memory, above the limit of %s (raise it with "
                        "--max-memory SIZE or DTSIM_MAX_MEMORY)",
                        what, need, have);
}

static const char *kind_of(mode_t m)
{
    return S_ISDIR(m)    ? "a directory"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISFIFO(m) ? "a FIFO (named pipe)"
           : S_ISSOCK(m) ? "a socket"
                         : "not a regular file";
}

FILE *dt_open_input(const char *path, const char *mode, size_t *size, dt_error *err)
{
    /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        dt_error_set(err, DT_EIO, path, NULL, "cannot open: %s", strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        dt_error_set(err, DT_EIO, path, NULL, "cannot read: %s", strerror(errno));
        close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        if (S_ISDIR(st.st_mode))
            dt_error_set(err, DT_EIO, path, NULL, "cannot read: Is a directory");
        else
            dt_error_set(err, DT_EIO, path, NULL, "cannot read: %s, not a regular file",
                         kind_of(st.st_mode));
        close(fd);
        return NULL;
    }
    if ((unsigned long long)st.st_size > DT_MAX_INPUT_BYTES) {
        dt_error_set(err, DT_EINPUT, path, NULL,
                     "%lld bytes: larger than the %zu MiB dtsim reads from one file",
                     (long long)st.st_size, DT_MAX_INPUT_BYTES >> 20);
        close(fd);
        return NULL;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    FILE *f = fdopen(fd, mode);
    if (!f) {
        dt_error_set(err, DT_EIO, path, NULL, "cannot read: %s", strerror(errno));
        close(fd);
        return NULL;
    }
    if (size) *size = (size_t)st.st_size;
    return f;
}
