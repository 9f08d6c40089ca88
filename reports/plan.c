/* plan.c - capacity planning search (see plan.h for the space and the pruning).
 *
 * Cost: the space is (divisor pairs of G) x 4 micro batch sizes x 3 checkpointing levels x 4
 * ZeRO stages per GPU count - a few thousand candidates for G = 1024. Structural checks cost
 * nothing, run_memory() microseconds, a simulation milliseconds to seconds, so the expensive
 * step only sees candidates that fit and are not dominated, spread over `jobs` threads.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtsim/json.h"
#include "dtsim/plan.h"
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

typedef struct cand {
    plan_candidate c;
    int state;            /* 0 pending, 1 fits (simulate), 2 rejected, 3 simulated ok */
    cJSON *scenario;      /* built for the memory check, kept for the simulation */
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
    snprintf(buf, n, "gpus=%d tp=%d pp=%d dp=%d zero=%d ckpt=%s mbs=%d", c->gpus, c->tp, c->pp,
             c->dp, c->zero, plan_checkpointing_name(c->checkpointing), c->micro_batch_size);
}

static double get_num(const cJSON *obj, const char *key, double dflt)
{
    const cJSON *v = cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

static void set_num(cJSON *obj, const char *key, double v)
{
    if (cJSON_GetObjectItemCaseSensitive(obj, key))
        cJSON_ReplaceItemInObjectCaseSensitive(obj, key, cJSON_CreateNumber(v));
    else
        cJSON_AddNumberToObject(obj, key, v);
}

static void set_str(cJSON *obj, const char *key, const char *v)
{
    if (cJSON_GetObjectItemCaseSensitive(obj, key))
        cJSON_ReplaceItemInObjectCaseSensitive(obj, key, cJSON_CreateString(v));
    else
        cJSON_AddStringToObject(obj, key, v);
}

typedef enum fw_kind { FW_GENERIC, FW_MEGATRON, FW_FSDP } fw_kind;

typedef struct space {
    const cJSON *scenario;
    fw_kind framework;    /* the scenario's "framework" preset: whose rules apply */
    double layers, heads, kv_heads, global_batch, virtual_stages;
    bool generated, has_compression, interleaved;
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
    /* the scenario's stage_layers fit its own pp only: candidates get the default split */
    const cJSON *sl = cJSON_GetObjectItemCaseSensitive(par, "stage_layers");
    if (sl && cJSON_GetArraySize(sl) != c->pp * (c->pp > 1 ? (int)sp->virtual_stages : 1))
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
    double stages = c->pp * (sp->interleaved && c->pp > 1 ? sp->virtual_stages : 1);
    if (sp->layers > 0 && fmod(sp->layers, stages) != 0) {
        snprintf(ex, sizeof ex, "%s: layers %g not divisible by pp %d%s", lb, sp->layers, c->pp,
                 stages != c->pp ? " x virtual stages" : "");
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
    if (sp->global_batch > 0 && fmod(sp->global_batch, (double)c->dp * c->micro_batch_size) != 0) {
        snprintf(ex, sizeof ex, "%s: global batch %g not divisible by dp %d x micro batch %d", lb,
                 sp->global_batch, c->dp, c->micro_batch_size);
        reject(rj, "indivisible: global batch by dp x micro batch", ex);
        return false;
    }
    return rules(sp, c, lb, rj);
}

static int default_memory(void *ctx, const cJSON *s, const char *file, const char *base_dir,
                          struct run_memory *out, bool *fits, dt_error *err)
{
    return run_memory(s, file, base_dir, out, fits, err);
}

static int default_run(void *ctx, const cJSON *s, const char *file, const char *base_dir,
                       run_result *out, dt_error *err)
{
    run_options o;
    memset(&o, 0, sizeof o);
    return run_scenario(s, file, base_dir, &o, out, err);
}

typedef struct sim_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;  /* signalled as simulations finish (progress) */
    cand **todo;
    size_t n, next, done;
    const plan_options *opt;
    const char *file, *base_dir;
    dt_error *errs; /* per todo */
    int *rcs;
} sim_pool;

static void *sim_worker(void *arg)
{
    sim_pool *p = arg;
    plan_run_fn run = p->opt->run ? p->opt->run : default_run;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        size_t k = p->next < p->n ? p->next++ : p->n;
        pthread_mutex_unlock(&p->mu);
        if (k == p->n) return NULL;
        cand *c = p->todo[k];
        dt_error_clear(&p->errs[k]);
        memset(&c->c.result, 0, sizeof c->c.result);
        p->rcs[k] = run(p->opt->ctx, c->scenario, p->file, p->base_dir, &c->c.result, &p->errs[k]);
        run_result_free(&c->c.result); /* no timeline was asked for; keep the numbers */
        pthread_mutex_lock(&p->mu);
        p->done++;
        pthread_cond_signal(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
}

static int cand_cmp(const void *pa, const void *pb)
{
    const plan_candidate *a = pa, *b = pb;
    if (a->score != b->score) return a->score < b->score ? -1 : 1;
    /* Ties: fewer GPUs, then less model parallelism, then less memory saving. */
    int ka[] = {a->gpus, a->tp, a->pp, a->zero, a->checkpointing, -a->micro_batch_size};
    int kb[] = {b->gpus, b->tp, b->pp, b->zero, b->checkpointing, -b->micro_batch_size};
    for (int i = 0; i < 6; i++)
        if (ka[i] != kb[i]) return ka[i] < kb[i] ? -1 : 1;
    return 0;
}

static int rej_cmp(const void *pa, const void *pb)
{
    const plan_reject *a = pa, *b = pb;
    if (a->count != b->count) return a->count > b->count ? -1 : 1;
    return strcmp(a->reason, b->reason);
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
    sp.global_batch = get_num(scenario, "global_batch", 0);
    sp.virtual_stages = get_num(par, "virtual_stages", 1);
    const cJSON *sched = cJSON_IsObject(par) ? cJSON_GetObjectItemCaseSensitive(par, "schedule") : NULL;
    sp.interleaved = cJSON_IsString(sched) && !strcmp(sched->valuestring, "interleaved");
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

    cand *cs = NULL;
    size_t n = 0, cap = 0;
    rejects rj = {0};
    for (long g = opt->gpus; g <= max_gpus; g *= 2) {
        for (int tp = 1; tp <= g; tp++) {
            if (g % tp) continue;
            for (int pp = 1; pp <= g / tp; pp++) {
                if ((g / tp) % pp) continue;
                for (int mi = 0; mi < n_mbs; mi++)
                    for (int ck = 0; ck < 3; ck++)
                        for (int z = 0; z < n_zero; z++) {
                            if (n == cap) cs = dt_xrealloc(cs, (cap = cap ? 2 * cap : 256) * sizeof *cs);
                            cand *c = &cs[n++];
                            memset(c, 0, sizeof *c);
                            c->c = (plan_candidate){.gpus = (int)g, .tp = tp, .pp = pp,
                                                    .dp = (int)(g / tp / pp), .zero = z,
                                                    .micro_batch_size = mbs_list[mi],
                                                    .checkpointing = ck};
                        }
            }
        }
        if (g > max_gpus / 2) break;
    }
    out->considered = (int)n;

    /* Structure, then memory. */
    plan_memory_fn memfn = opt->memory ? opt->memory : default_memory;
    char lb[200], ex[320], buf[DT_ERR_FILE_MAX + DT_ERR_PATH_MAX + DT_ERR_MSG_MAX + 64];
    for (size_t i = 0; i < n; i++) {
        cand *c = &cs[i];
        if (!structural(&sp, &c->c, &rj)) {
            c->state = 2;
            continue;
        }
        c->scenario = build(&sp, &c->c);
        dt_error e;
        dt_error_clear(&e);
        bool fits = false;
        out->memory_checked++;
        label(&c->c, lb, sizeof lb);
        if (memfn(opt->ctx, c->scenario, file, base_dir, &c->c.memory, &fits, &e) != DT_OK) {
            char reason[96];
            snprintf(reason, sizeof reason, "invalid: %.80s", e.path[0] ? e.path : "scenario");
            snprintf(ex, sizeof ex, "%s: %.110s", lb, e.msg[0] ? e.msg : dt_error_format(&e, buf, sizeof buf));
            reject(&rj, reason, ex);
            c->state = 2;
            continue;
        }
        double limit = opt->memory_limit > 0 ? opt->memory_limit
                                             : (1 - headroom) * c->c.memory.capacity;
        fits = c->c.memory.peak <= limit;
        if (!fits) {
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
            continue;
        }
        c->state = 1;
        out->fitting++;
    }
    /* Dominance: ZeRO is the innermost loop, ascending, so the first fitting stage of each
     * (G, tp, pp, mbs, ckpt) group is the one to simulate. */
    if (!opt->exhaustive) {
        for (size_t i = 0; i < n; i += (size_t)n_zero) {
            bool kept = false;
            for (int z = 0; z < n_zero; z++) {
                cand *c = &cs[i + (size_t)z];
                if (c->state != 1) continue;
                if (!kept) {
                    kept = true;
                    continue;
                }
                label(&c->c, lb, sizeof lb);
                for (int k = 0; k < z; k++)
                    if (cs[i + (size_t)k].state == 1) {
                        snprintf(ex, sizeof ex, "%s: zero=%d already fits", lb, k);
                        break;
                    }
                reject(&rj, "not simulated: a lower ZeRO stage fits", ex);
                c->state = 2;
            }
        }
    }
    /* Simulate the survivors. */
    sim_pool p = {.opt = opt, .file = file, .base_dir = base_dir};
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.cv, NULL);
    p.todo = dt_xcalloc(n + 1, sizeof *p.todo);
    for (size_t i = 0; i < n; i++)
        if (cs[i].state == 1) p.todo[p.n++] = &cs[i];
    p.errs = dt_xcalloc(p.n + 1, sizeof *p.errs);
    p.rcs = dt_xcalloc(p.n + 1, sizeof *p.rcs);
    int jobs = opt->jobs > 0 ? opt->jobs : 1;
    if ((size_t)jobs > p.n) jobs = (int)(p.n ? p.n : 1);
    pthread_t *th = dt_xcalloc((size_t)jobs, sizeof *th);
    int started = 0;
    for (int i = 0; i < jobs; i++, started++)
        if (pthread_create(&th[i], NULL, sim_worker, &p) != 0) break;
    if (started == 0) sim_worker(&p);
    if (opt->progress) {
        /* The calling thread reports progress while the workers simulate. */
        pthread_mutex_lock(&p.mu);
        size_t shown = (size_t)-1;
        while (p.done < p.n) {
            if (p.done != shown) {
                shown = p.done;
                pthread_mutex_unlock(&p.mu);
                opt->progress(opt->progress_ctx, shown, p.n);
                pthread_mutex_lock(&p.mu);
                continue;
            }
            pthread_cond_wait(&p.cv, &p.mu);
        }
        pthread_mutex_unlock(&p.mu);
        opt->progress(opt->progress_ctx, p.n, p.n);
    }
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    free(th);
    out->simulated = (int)p.n;
    plan_candidate *ok = dt_xcalloc(p.n + 1, sizeof *ok);
    int n_ok = 0;
    for (size_t k = 0; k < p.n; k++) {
        cand *c = p.todo[k];
        label(&c->c, lb, sizeof lb);
        if (p.rcs[k] != DT_OK) {
            char reason[96];
            snprintf(reason, sizeof reason, "invalid: %.80s", p.errs[k].path[0] ? p.errs[k].path : "scenario");
            snprintf(ex, sizeof ex, "%s: %.110s", lb, p.errs[k].msg);
            reject(&rj, reason, ex);
            continue;
        }
        const run_result *r = &c->c.result;
        double limit = opt->memory_limit > 0 ? opt->memory_limit
                                             : (1 - headroom) * r->memory.capacity;
        if (r->memory.peak > limit) {
            char g1[32], g2[32];
            snprintf(ex, sizeof ex, "%s: %s > %s (simulated peak)", lb,
                     gib(r->memory.peak, g1, sizeof g1), gib(limit, g2, sizeof g2));
            reject(&rj, "does not fit in memory", ex);
            continue;
        }
        double tokens_per_usd = r->cost_per_step_usd > 0
                                    ? r->throughput.tokens_per_s * r->step_time_s / r->cost_per_step_usd
                                    : 0;
        c->c.score = opt->objective == PLAN_TIME   ? r->step_time_s
                     : opt->objective == PLAN_COST ? r->cost_per_step_usd
                                                   : -tokens_per_usd;
        ok[n_ok++] = c->c;
    }
    qsort(ok, (size_t)n_ok, sizeof *ok, cand_cmp);
    int top = opt->top > 0 ? opt->top : 5;
    out->n_best = n_ok < top ? n_ok : top;
    out->best = ok;
    qsort(rj.v, (size_t)rj.n, sizeof *rj.v, rej_cmp);
    out->rejects = rj.v;
    out->n_rejects = rj.n;
    for (size_t i = 0; i < n; i++) cJSON_Delete(cs[i].scenario);
    free(cs);
    free(p.todo);
    free(p.errs);
    free(p.rcs);
    pthread_cond_destroy(&p.cv);
    pthread_mutex_destroy(&p.mu);
    return DT_OK;
}

void plan_result_free(plan_result *r)
{
    free(r->best);
    free(r->rejects);
    memset(r, 0, sizeof *r);
}
