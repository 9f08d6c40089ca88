/* sweep_run.c - running a sweep's points on a thread pool (and MPI ranks), with resume.
 *
 * Durability: a finished point becomes OUT/points/NNNNNNNN.json by write-to-temporary, fsync,
 * rename; a kill -9 leaves either the whole record or none (plus at most one stray temporary,
 * ignored and overwritten later). Resuming reads the records back and runs only the missing
 * points. Cost: one small file and one fsync per point; a sweep of millions of points would
 * rather batch records into an append-only log, but then needs recovery of a torn tail.
 *
 * Threads: workers take point indices from a shared counter, build the point's scenario (a
 * private copy), evaluate it and hand the record back; only the calling thread touches files,
 * progress and MPI. Under MPI, rank 0 owns the directory: it decides what is pending,
 * broadcasts it, and writes records arriving from other ranks as they come.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dtsim/json.h"
#include "dtsim/sweep.h"
#include "dtsim/threads.h"
#include "sweep_internal.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int mkdir_p(const char *dir, dt_error *err)
{
    char *p = dt_xstrdup(dir);
    for (char *s = p + 1;; s++) {
        char c = *s;
        if (c != '/' && c != '\0') continue;
        *s = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            int e = errno;
            dt_error_set(err, DT_EIO, p, NULL, "cannot create directory: %s", strerror(e));
            free(p);
            return DT_EIO;
        }
        *s = c;
        if (c == '\0') break;
    }
    free(p);
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return dt_error_set(err, DT_EIO, dir, NULL, "not a directory");
    return DT_OK;
}

static char *path_join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = dt_xmalloc(n);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

static char *record_path(const char *out_dir, size_t point)
{
    char name[64];
    snprintf(name, sizeof name, "points/%08zu.json", point);
    return path_join(out_dir, name);
}

/* Write text to path atomically: temporary beside it, fsync, rename. */
static int write_atomic(const char *path, const char *text, size_t len, bool sync, dt_error *err)
{
    size_t n = strlen(path) + 32;
    char *tmp = dt_xmalloc(n);
    snprintf(tmp, n, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    int rc = DT_OK;
    if (fd < 0) {
        rc = dt_error_set(err, DT_EIO, path, NULL, "cannot write: %s", strerror(errno));
        free(tmp);
        return rc;
    }
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            rc = dt_error_set(err, DT_EIO, path, NULL, "write failed: %s", strerror(errno));
            break;
        }
        off += (size_t)w;
    }
    if (!rc && sync && fsync(fd) != 0)
        rc = dt_error_set(err, DT_EIO, path, NULL, "fsync failed: %s", strerror(errno));
    if (close(fd) != 0 && !rc)
        rc = dt_error_set(err, DT_EIO, path, NULL, "close failed: %s", strerror(errno));
    if (!rc && rename(tmp, path) != 0)
        rc = dt_error_set(err, DT_EIO, path, NULL, "cannot rename from %s: %s", tmp,
                          strerror(errno));
    if (rc) unlink(tmp);
    free(tmp);
    return rc;
}

static void hash_hex(uint64_t h, char buf[17]) { snprintf(buf, 17, "%016" PRIx64, h); }

/* A record file: {"scenario_hash": "...", "record": {...}}. */
static int write_record(const char *out_dir, uint64_t hash, cJSON *rec, dt_error *err)
{
    char hx[17];
    hash_hex(hash, hx);
    size_t point = (size_t)cJSON_GetObjectItemCaseSensitive(rec, "point")->valuedouble;
    cJSON *wrap = cJSON_CreateObject();
    cJSON_AddStringToObject(wrap, "scenario_hash", hx);
    cJSON_AddItemReferenceToObject(wrap, "record", rec);
    char *text = cJSON_PrintUnformatted(wrap);
    cJSON_Delete(wrap);
    size_t len = strlen(text);
    text = dt_xrealloc(text, len + 2);
    text[len++] = '\n';
    text[len] = '\0';
    char *path = record_path(out_dir, point);
    int rc = write_atomic(path, text, len, true, err);
    free(path);
    free(text);
    return rc;
}

