/* fuzz_topo.c - libFuzzer target: topology loading from JSON text.
 *
 * js_parse_text, then topo_from_json on the result (objects only: a string would name a file to
 * open, which a fuzzer should not choose). On success: routes between a few GPU pairs, topo_info
 * for small graphs, and a write / re-parse / re-load round trip that must give the same counts
 * of nodes, links and GPUs. Failures must be DT_EINPUT with a non-empty message.
 *
 * Generators are fuzzed with their size parameters kept small (every number in a generator
 * object <= 16, a "dims" string <= 5 characters): a valid 4-million-GPU request is not a bug,
 * only slow, and would drown the run in timeouts.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtsim/error.h"
#include "dtsim/json.h"
#include "dtsim/topo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool small_numbers(const cJSON *v)
{
    if (cJSON_IsNumber(v)) return v->valuedouble <= 16 && v->valuedouble >= -16;
    if (cJSON_IsString(v) && v->string && strcmp(v->string, "dims") == 0)
        return strlen(v->valuestring) <= 5;
    for (const cJSON *c = v->child; c; c = c->next)
        if (!small_numbers(c)) return false;
    return true;
}

static void expect_error(const dt_error *err, int rc)
{
    if (rc != DT_EINPUT || err->msg[0] == '\0') abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    dt_error err;
    dt_error_clear(&err);
    cJSON *root = NULL;
    if (js_parse_text((const char *)data, size, "fuzz-topo.json", &root, &err) != DT_OK) return 0;
    if (cJSON_IsString(root) ||
        (cJSON_GetObjectItemCaseSensitive(root, "generator") && !small_numbers(root))) {
        cJSON_Delete(root);
        return 0;
    }
    js_ctx ctx = {.file = "fuzz-topo.json", .err = &err};
    topo *t = NULL;
    int rc = topo_from_json(&ctx, root, "", NULL, &t);
    cJSON_Delete(root);
    if (rc != DT_OK) {
        expect_error(&err, rc);
        if (t) abort();
        return 0;
    }
    if (!t || t->n_gpus < 1) abort();

    const int *links;
    int n_links;
    int g = t->n_gpus;
    int pairs[3][2] = {{0, g - 1}, {g - 1, 0}, {g / 2, g / 3}};
    for (int i = 0; i < 3; i++) {
        dt_error_clear(&err);
        if (topo_route(t, pairs[i][0], pairs[i][1], (uint64_t)i, &links, &n_links) == DT_OK)
            for (int k = 0; k < n_links; k++)
                if (links[k] < 0 || links[k] >= t->n_links) abort();
    }
    if (g <= 64) {
        topo_info info;
        dt_error_clear(&err);
        if (topo_get_info(t, &info, &err) == DT_OK && info.n_gpus != g) abort();
    }

    /* Known gap (reported to the topology module, 2026-11-22): generators accept link
     * latencies of 1 s and more, the file format rejects them, so such a topology is written
     * but cannot be read back. Skip the round trip for those until the two agree. */
    bool slow_link = false;
    for (int i = 0; i < t->n_links; i++) slow_link |= t->links[i].latency >= SIM_S;
    if (slow_link) {
        topo_destroy(t);
        return 0;
    }

    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    dt_error_clear(&err);
    rc = topo_write_json(t, f, &err);
    fclose(f);
    if (rc == DT_OK) {
        cJSON *again = NULL;
        topo *t2 = NULL;
        if (js_parse_text(buf, len, "written.json", &again, &err) != DT_OK) abort();
        if (topo_from_json(&ctx, again, "", NULL, &t2) != DT_OK) abort();
        if (t2->n_nodes != t->n_nodes || t2->n_links != t->n_links || t2->n_gpus != t->n_gpus)
            abort();
        topo_destroy(t2);
        cJSON_Delete(again);
    }
    free(buf);
    topo_destroy(t);
    return 0;
}
