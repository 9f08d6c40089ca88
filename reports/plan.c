/* plan.c - capacity planning search (see plan.h for the space and the pruning).
 *
 * Cost: the space is (divisor pairs of G) x schedules x 2 sequence parallelism x 4 micro batch
 * sizes x 3 checkpointing levels x 4 ZeRO stages per GPU count - tens of thousands of
 * candidates for G = 1024, most of them refused by arithmetic. A probe (memory and the lower
 * bound, no graph) costs tens of microseconds with the topology cached, a simulation 0.1 to
 * 1 s at 1,024 GPUs; so every candidate that can exist is probed, and only those whose bound
 * can still beat the top plans found so far are simulated, best bound first. At larger scale
 * the probes would want threads too (one cache each).
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtsim/json.h"
#include "dtsim/plan.h"
#include "dtsim/threads.h"
#include "dtsim/units.h"

static const char *const ckpt_names[] = {"none", "selective", "full"};
static const char *const objective_names[] = {"time", "cost", "tokens-per-dollar", NULL};

const char *plan_checkpointing_name(int level)
{
    return level >= 0 && level < 3 ? ckpt_names[level] : "?";
}

const char *plan_objective_name(plan_objective o) { return objective_names[o]; }

int plan_objective_parse(const char *s, plan_objective *out)
{
    for (int i = 0; objective_names[i]; i++)
        if (!strcmp(s, objective_names[i])) {
            *out = (plan_objective)i;
            return DT_OK;
        }
    return DT_EINPUT;
}

const char *plan_schedule_name(const plan_candidate *c)
{
    return c->pp <= 1 ? "none" : c->schedule == WL_INTERLEAVED ? "interleaved" : "1f1b";
}

typedef struct cand {
    plan_candidate c;
    int state;            /* 0 pending, 1 fits (may be simulated), 2 rejected */
    double bound;         /* the objective's lower bound (score units) */
    double estimate;      /* the probe's estimate in the same units: the order of simulation */
    bool skipped;         /* not simulated: its bound was above the top-th plan's score */
    double usd_per_hour;  /* the probe's $/hour of the plan's GPUs and tokens per step: turn */
    double tokens;        /* a score threshold into a step time (deadline_of) */
    double deadline;      /* seconds past which the simulation may stop (0: none) */
    cJSON *scenario;      /* built for the probe, kept for the simulation */
} cand;

typedef struct rejects {
    plan_reject *v;
    int n, cap;
} rejects;

static void reject(rejects *r, const char *reason, const char *example)
{
    for (int i = 0; i < r->n; i++)
        if (!strcmp(r->v[i].reason, reason)) {
            r->v[i].count++;
            return;
        }
    if (r->n == r->cap) r->v = dt_xrealloc(r->v, (size_t)(r->cap = r->cap ? 2 * r->cap : 8) * sizeof *r->v);
    plan_reject *x = &r->v[r->n++];
    memset(x, 0, sizeof *x);
    snprintf(x->reason, sizeof x->reason, "%s", reason);
    snprintf(x->example, sizeof x->example, "%s", example);
    x->count = 1;
}

/* "90.8 GiB" from a GiB up (one decimal lines up in the rejection list), "512 MiB" below. */
static const char *gib(double bytes, char *buf, size_t n)
{
    const double GiB = 1024.0 * 1024 * 1024;
    if (bytes >= GiB) {
        snprintf(buf, n, "%.1f GiB", bytes / GiB);
        return buf;
    }
    return unit_fmt_size(bytes, buf, n);
}

static void label(const plan_candidate *c, char *buf, size_t n)
{
    char sched[32];
    if (c->pp > 1 && c->schedule == WL_INTERLEAVED)
        snprintf(sched, sizeof sched, "interleaved v=%d", c->virtual_stages);
    else
        snprintf(sched, sizeof sched, "%s", plan_schedule_name(c));
    char ec[32] = "";
    if (c->ep > 1 || c->cp > 1) snprintf(ec, sizeof ec, " ep=%d cp=%d", c->ep, c->cp);
    snprintf(buf, n, "gpus=%d tp=%d pp=%d dp=%d%s sched=%s sp=%s zero=%d ckpt=%s mbs=%d", c->gpus,
             c->tp, c->pp, c->dp, ec, sched, c->sequence_parallel ? "on" : "off", c->zero,
             plan_checkpointing_name(c->checkpointing), c->micro_batch_size);
}

