/* sweep.h - what-if sweeps: a scenario times a grid of axes, run point by point.
 *
 * A scenario may carry a "sweep" object (docs/formats.md, "Sweeps"):
 *   "sweep": {"mode": "cross" | "zip",
 *             "axes": [{"path": "parallel.dp", "values": [1, 2, 4]},
 *                      {"path": "cluster.gpus", "range": [8, 128], "step": "x2"},
 *                      {"zip": [{"path": ..., "values": ...}, {"path": ..., "values": ...}]}]}
 * Axes are crossed by default (first axis outermost, last varies fastest); "mode": "zip" walks
 * all axes in lock step; a {"zip": [...]} entry zips a group that is crossed with the rest.
 * Each point is the scenario without its "sweep", with every axis path set to the point's value
 * (missing objects on the way are created, so a typo surfaces as the scenario's own
 * unknown-key error).
 *
 * Running (sweep_run): each finished point is written to OUT/points/NNNNNN.json (written to a
 * temporary file, fsync'd, renamed: a point is either complete on disk or absent), then
 * OUT/results.csv and OUT/results.json are assembled in point order. Re-running resumes: points
 * whose record exists (with the same scenario hash) are skipped. OUT/sweep.json stores the hash;
 * a different scenario in the same OUT is refused. Rows are identical whatever the number of
 * threads or MPI ranks.
 *
 * Ownership: sweep_spec is created by sweep_spec_parse and freed by sweep_spec_destroy; it
 * copies what it needs from the scenario (which stays the caller's). Returned cJSON trees are
 * the caller's (cJSON_Delete). No global state: specs may be shared read-only between threads.
 */
#ifndef DTSIM_SWEEP_H
#define DTSIM_SWEEP_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dtsim/error.h"
#include "dtsim/run.h"

typedef struct sweep_spec sweep_spec;

/* Parse scenario["sweep"] (file names the scenario in errors). Fails if there is none. */
int sweep_spec_parse(const cJSON *scenario, const char *file, sweep_spec **out, dt_error *err);
void sweep_spec_destroy(sweep_spec *s);

size_t sweep_n_points(const sweep_spec *s);
/* Columns: one per axis path, in the order written (zipped groups expanded). */
size_t sweep_n_columns(const sweep_spec *s);
const char *sweep_column_name(const sweep_spec *s, size_t col);
/* The value of column col at point (borrowed from s; lives as long as s). */
const cJSON *sweep_point_value(const sweep_spec *s, size_t point, size_t col);

/* A new scenario for point: a copy of scenario without "sweep", axis values set. */
cJSON *sweep_point_scenario(const sweep_spec *s, const cJSON *scenario, size_t point,
                            const char *file, dt_error *err);

/* Set root[path] = copy of value; path is dot/bracket syntax ("parallel.dp", "links[2].bw").
 * Missing objects on the way are created; an array index must exist. */
int sweep_json_set(cJSON *root, const char *path, const cJSON *value, const char *file,
                   dt_error *err);

/* 64-bit FNV-1a of the scenario's canonical (unformatted cJSON) text, sweep included. */
uint64_t sweep_hash(const cJSON *scenario);
/* sweep_hash folded with the contents of every file the scenario names by path: a "topology"
 * string, options.calibration, and the string values of a sweep axis whose path is "topology"
 * or "options.calibration" (zipped groups included). Relative names resolve against base_dir
 * (NULL or "": as given), as the scenario loader resolves them. An unreadable file folds a
 * marker instead. This is the hash sweep_run keeps in OUT/sweep.json and each record. */
uint64_t sweep_hash_inputs(const cJSON *scenario, const char *base_dir);

/* ---- records: one JSON object per point -------------------------------------------------- */

/* The metric columns every record carries, in CSV order (NULL-terminated). */
const char *const *sweep_metric_names(void);
/* Record for a finished point: {"point", "axes": {...}, "status": "ok", "metrics": {...}}.
 * A failed point has "status": "error", "error": message, and no metrics. */
cJSON *sweep_record(const sweep_spec *s, size_t point, const run_result *r, const dt_error *e);
/* Write the CSV header / one row from a record. */
void sweep_csv_header(const sweep_spec *s, FILE *f);
void sweep_csv_row(const sweep_spec *s, const cJSON *record, FILE *f);

/* ---- running ----------------------------------------------------------------------------- */

/* Evaluates one point; the default (NULL) calls run_scenario with default options. Called from
 * worker threads: must not touch shared mutable state. */
typedef int (*sweep_eval_fn)(void *ctx, const cJSON *scenario, const char *file,
                             const char *base_dir, run_result *out, dt_error *err);

/* Progress: points done (this run plus resumed), total, resumed (skipped), seconds elapsed.
 * Called from the calling thread only. */
typedef void (*sweep_progress_fn)(void *ctx, size_t done, size_t total, size_t resumed,
                                  double elapsed_s);

typedef struct sweep_config {
    const cJSON *scenario;   /* borrowed, with its "sweep" */
    const char *file;        /* scenario file name (errors, results.json) */
    const char *base_dir;    /* relative paths in the scenario resolve against it */
    const char *out_dir;     /* created if missing */
    int jobs;                /* worker threads (>= 1) */
    bool fresh;              /* discard previous point records instead of resuming */
    sweep_eval_fn eval;      /* NULL: run_scenario */
    void *eval_ctx;
    sweep_progress_fn progress; /* may be NULL */
    void *progress_ctx;
    int mpi_rank, mpi_size;  /* mpi_size > 1: points divided among ranks (sweep_mpi_init) */
} sweep_config;

typedef struct sweep_summary {
    size_t total, resumed, ran, failed; /* failed: points whose status is "error" */
    uint64_t hash;
    long first_failed;                  /* lowest failed point, -1 if none */
    char first_error[DT_ERR_MSG_MAX];   /* its error message */
} sweep_summary;

/* Run (or resume) the sweep. Under MPI every rank calls it; rank 0 writes the files and fills
 * the summary. A point that fails is recorded with its error (not fatal); I/O errors and a
 * hash mismatch are. */
int sweep_run(const sweep_config *cfg, sweep_summary *sum, dt_error *err);

/* Assemble OUT/results.csv and OUT/results.json from the point records (all must exist). */
int sweep_assemble(const sweep_spec *s, const sweep_config *cfg, uint64_t hash, dt_error *err);

/* ---- MPI (reports/sweep_mpi.c; DT_EUNSUPPORTED without DTSIM_HAVE_MPI) ------------------- */

/* True when this process was started by mpirun/srun (environment variables), without
 * touching MPI. */
bool sweep_mpi_launched(void);
/* MPI_Init_thread (funneled) and rank/size; sweep_mpi_finalize at the end. */
int sweep_mpi_init(int *rank, int *size, dt_error *err);
void sweep_mpi_finalize(void);

#endif
