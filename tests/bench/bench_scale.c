/* bench_scale.c - how dtsim's cost grows with the cluster: training steps to 131,072 GPUs and
 * all-pairs collectives to 2,048 GPUs. Figures for docs/performance.md ("Scale"), no assertions.
 *
 * Steps (dgx generator, H100 boxes of 8, one step through run_scenario: topology generation,
 * graph generation, replay), in analytic and flow network modes:
 *   gpt3-175b    96 layers, hidden 12288; tp 8, pp 8 interleaved (v = 3), sequence parallel,
 *                selective recomputation, ZeRO-1, 200 MB buckets; batch as bench_step
 *                (1536 sequences per 16 replicas, 16 per replica from dp 256)
 *   llama3-405b  Llama-3 405B's dimensions (hidden 16384, 128 heads, 8 KV heads, SwiGLU FFN
 *                53248, 8k context, vocabulary 128256) with 128 layers instead of 126, so that
 *                16 pipeline stages divide them; tp 8, pp 16 1F1B, full recomputation, ZeRO-1;
 *                32 sequences per replica (weak scaling)
 * at 1,024 / 16,384 / 65,536 / 131,072 GPUs. Collectives (`dtsim collective`'s defaults, flow
 * mode, one switch): direct all-reduce of 1 GiB and all-to-all of 256 MiB on 256 to 2,048 GPUs
 * (up to --max-gpus), ring all-reduce of 1 GiB on 1,024 and 8,192 GPUs (ring model `exact`,
 * which runs the fluid ring there: docs/collectives.md).
 *
 * Each case runs in a child process, so that its peak RSS is its own (wait4's rusage) and its
 * wall time includes everything a `dtsim` process would do but parsing arguments. Printed per
 * case: simulated time, events, wall, events per second, peak RSS; per series, the growth
 * exponent between successive sizes, log(wall2/wall1) / log(n2/n1) (1 = linear).
 *
 *   build/bench_scale                    everything (about 5 minutes, 3.3 GiB at most)
 *   build/bench_scale --max-gpus 16384   the steps up to 16,384 GPUs (seconds)
 *   build/bench_scale --only coll        one group: gpt3, llama, coll
 *   build/bench_scale --scenario gpt3 131072 flow > s.json   one step case's scenario, for
 *                                        `/usr/bin/time -v build/dtsim run s.json` (its wall
 *                                        time and peak RSS as a whole process)
 */
#define _DEFAULT_SOURCE /* wait4: the peak RSS of one child */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dtsim/coll.h"
#include "dtsim/run.h"
#include "dtsim/topo.h"

typedef struct outcome {
    int ok;
    double sim_s;  /* simulated step or collective time */
    double events;
    double extra;  /* MFU for steps */
} outcome;

typedef struct measured {
    outcome o;
    double wall, rss_mib;
} measured;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The scenario of one step case, as JSON text. */
static void step_scenario(char *text, size_t size, const char *model, int gpus, const char *network)
{
    int nodes = gpus / 8;
    if (!strcmp(model, "gpt3-175b")) {
        int dp = gpus / 64;
        int batch = dp * 96 > 4096 ? 16 * dp : 1536 * (dp / 16 > 0 ? dp / 16 : 1);
        snprintf(text, size,
                 "{\"topology\": {\"generator\": \"dgx\", \"nodes\": %d, \"gpus_per_node\": 8,"
                 " \"gpu\": \"H100-SXM\"},"
                 " \"model\": {\"kind\": \"transformer\", \"layers\": 96, \"hidden\": 12288,"
                 "  \"heads\": 96, \"seq_len\": 2048, \"vocab\": 51200},"
                 " \"parallel\": {\"tp\": 8, \"pp\": 8, \"dp\": %d, \"schedule\": \"interleaved\","
                 "  \"virtual_stages\": 3, \"sequence_parallel\": true, \"zero\": 1,"
                 "  \"activation_checkpointing\": \"selective\", \"bucket_size\": \"200 MB\"},"
                 " \"global_batch\": %d, \"options\": {\"network\": \"%s\"}}",
                 nodes, dp, batch, network);
    } else {
        int dp = gpus / 128;
        snprintf(text, size,
                 "{\"topology\": {\"generator\": \"dgx\", \"nodes\": %d, \"gpus_per_node\": 8,"
                 " \"gpu\": \"H100-SXM\"},"
                 " \"model\": {\"kind\": \"transformer\", \"layers\": 128, \"hidden\": 16384,"
                 "  \"heads\": 128, \"kv_heads\": 8, \"ffn\": 53248, \"mlp\": \"swiglu\","
                 "  \"seq_len\": 8192, \"vocab\": 128256},"
                 " \"parallel\": {\"tp\": 8, \"pp\": 16, \"dp\": %d, \"schedule\": \"1f1b\","
                 "  \"sequence_parallel\": true, \"zero\": 1, \"activation_checkpointing\": \"full\","
                 "  \"bucket_size\": \"200 MB\"},"
                 " \"global_batch\": %d, \"options\": {\"network\": \"%s\"}}",
                 nodes, dp, 32 * dp, network);
    }
}

