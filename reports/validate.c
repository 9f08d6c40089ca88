/* validate.c - the validation suite (validate.h): a manifest of published measurements, each
 * case re-simulated, the signed error and its summary.
 *
 * The manifest is read strictly like every other input (unknown keys are errors, every error
 * names the JSON path). Cases are independent, so they run on a small thread pool: each worker
 * takes the next case index from an atomic counter and writes only its own row; the rows come
 * out in manifest order whatever the thread count, so the output is deterministic.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dtsim/coll.h"
#include "dtsim/json.h"
#include "dtsim/threads.h"
#include "dtsim/topo.h"
#include "dtsim/validate.h"

static const char *const metric_names[VAL_METRIC_COUNT + 1] = {"step_time", "tflops_per_gpu",
                                                               "busbw", NULL};
static const char *const metric_units[VAL_METRIC_COUNT] = {"s", "TFLOP/s", "GB/s"};

const char *val_metric_name(val_metric m) { return m < VAL_METRIC_COUNT ? metric_names[m] : "?"; }
const char *val_metric_unit(val_metric m) { return m < VAL_METRIC_COUNT ? metric_units[m] : "?"; }

/* A collective case as the manifest gives it; kept raw (cJSON, owned by the loaded manifest)
 * until the worker runs it. */
typedef struct job {
    val_case *c;
    const cJSON *coll;  /* collective object, NULL for a training case */
    const char *dir;
    const char *manifest;
    int index;
} job;

static char *dup_or_null(const char *s) { return s ? dt_xstrdup(s) : NULL; }

/* ---------------------------------------------------------------- manifest ---- */

static int parse_case(const js_ctx *c, const cJSON *e, const char *path, val_case *out,
                      const cJSON **coll)
{
    static const char *const keys[] = {"id", "scenario", "collective", "metric", "measured",
                                       "source", "assumptions", NULL};
    int rc;
    if ((rc = js_expect_object(c, e, path)) || (rc = js_check_keys(c, e, path, keys))) return rc;
    const char *id = NULL, *src = NULL, *scen = NULL;
    if ((rc = js_get_string(c, e, path, "id", true, &id)) ||
        (rc = js_get_string(c, e, path, "source", true, &src)) ||
        (rc = js_get_string(c, e, path, "scenario", false, &scen)))
        return rc;
    if (!id[0] || strlen(id) > 64) return js_fail(c, path, "id", "expected 1 to 64 characters");
    int m = 0;
    if ((rc = js_get_enum(c, e, path, "metric", true, metric_names, &m))) return rc;
    out->metric = (val_metric)m;
    static const unit_kind kinds[VAL_METRIC_COUNT] = {UNIT_TIME, UNIT_COMPUTE, UNIT_BANDWIDTH};
    if ((rc = js_get_quantity(c, e, path, "measured", kinds[m], true, true, &out->measured)))
        return rc;
    *coll = cJSON_GetObjectItemCaseSensitive(e, "collective");
    if (!scen == !*coll)
        return js_fail(c, path, scen ? "collective" : "scenario",
                       "a case is either a \"scenario\" (a training run) or a \"collective\", "
                       "exactly one of them");
    if (*coll && out->metric != VAL_BUSBW)
        return js_fail(c, path, "metric", "a collective case measures \"busbw\", found \"%s\"",
                       metric_names[m]);
    if (scen && out->metric == VAL_BUSBW)
        return js_fail(c, path, "metric", "a training case measures \"step_time\" or "
                                          "\"tflops_per_gpu\", found \"busbw\"");
    const cJSON *as = cJSON_GetObjectItemCaseSensitive(e, "assumptions");
    if (as) {
        char ap[JS_PATH_MAX], ip[JS_PATH_MAX];
        js_path_key(ap, path, "assumptions");
        if ((rc = js_expect_array(c, as, ap))) return rc;
        int n = cJSON_GetArraySize(as), i = 0;
        out->assumptions = dt_xcalloc((size_t)n + 1, sizeof *out->assumptions);
        for (const cJSON *a = as->child; a; a = a->next, i++) {
            js_path_index(ip, ap, i);
            if (!cJSON_IsString(a)) {
                char d[64];
                return js_fail(c, ip, NULL, "expected a string, found %s", js_describe(a, d, sizeof d));
            }
            out->assumptions[out->n_assumptions++] = dt_xstrdup(a->valuestring);
        }
    }
    out->id = dt_xstrdup(id);
    out->source = dt_xstrdup(src);
    out->file = dup_or_null(scen);
    return DT_OK;
}

