/* bench_sweep.c - the sweep machinery's own cost per point (expansion, scenario copy, record,
 * fsync'd record file, assembly), with a do-nothing evaluator, for 1 and 2 threads; and the
 * timeline writer's throughput in spans per second. Prints figures; asserts nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dtsim/json.h"
#include "dtsim/report.h"
#include "dtsim/sweep.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int nop(void *ctx, const cJSON *sc, const char *file, const char *b, run_result *out,
               dt_error *err)
{
    memset(out, 0, sizeof *out);
    out->step_time_s = 1;
    return DT_OK;
}

int main(void)
{
    const char *t = "{\"parallel\": {\"dp\": 1}, \"model\": {\"layers\": 8, \"hidden\": 4096},"
                    " \"sweep\": {\"axes\": [{\"path\": \"parallel.dp\", \"range\": [1, 50]},"
                    " {\"path\": \"model.layers\", \"range\": [8, 160], \"step\": 8}]}}";
    dt_error e = {0};
    cJSON *j = NULL;
    if (js_parse_text(t, strlen(t), "bench.json", &j, &e)) return 1;
    for (int jobs = 1; jobs <= 2; jobs++) {
        char dir[] = "/tmp/dtsim_bench_sweep_XXXXXX";
        if (!mkdtemp(dir)) return 1;
        sweep_config c = {.scenario = j, .file = "bench.json", .base_dir = ".", .out_dir = dir,
                          .jobs = jobs, .eval = nop, .mpi_size = 1};
        sweep_summary s;
        double t0 = now();
        if (sweep_run(&c, &s, &e)) return 1;
        double dt = now() - t0;
        printf("sweep overhead, %d thread(s): %zu points in %.3f s = %.1f us/point (fsync'd "
               "record + assembly)\n", jobs, s.total, dt, 1e6 * dt / (double)s.total);
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        if (system(cmd) != 0) return 1;
    }
    cJSON_Delete(j);

    /* Timeline: 64 GPUs x 4 streams x 2000 spans. */
    run_timeline tl;
    memset(&tl, 0, sizeof tl);
    tl.n_gpus = 64;
    tl.n_spans = 64 * 4 * 2000;
    size_t n = tl.n_spans;
    tl.spans = calloc(n, sizeof *tl.spans);
    char *name = "op";
    tl.names = &name;
    tl.n_names = 1;
    for (size_t i = 0; i < n; i++) {
        run_span *s = &tl.spans[i];
        s->gpu = (int)(i % 64);
        s->stream = (run_stream)((i / 64) % 4);
        s->start = (sim_time_t)(i / 256) * 1000000;
        s->end = s->start + 900000;
        s->microbatch = s->layer = -1;
        s->comm = s->stream == RUN_STREAM_COMPUTE ? -1 : WL_COMM_DP;
    }
    FILE *f = fopen("/dev/null", "w");
    double t0 = now();
    rep_timeline_options o = {.links = true};
    if (rep_timeline_write(&tl, &o, f, &e)) return 1;
    double dt = now() - t0;
    fclose(f);
    printf("timeline writer: %zu spans in %.3f s = %.2f M spans/s\n", n, dt, (double)n / dt / 1e6);
    free(tl.spans);
    return 0;
}
