/* test_plan.c - the capacity planning search.
 * Pins down: on a small constructed case (8 GPUs, closed-form memory and step time injected in
 * place of the simulator) the best plan is the brute-force optimum over the same space, with and
 * without dominance pruning; no proposed plan exceeds the GPU's memory or --memory-limit;
 * rejections are counted by reason with an example naming the numbers (heads 4 not divisible by
 * tp 8; X GiB > Y GiB); the counts add up to the candidates considered; cost and tokens/$
 * objectives rank by their own numbers; --max-gpus doubles the cluster; without a global_batch
 * every candidate gets the scenario's micro batch size and microbatch count per replica (its
 * microbatches, gradient_accumulation or pp), and the result says what was held fixed. The
 * branch and bound (simulations in the order of a scrambled estimate, skipped by the bound,
 * stopped at the top-th plan's score) returns the exhaustive search's top plans exactly, and the
 * same counts, rejects and examples on 1, 2, 3 or 8 threads with simulations finishing out of order.
 * Leaves free: the real memory and time models (tests of the workload module). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dtsim/json.h"
#include "dtsim/plan.h"
#include "testutil.h"

#define GiB (1024.0 * 1024 * 1024)

static const char *scenario_text =
    "{\"topology\": {\"generator\": \"switch\", \"gpus\": 8},"
    " \"model\": {\"kind\": \"transformer\", \"layers\": 6, \"heads\": 4},"
    " \"global_batch\": 16, \"parallel\": {\"tp\": 1}}";

typedef struct plan_in {
    int g, tp, pp, dp, zero, ck, mbs;
} plan_in;

static plan_in read_plan(const cJSON *s)
{
    const cJSON *p = cJSON_GetObjectItem(s, "parallel");
    plan_in x;
    x.g = (int)cJSON_GetObjectItem(cJSON_GetObjectItem(s, "topology"), "gpus")->valuedouble;
    x.tp = (int)cJSON_GetObjectItem(p, "tp")->valuedouble;
    x.pp = (int)cJSON_GetObjectItem(p, "pp")->valuedouble;
    x.dp = (int)cJSON_GetObjectItem(p, "dp")->valuedouble;
    x.zero = (int)cJSON_GetObjectItem(p, "zero")->valuedouble;
    x.mbs = (int)cJSON_GetObjectItem(p, "micro_batch_size")->valuedouble;
    const char *ck = cJSON_GetObjectItem(p, "activation_checkpointing")->valuestring;
    x.ck = !strcmp(ck, "none") ? 0 : !strcmp(ck, "selective") ? 1 : 2;
    ck_assert(cJSON_GetObjectItem(p, "microbatches") == NULL);
    return x;
}

/* Candidates the documented space holds on g GPUs for a model of `layers` layers: per (tp, pp)
 * pair with tp pp | g, the schedules (none at pp 1; 1F1B and interleaved with each v >= 2 whose
 * pp v divides the layers), sequence parallelism off/on when tp > 1, then n_mbs micro batch
 * sizes x 3 checkpointing levels x n_zero ZeRO stages. */
static int space_size(int g, int layers, int n_mbs, int n_zero)
{
    int n = 0;
    for (int tp = 1; tp <= g; tp++)
        for (int pp = 1; pp <= g; pp++) {
            if (g % (tp * pp)) continue;
            int scheds = 1;
            if (pp > 1)
                for (int v = 2; v <= layers / pp; v++) scheds += layers % (pp * v) == 0;
            n += scheds * (tp > 1 ? 2 : 1);
        }
    return n * n_mbs * 3 * n_zero;
}

/* Closed forms: model states shrink with tp*pp and the ZeRO stage, activations grow with the
 * micro batch and shrink with checkpointing; time pays for TP, the pipeline bubble, ZeRO and
 * recomputation. */
static double peak_of(plan_in x)
{
    static const double zf[] = {1, 0.5, 0.4, 0.3}, cf[] = {1, 0.5, 0.1};
    return 64 * GiB / (x.tp * x.pp) * zf[x.zero] + x.mbs * 8 * GiB / x.tp * cf[x.ck];
}

