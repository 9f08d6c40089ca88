/* steps.c - many training steps of one scenario (run.h, run_scenario_steps).
 *
 * Every step is replayed on its own engine with its own jitter draws (a stream of the seed
 * per step; step 0 is the single `dtsim run`), so steps are independent draws of the step
 * time and can run on several threads: each thread takes the next step not yet taken and the
 * results go into arrays by k, the same bytes for any number of threads (and whatever number
 * the system lets start: dtsim/threads.h).
 *
 * On top of the per-step simulations, recurrences that follow the job across steps (their
 * derivations: docs/workloads.md, "Many steps"):
 *  - local SGD: every step runs the local graph (no gradient reduction), each replica at its
 *    own pace, E_i(k) = E_i(k-1) + C_i(k); when (k + 1) % H == 0 they average: all wait for
 *    the slowest, then the averaging all-reduce (P, below): E_i(k) = max_j E_j(k) + P;
 *  - bounded-staleness asynchronous DP (SSP): per replica i and step k, compute C_i(k) from the
 *    local graph (its lanes' ends), communication P (the synchronous step's exposed DP
 *    communication: its time minus the local step's, both without jitter). Replica i starts step k when its previous compute is done and
 *    every replica's update of step k - 1 - s is in:
 *        S_i(k) = max(Ecomp_i(k-1), G(k-1-s)),   Ecomp_i(k) = S_i(k) + C_i(k),
 *        Ecomm_i(k) = max(Ecomp_i(k), Ecomm_i(k-1)) + P,   G(k) = max_i Ecomm_i(k);
 *    step k is complete at G(k). s = 0 is the synchronous step with comm after compute.
 *    Staleness of a read = k - 1 - (the last step every replica had delivered at S_i(k)).
 *  - the input pipeline: `prefetch` batches ready at t = 0; batch k is read once batch
 *    k - prefetch was taken (step k - prefetch started) and the previous read is done; step k
 *    starts when step k - 1 is done and its batch is in. prefetch 0: each step reads first.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "dtsim/sim.h"
#include "dtsim/threads.h"
#include "run_internal.h"

uint64_t run_step_seed(uint64_t seed, int k)
{
    if (k == 0) return seed;
    char name[32];
    snprintf(name, sizeof name, "step%d", k);
    return sim_rng_stream_seed(seed, name);
}

void run_steps_result_free(run_steps_result *r)
{
    if (!r) return;
    free(r->step_s);
    free(r->stall_s);
    r->step_s = r->stall_s = NULL;
}

typedef struct shared {
    run_prep *p;
    const run_options *opt;
    int n;
    bool replicas;        /* asynchronous DP or local SGD: per-replica recurrences */
    run_result *first;
    double *T;            /* per step: the simulated step (raw) */
    int *dropped;         /* per step: lanes dropped (backup workers) */
    sim_time_t *lane_end; /* async: per step, the local graph's lane ends (n x n_lanes) */
    int *rc;              /* per step */
    dt_error *err;        /* per step, only where rc != DT_OK */
    int next;             /* the next step to simulate; n once a step failed */
    long done;
    pthread_t caller;     /* the thread that reports progress */
    pthread_mutex_t mu;
    void (*progress)(void *ctx, long done, long total);
    void *progress_ctx;
} shared;

static const wl_graph *graph_of(const shared *S, int k)
{
    (void)k;
    return S->replicas ? S->p->g_local : S->p->g;
}

/* A worker: takes the next step until none is left (dtsim/threads.h: any number of them, the
 * results by step whatever ran them). A failed step stops the taking; every step before it was
 * taken already, so the first failure by step number is the same whatever the threads. */