/* ---------------------------------------------------------------- running ---- */

static void fail_row(val_case *c, const dt_error *e)
{
    char buf[DT_ERR_FILE_MAX + DT_ERR_PATH_MAX + DT_ERR_MSG_MAX + 64];
    c->ok = false;
    snprintf(c->message, sizeof c->message, "%.*s", (int)sizeof c->message - 1,
             dt_error_format(e, buf, sizeof buf));
}

static void run_training(job *J)
{
    val_case *c = J->c;
    char path[2048];
    if (c->file[0] == '/') snprintf(path, sizeof path, "%s", c->file);
    else snprintf(path, sizeof path, "%s/%s", J->dir, c->file);
    dt_error e;
    dt_error_clear(&e);
    run_options opt = {0};
    if (run_scenario_file(path, &opt, &c->run, &e) != DT_OK) {
        fail_row(c, &e);
        return;
    }
    c->ok = true;
    c->predicted = c->metric == VAL_STEP_TIME ? c->run.step_time_s
                                              : c->run.throughput.tflops_per_gpu * 1e12;
}

/* Sizes: an array of quantities, or {"from", "to", "step"} (an arithmetic sweep, nccl-tests
 * -i STEP) or {"from", "to", "factor"} (geometric, -f F). At most 4096 sizes. */
static int collective_sizes(const js_ctx *ctx, const cJSON *v, const char *path, double **out,
                            int *n_out)
{
    int rc;
    *out = NULL;
    *n_out = 0;
    if (cJSON_IsArray(v)) {
        int n = cJSON_GetArraySize(v), i = 0;
        if (n < 1 || n > 4096) return js_fail(ctx, path, NULL, "expected 1 to 4096 sizes, found %d", n);
        double *s = dt_xcalloc((size_t)n, sizeof *s);
        char ip[JS_PATH_MAX];
        for (const cJSON *e = v->child; e; e = e->next, i++)
            if ((rc = js_quantity_value(ctx, e, js_path_index(ip, path, i), UNIT_SIZE, true, &s[i]))) {
                free(s);
                return rc;
            }
        *out = s;
        *n_out = n;
        return DT_OK;
    }
    static const char *const keys[] = {"from", "to", "step", "factor", NULL};
    if ((rc = js_expect_object(ctx, v, path)) || (rc = js_check_keys(ctx, v, path, keys))) return rc;
    double lo = 0, hi = 0, step = 0, factor = 0;
    if ((rc = js_get_quantity(ctx, v, path, "from", UNIT_SIZE, true, true, &lo)) ||
        (rc = js_get_quantity(ctx, v, path, "to", UNIT_SIZE, true, true, &hi)) ||
        (rc = js_get_quantity(ctx, v, path, "step", UNIT_SIZE, false, true, &step)) ||
        (rc = js_get_number(ctx, v, path, "factor", false, 1.000001, 1e6, &factor)))
        return rc;
    if ((step > 0) == (factor > 0))
        return js_fail(ctx, path, NULL, "expected exactly one of \"step\" (a size) and \"factor\"");
    if (hi < lo) return js_fail(ctx, path, "to", "must not be below \"from\"");
    double n = step > 0 ? floor((hi - lo) / step) + 1 : floor(log(hi / lo) / log(factor) + 1e-9) + 1;
    if (n > 4096) return js_fail(ctx, path, NULL, "gives %.0f sizes, at most 4096", n);
    double *s = dt_xcalloc((size_t)n, sizeof *s);
    for (int i = 0; i < (int)n; i++) s[i] = step > 0 ? lo + i * step : lo * pow(factor, i);
    *out = s;
    *n_out = (int)n;
    return DT_OK;
}