/* The record of point from its file, or NULL if absent or not this scenario's. */
static cJSON *read_record(const char *out_dir, uint64_t hash, size_t point)
{
    char *path = record_path(out_dir, point);
    cJSON *root = NULL, *rec = NULL;
    dt_error e = {0};
    if (access(path, F_OK) == 0 && js_parse_file(path, &root, &e) == DT_OK) {
        char hx[17];
        hash_hex(hash, hx);
        const cJSON *h = cJSON_GetObjectItemCaseSensitive(root, "scenario_hash");
        cJSON *r = cJSON_GetObjectItemCaseSensitive(root, "record");
        const cJSON *p = r ? cJSON_GetObjectItemCaseSensitive(r, "point") : NULL;
        if (cJSON_IsString(h) && !strcmp(h->valuestring, hx) && cJSON_IsNumber(p) &&
            p->valuedouble == (double)point)
            rec = cJSON_DetachItemFromObjectCaseSensitive(root, "record");
    }
    cJSON_Delete(root);
    free(path);
    return rec;
}

/* OUT/sweep.json names the scenario (by hash) the directory's records belong to. */
static int check_manifest(const sweep_config *cfg, uint64_t hash, size_t n_points,
                          dt_error *err)
{
    char *path = path_join(cfg->out_dir, "sweep.json");
    char hx[17];
    hash_hex(hash, hx);
    int rc = DT_OK;
    if (!cfg->fresh && access(path, F_OK) == 0) {
        cJSON *m = NULL;
        rc = js_parse_file(path, &m, err);
        if (!rc) {
            const cJSON *h = cJSON_GetObjectItemCaseSensitive(m, "scenario_hash");
            if (!cJSON_IsString(h) || strcmp(h->valuestring, hx) != 0)
                rc = dt_error_set(err, DT_EINPUT, path, "scenario_hash",
                                  "%s holds results of another scenario, or of other contents of "
                                  "the topology or calibration files it names (hash %s, this "
                                  "one is %s): use another --out, or --fresh to start over",
                                  cfg->out_dir, cJSON_IsString(h) ? h->valuestring : "?", hx);
        }
        cJSON_Delete(m);
        free(path);
        return rc;
    }
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "scenario", cfg->file ? cfg->file : "");
    cJSON_AddStringToObject(m, "scenario_hash", hx);
    cJSON_AddNumberToObject(m, "points", (double)n_points);
    cJSON_AddItemToObject(m, "scenario_text", cJSON_Duplicate(cfg->scenario, 1));
    char *text = cJSON_Print(m);
    cJSON_Delete(m);
    rc = write_atomic(path, text, strlen(text), true, err);
    free(text);
    free(path);
    return rc;
}

/* ---- the thread pool ---------------------------------------------------------------------- */

typedef struct pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    const sweep_config *cfg;
    const sweep_spec *spec;
    const size_t *todo; /* point indices this process runs */
    size_t n_todo, next;
    cJSON **recs;       /* per todo slot, set when finished */
    size_t *finished;   /* todo slots in completion order */
    size_t n_finished;
} pool;

static int default_eval(void *ctx, const cJSON *scenario, const char *file, const char *base_dir,
                        run_result *out, dt_error *err)
{
    run_options opt;
    memset(&opt, 0, sizeof opt);
    return run_scenario(scenario, file, base_dir, &opt, out, err);
}

static cJSON *eval_point(const sweep_config *cfg, const sweep_spec *spec, size_t point)
{
    dt_error e;
    dt_error_clear(&e);
    run_result r;
    memset(&r, 0, sizeof r);
    cJSON *sc = sweep_point_scenario(spec, cfg->scenario, point, cfg->file, &e);
    if (sc) {
        sweep_eval_fn eval = cfg->eval ? cfg->eval : default_eval;
        int rc = eval(cfg->eval_ctx, sc, cfg->file, cfg->base_dir, &r, &e);
        if (rc != DT_OK && e.code == DT_OK) e.code = rc;
        cJSON_Delete(sc);
    }
    cJSON *rec = sweep_record(spec, point, &r, &e);
    run_result_free(&r);
    return rec;
}

