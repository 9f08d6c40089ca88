/* goodput.c - failures, checkpoints and restarts of a long training job (goodput.h).
 *
 * The model (docs/goodput.md has the derivations):
 *  - Parts fail in wall-clock time, whatever the job is doing (training, writing a checkpoint,
 *    restarting). Each part's time to failure is exponential or Weibull; a failed part is
 *    replaced by a new one (a renewal process per part), the others keep their age. The job
 *    sees the superposition. Exponential classes merge into one Poisson process of the summed
 *    rate (exact). A Weibull class of N parts needs no N draws per run: the number of parts
 *    whose first failure falls within the horizon is binomial, and their times follow the
 *    first-failure distribution conditioned on falling within it (inverse CDF), which costs
 *    O(failures), not O(parts). "stationary" start: parts in service, their first failure is
 *    the equilibrium residual life, F(x) = P(1/k, (x/s)^k) (regularised incomplete gamma);
 *    "new": all parts fresh, F(x) = 1 - exp(-(x/s)^k). A replacement fails after a fresh
 *    Weibull life.
 *  - The job checkpoints every K steps (W = K x step time of training): sync, it stops for the
 *    write (block = write time, durable at once); async, it stops for a snapshot (block) and
 *    the write runs behind for `durable` more seconds, the next snapshot waiting for it. A
 *    failure throws away the work since the last durable checkpoint; the restart (relaunch +
 *    reading the checkpoint back) starts over if a failure hits it.
 *  - One run's accounting is O(failures): between two failures the job's life is periodic,
 *    so the work done and the checkpoints made durable by time x are closed forms of x.
 *  - The same failure histories serve every interval tried (common random numbers), so the
 *    goodput curve is smooth and its maximum well defined.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_sf_gamma.h>

#include "dtsim/goodput.h"
#include "dtsim/sim.h"

#define TRY(x)                                                                              \
    do {                                                                                    \
        int rc_ = (x);                                                                      \
        if (rc_ != DT_OK) return rc_;                                                       \
    } while (0)

static const char *const class_names[GP_N_CLASSES] = {"gpu", "host", "link"};

const char *gp_class_name(int cls) { return cls >= 0 && cls < GP_N_CLASSES ? class_names[cls] : "?"; }

/* ----------------------------------------------------------------- parsing ---- */

static int parse_class(const js_ctx *c, const cJSON *v, const char *path, gp_class *out)
{
    static const char *const keys[] = {"mtbf", "distribution", "shape", NULL};
    static const char *const dists[] = {"exponential", "weibull", NULL};
    TRY(js_expect_object(c, v, path));
    TRY(js_check_keys(c, v, path, keys));
    TRY(js_get_quantity(c, v, path, "mtbf", UNIT_TIME, true, true, &out->mtbf_s));
    if (out->mtbf_s < 1)
        return js_fail(c, path, "mtbf", "expected a mean time between failures of at least 1 s "
                       "(such as \"50000 h\"), found %g s", out->mtbf_s);
    int d = GP_EXPONENTIAL;
    TRY(js_get_enum(c, v, path, "distribution", false, dists, &d));
    out->dist = (gp_dist)d;
    out->shape = 1;
    bool has_shape = cJSON_GetObjectItemCaseSensitive(v, "shape") != NULL;
    if (d == GP_EXPONENTIAL && has_shape)
        return js_fail(c, path, "shape", "only with \"distribution\": \"weibull\" (an exponential "
                       "time to failure has no shape)");
    if (d == GP_WEIBULL) {
        if (!has_shape)
            return js_fail(c, path, "shape", "required with \"distribution\": \"weibull\": the "
                           "Weibull shape k (below 1: early failures dominate, 1: exponential, "
                           "above 1: wear-out), e.g. 0.8");
        TRY(js_get_number(c, v, path, "shape", true, 0.1, 20, &out->shape));
    }
    return DT_OK;
}