static int parse_efficiency(const js_ctx *ctx, const cJSON *v, const char *path, double *nv,
                            double *nw)
{
    if (cJSON_IsString(v)) {
        if (!strcmp(v->valuestring, "nccl")) {
            *nv = TOPO_NCCL_NVLINK_EFFICIENCY;
            *nw = TOPO_NCCL_NETWORK_EFFICIENCY;
            return DT_OK;
        }
        if (!strcmp(v->valuestring, "line")) {
            *nv = *nw = 1;
            return DT_OK;
        }
        return js_fail(ctx, path, NULL, "expected \"nccl\", \"line\" or {\"nvlink\", \"network\"}, "
                                        "found \"%s\"", v->valuestring);
    }
    static const char *const keys[] = {"nvlink", "network", NULL};
    int rc;
    if ((rc = js_expect_object(ctx, v, path)) || (rc = js_check_keys(ctx, v, path, keys)) ||
        (rc = js_get_number(ctx, v, path, "nvlink", false, 1e-6, 1, nv)) ||
        (rc = js_get_number(ctx, v, path, "network", false, 1e-6, 1, nw)))
        return rc;
    return DT_OK;
}

static int run_collective_case(job *J, dt_error *e)
{
    val_case *c = J->c;
    const cJSON *v = J->coll;
    char path[JS_PATH_MAX], sub[JS_PATH_MAX];
    snprintf(path, sizeof path, "cases[%d].collective", J->index);
    js_ctx ctx = {.file = J->manifest, .err = e};
    static const char *const keys[] = {"topology", "op", "algo", "sizes", "link_efficiency",
                                       "elem_bytes", "chunk", NULL};
    int rc;
    if ((rc = js_expect_object(&ctx, v, path)) || (rc = js_check_keys(&ctx, v, path, keys)))
        return rc;
    const cJSON *tv = cJSON_GetObjectItemCaseSensitive(v, "topology");
    if (!tv) return js_fail(&ctx, path, "topology", "is required (a topology file or generator)");
    const char *op_s = NULL, *algo_s = NULL;
    if ((rc = js_get_string(&ctx, v, path, "op", true, &op_s)) ||
        (rc = js_get_string(&ctx, v, path, "algo", false, &algo_s)))
        return rc;
    coll_spec spec = {.algo = COLL_AUTO, .elem_bytes = 2};
    if (coll_op_parse(op_s, &spec.op) != DT_OK)
        return js_fail(&ctx, path, "op", "unknown collective \"%s\"", op_s);
    if (algo_s && coll_algo_parse(algo_s, &spec.algo) != DT_OK)
        return js_fail(&ctx, path, "algo", "unknown algorithm \"%s\"", algo_s);
    if ((rc = js_get_number(&ctx, v, path, "elem_bytes", false, 1, 16, &spec.elem_bytes))) return rc;
    coll_config cc = {.reduce_bw = -1, .chunk_bytes = 0, .ring_model = COLL_RING_EXACT};
    if ((rc = js_get_quantity(&ctx, v, path, "chunk", UNIT_SIZE, false, true, &cc.chunk_bytes)))
        return rc;
    double nv = 1, nw = 1;
    const cJSON *le = cJSON_GetObjectItemCaseSensitive(v, "link_efficiency");
    if (le && (rc = parse_efficiency(&ctx, le, js_path_key(sub, path, "link_efficiency"), &nv, &nw)))
        return rc;
    const cJSON *sv = cJSON_GetObjectItemCaseSensitive(v, "sizes");
    if (!sv) return js_fail(&ctx, path, "sizes", "is required (an array of sizes or a sweep)");
    double *sizes = NULL;
    int n_sizes = 0;
    if ((rc = collective_sizes(&ctx, sv, js_path_key(sub, path, "sizes"), &sizes, &n_sizes))) return rc;
    topo *t = NULL;
    if ((rc = topo_from_json(&ctx, tv, js_path_key(sub, path, "topology"), J->dir, &t))) {
        free(sizes);
        return rc;
    }
    topo_apply_link_efficiency(t, nv, nw);
    int *group = dt_xmalloc((size_t)t->n_gpus * sizeof *group);
    for (int i = 0; i < t->n_gpus; i++) group[i] = i;
    spec.group = group;
    spec.n = t->n_gpus;
    net_config nc = {.mode = NET_FLOW};
    double sum = 0;
    c->busbw_min = INFINITY;
    c->busbw_max = 0;
    for (int i = 0; i < n_sizes && rc == DT_OK; i++) {
        spec.bytes = sizes[i];
        coll_result res;
        rc = coll_simulate(t, &spec, &cc, &nc, &res, e);
        if (rc != DT_OK) break;
        double secs = sim_time_to_s(res.time);
        double bus = secs > 0 ? spec.bytes / secs * coll_busbw_factor(spec.op, spec.n) : 0;
        sum += bus;
        c->busbw_min = fmin(c->busbw_min, bus);
        c->busbw_max = fmax(c->busbw_max, bus);
        snprintf(c->algo, sizeof c->algo, "%s", coll_algo_name(res.algo));
    }
    free(group);
    free(sizes);
    topo_destroy(t);
    if (rc != DT_OK) return rc;
    c->n_sizes = n_sizes;
    c->predicted = sum / n_sizes; /* nccl-tests' "Avg bus bandwidth": the mean over sizes */
    c->ok = true;
    return DT_OK;
}

