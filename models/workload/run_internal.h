/* run_internal.h - what run.c shares with steps.c (the runs of many steps) and nobody else.
 *
 * A scenario run is prepared once (parse, topology, plan, memory, op graphs: run_prep) and its
 * graph simulated as many times as wanted (run_job_simulate), each with its own engine, network
 * and collective engine: simulations of one prepared run may go on in parallel threads (the
 * topology's route cache has its own lock; the graphs are only read).
 */
#ifndef DTSIM_RUN_INTERNAL_H
#define DTSIM_RUN_INTERNAL_H

#include "dtsim/replay.h"
#include "dtsim/run.h"
#include "dtsim/topo.h"
#include "dtsim/workload.h"

typedef struct run_job {
    const wl_graph *g;
    topo *t;
    const wl_env *env;       /* the scenario's or the trace's (seed and network overrides applied) */
    int backup_drop;         /* replay_config.backup_drop */
    sim_time_t deadline;     /* replay_config.deadline (0: none) */
    sim_time_t *lane_end;    /* out, optional: each lane's last op end (g->n_lanes entries) */
    int n_dropped;           /* out: lanes the step dropped (backup workers) */
} run_job;

/* One simulation of J->g: fills the step, breakdown, throughput, cost and (with opt->timeline or
 * record_timeline) the timeline of out; out's memory and summary are left as they are. */
int run_job_simulate(run_job *J, const run_options *opt, run_result *out, dt_error *err);

typedef struct run_prep {
    wl_scenario s;           /* seed and network overrides applied */
    topo *t;
    wl_graph *g;             /* the step */
    wl_graph *g_local;       /* the step without DP gradient reduction (local SGD, asynchronous
                                DP), NULL when the plan has neither */
    const char *file;        /* borrowed, for errors */
} run_prep;

/* Parse, topology (GPU override, degraded links, calibration), plan, memory and summary into
 * out (zeroed first), op graph(s). On error nothing is left to free. */
int run_prep_scenario(const cJSON *scenario, const char *file, const char *base_dir,
                      const run_options *opt, run_prep *p, run_result *out, dt_error *err);
void run_prep_free(run_prep *p);

/* Parse, topology (GPU override, degraded links, link efficiency, calibration) and resolved
 * plan only: what `dtsim federated` (federated.c) builds its rounds on. On success the caller
 * frees both (wl_scenario_free, topo_destroy); on error nothing is left to free. */
int run_prepare(const cJSON *scenario, const char *file, const char *base_dir, wl_scenario *s,
                topo **t, dt_error *err);

/* The time to read one step's samples (scenario `input`) through the storage model. */
int run_input_read_s(const run_prep *p, double *read_s, dt_error *err);

/* Peak, price and MFU over the GPUs g runs on, each with its own spec (run_result.gpu_types);
 * out->step_time_s must be set. */
void run_account_gpus(const wl_graph *g, const topo *t, run_result *out);
/* Stretch a step to T (waiting for something that is not its own work): throughput and cost
 * follow. */
void run_stretch(run_result *out, double T);
/* Backup workers: the update used the gradients of dp - dropped replicas' samples only
 * (throughput counts those). */
void run_count_used_samples(const wl_plan *p, run_result *out, int dropped_lanes);

/* The steps engine (steps.c): n steps of a prepared run on `jobs` threads; step 0 with opt (its
 * timeline), the others without. Fills first (step 0's full result, memory and summary as
 * prepared) and out. */
int run_steps_prepared(run_prep *p, const run_options *opt, int n, int jobs,
                       void (*progress)(void *ctx, long done, long total), void *progress_ctx,
                       run_result *first, run_steps_result *out, dt_error *err);

/* The folder of a file name (".", "/", or its directory part), malloc'd. */
char *run_dir_of(const char *path);

/* Seed of step k: the scenario's for step 0 (so one step of --steps is `dtsim run`), a stream
 * of it for the others. */
uint64_t run_step_seed(uint64_t seed, int k);

#endif
