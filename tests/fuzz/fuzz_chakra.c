/* fuzz_chakra.c - libFuzzer target: Chakra execution traces (reading, export/import, replay).
 *
 * Input: byte 0 picks the number of ranks (1 + byte % 4); then every rank but the last is a
 * 2-byte little-endian length and that many bytes, the last rank takes the rest. The ranks go
 * to chakra_read_mem, the path every `--trace-chakra` file takes (varint framing, protobuf-c
 * unpacking, node types, attributes, group and send/receive matching, dependency checks).
 * Failures must be DT_EINPUT with a non-empty message and leave no graph behind.
 *
 * A trace read successfully with at most 16 GPUs is exported (chakra_export_*, the path of
 * `--write-chakra`) and read back, which must give the very op graph: trace_write of both
 * graphs byte for byte. Small ones (at most 256 ops) are then replayed on a 16-GPU two-box
 * DGX topology in both network modes through run_chakra: cycles, collectives with missing
 * members, odd sends must all end as DT_EINPUT, never as an assertion or a hang.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dtsim/chakra.h"
#include "dtsim/error.h"
#include "dtsim/json.h"
#include "dtsim/replay.h"
#include "dtsim/run.h"
#include "dtsim/topo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char topo_file[256], prefix[256];
static topo *T;

static void setup(void)
{
    if (T) return;
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir) dir = "/tmp";
    snprintf(topo_file, sizeof topo_file, "%s/fuzz_chakra_topo.%d.json", dir, (int)getpid());
    snprintf(prefix, sizeof prefix, "%s/fuzz_chakra_in.%d", dir, (int)getpid());
    dt_error err;
    dt_error_clear(&err);
    cJSON *gen = cJSON_Parse("{\"generator\": \"dgx\", \"nodes\": 2, \"gpus_per_node\": 8}");
    js_ctx ctx = {.file = "fuzz-topo", .err = &err};
    if (topo_from_json(&ctx, gen, "", NULL, &T) != DT_OK) abort();
    FILE *f = fopen(topo_file, "w");
    if (!f || topo_write_json(T, f, &err) != DT_OK || fclose(f) != 0) abort();
    cJSON_Delete(gen);
}

/* abort saying why: the message of a failure that must not happen */
static void die(const char *what, const dt_error *err)
{
    char buf[DT_ERR_FILE_MAX + DT_ERR_PATH_MAX + DT_ERR_MSG_MAX + 64];
    fprintf(stderr, "fuzz_chakra: %s: %s\n", what, err ? dt_error_format(err, buf, sizeof buf) : "");
    abort();
}

static void expect_error(const dt_error *err, int rc)
{
    if (rc != DT_EINPUT || err->msg[0] == '\0') abort();
}

/* trace_write of g into a malloc'd buffer */
static char *dump(const wl_graph *g, const trace_env *env, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    dt_error err;
    dt_error_clear(&err);
    if (!f || trace_write(f, g, env, &err) != DT_OK) abort();
    fclose(f);
    return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    if (size < 1) return 0;
    int n = 1 + data[0] % 4;
    const unsigned char *bytes[4];
    size_t len[4];
    const char *names[4] = {"fuzz.0.et", "fuzz.1.et", "fuzz.2.et", "fuzz.3.et"};
    size_t pos = 1;
    for (int r = 0; r < n; r++) {
        size_t l = size - pos;
        if (r < n - 1) {
            if (size - pos < 2) return 0;
            l = (size_t)data[pos] | (size_t)data[pos + 1] << 8;
            pos += 2;
            if (l > size - pos) return 0;
        }
        bytes[r] = data + pos;
        len[r] = l;
        pos += l;
    }
    dt_error err;
    dt_error_clear(&err);
    chakra_read_options o = {0};
    wl_graph *g = NULL;
    trace_env env;
    int rc = chakra_read_mem(n, bytes, len, names, &o, &g, &env, &err);
    if (rc != DT_OK) {
        expect_error(&err, rc);
        if (g) abort();
        return 0;
    }
    if (!g) abort();
    if (g->n_gpus > T->n_gpus) goto done;

    /* export, read back: the same graph */
    chakra_export *x = NULL;
    rc = chakra_export_create(g, &env, T->gpus, &x, &err);
    if (rc != DT_OK) die("export of a graph read from Chakra files", &err);
    int nr = chakra_export_ranks(x);
    char **out = calloc((size_t)nr, sizeof *out);
    size_t *olen = calloc((size_t)nr, sizeof *olen);
    char **onames = calloc((size_t)nr, sizeof *onames);
    for (int r = 0; r < nr; r++) {
        FILE *f = open_memstream(&out[r], &olen[r]);
        if (!f || chakra_export_write_rank(x, r, f, &err) != DT_OK) die("writing a rank", &err);
        fclose(f);
        onames[r] = "written.et";
    }
    chakra_export_destroy(x);
    wl_graph *g2 = NULL;
    trace_env env2;
    if (chakra_read_mem(nr, (const unsigned char *const *)out, olen, (const char *const *)onames, &o,
                        &g2, &env2, &err) != DT_OK)
        die("reading back what was exported", &err);
    size_t l1, l2;
    char *d1 = dump(g, &env, &l1), *d2 = dump(g2, &env2, &l2);
    if (l1 != l2 || memcmp(d1, d2, l1) != 0) {
        fprintf(stderr, "--- read\n%.*s\n--- exported and read back\n%.*s\n", (int)l1, d1, (int)l2, d2);
        die("export then import is not the identity", NULL);
    }
    free(d1);
    free(d2);
    wl_graph_destroy(g2);
    trace_env_free(&env2);

    /* replay the small ones from files, as `dtsim run --trace-chakra` does */
    bool small = g->n_ops <= 256 && g->n_lanes * g->lane_size <= 64;
    for (int r = 0; small && r < nr; r++) {
        char path[300];
        snprintf(path, sizeof path, "%s.%d.et", prefix, r);
        FILE *f = fopen(path, "wb");
        if (!f) abort();
        fwrite(out[r], 1, olen[r], f);
        fclose(f);
    }
    for (int r = 0; r < nr; r++) free(out[r]);
    free(out);
    free(olen);
    free(onames);
    for (int mode = 0; small && mode < 2; mode++) {
        run_options opt = {.have_network = true, .network = mode ? NET_ANALYTIC : NET_FLOW};
        run_result res;
        dt_error_clear(&err);
        rc = run_chakra(prefix, topo_file, &opt, &res, &err);
        if (rc != DT_OK) expect_error(&err, rc);
        else if (!(res.step_time_s >= 0) || !isfinite(res.step_time_s)) abort();
        run_result_free(&res);
    }
    for (int r = 0; small && r < nr; r++) { /* a later input may have fewer ranks */
        char path[300];
        snprintf(path, sizeof path, "%s.%d.et", prefix, r);
        remove(path);
    }
done:
    wl_graph_destroy(g);
    trace_env_free(&env);
    return 0;
}
