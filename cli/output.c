/* output.c - the one way the dtsim command writes files (docs/reliability.md).
 *
 * Every output of a command (-o, --out, --timeline, --write-trace, --plot, report directories)
 * is opened here and written to a temporary beside its target, DIR/.NAME.tmp.PID.N: unique per
 * process (PID) and per output (N), hidden, and in the target's directory so that the final
 * rename(2) is atomic. Nothing is renamed while the command runs: main() calls
 * cli_output_commit_all() once the command has succeeded, which first finishes every output
 * (flush, fsync, close, each checked; a write error is kept with its errno by the stream's own
 * write function, so the message says which file and why), then checks stdout, then renames
 * them all. A failed command calls cli_output_abort_all(): no output appears, none is
 * half-written. Signals are held back during the renames; the only window left is a failed
 * rename(2) between two renames of one commit, which after the temporaries were written in the
 * same directories means a vanished directory.
 *
 * Targets: "-" (and /dev/stdout) is stdout; an existing character device (/dev/null, /dev/full, a tty) is opened
 * and written in place, every write checked; a missing path or a regular file is replaced
 * through the temporary; anything else (directory, FIFO, socket, block device, symbolic link)
 * is refused with exit status 1 before anything is written, instead of being replaced by a
 * regular file.
 *
 * Signals: SIGINT, SIGTERM, SIGHUP and SIGPIPE remove this process's temporaries and exit
 * 128 + the signal (130, 143, 129, 141). The handler may only call async-signal-safe
 * functions, so the temporaries live in a table of strings it reads without locks: the thread
 * changing the table blocks the signals and raises `busy`; a handler running on another thread
 * raises `dying` and waits for `busy` to fall, and a change that finds `dying` raised lowers
 * `busy` and never starts (both flags sequentially consistent, so one of the two always sees
 * the other). A staged directory (the report's pictures, drawn by gnuplot into it) is emptied
 * with getdents64(2) and removed; "watched" directories (a sweep's) lose every NAME.tmp.PID of
 * this PID the library left there.
 * kill -9 cannot be caught: the next output to the same target, and the next sweep in a
 * directory, remove temporaries whose PID is no longer alive (kill(pid, 0) fails with ESRCH).
 *
 * All state here is the CLI's (the library keeps none); the table holds at most
 * CLI_OUT_CHUNKS x CLI_OUT_CHUNK temporaries at once (16,384: a Chakra trace writes one file per
 * rank).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "cli.h"

static int cookie_close(void *c);

/* ---- the signal-safe table of temporaries ------------------------------------------------- */

enum { CLI_OUT_CHUNK = 256, CLI_OUT_CHUNKS = 64 };

/* An entry is "T<path>" (a temporary file or staged directory) or "W<path>" (a directory whose
 * NAME.tmp.PID entries of this process are removed). */
static _Atomic(char *) *g_chunks[CLI_OUT_CHUNKS];
static atomic_int g_busy, g_dying;
static pid_t g_owner;               /* the process whose temporaries these are (not a fork) */
static char g_tag[32];              /* ".tmp.PID" of g_owner, matched in watched directories */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

static void table_lock(sigset_t *old)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGINT);
    sigaddset(&s, SIGTERM);
    sigaddset(&s, SIGHUP);
    sigaddset(&s, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &s, old);
    pthread_mutex_lock(&g_mu);
    atomic_store(&g_busy, 1);
    if (atomic_load(&g_dying)) {
        /* a handler on another thread is removing the temporaries and will exit: let it read
         * the table (it waits for busy to fall) and wait for the end */
        atomic_store(&g_busy, 0);
        for (;;) pause();
    }
}

static void table_unlock(sigset_t *old)
{
    atomic_store(&g_busy, 0);
    pthread_mutex_unlock(&g_mu);
    pthread_sigmask(SIG_SETMASK, old, NULL);
}