static int parse_failures(const js_ctx *c, const cJSON *f, gp_failures *out)
{
    static const char *const keys[] = {"gpu", "host", "link", "restart", "start", NULL};
    static const char *const starts[] = {"stationary", "new", NULL};
    const char *path = "failures";
    TRY(js_expect_object(c, f, path));
    TRY(js_check_keys(c, f, path, keys));
    int n = 0;
    for (int k = 0; k < GP_N_CLASSES; k++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(f, class_names[k]);
        if (!v) continue;
        char p[JS_PATH_MAX];
        TRY(parse_class(c, v, js_path_key(p, path, class_names[k]), &out->cls[k]));
        n++;
    }
    if (!n)
        return js_fail(c, path, NULL, "expected at least one of \"gpu\", \"host\", \"link\" "
                       "with its \"mtbf\" (mean time between failures of one part)");
    if (!cJSON_GetObjectItemCaseSensitive(f, "restart"))
        return js_fail(c, path, "restart", "required: the time from a failure until training "
                       "runs again, before the checkpoint is read back (e.g. \"10 min\")");
    TRY(js_get_quantity(c, f, path, "restart", UNIT_TIME, true, false, &out->restart_s));
    if (out->restart_s > 1e8)
        return js_fail(c, path, "restart", "expected a restart time below 1e8 s, found %g s",
                       out->restart_s);
    int st = GP_START_STATIONARY;
    TRY(js_get_enum(c, f, path, "start", false, starts, &st));
    out->start = (gp_start)st;
    out->present = true;
    return DT_OK;
}

static int parse_checkpoint(const js_ctx *c, const cJSON *ck, gp_checkpoint *out)
{
    static const char *const keys[] = {"interval", "size", "mode", "snapshot_bandwidth", NULL};
    static const char *const modes[] = {"sync", "async", NULL};
    const char *path = "checkpoint";
    char d[96];
    TRY(js_expect_object(c, ck, path));
    TRY(js_check_keys(c, ck, path, keys));
    const cJSON *iv = cJSON_GetObjectItemCaseSensitive(ck, "interval");
    if (iv && cJSON_IsObject(iv)) {
        char p[JS_PATH_MAX];
        static const char *const ikeys[] = {"steps", NULL};
        js_path_key(p, path, "interval");
        TRY(js_check_keys(c, iv, p, ikeys));
        long long s = 0;
        TRY(js_get_int(c, iv, p, "steps", true, 1, 1LL << 40, &s));
        out->interval_steps = (long)s;
    } else if (iv && cJSON_IsString(iv) && !strcmp(iv->valuestring, "auto")) {
        /* auto: the search decides */
    } else if (iv) {
        if (!cJSON_IsString(iv) && !cJSON_IsNumber(iv))
            return js_fail(c, path, "interval", "expected a time such as \"30 min\", "
                           "{\"steps\": N} or \"auto\", found %s", js_describe(iv, d, sizeof d));
        TRY(js_get_quantity(c, ck, path, "interval", UNIT_TIME, true, true, &out->interval_s));
    }
    const cJSON *sz = cJSON_GetObjectItemCaseSensitive(ck, "size");
    if (sz && !(cJSON_IsString(sz) && !strcmp(sz->valuestring, "auto")))
        TRY(js_get_quantity(c, ck, path, "size", UNIT_SIZE, true, true, &out->size_bytes));
    int m = GP_CKPT_SYNC;
    TRY(js_get_enum(c, ck, path, "mode", false, modes, &m));
    out->mode = (gp_ckpt_mode)m;
    out->snapshot_bw = 25e9; /* PCIe Gen4 x16, about what a device-to-host copy achieves */
    if (cJSON_GetObjectItemCaseSensitive(ck, "snapshot_bandwidth") && m != GP_CKPT_ASYNC)
        return js_fail(c, path, "snapshot_bandwidth", "only with \"mode\": \"async\" (a sync "
                       "checkpoint is written straight from the GPUs)");
    TRY(js_get_quantity(c, ck, path, "snapshot_bandwidth", UNIT_BANDWIDTH, false, true,
                        &out->snapshot_bw));
    out->present = true;
    return DT_OK;
}

int gp_parse(const js_ctx *c, const cJSON *j, gp_failures *f, gp_checkpoint *ck, stor_spec *st,
             stor_input *in)
{
    memset(f, 0, sizeof *f);
    memset(ck, 0, sizeof *ck);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "failures");
    if (v) TRY(parse_failures(c, v, f));
    v = cJSON_GetObjectItemCaseSensitive(j, "checkpoint");
    if (v) TRY(parse_checkpoint(c, v, ck));
    TRY(stor_parse(c, j, st, in));
    if (ck->present && !st->present)
        return js_fail(c, "", "checkpoint", "needs a \"storage\" section: where checkpoints are "
                       "written, e.g. \"storage\": {\"bandwidth\": \"100 GB/s\", "
                       "\"host_bandwidth\": \"100 Gb/s\"}");
    return DT_OK;
}

/* ----------------------------------------------------------- closed forms ---- */

