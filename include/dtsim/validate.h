/* validate.h - the validation suite: published training runs and collective measurements
 * re-simulated, and how far dtsim's predictions are from them.
 *
 * A suite is a directory with a manifest.json (docs/validation.md, "Manifest") listing cases:
 * a scenario file and the measured step time or model TFLOP/s per GPU of a published run, or a
 * collective (topology, op, sizes) and the measured bus bandwidth of nccl-tests. val_run loads
 * the manifest, runs every case (threads) and fills one row per case plus the summary the CI
 * gate checks.
 *
 * Error sign: + is optimistic (dtsim predicts more throughput than was measured):
 *   step time:          measured / predicted - 1
 *   TFLOP/s, bus bw:    predicted / measured - 1
 *
 * Ownership: val_results (and every string in it) is the caller's; free with val_results_free.
 * Nothing is printed (the CLI formats the rows).
 */
#ifndef DTSIM_VALIDATE_H
#define DTSIM_VALIDATE_H

#include <stdbool.h>

#include "dtsim/error.h"
#include "dtsim/run.h"

typedef enum val_metric { VAL_STEP_TIME, VAL_TFLOPS, VAL_BUSBW, VAL_METRIC_COUNT } val_metric;

/* "step_time", "tflops_per_gpu", "busbw" (the manifest's names) and their units for people. */
const char *val_metric_name(val_metric m);
const char *val_metric_unit(val_metric m);

typedef struct val_case {
    char *id;
    char *source;          /* where the measured figure comes from */
    char **assumptions;    /* what the source leaves out, as the scenario assumes it */
    int n_assumptions;
    char *file;            /* scenario file (training cases), NULL for collectives */
    val_metric metric;
    double measured;       /* SI: s, FLOP/s per GPU, B/s */
    /* results */
    bool ok;               /* ran; false: message says why */
    char message[DT_ERR_MSG_MAX];
    double predicted;      /* same unit as measured */
    double error;          /* signed, + optimistic */
    run_result run;        /* training cases: the step (breakdown, memory, fits) */
    double busbw_min, busbw_max; /* collectives: over the sizes run (B/s) */
    int n_sizes;
    char algo[16];         /* collectives: the algorithm that ran */
} val_case;

typedef struct val_results {
    val_case *cases;
    int n;
    int n_ok;
    double median_abs, mean_abs, worst_abs; /* over the cases that ran, |error| */
    int worst;                              /* index of the worst case, -1 if none ran */
} val_results;

typedef struct val_options {
    const char *const *only; /* run only these case ids (NULL: all) */
    int n_only;
    int threads;             /* 0: one per online core */
} val_options;

/* Load dir/manifest.json, run its cases, fill *out. DT_EINPUT with err filled (file, JSON path)
 * for a malformed manifest or an unknown --case id; a case that fails to run is a row with
 * ok = false and its message (the others still run). */
int val_run(const char *dir, const val_options *opt, val_results *out, dt_error *err);
void val_results_free(val_results *r);

/* The median and mean of |error| and the worst case over the rows that ran (val_run fills
 * them; exposed for tests). */
void val_summarise(val_results *r);

#endif