/* Returns the slot, or -1 when the table is full. */
static int table_add(char kind, const char *path)
{
    size_t n = strlen(path);
    char *s = dt_xmalloc(n + 2);
    s[0] = kind;
    memcpy(s + 1, path, n + 1);
    sigset_t old;
    table_lock(&old);
    int slot = -1;
    for (int c = 0; c < CLI_OUT_CHUNKS && slot < 0; c++) {
        if (!g_chunks[c]) g_chunks[c] = dt_xcalloc(CLI_OUT_CHUNK, sizeof *g_chunks[c]);
        for (int i = 0; i < CLI_OUT_CHUNK; i++)
            if (!atomic_load(&g_chunks[c][i])) {
                atomic_store(&g_chunks[c][i], s);
                slot = c * CLI_OUT_CHUNK + i;
                break;
            }
    }
    table_unlock(&old);
    if (slot < 0) free(s);
    return slot;
}

static void table_remove(int slot)
{
    if (slot < 0) return;
    sigset_t old;
    table_lock(&old);
    char *s = atomic_exchange(&g_chunks[slot / CLI_OUT_CHUNK][slot % CLI_OUT_CHUNK], NULL);
    table_unlock(&old);
    free(s);
}

/* ---- removal, usable from the signal handler (no malloc, no stdio) ------------------------ */

/* Does NAME carry this process's tag: ".tmp.PID" followed by the end or a '.'? */
static int has_tag(const char *name, const char *tag)
{
    size_t tl = strlen(tag);
    for (const char *s = strstr(name, tag); s; s = strstr(s + 1, tag))
        if (s[tl] == '\0' || s[tl] == '.') return 1;
    return 0;
}

/* Unlink the entries of dir that carry `tag` (every entry but "." and ".." when tag is NULL). */
static void unlink_entries(const char *dir, const char *tag)
{
    char buf[4096] __attribute__((aligned(8)));
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    ssize_t n;
    while ((n = getdents64(fd, buf, sizeof buf)) > 0)
        for (ssize_t off = 0; off < n;) {
            struct dirent64 *d = (struct dirent64 *)(buf + off);
            off += d->d_reclen;
            if (tag ? has_tag(d->d_name, tag) : strcmp(d->d_name, ".") && strcmp(d->d_name, ".."))
                unlinkat(fd, d->d_name, 0);
        }
    close(fd);
}

/* Remove a directory and the files in it (one level: stages hold plain files). */
static void rm_stage(const char *dir)
{
    /* gnuplot may still be creating a picture in it: go round again */
    for (int tries = 0; tries < 8; tries++) {
        unlink_entries(dir, NULL);
        if (rmdir(dir) == 0 || errno != ENOTEMPTY) return;
    }
}

static void rm_path(const char *p)
{
    if (unlink(p) != 0 && (errno == EISDIR || errno == EPERM)) rm_stage(p);
}

static void rm_tagged_in(const char *dir) { unlink_entries(dir, g_tag); }

static void on_signal(int sig)
{
    if (getpid() != g_owner) { /* a forked child that has not exec'd yet: not its files */
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    atomic_store(&g_dying, 1);
    while (atomic_load(&g_busy)) {
    }
    for (int c = 0; c < CLI_OUT_CHUNKS; c++) {
        if (!g_chunks[c]) continue;
        for (int i = 0; i < CLI_OUT_CHUNK; i++) {
            const char *s = atomic_load(&g_chunks[c][i]);
            if (!s) continue;
            if (s[0] == 'W') rm_tagged_in(s + 1);
            else rm_path(s + 1);
        }
    }
    _exit(128 + sig);
}

/* stdout as a stream of our own over descriptor 1 (glibc lets a program assign stdout): its
 * write function keeps the errno of the first failed write, which a plain stdout forgets once
 * its buffer has been dropped (`calibrate --json > /dev/full` read "Input/output error"). */
static int g_stdout_werr;

static ssize_t stdout_write(void *c, const char *buf, size_t n)
{
    (void)c;
    size_t off = 0;
    while (off < n) {
        ssize_t w = write(STDOUT_FILENO, buf + off, n - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            if (!g_stdout_werr) g_stdout_werr = w < 0 ? errno : EIO;
            errno = g_stdout_werr;
            return -1;
        }
        off += (size_t)w;
    }
    return (ssize_t)n;
}

static void stdout_wrap(void)
{
    if (fcntl(STDOUT_FILENO, F_GETFD) == -1) return; /* closed: leave it be */
    cookie_io_functions_t io = {.write = stdout_write, .close = cookie_close};
    FILE *f = fopencookie(NULL, "w", io);
    if (!f) return;
    setvbuf(f, NULL, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF, BUFSIZ);
    fflush(stdout);
    stdout = f;
}

static int stdout_errno(void) { return g_stdout_werr ? g_stdout_werr : errno ? errno : EIO; }

void cli_output_init(void)
{
    if (g_owner) return;
    stdout_wrap();
    g_owner = getpid();
    snprintf(g_tag, sizeof g_tag, ".tmp.%ld", (long)g_owner);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGINT);
    sigaddset(&sa.sa_mask, SIGTERM);
    sigaddset(&sa.sa_mask, SIGHUP);
    sigaddset(&sa.sa_mask, SIGPIPE);
    /* SIGPIPE too: `dtsim run --timeline t.json | head` whose reader left dies on the final
     * flush of stdout, before the renames; it must not leave the temporaries behind */
    const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
    for (int i = 0; i < 4; i++) {
        struct sigaction cur;
        /* keep "ignored" (nohup, a background job's SIGINT) as the caller set it */
        if (sigaction(sigs[i], NULL, &cur) == 0 && cur.sa_handler == SIG_IGN) continue;
        sigaction(sigs[i], &sa, NULL);
    }
}