static void *worker(void *arg)
{
    pool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        size_t k = p->next < p->n_todo ? p->next++ : p->n_todo;
        pthread_mutex_unlock(&p->mu);
        if (k == p->n_todo) return NULL;
        cJSON *rec = eval_point(p->cfg, p->spec, p->todo[k]);
        pthread_mutex_lock(&p->mu);
        p->recs[k] = rec;
        p->finished[p->n_finished++] = k;
        pthread_cond_signal(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
}

typedef struct progress {
    const sweep_config *cfg;
    size_t done, total, resumed, failed;
    double t0;
    sweep_summary *sum; /* first failure goes here */
} progress;

static void tick(progress *pg)
{
    if (pg->cfg->progress)
        pg->cfg->progress(pg->cfg->progress_ctx, pg->done, pg->total, pg->resumed,
                          now_s() - pg->t0);
}

static bool record_failed(const cJSON *rec)
{
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(rec, "status");
    return !cJSON_IsString(st) || strcmp(st->valuestring, "ok") != 0;
}

/* Count a failed record and keep the lowest-numbered failure's message (deterministic
 * whatever the completion order). */
static void note_failure(progress *pg, const cJSON *rec)
{
    pg->failed++;
    long point = (long)cJSON_GetObjectItemCaseSensitive(rec, "point")->valuedouble;
    if (pg->sum->first_failed >= 0 && pg->sum->first_failed < point) return;
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(rec, "error");
    pg->sum->first_failed = point;
    snprintf(pg->sum->first_error, sizeof pg->sum->first_error, "%s",
             cJSON_IsString(e) ? e->valuestring : "(no message)");
}

/* Rank 0 (or the only process): store a finished record. Takes ownership of rec. */
static int store(const sweep_config *cfg, uint64_t hash, cJSON *rec, progress *pg, dt_error *err)
{
    int rc = write_record(cfg->out_dir, hash, rec, err);
    if (record_failed(rec)) note_failure(pg, rec);
    cJSON_Delete(rec);
    pg->done++;
    tick(pg);
    return rc;
}

/* Runs todo on cfg->jobs threads. Rank 0 stores its records and those arriving from other
 * ranks until `expect` records are in; other ranks send theirs. */
static int run_pool(const sweep_config *cfg, const sweep_spec *spec, uint64_t hash,
                    const size_t *todo, size_t n_todo, size_t expect, progress *pg,
                    dt_error *err)
{
    pool p;
    memset(&p, 0, sizeof p);
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.cv, NULL);
    p.cfg = cfg;
    p.spec = spec;
    p.todo = todo;
    p.n_todo = n_todo;
    p.recs = dt_xcalloc(n_todo ? n_todo : 1, sizeof *p.recs);
    p.finished = dt_xcalloc(n_todo ? n_todo : 1, sizeof *p.finished);
    int jobs = cfg->jobs < 1 ? 1 : cfg->jobs;
    if ((size_t)jobs > n_todo) jobs = (int)(n_todo ? n_todo : 1);
    dt_threads th;
    int started = dt_threads_start(&th, n_todo > 0 ? jobs : 0, worker, &p);
    int rc = DT_OK;
    /* No thread could start (resource limits): run everything on the calling thread, then
     * store it below as usual. Slower, same results. */
    if (n_todo > 0 && started == 0) worker(&p);
    bool root = cfg->mpi_rank == 0;
    size_t handled = 0, stored = 0;
    while (rc == DT_OK && (root ? stored < expect : handled < n_todo)) {
        pthread_mutex_lock(&p.mu);
        if (handled == p.n_finished) {
            if (cfg->mpi_size > 1 && root) {
                /* Wake up now and then to take records arriving from other ranks. */
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_nsec += 20 * 1000 * 1000;
                if (ts.tv_nsec >= 1000000000L) {
                    ts.tv_sec++;
                    ts.tv_nsec -= 1000000000L;
                }
                pthread_cond_timedwait(&p.cv, &p.mu, &ts);
            } else if (handled < n_todo) {
                pthread_cond_wait(&p.cv, &p.mu);
            }
        }
        size_t upto = p.n_finished;
        pthread_mutex_unlock(&p.mu);
        for (; handled < upto && rc == DT_OK; handled++) {
            size_t k = p.finished[handled];
            cJSON *rec = p.recs[k];
            p.recs[k] = NULL;
            if (root) {
                rc = store(cfg, hash, rec, pg, err);
                stored++;
            } else {
                char *text = cJSON_PrintUnformatted(rec);
                cJSON_Delete(rec);
                if (sweep_mpi_send_record(text) != DT_OK)
                    rc = dt_error_set(err, DT_EINTERNAL, NULL, NULL, "MPI_Send to rank 0 failed");
                free(text);
            }
        }
        if (cfg->mpi_size > 1 && root) {
            char *text = NULL;
            int got = 0;
            while (rc == DT_OK && (got = sweep_mpi_poll_record(&text)) == 1) {
                dt_error pe = {0};
                cJSON *rec = NULL;
                if (js_parse_text(text, strlen(text), "(record from another rank)", &rec, &pe))
                    rc = dt_error_set(err, DT_EINTERNAL, NULL, NULL, "garbled record from a rank");
                else
                    rc = store(cfg, hash, rec, pg, err);
                free(text);
                stored++;
            }
            if (got < 0 && rc == DT_OK)
                rc = dt_error_set(err, DT_EINTERNAL, NULL, NULL, "MPI receive failed");
        }
    }
    if (rc != DT_OK) {
        /* Stop handing out work; finished records already on disk stay (resume picks up). */
        pthread_mutex_lock(&p.mu);
        p.next = p.n_todo;
        pthread_mutex_unlock(&p.mu);
    }
    dt_threads_join(&th);
    for (size_t k = 0; k < n_todo; k++) cJSON_Delete(p.recs[k]);
    free(p.recs);
    free(p.finished);
    pthread_cond_destroy(&p.cv);
    pthread_mutex_destroy(&p.mu);
    return rc;
}