static void run_job(job *J)
{
    val_case *c = J->c;
    if (!J->coll) {
        run_training(J);
    } else {
        dt_error e;
        dt_error_clear(&e);
        if (run_collective_case(J, &e) != DT_OK) fail_row(c, &e);
    }
    if (c->ok) {
        if (!(c->predicted > 0)) {
            c->ok = false;
            snprintf(c->message, sizeof c->message, "predicted %s is not positive",
                     val_metric_name(c->metric));
        } else {
            c->error = c->metric == VAL_STEP_TIME ? c->measured / c->predicted - 1
                                                  : c->predicted / c->measured - 1;
        }
    }
}

typedef struct pool {
    job *jobs;
    int n;
    atomic_int next;
} pool;

static void *worker(void *arg)
{
    pool *P = arg;
    for (;;) {
        int i = atomic_fetch_add(&P->next, 1);
        if (i >= P->n) return NULL;
        run_job(&P->jobs[i]);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void val_summarise(val_results *r)
{
    double *e = dt_xcalloc((size_t)r->n + 1, sizeof *e);
    int n = 0;
    r->worst = -1;
    r->worst_abs = r->mean_abs = r->median_abs = 0;
    for (int i = 0; i < r->n; i++) {
        if (!r->cases[i].ok) continue;
        double a = fabs(r->cases[i].error);
        e[n++] = a;
        r->mean_abs += a;
        if (r->worst < 0 || a > r->worst_abs) {
            r->worst_abs = a;
            r->worst = i;
        }
    }
    r->n_ok = n;
    if (n) {
        qsort(e, (size_t)n, sizeof *e, cmp_double);
        r->median_abs = n % 2 ? e[n / 2] : 0.5 * (e[n / 2 - 1] + e[n / 2]);
        r->mean_abs /= n;
    }
    free(e);
}

int val_run(const char *dir, const val_options *opt, val_results *out, dt_error *err)
{
    memset(out, 0, sizeof *out);
    out->worst = -1;
    char mpath[2048];
    snprintf(mpath, sizeof mpath, "%s/manifest.json", dir);
    cJSON *root = NULL;
    int rc = js_parse_file(mpath, &root, err);
    if (rc) return rc;
    js_ctx ctx = {.file = mpath, .err = err};
    static const char *const keys[] = {"format", "version", "description", "cases", NULL};
    const char *fmt = NULL;
    long long ver = 0;
    if ((rc = js_expect_object(&ctx, root, "")) || (rc = js_check_keys(&ctx, root, "", keys)) ||
        (rc = js_get_string(&ctx, root, "", "format", true, &fmt)) ||
        (rc = js_get_int(&ctx, root, "", "version", true, 1, 1, &ver)))
        goto done;
    if (strcmp(fmt, "dtsim-validation")) {
        rc = js_fail(&ctx, "", "format", "expected \"dtsim-validation\", found \"%s\"", fmt);
        goto done;
    }
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(root, "cases");
    if (!cases) {
        rc = js_fail(&ctx, "", "cases", "is required (an array of cases)");
        goto done;
    }
    if ((rc = js_expect_array(&ctx, cases, "cases"))) goto done;
    int n = cJSON_GetArraySize(cases);
    out->cases = dt_xcalloc((size_t)n + 1, sizeof *out->cases);
    job *jobs = dt_xcalloc((size_t)n + 1, sizeof *jobs);
    int i = 0, n_jobs = 0;
    for (const cJSON *e = cases->child; e; e = e->next, i++) {
        char p[JS_PATH_MAX];
        js_path_index(p, "cases", i);
        val_case *c = &out->cases[out->n];
        const cJSON *coll = NULL;
        rc = parse_case(&ctx, e, p, c, &coll);
        out->n++; /* freed with the results even when half filled */
        if (rc) break;
        for (int k = 0; k < i; k++)
            if (!strcmp(out->cases[k].id, c->id)) {
                rc = js_fail(&ctx, p, "id", "\"%s\" is used twice (cases[%d])", c->id, k);
                break;
            }
        if (rc) break;
        bool wanted = !opt || !opt->only || opt->n_only == 0;
        for (int k = 0; opt && opt->only && k < opt->n_only; k++)
            if (!strcmp(opt->only[k], c->id)) wanted = true;
        if (wanted)
            jobs[n_jobs++] = (job){.c = c, .coll = coll, .dir = dir, .manifest = mpath, .index = i};
    }
    for (int k = 0; rc == DT_OK && opt && opt->only && k < opt->n_only; k++) {
        bool found = false;
        for (int j = 0; j < out->n; j++) found |= !strcmp(out->cases[j].id, opt->only[k]);
        if (!found)
            rc = dt_error_set(err, DT_EINPUT, mpath, "--case", "no case \"%s\" in the manifest",
                              opt->only[k]);
    }
    if (rc == DT_OK) {
        int threads = opt && opt->threads > 0 ? opt->threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
        if (threads < 1) threads = 1;
        if (threads > n_jobs) threads = n_jobs;
        pool P = {.jobs = jobs, .n = n_jobs};
        atomic_init(&P.next, 0);
        dt_threads_run(threads, worker, &P); /* the calling thread works too */
        /* keep only the rows that ran (a --case selection), in manifest order */
        bool *ran = dt_xcalloc((size_t)out->n + 1, sizeof *ran);
        for (int j = 0; j < n_jobs; j++) ran[jobs[j].c - out->cases] = true;
        int w = 0;
        for (int k = 0; k < out->n; k++) {
            val_case *c = &out->cases[k];
            if (ran[k]) {
                if (w != k) out->cases[w] = *c;
                w++;
                continue;
            }
            free(c->id);
            free(c->source);
            free(c->file);
            for (int j = 0; j < c->n_assumptions; j++) free(c->assumptions[j]);
            free(c->assumptions);
        }
        free(ran);
        out->n = w;
        val_summarise(out);
    }
    free(jobs);
done:
    cJSON_Delete(root);
    if (rc) val_results_free(out);
    return rc;
}

void val_results_free(val_results *r)
{
    if (!r) return;
    for (int i = 0; i < r->n; i++) {
        val_case *c = &r->cases[i];
        free(c->id);
        free(c->source);
        free(c->file);
        for (int j = 0; j < c->n_assumptions; j++) free(c->assumptions[j]);
        free(c->assumptions);
        run_result_free(&c->run);
    }
    free(r->cases);
    memset(r, 0, sizeof *r);
    r->worst = -1;
}
