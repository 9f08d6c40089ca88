/* bench_net.c - how fast the flow model runs large collectives.
 *
 * Cases (flow model, reduction cost on, default chunking):
 *   1. 1 GiB ring all-reduce on 1,024 GPUs (128 DGX boxes of 8, rail-optimised fabric)
 *   2. the same on 1,024 GPUs behind one switch (every flow alone on its links)
 *   3. 256 MiB direct all-to-all on 256 GPUs (2-tier fat-tree, radix 32, non-blocking)
 *   4. 64 MiB dbt all-reduce on 256 GPUs of the same fat-tree (large max-min components)
 * For each: simulated time, events, flows, rate updates, wall time and events/s. Figures go to
 * docs/performance.md ("Network model and collectives"). Optional argv[1]: repetitions. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "dtsim/coll.h"
#include "dtsim/topo.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void bench(const char *label, topo_gen_params gp, coll_op op, coll_algo algo, double S,
                  int reps)
{
    topo *t = NULL;
    dt_error err;
    dt_error_clear(&err);
    double w0 = now_s();
    if (topo_generate(&gp, &t, &err) != DT_OK) {
        fprintf(stderr, "%s: %s\n", label, err.msg);
        exit(1);
    }
    double w_topo = now_s() - w0;
    int n = t->n_gpus;
    int *g = malloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++) g[i] = i;
    coll_spec spec = {.op = op, .algo = algo, .group = g, .n = n, .bytes = S};
    coll_config cc = {.reduce_bw = -1};
    net_config nc = {.mode = NET_FLOW};
    double best = 1e30;
    coll_result r = {0};
    for (int i = 0; i < reps; i++) {
        double a = now_s();
        if (coll_simulate(t, &spec, &cc, &nc, &r, &err) != DT_OK) {
            fprintf(stderr, "%s: %s\n", label, err.msg);
            exit(1);
        }
        double w = now_s() - a;
        if (w < best) best = w;
    }
    printf("%-44s sim %10.4f ms  events %9llu  flows %9llu  rate-updates %9llu  wall %7.3f s"
           "  %6.2f Mev/s  (topology %.3f s)\n",
           label, sim_time_to_s(r.time) * 1e3, (unsigned long long)r.events,
           (unsigned long long)r.net.flows_started, (unsigned long long)r.net.rate_updates, best,
           r.events / best / 1e6, w_topo);
    fflush(stdout);
    free(g);
    topo_destroy(t);
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 1;
    if (reps < 1) reps = 1;
    double GiB = 1073741824.0, MiB = 1048576.0;
    bench("ring allreduce 1GiB, 1024 GPUs, dgx 128x8",
          (topo_gen_params){.family = TOPO_FAMILY_DGX, .nodes = 128, .gpus_per_node = 8},
          COLL_ALLREDUCE, COLL_RING, GiB, reps);
    bench("ring allreduce 1GiB, 1024 GPUs, one switch",
          (topo_gen_params){.family = TOPO_FAMILY_SWITCH, .gpus = 1024}, COLL_ALLREDUCE,
          COLL_RING, GiB, reps);
    bench("direct alltoall 256MiB, 256 GPUs, fat-tree",
          (topo_gen_params){.family = TOPO_FAMILY_FAT_TREE, .gpus = 256, .radix = 32},
          COLL_ALLTOALL, COLL_DIRECT, 256 * MiB, reps);
    bench("dbt allreduce 64MiB, 256 GPUs, fat-tree",
          (topo_gen_params){.family = TOPO_FAMILY_FAT_TREE, .gpus = 256, .radix = 32},
          COLL_ALLREDUCE, COLL_DBT, 64 * MiB, reps);
    return 0;
}