static outcome run_step(const char *model, int gpus, const char *network)
{
    outcome o = {0};
    char text[4096];
    step_scenario(text, sizeof text, model, gpus, network);
    cJSON *j;
    dt_error e;
    dt_error_clear(&e);
    if (js_parse_text(text, strlen(text), "bench", &j, &e) != DT_OK) return o;
    run_options opt = {0};
    run_result r;
    int rc = run_scenario(j, "bench", ".", &opt, &r, &e);
    cJSON_Delete(j);
    if (rc != DT_OK) {
        char buf[2048];
        fprintf(stderr, "bench_scale: %s\n", dt_error_format(&e, buf, sizeof buf));
        return o;
    }
    o = (outcome){1, r.step_time_s, (double)r.events, r.throughput.mfu};
    run_result_free(&r);
    return o;
}

static outcome run_coll(coll_op op, coll_algo algo, int gpus, double bytes)
{
    outcome o = {0};
    topo *t = NULL;
    dt_error e;
    dt_error_clear(&e);
    topo_gen_params p = {.family = TOPO_FAMILY_SWITCH, .gpus = gpus};
    if (topo_generate(&p, &t, &e) != DT_OK) return o;
    int *group = malloc((size_t)gpus * sizeof *group);
    for (int i = 0; i < gpus; i++) group[i] = i;
    coll_spec spec = {.op = op, .algo = algo, .group = group, .n = gpus, .bytes = bytes,
                      .elem_bytes = 2};
    coll_config cc = {.reduce_bw = -1, .ring_model = COLL_RING_EXACT};
    net_config nc = {.mode = NET_FLOW};
    coll_result res;
    if (coll_simulate(t, &spec, &cc, &nc, &res, &e) == DT_OK)
        o = (outcome){1, sim_time_to_s(res.time), (double)res.events, 0};
    free(group);
    topo_destroy(t);
    return o;
}

typedef struct job {
    int kind; /* 0 step, 1 collective */
    const char *model, *network;
    coll_op op;
    coll_algo algo;
    double bytes;
    int gpus;
} job;

/* Run one case in a child: its own peak RSS and the whole cost of a process doing it. */
static measured measure(const job *jb)
{
    measured m = {0};
    int fd[2];
    if (pipe(fd)) return m;
    fflush(stdout);
    double t0 = now();
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        outcome o = jb->kind == 0 ? run_step(jb->model, jb->gpus, jb->network)
                                  : run_coll(jb->op, jb->algo, jb->gpus, jb->bytes);
        ssize_t w = write(fd[1], &o, sizeof o);
        _exit(w == (ssize_t)sizeof o ? 0 : 1);
    }
    close(fd[1]);
    outcome o = {0};
    ssize_t got = read(fd[0], &o, sizeof o);
    close(fd[0]);
    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    if (pid < 0 || wait4(pid, &status, 0, &ru) < 0) return m;
    m.wall = now() - t0;
    m.rss_mib = (double)ru.ru_maxrss / 1024.0;
    if (got == (ssize_t)sizeof o && WIFEXITED(status) && WEXITSTATUS(status) == 0) m.o = o;
    return m;
}

