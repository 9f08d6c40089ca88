/* goodput.h - a long training job with failures, checkpoints and restarts; the storage system
 * its checkpoints and its input data go through.
 *
 *   gp_   (models/workload/goodput.c): the scenario's `failures` and `checkpoint` sections, the
 *         Monte Carlo simulation of the job over a horizon (steps, checkpoints, failures, lost
 *         work, restarts), its goodput with a confidence interval, the checkpoint interval that
 *         maximises it, and the closed forms it is checked against (Young 1974, Daly 2006, the
 *         renewal-reward goodput of exponential failures).
 *   stor_ (models/workload/storage.c): the scenario's `storage` and `input` sections and the
 *         rates they give: checkpoint writes and reads, the input pipeline's reads.
 *
 * The formulas, the model's assumptions and what it leaves out: docs/goodput.md.
 *
 * Ownership: every struct here is plain data except gp_result, whose points array
 * gp_simulate() allocates and gp_result_free() frees. Parsers borrow the cJSON for the call.
 */
#ifndef DTSIM_GOODPUT_H
#define DTSIM_GOODPUT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "dtsim/error.h"
#include "dtsim/json.h"

/* ---------------------------------------------------------------- failures ---- */

typedef enum gp_dist { GP_EXPONENTIAL, GP_WEIBULL } gp_dist;

/* Classes of parts that fail, each counted from the topology: GPUs, hosts (servers; a GPU
 * without a host is its own), physical links (a duplex pair is one link). */
enum { GP_GPU, GP_HOST, GP_LINK, GP_N_CLASSES };
const char *gp_class_name(int cls); /* "gpu", "host", "link" */

typedef struct gp_class {
    double mtbf_s;     /* mean time between failures of one part, s; 0 = never fails */
    gp_dist dist;      /* time to failure of a part: exponential, or Weibull of shape k */
    double shape;      /* Weibull k (1 = exponential, < 1 infant mortality, > 1 wear-out) */
} gp_class;

typedef enum gp_start { GP_START_STATIONARY, GP_START_NEW } gp_start;

typedef struct gp_failures {
    bool present;
    gp_class cls[GP_N_CLASSES];
    double restart_s;  /* detect, reschedule, relaunch: before the checkpoint is read back */
    gp_start start;    /* parts' ages at t = 0: in service (equilibrium) or all new */
} gp_failures;

typedef enum gp_ckpt_mode { GP_CKPT_SYNC, GP_CKPT_ASYNC } gp_ckpt_mode;

typedef struct gp_checkpoint {
    bool present;
    long interval_steps;  /* checkpoint every N steps, or */
    double interval_s;    /* every this much training time (rounded to whole steps); */
                          /* both 0: "auto", the goodput-optimal interval found by the search */
    double size_bytes;    /* 0: weights and optimizer states from the memory model */
    gp_ckpt_mode mode;    /* sync: training stops while the checkpoint is written; async: it
                             stops for a snapshot to host memory, the write runs behind */
    double snapshot_bw;   /* async: GPU to host memory, B/s per GPU */
} gp_checkpoint;

/* ----------------------------------------------------------------- storage ---- */

typedef struct stor_spec {
    bool present;
    double bandwidth;       /* the file system's aggregate bandwidth, B/s (INFINITY: no limit) */
    double host_bandwidth;  /* each host's link to it, B/s (INFINITY: no limit) */
    double latency_s;       /* per transfer (open, metadata, first byte) */
    char node[128];         /* a topology node: rates are max-flows over the links to it */
} stor_spec;

typedef struct stor_input {
    bool present;
    double bytes_per_sample; /* what one training sample costs to read */
    int prefetch;            /* batches the loader may read ahead (0: synchronous) */
} stor_input;

/* Parse the scenario's `failures`, `checkpoint`, `storage` and `input` sections (each optional;
 * absent sections leave present = false). Errors name the JSON path. Cross-checks: a
 * checkpoint needs a storage section. */
int gp_parse(const js_ctx *c, const cJSON *scenario, gp_failures *f, gp_checkpoint *ck,
             stor_spec *st, stor_input *in);

/* The `storage` and `input` sections alone (gp_parse calls it). An input section needs storage. */
int stor_parse(const js_ctx *c, const cJSON *scenario, stor_spec *st, stor_input *in);

/* Time to move `bytes` between storage and `hosts` hosts sharing it evenly, when the links
 * allow `path_bw` B/s in all (a max-flow, INFINITY for the figure-only model):
 * latency + bytes / min(bandwidth, hosts x host_bandwidth, path_bw). */
