/* calib.h - calibration results: fitted latency/bandwidth models from real kernel runs, and how
 * they are applied to a simulated cluster.
 *
 * Produced by `dtsim calibrate` (kernels/ time, cal_fit_alpha_beta in kern.h fits), stored as a
 * calibration JSON file (docs/formats.md, "Calibration files"), consumed by `dtsim collective
 * --calibration FILE` and scenarios with "options": {"calibration": FILE}. models/gpu/calib.c
 * builds, writes and loads it; applying it to a cluster is the topology's own operation
 * (topo_apply_calibration in topo.h), so this header knows nothing of topologies.
 *
 * A cal_result is plain data: every array in it is owned by the result and freed by
 * cal_result_destroy. Strings are fixed-size arrays (no borrowed pointers).
 */
#ifndef DTSIM_CALIB_H
#define DTSIM_CALIB_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "dtsim/error.h"
#include "dtsim/gpu.h"
#include "dtsim/json.h"

#define CAL_FORMAT "dtsim-calibration"
#define CAL_VERSION 1
#define CAL_NAME_MAX 128

/* T(x) = alpha + x * beta fitted to (x, time) samples. x is bytes for all-reduce fits and
 * elements for top-k. Confidence intervals are two-sided 95% half-widths from the fit's
 * covariance and Student's t with dof = samples - 2. */
typedef struct cal_fit {
    double alpha, beta;       /* s; s per byte (or per element) */
    double alpha_se, beta_se; /* standard errors */
    double alpha_ci, beta_ci; /* 95% CI half-widths */
    double r2;                /* coefficient of determination of the per-size medians */
    int n_samples, dof;       /* dof: samples - parameters fitted (2, or 1 when alpha_held) */
    /* alpha held at 0: the free fit's alpha was negative but statistically zero
     * (CAL_ALPHA_NOISE below), so beta was refitted with the line through the origin; alpha and
     * alpha_ci are then 0 and the free fit's figures are kept here ("alpha_free" in files). */
    bool alpha_held;
    double free_alpha, free_alpha_ci;
} cal_fit;

/* What a fitted latency says, the one rule that the writers (dtsim calibrate: cal_fit_line in
 * kern.h, the nccl-tests import) and the reader (cal_load_file) apply, so that they cannot
 * disagree:
 *   CAL_ALPHA_OK        alpha >= 0;
 *   CAL_ALPHA_NOISE     alpha < 0 but its 95 % interval reaches 0 (alpha + alpha_ci >= 0): a
 *                       latency under the timing noise, statistically zero; a writer refits
 *                       through the origin, a reader applies it as 0;
 *   CAL_ALPHA_NEGATIVE  the whole interval below 0 (or not a number): not noise but a wrong fit
 *                       (sizes where the time is not a line through a positive latency), refused
 *                       by writers and readers alike. */
typedef enum cal_alpha_verdict { CAL_ALPHA_OK, CAL_ALPHA_NOISE, CAL_ALPHA_NEGATIVE } cal_alpha_verdict;
cal_alpha_verdict cal_alpha_judge(double alpha, double alpha_ci);
/* The refusal's words, shared by writers and reader (each adds where: a file and JSON path, or a
 * collective's name): "a negative latency (A s) whose 95 % interval (+-C s) does not reach 0". */
const char *cal_alpha_refusal(double alpha, double alpha_ci, char *buf, size_t len);

/* Fit method, recorded in files: robust (Tukey bisquare, gsl_multifit_robust) least squares on
 * relative residuals, i.e. each sample is divided by the median time at its size so that a
 * microsecond-scale point counts as much as a second-scale one. */
#define CAL_FIT_METHOD "gsl_multifit_robust bisquare, relative residuals"

/* Samples at one size. */
typedef struct cal_point {
    double size;          /* bytes (all-reduce) or elements (top-k) */
    double min, median, mean, stddev; /* seconds */
    double *samples;      /* n_samples seconds, owned */
    int n_samples;
} cal_point;

/* Summarise samples[0..n) into p (copies them). */
void cal_point_set(cal_point *p, double size, const double *samples, int n);