double gp_young(double delta, double M) { return sqrt(2 * delta * M); }

double gp_daly(double delta, double M)
{
    if (delta >= 2 * M) return M;
    double x = delta / (2 * M);
    return sqrt(2 * delta * M) * (1 + sqrt(x) / 3 + x / 9) - delta;
}

double gp_renewal_goodput(double W, double delta, double R, double M)
{
    if (!(W > 0)) return 0;
    if (!isfinite(M)) return W / (W + delta);
    /* expm1 keeps the precision when (W + delta) << M */
    return W / (M * exp(R / M) * expm1((W + delta) / M));
}

double gp_renewal_optimum(double delta, double R, double M)
{
    if (!isfinite(M)) return INFINITY;
    /* The goodput is unimodal in W (log-concave numerator over a convex denominator): golden
     * section over a bracket that certainly holds the optimum. */
    double a = 1e-9 * (M + delta), b = 50 * M + delta;
    const double g = (sqrt(5) - 1) / 2;
    double x1 = b - g * (b - a), x2 = a + g * (b - a);
    double f1 = gp_renewal_goodput(x1, delta, R, M), f2 = gp_renewal_goodput(x2, delta, R, M);
    for (int i = 0; i < 200 && b - a > 1e-12 * b; i++) {
        if (f1 < f2) {
            a = x1;
            x1 = x2;
            f1 = f2;
            x2 = a + g * (b - a);
            f2 = gp_renewal_goodput(x2, delta, R, M);
        } else {
            b = x2;
            x2 = x1;
            f2 = f1;
            x1 = b - g * (b - a);
            f1 = gp_renewal_goodput(x1, delta, R, M);
        }
    }
    return (a + b) / 2;
}

/* ------------------------------------------------------ one run's accounting ---- */

/* The life between a restart (x = 0) and the next failure: first W of work, then the block;
 * from then on cycles of W work, a wait for the previous write (async, when it is longer than
 * W) and the block. Work done and checkpoints made durable by elapsed time x: */
typedef struct life {
    double W, block, durable, cycle;
} life;

static double life_work(const life *L, double x)
{
    if (x < L->W) return x;
    if (x < L->W + L->block) return L->W;
    double y = x - (L->W + L->block);
    double c = floor(y / L->cycle);
    return L->W * (1 + c) + fmin(y - c * L->cycle, L->W);
}

/* Checkpoints durable by x: the k-th snapshot ends at W + block + (k - 1) cycle, durable
 * `durable` later. */
static double life_durable(const life *L, double x)
{
    double first = L->W + L->block + L->durable;
    if (x < first) return 0;
    return 1 + floor((x - first) / L->cycle);
}

void gp_run_once(const gp_job *job, long steps, const double *fail_t, long n_fail,
                 double horizon_s, double *useful, double *lost, double *ckpt, double *restart)
{
    life L = {.W = (double)steps * job->step_s, .block = job->block_s, .durable = job->durable_s};
    L.cycle = fmax(L.W, L.durable) + L.block;
    double rho = job->restart_s + job->read_s;
    double s = 0;           /* when the current life began (training resumed) */
    double committed = 0, u_lost = 0, u_ckpt = 0, u_restart = 0;
    double last_fail = 0;
    for (long i = 0; i < n_fail; i++) {
        double f = fail_t[i];
        if (f >= horizon_s) break;
        if (f < s) {
            /* hit during a restart: the restart starts over */
            u_restart += f - last_fail;
        } else {
            if (i > 0 || s > 0) u_restart += s - last_fail;
            double x = f - s;
            double w = life_work(&L, x);
            double k = life_durable(&L, x);
            committed += k * L.W;
            u_lost += w - k * L.W;
            u_ckpt += x - w;
        }
        last_fail = f;
        s = f + rho;
    }
    if (s > horizon_s) {
        u_restart += horizon_s - last_fail;
    } else {
        if (s > 0) u_restart += s - last_fail;
        double x = horizon_s - s;
        double w = life_work(&L, x);
        committed += w; /* the job stops cleanly at the horizon: its last work is kept */
        u_ckpt += x - w;
    }
    *useful = committed;
    *lost = u_lost;
    *ckpt = u_ckpt;
    *restart = u_restart;
}

/* ------------------------------------------------------- failure histories ---- */

typedef struct fheap {
    double *t;
    int *cls;
    long n, cap;
} fheap;