static void series_line(const char *label, const int *n, const measured *m, int k)
{
    printf("  growth %-28s", label);
    for (int i = 1; i < k; i++) {
        if (!m[i].o.ok || !m[i - 1].o.ok || m[i - 1].wall <= 0) continue;
        printf("  %d->%d: %.2f", n[i - 1], n[i], log(m[i].wall / m[i - 1].wall) / log((double)n[i] / n[i - 1]));
    }
    printf("\n");
}

int main(int argc, char **argv)
{
    int max_gpus = 131072;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--max-gpus") && i + 1 < argc) max_gpus = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--scenario") && i + 3 < argc) {
            /* print one step case's scenario, to time `dtsim run` on it as a whole process */
            const char *m = !strcmp(argv[i + 1], "gpt3") ? "gpt3-175b" : "llama3-405b";
            char text[4096];
            step_scenario(text, sizeof text, m, atoi(argv[i + 2]), argv[i + 3]);
            printf("%s\n", text);
            return 0;
        } else {
            fprintf(stderr, "usage: bench_scale [--max-gpus N] [--only gpt3|llama|coll]\n"
                            "       bench_scale --scenario gpt3|llama GPUS analytic|flow\n");
            return 2;
        }
    }
    static const int step_n[] = {1024, 16384, 65536, 131072};
    static const char *const models[] = {"gpt3-175b", "llama3-405b"};
    static const char *const nets[] = {"analytic", "flow"};
    int rc = 0;
    for (int mi = 0; mi < 2; mi++) {
        if (only && strncmp(models[mi], only, strlen(only))) continue;
        for (int ni = 0; ni < 2; ni++) {
            measured m[4];
            int n[4], k = 0;
            for (int si = 0; si < 4 && step_n[si] <= max_gpus; si++) {
                job jb = {.kind = 0, .model = models[mi], .network = nets[ni], .gpus = step_n[si]};
                m[k] = measure(&jb);
                n[k] = step_n[si];
                if (!m[k].o.ok) rc = 1;
                printf("%-12s %-8s %7d GPUs  step %9.4f s  MFU %5.1f%%  events %10.0f  wall %8.3f s"
                       "  %6.2f M events/s  peak RSS %7.1f MiB\n",
                       models[mi], nets[ni], n[k], m[k].o.sim_s, 100 * m[k].o.extra, m[k].o.events,
                       m[k].wall, m[k].o.events / m[k].wall / 1e6, m[k].rss_mib);
                k++;
            }
            char label[64];
            snprintf(label, sizeof label, "%s %s", models[mi], nets[ni]);
            series_line(label, n, m, k);
        }
    }
    if (!only || !strcmp(only, "coll")) {
        static const int coll_n[] = {256, 512, 1024, 2048};
        static const int ring_n[] = {1024, 8192};
        const struct {
            coll_op op;
            coll_algo algo;
            double bytes;
            const char *name;
            const int *n;
        } cs[] = {{COLL_ALLREDUCE, COLL_DIRECT, 1073741824.0, "direct all-reduce 1 GiB", coll_n},
                  {COLL_ALLTOALL, COLL_DIRECT, 268435456.0, "all-to-all 256 MiB", coll_n},
                  {COLL_ALLREDUCE, COLL_RING, 1073741824.0, "ring all-reduce 1 GiB", ring_n}};
        for (int ci = 0; ci < 3; ci++) {
            measured m[4];
            int n[4], k = 0;
            int nn = cs[ci].n == ring_n ? 2 : 4;
            for (int si = 0; si < nn && cs[ci].n[si] <= max_gpus; si++) {
                job jb = {.kind = 1, .op = cs[ci].op, .algo = cs[ci].algo, .bytes = cs[ci].bytes,
                          .gpus = cs[ci].n[si]};
                m[k] = measure(&jb);
                n[k] = cs[ci].n[si];
                if (!m[k].o.ok) rc = 1;
                printf("%-24s %5d GPUs  time %10.6f s  events %10.0f  wall %7.3f s  %6.2f M events/s"
                       "  peak RSS %7.1f MiB\n",
                       cs[ci].name, n[k], m[k].o.sim_s, m[k].o.events, m[k].wall,
                       m[k].o.events / m[k].wall / 1e6, m[k].rss_mib);
                k++;
            }
            series_line(cs[ci].name, n, m, k);
        }
    }
    return rc;
}
