/* kern.h - real kernels timed by `dtsim calibrate`: ring all-reduce and top-k compression on the
 * CPU (threads over shared memory), over MPI ranks, and on CUDA devices (own ring kernel, NCCL).
 *
 * These run on the hardware present; nothing here is simulated. Results are checked against
 * naive references (kern_*_reference) before anything is timed.
 *
 * Ownership: kern_cpu_ring and the CUDA/MPI contexts are created and destroyed in pairs by the
 * caller. Buffers passed in are borrowed for the call only. No global mutable state: several
 * rings may run at once (each owns its threads).
 *
 * Half-precision types (bf16, fp16) are stored as uint16_t bit patterns; arithmetic converts to
 * float, adds, and rounds back to nearest-even after every addition (what a GPU reduction kernel
 * that accumulates in the storage type does).
 */
#ifndef DTSIM_KERN_H
#define DTSIM_KERN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dtsim/calib.h"
#include "dtsim/error.h"

typedef enum kern_dtype {
    KERN_FP32,
    KERN_BF16,
    KERN_FP16,
    KERN_DTYPE_COUNT
} kern_dtype;

const char *kern_dtype_name(kern_dtype t);
int kern_dtype_parse(const char *s, kern_dtype *out); /* DT_OK / DT_EINPUT */
size_t kern_dtype_size(kern_dtype t);
/* Unit roundoff u = 2^-p of the type (half its machine epsilon): fp32 2^-24, bf16 2^-8,
 * fp16 2^-11. Error bounds in tests and docs are multiples of it. */
double kern_dtype_unit_roundoff(kern_dtype t);

/* IEEE binary16 and bfloat16 <-> binary32, round to nearest, ties to even; NaN stays NaN,
 * overflow goes to infinity, fp16 subnormals are handled exactly. */
uint16_t kern_f32_to_bf16(float f);
float kern_bf16_to_f32(uint16_t h);
uint16_t kern_f32_to_fp16(float f);
float kern_fp16_to_f32(uint16_t h);

/* Element i of buf (of type t) as float / stored from float (rounded). */
float kern_load(kern_dtype t, const void *buf, size_t i);
void kern_store(kern_dtype t, void *buf, size_t i, float v);

/* Fill count elements with gradient-like data: normal(0, sigma) from a GSL mt19937 stream
 * seeded by (seed, rank). */
void kern_fill_gradient(kern_dtype t, void *buf, size_t count, double sigma, uint64_t seed,
                        int rank);

/* ---- CPU ring all-reduce ---- */

/* A team of `ranks` threads (one per rank), kept alive between calls so that thread start-up is
 * not timed. Each rank owns a receive FIFO of KERN_RING_SLOTS chunk slots written by its left
 * neighbour; chunk_bytes (0 = 64 KiB) is the pipelining unit. */
typedef struct kern_cpu_ring kern_cpu_ring;

#define KERN_RING_SLOTS 4

/* Creates the team in *out. Fails (DT_EINPUT) for ranks < 1, and (DT_EIO, *out NULL, nothing
 * left running) when the system will not start a thread for every rank. */
int kern_cpu_ring_create(int ranks, size_t chunk_bytes, kern_cpu_ring **out, dt_error *err);
void kern_cpu_ring_destroy(kern_cpu_ring *r);

/* In-place sum all-reduce of bufs[0..ranks) (count elements of type t each): reduce-scatter then
 * all-gather around the ring, 2(ranks-1) steps, each step chunked and pipelined through the
 * FIFOs. Returns the wall time in seconds (from releasing the ranks to the last rank's finish).
 * ranks == 1 is a no-op. Element e of segment k ends as
 *   ((x_k + x_{k+1}) + x_{k+2}) + ... + x_{k+n-1}   (indices mod n, rounded after each add)
 * where segment k is [k*count/n, (k+1)*count/n): kern_allreduce_reference reproduces it. */
double kern_cpu_ring_allreduce(kern_cpu_ring *r, kern_dtype t, void *const *bufs, size_t count);

/* The naive reference, one thread, the ring's summation order: out (count elements) = sum over
 * ranks of in[r]. Exact match expected for every dtype. */
void kern_allreduce_reference(kern_dtype t, const void *const *in, int ranks, size_t count,
                              void *out);

/* a[i] = b[i] + a[i] for n elements, rounded in the storage type after the addition (the
 * ring kernels' reduction step). */
void kern_reduce_into(kern_dtype t, void *a, const void *b, size_t n);

/* ---- TCP ring all-reduce between processes (Gloo's ring over sockets) ---- */

/* `ranks` forked processes joined in a ring of TCP connections over 127.0.0.1; each holds
 * max_count elements of gradient-like data (kern_fill_gradient(seed, rank)) in shared memory
 * as its input. chunk_bytes (0 = 64 KiB) is the pipelining unit. The caller must be single
 * threaded when creating it (fork). DT_EUNSUPPORTED when sockets or fork fail. */