static double get_num(const cJSON *obj, const char *key, double dflt)
{
    const cJSON *v = cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

static void set_item(cJSON *obj, const char *key, cJSON *v)
{
    if (cJSON_GetObjectItemCaseSensitive(obj, key))
        cJSON_ReplaceItemInObjectCaseSensitive(obj, key, v);
    else
        cJSON_AddItemToObject(obj, key, v);
}

static void set_num(cJSON *obj, const char *key, double v) { set_item(obj, key, cJSON_CreateNumber(v)); }
static void set_str(cJSON *obj, const char *key, const char *v) { set_item(obj, key, cJSON_CreateString(v)); }

typedef enum fw_kind { FW_GENERIC, FW_MEGATRON, FW_FSDP } fw_kind;

typedef struct space {
    const cJSON *scenario;
    fw_kind framework;    /* the scenario's "framework" preset: whose rules apply */
    double layers, heads, kv_heads, global_batch;
    double experts, seq_len;
    bool search_cp;       /* context parallel degrees are searched (docs: plan.h) */
    bool generated, has_compression;
    int own_mbs;
    int own_microbatches; /* held per DP replica when the scenario has no global_batch */
} space;

/* The scenario of one candidate: a copy with the plan's fields set. */
static cJSON *build(const space *sp, const plan_candidate *c)
{
    cJSON *s = cJSON_Duplicate(sp->scenario, 1);
    cJSON_DeleteItemFromObjectCaseSensitive(s, "sweep");
    cJSON *par = cJSON_GetObjectItemCaseSensitive(s, "parallel");
    if (!cJSON_IsObject(par)) {
        cJSON_DeleteItemFromObjectCaseSensitive(s, "parallel");
        par = cJSON_AddObjectToObject(s, "parallel");
    }
    set_num(par, "tp", c->tp);
    set_num(par, "pp", c->pp);
    set_num(par, "dp", c->dp);
    set_num(par, "zero", c->zero);
    if (c->ep > 1) set_num(par, "ep", c->ep);
    else cJSON_DeleteItemFromObjectCaseSensitive(par, "ep");
    if (c->cp > 1) set_num(par, "cp", c->cp);
    else cJSON_DeleteItemFromObjectCaseSensitive(par, "cp");
    set_item(par, "sequence_parallel", cJSON_CreateBool(c->sequence_parallel));
    /* the scenario's stage_layers fit its own pp and v only: candidates get the default split */
    const cJSON *sl = cJSON_GetObjectItemCaseSensitive(par, "stage_layers");
    if (sl && cJSON_GetArraySize(sl) != c->pp * c->virtual_stages)
        cJSON_DeleteItemFromObjectCaseSensitive(par, "stage_layers");
    set_str(par, "activation_checkpointing", ckpt_names[c->checkpointing]);
    if (sp->global_batch > 0) {
        /* The global batch is the recipe; the microbatch count follows from it. */
        set_num(par, "micro_batch_size", c->micro_batch_size);
        cJSON_DeleteItemFromObjectCaseSensitive(par, "microbatches");
        cJSON_DeleteItemFromObjectCaseSensitive(par, "gradient_accumulation");
    } else {
        /* No global batch: the scenario's micro batch size and microbatch count per DP replica
         * are the recipe. The count is set explicitly so that it does not follow each plan's pp
         * (the loader's default when unset): every plan then does the same work per replica,
         * and the global batch is dp x micro batch size x microbatches. */
        set_num(par, "micro_batch_size", sp->own_mbs);
        set_num(par, "microbatches", sp->own_microbatches);
        cJSON_DeleteItemFromObjectCaseSensitive(par, "gradient_accumulation");
    }
    if (c->pp == 1) {
        cJSON_DeleteItemFromObjectCaseSensitive(par, "schedule");
        cJSON_DeleteItemFromObjectCaseSensitive(par, "virtual_stages");
    } else {
        set_str(par, "schedule", c->schedule == WL_INTERLEAVED ? "interleaved" : "1f1b");
        if (c->schedule == WL_INTERLEAVED)
            set_num(par, "virtual_stages", c->virtual_stages);
        else
            cJSON_DeleteItemFromObjectCaseSensitive(par, "virtual_stages");
    }
    if (sp->generated) {
        cJSON *topo_j = cJSON_GetObjectItemCaseSensitive(s, "topology");
        set_num(topo_j, "gpus", c->gpus);
        cJSON_DeleteItemFromObjectCaseSensitive(topo_j, "nodes");
    }
    return s;
}

/* The frameworks' rules: plans dtsim can simulate but the framework a team would run them on
 * refuses, so proposing them would send the user to a configuration that does not start.
 * - ZeRO-2/3 with pipeline parallelism: DeepSpeed raises "ZeRO-2 and ZeRO-3 are incompatible
 *   with pipeline parallelism" (PipelineEngine), Megatron-LM has no gradient or parameter
 *   sharding beside its pipeline schedules; applies whatever the framework field says.
 * - Megatron-LM (framework "megatron"): its distributed optimizer shards optimizer state only,
 *   which is ZeRO-1; ZeRO-2/3 do not exist there.
 * - FSDP (framework "fsdp"): no pipeline schedule (pp 1). */
static bool rules(const space *sp, const plan_candidate *c, const char *lb, rejects *rj)
{
    char ex[320];
    if (c->zero >= 2 && c->pp > 1) {
        snprintf(ex, sizeof ex, "%s: ZeRO-%d with pp %d (DeepSpeed and Megatron-LM refuse ZeRO-2/3 "
                 "with pipeline parallelism)", lb, c->zero, c->pp);
        reject(rj, "rule: no ZeRO-2/3 with pp > 1", ex);
        return false;
    }
    if (sp->framework == FW_MEGATRON && c->zero >= 2) {
        snprintf(ex, sizeof ex, "%s: Megatron-LM's distributed optimizer is ZeRO-1; ZeRO-%d does "
                 "not exist there", lb, c->zero);
        reject(rj, "rule: megatron has ZeRO 0 or 1 only", ex);
        return false;
    }
    if (sp->framework == FW_FSDP && c->pp > 1) {
        snprintf(ex, sizeof ex, "%s: FSDP has no pipeline schedule (pp %d)", lb, c->pp);
        reject(rj, "rule: fsdp has no pipeline (pp 1)", ex);
        return false;
    }
    return true;
}

/* Structural checks; returns false (and records why) when the candidate cannot exist. */
static bool structural(const space *sp, const plan_candidate *c, rejects *rj)
{
    char ex[320], lb[200];
    label(c, lb, sizeof lb);
    double stages = (double)c->pp * c->virtual_stages;
    if (sp->layers > 0 && fmod(sp->layers, stages) != 0) {
        snprintf(ex, sizeof ex, "%s: layers %g not divisible by pp %d%s", lb, sp->layers, c->pp,
                 c->virtual_stages > 1 ? " x virtual stages" : "");
        reject(rj, "indivisible: layers by pp", ex);
        return false;
    }
    if (sp->heads > 0 && fmod(sp->heads, c->tp) != 0) {
        snprintf(ex, sizeof ex, "%s: heads %g not divisible by tp %d", lb, sp->heads, c->tp);
        reject(rj, "indivisible: heads by tp", ex);
        return false;
    }
    if (sp->kv_heads > 0 && fmod(sp->kv_heads, c->tp) != 0) {
        snprintf(ex, sizeof ex, "%s: kv_heads %g not divisible by tp %d", lb, sp->kv_heads, c->tp);
        reject(rj, "indivisible: kv_heads by tp", ex);
        return false;
    }
    if (c->cp > 1 && sp->seq_len > 0 && fmod(sp->seq_len, 2.0 * c->cp) != 0) {
        snprintf(ex, sizeof ex, "%s: seq_len %g not divisible by 2 x cp %d", lb, sp->seq_len, c->cp);
        reject(rj, "indivisible: seq_len by 2 x cp", ex);
        return false;
    }
    double m = sp->own_microbatches;
    if (sp->global_batch > 0) {
        if (fmod(sp->global_batch, (double)c->dp * c->micro_batch_size) != 0) {
            snprintf(ex, sizeof ex, "%s: global batch %g not divisible by dp %d x micro batch %d",
                     lb, sp->global_batch, c->dp, c->micro_batch_size);
            reject(rj, "indivisible: global batch by dp x micro batch", ex);
            return false;
        }
        m = sp->global_batch / ((double)c->dp * c->micro_batch_size);
    }
    if (c->pp > 1 && c->schedule == WL_INTERLEAVED && fmod(m, c->pp) != 0) {
        snprintf(ex, sizeof ex, "%s: %g microbatches not divisible by pp %d", lb, m, c->pp);
        reject(rj, "indivisible: microbatches by pp (interleaved)", ex);
        return false;
    }
    return rules(sp, c, lb, rj);
}

static int default_probe(void *ctx, const cJSON *s, const char *file, const char *base_dir,
                         run_probe *out, dt_error *err)
{
    return run_probe_scenario(s, file, base_dir, ctx, out, err);
}

static int default_run(void *ctx, const cJSON *s, const char *file, const char *base_dir,
                       double deadline_s, run_result *out, dt_error *err)
{
    run_options o;
    memset(&o, 0, sizeof o);
    o.deadline_s = deadline_s;
    return run_scenario(s, file, base_dir, &o, out, err);
}

/* Best first: score, then fewer GPUs, less model parallelism, less memory saving, larger micro
 * batches, 1F1B before interleaving, fewer chunks, sequence parallelism off. */
static int cand_cmp(const void *pa, const void *pb)
{
    const plan_candidate *a = pa, *b = pb;
    if (a->score != b->score) return a->score < b->score ? -1 : 1;
    int ka[] = {a->gpus, a->tp, a->pp, a->cp, a->ep, a->zero, a->checkpointing,
                -a->micro_batch_size, a->schedule, a->virtual_stages, a->sequence_parallel};
    int kb[] = {b->gpus, b->tp, b->pp, b->cp, b->ep, b->zero, b->checkpointing,
                -b->micro_batch_size, b->schedule, b->virtual_stages, b->sequence_parallel};
    for (int i = 0; i < 11; i++)
        if (ka[i] != kb[i]) return ka[i] < kb[i] ? -1 : 1;
    return 0;
}

/* Order of simulation: the estimate, then the bound, then the same keys (a total order, so the
 * window's choices and hence everything simulated are the same every run). */
static int order_cmp(const void *pa, const void *pb)
{
    const cand *a = *(cand *const *)pa, *b = *(cand *const *)pb;
    if (a->estimate != b->estimate) return a->estimate < b->estimate ? -1 : 1;
    if (a->bound != b->bound) return a->bound < b->bound ? -1 : 1;
    plan_candidate x = a->c, y = b->c;
    x.score = y.score = 0;
    return cand_cmp(&x, &y);
}

static int rej_cmp(const void *pa, const void *pb)
{
    const plan_reject *a = pa, *b = pb;
    if (a->count != b->count) return a->count > b->count ? -1 : 1;
    return strcmp(a->reason, b->reason);
}

/* The objective of a simulated plan, lower is better. */
static double score_of(plan_objective o, const run_result *r)
{
    double tokens = r->throughput.tokens_per_s * r->step_time_s;
    return o == PLAN_TIME   ? r->step_time_s
           : o == PLAN_COST ? r->cost_per_step_usd
                            : -(r->cost_per_step_usd > 0 ? tokens / r->cost_per_step_usd : 0);
}

/* The same objective's bound from a probe: step >= lb gives $/step >= lb x $/hour / 3600 and
 * tokens/$ <= tokens / that. No bound: the weakest value (prunes nothing). */
static double bound_of(plan_objective o, const run_probe *p, double lb)
{
    if (o == PLAN_TIME) return lb > 0 ? lb : 0;
    double usd = lb * p->cost_per_hour_total / 3600;
    if (o == PLAN_COST) return usd > 0 ? usd : 0;
    return usd > 0 ? -p->tokens_per_step / usd : -INFINITY;
}

/* The step time above which a plan's score is worse than `threshold` (the top-th best so far),
 * so that its simulation may stop there: the inverse of score_of. 0 (run to the end) without a
 * threshold, or when the objective's money figures are missing. A hair above the exact value:
 * a plan that ties the threshold still runs to the end (ties break by the plan's keys). */
static double deadline_of(plan_objective o, const cand *c, double threshold)
{
    if (!(threshold < INFINITY)) return 0;
    double t = o == PLAN_TIME ? threshold
               : o == PLAN_COST ? (c->usd_per_hour > 0 ? threshold * 3600 / c->usd_per_hour : 0)
               : (c->usd_per_hour > 0 && threshold < 0 ? c->tokens * 3600 / (c->usd_per_hour * -threshold) : 0);
    return t > 0 ? t * (1 + 1e-9) : 0;
}

/* Branch and bound on `jobs` threads as a sliding window. The plans that fit are taken best
 * estimate first; the k-th simulation is chosen (plans whose bound is above the threshold
 * skipped on the way) and given its deadline from the results of exactly the first
 * k - PLAN_WINDOW simulations (none for the first PLAN_WINDOW + 1), and results are folded
 * in the order chosen. So what is simulated, skipped and stopped depends neither on `jobs` nor
 * on which simulation finishes first, and a thread waits only when the oldest unfolded
 * simulation is PLAN_WINDOW behind the next one (no batch boundary to wait at). */
#define PLAN_SLOTS (PLAN_WINDOW + 1) /* simulations chosen and not yet folded, at most */

typedef struct bb {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* a simulation finished (and more may have been chosen) */
    const plan_options *opt;
    const char *file, *base_dir;
    double headroom;
    int top;
    cand **order; /* the plans that fit, in order of simulation */
    size_t n_fit, scan;
    bool scan_end;                     /* every plan chosen or skipped */
    size_t chosen, started, folded;    /* simulations so far of each kind (chosen >= started >= folded) */
    cand *slot[PLAN_SLOTS];            /* simulation k in slot k % PLAN_SLOTS until folded */
    int slot_rc[PLAN_SLOTS];
    bool slot_done[PLAN_SLOTS];
    dt_error slot_err[PLAN_SLOTS];
    double *kept; /* the best scores folded so far, ascending, n_kept <= top */
    int n_kept;
    plan_candidate *ok; /* the simulated plans that fit, in fold order */
    int n_ok, stopped;
    rejects *rj;
} bb;

/* Choose simulations while the window allows: simulation k needs the first k - PLAN_WINDOW
 * folded, and when it is chosen exactly those are (choose runs after every fold). */
static void bb_choose(bb *B)
{
    while (!B->scan_end && B->chosen <= B->folded + PLAN_WINDOW) {
        /* the top-th best score so far: a plan whose bound is above it cannot enter the top
         * (the threshold only falls, so it never could later) */
        double threshold = B->n_kept == B->top ? B->kept[B->top - 1] : INFINITY;
        cand *c = NULL;
        while (!c && B->scan < B->n_fit) {
            cand *x = B->order[B->scan++];
            if (!B->opt->exhaustive && x->bound > threshold) x->skipped = true;
            else c = x;
        }
        if (!c) {
            B->scan_end = true;
            break;
        }
        /* early termination: a plan still to beat the top-th must finish before it */
        c->deadline = B->opt->exhaustive ? 0 : deadline_of(B->opt->objective, c, threshold);
        size_t s = B->chosen++ % PLAN_SLOTS;
        B->slot[s] = c;
        B->slot_done[s] = false;
    }
}

/* Fold one finished simulation into the results: rejects, the plans that fit, the top scores. */
static void bb_fold(bb *B, size_t s)
{
    cand *c = B->slot[s];
    char lb[200], ex[320];
    label(&c->c, lb, sizeof lb);
    if (B->slot_rc[s] != DT_OK) {
        const dt_error *e = &B->slot_err[s];
        char reason[96];
        snprintf(reason, sizeof reason, "invalid: %.80s", e->path[0] ? e->path : "scenario");
        snprintf(ex, sizeof ex, "%s: %.110s", lb, e->msg);
        reject(B->rj, reason, ex);
        return;
    }
    const run_result *r = &c->c.result;
    if (r->stopped_at_deadline) {
        /* longer than the top-th plan when it was chosen: it cannot enter the top */
        B->stopped++;
        snprintf(ex, sizeof ex, "%.200s: stopped at %.6g s of simulated time, the #%d plan was better",
                 lb, r->step_time_s, B->top);
        reject(B->rj, "simulation stopped: slower than the top plans", ex);
        return;
    }
    double limit = B->opt->memory_limit > 0 ? B->opt->memory_limit : (1 - B->headroom) * r->memory.capacity;
    if (r->memory.peak > limit) {
        char g1[32], g2[32];
        snprintf(ex, sizeof ex, "%s: %s > %s (simulated peak)", lb, gib(r->memory.peak, g1, sizeof g1),
                 gib(limit, g2, sizeof g2));
        reject(B->rj, "does not fit in memory", ex);
        return;
    }
    c->c.score = score_of(B->opt->objective, r);
    B->ok[B->n_ok++] = c->c;
    /* keep the top best scores, ascending */
    double sc = c->c.score;
    int at;
    if (B->n_kept < B->top)
        at = B->n_kept++;
    else if (sc < B->kept[B->top - 1])
        at = B->top - 1;
    else
        return;
    B->kept[at] = sc;
    for (int q = at; q > 0 && B->kept[q] < B->kept[q - 1]; q--) {
        double t = B->kept[q];
        B->kept[q] = B->kept[q - 1];
        B->kept[q - 1] = t;
    }
}

static void *bb_worker(void *arg)
{
    bb *B = arg;
    plan_run_fn run = B->opt->run ? B->opt->run : default_run;
    pthread_mutex_lock(&B->mu);
    for (;;) {
        if (B->started < B->chosen) {
            size_t s = B->started++ % PLAN_SLOTS;
            cand *c = B->slot[s];
            pthread_mutex_unlock(&B->mu);
            dt_error e;
            dt_error_clear(&e);
            memset(&c->c.result, 0, sizeof c->c.result);
            int rc = run(B->opt->ctx, c->scenario, B->file, B->base_dir, c->deadline, &c->c.result, &e);
            run_result_free(&c->c.result); /* no timeline was asked for; keep the numbers */
            pthread_mutex_lock(&B->mu);
            B->slot_rc[s] = rc;
            B->slot_err[s] = e;
            B->slot_done[s] = true;
            while (B->folded < B->chosen && B->slot_done[B->folded % PLAN_SLOTS]) {
                bb_fold(B, B->folded % PLAN_SLOTS);
                B->folded++;
                bb_choose(B);
            }
            pthread_cond_broadcast(&B->cv);
        } else if (B->scan_end) {
            break; /* nothing left to start, and nothing more will be chosen */
        } else {
            pthread_cond_wait(&B->cv, &B->mu); /* for a fold that chooses more */
        }
    }
    pthread_mutex_unlock(&B->mu);
    return NULL;
}

/* Run the branch and bound on up to `jobs` threads; the calling thread reports progress
 * (simulations folded of the plans that fit). */
static void bb_run(bb *B, int jobs)
{
    bb_choose(B);
    if (jobs > PLAN_SLOTS) jobs = PLAN_SLOTS; /* more could never all be busy */
    dt_threads th;
    if (dt_threads_start(&th, jobs, bb_worker, B) == 0) bb_worker(B);
    if (B->opt->progress) {
        pthread_mutex_lock(&B->mu);
        size_t shown = (size_t)-1;
        while (!(B->scan_end && B->folded == B->chosen)) {
            if (B->folded != shown) {
                shown = B->folded;
                pthread_mutex_unlock(&B->mu);
                B->opt->progress(B->opt->progress_ctx, shown, B->n_fit);
                pthread_mutex_lock(&B->mu);
                continue;
            }
            pthread_cond_wait(&B->cv, &B->mu);
        }
        pthread_mutex_unlock(&B->mu);
    }
    dt_threads_join(&th);
}

/* The probes of the plans that pass the structural checks, on `jobs` threads with a topology
 * cache each. Probes are independent of each other and read back in candidate order, so
 * nothing depends on which thread probed what. A probe hook runs on the calling thread alone
 * (plan_options: hooks are called there). */
typedef struct probe_job {
    cand *c;
    run_probe pr;
    int rc;
    dt_error *err; /* malloc'd when rc != DT_OK */
} probe_job;

typedef struct probe_pool {
    pthread_mutex_t mu;
    probe_job *jobs;
    size_t n, next;
    const space *sp;
    const char *file, *base_dir;
    const plan_options *opt;
} probe_pool;

static void *probe_worker(void *arg)
{
    probe_pool *P = arg;
    run_probe_cache *cache = P->opt->probe ? NULL : run_probe_cache_create();
    plan_probe_fn probe = P->opt->probe ? P->opt->probe : default_probe;
    void *ctx = P->opt->probe ? P->opt->ctx : cache;
    for (;;) {
        pthread_mutex_lock(&P->mu);
        size_t k = P->next < P->n ? P->next++ : P->n;
        pthread_mutex_unlock(&P->mu);
        if (k == P->n) break;
        probe_job *j = &P->jobs[k];
        j->c->scenario = build(P->sp, &j->c->c);
        dt_error e;
        dt_error_clear(&e);
        j->rc = probe(ctx, j->c->scenario, P->file, P->base_dir, &j->pr, &e);
        if (j->rc != DT_OK) {
            j->err = dt_xmalloc(sizeof *j->err);
            *j->err = e;
        }
    }
    run_probe_cache_destroy(cache);
    return NULL;
}

static void probe_all(probe_pool *P, int jobs)
{
    if (P->opt->probe) jobs = 1; /* a hook runs on the calling thread */
    if (jobs > 64) jobs = 64;
    dt_threads_run(jobs, probe_worker, P); /* the calling thread probes too */
}

static void add_cand(cand **cs, size_t *n, size_t *cap, plan_candidate c)
{
    if (*n == *cap) *cs = dt_xrealloc(*cs, (*cap = *cap ? 2 * *cap : 256) * sizeof **cs);
    cand *x = &(*cs)[(*n)++];
    memset(x, 0, sizeof *x);
    x->c = c;
}

int plan_search(const cJSON *scenario, const char *file, const char *base_dir,
                const plan_options *opt, plan_result *out, dt_error *err)
{
    memset(out, 0, sizeof *out);
    if (opt->gpus < 1)
        return dt_error_set(err, DT_EINPUT, "--gpus", NULL, "expected a GPU count >= 1, found %d",
                            opt->gpus);
    int max_gpus = opt->max_gpus > 0 ? opt->max_gpus : opt->gpus;
    if (max_gpus < opt->gpus)
        return dt_error_set(err, DT_EINPUT, "--max-gpus", NULL,
                            "must be at least --gpus (%d), found %d", opt->gpus, max_gpus);
    space sp = {.scenario = scenario};
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(scenario, "model");
    const cJSON *par = cJSON_GetObjectItemCaseSensitive(scenario, "parallel");
    const cJSON *topo_j = cJSON_GetObjectItemCaseSensitive(scenario, "topology");
    sp.layers = get_num(model, "layers", 0);
    sp.heads = get_num(model, "heads", 0);
    sp.kv_heads = get_num(model, "kv_heads", 0);
    sp.experts = get_num(model, "experts", 1);
    sp.seq_len = get_num(model, "seq_len", 0);
    {
        const cJSON *at = cJSON_IsObject(model) ? cJSON_GetObjectItemCaseSensitive(model, "attention") : NULL;
        bool flash = !(cJSON_IsString(at) && !strcmp(at->valuestring, "unfused"));
        sp.search_cp = flash && (get_num(par, "cp", 0) > 0 || sp.seq_len >= 16384);
    }
    sp.global_batch = get_num(scenario, "global_batch", 0);
    sp.has_compression = cJSON_IsObject(par) && cJSON_GetObjectItemCaseSensitive(par, "compression");
    sp.generated = cJSON_IsObject(topo_j) && cJSON_GetObjectItemCaseSensitive(topo_j, "generator");
    {
        const cJSON *fw = cJSON_GetObjectItemCaseSensitive(scenario, "framework");
        if (cJSON_IsObject(fw)) fw = cJSON_GetObjectItemCaseSensitive(fw, "preset");
        const char *name = cJSON_IsString(fw) ? fw->valuestring : "";
        sp.framework = !strcmp(name, "megatron") ? FW_MEGATRON
                       : !strcmp(name, "fsdp")   ? FW_FSDP
                                                 : FW_GENERIC;
    }
    /* Usable memory: what --memory-limit says, else the GPU's less the headroom (--headroom,
     * else options.memory_headroom, else 10 %: allocator fragmentation, NCCL buffers and the
     * CUDA context take a few GiB that the closed forms do not count). */
    double headroom = 0.1;
    {
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(scenario, "options");
        const cJSON *h = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, "memory_headroom") : NULL;
        if (cJSON_IsNumber(h)) headroom = h->valuedouble;
    }
    if (opt->have_headroom) headroom = opt->headroom;
    if (!(headroom >= 0 && headroom <= 0.9))
        return dt_error_set(err, DT_EINPUT, "--headroom", NULL,
                            "expected a fraction from 0 to 0.9, found %g", headroom);
    if (opt->memory_limit > 0) headroom = 0;
    out->headroom = headroom;
    sp.own_mbs = (int)get_num(par, "micro_batch_size", 1);
    /* As the scenario loader resolves it for the scenario's own plan: microbatches, else
     * gradient_accumulation (the same count), else one per pipeline stage. */
    sp.own_microbatches = (int)get_num(par, "microbatches",
                                       get_num(par, "gradient_accumulation", get_num(par, "pp", 1)));
    if (sp.global_batch > 0) {
        out->global_batch = sp.global_batch;
    } else {
        out->held_micro_batch_size = sp.own_mbs;
        out->held_microbatches = sp.own_microbatches;
    }
    if (max_gpus > opt->gpus && !sp.generated)
        return dt_error_set(err, DT_EINPUT, file, "topology",
                            "--max-gpus needs a generated topology (an object with "
                            "\"generator\") so dtsim can resize it; this one is fixed");

    static const int mbs_all[] = {1, 2, 4, 8};
    int mbs_list[4], n_mbs = 0;
    if (sp.global_batch > 0)
        for (int i = 0; i < 4; i++) mbs_list[n_mbs++] = mbs_all[i];
    else
        mbs_list[n_mbs++] = sp.own_mbs;
    int n_zero = sp.has_compression ? 1 : 4;

    /* Enumerate. Schedules of a pp > 1 plan: 1F1B, and interleaved with every v >= 2 whose
     * pp x v divides the layers (others cannot split the model; with layers unknown, v up to
     * 8 and the loader judges). */
    cand *cs = NULL;
    size_t n = 0, cap = 0;
    rejects rj = {0};
    for (long g = opt->gpus; g <= max_gpus; g *= 2) {
        for (int tp = 1; tp <= g; tp++) {
            if (g % tp) continue;
            for (int pp = 1; pp <= g / tp; pp++) {
                if ((g / tp) % pp) continue;
                int scheds[64][2], n_sched = 0;
                if (pp == 1) {
                    scheds[n_sched][0] = WL_GPIPE;
                    scheds[n_sched++][1] = 1;
                } else {
                    scheds[n_sched][0] = WL_1F1B;
                    scheds[n_sched++][1] = 1;
                    int vmax = sp.layers > 0 ? (int)(sp.layers / pp) : 8;
                    for (int v = 2; v <= vmax && n_sched < 64; v++)
                        if (sp.layers <= 0 || fmod(sp.layers, (double)pp * v) == 0) {
                            scheds[n_sched][0] = WL_INTERLEAVED;
                            scheds[n_sched++][1] = v;
                        }
                }
                for (int cp = 1; cp <= (sp.search_cp ? 16 : 1); cp *= 2) {
                    if ((g / tp / pp) % cp) continue;
                    int dp = (int)(g / tp / pp / cp);
                    for (int ep = 1; ep <= dp && ep <= (int)sp.experts; ep++) {
                        if (dp % ep || fmod(sp.experts, ep) != 0) continue;
                        for (int si = 0; si < n_sched; si++)
                            for (int seq = 0; seq < (tp > 1 ? 2 : 1); seq++)
                                for (int mi = 0; mi < n_mbs; mi++)
                                    for (int ck = 0; ck < 3; ck++)
                                        for (int z = 0; z < n_zero; z++)
                                            add_cand(&cs, &n, &cap,
                                                     (plan_candidate){
                                                         .gpus = (int)g, .tp = tp, .pp = pp,
                                                         .dp = dp, .ep = ep, .cp = cp, .zero = z,
                                                         .micro_batch_size = mbs_list[mi],
                                                         .checkpointing = ck,
                                                         .schedule = scheds[si][0],
                                                         .virtual_stages = scheds[si][1],
                                                         .sequence_parallel = seq == 1});
                    }
                }
            }
        }
        if (g > max_gpus / 2) break;
    }
    out->considered = (int)n;

    /* Structure and rules, then the probe: memory and the bound. */
    char lb[200], ex[320], buf[DT_ERR_FILE_MAX + DT_ERR_PATH_MAX + DT_ERR_MSG_MAX + 64];
    probe_pool P = {.sp = &sp, .file = file, .base_dir = base_dir, .opt = opt};
    P.jobs = dt_xcalloc(n + 1, sizeof *P.jobs);
    for (size_t i = 0; i < n; i++) {
        cand *c = &cs[i];
        if (!structural(&sp, &c->c, &rj)) c->state = 2;
        else P.jobs[P.n++].c = c;
    }
    pthread_mutex_init(&P.mu, NULL);
    probe_all(&P, opt->jobs > 0 ? opt->jobs : 1);
    pthread_mutex_destroy(&P.mu);
    for (size_t k = 0; k < P.n; k++) {
        cand *c = P.jobs[k].c;
        const run_probe pr = P.jobs[k].pr;
        out->memory_checked++;
        label(&c->c, lb, sizeof lb);
        if (P.jobs[k].rc != DT_OK) {
            const dt_error *e = P.jobs[k].err;
            char reason[96];
            snprintf(reason, sizeof reason, "invalid: %.80s", e->path[0] ? e->path : "scenario");
            snprintf(ex, sizeof ex, "%s: %.110s", lb, e->msg[0] ? e->msg : dt_error_format(e, buf, sizeof buf));
            reject(&rj, reason, ex);
            c->state = 2;
            cJSON_Delete(c->scenario); /* only plans that fit keep theirs, for the simulation */
            c->scenario = NULL;
            continue;
        }
        c->c.memory = pr.memory;
        c->c.lower_bound_s = pr.step_lower_bound_s;
        c->bound = bound_of(opt->objective, &pr, pr.step_lower_bound_s);
        /* an estimate below the bound (a hook's) orders no worse than the bound */
        c->estimate = bound_of(opt->objective, &pr, fmax(pr.step_estimate_s, pr.step_lower_bound_s));
        c->usd_per_hour = pr.cost_per_hour_total;
        c->tokens = pr.tokens_per_step;
        double limit = opt->memory_limit > 0 ? opt->memory_limit
                                             : (1 - headroom) * c->c.memory.capacity;
        if (!(c->c.memory.peak <= limit)) {
            char g1[32], g2[32];
            char g3[32];
            if (headroom > 0)
                snprintf(ex, sizeof ex, "%.180s: %s > %s (%s less %.3g %% headroom)", lb,
                         gib(c->c.memory.peak, g1, sizeof g1), gib(limit, g2, sizeof g2),
                         gib(c->c.memory.capacity, g3, sizeof g3), 100 * headroom);
            else
                snprintf(ex, sizeof ex, "%s: %s > %s", lb, gib(c->c.memory.peak, g1, sizeof g1),
                         gib(limit, g2, sizeof g2));
            reject(&rj, "does not fit in memory", ex);
            c->state = 2;
            cJSON_Delete(c->scenario);
            c->scenario = NULL;
            continue;
        }
        c->state = 1;
        out->fitting++;
    }
    for (size_t k = 0; k < P.n; k++) free(P.jobs[k].err);
    free(P.jobs);

    /* Branch and bound over the plans that fit, best estimate first: the top plans come early,
     * the threshold falls soon, and the rest are skipped by their bound or stopped at it. */
    cand **order = dt_xcalloc(n + 1, sizeof *order);
    size_t n_fit = 0;
    for (size_t i = 0; i < n; i++)
        if (cs[i].state == 1) order[n_fit++] = &cs[i];
    qsort(order, n_fit, sizeof *order, order_cmp);
    int top = opt->top > 0 ? opt->top : 5;
    bb B = {.opt = opt, .file = file, .base_dir = base_dir, .headroom = headroom, .top = top,
            .order = order, .n_fit = n_fit, .rj = &rj};
    B.kept = dt_xcalloc((size_t)top + 1, sizeof *B.kept);
    B.ok = dt_xcalloc(n_fit + 1, sizeof *B.ok);
    pthread_mutex_init(&B.mu, NULL);
    pthread_cond_init(&B.cv, NULL);
    bb_run(&B, opt->jobs > 0 ? opt->jobs : 1);
    pthread_cond_destroy(&B.cv);
    pthread_mutex_destroy(&B.mu);
    size_t simulated = B.chosen;
    out->stopped = B.stopped;
    double *kept = B.kept;
    plan_candidate *ok = B.ok;
    int n_ok = B.n_ok;
    if (opt->progress && n_fit) opt->progress(opt->progress_ctx, n_fit, n_fit);
    out->simulated = (int)simulated;
    const cand *c = NULL; /* the first plan skipped, the example */
    for (size_t i = 0; i < n_fit && !c; i++)
        if (order[i]->skipped) c = order[i];
    if (c) {
        label(&c->c, lb, sizeof lb);
        if (opt->objective == PLAN_TIME)
            snprintf(ex, sizeof ex, "%.200s: step >= %.6g s, the #%d plan takes %.6g s", lb,
                     c->bound, top, kept[top - 1]);
        else if (opt->objective == PLAN_COST)
            snprintf(ex, sizeof ex, "%.200s: $/step >= %.6g, the #%d plan costs %.6g", lb,
                     c->bound, top, kept[top - 1]);
        else
            snprintf(ex, sizeof ex, "%.200s: tokens/$ <= %.6g, the #%d plan gives %.6g", lb,
                     -c->bound, top, -kept[top - 1]);
        for (size_t i = 0; i < n_fit; i++)
            if (order[i]->skipped) reject(&rj, "not simulated: bound above the top plans", ex);
    }
    qsort(ok, (size_t)n_ok, sizeof *ok, cand_cmp);
    out->n_best = n_ok < top ? n_ok : top;
    out->best = ok;
    qsort(rj.v, (size_t)rj.n, sizeof *rj.v, rej_cmp);
    out->rejects = rj.v;
    out->n_rejects = rj.n;
    for (size_t i = 0; i < n; i++) cJSON_Delete(cs[i].scenario);
    free(cs);
    free(order);
    free(kept);
    return DT_OK;
}

void plan_result_free(plan_result *r)
{
    free(r->best);
    free(r->rejects);
    memset(r, 0, sizeof *r);
}