static void heap_push(fheap *h, double t, int cls)
{
    if (h->n >= h->cap) {
        h->cap = h->cap ? 2 * h->cap : 64;
        h->t = dt_xrealloc(h->t, (size_t)h->cap * sizeof *h->t);
        h->cls = dt_xrealloc(h->cls, (size_t)h->cap * sizeof *h->cls);
    }
    long i = h->n++;
    while (i > 0) {
        long p = (i - 1) / 2;
        if (h->t[p] <= t) break;
        h->t[i] = h->t[p];
        h->cls[i] = h->cls[p];
        i = p;
    }
    h->t[i] = t;
    h->cls[i] = cls;
}

static void heap_pop(fheap *h)
{
    long n = --h->n;
    if (n == 0) return;
    double t = h->t[n];
    int c = h->cls[n];
    long i = 0;
    for (;;) {
        long l = 2 * i + 1;
        if (l >= n) break;
        long m = l + 1 < n && h->t[l + 1] < h->t[l] ? l + 1 : l;
        if (h->t[m] >= t) break;
        h->t[i] = h->t[m];
        h->cls[i] = h->cls[m];
        i = m;
    }
    h->t[i] = t;
    h->cls[i] = c;
}

typedef struct weib {
    double scale, k, p;  /* p: probability that a part's first failure falls in the horizon */
    long n;
} weib;

/* Failure times of one run, ascending, appended to *out (n, cap). Returns the count. */
static long draw_history(const gp_job *job, const weib *w, double rate, double H, sim_rng *r,
                         fheap *h, double **out, long *n_out, long *cap_out, long limit)
{
    gsl_rng *g = sim_rng_gsl(r);
    h->n = 0;
    for (int c = 0; c < GP_N_CLASSES; c++) {
        if (w[c].n <= 0) continue;
        /* parts (out of n) whose first failure is within the horizon: binomial, drawn in
         * chunks because gsl_ran_binomial takes an unsigned int */
        long remaining = w[c].n, hits = 0;
        while (remaining > 0) {
            unsigned int chunk = remaining > 1000000000L ? 1000000000u : (unsigned int)remaining;
            hits += gsl_ran_binomial(g, w[c].p, chunk);
            remaining -= chunk;
        }
        for (long i = 0; i < hits; i++) {
            double u = gsl_rng_uniform_pos(g) * w[c].p, t;
            if (job->start == GP_START_STATIONARY)
                t = w[c].scale * pow(gsl_cdf_gamma_Pinv(u, 1 / w[c].k, 1), 1 / w[c].k);
            else
                t = w[c].scale * pow(-log1p(-u), 1 / w[c].k);
            heap_push(h, t, c);
        }
    }
    double next_p = rate > 0 ? gsl_ran_exponential(g, 1 / rate) : INFINITY;
    long n0 = *n_out;
    for (;;) {
        double t;
        if (h->n > 0 && h->t[0] < next_p) {
            t = h->t[0];
            int c = h->cls[0];
            heap_pop(h);
            double span = gsl_ran_weibull(g, w[c].scale, w[c].k); /* the replacement part */
            if (t + span < H) heap_push(h, t + span, c);
        } else {
            t = next_p;
            if (t < H) next_p = t + gsl_ran_exponential(g, 1 / rate);
        }
        if (!(t < H)) break;
        if (*n_out - n0 >= limit) return -1;
        if (*n_out >= *cap_out) {
            *cap_out = *cap_out ? 2 * *cap_out : 1024;
            *out = dt_xrealloc(*out, (size_t)*cap_out * sizeof **out);
        }
        (*out)[(*n_out)++] = t;
    }
    return *n_out - n0;
}

/* ---------------------------------------------------------- the simulation ---- */

typedef struct sim_state {
    const gp_job *job;
    const gp_options *opt;
    double *fail;         /* all runs' failure times, run r at fail[start[r] .. start[r+1]) */
    long *start;
    gp_point *pts;
    int n_pts, cap_pts;
    long done, total;
    double tq;            /* Student t quantile for the 95 % CI */
    double M, R;
    bool renewal_applies;
} sim_state;

static void tick(sim_state *S, long k)
{
    S->done += k;
    if (S->opt->progress) S->opt->progress(S->opt->progress_ctx, S->done < S->total ? S->done : S->total, S->total);
}