static void *work(void *arg)
{
    shared *S = arg;
    run_prep *p = S->p;
    for (;;) {
        pthread_mutex_lock(&S->mu);
        int k = S->next < S->n ? S->next++ : S->n;
        pthread_mutex_unlock(&S->mu);
        if (k == S->n) break;
        wl_env env = p->s.env;
        env.seed = run_step_seed(p->s.env.seed, k);
        const wl_graph *g = graph_of(S, k);
        run_job J = {.g = g, .t = p->t, .env = &env, .backup_drop = p->s.plan.backup_workers,
                     .lane_end = S->replicas ? S->lane_end + (size_t)k * g->n_lanes : NULL};
        run_result r;
        run_result *out = k == 0 ? S->first : &r;
        if (k) memset(&r, 0, sizeof r);
        dt_error_clear(&S->err[k]);
        S->rc[k] = run_job_simulate(&J, k == 0 ? S->opt : NULL, out, &S->err[k]);
        S->T[k] = out->step_time_s;
        S->dropped[k] = J.n_dropped;
        if (k) run_result_free(&r);
        pthread_mutex_lock(&S->mu);
        S->done++;
        long done = S->done;
        if (S->rc[k] != DT_OK) S->next = S->n;
        pthread_mutex_unlock(&S->mu);
        /* the progress callback is the caller's: called from its thread only */
        if (S->progress && pthread_equal(pthread_self(), S->caller))
            S->progress(S->progress_ctx, done, S->n);
    }
    return NULL;
}

/* Replicas that run free between synchronisations (header): bounded-staleness asynchronous
 * DP (SSP) or local SGD. Replaces T by each step's period (G(k) - G(k-1), G(k) when step k is
 * complete everywhere), and gives first the critical replica's breakdown per step: its
 * compute split like step 0's local step, waiting for its own update (comm_exposed) and for
 * the others (straggler_wait). */
static void replica_steps(shared *S, double P, run_steps_result *out)
{
    const wl_plan *pl = &S->p->s.plan;
    const wl_graph *g = S->p->g_local;
    int n = S->n, dp = pl->dp, pp = pl->pp, s = pl->staleness, H = pl->local_sgd;
    bool async = s >= 0;
    double *ecomp = dt_xcalloc((size_t)dp, sizeof *ecomp), *ecomm = dt_xcalloc((size_t)dp, sizeof *ecomm);
    double *G = dt_xcalloc((size_t)n, sizeof *G);
    double *busy = dt_xcalloc((size_t)dp, sizeof *busy), *wcomm = dt_xcalloc((size_t)dp, sizeof *wcomm),
           *wpeer = dt_xcalloc((size_t)dp, sizeof *wpeer);
    int *last = dt_xcalloc((size_t)n, sizeof *last); /* whose update completed step k */
    double st_sum = 0, st_max = 0;
    long st_n = 0;
    for (int k = 0; k < n; k++) {
        double gate = async && k - 1 - s >= 0 ? G[k - 1 - s] : 0;
        int gate_by = async && k - 1 - s >= 0 ? last[k - 1 - s] : -1;
        for (int i = 0; i < dp; i++) {
            double C = 0;
            for (int st = 0; st < pp; st++) {
                double e = sim_time_to_s(S->lane_end[(size_t)k * g->n_lanes + (size_t)i * pp + st]);
                if (e > C) C = e;
            }
            double start = ecomp[i] > gate ? ecomp[i] : gate;
            if (start > ecomp[i]) {
                if (gate_by == i) wcomm[i] += start - ecomp[i];
                else wpeer[i] += start - ecomp[i];
            }
            if (async) {
                /* the last step every replica had delivered when this one reads */
                int c = k - 1;
                while (c >= 0 && G[c] > start) c--;
                double stale = k - 1 - c;
                st_sum += stale;
                if (stale > st_max) st_max = stale;
                st_n++;
            }
            ecomp[i] = start + C;
            busy[i] += C;
            if (async) ecomm[i] = (ecomp[i] > ecomm[i] ? ecomp[i] : ecomm[i]) + P;
            else ecomm[i] = ecomp[i];
        }
        if (!async && (k + 1) % H == 0) {
            /* local SGD's averaging: everybody waits for the slowest, then the all-reduce */
            double B = 0;
            for (int i = 0; i < dp; i++) B = ecomp[i] > B ? ecomp[i] : B;
            for (int i = 0; i < dp; i++) {
                wpeer[i] += B - ecomp[i];
                wcomm[i] += P;
                ecomp[i] = ecomm[i] = B + P;
            }
        }
        G[k] = 0;
        for (int i = 0; i < dp; i++)
            if (ecomm[i] > G[k]) {
                G[k] = ecomm[i];
                last[k] = i;
            }
        S->T[k] = G[k] - (k ? G[k - 1] : 0);
    }
    int crit = last[n - 1];
    run_result *f = S->first;
    double b0 = f->breakdown_s.compute + f->breakdown_s.comm_exposed + f->breakdown_s.bubble +
                f->breakdown_s.straggler_wait;
    double k0 = b0 > 0 ? busy[crit] / b0 / n : 0;
    f->breakdown_s.compute *= k0;
    f->host_wait_s *= k0;
    f->breakdown_s.comm_exposed = f->breakdown_s.comm_exposed * k0 +
                                  (wcomm[crit] + ecomm[crit] - ecomp[crit]) / n;
    f->breakdown_s.bubble *= k0;
    f->breakdown_s.straggler_wait = f->breakdown_s.straggler_wait * k0 + wpeer[crit] / n;
    run_stretch(f, G[n - 1] / n);
    if (async) {
        f->staleness = s;
        f->async_steps = n;
        f->staleness_mean = out->staleness_mean = st_n ? st_sum / st_n : 0;
        f->staleness_max = out->staleness_max = st_max;
    }
    free(ecomp), free(ecomm), free(G), free(busy), free(wcomm), free(wpeer), free(last);
}