static double time_of(plan_in x)
{
    static const double cf[] = {1, 1.1, 1.33};
    double mb = 16.0 / (x.dp * x.mbs);
    double compute = 8.0 / x.g * cf[x.ck] * (1 + 0.2 / x.mbs);
    return compute * (1 + (x.pp - 1) / mb) + 0.05 * (x.tp - 1) + 0.01 * x.zero;
}

/* A valid lower bound of time_of: the compute and bubble alone (the TP and ZeRO terms are >= 0),
 * so the branch and bound has something to prune with. */
static double bound_of_plan(plan_in x)
{
    static const double cf[] = {1, 1.1, 1.33};
    double mb = 16.0 / (x.dp * x.mbs);
    return 8.0 / x.g * cf[x.ck] * (1 + 0.2 / x.mbs) * (1 + (x.pp - 1) / mb);
}

static int fake_probe(void *ctx, const cJSON *s, const char *file, const char *base_dir,
                      run_probe *out, dt_error *err)
{
    plan_in x = read_plan(s);
    memset(out, 0, sizeof *out);
    out->memory.peak = peak_of(x);
    out->memory.capacity = 40 * GiB;
    out->fits = out->memory.peak <= out->memory.capacity;
    out->step_lower_bound_s = bound_of_plan(x);
    /* The order of simulation: a deliberately poor estimate (the true time scrambled by up to
     * +80 % over the plans), since what the search returns must not depend on it. */
    out->step_estimate_s = time_of(x) * (1 + 0.2 * ((x.tp * 7 + x.pp * 3 + x.ck * 5 + x.mbs) % 5));
    out->cost_per_hour_total = x.g * 2.0;
    out->tokens_per_step = 16 * 1024;
    out->n_gpus = x.g;
    return DT_OK;
}

/* Honours the deadline as run_scenario does: a step longer than it stops there. */
static int fake_run(void *ctx, const cJSON *s, const char *file, const char *base_dir,
                    double deadline_s, run_result *out, dt_error *err)
{
    plan_in x = read_plan(s);
    memset(out, 0, sizeof *out);
    out->step_time_s = time_of(x);
    if (deadline_s > 0 && out->step_time_s > deadline_s) {
        out->stopped_at_deadline = true;
        out->step_time_s = deadline_s;
        return DT_OK;
    }
    out->memory.peak = peak_of(x);
    out->memory.capacity = 40 * GiB;
    out->fits = out->memory.peak <= out->memory.capacity;
    out->n_gpus = x.g;
    out->throughput.tokens_per_s = 16 * 1024 / out->step_time_s;
    out->cost_per_step_usd = out->step_time_s * x.g * 2.0 / 3600;
    return DT_OK;
}

/* fake_run, finishing out of order: each plan takes a few hundred microseconds of wall time
 * that have nothing to do with its place in the search */
static int shuffled_run(void *ctx, const cJSON *s, const char *file, const char *base_dir,
                        double deadline_s, run_result *out, dt_error *err)
{
    plan_in x = read_plan(s);
    struct timespec ts = {0, 100000L * ((x.tp * 5 + x.pp * 3 + x.ck * 7 + x.mbs + x.g) % 6)};
    nanosleep(&ts, NULL);
    return fake_run(ctx, s, file, base_dir, deadline_s, out, err);
}

/* The optimum by brute force over the documented space. */
static plan_in brute(int g, double limit, int objective)
{
    plan_in best = {0};
    double bs = INFINITY;
    for (int tp = 1; tp <= g; tp++)
        for (int pp = 1; pp <= g; pp++) {
            if (g % (tp * pp) || 6 % pp || 4 % tp) continue;
            for (int mbs = 1; mbs <= 8; mbs *= 2)
                for (int ck = 0; ck < 3; ck++)
                    for (int z = 0; z < 4; z++) {
                        if (z >= 2 && pp > 1) continue; /* the frameworks' rule */
                        plan_in x = {g, tp, pp, g / tp / pp, z, ck, mbs};
                        if (16 % (x.dp * mbs) || peak_of(x) > limit) continue;
                        double s = objective == 0 ? time_of(x) : time_of(x) * g;
                        if (s < bs) {
                            bs = s;
                            best = x;
                        }
                    }
        }
    return best;
}