/* ---- assembling the results --------------------------------------------------------------- */

static int open_tmp(const char *path, FILE **f, char **tmp, dt_error *err)
{
    size_t n = strlen(path) + 32;
    *tmp = dt_xmalloc(n);
    snprintf(*tmp, n, "%s.tmp.%ld", path, (long)getpid());
    *f = fopen(*tmp, "w");
    if (!*f) {
        int e = errno;
        free(*tmp);
        *tmp = NULL;
        return dt_error_set(err, DT_EIO, path, NULL, "cannot write: %s", strerror(e));
    }
    return DT_OK;
}

static int commit_tmp(const char *path, FILE *f, char *tmp, int rc, dt_error *err)
{
    /* errno of the flush, fsync or close that failed; an earlier failed write whose cause the
     * stream did not keep reads EIO */
    int e = 0;
    errno = 0;
    if (fflush(f) != 0 || ferror(f)) e = errno ? errno : EIO;
    if (!e && fsync(fileno(f)) != 0) e = errno;
    if (fclose(f) != 0 && !e) e = errno;
    if (!rc && e) rc = dt_error_set(err, DT_EIO, path, NULL, "write failed: %s", strerror(e));
    if (!rc && rename(tmp, path) != 0)
        rc = dt_error_set(err, DT_EIO, path, NULL, "cannot rename: %s", strerror(errno));
    if (rc) unlink(tmp);
    free(tmp);
    return rc;
}