/* The loader across steps (header): turns raw step times into periods with their stalls. */
static void input_steps(const stor_input *in, double r, double *T, double *stall, int n)
{
    int d = in->prefetch;
    double *start = dt_xcalloc((size_t)n, sizeof *start);
    double fin = 0, lend = 0;
    for (int k = 0; k < n; k++) {
        double ready;
        if (d == 0) {
            ready = fin + r;          /* read after the previous step */
        } else if (k < d) {
            ready = 0;                /* prefetched before training started */
        } else {
            double ls = lend > start[k - d] ? lend : start[k - d];
            lend = ls + r;
            ready = lend;
        }
        double st = fin > ready ? fin : ready;
        start[k] = st;
        stall[k] = st - fin;
        double f = st + T[k];
        T[k] = f - fin;
        fin = f;
    }
    free(start);
}

int run_steps_prepared(run_prep *p, const run_options *opt, int n, int jobs,
                       void (*progress)(void *ctx, long done, long total), void *progress_ctx,
                       run_result *first, run_steps_result *out, dt_error *err)
{
    memset(out, 0, sizeof *out);
    out->staleness_mean = out->staleness_max = -1;
    if (n < 1) n = 1;
    if (jobs < 1) jobs = 1;
    if (jobs > n) jobs = n;
    const wl_plan *pl = &p->s.plan;
    shared S = {.p = p, .opt = opt, .n = n,
                .replicas = pl->staleness >= 0 || pl->local_sgd > 1,
                .first = first, .progress = progress, .progress_ctx = progress_ctx};
    S.T = dt_xcalloc((size_t)n, sizeof *S.T);
    S.dropped = dt_xcalloc((size_t)n, sizeof *S.dropped);
    S.rc = dt_xcalloc((size_t)n, sizeof *S.rc);
    S.err = dt_xcalloc((size_t)n, sizeof *S.err);
    if (S.replicas) S.lane_end = dt_xcalloc((size_t)n * p->g_local->n_lanes, sizeof *S.lane_end);
    S.caller = pthread_self();
    pthread_mutex_init(&S.mu, NULL);
    dt_threads_run(jobs, work, &S);
    if (progress) progress(progress_ctx, n, n);
    pthread_mutex_destroy(&S.mu);
    int rc = DT_OK;
    for (int k = 0; k < n && rc == DT_OK; k++)
        if (S.rc[k] != DT_OK) {
            rc = S.rc[k];
            *err = S.err[k];
        }
    double P = 0;
    double T_local0 = 0, T_sync0 = 0;
    if (rc == DT_OK && S.replicas) {
        /* the update's cost P: what a synchronous step spends beyond a local one, both without
         * jitter (their compute ops differ in number, so the draws would not pair up) */
        wl_env env = p->s.env;
        env.jitter = WL_JITTER_NONE;
        for (int pass = 0; pass < 2 && rc == DT_OK; pass++) {
            run_result r;
            memset(&r, 0, sizeof r);
            run_job J = {.g = pass ? p->g : p->g_local, .t = p->t, .env = &env};
            rc = run_job_simulate(&J, NULL, &r, err);
            *(pass ? &T_sync0 : &T_local0) = r.step_time_s;
            run_result_free(&r);
        }
        P = fmax(0, T_sync0 - T_local0);
    }
    if (rc == DT_OK) {
        out->n = n;
        if (S.replicas) replica_steps(&S, P, out);
        if (pl->backup_workers > 0) {
            double sum = 0;
            for (int k = 0; k < n; k++) sum += S.dropped[k];
            out->dropped_mean = sum / n / (pl->pp > 0 ? pl->pp : 1);
            run_count_used_samples(pl, first, S.dropped[0]);
        }
        if (pl->local_sgd > 1) {
            for (int k = 0; k < n; k++) out->sync_steps += (k + 1) % pl->local_sgd == 0;
            first->local_sgd = pl->local_sgd;
            first->local_step_s = T_local0;
            first->sync_step_s = T_sync0;
        }
        out->stall_s = dt_xcalloc((size_t)n, sizeof *out->stall_s);
        if (p->s.input.present) {
            double r = 0;
            rc = run_input_read_s(p, &r, err);
            if (rc == DT_OK) {
                input_steps(&p->s.input, r, S.T, out->stall_s, n);
                first->has_input = true;
                first->input_read_s = r;
                first->input_prefetch = p->s.input.prefetch;
                if (out->stall_s[0] > 0) {
                    run_stretch(first, first->step_time_s + out->stall_s[0]);
                    first->breakdown_s.data_stall = out->stall_s[0];
                }
            }
        }
    }
    if (rc == DT_OK) {
        out->step_s = S.T;
        S.T = NULL;
        double *sorted = dt_xmalloc((size_t)n * sizeof *sorted);
        memcpy(sorted, out->step_s, (size_t)n * sizeof *sorted);
        gsl_sort(sorted, 1, (size_t)n);
        out->mean_s = gsl_stats_mean(out->step_s, 1, (size_t)n);
        out->stddev_s = n > 1 ? gsl_stats_sd_m(out->step_s, 1, (size_t)n, out->mean_s) : 0;
        out->min_s = sorted[0];
        out->max_s = sorted[n - 1];
        out->p50_s = gsl_stats_quantile_from_sorted_data(sorted, 1, (size_t)n, 0.5);
        out->p99_s = gsl_stats_quantile_from_sorted_data(sorted, 1, (size_t)n, 0.99);
        out->stall_mean_s = gsl_stats_mean(out->stall_s, 1, (size_t)n);
        free(sorted);
    } else {
        free(out->stall_s);
        out->stall_s = NULL;
    }
    free(S.T);
    free(S.dropped);
    free(S.rc);
    free(S.err);
    free(S.lane_end);
    return rc;
}