typedef enum cal_kind {
    CAL_KIND_ALLREDUCE, /* x = bytes per rank (the full buffer) */
    CAL_KIND_TOPK,      /* x = elements compressed */
    /* other collectives (nccl-tests logs), x = the nccl-tests size (coll.h's bytes) */
    CAL_KIND_REDUCE_SCATTER,
    CAL_KIND_ALLGATHER,
    CAL_KIND_BROADCAST,
    CAL_KIND_REDUCE,
    CAL_KIND_ALLTOALL,
    CAL_KIND_SENDRECV,
    CAL_KIND_COUNT
} cal_kind;

/* Kind names are the collectives' names in dtsim (coll.h): allreduce, topk, reduce_scatter,
 * allgather, broadcast, reduce, alltoall, sendrecv. cal_kind_parse also takes nccl-tests'
 * spellings (all_reduce, all-gather, AllToAll: case, '_' and '-' do not matter). */
const char *cal_kind_name(cal_kind k);
int cal_kind_parse(const char *s, cal_kind *out); /* DT_OK / DT_EINPUT */

/* Which links a collective fit describes: those of GPU-to-GPU paths inside one host (every
 * kernel run on one machine), or those of paths between hosts (a measurement across hosts,
 * e.g. a multi-node nccl-tests log: its time is set by the inter-host hops). */
typedef enum cal_scope { CAL_SCOPE_INTRA, CAL_SCOPE_INTER } cal_scope;

typedef struct cal_algo {
    char name[32];      /* "ring", "nccl", "mpi_allreduce", "mpi_rs_ag", "tcp_ring", "topk",
                           "nccltests_<op>[_inter]" */
    cal_kind kind;
    double k_fraction;  /* top-k: k / elements */
    cal_point *points;  /* owned */
    int n_points;
    cal_fit fit;
    /* Optional in files (defaults in brackets): the ranks the collective ran over [the file's
     * ranks], the hosts they spanned [1] and hence the links described [intra-host], and the
     * sizes the fit covers [every point]; points outside [fit_from, fit_to] are kept as
     * measured but not fitted. fit_worst: largest relative miss of a fitted median (informative). */
    int ranks, hosts;
    cal_scope scope;
    double fit_from, fit_to, fit_worst;
} cal_algo;

typedef struct cal_result {
    char source[256];            /* file it was loaded from (base name), "" if built in memory */
    char origin[256];            /* what the measurements came from when not run here (the
                                    nccl-tests logs' names), "" otherwise; "source" in files */
    char date[40];               /* ISO-8601 UTC */
    char hostname[CAL_NAME_MAX];
    char cpu_model[CAL_NAME_MAX];
    int cores;
    char gpu[CAL_NAME_MAX];      /* "" when no GPU was used */
    char backend[16];            /* cpu, mpi, cuda, nccl */
    int ranks;
    char dtype[8];               /* fp32, bf16, fp16 */
    double chunk_bytes;          /* pipelining chunk of the ring kernels, 0 if not applicable */
    int repeats, warmup;
    cal_algo *algos;             /* owned */
    int n_algos;
    /* Optional "compute" section: measured compute tables (gpu.h), n 0 for a class without one;
     * topo_apply_calibration copies them into every GPU's spec. */
    gpu_table compute[GPU_OP_CLASS_COUNT];
} cal_result;

/* Append an algorithm (zeroed) and return it; the pointer lives until the next append. */
cal_algo *cal_result_add_algo(cal_result *c, const char *name, cal_kind kind);

/* Serialise to the calibration format. Caller owns the cJSON tree. */
cJSON *cal_result_to_json(const cal_result *c);

/* Load and validate a calibration file. *out is caller-owned (cal_result_destroy). Every error
 * names the file and the JSON path (fits[1].alpha ...). */
int cal_load_file(const char *filename, cal_result **out, dt_error *err);
/* Same from a parsed document (ctx names the file). */
int cal_from_json(const js_ctx *ctx, const cJSON *root, cal_result **out);
/* Frees c and everything it owns; NULL is fine. */
void cal_result_destroy(cal_result *c);