static plan_result search(plan_options o)
{
    cJSON *j = NULL;
    dt_error e = {0};
    ck_assert_int_eq(js_parse_text(scenario_text, strlen(scenario_text), "p.json", &j, &e), DT_OK);
    o.probe = fake_probe;
    o.run = fake_run;
    plan_result r;
    ck_assert_msg(plan_search(j, "p.json", ".", &o, &r, &e) == DT_OK, "%s", e.msg);
    cJSON_Delete(j);
    return r;
}

static bool cand_differs(const plan_candidate *a, const plan_candidate *b)
{
    return a->gpus != b->gpus || a->tp != b->tp || a->pp != b->pp || a->zero != b->zero ||
           a->checkpointing != b->checkpointing || a->micro_batch_size != b->micro_batch_size ||
           a->schedule != b->schedule || a->virtual_stages != b->virtual_stages ||
           a->sequence_parallel != b->sequence_parallel;
}

static void assert_is(const plan_candidate *c, plan_in x)
{
    ck_assert_msg(c->gpus == x.g && c->tp == x.tp && c->pp == x.pp && c->zero == x.zero &&
                      c->checkpointing == x.ck && c->micro_batch_size == x.mbs,
                  "got g=%d tp=%d pp=%d zero=%d ck=%d mbs=%d, expected g=%d tp=%d pp=%d zero=%d "
                  "ck=%d mbs=%d",
                  c->gpus, c->tp, c->pp, c->zero, c->checkpointing, c->micro_batch_size, x.g, x.tp,
                  x.pp, x.zero, x.ck, x.mbs);
}

/* Without a global_batch: what each candidate is given, checked by the memory hook. */
typedef struct held_probe {
    int mbs, microbatches; /* expected in every candidate */
    int seen, wrong;
} held_probe;

static int held_memory(void *ctx, const cJSON *s, const char *file, const char *base_dir,
                       run_probe *out, dt_error *err)
{
    held_probe *hp = ctx;
    const cJSON *p = cJSON_GetObjectItem(s, "parallel");
    const cJSON *m = cJSON_GetObjectItem(p, "micro_batch_size");
    const cJSON *mb = cJSON_GetObjectItem(p, "microbatches");
    hp->seen++;
    if (!cJSON_IsNumber(m) || m->valuedouble != hp->mbs || !cJSON_IsNumber(mb) ||
        mb->valuedouble != hp->microbatches || cJSON_GetObjectItem(p, "gradient_accumulation"))
        hp->wrong++;
    memset(out, 0, sizeof *out);
    out->memory.peak = 1 * GiB;
    out->memory.capacity = 40 * GiB;
    out->fits = true;
    return DT_OK;
}

static int held_run(void *ctx, const cJSON *s, const char *file, const char *base_dir,
                    double deadline_s, run_result *out, dt_error *err)
{
    const cJSON *p = cJSON_GetObjectItem(s, "parallel");
    memset(out, 0, sizeof *out);
    out->step_time_s = 1.0 + cJSON_GetObjectItem(p, "tp")->valuedouble;
    out->memory.peak = 1 * GiB;
    out->memory.capacity = 40 * GiB;
    out->fits = true;
    return DT_OK;
}

/* No global_batch: the scenario's micro batch size and microbatches per DP replica (its own
 * microbatches, else gradient_accumulation, else its own pp) go into every candidate, and micro
 * batch size is not searched: (tp, pp) pairs of 8 GPUs (10) x 3 checkpointing x 4 ZeRO. */