int run_scenario_steps(const cJSON *scenario, const char *file, const char *base_dir,
                       const run_options *opt, int n, int jobs,
                       void (*progress)(void *ctx, long done, long total), void *progress_ctx,
                       run_result *first, run_steps_result *out, dt_error *err)
{
    memset(out, 0, sizeof *out);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    run_prep p;
    int rc = run_prep_scenario(scenario, file, base_dir, opt, &p, first, err);
    if (rc != DT_OK) return rc;
    rc = run_steps_prepared(&p, opt, n, jobs, progress, progress_ctx, first, out, err);
    if (rc == DT_EINPUT && !err->file[0] && file) snprintf(err->file, sizeof err->file, "%s", file);
    run_prep_free(&p);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    first->wall_s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    return rc;
}

int run_scenario_steps_file(const char *filename, const run_options *opt, int n, int jobs,
                            void (*progress)(void *ctx, long done, long total),
                            void *progress_ctx, run_result *first, run_steps_result *out,
                            dt_error *err)
{
    memset(first, 0, sizeof *first);
    memset(out, 0, sizeof *out);
    cJSON *j;
    int rc = js_parse_file(filename, &j, err);
    if (rc != DT_OK) return rc;
    char *dir = run_dir_of(filename);
    rc = run_scenario_steps(j, filename, dir, opt, n, jobs, progress, progress_ctx, first, out, err);
    free(dir);
    cJSON_Delete(j);
    return rc;
}