typedef struct kern_tcp_ring kern_tcp_ring;
int kern_tcp_ring_create(int ranks, size_t chunk_bytes, kern_dtype t, size_t max_count, uint64_t seed,
                         kern_tcp_ring **out, dt_error *err);
/* Stops and reaps the processes; NULL is fine. */
void kern_tcp_ring_destroy(kern_tcp_ring *r);
/* Process id of a rank (diagnostics and tests), -1 out of range. */
int kern_tcp_ring_pid(const kern_tcp_ring *r, int rank);
/* One in-place sum all-reduce of the first count elements of every rank's input (restored before
 * each run, outside the timing): reduce-scatter then all-gather around the ring, the summation
 * order of kern_allreduce_reference. *seconds: from the release of the ranks to the last one's
 * finish. */
int kern_tcp_ring_allreduce(kern_tcp_ring *r, size_t count, double *seconds, dt_error *err);
/* Run once at count elements and compare every rank's result with kern_allreduce_reference
 * bit for bit (DT_EINTERNAL naming the first wrong element). */
int kern_tcp_ring_verify(kern_tcp_ring *r, size_t count, dt_error *err);

/* ---- top-k compression with error feedback (fp32 gradients) ---- */

/* acc = grad + residual; keep the k largest |acc| (ties: lower index first) as (idx, val)
 * sorted by index; residual = acc with the kept entries zeroed. scratch holds count floats.
 * Cost O(count) on average: a quickselect on magnitudes, then in-order scans (no sort). */
void kern_topk_compress(const float *grad, float *residual, size_t count, size_t k,
                        uint32_t *idx, float *val, float *scratch);
/* Reference by full sort: same contract, O(count log count). */
void kern_topk_reference(const float *grad, float *residual, size_t count, size_t k,
                         uint32_t *idx, float *val);

/* ---- MPI (DTSIM_HAVE_MPI), for processes launched by mpirun ---- */

typedef enum kern_mpi_algo {
    KERN_MPI_ALLREDUCE,    /* MPI_Allreduce (Open MPI's own algorithm choice) */
    KERN_MPI_RS_AG,        /* MPI_Reduce_scatter_block then MPI_Allgather (ring-like) */
    KERN_MPI_ALGO_COUNT
} kern_mpi_algo;

const char *kern_mpi_algo_name(kern_mpi_algo a);

/* Initialise MPI when this process was started by mpirun with >= 2 ranks; DT_EUNSUPPORTED with
 * a message otherwise (built without MPI, not under mpirun, one rank). */
int kern_mpi_init(int *argc, char ***argv, int *rank, int *size, dt_error *err);
void kern_mpi_finalize(void);
/* Every rank calls with the same arguments. count need not divide by the rank count: for
 * KERN_MPI_RS_AG the buffer is handled as size blocks of ceil(count/size) elements, so buf must
 * hold ceil(count/size)*size elements and tmp ceil(count/size). *seconds is the slowest rank's
 * time (on every rank). Verification: kern_mpi_verify. */
int kern_mpi_allreduce(kern_mpi_algo a, kern_dtype t, void *buf, void *tmp, size_t count,
                       double *seconds, dt_error *err);
/* Run algorithm a once on integer-valued data (exact in every dtype) and compare with the
 * closed-form sum; DT_EINTERNAL naming the first wrong element. */
int kern_mpi_verify(kern_mpi_algo a, kern_dtype t, size_t count, dt_error *err);
/* Broadcast a status from rank 0 so every rank stops together. */
int kern_mpi_bcast_int(int v);

/* ---- CUDA / NCCL (DTSIM_HAVE_CUDA, DTSIM_HAVE_NCCL) ---- */

/* Number of CUDA devices, or DT_EUNSUPPORTED ("built without CUDA" / "no CUDA device"). */
int kern_cuda_devices(int *n, char *name, size_t name_size, dt_error *err);

typedef enum kern_cuda_algo {
    KERN_CUDA_RING,  /* our ring kernel: peer copies between devices, or buffers on one device */
    KERN_CUDA_NCCL,  /* ncclAllReduce */
    KERN_CUDA_TOPK,  /* top-k compression kernel (count = elements, k = count/100) */
    KERN_CUDA_ALGO_COUNT
} kern_cuda_algo;

typedef struct kern_cuda_ctx kern_cuda_ctx;

/* ranks: logical ranks (spread over the devices present, round-robin). max_count: largest
 * buffer in elements. DT_EUNSUPPORTED without a device or (for NCCL) without NCCL. */
int kern_cuda_create(kern_cuda_algo a, int ranks, kern_dtype t, size_t max_count,
                     kern_cuda_ctx **out, dt_error *err);
