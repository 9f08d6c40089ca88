/* fuzz_scenario.c - libFuzzer target: scenario files (parse, topology, plan, memory).
 *
 * js_parse_text, then run_memory on the result: the scenario parser (every key), the topology
 * value (inline or generator), the GPU override, degraded links, and the plan resolved against
 * the GPU count, all without building an op graph. Small scenarios (at most 16 GPUs, every
 * number under "parallel" <= 16, global_batch <= 64, at most 8 layers) then run one simulated
 * step in both network modes, so the schedule generator and replay see the fuzzer's plans too.
 * Failures must be DT_EINPUT with a non-empty message; successes give finite, non-negative
 * figures.
 *
 * A small scenario with "failures" and "checkpoint" also builds its goodput job and simulates
 * 2 runs of an hour (the search included): DT_EINPUT or goodputs in [0, 1].
 *
 * A small scenario with "federated" also simulates 2 of its rounds (fl_run): DT_EINPUT or a
 * finite, non-negative time.
 *
 * A "sweep" object is expanded too (sweep_spec_parse; the first and last points built with
 * sweep_point_scenario): errors must be DT_EINPUT, a parsed sweep has at least one point.
 *
 * Kept out: file names (a string topology, options.calibration) - the fuzzer should not choose
 * files to open; generators with numbers > 16 (a valid 4-million-GPU request is only slow).
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dtsim/error.h"
#include "dtsim/federated.h"
#include "dtsim/goodput.h"
#include "dtsim/json.h"
#include "dtsim/run.h"
#include "dtsim/sweep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool all_numbers_below(const cJSON *v, double lim)
{
    if (!v) return true;
    if (cJSON_IsNumber(v)) return fabs(v->valuedouble) <= lim;
    if (cJSON_IsString(v) && v->string && strcmp(v->string, "dims") == 0)
        return strlen(v->valuestring) <= 5;
    for (const cJSON *c = v->child; c; c = c->next)
        if (!all_numbers_below(c, lim)) return false;
    return true;
}

static void expect_error(const dt_error *err, int rc)
{
    if (rc != DT_EINPUT || err->msg[0] == '\0') abort();
}

static void sweep_points(const cJSON *root)
{
    dt_error err;
    dt_error_clear(&err);
    sweep_spec *spec = NULL;
    int rc = sweep_spec_parse(root, "fuzz-scenario.json", &spec, &err);
    if (rc != DT_OK) {
        expect_error(&err, rc);
        if (spec) abort();
        return;
    }
    size_t n = sweep_n_points(spec);
    if (n < 1) abort();
    size_t pts[2] = {0, n - 1};
    for (int k = 0; k < 2; k++) {
        dt_error_clear(&err);
        cJSON *p = sweep_point_scenario(spec, root, pts[k], "fuzz-scenario.json", &err);
        if (p) cJSON_Delete(p);
        else expect_error(&err, err.code);
    }
    sweep_spec_destroy(spec);
}

static bool small_run(const cJSON *root, const struct run_memory *m)
{
    (void)m;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(model, "layers");
    const cJSON *gb = cJSON_GetObjectItemCaseSensitive(root, "global_batch");
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(root, "stragglers");
    return all_numbers_below(cJSON_GetObjectItemCaseSensitive(root, "parallel"), 16) &&
           (!layers || (cJSON_IsNumber(layers) && layers->valuedouble <= 8)) &&
           (!gb || (cJSON_IsNumber(gb) && gb->valuedouble <= 64)) && cJSON_GetArraySize(st) <= 16;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    dt_error err;
    dt_error_clear(&err);
    cJSON *root = NULL;
    if (js_parse_text((const char *)data, size, "fuzz-scenario.json", &root, &err) != DT_OK)
        return 0;
    const cJSON *topo = cJSON_GetObjectItemCaseSensitive(root, "topology");
    const cJSON *opts = cJSON_GetObjectItemCaseSensitive(root, "options");
    if (cJSON_GetObjectItemCaseSensitive(root, "sweep")) sweep_points(root);
    if (!cJSON_IsObject(root) || cJSON_IsString(topo) ||
        cJSON_GetObjectItemCaseSensitive(opts, "calibration") || !all_numbers_below(topo, 16)) {
        cJSON_Delete(root);
        return 0;
    }
    struct run_memory m;
    bool fits = false;
    int rc = run_memory(root, "fuzz-scenario.json", "/nonexistent", &m, &fits, &err);
    if (rc != DT_OK) {
        expect_error(&err, rc);
        cJSON_Delete(root);
        return 0;
    }
    if (!(m.peak >= 0) || !(m.params >= 0) || isnan(m.capacity)) abort();
    if (small_run(root, &m)) {
        for (int mode = 0; mode < 2; mode++) {
            run_options opt = {.have_network = true, .network = mode ? NET_ANALYTIC : NET_FLOW};
            run_result r;
            dt_error_clear(&err);
            rc = run_scenario(root, "fuzz-scenario.json", "/nonexistent", &opt, &r, &err);
            if (rc != DT_OK) {
                expect_error(&err, rc);
            } else if (!(r.step_time_s >= 0) || !isfinite(r.step_time_s) || r.n_gpus < 1) {
                abort();
            }
            run_result_free(&r);
        }
        if (cJSON_GetObjectItemCaseSensitive(root, "federated")) {
            fl_options fo = {.rounds = 2};
            fl_result fr;
            dt_error_clear(&err);
            rc = fl_run(root, "fuzz-scenario.json", "/nonexistent", &fo, &fr, &err);
            if (rc != DT_OK) expect_error(&err, rc);
            else if (!(fr.total_s >= 0) || !isfinite(fr.total_s) || fr.clients < 1) abort();
        }
        if (cJSON_GetObjectItemCaseSensitive(root, "failures")) {
            gp_job job;
            run_result r;
            run_options opt = {.have_network = true, .network = NET_ANALYTIC};
            dt_error_clear(&err);
            rc = run_goodput_job(root, "fuzz-scenario.json", "/nonexistent", &opt, &job, &r, &err);
            run_result_free(&r);
            if (rc != DT_OK) {
                expect_error(&err, rc);
            } else {
                gp_options go = {.horizon_s = 3600, .runs = 2, .seed = 1, .search = true};
                gp_result g;
                rc = gp_simulate(&job, &go, &g, &err);
                if (rc != DT_OK) expect_error(&err, rc);
                for (int i = 0; rc == DT_OK && i < g.n_points; i++)
                    if (!(g.points[i].goodput >= 0 && g.points[i].goodput <= 1 + 1e-9)) abort();
                if (rc == DT_OK) gp_result_free(&g);
            }
        }
    }
    cJSON_Delete(root);
    return 0;
}