int sweep_assemble(const sweep_spec *s, const sweep_config *cfg, uint64_t hash, dt_error *err)
{
    char *csv_path = path_join(cfg->out_dir, "results.csv");
    char *json_path = path_join(cfg->out_dir, "results.json");
    FILE *csv = NULL, *js = NULL;
    char *csv_tmp = NULL, *js_tmp = NULL;
    int rc = open_tmp(csv_path, &csv, &csv_tmp, err);
    if (!rc) {
        rc = open_tmp(json_path, &js, &js_tmp, err);
        if (rc) {
            fclose(csv);
            unlink(csv_tmp);
            free(csv_tmp);
            free(csv_path);
            free(json_path);
            return rc;
        }
    } else {
        free(csv_path);
        free(json_path);
        return rc;
    }
    /* results.json streams one record per line so huge sweeps need no whole tree in memory. */
    char hx[17];
    hash_hex(hash, hx);
    cJSON *head = cJSON_CreateObject();
    cJSON_AddStringToObject(head, "scenario", cfg->file ? cfg->file : "");
    cJSON_AddStringToObject(head, "scenario_hash", hx);
    cJSON_AddNumberToObject(head, "points_total", (double)sweep_n_points(s));
    cJSON *ax = cJSON_AddArrayToObject(head, "axes");
    for (size_t c = 0; c < sweep_n_columns(s); c++)
        cJSON_AddItemToArray(ax, cJSON_CreateString(sweep_column_name(s, c)));
    cJSON *mt = cJSON_AddArrayToObject(head, "metrics");
    for (const char *const *m = sweep_metric_names(); *m; m++)
        cJSON_AddItemToArray(mt, cJSON_CreateString(*m));
    char *ht = cJSON_PrintUnformatted(head);
    cJSON_Delete(head);
    ht[strlen(ht) - 1] = '\0'; /* drop the closing brace: "points" follows */
    fprintf(js, "%s,\"points\":[\n", ht);
    free(ht);
    sweep_csv_header(s, csv);
    for (size_t i = 0; i < sweep_n_points(s) && !rc; i++) {
        cJSON *rec = read_record(cfg->out_dir, hash, i);
        if (!rec) {
            rc = dt_error_set(err, DT_EIO, cfg->out_dir, NULL, "point %zu has no record", i);
            break;
        }
        sweep_csv_row(s, rec, csv);
        char *t = cJSON_PrintUnformatted(rec);
        fprintf(js, "%s%s\n", t, i + 1 < sweep_n_points(s) ? "," : "");
        free(t);
        cJSON_Delete(rec);
    }
    fputs("]}\n", js);
    rc = commit_tmp(csv_path, csv, csv_tmp, rc, err);
    rc = commit_tmp(json_path, js, js_tmp, rc, err);
    free(csv_path);
    free(json_path);
    return rc;
}

/* One sweep at a time per directory: an advisory lock on OUT/.lock, held for the run and
 * released by the kernel however the process ends (kill -9 included), so a resume never finds
 * a stale lock. Returns the locked descriptor, or -1 with err filled. */
static int lock_dir(const char *out_dir, dt_error *err)
{
    char *path = path_join(out_dir, ".lock");
    int fd = open(path, O_RDWR | O_CREAT, 0666);
    if (fd < 0) {
        dt_error_set(err, DT_EIO, path, NULL, "cannot open: %s", strerror(errno));
        free(path);
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        close(fd);
        if (e == EWOULDBLOCK)
            /* a run-time condition, not bad input: exit 1 (README), as other busy resources */
            dt_error_set(err, DT_EIO, out_dir, NULL,
                         "another dtsim sweep is writing into this directory; wait for it or "
                         "use another --out");
        else
            dt_error_set(err, DT_EIO, path, NULL, "cannot lock: %s", strerror(e));
        free(path);
        return -1;
    }
    free(path);
    return fd;
}

/* Temporaries a killed run left behind: never complete, never read, removed so they do not
 * pile up over many interruptions. Under the directory lock every sweep temporary (points/ and
 * the top level's sweep.json/results.* NAME.tmp.PID) is stale. Others at the top level (the
 * dtsim command's .NAME.tmp.PID.N, e.g. a report being staged into OUT/report) may belong to
 * a live process that holds no lock: removed only once kill(PID, 0) says it is gone. */
static bool sweep_temporary(const char *name)
{
    static const char *const own[] = {"sweep.json.tmp.", "results.csv.tmp.", "results.json.tmp."};
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if (!strncmp(name, own[i], strlen(own[i]))) return true;
    return false;
}

/* PID of NAME.tmp.PID or NAME.tmp.PID.N, 0 if NAME is not one. */
static long temporary_pid(const char *name)
{
    const char *t = strstr(name, ".tmp.");
    while (t) {
        char *end;
        long pid = strtol(t + 5, &end, 10);
        if (end != t + 5 && pid > 0 && (*end == '\0' || *end == '.')) return pid;
        t = strstr(t + 1, ".tmp.");
    }
    return 0;
}

static void remove_tree1(const char *path)
{
    if (unlink(path) == 0 || (errno != EISDIR && errno != EPERM)) return;
    DIR *d = opendir(path);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
            char *f = path_join(path, de->d_name);
            unlink(f);
            free(f);
        }
        closedir(d);
    }
    rmdir(path);
}

static void remove_stray_temporaries(const char *out_dir)
{
    char *pts = path_join(out_dir, "points");
    DIR *d = opendir(pts);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            if (!strstr(de->d_name, ".tmp.")) continue;
            char *f = path_join(pts, de->d_name);
            unlink(f);
            free(f);
        }
        closedir(d);
    }
    free(pts);
    d = opendir(out_dir);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            long pid = temporary_pid(de->d_name);
            if (!pid) continue;
            if (!sweep_temporary(de->d_name) && (pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH))
                continue;
            char *f = path_join(out_dir, de->d_name);
            remove_tree1(f);
            free(f);
        }
        closedir(d);
    }
}