/* ---- output records ----------------------------------------------------------------------- */

typedef enum { REC_OPEN, REC_DONE, REC_GONE } rec_state;

struct cli_out_rec {
    char *path;        /* the target as given */
    char *tmp;         /* temporary file or staged directory; NULL when written in place */
    FILE *f;
    int fd;            /* -1 once closed */
    int werr;          /* errno of the first failed write, 0 if none */
    bool is_stdout, is_dir;
    rec_state state;
    int slot;          /* in the signal table, -1 if none */
    struct cli_out_rec *next;
};

static struct cli_out_rec *g_recs, **g_tail = &g_recs;
static unsigned long g_seq;          /* N of .NAME.tmp.PID.N */

static ssize_t cookie_write(void *c, const char *buf, size_t n)
{
    struct cli_out_rec *r = c;
    size_t off = 0;
    while (off < n) {
        ssize_t w = write(r->fd, buf + off, n - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            if (!r->werr) r->werr = w < 0 ? errno : EIO;
            errno = r->werr;
            return -1;
        }
        off += (size_t)w;
    }
    return (ssize_t)n;
}

static int cookie_close(void *c)
{
    (void)c; /* the descriptor is closed, and checked, by finish() */
    return 0;
}

static const char *kind_of(mode_t m)
{
    return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket"
         : S_ISBLK(m) ? "a block device" : S_ISLNK(m) ? "a symbolic link" : "not a regular file";
}

/* Split PATH into its directory ("." if none) and base name; base is empty for "dir/". */
static void split(const char *path, char *dir, size_t dn, const char **base)
{
    const char *sl = strrchr(path, '/');
    if (!sl) {
        snprintf(dir, dn, ".");
        *base = path;
    } else {
        snprintf(dir, dn, "%.*s", sl == path ? 1 : (int)(sl - path), path);
        *base = sl + 1;
    }
}

/* Remove .BASE.tmp.PID.N of processes that are gone (a kill -9 leaves them). A live PID, or
 * one that cannot be probed (EPERM: another user's), is left alone. */
static void remove_stale(const char *dir, const char *base)
{
    DIR *d = opendir(dir);
    if (!d) return;
    char prefix[NAME_MAX + 16];
    int pl = snprintf(prefix, sizeof prefix, ".%s.tmp.", base);
    if (pl <= 0 || (size_t)pl >= sizeof prefix) {
        closedir(d);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strncmp(de->d_name, prefix, (size_t)pl)) continue;
        char *end;
        long pid = strtol(de->d_name + pl, &end, 10);
        if (end == de->d_name + pl || *end != '.' || pid <= 0 || pid == (long)g_owner) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        char p[PATH_MAX];
        if (snprintf(p, sizeof p, "%s/%s", dir, de->d_name) < (int)sizeof p) rm_path(p);
    }
    closedir(d);
}

static struct cli_out_rec *rec_new(const char *path)
{
    struct cli_out_rec *r = dt_xcalloc(1, sizeof *r);
    r->path = dt_xstrdup(path);
    r->fd = -1;
    r->slot = -1;
    *g_tail = r;
    g_tail = &r->next;
    return r;
}

