/* bench_step.c - one training step of GPT-3 175B: wall time, events, peak RSS.
 *
 * Default: 1,024 H100s (128 DGX boxes; tp 8, pp 8 interleaved x3, dp 16; 1536 x 2048 tokens),
 * in flow and analytic network modes. `bench_step 16384` also runs 16,384 GPUs (dp 256,
 * 4096 sequences). Figures go to docs/performance.md ("Training-step simulation").
 * Peak RSS is the process's maximum so far (getrusage), so the larger runs go last.
 * `bench_step GPUS ALGO` runs the cross-lane collectives with options.dp_algorithm ALGO
 * (default auto; e.g. estimate: what choosing by estimated time costs).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "dtsim/run.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int one(int gpus, const char *network, const char *algo)
{
    int nodes = gpus / 8, dp = gpus / 64;
    int batch = dp * 96 > 4096 ? 16 * dp : 1536 * (dp / 16 > 0 ? dp / 16 : 1);
    char text[2048];
    snprintf(text, sizeof text,
             "{\"topology\": {\"generator\": \"dgx\", \"nodes\": %d, \"gpus_per_node\": 8,"
             " \"gpu\": \"H100-SXM\"},"
             " \"model\": {\"kind\": \"transformer\", \"layers\": 96, \"hidden\": 12288,"
             "  \"heads\": 96, \"seq_len\": 2048, \"vocab\": 51200},"
             " \"parallel\": {\"tp\": 8, \"pp\": 8, \"dp\": %d, \"schedule\": \"interleaved\","
             "  \"virtual_stages\": 3, \"sequence_parallel\": true, \"zero\": 1,"
             "  \"activation_checkpointing\": \"selective\", \"bucket_size\": \"200 MB\"},"
             " \"global_batch\": %d, \"options\": {\"network\": \"%s\", \"dp_algorithm\": \"%s\"}}",
             nodes, dp, batch, network, algo);
    cJSON *j;
    dt_error e;
    dt_error_clear(&e);
    if (js_parse_text(text, strlen(text), "bench", &j, &e) != DT_OK) return 1;
    run_options opt = {0};
    run_result r;
    double t0 = now();
    int rc = run_scenario(j, "bench", ".", &opt, &r, &e);
    double wall = now() - t0;
    cJSON_Delete(j);
    if (rc != DT_OK) {
        char buf[2048];
        fprintf(stderr, "bench_step: %s\n", dt_error_format(&e, buf, sizeof buf));
        return 1;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("gpt3-175b  %6d GPUs  %-8s  %-8s  batch %5d  step %8.4f s  MFU %4.1f%%  wall %7.3f s  "
           "events %9llu  peak RSS %7.1f MiB\n",
           gpus, network, algo, batch, r.step_time_s, 100 * r.throughput.mfu, wall,
           (unsigned long long)r.events, ru.ru_maxrss / 1024.0);
    run_result_free(&r);
    return 0;
}

int main(int argc, char **argv)
{
    int big = argc > 1 ? atoi(argv[1]) : 0;
    const char *algo = argc > 2 ? argv[2] : "auto";
    int rc = one(1024, "analytic", algo);
    rc |= one(1024, "flow", algo);
    if (big > 1024) {
        rc |= one(big, "analytic", algo);
        rc |= one(big, "flow", algo);
    }
    return rc;
}