/* Evaluate (or find) the point for `steps`; returns its index. */
static int eval_point(sim_state *S, long steps)
{
    for (int i = 0; i < S->n_pts; i++)
        if (S->pts[i].steps == steps) return i;
    const gp_options *o = S->opt;
    double sum = 0, sum2 = 0, su = 0, sl = 0, sc = 0, sr = 0;
    for (int r = 0; r < o->runs; r++) {
        double u, l, c, rs;
        /* fail is NULL when no run drew a failure (nothing to offset) */
        const double *f = S->fail ? S->fail + S->start[r] : NULL;
        gp_run_once(S->job, steps, f, S->start[r + 1] - S->start[r],
                    o->horizon_s, &u, &l, &c, &rs);
        double g = u / o->horizon_s;
        sum += g;
        sum2 += g * g;
        su += u;
        sl += l;
        sc += c;
        sr += rs;
    }
    tick(S, o->runs);
    if (S->n_pts >= S->cap_pts) {
        S->cap_pts = S->cap_pts ? 2 * S->cap_pts : 32;
        S->pts = dt_xrealloc(S->pts, (size_t)S->cap_pts * sizeof *S->pts);
    }
    double n = o->runs, mean = sum / n;
    double var = n > 1 ? fmax(0, (sum2 - n * mean * mean) / (n - 1)) : 0;
    gp_point p = {.steps = steps, .interval_s = (double)steps * S->job->step_s, .goodput = mean,
                  .goodput_ci95 = n > 1 ? S->tq * sqrt(var / n) : NAN, .useful_s = su / n,
                  .lost_s = sl / n, .ckpt_s = sc / n, .restart_s = sr / n,
                  .failures = (double)S->start[o->runs] / n, .renewal = NAN};
    if (S->renewal_applies)
        p.renewal = gp_renewal_goodput(p.interval_s, S->job->block_s, S->R, S->M);
    S->pts[S->n_pts] = p;
    return S->n_pts++;
}

static int cmp_points(const void *a, const void *b)
{
    const gp_point *x = a, *y = b;
    return x->steps < y->steps ? -1 : x->steps > y->steps;
}