/* The same target twice in one command: the second rename would silently win. */
static bool taken(const char *path)
{
    for (struct cli_out_rec *r = g_recs; r; r = r->next)
        if (r->state != REC_GONE && !r->is_stdout && !strcmp(r->path, path)) return true;
    return false;
}

/* Where a new output may go: 0 (replace through a temporary), 1 (a character device: write in
 * place), or an error. */
static int check_target(const char *path, bool want_dir, int *direct, dt_error *err)
{
    *direct = 0;
    struct stat st;
    if (!path[0]) return dt_error_set(err, DT_EINPUT, NULL, NULL, "an output path is empty");
    if (taken(path))
        return dt_error_set(err, DT_EINPUT, path, NULL, "given as two outputs of one command");
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT) return DT_OK;
        return dt_error_set(err, DT_EIO, path, NULL, "%s: %s",
                            want_dir ? "cannot create directory" : "cannot write", strerror(errno));
    }
    if (want_dir) {
        struct stat t;
        if (stat(path, &t) == 0 && S_ISDIR(t.st_mode)) return DT_OK; /* a link to a directory is fine */
        return dt_error_set(err, DT_EIO, path, NULL, "is %s, not a directory: refusing to replace it",
                            kind_of(st.st_mode));
    }
    if (S_ISREG(st.st_mode)) return DT_OK;
    struct stat t;
    if (S_ISCHR(st.st_mode) || (S_ISLNK(st.st_mode) && stat(path, &t) == 0 && S_ISCHR(t.st_mode))) {
        *direct = 1;
        return DT_OK;
    }
    return dt_error_set(err, DT_EIO, path, NULL,
                        "is %s: refusing to replace it with a regular file (write to a new name, "
                        "or - for stdout)", kind_of(st.st_mode));
}

/* DIR/.BASE.tmp.PID.N, registered in the signal table. */
static int make_tmp_name(struct cli_out_rec *r, dt_error *err)
{
    char dir[PATH_MAX];
    const char *base;
    split(r->path, dir, sizeof dir, &base);
    if (!base[0] || !strcmp(base, ".") || !strcmp(base, ".."))
        return dt_error_set(err, DT_EINPUT, r->path, NULL, "names a directory, expected a file name");
    remove_stale(dir, base);
    size_t n = strlen(dir) + strlen(base) + 64;
    r->tmp = dt_xmalloc(n);
    /* a name of this PID may exist: left by an earlier process that had the same PID */
    struct stat st;
    do snprintf(r->tmp, n, "%s/.%s.tmp.%ld.%lu", dir, base, (long)g_owner, ++g_seq);
    while (lstat(r->tmp, &st) == 0);
    if (strlen(r->tmp) >= PATH_MAX)
        return dt_error_set(err, DT_EINPUT, r->path, NULL, "path too long");
    r->slot = table_add('T', r->tmp);
    if (r->slot < 0)
        return dt_error_set(err, DT_EIO, r->path, NULL, "too many outputs in one command (%d)",
                            CLI_OUT_CHUNK * CLI_OUT_CHUNKS);
    return DT_OK;
}

static void drop(struct cli_out_rec *r)
{
    if (r->f && !r->is_stdout) fclose(r->f);
    r->f = NULL;
    if (r->fd >= 0) close(r->fd);
    r->fd = -1;
    if (r->tmp && r->state != REC_GONE) rm_path(r->tmp);
    table_remove(r->slot);
    r->slot = -1;
    r->state = REC_GONE;
}

/* /dev/stdout is "-": it is a link to whatever fd 1 is (often a pipe, refused otherwise) */
bool cli_is_stdout(const char *path) { return !strcmp(path, "-") || !strcmp(path, "/dev/stdout"); }

