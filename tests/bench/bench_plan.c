/* bench_plan.c - `dtsim plan` on a shipped scenario (by default GPT-3 175B on 1,024 GPUs):
 * planner wall and CPU time, plans probed and simulated, and the best plan against the shipped
 * one.
 *
 * `bench_plan [JOBS [TOP [SCENARIO GPUS]]]` (default: online CPUs, top 5,
 * scenarios/gpt3-175b-1024-h100.json on 1,024 GPUs; SCENARIO relative to the source tree, e.g.
 * `bench_plan 2 3 scenarios/mixtral-8x7b-1024-h100.json 256` for a mixture of experts). Prints,
 * for the record in docs/performance.md ("Planner"): wall seconds, CPU seconds (user + system of
 * the process, which a machine shared with other jobs leaves closer to the truth than the wall
 * time), the counts, the best plan's step time next to the scenario's own plan (simulated here
 * too; only when GPUS is the scenario's own count), and for GPT-3 whether the search met issue
 * 16's target (under 20 s of wall time). Asserts nothing about speed: the machine's load decides
 * the wall time.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "dtsim/json.h"
#include "dtsim/plan.h"
#include "dtsim/run.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double cpu_s(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_utime.tv_sec + u.ru_utime.tv_usec * 1e-6 + u.ru_stime.tv_sec + u.ru_stime.tv_usec * 1e-6;
}

int main(int argc, char **argv)
{
    char path[4096];
    const char *file = DTSIM_SOURCE_DIR "/scenarios/gpt3-175b-1024-h100.json";
    int jobs = argc > 1 ? atoi(argv[1]) : (int)sysconf(_SC_NPROCESSORS_ONLN);
    int top = argc > 2 ? atoi(argv[2]) : 5;
    int gpus = 1024;
    bool gpt3 = argc <= 3;
    if (argc > 4) {
        snprintf(path, sizeof path, "%s/%s", DTSIM_SOURCE_DIR, argv[3]);
        file = path;
        gpus = atoi(argv[4]);
    } else if (argc == 4) {
        fprintf(stderr, "usage: bench_plan [JOBS [TOP [SCENARIO GPUS]]]\n");
        return 2;
    }
    if (jobs < 1 || top < 1 || gpus < 1) {
        fprintf(stderr, "bench_plan: JOBS, TOP and GPUS must be positive\n");
        return 2;
    }
    cJSON *j;
    dt_error e;
    dt_error_clear(&e);
    char buf[2048];
    if (js_parse_file(file, &j, &e) != DT_OK) {
        fprintf(stderr, "bench_plan: %s\n", dt_error_format(&e, buf, sizeof buf));
        return 1;
    }
    run_options ro = {0};
    run_result own;
    if (run_scenario(j, file, DTSIM_SOURCE_DIR "/scenarios", &ro, &own, &e) != DT_OK) {
        fprintf(stderr, "bench_plan: %s\n", dt_error_format(&e, buf, sizeof buf));
        return 1;
    }
    plan_options o = {.gpus = gpus, .top = top, .jobs = jobs};
    plan_result r;
    double c0 = cpu_s(), t0 = now();
    int rc = plan_search(j, file, DTSIM_SOURCE_DIR "/scenarios", &o, &r, &e);
    double wall = now() - t0, cpu = cpu_s() - c0;
    cJSON_Delete(j);
    if (rc != DT_OK || r.n_best == 0) {
        fprintf(stderr, "bench_plan: %s\n", rc ? dt_error_format(&e, buf, sizeof buf) : "no plan");
        return 1;
    }
    const plan_candidate *b = &r.best[0];
    const char *name = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
    printf("plan %.*s --gpus %d --jobs %d --top %d: %.1f s wall, %.1f s CPU\n",
           (int)(strlen(name) > 5 ? strlen(name) - 5 : strlen(name)), name, gpus, o.jobs, top, wall, cpu);
    printf("  %d plans considered, %d probed (memory and bound), %d fit, %d simulated (%d of them "
           "stopped once slower than the top %d)\n",
           r.considered, r.memory_checked, r.fitting, r.simulated, r.stopped, top);
    printf("  best: tp %d pp %d dp %d %s v %d sp %s zero %d ckpt %s mbs %d: %.4f s per step "
           "(bound %.4f s)\n",
           b->tp, b->pp, b->dp, plan_schedule_name(b), b->virtual_stages,
           b->sequence_parallel ? "on" : "off", b->zero, plan_checkpointing_name(b->checkpointing),
           b->micro_batch_size, b->result.step_time_s, b->lower_bound_s);
    if (b->gpus == own.n_gpus)
        printf("  the scenario's own plan: %.4f s per step (best is %.1f %% faster)\n",
               own.step_time_s, 100 * (1 - b->result.step_time_s / own.step_time_s));
    if (gpt3)
        printf("  target: under 20 s of wall time: %s (%.1f s); best plan at least as fast as the "
               "scenario's: %s\n", wall < 20 ? "met" : "missed", wall,
               b->result.step_time_s <= own.step_time_s ? "yes" : "no");
    run_result_free(&own);
    plan_result_free(&r);
    return 0;
}
