/* cmd_calibrate.c - `dtsim calibrate`: time real kernels on this machine and fit the
 * alpha-beta model T(S) = alpha + S*beta per algorithm (docs/calibration.md).
 *
 * Every kernel is verified against its reference at every size before it is timed; a wrong
 * kernel never produces a calibration. Each size gets `warmup` untimed runs and `repeats` timed
 * ones; every sample is kept in the file. The plot is drawn by gnuplot (pngcairo).
 *
 * Under --backend mpi this runs on every rank (mpirun -np N); rank 0 alone prints and writes.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "dtsim/calib.h"
#include "dtsim/kern.h"
#include "dtsim/units.h"

#define MAX_SIZES 64

static void help(FILE *out)
{
    fprintf(out,
            "usage: dtsim calibrate --out FILE [options]\n"
            "       dtsim calibrate --from-nccl-tests LOG... --out FILE [options]\n"
            "       mpirun -np N dtsim calibrate --backend mpi --out FILE [options]\n\n"
            "Time real all-reduce and top-k compression kernels on this machine, check them\n"
            "against naive references, and fit T(S) = alpha + S*beta (latency alpha, inverse\n"
            "bandwidth beta, 95%% confidence intervals, R^2) with GSL. The calibration file feeds\n"
            "`dtsim collective --calibration FILE` and scenarios (options.calibration).\n\n"
            "options:\n"
            "  --backend B        cpu (threads, default), mpi (Open MPI ranks, under mpirun),\n"
            "                     tcp (processes in a ring over loopback TCP, like Gloo),\n"
            "                     cuda (own ring kernel + top-k kernel), nccl (ncclAllReduce)\n"
            "  --ranks N          ring ranks: threads (cpu), processes (tcp) or logical GPUs\n"
            "                     (cuda/nccl);\n"
            "                     default: online cores, at least 2, at most 8. mpi: mpirun's -np\n"
            "  --sizes A:B:xF     per-rank buffer sizes from A to B, multiplying by F\n"
            "                     (default 4KiB:4MiB:x4); or a list: 64KiB,1MiB,4MiB\n"
            "  --repeats R        timed runs per size (default 10)\n"
            "  --warmup W         untimed runs per size first (default 2)\n"
            "  --dtype T          fp32 (default), bf16, fp16 (all-reduce element type)\n"
            "  --chunk SIZE       ring pipelining chunk (cpu, tcp; default 64KiB)\n"
            "  --topk-fraction F  top-k keeps F of the elements (default 0.01); 0 skips top-k\n"
            "  --seed N           seed of the gradient-like data (default 1)\n"
            "  --out FILE         calibration JSON to write (required; - for stdout)\n"
            "  --plot FILE.png    gnuplot plot of measured samples and fitted lines (- for\n"
            "                     stdout; the summary then goes to stderr)\n"
            "  --json             print the calibration JSON on stdout instead of a table\n\n"
            "From nccl-tests logs instead (no kernels run; docs/calibration.md):\n"
            "  --from-nccl-tests LOG...  all_reduce_perf, all_gather_perf, reduce_scatter_perf,\n"
            "                     alltoall_perf, sendrecv_perf (also broadcast, reduce) output,\n"
            "                     one or more logs; runs spanning hosts describe inter-host links\n"
            "  --nccl-op OP       the collective, when a log does not say\n"
            "  --fit-range A:B    fit these sizes (default: the widest range ending at the\n"
            "                     largest size that one line reproduces within the tolerance)\n"
            "  --fit-tolerance F  relative miss allowed when choosing the range (default 5%%)\n\n"
            "A progress bar is drawn on stderr when it is a terminal (not with --json).\n"
            "Memory (cpu): about (2 x ranks + 1) x the largest size, plus 5 x that for top-k.\n");
}

typedef enum backend { BK_CPU, BK_MPI, BK_CUDA, BK_NCCL, BK_TCP } backend;
static const char *const backend_names[] = {"cpu", "mpi", "cuda", "nccl", "tcp", NULL};

typedef struct opts {
    backend bk;
    int ranks;
    bool ranks_set;
    double sizes[MAX_SIZES];
    int n_sizes;
    int repeats, warmup;
    kern_dtype dtype;
    double chunk;
    double topk_fraction;
    uint64_t seed;
    const char *out, *plot;
    bool json;
    /* --from-nccl-tests: logs instead of kernels */
    char **logs;                 /* consecutive argv entries, borrowed */
    int n_logs;
    int nccl_op;                 /* -1: from the logs */
    double fit_from, fit_to, fit_tolerance;
    bool kernel_option;          /* an option that only means something when kernels run */
} opts;

/* ---------------------------------------------------------------- argument parsing */

static int usage_error(dt_error *err, const char *fmt, const char *a, const char *b)
{
    char msg[512];
    snprintf(msg, sizeof msg, fmt, a, b);
    return dt_error_set(err, DT_EINPUT, NULL, NULL, "calibrate: %s", msg);
}

static int parse_size(const char *flag, const char *text, double *out, dt_error *err)
{
    char why[600] = ""; /* unit_parse_size fills it only on failure; "0" parses */
    if (unit_parse_size(text, out, why, sizeof why) != DT_OK || !(*out >= 1)) {
        if (!*why) snprintf(why, sizeof why, "expected a size of at least 1 B such as 64KiB, found \"%s\"", text);
        return dt_error_set(err, DT_EINPUT, NULL, NULL, "calibrate: %s: %s", flag, why);
    }
    return DT_OK;
}

static int parse_sizes(const char *text, opts *o, dt_error *err)
{
    o->n_sizes = 0;
    char buf[256];
    if (strlen(text) >= sizeof buf) return usage_error(err, "--sizes: too long: %s%s", text, "");
    snprintf(buf, sizeof buf, "%s", text);
    char *c1 = strchr(buf, ':');
    if (c1) {
        char *c2 = strchr(c1 + 1, ':');
        if (!c2 || c2[1] != 'x')
            return usage_error(err, "--sizes: expected FROM:TO:xFACTOR such as 4KiB:4MiB:x4, found \"%s\"%s", text, "");
        *c1 = *c2 = '\0';
        double a, b;
        char *end;
        int rc;
        if ((rc = parse_size("--sizes", buf, &a, err)) || (rc = parse_size("--sizes", c1 + 1, &b, err))) return rc;
        errno = 0;
        double f = strtod(c2 + 2, &end);
        if (*end || errno || !(f > 1.0) || !isfinite(f))
            return usage_error(err, "--sizes: the factor after 'x' must be a number above 1, found \"%s\"%s", c2 + 2, "");
        if (b < a) return usage_error(err, "--sizes: FROM must not exceed TO in \"%s\"%s", text, "");
        for (double s = a; s <= b * (1 + 1e-12); s *= f) {
            if (o->n_sizes == MAX_SIZES)
                return usage_error(err, "--sizes: \"%s\" gives more than 64 sizes%s", text, "");
            o->sizes[o->n_sizes++] = floor(s);
        }
    } else {
        for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
            if (o->n_sizes == MAX_SIZES) return usage_error(err, "--sizes: more than 64 sizes in \"%s\"%s", text, "");
            int rc = parse_size("--sizes", tok, &o->sizes[o->n_sizes], err);
            if (rc) return rc;
            if (o->n_sizes && o->sizes[o->n_sizes] <= o->sizes[o->n_sizes - 1])
                return usage_error(err, "--sizes: a list must increase, found \"%s\"%s", text, "");
            o->n_sizes++;
        }
    }
    if (o->n_sizes < 2) return usage_error(err, "--sizes: a fit needs 2 or more sizes, \"%s\" gives fewer%s", text, "");
    return DT_OK;
}

