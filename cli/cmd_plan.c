/* cmd_plan.c - `dtsim plan`: search parallel plans that fit, best first. */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "dtsim/json.h"
#include "dtsim/plan.h"
#include "dtsim/units.h"
#include "dtsim/workload.h"

/* the help's "at most 5 simulations run at once" */
_Static_assert(PLAN_WINDOW + 1 == 5, "update --jobs in help()");

static void help(FILE *out)
{
    fprintf(out,
            "usage: dtsim plan SCENARIO --gpus N [--max-gpus M] [--objective time|cost|tokens-per-dollar]\n"
            "                  [--memory-limit SIZE | --headroom F] [--top K] [--jobs J] [--exhaustive] [--json]\n"
            "\n"
            "Search tensor/pipeline/data parallel sizes, pipeline schedule (1F1B, interleaved with every\n"
            "valid number of chunks), sequence parallelism, ZeRO stage, micro batch size and activation\n"
            "checkpointing for the scenario's model on N GPUs (and 2N, 4N, ... up to M with a\n"
            "generated topology). Plans that cannot exist (layers not divisible by pp, heads by tp,\n"
            "global batch by dp x micro batch) or do not fit in memory (checked without simulating)\n"
            "are rejected; the rest are simulated best estimate first, skipping each plan whose\n"
            "closed-form lower bound cannot beat the K best so far and stopping a simulation once\n"
            "its step is slower than them. Prints the best K with step time,\n"
            "throughput, memory, $/step, $/M tokens and tokens/$, and the rejected plans counted by\n"
            "reason (frameworks' rules included: no ZeRO-2/3 with pp > 1).\n"
            "\n"
            "  --gpus N          cluster size to plan for (required)\n"
            "  --max-gpus M      also try 2N, 4N, ... <= M GPUs\n"
            "  --objective O     time (default): shortest step; cost: cheapest step ($/GPU-hour\n"
            "                    of the GPU spec); tokens-per-dollar: most tokens per dollar\n"
            "  --memory-limit S  usable memory per GPU, e.g. \"72 GiB\" (default: the GPU's capacity\n"
            "                    less the headroom)\n"
            "  --headroom F      fraction of each GPU's memory kept free, 0 to 0.9, or a percentage\n"
            "                    such as 15%% (default: options.memory_headroom, else 10%%)\n"
            "  --top K           plans to show (default 5)\n"
            "  --jobs J          threads for the probes and simulations (default: online CPUs; at\n"
            "                    most 5 simulations run at once; nothing printed depends on J)\n"
            "  --exhaustive      simulate every plan that fits (brute force: the same best plans,\n"
            "                    slower)\n"
            "  --json            one JSON document on stdout\n");
}

static void fmt_time(char *b, size_t n, double s)
{
    if (s >= 1)
        snprintf(b, n, "%.3f s", s);
    else if (s >= 1e-3)
        snprintf(b, n, "%.3f ms", s * 1e3);
    else
        snprintf(b, n, "%.3f us", s * 1e6);
}

static void fmt_rate(char *b, size_t n, double v)
{
    if (v >= 1e9)
        snprintf(b, n, "%.2f G", v / 1e9);
    else if (v >= 1e6)
        snprintf(b, n, "%.2f M", v / 1e6);
    else if (v >= 1e3)
        snprintf(b, n, "%.2f k", v / 1e3);
    else
        snprintf(b, n, "%.2f", v);
}

static int parse_int(const char *flag, const char *s, int lo, int hi, int *out)
{
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "dtsim plan: %s expects an integer from %d to %d, found \"%s\"\n", flag, lo,
                hi, s);
        return CLI_USAGE;
    }
    *out = (int)v;
    return CLI_OK;
}

/* "simulating 123/869 plans" on stderr, redrawn in place (only when stderr is a terminal). */
static void draw(void *ctx, size_t done, size_t total)
{
    fprintf(stderr, "\rsimulating %zu/%zu plans", done, total);
    if (done == total) fputs("\r\033[K", stderr);
    fflush(stderr);
}