double stor_transfer_s(const stor_spec *s, int hosts, double path_bw, double bytes);

/* The input pipeline's stall per step in steady state: r = the read of one step's samples
 * (stor_transfer_s), t = the step without it. Prefetch 0 reads synchronously (stall r);
 * prefetch >= 1 overlaps the read with the previous step (stall max(0, r - t)). */
double stor_input_stall_s(const stor_input *in, double read_s, double step_s);

/* ------------------------------------------------------------- the job ---- */

/* What the Monte Carlo needs, resolved from a scenario by run_goodput_job (run.h). */
typedef struct gp_job {
    double step_s;                  /* one training step */
    double tokens_per_step, samples_per_step;
    long count[GP_N_CLASSES];       /* parts of each class */
    gp_class cls[GP_N_CLASSES];
    gp_start start;
    double restart_s, read_s;       /* a restart: relaunch, then read the checkpoint back */
    gp_ckpt_mode mode;
    double block_s;                 /* training stops this long per checkpoint (write or snapshot) */
    double durable_s;               /* after that, until the checkpoint is durable (async write) */
    long interval_steps;            /* the scenario's interval (0: auto) */
    double ckpt_bytes, write_bw;    /* for people: size and the write rate it got */
} gp_job;

typedef struct gp_options {
    double horizon_s;               /* wall-clock time simulated per run */
    int runs;                       /* independent runs (failure histories) */
    uint64_t seed;
    bool search;                    /* find the goodput-optimal interval */
    long min_steps, max_steps;      /* search range in steps (0: around Daly's interval) */
    void (*progress)(void *ctx, long done, long total);
    void *progress_ctx;
} gp_options;

typedef struct gp_point {
    long steps;                     /* checkpoint every `steps` steps */
    double interval_s;              /* = steps x step time: training time between checkpoints */
    double goodput, goodput_ci95;   /* useful training time / horizon; 95 % CI half-width */
    double useful_s, lost_s, ckpt_s, restart_s; /* means per run; they sum to the horizon */
    double failures;                /* mean failures per run */
    double renewal;                 /* closed-form goodput (exponential parts, sync), else NAN */
} gp_point;

typedef struct gp_result {
    gp_point *points;               /* every interval evaluated, by interval; owned */
    int n_points;
    int best;                       /* index of the highest mean goodput (search), else -1 */
    int given;                      /* index of the scenario's interval, -1 when auto */
    int daly;                       /* index of Daly's interval (whole steps), -1 if not tried */
    double system_mtbf_s;           /* 1 / sum of long-run failure rates */
    double young_s, daly_s;         /* closed-form optimal intervals, training time */
    double renewal_opt_s;           /* exact optimum of the renewal formula, NAN unless it applies */
    long failures_drawn;            /* over all runs */
} gp_result;

/* Simulate the job: opt->runs failure histories over opt->horizon_s (common to every interval
 * tried: common random numbers), then the scenario's interval and/or the search (a log grid
 * around Daly's interval refined by golden-section on whole steps). DT_EINPUT for a job that
 * cannot be simulated (no step time, a history with more than 2^24 failures). */
int gp_simulate(const gp_job *job, const gp_options *opt, gp_result *out, dt_error *err);
void gp_result_free(gp_result *r);

/* Goodput of one run with the given failure times (ascending, within [0, horizon]) at a
 * checkpoint every `steps` steps: the deterministic core of gp_simulate, for tests. Fills the
 * useful, lost, checkpoint and restart times (they sum to the horizon). */
void gp_run_once(const gp_job *job, long steps, const double *fail_t, long n_fail,
                 double horizon_s, double *useful, double *lost, double *ckpt, double *restart);

/* Closed forms. delta: checkpoint cost, M: system MTBF, R: restart (relaunch + read back).
 * Young: sqrt(2 delta M). Daly: sqrt(2 delta M)(1 + sqrt(delta/(2M))/3 + delta/(18 M)) - delta
 * for delta < 2M, else M. Renewal (exponential failures, also during checkpoints and
 * restarts; sync checkpoints): long-run goodput of work W between checkpoints
 *   W / (M e^{R/M} (e^{(W + delta)/M} - 1)). */
double gp_young(double delta, double M);
double gp_daly(double delta, double M);
double gp_renewal_goodput(double W, double delta, double R, double M);
/* W maximising gp_renewal_goodput (golden-section search; the function is unimodal in W). */
double gp_renewal_optimum(double delta, double R, double M);

#endif