int cli_outfile_open(cli_outfile *o, const char *path, dt_error *err)
{
    memset(o, 0, sizeof *o);
    if (!g_owner) cli_output_init();
    bool std = cli_is_stdout(path);
    int direct = 0, rc = std ? DT_OK : check_target(path, false, &direct, err);
    if (rc) return rc;
    struct cli_out_rec *r = rec_new(path);
    o->rec = r;
    o->path = r->path;
    if (std) {
        r->is_stdout = true;
        r->f = o->f = stdout;
        return DT_OK;
    }
    if (!direct) rc = make_tmp_name(r, err);
    if (!rc) {
        const char *p = direct ? path : r->tmp;
        r->fd = direct ? open(p, O_WRONLY | O_NOCTTY | O_CLOEXEC)
                       : open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOCTTY | O_CLOEXEC, 0666);
        if (r->fd < 0) rc = dt_error_set(err, DT_EIO, path, NULL, "cannot write: %s", strerror(errno));
    }
    if (!rc) {
        cookie_io_functions_t io = {.write = cookie_write, .close = cookie_close};
        r->f = fopencookie(r, "w", io);
        if (!r->f) rc = dt_error_set(err, DT_EIO, path, NULL, "cannot write: %s", strerror(errno));
    }
    if (rc) {
        drop(r);
        o->rec = NULL;
        return rc;
    }
    o->f = r->f;
    return DT_OK;
}

/* Flush, fsync (files only: a device or pipe has nothing to sync) and close, each checked. */
static int finish(struct cli_out_rec *r, dt_error *err)
{
    if (r->state != REC_OPEN || r->is_dir) return DT_OK;
    if (r->is_stdout) {
        r->state = REC_DONE;
        if (fflush(stdout) != 0 || ferror(stdout))
            return dt_error_set(err, DT_EIO, "stdout", NULL, "write failed: %s", strerror(stdout_errno()));
        return DT_OK;
    }
    int e = 0;
    if (fflush(r->f) != 0 || ferror(r->f)) e = r->werr ? r->werr : errno ? errno : EIO;
    fclose(r->f); /* cookie_close: the descriptor is ours */
    r->f = NULL;
    if (!e && r->tmp && fsync(r->fd) != 0) e = errno;
    if (close(r->fd) != 0 && !e) e = errno;
    r->fd = -1;
    if (e) {
        int rc = dt_error_set(err, DT_EIO, r->path, NULL, "write failed: %s", strerror(e));
        drop(r);
        return rc;
    }
    r->state = REC_DONE;
    return DT_OK;
}

int cli_outfile_close(cli_outfile *o, dt_error *err)
{
    if (!o->rec) return DT_OK;
    int rc = finish(o->rec, err);
    o->f = NULL;
    return rc;
}

int cli_outfile_commit(cli_outfile *o, dt_error *err) { return cli_outfile_close(o, err); }

void cli_outfile_abort(cli_outfile *o)
{
    if (o->rec && o->rec->state != REC_GONE && !o->rec->is_stdout) drop(o->rec);
    o->f = NULL;
    o->rec = NULL;
}

int cli_outdir_stage(const char *dir, const char **stage, dt_error *err)
{
    if (!g_owner) cli_output_init();
    char d[PATH_MAX];
    snprintf(d, sizeof d, "%s", dir);
    for (size_t n = strlen(d); n > 1 && d[n - 1] == '/';) d[--n] = 0; /* "out/" is "out" */
    int direct;
    int rc = check_target(d, true, &direct, err);
    if (rc) return rc;
    struct cli_out_rec *r = rec_new(d);
    r->is_dir = true;
    rc = make_tmp_name(r, err);
    if (!rc && mkdir(r->tmp, 0777) != 0) {
        rc = dt_error_set(err, DT_EIO, d, NULL, "cannot create a directory beside it: %s", strerror(errno));
        table_remove(r->slot);
        r->slot = -1;
        r->state = REC_GONE;
        return rc;
    }
    if (rc) {
        drop(r);
        return rc;
    }
    *stage = r->tmp;
    return DT_OK;
}

void cli_output_watch_dir(const char *dir)
{
    if (!g_owner) cli_output_init();
    struct cli_out_rec *r = rec_new(dir);
    r->is_dir = true;
    r->state = REC_GONE; /* nothing to commit */
    r->slot = table_add('W', dir);
}

void cli_output_explain(dt_error *err)
{
    if (err->code != DT_EIO || err->file[0]) return;
    for (struct cli_out_rec *r = g_recs; r; r = r->next)
        if (r->werr) {
            char msg[DT_ERR_MSG_MAX];
            snprintf(msg, sizeof msg, "%s", err->msg);
            dt_error_set(err, DT_EIO, r->path, NULL, "%.400s: %s", msg, strerror(r->werr));
            return;
        }
    if (g_stdout_werr)
        dt_error_set(err, DT_EIO, "stdout", NULL, "write failed: %s", strerror(g_stdout_werr));
}

