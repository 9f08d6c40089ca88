/* wl_testutil.h - helpers of the workload room's Check suites: a scenario from JSON text, run
 * whole (run_text), a trace and its topology from JSON text (try_trace_text, run_trace_text), or
 * parsed and resolved for a GPU count (the fixture: load, try_load, unload
 * on the file-level `sc` and `sc_json`; load_refused for bad input). A suite that only runs
 * scenarios defines WL_TESTUTIL_NO_FIXTURE before including this. */
#ifndef DTSIM_WL_TESTUTIL_H
#define DTSIM_WL_TESTUTIL_H

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dtsim/chakra.h"
#include "dtsim/replay.h"
#include "dtsim/run.h"
#include "dtsim/workload.h"
#include "testutil.h"

/* One step of the scenario `text` (named s.json, relative paths from "."); must succeed. */
static inline run_result run_text(const char *text)
{
    cJSON *j;
    dt_error e;
    dt_error_clear(&e);
    ck_assert_int_eq(js_parse_text(text, strlen(text), "s.json", &j, &e), DT_OK);
    run_result r;
    run_options opt = {0};
    int rc = run_scenario(j, "s.json", ".", &opt, &r, &e);
    ck_assert_msg(rc == DT_OK, "%s: %s", e.path, e.msg);
    cJSON_Delete(j);
    return r;
}

/* One step of the trace `trace` on the topology `topo_text`, both JSON text, written to files under
 * /tmp for run_trace_file and removed after; returns its status (r is filled on DT_OK). */
static inline int try_trace_text(const char *trace, const char *topo_text, run_result *r, dt_error *e)
{
    char tf[256], pf[256];
    snprintf(tf, sizeof tf, "/tmp/dtsim_test_trace_%ld.json", (long)getpid());
    snprintf(pf, sizeof pf, "/tmp/dtsim_test_trace_topo_%ld.json", (long)getpid());
    const char *files[2] = {tf, pf}, *texts[2] = {trace, topo_text};
    for (int i = 0; i < 2; i++) {
        FILE *f = fopen(files[i], "w");
        ck_assert_ptr_nonnull(f);
        fputs(texts[i], f);
        ck_assert_int_eq(fclose(f), 0);
    }
    run_options opt = {0};
    dt_error_clear(e);
    int rc = run_trace_file(tf, pf, &opt, r, e);
    remove(tf);
    remove(pf);
    return rc;
}

/* The same, which must succeed. */
static inline run_result run_trace_text(const char *trace, const char *topo_text)
{
    run_result r;
    dt_error e;
    int rc = try_trace_text(trace, topo_text, &r, &e);
    ck_assert_msg(rc == DT_OK, "%s: %s: %s", e.file, e.path, e.msg);
    return r;
}

/* g written as a dtsim trace and read back: the graph the trace describes (destroy it with
 * wl_graph_destroy). What a trace must keep, a test compares between the two. */
static inline wl_graph *graph_through_trace(const wl_graph *g)
{
    char *s = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&s, &len);
    ck_assert_ptr_nonnull(f);
    trace_env env = {0};
    dt_error e;
    dt_error_clear(&e);
    ck_assert_int_eq(trace_write(f, g, &env, &e), DT_OK);
    fclose(f);
    cJSON *j = NULL;
    ck_assert_int_eq(js_parse_text(s, len, "t.json", &j, &e), DT_OK);
    js_ctx c = {"t.json", &e};
    wl_graph *h = NULL;
    trace_env env2;
    ck_assert_msg(trace_read(&c, j, &h, &env2) == DT_OK, "%s: %s", e.path, e.msg);
    trace_env_free(&env2);
    cJSON_Delete(j);
    free(s);
    return h;
}

/* g written as a dtsim trace, as text (free it). */
static inline char *dump_trace(const wl_graph *g, const trace_env *env)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    dt_error e;
    ck_assert_int_eq(trace_write(f, g, env, &e), DT_OK);
    fclose(f);
    return buf;
}

/* g exported as Chakra files, one per GPU (n of them), into memory, and read back from there
 * with options o: the graph the files describe (*out, with *env_out). */
static inline int chakra_roundtrip(const wl_graph *g, const trace_env *env, int n,
                                   const chakra_read_options *o, wl_graph **out,
                                   trace_env *env_out, dt_error *e)
{
    chakra_export *x = NULL;
    dt_error_clear(e);
    ck_assert_int_eq(chakra_export_create(g, env, NULL, &x, e), DT_OK);
    char **buf = calloc((size_t)n, sizeof *buf), **names = calloc((size_t)n, sizeof *names);
    size_t *len = calloc((size_t)n, sizeof *len);
    for (int r = 0; r < n; r++) {
        FILE *w = open_memstream(&buf[r], &len[r]);
        ck_assert_int_eq(chakra_export_write_rank(x, r, w, e), DT_OK);
        fclose(w);
        names[r] = malloc(32);
        snprintf(names[r], 32, "t.%d.et", r);
    }
    chakra_export_destroy(x);
    int rc = chakra_read_mem(n, (const unsigned char *const *)buf, len, (const char *const *)names,
                             o, out, env_out, e);
    for (int r = 0; r < n; r++) {
        free(buf[r]);
        free(names[r]);
    }
    free(buf);
    free(names);
    free(len);
    return rc;
}

#ifndef WL_TESTUTIL_NO_FIXTURE
/* The scenario under test (one at a time per suite) and the JSON it was parsed from. */
static wl_scenario sc;
static cJSON *sc_json;

/* Parse and resolve `text` (named t.json) for n_gpus; on failure nothing stays allocated. */
static inline int try_load(const char *text, int n_gpus, dt_error *e)
{
    dt_error_clear(e);
    ck_assert_int_eq(js_parse_text(text, strlen(text), "t.json", &sc_json, e), DT_OK);
    js_ctx c = {"t.json", e};
    int rc = wl_scenario_parse(&c, sc_json, &sc);
    if (rc == DT_OK) {
        rc = wl_scenario_resolve(&c, &sc, n_gpus);
        if (rc != DT_OK) wl_scenario_free(&sc);
    }
    if (rc != DT_OK) cJSON_Delete(sc_json);
    return rc;
}

static inline void load(const char *text, int n_gpus)
{
    dt_error e;
    int rc = try_load(text, n_gpus, &e);
    ck_assert_msg(rc == DT_OK, "load: %s: %s", e.path, e.msg);
}

static inline void unload(void)
{
    wl_scenario_free(&sc);
    cJSON_Delete(sc_json);
}

/* `text` must be refused, with a JSON path containing `path` and a message containing `needle`. */
static inline void load_refused(const char *text, int n_gpus, const char *path, const char *needle)
{
    dt_error e;
    ck_assert_int_ne(try_load(text, n_gpus, &e), DT_OK);
    ck_assert_msg(strstr(e.path, path) != NULL, "path %s, want %s", e.path, path);
    ck_assert_msg(strstr(e.msg, needle) != NULL, "message %s, want %s", e.msg, needle);
}
#endif

#endif