static cJSON *candidate_json(const plan_candidate *c)
{
    const run_result *r = &c->result;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "gpus", c->gpus);
    cJSON_AddNumberToObject(o, "tp", c->tp);
    cJSON_AddNumberToObject(o, "pp", c->pp);
    cJSON_AddNumberToObject(o, "dp", c->dp);
    if (c->ep > 1 || c->cp > 1) { /* only where searched: dense plans keep their keys */
        cJSON_AddNumberToObject(o, "ep", c->ep);
        cJSON_AddNumberToObject(o, "cp", c->cp);
    }
    cJSON_AddNumberToObject(o, "zero", c->zero);
    cJSON_AddStringToObject(o, "activation_checkpointing", plan_checkpointing_name(c->checkpointing));
    cJSON_AddNumberToObject(o, "micro_batch_size", c->micro_batch_size);
    cJSON_AddStringToObject(o, "schedule", plan_schedule_name(c));
    cJSON_AddNumberToObject(o, "virtual_stages", c->virtual_stages);
    cJSON_AddBoolToObject(o, "sequence_parallel", c->sequence_parallel);
    cJSON_AddNumberToObject(o, "step_time_s", r->step_time_s);
    cJSON_AddNumberToObject(o, "step_lower_bound_s", c->lower_bound_s);
    cJSON_AddNumberToObject(o, "tokens_per_s", r->throughput.tokens_per_s);
    cJSON_AddNumberToObject(o, "samples_per_s", r->throughput.samples_per_s);
    cJSON_AddNumberToObject(o, "mfu", r->throughput.mfu);
    cJSON_AddNumberToObject(o, "mem_peak_bytes", r->memory.peak);
    cJSON_AddNumberToObject(o, "mem_capacity_bytes", r->memory.capacity);
    cJSON_AddNumberToObject(o, "cost_per_step_usd", r->cost_per_step_usd);
    cJSON_AddNumberToObject(o, "usd_per_hour",
                            r->step_time_s > 0 ? r->cost_per_step_usd / r->step_time_s * 3600 : 0);
    double tok = r->throughput.tokens_per_s * r->step_time_s; /* tokens the update used */
    cJSON_AddNumberToObject(o, "usd_per_mtokens", tok > 0 ? r->cost_per_step_usd / tok * 1e6 : 0);
    cJSON_AddNumberToObject(o, "tokens_per_usd",
                            r->cost_per_step_usd > 0 ? tok / r->cost_per_step_usd : 0);
    return o;
}