/* ---- the whole run ------------------------------------------------------------------------ */

int sweep_run(const sweep_config *cfg, sweep_summary *sum, dt_error *err)
{
    memset(sum, 0, sizeof *sum);
    sum->first_failed = -1;
    sweep_spec *spec = NULL;
    int rc = sweep_spec_parse(cfg->scenario, cfg->file, &spec, err);
    if (rc) return rc;
    uint64_t hash = sweep_hash_inputs(cfg->scenario, cfg->base_dir);
    size_t n = sweep_n_points(spec);
    bool root = cfg->mpi_rank == 0;
    bool mpi = cfg->mpi_size > 1;
    progress pg = {.cfg = cfg, .total = n, .t0 = now_s(), .sum = sum};
    sum->total = n;
    sum->hash = hash;

    /* Rank 0 decides what is left to run. */
    size_t *pending = dt_xmalloc((n ? n : 1) * sizeof *pending);
    size_t n_pending = 0;
    int lock = -1;
    if (root) {
        char *pts = path_join(cfg->out_dir, "points");
        rc = mkdir_p(cfg->out_dir, err);
        if (!rc) rc = mkdir_p(pts, err);
        free(pts);
        if (!rc && (lock = lock_dir(cfg->out_dir, err)) < 0) rc = err->code;
        if (!rc) remove_stray_temporaries(cfg->out_dir);
        if (!rc) rc = check_manifest(cfg, hash, n, err);
        for (size_t i = 0; i < n && !rc; i++) {
            cJSON *rec = cfg->fresh ? NULL : read_record(cfg->out_dir, hash, i);
            if (rec) {
                pg.resumed++;
                if (record_failed(rec)) note_failure(&pg, rec);
                cJSON_Delete(rec);
            } else {
                pending[n_pending++] = i;
            }
        }
    }
    if (mpi) {
        uint64_t head[2] = {(uint64_t)(rc != DT_OK), (uint64_t)n_pending};
        if (sweep_mpi_bcast_u64(head, 2) != DT_OK) rc = DT_EINTERNAL;
        if (!root && head[0]) rc = dt_error_set(err, DT_EINPUT, NULL, NULL,
                                                "rank 0 could not start the sweep");
        if (!rc) {
            n_pending = (size_t)head[1];
            uint64_t *buf = dt_xmalloc((n_pending ? n_pending : 1) * sizeof *buf);
            for (size_t k = 0; root && k < n_pending; k++) buf[k] = pending[k];
            if (sweep_mpi_bcast_u64(buf, n_pending) != DT_OK) rc = DT_EINTERNAL;
            for (size_t k = 0; k < n_pending; k++) pending[k] = (size_t)buf[k];
            free(buf);
        }
    }
    if (rc) {
        if (rc == DT_EINTERNAL && err->code == DT_OK)
            dt_error_set(err, rc, NULL, NULL, "MPI broadcast failed");
        if (lock >= 0) close(lock);
        free(pending);
        sweep_spec_destroy(spec);
        return rc;
    }
    /* Round-robin across ranks: neighbouring points (often similar cost) spread out. */
    size_t *mine = dt_xmalloc((n_pending ? n_pending : 1) * sizeof *mine);
    size_t n_mine = 0;
    int size = mpi ? cfg->mpi_size : 1;
    for (size_t k = 0; k < n_pending; k++)
        if ((int)(k % (size_t)size) == cfg->mpi_rank) mine[n_mine++] = pending[k];
    pg.done = pg.resumed;
    if (root) tick(&pg);
    rc = run_pool(cfg, spec, hash, mine, n_mine, n_pending, &pg, err);
    if (!rc && root) rc = sweep_assemble(spec, cfg, hash, err);
    sum->resumed = pg.resumed;
    sum->ran = pg.done - pg.resumed;
    sum->failed = pg.failed;
    if (lock >= 0) close(lock);
    free(mine);
    free(pending);
    sweep_spec_destroy(spec);
    return rc;
}