/* The collective fit that describes the links of a scope, or NULL: all-reduce fits first, in
 * the order ring, nccl, tcp_ring, mpi_allreduce, mpi_rs_ag, others (ring-shaped algorithms first,
 * since the link mapping assumes a ring), then reduce-scatter, all-gather, sendrecv, all-to-all,
 * broadcast, reduce. cal_link_fit is the intra-host one (what every machine-local kernel
 * measures). */
const cal_algo *cal_link_fit(const cal_result *c);
const cal_algo *cal_link_fit_scope(const cal_result *c, cal_scope scope);
/* Index in c->algos of the fit named `name` ("mpi_allreduce"), -1 if none. */
int cal_find_fit(const cal_result *c, const char *name);

/* Fit quality gates of topo_apply_calibration: a fit whose line explains less than half of the
 * variance of its medians (R^2 < CAL_R2_REFUSE) is refused, one below CAL_R2_WARN is applied
 * with a warning. */
#define CAL_R2_REFUSE 0.5
#define CAL_R2_WARN 0.9

/* The one R^2 rule, applied by the readers (topo_apply_calibration_fits, to the fits they apply)
 * and by the writer (dtsim calibrate, cal_check_link_fits below, before it writes), so that they
 * cannot disagree:
 *   CAL_R2_OK     r2 >= CAL_R2_WARN;
 *   CAL_R2_ROUGH  CAL_R2_REFUSE <= r2 < CAL_R2_WARN: applied with a warning;
 *   CAL_R2_POOR   r2 < CAL_R2_REFUSE, or not a number: refused. */
typedef enum cal_r2_verdict { CAL_R2_OK, CAL_R2_ROUGH, CAL_R2_POOR } cal_r2_verdict;
cal_r2_verdict cal_r2_judge(double r2);
/* The refusal's words, shared by writer and readers (each adds where, and what to do), e.g.
 *   fit "ring" has R² = 0.213, below 0.5 (allreduce, 6 sizes 64 KiB - 2 MiB, 90 samples;
 *   alpha 3.1 us, beta 2.5e-10 s/B): its line T = α + S·β does not describe its own measurements
 * "sizes" are the points inside the fit range (fit_from..fit_to). Returns buf. */
const char *cal_r2_refusal(const cal_algo *a, char *buf, size_t len);
/* The writer's gate: judge by cal_r2_judge the collective fits a reader applies by default (per
 * scope, cal_link_fit_scope). A CAL_R2_POOR one: returns `code` (the caller's exit class) with
 * the refusal in err (no file or path: nothing is written yet). Fits that are not a scope's
 * default are not judged here, as readers judge them only when chosen (calibration_fit); a top-k
 * fit sets no links and is never judged by R^2. DT_OK also when the file has no collective fit. */
int cal_check_link_fits(const cal_result *c, int code, dt_error *err);

/* The ranks a fit ran over: its own (nccl-tests fits), else the file's. */
int cal_fit_ranks(const cal_result *c, const cal_algo *a);

/* Per-link figures from a ring all-reduce fit over n ranks:
 *   T(S) = 2(n-1) a_link + 2(n-1)/n * S / B_link
 *   => a_link = alpha / (2(n-1)),  B_link = 2(n-1) / (n * beta). */
void cal_ring_link(double alpha, double beta, int n, double *link_alpha, double *link_bw);
/* The same for any collective kind, from its ring-shaped cost
 *   T(S) = steps(op, n) a_link + frac(op, n) S / B_link
 * with frac the nccl-tests busbw factor (all-reduce 2(n-1)/n; reduce-scatter, all-gather,
 * all-to-all (n-1)/n; broadcast, reduce, sendrecv 1) and steps the transfers in sequence
 * (all-reduce 2(n-1); reduce-scatter, all-gather, broadcast, reduce n-1; all-to-all and
 * sendrecv 1: their transfers run at once). */
void cal_link_figures(cal_kind kind, double alpha, double beta, int n, double *link_alpha, double *link_bw);
/* nccl-tests' busbw / algbw for a collective over n ranks (top-k: 1). */
double cal_busbw_factor(cal_kind k, int n);

/* Fitted top-k compression throughput in elements/s (1/beta), 0 if the calibration has none. */
double cal_topk_throughput(const cal_result *c);

#endif