START_TEST(no_global_batch_holds_mbs_and_microbatches)
{
    static const struct {
        const char *parallel;
        int mbs, microbatches;
    } cases[] = {
        {"{\"tp\": 1, \"pp\": 2, \"micro_batch_size\": 2}", 2, 2},
        {"{\"pp\": 3, \"gradient_accumulation\": 5}", 1, 5},
        {"{\"pp\": 2, \"microbatches\": 6, \"micro_batch_size\": 4}", 4, 6},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char text[512];
        snprintf(text, sizeof text,
                 "{\"topology\": {\"generator\": \"switch\", \"gpus\": 8},"
                 " \"model\": {\"kind\": \"transformer\", \"layers\": 24, \"heads\": 8},"
                 " \"parallel\": %s}", cases[k].parallel);
        cJSON *j = NULL;
        dt_error e = {0};
        ck_assert_int_eq(js_parse_text(text, strlen(text), "p.json", &j, &e), DT_OK);
        held_probe hp = {.mbs = cases[k].mbs, .microbatches = cases[k].microbatches};
        plan_options o = {.gpus = 8, .top = 3, .jobs = 1, .probe = held_memory,
                          .run = held_run, .ctx = &hp};
        plan_result r;
        ck_assert_msg(plan_search(j, "p.json", ".", &o, &r, &e) == DT_OK, "%s", e.msg);
        ck_assert_int_eq(r.considered, space_size(8, 24, 1, 4));
        ck_assert_int_eq(hp.seen, r.memory_checked);
        ck_assert_int_gt(hp.seen, 0);
        ck_assert_msg(hp.wrong == 0, "case %zu: %d of %d candidates lack mbs %d / microbatches %d",
                      k, hp.wrong, hp.seen, hp.mbs, hp.microbatches);
        ck_assert(r.global_batch == 0);
        ck_assert_int_eq(r.held_micro_batch_size, cases[k].mbs);
        ck_assert_int_eq(r.held_microbatches, cases[k].microbatches);
        for (int i = 0; i < r.n_best; i++)
            ck_assert_int_eq(r.best[i].micro_batch_size, cases[k].mbs);
        plan_result_free(&r);
        cJSON_Delete(j);
    }
    /* With a global_batch it is the batch that is held, and reported. */
    plan_options o = {.gpus = 8, .top = 3, .jobs = 1};
    plan_result r = search(o);
    ck_assert(r.global_batch == 16);
    ck_assert_int_eq(r.held_micro_batch_size, 0);
    ck_assert_int_eq(r.held_microbatches, 0);
    plan_result_free(&r);
}
END_TEST

static const plan_reject *find(const plan_result *r, const char *reason)
{
    for (int i = 0; i < r->n_rejects; i++)
        if (!strcmp(r->rejects[i].reason, reason)) return &r->rejects[i];
    return NULL;
}

START_TEST(finds_the_optimum)
{
    plan_result r = search((plan_options){.gpus = 8, .top = 3, .jobs = 2});
    ck_assert_int_ge(r.n_best, 1);
    /* the default headroom keeps 10 % of the 40 GiB free */
    assert_is(&r.best[0], brute(8, 36 * GiB, 0));
    for (int i = 0; i < r.n_best; i++) {
        ck_assert(r.best[i].result.memory.peak <= 36 * GiB);
        if (i) ck_assert(r.best[i].score >= r.best[i - 1].score);
    }
    const plan_reject *h = find(&r, "indivisible: heads by tp");
    ck_assert(h && strstr(h->example, "heads 4 not divisible by tp 8"));
    const plan_reject *l = find(&r, "indivisible: layers by pp");
    ck_assert(l && strstr(l->example, "layers 6 not divisible by pp 4"));
    const plan_reject *m = find(&r, "does not fit in memory");
    ck_assert_msg(m && strstr(m->example, " GiB > 36.0 GiB (40.0 GiB less 10 % headroom)"), "%s",
                  m ? m->example : "none");
    const plan_reject *b = find(&r, "not simulated: bound above the top plans");
    ck_assert_msg(b && strstr(b->example, "step >= "), "%s", b ? b->example : "none");

    /* Brute force (every plan that fits simulated): the same best plans, more simulations. */
    plan_result x = search((plan_options){.gpus = 8, .top = 3, .exhaustive = true});
    assert_is(&x.best[0], brute(8, 36 * GiB, 0));
    ck_assert(find(&x, "not simulated: bound above the top plans") == NULL);
    ck_assert_int_eq(x.simulated, x.fitting);
    ck_assert_int_lt(r.simulated, x.simulated);
    ck_assert_int_eq(x.n_best, r.n_best);
    for (int i = 0; i < r.n_best; i++) {
        ck_assert(x.best[i].score == r.best[i].score);
        ck_assert(!cand_differs(&x.best[i], &r.best[i]));
    }
    plan_result_free(&r);
    plan_result_free(&x);

    /* The same for every objective and top, on 8 to 32 GPUs; some simulations are stopped once
     * slower than the top plans (early termination), none in the brute force, and the stopped
     * ones are counted among the simulated and as rejected. */
    int stopped = 0;
    for (int o = 0; o < 3; o++)
        for (int top = 1; top <= 7; top += 3) {
            plan_options po = {.gpus = 8, .max_gpus = 32, .objective = (plan_objective)o,
                               .top = top, .jobs = 2};
            plan_result a = search(po);
            po.exhaustive = true;
            plan_result e = search(po);
            ck_assert_int_eq(a.n_best, e.n_best);
            for (int i = 0; i < a.n_best; i++)
                ck_assert_msg(a.best[i].score == e.best[i].score && !cand_differs(&a.best[i], &e.best[i]),
                              "objective %d top %d: #%d differs", o, top, i);
            ck_assert_int_le(a.simulated, e.simulated);
            ck_assert_int_eq(e.stopped, 0);
            const plan_reject *st = find(&a, "simulation stopped: slower than the top plans");
            ck_assert_int_eq(st ? st->count : 0, a.stopped);
            ck_assert(!st || strstr(st->example, "s of simulated time, the #"));
            stopped += a.stopped;
            plan_result_free(&a);
            plan_result_free(&e);
        }
    ck_assert_int_gt(stopped, 0);
}
END_TEST

