/* fuzz_trace.c - libFuzzer target: trace files (reading, replay, write/read round trip).
 *
 * js_parse_text, then trace_read on the result: every key, lanes, costs, collectives, ops and
 * their deps. Failures must be DT_EINPUT with a non-empty message and leave no graph behind.
 * A trace read successfully is written (trace_write) and read back, which must give the same
 * op, dep, cost, GEMM set and collective counts. Small ones (at most 16 GPUs, 256 ops) are then replayed
 * on a 16-GPU two-box DGX topology in both network modes through run_trace_file, the path
 * `dtsim run --trace` takes: cyclic deps, collectives with missing participants or a lane
 * twice, sends to odd lanes, lanes sharing GPUs must all end as DT_EINPUT, never as an
 * assertion or a hang.
 *
 * run_trace_file reads files: the topology is written once per process and each input to a
 * per-process scratch file under $TMPDIR (cheap next to a replay).
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dtsim/error.h"
#include "dtsim/json.h"
#include "dtsim/replay.h"
#include "dtsim/run.h"
#include "dtsim/topo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char topo_file[256], trace_file[256];

static void setup(void)
{
    if (topo_file[0]) return;
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir) dir = "/tmp";
    snprintf(topo_file, sizeof topo_file, "%s/fuzz_trace_topo.%d.json", dir, (int)getpid());
    snprintf(trace_file, sizeof trace_file, "%s/fuzz_trace_in.%d.json", dir, (int)getpid());
    dt_error err;
    dt_error_clear(&err);
    cJSON *gen = cJSON_Parse("{\"generator\": \"dgx\", \"nodes\": 2, \"gpus_per_node\": 8}");
    js_ctx ctx = {.file = "fuzz-topo", .err = &err};
    topo *t = NULL;
    if (topo_from_json(&ctx, gen, "", NULL, &t) != DT_OK) abort();
    FILE *f = fopen(topo_file, "w");
    if (!f || topo_write_json(t, f, &err) != DT_OK || fclose(f) != 0) abort();
    topo_destroy(t);
    cJSON_Delete(gen);
}

static void expect_error(const dt_error *err, int rc)
{
    if (rc != DT_EINPUT || err->msg[0] == '\0') abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    dt_error err;
    dt_error_clear(&err);
    cJSON *root = NULL;
    if (js_parse_text((const char *)data, size, "fuzz-trace.json", &root, &err) != DT_OK) return 0;
    js_ctx ctx = {.file = "fuzz-trace.json", .err = &err};
    wl_graph *g = NULL;
    trace_env env;
    int rc = trace_read(&ctx, root, &g, &env);
    cJSON_Delete(root);
    if (rc != DT_OK) {
        expect_error(&err, rc);
        if (g) abort();
        return 0;
    }
    if (!g) abort();

    /* round trip */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    dt_error_clear(&err);
    if (trace_write(f, g, &env, &err) != DT_OK) abort();
    fclose(f);
    cJSON *again = NULL;
    if (js_parse_text(buf, len, "written.json", &again, &err) != DT_OK) abort();
    wl_graph *g2 = NULL;
    trace_env env2;
    js_ctx ctx2 = {.file = "written.json", .err = &err};
    if (trace_read(&ctx2, again, &g2, &env2) != DT_OK) abort();
    if (g2->n_ops != g->n_ops || g2->n_deps != g->n_deps || g2->n_colls != g->n_colls ||
        g2->n_lanes != g->n_lanes || g2->n_gpus != g->n_gpus || g2->n_costs != g->n_costs ||
        g2->n_gemm_sets != g->n_gemm_sets || g2->n_gemms != g->n_gemms)
        abort();
    wl_graph_destroy(g2);
    trace_env_free(&env2);
    cJSON_Delete(again);
    free(buf);

    bool small = g->n_gpus <= 16 && g->n_ops <= 256 && g->n_lanes * g->lane_size <= 64;
    wl_graph_destroy(g);
    trace_env_free(&env);
    if (!small) return 0;

    f = fopen(trace_file, "w");
    if (!f) abort();
    fwrite(data, 1, size, f);
    fclose(f);
    for (int mode = 0; mode < 2; mode++) {
        run_options opt = {.have_network = true, .network = mode ? NET_ANALYTIC : NET_FLOW};
        run_result r;
        dt_error_clear(&err);
        rc = run_trace_file(trace_file, topo_file, &opt, &r, &err);
        if (rc != DT_OK) expect_error(&err, rc);
        else if (!(r.step_time_s >= 0) || !isfinite(r.step_time_s)) abort();
        run_result_free(&r);
    }
    return 0;
}