void kern_cuda_destroy(kern_cuda_ctx *c);
/* Check the kernel against a host reference at count elements (DT_EINTERNAL on mismatch). */
int kern_cuda_verify(kern_cuda_ctx *c, size_t count, dt_error *err);
/* Time one run at count elements (seconds, CUDA events around the whole collective). */
int kern_cuda_run(kern_cuda_ctx *c, size_t count, double *seconds, dt_error *err);

/* ---- Fitting and describing measurements (kernels/cal_fit.c, kernels/cal_machine.c) ----
 * The calibration's data types live in calib.h; producing them from timings is the kernels'. */

/* Fit samples (x[i], t[i]), i < n, to T = alpha + x beta (CAL_FIT_METHOD). Needs at least 3
 * samples at 2 or more distinct x; DT_EINPUT with a message otherwise, DT_EINTERNAL if GSL
 * fails. */
int cal_fit_alpha_beta(const double *x, const double *t, size_t n, cal_fit *out, dt_error *err);
/* The line dtsim writes: the fit above, its latency judged by cal_alpha_judge (calib.h), the rule
 * the calibration reader applies. CAL_ALPHA_OK: the free fit. CAL_ALPHA_NOISE: beta refitted with
 * alpha held at 0 (same method, the line through the origin), out->alpha_held set and the free
 * fit's alpha kept in out->free_alpha(_ci). CAL_ALPHA_NEGATIVE: DT_EINPUT whose message gives the
 * figures (the caller adds the collective's name); *out keeps the free fit. A fit whose beta is
 * not positive is returned as fitted, unjudged: callers refuse it as "not growing with size".
 * Other errors as cal_fit_alpha_beta. */
int cal_fit_line(const double *x, const double *t, size_t n, cal_fit *out, dt_error *err);

/* Fill machine fields (hostname, /proc/cpuinfo model, online cores) and the current date. */
void cal_result_set_machine(cal_result *c);

/* ---- nccl-tests logs (kernels/cal_nccl_tests.c, docs/calibration.md) ---- */

#define CAL_NCCL_MAX_BYTES (64 << 20) /* larger logs are refused */
#define CAL_NCCL_MAX_WARNINGS 8

/* One run of an nccl-tests binary: the table between its column header and its
 * "# Avg bus bandwidth" line, with what the header says about it. Arrays owned by the log. */
typedef struct cal_nccl_run {
    char file[256];
    int line;                    /* the table's column header */
    cal_kind kind;               /* the collective */
    int ranks;                   /* ranks per communicator */
    int groups;                  /* communicators (NCCL_TESTS_SPLIT_MASK), usually 1 */
    int hosts, gpus_per_host;    /* distinct host names of the device list; most ranks on one */
    char hostnames[CAL_NAME_MAX];/* comma-separated, truncated */
    char gpu[CAL_NAME_MAX];      /* device name of rank 0 */
    char dtype[8];               /* fp32, fp16, bf16, fp64, int8 ... */
    int iters, warmup;           /* from the header (0 when absent) */
    int n_rows;
    double *size;                /* bytes (nccl-tests' size column) */
    double *time[2];             /* seconds, out-of-place [0] and in-place [1]; 0 = not reported */
    double *algbw[2], *busbw[2]; /* GB/s as printed */
    int *row_line;
} cal_nccl_run;

typedef struct cal_nccl_log {
    cal_nccl_run *runs;
    int n_runs;
    int noise_lines;             /* lines skipped: neither header, comment nor row */
    char warnings[CAL_NCCL_MAX_WARNINGS][256];
    int n_warnings;
} cal_nccl_log;

/* Parse one log (text of len bytes, named file in messages). op_hint: the collective when the
 * caller knows it (-1: from the log's "Collective test starting" line, a *_perf name in it or
 * in the file name, else inferred from busbw/algbw). Errors are DT_EINPUT with the line:
 * truncated tables, garbled rows, failed runs, unknown tests. *out freed by cal_nccl_log_free. */
int cal_nccl_parse(const char *text, size_t len, const char *file, int op_hint, cal_nccl_log *out, dt_error *err);
void cal_nccl_log_free(cal_nccl_log *l);
/* The same from a file (a regular file of at most CAL_NCCL_MAX_BYTES). */
int cal_nccl_parse_file(const char *path, int op_hint, cal_nccl_log *out, dt_error *err);

typedef struct cal_nccl_options {
    double size_from, size_to; /* fit exactly these sizes (0: choose, see below) */
    double tolerance;          /* relative miss allowed when choosing the range (0: 0.05) */
} cal_nccl_options;

/* One fit per (collective, scope, ranks) over the runs given (runs of the same shape merge:
 * out-of-place and in-place times are two samples per size, several runs add more). The range
 * fitted is the widest run of consecutive sizes ending at the largest within which the line
 * reproduces every size's median time within the tolerance, unless the options name one.
 * Scope: inter-host when the run spans more than one host. *out caller-owned. */
int cal_from_nccl_runs(const cal_nccl_run *runs, int n_runs, const cal_nccl_options *opt, cal_result **out,
                       dt_error *err);

#endif