/* Nothing in the result depends on the thread count or on which simulation finishes first:
 * the k-th simulation is judged on the first k - PLAN_WINDOW results, whenever they arrive. */
START_TEST(threads_change_nothing)
{
    for (int o = 0; o < 3; o++) {
        plan_result ref = {0};
        static const int job_counts[] = {1, 2, 3, 8};
        for (int q = 0; q < 4; q++) {
            int jobs = job_counts[q];
            plan_options po = {.gpus = 8, .max_gpus = 32, .objective = (plan_objective)o, .top = 2, .jobs = jobs};
            cJSON *j = NULL;
            dt_error e = {0};
            ck_assert_int_eq(js_parse_text(scenario_text, strlen(scenario_text), "p.json", &j, &e), DT_OK);
            po.probe = fake_probe;
            po.run = jobs == 1 ? fake_run : shuffled_run;
            plan_result r;
            ck_assert_int_eq(plan_search(j, "p.json", ".", &po, &r, &e), DT_OK);
            cJSON_Delete(j);
            if (jobs == 1) {
                ref = r;
                ck_assert_int_gt(r.stopped, 0); /* the window is exercised: some stop, */
                ck_assert(find(&r, "not simulated: bound above the top plans")); /* some are skipped */
                continue;
            }
            ck_assert_int_eq(r.simulated, ref.simulated);
            ck_assert_int_eq(r.stopped, ref.stopped);
            ck_assert_int_eq(r.n_best, ref.n_best);
            for (int i = 0; i < r.n_best; i++)
                ck_assert(r.best[i].score == ref.best[i].score && !cand_differs(&r.best[i], &ref.best[i]));
            ck_assert_int_eq(r.n_rejects, ref.n_rejects);
            for (int i = 0; i < r.n_rejects; i++) {
                ck_assert_str_eq(r.rejects[i].reason, ref.rejects[i].reason);
                ck_assert_int_eq(r.rejects[i].count, ref.rejects[i].count);
                ck_assert_str_eq(r.rejects[i].example, ref.rejects[i].example);
            }
            plan_result_free(&r);
        }
        plan_result_free(&ref);
    }
}
END_TEST

START_TEST(counts_add_up)
{
    plan_result r = search((plan_options){.gpus = 8, .top = 1000});
    int rejected = 0;
    for (int i = 0; i < r.n_rejects; i++) rejected += r.rejects[i].count;
    /* (tp, pp) pairs with tp*pp | 8 x schedules x sequence parallelism x 4 micro batches x 3
     * checkpointing x 4 ZeRO: 21 x 48 */
    ck_assert_int_eq(r.considered, space_size(8, 6, 4, 4));
    ck_assert_int_eq(r.considered, 21 * 48);
    ck_assert_int_eq(rejected + r.n_best, r.considered);
    plan_result_free(&r);
}
END_TEST