/* Calls fn(target, staged) for every file staged in r's directory, in directory order, until
 * one fails. */
static int each_staged(struct cli_out_rec *r, int (*fn)(const char *target, const char *staged, dt_error *err),
                       dt_error *err)
{
    DIR *d = opendir(r->tmp);
    if (!d) return dt_error_set(err, DT_EIO, r->path, NULL, "staged output lost: %s", strerror(errno));
    int rc = DT_OK;
    struct dirent *de;
    char p[PATH_MAX], s[PATH_MAX];
    while (!rc && (de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", r->path, de->d_name);
        snprintf(s, sizeof s, "%s/%s", r->tmp, de->d_name);
        rc = fn(p, s, err);
    }
    closedir(d);
    return rc;
}

/* A staged file's target must be absent or regular; the file is fsynced now. */
static int check_staged_file(const char *p, const char *s, dt_error *err)
{
    struct stat st;
    if (lstat(p, &st) == 0 && !S_ISREG(st.st_mode))
        return dt_error_set(err, DT_EIO, p, NULL, "is %s: refusing to replace it with a regular file",
                            kind_of(st.st_mode));
    int fd = open(s, O_RDONLY | O_CLOEXEC), rc = DT_OK;
    if (fd < 0 || fsync(fd) != 0) rc = dt_error_set(err, DT_EIO, p, NULL, "write failed: %s", strerror(errno));
    if (fd >= 0) close(fd);
    return rc;
}

static int rename_staged_file(const char *p, const char *s, dt_error *err)
{
    if (rename(s, p) != 0)
        return dt_error_set(err, DT_EIO, p, NULL, "cannot rename into place: %s", strerror(errno));
    return DT_OK;
}

/* Every staged file: its target must be absent or regular; fsync it now. */
static int check_stage(struct cli_out_rec *r, dt_error *err) { return each_staged(r, check_staged_file, err); }

static int commit_stage(struct cli_out_rec *r, dt_error *err)
{
    if (mkdir(r->path, 0777) != 0 && errno != EEXIST)
        return dt_error_set(err, DT_EIO, r->path, NULL, "cannot create directory: %s", strerror(errno));
    return each_staged(r, rename_staged_file, err);
}

static void free_all(void)
{
    while (g_recs) {
        struct cli_out_rec *r = g_recs;
        g_recs = r->next;
        if (r->state != REC_GONE || r->slot >= 0) {
            if (r->state != REC_GONE) drop(r);
            table_remove(r->slot);
        }
        free(r->path);
        free(r->tmp);
        free(r);
    }
    g_tail = &g_recs;
}

int cli_output_commit_all(dt_error *err)
{
    int rc = DT_OK;
    for (struct cli_out_rec *r = g_recs; r && !rc; r = r->next)
        if (r->state == REC_OPEN) rc = r->is_dir ? check_stage(r, err) : finish(r, err);
    /* stdout is an output too: a full disk under `> file` fails the command before any file
     * appears. */
    if (!rc) {
        errno = 0;
        if (fflush(stdout) != 0 || ferror(stdout))
            rc = dt_error_set(err, DT_EIO, "stdout", NULL, "write failed: %s", strerror(stdout_errno()));
    }
    /* The renames run with the signals held back: an interrupt now acts once they are done
     * (every output in place) instead of leaving some renamed and some not. */
    sigset_t hold, old;
    sigemptyset(&hold);
    sigaddset(&hold, SIGINT);
    sigaddset(&hold, SIGTERM);
    sigaddset(&hold, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &hold, &old);
    for (struct cli_out_rec *r = g_recs; r && !rc; r = r->next) {
        if (r->is_stdout || r->state == REC_GONE) continue;
        if (r->is_dir) rc = commit_stage(r, err);
        else if (r->tmp && rename(r->tmp, r->path) != 0)
            rc = dt_error_set(err, DT_EIO, r->path, NULL, "cannot rename %s into place: %s", r->tmp, strerror(errno));
        if (!rc) {
            if (r->is_dir) rm_stage(r->tmp);
            table_remove(r->slot);
            r->slot = -1;
            r->state = REC_GONE;
        }
    }
    free_all();
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

void cli_output_abort_all(void)
{
    free_all();
    /* a failed command's stdout is still flushed, unchecked: its exit status already says it failed */
}