static int run(int argc, char **argv)
{
    const char *file = NULL;
    bool json = false;
    plan_options opt = {.top = 5, .jobs = (int)sysconf(_SC_NPROCESSORS_ONLN)};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has = i + 1 < argc;
        int rc = CLI_OK;
        if (!strcmp(a, "--gpus") && has) {
            rc = parse_int(a, argv[++i], 1, 1 << 22, &opt.gpus);
        } else if (!strcmp(a, "--max-gpus") && has) {
            rc = parse_int(a, argv[++i], 1, 1 << 22, &opt.max_gpus);
        } else if (!strcmp(a, "--top") && has) {
            rc = parse_int(a, argv[++i], 1, 100000, &opt.top);
        } else if (!strcmp(a, "--jobs") && has) {
            rc = parse_int(a, argv[++i], 1, 4096, &opt.jobs);
        } else if (!strcmp(a, "--objective") && has) {
            if (plan_objective_parse(argv[++i], &opt.objective) != DT_OK) {
                fprintf(stderr, "dtsim plan: --objective expects time, cost or tokens-per-dollar, "
                                "found \"%s\"\n", argv[i]);
                return CLI_USAGE;
            }
        } else if (!strcmp(a, "--memory-limit") && has) {
            char why[256];
            if (unit_parse_size(argv[++i], &opt.memory_limit, why, sizeof why) != DT_OK ||
                opt.memory_limit <= 0) {
                fprintf(stderr, "dtsim plan: --memory-limit: %s\n",
                        opt.memory_limit <= 0 ? "expected a size > 0 such as \"72 GiB\"" : why);
                return CLI_USAGE;
            }
        } else if (!strcmp(a, "--headroom") && has) {
            const char *v = argv[++i];
            char *end = NULL;
            double h = strtod(v, &end);
            if (end != v && *end == '%' && !end[1]) {
                h /= 100;
                end++;
            }
            if (end == v || *end || !(h >= 0 && h <= 0.9)) {
                fprintf(stderr, "dtsim plan: --headroom expects a fraction from 0 to 0.9 or a "
                                "percentage such as 15%%, found \"%s\"\n", v);
                return CLI_USAGE;
            }
            opt.headroom = h;
            opt.have_headroom = true;
        } else if (!strcmp(a, "--exhaustive")) {
            opt.exhaustive = true;
        } else if (!strcmp(a, "--json")) {
            json = true;
        } else if (!strcmp(a, "--gpus") || !strcmp(a, "--max-gpus") || !strcmp(a, "--top") || !strcmp(a, "--jobs") || !strcmp(a, "--objective") || !strcmp(a, "--memory-limit") || !strcmp(a, "--headroom")) {
            fprintf(stderr, "dtsim plan: %s needs a value (see dtsim plan --help)\n", a);
            return CLI_USAGE;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "dtsim plan: unknown option %s (see dtsim plan --help)\n", a);
            return CLI_USAGE;
        } else if (!file) {
            file = a;
        } else {
            fprintf(stderr, "dtsim plan: one scenario only\n");
            return CLI_USAGE;
        }
        if (rc) return rc;
    }
    if (opt.have_headroom && opt.memory_limit > 0) {
        fprintf(stderr, "dtsim plan: --memory-limit is the usable memory itself; it takes no "
                        "--headroom (give one or the other)\n");
        return CLI_USAGE;
    }
    if (!file || opt.gpus == 0) {
        fprintf(stderr, "dtsim plan: expected SCENARIO and --gpus N (see dtsim plan --help)\n");
        return CLI_USAGE;
    }
    if (opt.jobs < 1) opt.jobs = 1;
    if (isatty(STDERR_FILENO)) opt.progress = draw;
    dt_error err;
    dt_error_clear(&err);
    cJSON *sc = NULL;
    if (js_parse_file(file, &sc, &err)) return cli_report_error(&err);
    {
        /* A typo or a bad value outside the fields the search sets fails every candidate
         * alike ("no plan fits", exit 1): report it as the bad input it is, with its path. */
        cJSON *copy = cJSON_Duplicate(sc, 1);
        cJSON_DeleteItemFromObjectCaseSensitive(copy, "sweep");
        js_ctx ctx = {file, &err};
        wl_scenario ws;
        int prc = wl_scenario_parse(&ctx, copy, &ws);
        if (prc == DT_OK) wl_scenario_free(&ws);
        cJSON_Delete(copy);
        if (prc != DT_OK) {
            cJSON_Delete(sc);
            return cli_report_error(&err);
        }
    }
    char *dir_copy = dt_xstrdup(file);
    plan_result res;
    int rc = plan_search(sc, file, dirname(dir_copy), &opt, &res, &err);
    free(dir_copy);
    cJSON_Delete(sc);
    if (rc) return cli_report_error(&err);

    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "scenario", file);
        cJSON_AddNumberToObject(o, "gpus", opt.gpus);
        cJSON_AddNumberToObject(o, "max_gpus", opt.max_gpus ? opt.max_gpus : opt.gpus);
        cJSON_AddStringToObject(o, "objective", plan_objective_name(opt.objective));
        if (opt.memory_limit > 0) cJSON_AddNumberToObject(o, "memory_limit_bytes", opt.memory_limit);
        cJSON_AddNumberToObject(o, "memory_headroom", res.headroom);
        cJSON_AddNumberToObject(o, "considered", res.considered);
        cJSON_AddNumberToObject(o, "memory_checked", res.memory_checked);
        cJSON_AddNumberToObject(o, "simulated", res.simulated);
        cJSON_AddNumberToObject(o, "stopped_early", res.stopped);
        cJSON *hb = cJSON_AddObjectToObject(o, "batch_held_fixed");
        if (res.global_batch > 0) {
            cJSON_AddNumberToObject(hb, "global_batch", res.global_batch);
        } else {
            cJSON_AddNumberToObject(hb, "micro_batch_size", res.held_micro_batch_size);
            cJSON_AddNumberToObject(hb, "microbatches_per_replica", res.held_microbatches);
        }
        cJSON *b = cJSON_AddArrayToObject(o, "best");
        for (int i = 0; i < res.n_best; i++) cJSON_AddItemToArray(b, candidate_json(&res.best[i]));
        cJSON *rj = cJSON_AddArrayToObject(o, "rejected");
        for (int i = 0; i < res.n_rejects; i++) {
            cJSON *x = cJSON_CreateObject();
            cJSON_AddStringToObject(x, "reason", res.rejects[i].reason);
            cJSON_AddNumberToObject(x, "count", res.rejects[i].count);
            cJSON_AddStringToObject(x, "example", res.rejects[i].example);
            cJSON_AddItemToArray(rj, x);
        }
        char *t = cJSON_Print(o);
        printf("%s\n", t);
        free(t);
        cJSON_Delete(o);
    } else {
        const double GiB = 1024.0 * 1024 * 1024;
        printf("plan       %s on %d GPUs", file, opt.gpus);
        if (opt.max_gpus > opt.gpus) printf(" (up to %d)", opt.max_gpus);
        printf(", objective %s", plan_objective_name(opt.objective));
        if (opt.memory_limit > 0) printf(", memory limit %.1f GiB", opt.memory_limit / GiB);
        else printf(", %g %% of GPU memory kept free", 100 * res.headroom);
        if (res.global_batch > 0)
            printf("\nbatch      global batch %g held fixed; micro batch size 1, 2, 4, 8 searched, "
                   "microbatches follow", res.global_batch);
        else
            printf("\nbatch      no global_batch in the scenario: micro batch size %d and %d "
                   "microbatches per DP replica held fixed,\n           so the global batch is "
                   "dp x %d and step times of plans with different dp do not compare:\n"
                   "           rank by --objective tokens-per-dollar, or set global_batch to hold "
                   "it and search micro batch sizes",
                   res.held_micro_batch_size, res.held_microbatches,
                   res.held_micro_batch_size * res.held_microbatches);
        printf("\nsearched   %d plans: %d checked for memory, %d simulated", res.considered,
               res.memory_checked, res.simulated);
        if (res.stopped) printf(" (%d stopped once slower than the top plans)", res.stopped);
        printf("\n\n");
        if (res.n_best == 0) {
            printf("no plan fits\n");
        } else {
            printf(" #  gpus   tp   pp   dp sched     sp zero ckpt       mbs   step time    tokens/s    MFU"
                   "     memory/GPU         $/step     $/hour  $/M tokens   tokens/$\n");
            for (int i = 0; i < res.n_best; i++) {
                const plan_candidate *c = &res.best[i];
                const run_result *r = &c->result;
                char t[32], tk[32];
                fmt_time(t, sizeof t, r->step_time_s);
                fmt_rate(tk, sizeof tk, r->throughput.tokens_per_s);
                char sched[16];
                if (c->pp > 1 && c->schedule == WL_INTERLEAVED)
                    snprintf(sched, sizeof sched, "int. v=%d", c->virtual_stages);
                else
                    snprintf(sched, sizeof sched, "%s", c->pp > 1 ? "1f1b" : "-");
                printf("%2d %5d %4d %4d %4d %-9s %3s %4d %-9s %4d %11s %11s %5.1f%%  %5.1f / %5.1f GiB",
                       i + 1, c->gpus, c->tp, c->pp, c->dp, sched, c->sequence_parallel ? "on" : "-",
                       c->zero,
                       plan_checkpointing_name(c->checkpointing), c->micro_batch_size, t, tk,
                       100 * r->throughput.mfu, r->memory.peak / GiB, r->memory.capacity / GiB);
                double tok = r->throughput.tokens_per_s * r->step_time_s;
                if (r->cost_per_step_usd > 0 && tok > 0)
                {
                    char tpd[32];
                    fmt_rate(tpd, sizeof tpd, tok / r->cost_per_step_usd);
                    printf(" %10.4f %10.2f %11.4f %10s", r->cost_per_step_usd,
                           r->cost_per_step_usd / r->step_time_s * 3600,
                           r->cost_per_step_usd / tok * 1e6, tpd);
                }
                else
                    printf(" %10s %10s %11s %10s", "-", "-", "-", "-");
                if (c->ep > 1 || c->cp > 1) printf("  ep %d cp %d", c->ep, c->cp);
                printf("\n");
            }
        }
        if (res.n_rejects > 0) {
            printf("\nrejected, by reason:\n");
            for (int i = 0; i < res.n_rejects; i++)
                printf("  %6d  %-46s e.g. %s\n", res.rejects[i].count, res.rejects[i].reason,
                       res.rejects[i].example);
        }
    }
    if (opt.objective != PLAN_TIME && res.n_best > 0 && res.best[0].result.cost_per_step_usd <= 0)
        fprintf(stderr, "dtsim plan: warning: no $/GPU-hour is known for this GPU, so every plan "
                        "costs 0 and --objective %s cannot rank them (give the GPU spec a "
                        "cost_per_hour)\n",
                plan_objective_name(opt.objective));
    int status = res.n_best > 0 ? CLI_OK : CLI_FAIL;
    if (res.n_best == 0) fprintf(stderr, "dtsim plan: no plan fits (see the rejections)\n");
    plan_result_free(&res);
    return status;
}

const cli_command cmd_plan = {.name = "plan", .summary = "Search parallel plans that fit, best first", .run = run, .help = help};