START_TEST(memory_limit_and_objectives)
{
    plan_result r = search((plan_options){.gpus = 8, .memory_limit = 12 * GiB, .top = 50});
    ck_assert_int_ge(r.n_best, 1);
    assert_is(&r.best[0], brute(8, 12 * GiB, 0));
    for (int i = 0; i < r.n_best; i++) ck_assert(r.best[i].result.memory.peak <= 12 * GiB);
    const plan_reject *m = find(&r, "does not fit in memory");
    ck_assert(m && strstr(m->example, " GiB > 12.0 GiB"));
    plan_result_free(&r);

    /* Cost per step = time x GPUs x price: on 8..32 GPUs, cost prefers 8, time prefers 32. */
    plan_result c = search((plan_options){.gpus = 8, .max_gpus = 32, .objective = PLAN_COST});
    ck_assert_int_eq(c.best[0].gpus, 8);
    assert_is(&c.best[0], brute(8, 36 * GiB, 1));
    plan_result_free(&c);
    plan_result t = search((plan_options){.gpus = 8, .max_gpus = 32, .objective = PLAN_TIME});
    plan_in b = brute(8, 36 * GiB, 0);
    for (int g = 16; g <= 32; g *= 2) {
        plan_in o = brute(g, 36 * GiB, 0);
        if (time_of(o) < time_of(b)) b = o;
    }
    ck_assert_int_eq(b.g, 32);
    assert_is(&t.best[0], b);
    plan_result_free(&t);
}
END_TEST

/* The headroom: none, 10 % (default), 25 %, each the brute-force optimum under (1 - h) x 40 GiB;
 * no plan with ZeRO-2/3 and pp > 1 is proposed, and the rule that refused them is named. */
START_TEST(headroom_and_rules)
{
    static const double hs[] = {0, 0.25};
    for (int i = 0; i < 2; i++) {
        plan_result r = search((plan_options){.gpus = 8, .top = 1000, .have_headroom = true,
                                              .headroom = hs[i]});
        ck_assert(r.headroom == hs[i]);
        assert_is(&r.best[0], brute(8, (1 - hs[i]) * 40 * GiB, 0));
        for (int k = 0; k < r.n_best; k++) {
            ck_assert(r.best[k].result.memory.peak <= (1 - hs[i]) * 40 * GiB);
            ck_assert(!(r.best[k].zero >= 2 && r.best[k].pp > 1));
        }
        const plan_reject *x = find(&r, "rule: no ZeRO-2/3 with pp > 1");
        ck_assert_msg(x && strstr(x->example, "refuse ZeRO-2/3 with pipeline parallelism"), "%s",
                      x ? x->example : "none");
        plan_result_free(&r);
    }
    cJSON *j = NULL;
    dt_error e = {0};
    ck_assert_int_eq(js_parse_text(scenario_text, strlen(scenario_text), "p.json", &j, &e), DT_OK);
    plan_options o = {.gpus = 8, .have_headroom = true, .headroom = 0.95, .probe = fake_probe,
                      .run = fake_run};
    plan_result r;
    ck_assert_int_eq(plan_search(j, "p.json", ".", &o, &r, &e), DT_EINPUT);
    ck_assert_str_eq(e.file, "--headroom");
    cJSON_Delete(j);
}
END_TEST

START_TEST(fixed_topology_cannot_grow)
{
    const char *text = "{\"topology\": \"cluster.json\", \"model\": {\"layers\": 6}}";
    cJSON *j = NULL;
    dt_error e = {0};
    ck_assert_int_eq(js_parse_text(text, strlen(text), "p.json", &j, &e), DT_OK);
    plan_options o = {.gpus = 8, .max_gpus = 16, .probe = fake_probe, .run = fake_run};
    plan_result r;
    ck_assert_int_eq(plan_search(j, "p.json", ".", &o, &r, &e), DT_EINPUT);
    ck_assert_str_eq(e.path, "topology");
    ck_assert_msg(strstr(e.msg, "generated topology"), "%s", e.msg);
    o.max_gpus = 4;
    ck_assert_int_eq(plan_search(j, "p.json", ".", &o, &r, &e), DT_EINPUT);
    ck_assert_str_eq(e.file, "--max-gpus");
    cJSON_Delete(j);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("plan");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, finds_the_optimum);
    tcase_add_test(tc, threads_change_nothing);
    tcase_add_test(tc, counts_add_up);
    tcase_add_test(tc, memory_limit_and_objectives);
    tcase_add_test(tc, fixed_topology_cannot_grow);
    tcase_add_test(tc, headroom_and_rules);
    tcase_add_test(tc, no_global_batch_holds_mbs_and_microbatches);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return dt_run_suite(suite()); }
