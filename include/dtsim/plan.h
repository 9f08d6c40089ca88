/* plan.h - capacity planning: search parallel plans of a scenario that fit, best first.
 *
 * The search space, per GPU count G (N, 2N, 4N, ... up to max_gpus; G other than the scenario's
 * own needs a generated topology, whose "gpus" is set): tp and pp over the divisors of G,
 * dp = G / (tp pp); with pp > 1 the schedule, 1F1B or interleaved 1F1B with every number of
 * model chunks v >= 2 that divides the layers per stage; sequence parallelism off and on (tp >
 * 1); micro batch size 1, 2, 4, 8 (the global batch stays fixed, so the microbatch count
 * follows); activation checkpointing none/selective/full; ZeRO stage 0-3.
 * Expert parallel degrees (divisors of the experts that divide dp) are searched for MoE models
 * (experts >= 2), context parallel degrees (1, 2, 4, 8, 16 with 2 cp dividing seq_len, flash
 * attention) when the scenario sets parallel.cp or its sequence is at least 16k tokens; other
 * scenarios search ep = cp = 1 only. (Their lower bound comes from the op graph: run.h.)
 * A scenario without "global_batch" has no batch to keep: then its own micro batch size and
 * microbatch count per DP replica (parallel.microbatches, else gradient_accumulation, else its
 * own pp) are held fixed for every plan, micro batch size is not searched, and the global batch
 * is dp x micro batch size x microbatches (it grows with dp; the work per replica is the same).
 *
 * Pruning, cheapest first, none of it able to drop the best plans (docs/sweeps.md):
 * 1. structural checks (layers divisible by pp x v, heads and kv_heads by tp, global batch by
 *    dp x micro batch size, microbatches by pp when interleaved) and the frameworks' rules (no
 *    ZeRO-2/3 with pp > 1, which DeepSpeed and Megatron-LM refuse; Megatron: ZeRO 0 or 1; FSDP:
 *    pp 1);
 * 2. a probe without simulating (run_probe_scenario): memory against the usable memory,
 *    (1 - headroom) x the GPU's memory (headroom 10 % unless options.memory_headroom or the
 *    caller says otherwise) or --memory-limit; a lower bound on the step time and an estimate;
 * 3. branch and bound: the plans that fit are simulated in order of their estimate (on `jobs`
 *    threads); a plan whose bound (as the objective: time, cost or tokens per dollar) is worse
 *    than the top-th best simulated so far cannot enter the top and is not simulated; one that
 *    is simulated stops once its step is known to be worse than that (the run's deadline: early
 *    termination; plan_result.stopped). "So far" is a sliding window: the k-th simulation is
 *    judged on the results of the first k - PLAN_WINDOW, whatever `jobs` is and whichever
 *    finishes first, so nothing in the result depends on either.
 * exhaustive: simulate every plan that fits to its end (brute force; the same best plans,
 * slower).
 * Every rejected candidate is counted under a reason, with one example message.
 *
 * Ownership: plan_result arrays are malloc'd by plan_search and freed by plan_result_free.
 */
#ifndef DTSIM_PLAN_H
#define DTSIM_PLAN_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "dtsim/error.h"
#include "dtsim/run.h"

typedef enum plan_objective { PLAN_TIME, PLAN_COST, PLAN_TOKENS_PER_USD } plan_objective;

/* How far behind the results a simulation may be chosen: the k-th is judged on the first
 * k - PLAN_WINDOW. Fixed, so that which plans are simulated does not depend on the thread
 * count; PLAN_WINDOW + 1 simulations can run at once. */
#define PLAN_WINDOW 4

/* Hooks default to run_probe_scenario()/run_scenario(); tests inject closed forms. Called from
 * the calling thread (probe) and worker threads (run): no shared mutable state. */
typedef int (*plan_probe_fn)(void *ctx, const cJSON *scenario, const char *file,
                             const char *base_dir, run_probe *out, dt_error *err);
/* deadline_s > 0: the plan cannot enter the top if its step is longer; the run may stop there
 * and set out->stopped_at_deadline (run_options.deadline_s), or run to the end. */
typedef int (*plan_run_fn)(void *ctx, const cJSON *scenario, const char *file,
                           const char *base_dir, double deadline_s, run_result *out,
                           dt_error *err);

typedef struct plan_options {
    int gpus;               /* N: the cluster size to plan for */
    int max_gpus;           /* also try 2N, 4N, ... up to this (0 = N only) */
    plan_objective objective;
    double memory_limit;    /* usable bytes per GPU, as given (no headroom taken off); 0 = the
                               GPU's capacity less the headroom */
    bool have_headroom;     /* headroom given (--headroom): overrides options.memory_headroom */
    double headroom;        /* fraction of capacity kept free, [0, 0.9]; default 0.1 */
    int top;                /* how many plans to keep (default 5) */
    int jobs;               /* threads for the simulations (default 1) */
    bool exhaustive;        /* simulate every candidate that fits (no bound pruning) */
    /* Called from the calling thread as simulations finish: (done, total). May be NULL. */
    void (*progress)(void *ctx, size_t done, size_t total);
    void *progress_ctx;
    plan_probe_fn probe;    /* NULL: run_probe_scenario */
    plan_run_fn run;        /* NULL: run_scenario */
    void *ctx;
} plan_options;

typedef struct plan_candidate {
    int gpus, tp, pp, dp, zero, micro_batch_size;
    int ep, cp;             /* expert, context parallel degrees (1 unless searched) */
    int checkpointing;      /* 0 none, 1 selective, 2 full */
    int schedule;           /* wl_schedule_kind: WL_1F1B or WL_INTERLEAVED with pp > 1, else
                               WL_GPIPE (no pipeline: no schedule) */
    int virtual_stages;     /* model chunks per stage (interleaved), else 1 */
    bool sequence_parallel;
    struct run_memory memory;
    double lower_bound_s;   /* the probe's bound on the step time (0: none) */
    run_result result;      /* timeline never recorded */
    double score;           /* the objective, lower is better (tokens/$ negated) */
} plan_candidate;

typedef struct plan_reject {
    char reason[96];        /* "does not fit in memory", "indivisible: layers by pp", ... */
    char example[320];      /* one instance, e.g. "tp=1 pp=1 dp=8 ...: 93.1 GiB > 80.0 GiB" */
    int count;
} plan_reject;

typedef struct plan_result {
    plan_candidate *best;   /* n_best, best first */
    int n_best;
    plan_reject *rejects;   /* n_rejects, most frequent first */
    int n_rejects;
    int considered, memory_checked, simulated, fitting;
    int stopped;            /* of the simulated: stopped once past the top plans (not exhaustive) */
    double headroom;        /* the headroom applied (0 when memory_limit was given) */
    /* What the search held fixed: global_batch > 0 (the scenario's), or else
     * held_micro_batch_size and held_microbatches (per DP replica; 0 when global_batch > 0). */
    double global_batch;
    int held_micro_batch_size, held_microbatches;
} plan_result;

const char *plan_checkpointing_name(int level);
const char *plan_objective_name(plan_objective o);
int plan_objective_parse(const char *s, plan_objective *out);
/* "1f1b", "interleaved" or "none" (pp 1) */
const char *plan_schedule_name(const plan_candidate *c);

/* Search; scenario is borrowed (its "sweep", if any, is ignored). */
int plan_search(const cJSON *scenario, const char *file, const char *base_dir,
                const plan_options *opt, plan_result *out, dt_error *err);
void plan_result_free(plan_result *r);

#endif
