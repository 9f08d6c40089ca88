/* fuzz_calib.c - libFuzzer target: calibration files.
 *
 * js_parse_text, then cal_from_json (the loader behind cal_load_file): header, machine, every
 * fit and point with its derived figures cross-checked. Failures must be DT_EINPUT with a
 * non-empty message and no result. A calibration loaded successfully is serialised
 * (cal_result_to_json) and loaded again, which must succeed with the same algorithms and
 * points (what `dtsim calibrate` writes must read back), and is applied to a small 2x4 DGX
 * topology (topo_apply_calibration: DT_OK or DT_EINPUT, finite positive link figures after).
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dtsim/calib.h"
#include "dtsim/error.h"
#include "dtsim/json.h"
#include "dtsim/topo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void expect_error(const dt_error *err, int rc)
{
    if (rc != DT_EINPUT || err->msg[0] == '\0') abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    dt_error err;
    dt_error_clear(&err);
    cJSON *root = NULL;
    if (js_parse_text((const char *)data, size, "fuzz-calib.json", &root, &err) != DT_OK) return 0;
    js_ctx ctx = {.file = "fuzz-calib.json", .err = &err};
    cal_result *c = NULL;
    int rc = cal_from_json(&ctx, root, &c);
    cJSON_Delete(root);
    if (rc != DT_OK) {
        expect_error(&err, rc);
        if (c) abort();
        return 0;
    }
    if (!c) abort();

    cJSON *j = cal_result_to_json(c);
    cal_result *c2 = NULL;
    js_ctx ctx2 = {.file = "written.json", .err = &err};
    dt_error_clear(&err);
    if (cal_from_json(&ctx2, j, &c2) != DT_OK) abort();
    if (c2->n_algos != c->n_algos) abort();
    for (int i = 0; i < c->n_algos; i++)
        if (c2->algos[i].n_points != c->algos[i].n_points ||
            strcmp(c2->algos[i].name, c->algos[i].name) != 0)
            abort();
    cal_result_destroy(c2);
    cJSON_Delete(j);

    cJSON *gen = cJSON_Parse("{\"generator\": \"dgx\", \"nodes\": 2, \"gpus_per_node\": 4}");
    js_ctx tctx = {.file = "fuzz-topo", .err = &err};
    topo *t = NULL;
    if (topo_from_json(&tctx, gen, "", NULL, &t) != DT_OK) abort();
    cJSON_Delete(gen);
    char note[256];
    dt_error_clear(&err);
    rc = topo_apply_calibration(t, c, note, sizeof note, &err);
    if (rc != DT_OK) {
        expect_error(&err, rc);
    } else {
        for (int i = 0; i < t->n_links; i++)
            if (!(t->links[i].bandwidth > 0) || t->links[i].latency < 0) abort();
    }
    topo_destroy(t);
    cal_result_destroy(c);
    return 0;
}