static int parse_int(const char *flag, const char *v, long lo, long hi, long *out, dt_error *err)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (!*v || *end || errno || x < lo || x > hi) {
        char range[64];
        snprintf(range, sizeof range, "an integer from %ld to %ld", lo, hi);
        return dt_error_set(err, DT_EINPUT, NULL, NULL, "calibrate: %s: expected %s, found \"%s\"", flag, range, v);
    }
    *out = x;
    return DT_OK;
}

static int parse_args(int argc, char **argv, opts *o, dt_error *err)
{
    memset(o, 0, sizeof *o);
    o->repeats = 10;
    o->warmup = 2;
    o->chunk = 64 * 1024;
    o->topk_fraction = 0.01;
    o->seed = 1;
    o->nccl_op = -1;
    int rc = parse_sizes("4KiB:4MiB:x4", o, err);
    DT_ASSERT(rc == DT_OK);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--json")) {
            o->json = true;
            continue;
        }
        if (!strcmp(a, "--from-nccl-tests")) {
            /* one or more logs, up to the next option */
            if (i + 1 >= argc || !strncmp(argv[i + 1], "--", 2))
                return usage_error(err, "--from-nccl-tests needs one or more nccl-tests log files%s%s", "", "");
            if (o->n_logs) return usage_error(err, "--from-nccl-tests given twice%s%s", "", "");
            o->logs = &argv[i + 1];
            while (i + 1 < argc && strncmp(argv[i + 1], "--", 2)) {
                o->n_logs++;
                i++;
            }
            continue;
        }
        if (strncmp(a, "--", 2) != 0) return usage_error(err, "unexpected argument \"%s\" (see dtsim calibrate --help)%s", a, "");
        static const char *const valued[] = {"--nccl-op", "--fit-range", "--fit-tolerance",
                                             "--backend", "--ranks", "--sizes", "--repeats",
                                             "--warmup", "--dtype", "--chunk", "--topk-fraction",
                                             "--seed", "--out", "--plot", NULL};
        bool known = false; /* an unknown option is that, not an option missing its value */
        for (const char *const *k = valued; *k && !known; k++) known = !strcmp(a, *k);
        if (!known)
            return usage_error(err, "unknown option \"%s\" (see dtsim calibrate --help)%s", a, "");
        if (i + 1 >= argc) return usage_error(err, "%s needs a value%s", a, "");
        const char *v = argv[++i];
        long x;
        if (strcmp(a, "--out") && strcmp(a, "--plot") && strcmp(a, "--nccl-op") && strcmp(a, "--fit-range") &&
            strcmp(a, "--fit-tolerance"))
            o->kernel_option = true;
        if (!strcmp(a, "--nccl-op")) {
            cal_kind op;
            if (cal_kind_parse(v, &op) != DT_OK || op == CAL_KIND_TOPK)
                return usage_error(err, "--nccl-op: expected all_reduce, all_gather, reduce_scatter, alltoall, sendrecv, "
                                        "broadcast or reduce, found \"%s\"%s", v, "");
            o->nccl_op = (int)op;
        } else if (!strcmp(a, "--fit-range")) {
            char buf[128];
            snprintf(buf, sizeof buf, "%s", v);
            char *colon = strchr(buf, ':');
            if (!colon) return usage_error(err, "--fit-range: expected FROM:TO such as 64MiB:8GiB, found \"%s\"%s", v, "");
            *colon = 0;
            if ((rc = parse_size("--fit-range", buf, &o->fit_from, err)) ||
                (rc = parse_size("--fit-range", colon + 1, &o->fit_to, err)))
                return rc;
            if (o->fit_to < o->fit_from) return usage_error(err, "--fit-range: FROM must not exceed TO in \"%s\"%s", v, "");
        } else if (!strcmp(a, "--fit-tolerance")) {
            char *end;
            errno = 0;
            double t = strtod(v, &end);
            if (*end == '%') {
                t /= 100;
                end++;
            }
            if (*end || errno || !(t > 0 && t < 1))
                return usage_error(err, "--fit-tolerance: expected a fraction such as 0.05 or 5%%, found \"%s\"%s", v, "");
            o->fit_tolerance = t;
        } else if (!strcmp(a, "--backend")) {
            int k = -1;
            for (int j = 0; backend_names[j]; j++)
                if (!strcmp(v, backend_names[j])) k = j;
            if (k < 0) return usage_error(err, "--backend: expected cpu, mpi, tcp, cuda or nccl, found \"%s\"%s", v, "");
            o->bk = (backend)k;
        } else if (!strcmp(a, "--ranks")) {
            if ((rc = parse_int(a, v, 2, 1024, &x, err))) return rc;
            o->ranks = (int)x;
            o->ranks_set = true;
        } else if (!strcmp(a, "--sizes")) {
            if ((rc = parse_sizes(v, o, err))) return rc;
        } else if (!strcmp(a, "--repeats")) {
            if ((rc = parse_int(a, v, 1, 100000, &x, err))) return rc;
            o->repeats = (int)x;
        } else if (!strcmp(a, "--warmup")) {
            if ((rc = parse_int(a, v, 0, 100000, &x, err))) return rc;
            o->warmup = (int)x;
        } else if (!strcmp(a, "--dtype")) {
            if (kern_dtype_parse(v, &o->dtype)) return usage_error(err, "--dtype: expected fp32, bf16 or fp16, found \"%s\"%s", v, "");
        } else if (!strcmp(a, "--chunk")) {
            if ((rc = parse_size(a, v, &o->chunk, err))) return rc;
            if (o->chunk < 4) return usage_error(err, "--chunk: at least 4 bytes, found \"%s\"%s", v, "");
        } else if (!strcmp(a, "--topk-fraction")) {
            char *end;
            errno = 0;
            o->topk_fraction = strtod(v, &end);
            if (*end || errno || !(o->topk_fraction >= 0 && o->topk_fraction <= 1))
                return usage_error(err, "--topk-fraction: expected a number from 0 to 1, found \"%s\"%s", v, "");
        } else if (!strcmp(a, "--seed")) {
            if ((rc = parse_int(a, v, 0, 2147483647L, &x, err))) return rc;
            o->seed = (uint64_t)x;
        } else if (!strcmp(a, "--out")) {
            o->out = v;
        } else if (!strcmp(a, "--plot")) {
            o->plot = v;
        } else {
            return usage_error(err, "unknown option \"%s\" (see dtsim calibrate --help)%s", a, "");
        }
    }
    if (!o->out) return usage_error(err, "--out FILE is required (where to write the calibration)%s%s", "", "");
    if (o->plot && cli_is_stdout(o->out) && cli_is_stdout(o->plot))
        return usage_error(err, "--out and --plot cannot both be - (stdout)%s%s", "", "");
    if (o->n_logs && o->kernel_option)
        return usage_error(err, "--from-nccl-tests reads measurements: kernel options (--backend, --ranks, --sizes, "
                                "--repeats, --warmup, --dtype, --chunk, --topk-fraction, --seed) do not apply%s%s", "", "");
    if (!o->n_logs && (o->nccl_op >= 0 || o->fit_from > 0 || o->fit_tolerance > 0))
        return usage_error(err, "--nccl-op, --fit-range and --fit-tolerance go with --from-nccl-tests%s%s", "", "");
    if (!o->ranks_set) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        o->ranks = n < 2 ? 2 : n > 8 ? 8 : (int)n;
    }
    size_t es = kern_dtype_size(o->dtype);
    for (int i = 0; i < o->n_sizes; i++) {
        o->sizes[i] = floor(o->sizes[i] / (double)es) * (double)es; /* whole elements */
        if (o->sizes[i] < (double)es)
            return usage_error(err, "--sizes: every size must hold at least one %s element%s", kern_dtype_name(o->dtype), "");
        if (i && o->sizes[i] <= o->sizes[i - 1])
            return usage_error(err, "--sizes: two sizes round to the same number of %s elements%s", kern_dtype_name(o->dtype), "");
    }
    return DT_OK;
}