int gp_simulate(const gp_job *job, const gp_options *opt, gp_result *out, dt_error *err)
{
    memset(out, 0, sizeof *out);
    out->best = out->given = out->daly = -1;
    out->renewal_opt_s = NAN;
    if (!(job->step_s > 0) || !isfinite(job->step_s))
        return dt_error_set(err, DT_EINPUT, NULL, NULL, "the step time must be positive, found %g s",
                            job->step_s);
    if (!(opt->horizon_s > 0) || opt->runs < 1)
        return dt_error_set(err, DT_EINPUT, NULL, NULL, "needs a positive horizon and at least one run");
    /* Long-run failure rate of the whole job, and the classes' sampling parameters. */
    weib w[GP_N_CLASSES];
    double exp_rate = 0, rate = 0;
    bool all_exp = true;
    memset(w, 0, sizeof w);
    for (int c = 0; c < GP_N_CLASSES; c++) {
        const gp_class *k = &job->cls[c];
        if (job->count[c] <= 0 || !(k->mtbf_s > 0)) continue;
        rate += job->count[c] / k->mtbf_s;
        if (k->dist == GP_EXPONENTIAL || k->shape == 1) {
            exp_rate += job->count[c] / k->mtbf_s;
            continue;
        }
        all_exp = false;
        w[c].n = job->count[c];
        w[c].k = k->shape;
        w[c].scale = k->mtbf_s / gsl_sf_gamma(1 + 1 / k->shape);
        double z = pow(opt->horizon_s / w[c].scale, w[c].k);
        w[c].p = job->start == GP_START_STATIONARY ? gsl_sf_gamma_inc_P(1 / w[c].k, z) : -expm1(-z);
    }
    double M = rate > 0 ? 1 / rate : INFINITY;
    out->system_mtbf_s = M;
    out->young_s = gp_young(job->block_s, M);
    out->daly_s = gp_daly(job->block_s, M);
    sim_state S = {.job = job, .opt = opt, .M = M, .R = job->restart_s + job->read_s};
    S.renewal_applies = all_exp && job->mode == GP_CKPT_SYNC;
    if (S.renewal_applies) out->renewal_opt_s = gp_renewal_optimum(job->block_s, S.R, M);
    S.tq = opt->runs > 1 ? gsl_cdf_tdist_Pinv(0.975, opt->runs - 1) : NAN;

    /* Failure histories. Memory is 8 bytes per failure: refuse beyond 2^24 in all. */
    const long limit = 1L << 24;
    S.start = dt_xcalloc((size_t)opt->runs + 1, sizeof *S.start);
    long n_fail = 0, cap = 0;
    fheap h = {0};
    long grid_n = 21, refine = 16; /* evaluations: the grid, the refinement, Daly's */
    S.total = opt->runs + (long)opt->runs * ((opt->search ? grid_n + refine + 4 : 0) + 1);
    int rc = DT_OK;
    for (int r = 0; r < opt->runs; r++) {
        char name[48];
        snprintf(name, sizeof name, "failures.run%d", r);
        sim_rng *g = sim_rng_create(opt->seed, name);
        S.start[r] = n_fail;
        long k = draw_history(job, w, exp_rate, opt->horizon_s, g, &h, &S.fail, &n_fail, &cap,
                              limit - n_fail);
        sim_rng_destroy(g);
        if (k < 0) {
            rc = dt_error_set(err, DT_EINPUT, NULL, NULL,
                              "more than %ld failures over %d runs of %g s (system MTBF %g s): "
                              "use fewer runs or a shorter horizon",
                              limit, opt->runs, opt->horizon_s, M);
            break;
        }
        tick(&S, 1);
    }
    S.start[opt->runs] = n_fail;
    free(h.t);
    free(h.cls);
    out->failures_drawn = n_fail;
    long given_k = 0, daly_k = 0;
    if (rc == DT_OK) {
        double T = job->step_s;
        long max_k = (long)fmin(floor(opt->horizon_s / T), 1e15);
        if (max_k < 1) max_k = 1;
        if (job->interval_steps > 0) {
            given_k = job->interval_steps < max_k ? job->interval_steps : max_k;
            eval_point(&S, given_k);
        }
        if (opt->search && isfinite(out->daly_s)) {
            long lo = opt->min_steps > 0 ? opt->min_steps : (long)floor(out->daly_s / T / 16);
            long hi = opt->max_steps > 0 ? opt->max_steps : (long)ceil(out->daly_s / T * 16);
            if (lo < 1) lo = 1;
            if (hi > max_k) hi = max_k;
            if (hi < lo) hi = lo;
            /* log grid, then golden section on whole steps around the best grid point */
            int best = -1;
            for (long i = 0; i < grid_n; i++) {
                long k = (long)llround(lo * pow((double)hi / lo, (double)i / (grid_n - 1)));
                int p = eval_point(&S, k);
                if (best < 0 || S.pts[p].goodput > S.pts[best].goodput) best = p;
            }
            long bk = S.pts[best].steps, a = lo, b = hi;
            for (int i = 0; i < S.n_pts; i++) {
                long k = S.pts[i].steps;
                if (k < bk && k > a) a = k;
                if (k > bk && k < b) b = k;
            }
            const double g = (sqrt(5) - 1) / 2;
            for (int it = 0; it < refine && b - a > 2; it++) {
                long x1 = (long)llround(b - g * (b - a)), x2 = (long)llround(a + g * (b - a));
                if (x1 <= a) x1 = a + 1;
                if (x2 >= b) x2 = b - 1;
                if (x2 <= x1) x2 = x1 + 1;
                /* eval_point may grow S.pts: index only after both calls */
                int p1 = eval_point(&S, x1), p2 = eval_point(&S, x2);
                double f1 = S.pts[p1].goodput, f2 = S.pts[p2].goodput;
                if (f1 < f2) a = x1;
                else b = x2;
            }
            for (long k = a; k <= b && b - a <= 2; k++) eval_point(&S, k);
            daly_k = (long)fmax(1, fmin((double)max_k, llround(out->daly_s / T)));
            eval_point(&S, daly_k);
        }
    }
    if (rc != DT_OK) {
        free(S.fail);
        free(S.start);
        free(S.pts);
        return rc;
    }
    if (S.total > S.done) tick(&S, S.total - S.done);
    qsort(S.pts, (size_t)S.n_pts, sizeof *S.pts, cmp_points);
    out->points = S.pts;
    out->n_points = S.n_pts;
    for (int i = 0; i < S.n_pts; i++) {
        if (opt->search && (out->best < 0 || S.pts[i].goodput > S.pts[out->best].goodput)) out->best = i;
        if (given_k > 0 && S.pts[i].steps == given_k) out->given = i;
        if (daly_k > 0 && S.pts[i].steps == daly_k) out->daly = i;
    }
    free(S.fail);
    free(S.start);
    return DT_OK;
}

void gp_result_free(gp_result *r)
{
    if (!r) return;
    free(r->points);
    r->points = NULL;
    r->n_points = 0;
}