/* ---------------------------------------------------------------- progress */

typedef struct progress {
    bool on;
    long done, total;
    int last_pct;
} progress;

static void progress_step(progress *p, const char *what, double size)
{
    p->done++;
    if (!p->on) return;
    int pct = (int)(100 * p->done / (p->total ? p->total : 1));
    if (pct == p->last_pct && p->done != p->total) return;
    p->last_pct = pct;
    char b[32];
    int w = 30, fill = pct * w / 100;
    fprintf(stderr, "\r[%.*s%*s] %3d%% %-14s %-10s", fill, "##############################", w - fill, "", pct, what,
            unit_fmt_size(size, b, sizeof b));
    if (p->done == p->total) fprintf(stderr, "\r%*s\r", 70, "");
    fflush(stderr);
}

/* ---------------------------------------------------------------- kernels behind one interface */

typedef struct bench {
    const opts *o;
    /* cpu */
    kern_cpu_ring *ring;
    void **in, **bufs, *ref;
    size_t max_count;
    /* top-k */
    float *grad, *res, *res0, *scratch, *val, *rres;
    uint32_t *idx, *ridx;
    float *rval;
    /* mpi */
    void *mbuf, *mtmp;
    int mpi_size;
    /* cuda */
    kern_cuda_ctx *cuda;
    /* tcp */
    kern_tcp_ring *tcp;
} bench;

typedef int (*verify_fn)(bench *b, double size, dt_error *err);
typedef int (*time_fn)(bench *b, double size, double *seconds, dt_error *err);

static size_t elems(const bench *b, double size) { return (size_t)(size / (double)kern_dtype_size(b->o->dtype)); }

static void cpu_restore(bench *b, size_t count)
{
    size_t bytes = count * kern_dtype_size(b->o->dtype);
    for (int r = 0; r < b->o->ranks; r++) memcpy(b->bufs[r], b->in[r], bytes);
}

static int cpu_ring_verify(bench *b, double size, dt_error *err)
{
    size_t count = elems(b, size), es = kern_dtype_size(b->o->dtype);
    cpu_restore(b, count);
    kern_cpu_ring_allreduce(b->ring, b->o->dtype, b->bufs, count);
    kern_allreduce_reference(b->o->dtype, (const void *const *)b->in, b->o->ranks, count, b->ref);
    for (int r = 0; r < b->o->ranks; r++)
        if (memcmp(b->bufs[r], b->ref, count * es) != 0)
            return dt_error_set(err, DT_EINTERNAL, NULL, NULL,
                                "ring all-reduce verification failed: rank %d differs from the reference at %zu elements", r, count);
    return DT_OK;
}

static int cpu_ring_time(bench *b, double size, double *s, dt_error *err)
{
    (void)err;
    size_t count = elems(b, size);
    cpu_restore(b, count); /* fresh inputs: repeated sums would drift towards overflow */
    *s = kern_cpu_ring_allreduce(b->ring, b->o->dtype, b->bufs, count);
    return DT_OK;
}

static size_t topk_k(const bench *b, size_t n)
{
    size_t k = (size_t)llround(b->o->topk_fraction * (double)n);
    return k < 1 ? 1 : k > n ? n : k;
}

static int topk_verify(bench *b, double n_el, dt_error *err)
{
    size_t n = (size_t)n_el, k = topk_k(b, n);
    memcpy(b->res, b->res0, n * sizeof *b->res);
    memcpy(b->rres, b->res0, n * sizeof *b->res);
    kern_topk_compress(b->grad, b->res, n, k, b->idx, b->val, b->scratch);
    kern_topk_reference(b->grad, b->rres, n, k, b->ridx, b->rval);
    if (memcmp(b->idx, b->ridx, k * sizeof *b->idx) || memcmp(b->val, b->rval, k * sizeof *b->val) ||
        memcmp(b->res, b->rres, n * sizeof *b->res))
        return dt_error_set(err, DT_EINTERNAL, NULL, NULL, "top-k verification failed at %zu elements (k = %zu)", n, k);
    return DT_OK;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int topk_time(bench *b, double n_el, double *s, dt_error *err)
{
    (void)err;
    size_t n = (size_t)n_el, k = topk_k(b, n);
    memcpy(b->res, b->res0, n * sizeof *b->res); /* same residual state every run */
    double t0 = now_s();
    kern_topk_compress(b->grad, b->res, n, k, b->idx, b->val, b->scratch);
    *s = now_s() - t0;
    return DT_OK;
}

static int mpi_verify_ar(bench *b, double size, dt_error *err) { return kern_mpi_verify(KERN_MPI_ALLREDUCE, b->o->dtype, elems(b, size), err); }
static int mpi_verify_rs(bench *b, double size, dt_error *err) { return kern_mpi_verify(KERN_MPI_RS_AG, b->o->dtype, elems(b, size), err); }

static int mpi_time(bench *b, kern_mpi_algo a, double size, double *s, dt_error *err)
{
    size_t count = elems(b, size), es = kern_dtype_size(b->o->dtype);
    size_t block = (count + (size_t)b->mpi_size - 1) / (size_t)b->mpi_size;
    /* small integers: sums stay exact and finite however often the buffer is reduced */
    for (size_t i = 0; i < block * (size_t)b->mpi_size; i++) kern_store(b->o->dtype, b->mbuf, i, (float)(i % 3));
    (void)es;
    return kern_mpi_allreduce(a, b->o->dtype, b->mbuf, b->mtmp, count, s, err);
}
static int mpi_time_ar(bench *b, double size, double *s, dt_error *err) { return mpi_time(b, KERN_MPI_ALLREDUCE, size, s, err); }
static int mpi_time_rs(bench *b, double size, double *s, dt_error *err) { return mpi_time(b, KERN_MPI_RS_AG, size, s, err); }

static int tcp_verify(bench *b, double size, dt_error *err) { return kern_tcp_ring_verify(b->tcp, elems(b, size), err); }
static int tcp_time(bench *b, double size, double *s, dt_error *err) { return kern_tcp_ring_allreduce(b->tcp, elems(b, size), s, err); }

static int cuda_verify(bench *b, double size, dt_error *err) { return kern_cuda_verify(b->cuda, elems(b, size), err); }
static int cuda_time(bench *b, double size, double *s, dt_error *err) { return kern_cuda_run(b->cuda, elems(b, size), s, err); }
static int cuda_topk_verify(bench *b, double n, dt_error *err) { return kern_cuda_verify(b->cuda, (size_t)n, err); }
static int cuda_topk_time(bench *b, double n, double *s, dt_error *err) { return kern_cuda_run(b->cuda, (size_t)n, s, err); }

/* Verify at every size, then time every size: warm-up runs, then repeats kept as samples. */
static int measure(bench *b, cal_result *c, const char *name, cal_kind kind, const double *xs, int nx,
                   verify_fn verify, time_fn timef, progress *pg, dt_error *err)
{
    const opts *o = b->o;
    for (int i = 0; i < nx; i++) {
        int rc = verify(b, xs[i], err);
        if (rc) return rc;
    }
    cal_algo *a = cal_result_add_algo(c, name, kind);
    a->k_fraction = kind == CAL_KIND_TOPK ? o->topk_fraction : 0;
    a->points = dt_xcalloc((size_t)nx, sizeof *a->points);
    /* Sizes are interleaved: repeat r times every size once, in turn. A burst of load from
     * elsewhere (this machine is shared) then spreads over all sizes instead of ruining the
     * median of one, which would bend the fit. */
    size_t R = (size_t)o->repeats;
    double *s = dt_xmalloc((size_t)nx * R * sizeof *s); /* s[i*R + r] */
    double *fx = dt_xmalloc((size_t)nx * R * sizeof *fx), *ft = dt_xmalloc((size_t)nx * R * sizeof *ft);
    size_t nf = 0;
    int rc = DT_OK;
    for (int w = 0; w < o->warmup && !rc; w++)
        for (int i = 0; i < nx && !rc; i++) {
            double junk;
            rc = timef(b, xs[i], &junk, err);
            progress_step(pg, name, kind == CAL_KIND_TOPK ? 4 * xs[i] : xs[i]); /* bytes of gradient */
        }
    for (size_t r = 0; r < R && !rc; r++)
        for (int i = 0; i < nx && !rc; i++) {
            double *v = &s[(size_t)i * R + r];
            rc = timef(b, xs[i], v, err);
            if (!rc && !(*v > 0)) *v = 1e-9; /* below clock resolution */
            progress_step(pg, name, kind == CAL_KIND_TOPK ? 4 * xs[i] : xs[i]); /* bytes of gradient */
        }
    for (int i = 0; i < nx && !rc; i++) {
        cal_point_set(&a->points[a->n_points++], xs[i], &s[(size_t)i * R], o->repeats);
        for (size_t r = 0; r < R; r++) {
            fx[nf] = xs[i];
            ft[nf++] = s[(size_t)i * R + r];
        }
    }
    if (!rc) {
        /* cal_fit_line judges the latency by the reader's own rule, so what is written here is
         * never refused for it: noise below zero is held at 0, a clearly negative one stops the
         * run (a measurement that failed, exit 1, like the flat line below) */
        rc = cal_fit_line(fx, ft, nf, &a->fit, err);
        if (rc && err) {
            char tmp[DT_ERR_MSG_MAX];
            memcpy(tmp, err->msg, sizeof tmp);
            bool negative = a->fit.beta > 0 && cal_alpha_judge(a->fit.alpha, a->fit.alpha_ci) == CAL_ALPHA_NEGATIVE;
            if (negative) err->code = rc = DT_EUNSUPPORTED;
            snprintf(err->msg, sizeof err->msg, "%s: %.600s%s", name, tmp,
                     negative ? "; measure again (more --repeats, a quieter machine) or include smaller --sizes" : "");
        }
    }
    /* A fit whose time does not grow with size has no bandwidth to report, and link figures
     * derived from it would be infinite: the sizes were too close together for the noise
     * (seen with 4 oversubscribed MPI ranks on 2 cores). Say so instead of writing nonsense. */
    if (!rc && !(a->fit.beta > 0))
        rc = dt_error_set(err, DT_EUNSUPPORTED, NULL, NULL,
                          "%s: the measured time does not grow with size (fitted beta = %.3g s/B): "
                          "the sizes are too close together for the timing noise here; widen "
                          "--sizes or raise --repeats",
                          name, a->fit.beta);
    free(s);
    free(fx);
    free(ft);
    return rc;
}

/* ---------------------------------------------------------------- output */

/* Say so when alpha was held at 0 (cal_fit_line): the line through the origin is not the free fit. */
static void print_held(const cal_algo *a, FILE *f)
{
    char b1[32], b2[32];
    if (a->fit.alpha_held)
        fprintf(f, "held at 0 (the free fit's %s ± %s reaches 0: a latency under the noise; beta refitted), ",
                unit_fmt_seconds(a->fit.free_alpha, b1, sizeof b1), unit_fmt_seconds(a->fit.free_alpha_ci, b2, sizeof b2));
}

static void print_tables(const cal_result *c, const opts *o, FILE *f)
{
    char b1[32], b2[32], b3[32], b4[32], b5[32], rb[64];
    if (c->origin[0])
        fprintf(f, "calibration from %s: %s, %s, %d ranks, %s%s\n", c->origin, c->backend,
                c->gpu[0] ? c->gpu : "GPUs not listed", c->ranks, c->dtype,
                c->repeats > 1 ? (snprintf(rb, sizeof rb, ", each time the mean of %d runs", c->repeats), rb) : "");
    else
        fprintf(f, "calibration on %s (%s, %d cores): backend %s, %d ranks, %s, %d repeats + %d warm-up per size\n"
                   "verified against the naive reference at every size before timing\n",
                c->hostname, c->cpu_model, c->cores, c->backend, c->ranks, c->dtype, c->repeats, c->warmup);
    for (int i = 0; i < c->n_algos; i++) {
        const cal_algo *a = &c->algos[i];
        fprintf(f, "\n");
        if (a->kind != CAL_KIND_TOPK) {
            int n = a->ranks > 0 ? a->ranks : c->ranks;
            double bf = cal_busbw_factor(a->kind, n);
            bool ranged = a->fit_from > 0 || a->fit_to > 0;
            fprintf(f, "%-14s %12s %12s %12s %12s %12s%s\n", a->name, "size", "median", "min", "algbw", "busbw",
                    ranged ? "   fit vs median" : "");
            for (int j = 0; j < a->n_points; j++) {
                const cal_point *p = &a->points[j];
                fprintf(f, "%-14s %12s %12s %12s %12s %12s", "", unit_fmt_size(p->size, b1, sizeof b1),
                        unit_fmt_seconds(p->median, b2, sizeof b2), unit_fmt_seconds(p->min, b3, sizeof b3),
                        unit_fmt_bandwidth(p->size / p->median, b4, sizeof b4),
                        unit_fmt_bandwidth(bf * p->size / p->median, b5, sizeof b5));
                if (ranged) {
                    bool in = !(p->size < a->fit_from * (1 - 1e-12) || p->size > a->fit_to * (1 + 1e-12));
                    double line = a->fit.alpha + a->fit.beta * p->size;
                    fprintf(f, "   %+7.1f%%%s", 100 * (line / p->median - 1), in ? "" : "  (not fitted)");
                }
                fprintf(f, "\n");
            }
            if (ranged)
                fprintf(f, "  fitted %s .. %s (%s), worst miss %.1f%%\n", unit_fmt_size(a->fit_from, b1, sizeof b1),
                        unit_fmt_size(a->fit_to, b2, sizeof b2),
                        o->fit_from > 0 || o->fit_to > 0 ? "--fit-range"
                                                         : "the widest range ending at the largest size within the tolerance",
                        100 * a->fit_worst);
            fprintf(f, "  fit  T(S) = alpha + S*beta: alpha = %s ± %s, ", unit_fmt_seconds(a->fit.alpha, b1, sizeof b1),
                    unit_fmt_seconds(a->fit.alpha_ci, b2, sizeof b2));
            print_held(a, f);
            double lo = 1.0 / (a->fit.beta + a->fit.beta_ci), hi = a->fit.beta > a->fit.beta_ci ? 1.0 / (a->fit.beta - a->fit.beta_ci) : INFINITY;
            fprintf(f, "1/beta = %s (95%% CI %s .. %s), R² = %.4f\n", unit_fmt_bandwidth(1.0 / a->fit.beta, b3, sizeof b3),
                    unit_fmt_bandwidth(lo, b4, sizeof b4), isfinite(hi) ? unit_fmt_bandwidth(hi, b5, sizeof b5) : "inf", a->fit.r2);
            double la, lb;
            cal_link_figures(a->kind, a->fit.alpha, a->fit.beta, n, &la, &lb);
            fprintf(f, "  per link (%s of %d%s): latency %s, bandwidth %s%s\n", a->kind == CAL_KIND_SENDRECV ? "pairs" : "ring",
                    n, a->hosts > 1 ? (a->hosts == 2 ? " over 2 hosts" : " over hosts") : "",
                    unit_fmt_seconds(la, b1, sizeof b1), unit_fmt_bandwidth(lb, b2, sizeof b2),
                    a->scope == CAL_SCOPE_INTER ? " (inter-host links)" : "");
        } else {
            fprintf(f, "%-14s %12s %12s %12s %16s\n", a->name, "elements", "median", "min", "elements/s");
            for (int j = 0; j < a->n_points; j++) {
                const cal_point *p = &a->points[j];
                fprintf(f, "%-14s %12.0f %12s %12s %16.4g\n", "", p->size, unit_fmt_seconds(p->median, b2, sizeof b2),
                        unit_fmt_seconds(p->min, b3, sizeof b3), p->size / p->median);
            }
            fprintf(f, "  fit  T(n) = alpha + n*beta (k = %g n): alpha = %s ± %s, ", a->k_fraction,
                    unit_fmt_seconds(a->fit.alpha, b1, sizeof b1), unit_fmt_seconds(a->fit.alpha_ci, b2, sizeof b2));
            print_held(a, f);
            fprintf(f, "throughput 1/beta = %.4g elements/s (± %.2g%%), R² = %.4f\n", 1.0 / a->fit.beta,
                    100 * a->fit.beta_ci / a->fit.beta, a->fit.r2);
        }
    }
    fprintf(f, "\nwrote %s%s%s\n", o->out, o->plot ? ", " : "", o->plot ? o->plot : "");
}

static bool have_gnuplot(void)
{
    int st = system("gnuplot --version >/dev/null 2>&1");
    return st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* A string as a gnuplot single-quoted literal: nothing is special inside one but the quote
 * itself, written twice; a control character (a newline would end the command) becomes a
 * space. Hostnames come from nccl-tests logs: "h'; system('...'); '" must stay text. */
static void gp_quote(FILE *g, const char *s)
{
    fputc('\'', g);
    for (; *s; s++) {
        if (*s == '\'') fputc('\'', g);
        fputc((unsigned char)*s < 0x20 || *s == 0x7f ? ' ' : *s, g);
    }
    fputc('\'', g);
}

/* Measured samples (dots), medians (open circles) and fitted lines, log-log; all-reduce fits on
 * the left (time vs bytes), top-k on the right (time vs elements). Inline datablocks: no
 * temporary data files. The script never names a file: gnuplot draws to its stdout, a pipe
 * read here into the output (cli/output.c), so the path is never script text, its writes are
 * checked like every other output's, and `--plot -` is stdout. Strings from the data (names,
 * hostname) are quoted by gp_quote and drawn noenhanced. */
static void plot_script(const cal_result *c, FILE *g)
{
    int n_ar = 0, n_tk = 0;
    for (int i = 0; i < c->n_algos; i++) *(c->algos[i].kind == CAL_KIND_TOPK ? &n_tk : &n_ar) += 1;
    fprintf(g, "set terminal pngcairo size %d,560 enhanced font 'sans,10'\n", (n_ar && n_tk) ? 1300 : 760);
    for (int i = 0; i < c->n_algos; i++) {
        const cal_algo *a = &c->algos[i];
        fprintf(g, "$d%d << EOD\n", i);
        for (int j = 0; j < a->n_points; j++)
            for (int k = 0; k < a->points[j].n_samples; k++) fprintf(g, "%.9g %.9g %.9g\n", a->points[j].size, a->points[j].samples[k], a->points[j].median);
        fprintf(g, "EOD\n");
    }
    if (n_ar && n_tk) fprintf(g, "set multiplot layout 1,2\n");
    fprintf(g, "set logscale x 2\nset logscale y\nset grid\nset key top left\nset format y '%%.0s%%cs'\n");
    static const char *const colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd"};
    for (int pass = 0; pass < 2; pass++) {
        bool topk = pass == 1;
        if ((topk ? n_tk : n_ar) == 0) continue;
        if (!topk) {
            char title[512];
            snprintf(title, sizeof title, "%s %s, %d ranks, %s (%s)", c->backend,
                     n_ar == 1 ? cal_kind_name(c->algos[0].kind) : "collectives", c->ranks, c->dtype, c->hostname);
            fputs("set title ", g);
            gp_quote(g, title);
            fputs(" noenhanced\nset xlabel 'buffer per rank'\n", g);
        } else
            fprintf(g, "set title 'top-k compression with error feedback (k = %g n)'\nset xlabel 'elements (fp32)'\n",
                    c->algos[0].kind == CAL_KIND_TOPK ? c->algos[0].k_fraction : c->algos[c->n_algos - 1].k_fraction);
        /* tics at the measured sizes (every other one when crowded), in our own units */
        const cal_algo *first_a = NULL;
        for (int i = 0; i < c->n_algos && !first_a; i++)
            if ((c->algos[i].kind == CAL_KIND_TOPK) == topk) first_a = &c->algos[i];
        int step = first_a->n_points > 8 ? 2 : 1;
        fprintf(g, "set xrange [%.9g:%.9g]\nset xtics (", first_a->points[0].size / 1.4,
                first_a->points[first_a->n_points - 1].size * 1.4);
        for (int j = 0; j < first_a->n_points; j += step) {
            double v = first_a->points[j].size;
            char lab[32];
            if (!topk)
                unit_fmt_size(v, lab, sizeof lab);
            else if (fmod(v, 1048576.0) == 0)
                snprintf(lab, sizeof lab, "%.0f Mi", v / 1048576.0);
            else if (fmod(v, 1024.0) == 0)
                snprintf(lab, sizeof lab, "%.0f Ki", v / 1024.0);
            else
                snprintf(lab, sizeof lab, "%.0f", v);
            fprintf(g, "%s\"%s\" %.9g", j ? ", " : "", lab, v);
        }
        fprintf(g, ")\nset ylabel 'time'\nplot ");
        int first = 1, ci = 0;
        for (int i = 0; i < c->n_algos; i++) {
            const cal_algo *a = &c->algos[i];
            if ((a->kind == CAL_KIND_TOPK) != topk) continue;
            const char *col = colors[ci++ % 4];
            char b1[32], b2[32];
            char ts[160], tm[160];
            snprintf(ts, sizeof ts, "%s samples", a->name);
            snprintf(tm, sizeof tm, "%s median", a->name);
            fprintf(g, "%s$d%d u 1:2 w p pt 7 ps 0.4 lc rgb '%s' t ", first ? "" : ", ", i, col);
            gp_quote(g, ts);
            fprintf(g, " noenhanced, $d%d u 1:3 w p pt 6 ps 1.2 lc rgb '%s' t ", i, col);
            gp_quote(g, tm);
            fprintf(g, " noenhanced, "
                       "%.9g + x*%.9g w l lw 2 lc rgb '%s' t 'fit: {/Symbol a} = %s, 1/{/Symbol b} = %s'",
                    a->fit.alpha, a->fit.beta, col,
                    unit_fmt_seconds(a->fit.alpha, b1, sizeof b1),
                    topk ? (snprintf(b2, sizeof b2, "%.3g el/s", 1.0 / a->fit.beta), b2)
                                          : unit_fmt_bandwidth(1.0 / a->fit.beta, b2, sizeof b2));
            first = 0;
        }
        fprintf(g, "\n");
    }
    if (n_ar && n_tk) fprintf(g, "unset multiplot\n");
    fprintf(g, "unset output\n");
}

static int write_plot(const cal_result *c, const char *path, dt_error *err)
{
    cli_outfile out;
    int rc = cli_outfile_open(&out, path, err);
    if (rc) return rc;
    /* the script in an unnamed file (nothing to clean up), gnuplot's stdout on a pipe */
    FILE *script = tmpfile();
    int pfd[2] = {-1, -1};
    if (!script || pipe(pfd) != 0) {
        rc = dt_error_set(err, DT_EIO, path, NULL, "cannot prepare gnuplot: %s", strerror(errno));
        if (script) fclose(script);
        cli_outfile_abort(&out);
        return rc;
    }
    plot_script(c, script);
    if (fflush(script) != 0 || ferror(script) || fseek(script, 0, SEEK_SET) != 0) {
        rc = dt_error_set(err, DT_EIO, path, NULL, "cannot write the gnuplot script: %s", strerror(errno));
        fclose(script);
        close(pfd[0]);
        close(pfd[1]);
        cli_outfile_abort(&out);
        return rc;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        if (dup2(fileno(script), 0) < 0 || dup2(pfd[1], 1) < 0) _exit(126);
        close(pfd[0]);
        close(pfd[1]);
        execlp("gnuplot", "gnuplot", (char *)NULL);
        _exit(127);
    }
    close(pfd[1]);
    fclose(script);
    if (pid < 0) {
        close(pfd[0]);
        cli_outfile_abort(&out);
        return dt_error_set(err, DT_EIO, path, NULL, "cannot run gnuplot: %s", strerror(errno));
    }
    char buf[65536];
    ssize_t n;
    size_t total = 0;
    while ((n = read(pfd[0], buf, sizeof buf)) != 0) {
        if (n < 0) {
            if (errno == EINTR) continue;
            break;
        }
        total += (size_t)n;
        if (fwrite(buf, 1, (size_t)n, out.f) != (size_t)n) break; /* the error is kept; commit reports it */
    }
    close(pfd[0]); /* gnuplot gets SIGPIPE if it was still writing */
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || total == 0) {
        cli_outfile_abort(&out);
        return dt_error_set(err, DT_EIO, path, NULL, "gnuplot failed (%s %d)",
                            WIFEXITED(st) ? "exit status" : "signal",
                            WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? WTERMSIG(st) : -1);
    }
    return cli_outfile_commit(&out, err);
}

/* Before anything is written: the fits every reader applies by default must pass the readers'
 * R² rule (cal_check_link_fits), else the file would be refused wherever it is used. Measured
 * here, a poor line is a failed measurement (exit 1, like a clearly negative latency); from
 * nccl-tests logs it is the input's (exit 2). Other poor fits are kept, with a warning: a reader
 * refuses them only if they are chosen by name (docs/calibration.md, "Fit quality"). */
static int judge_fits(const cal_result *c, const opts *o, dt_error *err)
{
    int rc = cal_check_link_fits(c, o->n_logs ? DT_EINPUT : DT_EUNSUPPORTED, err);
    if (rc && err) {
        char tmp[DT_ERR_MSG_MAX];
        memcpy(tmp, err->msg, sizeof tmp);
        snprintf(err->msg, sizeof err->msg, "%.500s; every reader would refuse it, so nothing is written: %s", tmp,
                 o->n_logs ? "fit the sizes where the time is a line (--fit-range FROM:TO)"
                           : "measure again (more --repeats, a quieter machine, a narrower --sizes range)");
    }
    for (int i = 0; !rc && i < c->n_algos; i++) {
        const cal_algo *a = &c->algos[i];
        if (a->kind != CAL_KIND_TOPK && cal_r2_judge(a->fit.r2) == CAL_R2_POOR) {
            char why[512];
            fprintf(stderr, "dtsim: warning: %s; kept, but not applied by default: a reader given "
                            "--calibration-fit %s refuses it\n", cal_r2_refusal(a, why, sizeof why), a->name);
        }
    }
    return rc;
}

static int write_outputs(const cal_result *c, const opts *o, dt_error *err)
{
    int rc0 = judge_fits(c, o, err);
    if (rc0) return rc0;
    cJSON *doc = cal_result_to_json(c);
    char *text = cJSON_Print(doc);
    cJSON_Delete(doc);
    cli_outfile out;
    int rc = cli_outfile_open(&out, o->out, err);
    if (!rc) {
        fputs(text, out.f);
        fputc('\n', out.f);
        rc = cli_outfile_commit(&out, err);
    }
    if (!rc && o->plot) rc = write_plot(c, o->plot, err);
    /* an output on stdout ("-") keeps stdout to itself: the summary goes to stderr */
    bool out_std = cli_is_stdout(o->out), plot_std = o->plot && cli_is_stdout(o->plot);
    if (!rc) {
        FILE *f = out_std || plot_std ? stderr : stdout;
        if (o->json) {
            if (!out_std) fprintf(f, "%s\n", text);
        } else {
            print_tables(c, o, f);
        }
    }
    free(text);
    return rc;
}

/* ---------------------------------------------------------------- backends */

static void bench_free(bench *b)
{
    if (b->in)
        for (int r = 0; r < b->o->ranks; r++) {
            free(b->in[r]);
            free(b->bufs[r]);
        }
    free(b->in);
    free(b->bufs);
    free(b->ref);
    kern_cpu_ring_destroy(b->ring);
    free(b->grad); free(b->res); free(b->res0); free(b->rres); free(b->scratch);
    free(b->val); free(b->rval); free(b->idx); free(b->ridx);
    free(b->mbuf); free(b->mtmp);
    kern_cuda_destroy(b->cuda);
    kern_tcp_ring_destroy(b->tcp);
}

static int run_topk_cpu(bench *b, cal_result *c, progress *pg, dt_error *err)
{
    const opts *o = b->o;
    double xs[MAX_SIZES];
    for (int i = 0; i < o->n_sizes; i++) xs[i] = floor(o->sizes[i] / 4.0); /* fp32 gradient of that many bytes */
    size_t n = (size_t)xs[o->n_sizes - 1];
    b->grad = dt_xmalloc(n * sizeof(float));
    b->res0 = dt_xmalloc(n * sizeof(float));
    b->res = dt_xmalloc(n * sizeof(float));
    b->rres = dt_xmalloc(n * sizeof(float));
    b->scratch = dt_xmalloc(n * sizeof(float));
    size_t k = topk_k(b, n);
    b->val = dt_xmalloc(k * sizeof(float));
    b->rval = dt_xmalloc(k * sizeof(float));
    b->idx = dt_xmalloc(k * sizeof(uint32_t));
    b->ridx = dt_xmalloc(k * sizeof(uint32_t));
    kern_fill_gradient(KERN_FP32, b->grad, n, 1e-3, o->seed, 1000);
    kern_fill_gradient(KERN_FP32, b->res0, n, 1e-4, o->seed, 1001); /* a residual from earlier steps */
    return measure(b, c, "topk", CAL_KIND_TOPK, xs, o->n_sizes, topk_verify, topk_time, pg, err);
}

static int run_cpu(bench *b, cal_result *c, progress *pg, dt_error *err)
{
    const opts *o = b->o;
    size_t es = kern_dtype_size(o->dtype);
    b->max_count = elems(b, o->sizes[o->n_sizes - 1]);
    b->in = dt_xcalloc((size_t)o->ranks, sizeof *b->in);
    b->bufs = dt_xcalloc((size_t)o->ranks, sizeof *b->bufs);
    for (int r = 0; r < o->ranks; r++) {
        b->in[r] = dt_xmalloc(b->max_count * es);
        b->bufs[r] = dt_xmalloc(b->max_count * es);
        kern_fill_gradient(o->dtype, b->in[r], b->max_count, 1e-2, o->seed, r);
    }
    b->ref = dt_xmalloc(b->max_count * es);
    int rc = kern_cpu_ring_create(o->ranks, (size_t)o->chunk, &b->ring, err);
    if (rc) return rc;
    rc = measure(b, c, "ring", CAL_KIND_ALLREDUCE, o->sizes, o->n_sizes, cpu_ring_verify, cpu_ring_time, pg, err);
    if (!rc && o->topk_fraction > 0) rc = run_topk_cpu(b, c, pg, err);
    return rc;
}

/* Gloo-style ring over loopback TCP between forked processes; top-k is the CPU kernel's business
 * (--backend cpu), not the transport's. */
static int run_tcp(bench *b, cal_result *c, progress *pg, dt_error *err)
{
    const opts *o = b->o;
    int rc = kern_tcp_ring_create(o->ranks, (size_t)o->chunk, o->dtype, elems(b, o->sizes[o->n_sizes - 1]), o->seed,
                                  &b->tcp, err);
    if (rc) return rc;
    return measure(b, c, "tcp_ring", CAL_KIND_ALLREDUCE, o->sizes, o->n_sizes, tcp_verify, tcp_time, pg, err);
}

static int run_cuda(bench *b, cal_result *c, progress *pg, dt_error *err)
{
    const opts *o = b->o;
    int n = 0;
    int rc = kern_cuda_devices(&n, c->gpu, sizeof c->gpu, err);
    if (rc) return rc;
    kern_cuda_algo algo = o->bk == BK_NCCL ? KERN_CUDA_NCCL : KERN_CUDA_RING;
    if ((rc = kern_cuda_create(algo, o->ranks, o->dtype, elems(b, o->sizes[o->n_sizes - 1]), &b->cuda, err))) return rc;
    rc = measure(b, c, algo == KERN_CUDA_NCCL ? "nccl" : "ring", CAL_KIND_ALLREDUCE, o->sizes, o->n_sizes, cuda_verify, cuda_time, pg, err);
    kern_cuda_destroy(b->cuda);
    b->cuda = NULL;
    if (rc || algo == KERN_CUDA_NCCL || o->topk_fraction <= 0) return rc;
    double xs[MAX_SIZES];
    for (int i = 0; i < o->n_sizes; i++) xs[i] = floor(o->sizes[i] / 4.0);
    if ((rc = kern_cuda_create(KERN_CUDA_TOPK, 1, KERN_FP32, (size_t)xs[o->n_sizes - 1], &b->cuda, err))) return rc;
    return measure(b, c, "topk", CAL_KIND_TOPK, xs, o->n_sizes, cuda_topk_verify, cuda_topk_time, pg, err);
}

static int run_mpi(bench *b, cal_result *c, progress *pg, dt_error *err)
{
    const opts *o = b->o;
    size_t count = elems(b, o->sizes[o->n_sizes - 1]), es = kern_dtype_size(o->dtype);
    size_t block = (count + (size_t)b->mpi_size - 1) / (size_t)b->mpi_size;
    b->mbuf = dt_xcalloc(block * (size_t)b->mpi_size, es);
    b->mtmp = dt_xcalloc(block, es);
    int rc = measure(b, c, kern_mpi_algo_name(KERN_MPI_ALLREDUCE), CAL_KIND_ALLREDUCE, o->sizes, o->n_sizes, mpi_verify_ar, mpi_time_ar, pg, err);
    if (!rc) rc = measure(b, c, kern_mpi_algo_name(KERN_MPI_RS_AG), CAL_KIND_ALLREDUCE, o->sizes, o->n_sizes, mpi_verify_rs, mpi_time_rs, pg, err);
    return rc;
}

/* --from-nccl-tests: parse every log (all of them, so that every bad one is reported with its
 * line before anything is written), fit, write like a measured calibration. */
static int run_nccl_tests(const opts *o)
{
    dt_error err;
    dt_error_clear(&err);
    cal_nccl_log *logs = dt_xcalloc((size_t)o->n_logs, sizeof *logs);
    cal_nccl_run *runs = NULL;
    int n_runs = 0, rc = DT_OK;
    for (int i = 0; i < o->n_logs && rc == DT_OK; i++) {
        rc = cal_nccl_parse_file(o->logs[i], o->nccl_op, &logs[i], &err);
        if (rc) break;
        for (int w = 0; w < logs[i].n_warnings; w++) fprintf(stderr, "dtsim: warning: %s\n", logs[i].warnings[w]);
        runs = dt_xrealloc(runs, (size_t)(n_runs + logs[i].n_runs) * sizeof *runs);
        memcpy(runs + n_runs, logs[i].runs, (size_t)logs[i].n_runs * sizeof *runs);
        n_runs += logs[i].n_runs;
    }
    cal_result *c = NULL;
    if (rc == DT_OK) {
        cal_nccl_options no = {.size_from = o->fit_from, .size_to = o->fit_to, .tolerance = o->fit_tolerance};
        rc = cal_from_nccl_runs(runs, n_runs, &no, &c, &err);
    }
    if (rc == DT_OK && o->plot && !have_gnuplot())
        rc = dt_error_set(&err, DT_EUNSUPPORTED, NULL, NULL, "calibrate: --plot needs gnuplot (apt-get install gnuplot-nox)");
    if (rc == DT_OK) rc = write_outputs(c, o, &err);
    cal_result_destroy(c);
    free(runs); /* the arrays belong to the logs */
    for (int i = 0; i < o->n_logs; i++) cal_nccl_log_free(&logs[i]);
    free(logs);
    return rc ? cli_report_error(&err) : CLI_OK;
}

static int run(int argc, char **argv)
{
    opts o;
    dt_error err;
    dt_error_clear(&err);
    /* under mpirun every rank parses the same flags: only rank 0 reports */
    const char *env_rank = getenv("OMPI_COMM_WORLD_RANK");
    bool quiet = env_rank && atoi(env_rank) != 0;
    int rc = parse_args(argc, argv, &o, &err);
    if (rc) return quiet ? cli_status(rc) : cli_report_error(&err);
    if (o.plot && !have_gnuplot()) {
        dt_error_set(&err, DT_EUNSUPPORTED, NULL, NULL, "calibrate: --plot needs gnuplot (apt-get install gnuplot-nox)");
        return quiet ? cli_status(err.code) : cli_report_error(&err);
    }
    if (o.n_logs) return run_nccl_tests(&o);
    cal_result *c = dt_xcalloc(1, sizeof *c);
    cal_result_set_machine(c);
    snprintf(c->backend, sizeof c->backend, "%s", backend_names[o.bk]);
    snprintf(c->dtype, sizeof c->dtype, "%s", kern_dtype_name(o.dtype));
    c->repeats = o.repeats;
    c->warmup = o.warmup;
    bench b = {.o = &o};
    int mpi_rank = 0;
    bool mpi = o.bk == BK_MPI;
    if (mpi) {
        rc = kern_mpi_init(&argc, &argv, &mpi_rank, &b.mpi_size, &err);
        if (rc) {
            cal_result_destroy(c);
            return quiet ? cli_status(rc) : cli_report_error(&err);
        }
        if (o.ranks_set && o.ranks != b.mpi_size && mpi_rank == 0)
            fprintf(stderr, "dtsim: calibrate: --ranks %d ignored: mpirun started %d ranks\n", o.ranks, b.mpi_size);
        o.ranks = b.mpi_size;
        quiet = mpi_rank != 0;
    }
    c->ranks = o.ranks;
    c->chunk_bytes = o.bk == BK_CPU || o.bk == BK_TCP ? o.chunk : 0;
    progress pg = {.on = !o.json && !quiet && isatty(STDERR_FILENO), .last_pct = -1};
    int n_algos = o.bk == BK_MPI ? 2 : (o.bk == BK_NCCL || o.bk == BK_TCP || o.topk_fraction <= 0) ? 1 : 2;
    pg.total = (long)n_algos * o.n_sizes * (o.repeats + o.warmup);
    switch (o.bk) {
    case BK_CPU: rc = run_cpu(&b, c, &pg, &err); break;
    case BK_MPI: rc = run_mpi(&b, c, &pg, &err); break;
    case BK_TCP: rc = run_tcp(&b, c, &pg, &err); break;
    case BK_CUDA:
    case BK_NCCL: rc = run_cuda(&b, c, &pg, &err); break;
    }
    if (pg.on && rc) fprintf(stderr, "\n");
    if (!rc && !quiet) rc = write_outputs(c, &o, &err);
    if (mpi) {
        rc = kern_mpi_bcast_int(rc); /* every rank exits with rank 0's verdict */
        kern_mpi_finalize();
    }
    bench_free(&b);
    cal_result_destroy(c);
    if (rc) return quiet ? cli_status(rc) : cli_report_error(&err);
    return CLI_OK;
}

const cli_command cmd_calibrate = {.name = "calibrate",
                                   .summary = "Time real kernels and fit latency/bandwidth models",
                                   .run = run,
                                   .help = help};
