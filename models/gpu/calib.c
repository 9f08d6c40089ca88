/* calib.c - calibration results: building, writing and loading (strictly validated) them.
 * Applying one to a cluster is the topology's own operation (models/topo/topo_calib.c).
 *
 * The file format is docs/formats.md "Calibration files". Derived figures written for people
 * (bandwidth = 1/beta, per-link latency and bandwidth, top-k throughput, per-size summaries) are
 * checked against what they derive from on load, so a hand edit of one without the other is an
 * error rather than a silent disagreement.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtsim/calib.h"
#include "dtsim/json.h"
#include "dtsim/units.h"

static int by_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

void cal_point_set(cal_point *p, double size, const double *samples, int n)
{
    DT_ASSERT(n >= 1);
    free(p->samples);
    p->size = size;
    p->n_samples = n;
    p->samples = dt_xmalloc((size_t)n * sizeof *p->samples);
    memcpy(p->samples, samples, (size_t)n * sizeof *samples);
    double *s = dt_xmalloc((size_t)n * sizeof *s);
    memcpy(s, samples, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, by_double);
    p->min = s[0];
    p->median = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    double sum = 0;
    for (int i = 0; i < n; i++) sum += s[i];
    p->mean = sum / n;
    double var = 0;
    for (int i = 0; i < n; i++) var += (s[i] - p->mean) * (s[i] - p->mean);
    p->stddev = n > 1 ? sqrt(var / (n - 1)) : 0.0;
    free(s);
}

cal_algo *cal_result_add_algo(cal_result *c, const char *name, cal_kind kind)
{
    c->algos = dt_xrealloc(c->algos, (size_t)(c->n_algos + 1) * sizeof *c->algos);
    cal_algo *a = &c->algos[c->n_algos++];
    memset(a, 0, sizeof *a);
    snprintf(a->name, sizeof a->name, "%s", name);
    a->kind = kind;
    return a;
}

void cal_result_destroy(cal_result *c)
{
    if (!c) return;
    for (int i = 0; i < c->n_algos; i++) {
        for (int j = 0; j < c->algos[i].n_points; j++) free(c->algos[i].points[j].samples);
        free(c->algos[i].points);
    }
    free(c->algos);
    free(c);
}

void cal_ring_link(double alpha, double beta, int n, double *link_alpha, double *link_bw)
{
    DT_ASSERT(n >= 2 && beta > 0);
    *link_alpha = alpha / (2.0 * (n - 1));
    *link_bw = 2.0 * (n - 1) / ((double)n * beta);
}

/* kind names are coll.h's op names, so a kind reads like the collective it measured */
static const char *const kind_names[] = {"allreduce", "topk",   "reduce_scatter", "allgather",
                                         "broadcast", "reduce", "alltoall",       "sendrecv", NULL};
static const char *const backend_names[] = {"cpu", "mpi", "cuda", "nccl", "tcp", "nccl-tests", NULL};
static const char *const dtype_names[] = {"fp32", "bf16", "fp16", "fp64", "fp8",   "int8",
                                          "uint8", "int32", "uint32", "int64", "uint64", NULL};
static const char *const scope_names[] = {"intra-host", "inter-host", NULL};

const char *cal_kind_name(cal_kind k) { return (unsigned)k < CAL_KIND_COUNT ? kind_names[k] : "?"; }

/* all_reduce, All-Reduce and allreduce name one collective */
static bool same_name(const char *a, const char *b)
{
    for (;;) {
        while (*a == '_' || *a == '-') a++;
        while (*b == '_' || *b == '-') b++;
        char x = *a >= 'A' && *a <= 'Z' ? (char)(*a + 32) : *a;
        char y = *b >= 'A' && *b <= 'Z' ? (char)(*b + 32) : *b;
        if (x != y) return false;
        if (!x) return true;
        a++;
        b++;
    }
}

int cal_kind_parse(const char *s, cal_kind *out)
{
    for (int k = 0; k < CAL_KIND_COUNT; k++)
        if (same_name(s, kind_names[k])) {
            *out = (cal_kind)k;
            return DT_OK;
        }
    return DT_EINPUT;
}

double cal_busbw_factor(cal_kind k, int n)
{
    if (n < 1) n = 1;
    switch (k) {
    case CAL_KIND_ALLREDUCE: return 2.0 * (n - 1) / n;
    case CAL_KIND_REDUCE_SCATTER:
    case CAL_KIND_ALLGATHER:
    case CAL_KIND_ALLTOALL: return (double)(n - 1) / n;
    default: return 1.0;
    }
}

void cal_link_figures(cal_kind kind, double alpha, double beta, int n, double *link_alpha, double *link_bw)
{
    DT_ASSERT(n >= 2 && beta > 0);
    double steps = kind == CAL_KIND_ALLREDUCE                              ? 2.0 * (n - 1)
                 : (kind == CAL_KIND_ALLTOALL || kind == CAL_KIND_SENDRECV) ? 1.0
                                                                            : (double)(n - 1);
    *link_alpha = alpha / steps;
    *link_bw = cal_busbw_factor(kind, n) / beta;
}

int cal_fit_ranks(const cal_result *c, const cal_algo *a) { return a->ranks > 0 ? a->ranks : c->ranks; }

/* The 95 % interval, not a fixed number of standard errors: it is what the file records
 * (alpha_ci95 = t(0.975, dof) x the standard error), so a reader of the file alone reaches the
 * verdict its writer reached. !(x >= 0) also sends a NaN to the refusal. */
cal_alpha_verdict cal_alpha_judge(double alpha, double alpha_ci)
{
    if (alpha >= 0) return CAL_ALPHA_OK;
    if (alpha + alpha_ci >= 0) return CAL_ALPHA_NOISE;
    return CAL_ALPHA_NEGATIVE;
}

const char *cal_alpha_refusal(double alpha, double alpha_ci, char *buf, size_t len)
{
    snprintf(buf, len, "a negative latency (%.6g s) whose 95 %% interval (+-%.3g s) does not reach 0", alpha, alpha_ci);
    return buf;
}

static bool in_fit_range(const cal_algo *a, double size)
{
    return !(a->fit_from > 0 && size < a->fit_from * (1 - 1e-12)) && !(a->fit_to > 0 && size > a->fit_to * (1 + 1e-12));
}

/* !(r2 >= ...) sends a NaN to the refusal, as cal_alpha_judge does. */
cal_r2_verdict cal_r2_judge(double r2)
{
    if (!(r2 >= CAL_R2_REFUSE)) return CAL_R2_POOR;
    return r2 < CAL_R2_WARN ? CAL_R2_ROUGH : CAL_R2_OK;
}

const char *cal_r2_refusal(const cal_algo *a, char *buf, size_t len)
{
    double lo = INFINITY, hi = -INFINITY;
    int n = 0;
    for (int i = 0; i < a->n_points; i++)
        if (in_fit_range(a, a->points[i].size)) {
            lo = fmin(lo, a->points[i].size);
            hi = fmax(hi, a->points[i].size);
            n++;
        }
    char b1[32] = "?", b2[32] = "?", b3[32];
    if (n) {
        unit_fmt_size(lo, b1, sizeof b1);
        unit_fmt_size(hi, b2, sizeof b2);
    }
    snprintf(buf, len,
             "fit \"%s\" has R² = %.3g, below %.2g (%s, %d size%s %s - %s, %d samples; alpha %s, beta %.4g s/B): "
             "its line T = α + S·β does not describe its own measurements",
             a->name, a->fit.r2, CAL_R2_REFUSE, cal_kind_name(a->kind), n, n == 1 ? "" : "s", b1, b2,
             a->fit.n_samples, unit_fmt_seconds(a->fit.alpha, b3, sizeof b3), a->fit.beta);
    return buf;
}

/* Only the defaults: a reader that is not told otherwise applies exactly these, and refuses the
 * file when one of them is poor, so a writer that let one through would write a file nobody can
 * use. A poor fit that is not a default (MPI's second algorithm, one nccl-tests collective of
 * several) is kept with its samples: readers apply it only when chosen by name, and then refuse
 * it by the same rule. */
int cal_check_link_fits(const cal_result *c, int code, dt_error *err)
{
    const cal_scope scopes[2] = {CAL_SCOPE_INTRA, CAL_SCOPE_INTER};
    for (int k = 0; k < 2; k++) {
        const cal_algo *a = cal_link_fit_scope(c, scopes[k]);
        if (a && cal_r2_judge(a->fit.r2) == CAL_R2_POOR) {
            char why[512];
            return dt_error_set(err, code, NULL, NULL, "%s", cal_r2_refusal(a, why, sizeof why));
        }
    }
    return DT_OK;
}

/* ---------------------------------------------------------------- writing */

cJSON *cal_result_to_json(const cal_result *c)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "format", CAL_FORMAT);
    cJSON_AddNumberToObject(root, "version", CAL_VERSION);
    cJSON_AddStringToObject(root, "date", c->date);
    cJSON *m = cJSON_AddObjectToObject(root, "machine");
    cJSON_AddStringToObject(m, "hostname", c->hostname);
    cJSON_AddStringToObject(m, "cpu_model", c->cpu_model);
    cJSON_AddNumberToObject(m, "cores", c->cores);
    cJSON_AddStringToObject(m, "gpu", c->gpu);
    cJSON_AddStringToObject(root, "backend", c->backend);
    cJSON_AddNumberToObject(root, "ranks", c->ranks);
    cJSON_AddStringToObject(root, "dtype", c->dtype);
    cJSON_AddNumberToObject(root, "chunk", c->chunk_bytes);
    cJSON_AddNumberToObject(root, "repeats", c->repeats);
    cJSON_AddNumberToObject(root, "warmup", c->warmup);
    cJSON_AddStringToObject(root, "fit_method", CAL_FIT_METHOD);
    cJSON *fits = cJSON_AddArrayToObject(root, "fits");
    for (int i = 0; i < c->n_algos; i++) {
        const cal_algo *a = &c->algos[i];
        cJSON *f = cJSON_CreateObject();
        cJSON_AddItemToArray(fits, f);
        cJSON_AddStringToObject(f, "name", a->name);
        cJSON_AddStringToObject(f, "kind", kind_names[a->kind]);
        if (a->kind == CAL_KIND_TOPK) cJSON_AddNumberToObject(f, "k_fraction", a->k_fraction);
        cJSON_AddNumberToObject(f, "alpha", a->fit.alpha);
        cJSON_AddNumberToObject(f, "alpha_ci95", a->fit.alpha_ci);
        cJSON_AddNumberToObject(f, "beta", a->fit.beta);
        cJSON_AddNumberToObject(f, "beta_ci95", a->fit.beta_ci);
        if (a->fit.alpha_held) {
            cJSON *h = cJSON_AddObjectToObject(f, "alpha_free");
            cJSON_AddNumberToObject(h, "alpha", a->fit.free_alpha);
            cJSON_AddNumberToObject(h, "alpha_ci95", a->fit.free_alpha_ci);
        }
        cJSON_AddNumberToObject(f, "r2", a->fit.r2);
        cJSON_AddNumberToObject(f, "samples", a->fit.n_samples);
        if (a->ranks > 0 && a->ranks != c->ranks) cJSON_AddNumberToObject(f, "ranks", a->ranks);
        if (a->hosts > 1) cJSON_AddNumberToObject(f, "hosts", a->hosts);
        if (a->scope != CAL_SCOPE_INTRA) cJSON_AddStringToObject(f, "scope", scope_names[a->scope]);
        if (a->fit_from > 0 || a->fit_to > 0) {
            cJSON *fr = cJSON_AddObjectToObject(f, "fit_range");
            cJSON_AddNumberToObject(fr, "from", a->fit_from);
            cJSON_AddNumberToObject(fr, "to", a->fit_to);
            cJSON_AddNumberToObject(fr, "worst_miss", a->fit_worst);
        }
        if (a->kind != CAL_KIND_TOPK) {
            cJSON_AddNumberToObject(f, "bandwidth", 1.0 / a->fit.beta);
            if (cal_fit_ranks(c, a) >= 2) {
                double la, lb;
                cal_link_figures(a->kind, a->fit.alpha, a->fit.beta, cal_fit_ranks(c, a), &la, &lb);
                cJSON *l = cJSON_AddObjectToObject(f, "link");
                cJSON_AddNumberToObject(l, "latency", la);
                cJSON_AddNumberToObject(l, "bandwidth", lb);
            }
        } else {
            cJSON_AddNumberToObject(f, "throughput", 1.0 / a->fit.beta);
        }
        cJSON *pts = cJSON_AddArrayToObject(f, "points");
        for (int j = 0; j < a->n_points; j++) {
            const cal_point *p = &a->points[j];
            cJSON *o = cJSON_CreateObject();
            cJSON_AddItemToArray(pts, o);
            cJSON_AddNumberToObject(o, a->kind == CAL_KIND_TOPK ? "elements" : "size", p->size);
            cJSON_AddNumberToObject(o, "min", p->min);
            cJSON_AddNumberToObject(o, "median", p->median);
            cJSON_AddNumberToObject(o, "mean", p->mean);
            cJSON_AddNumberToObject(o, "stddev", p->stddev);
            cJSON_AddItemToObject(o, "samples", cJSON_CreateDoubleArray(p->samples, p->n_samples));
        }
    }
    cJSON *co = gpu_tables_to_json(c->compute);
    if (co) cJSON_AddItemToObject(root, "compute", co);
    if (c->origin[0]) cJSON_AddStringToObject(root, "source", c->origin);
    return root;
}

/* ---------------------------------------------------------------- loading */

/* a and b agree to 1e-6 relative (the file stores %.17g-ish numbers; people may round). */
static bool agree(double a, double b) { return fabs(a - b) <= 1e-6 * fmax(fabs(a), fabs(b)) + 1e-300; }

static int derived(const js_ctx *ctx, const cJSON *obj, const char *path, const char *key,
                   unit_kind kind, double expect)
{
    double v = 0;
    int rc = js_get_quantity(ctx, obj, path, key, kind, true, true, &v);
    if (rc) return rc;
    if (!agree(v, expect))
        return js_fail(ctx, path, key, "is %.6g but the fit gives %.6g (derived fields must match the fit)", v, expect);
    return DT_OK;
}

static int load_point(const js_ctx *ctx, const cJSON *o, const char *path, cal_kind kind, cal_point *p)
{
    static const char *const keys_ar[] = {"size", "min", "median", "mean", "stddev", "samples", NULL};
    static const char *const keys_tk[] = {"elements", "min", "median", "mean", "stddev", "samples", NULL};
    int rc;
    if ((rc = js_expect_object(ctx, o, path)) || (rc = js_check_keys(ctx, o, path, kind == CAL_KIND_TOPK ? keys_tk : keys_ar)))
        return rc;
    double size = 0, mn = 0, med = 0, mean = 0, sd = 0;
    if (kind == CAL_KIND_TOPK) {
        long long e = 0;
        if ((rc = js_get_int(ctx, o, path, "elements", true, 1, (1LL << 53), &e))) return rc;
        size = (double)e;
    } else if ((rc = js_get_quantity(ctx, o, path, "size", UNIT_SIZE, true, true, &size))) {
        return rc;
    }
    if ((rc = js_get_quantity(ctx, o, path, "min", UNIT_TIME, true, true, &mn)) ||
        (rc = js_get_quantity(ctx, o, path, "median", UNIT_TIME, true, true, &med)) ||
        (rc = js_get_quantity(ctx, o, path, "mean", UNIT_TIME, true, true, &mean)) ||
        (rc = js_get_quantity(ctx, o, path, "stddev", UNIT_TIME, true, false, &sd)))
        return rc;
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(o, "samples");
    char sp[JS_PATH_MAX], ep[JS_PATH_MAX];
    js_path_key(sp, path, "samples");
    if (!arr) return js_fail(ctx, path, "samples", "is required (the measured times, seconds)");
    if ((rc = js_expect_array(ctx, arr, sp))) return rc;
    int n = cJSON_GetArraySize(arr);
    if (n < 1) return js_fail(ctx, sp, NULL, "expected at least one sample, found an empty array");
    double *s = dt_xmalloc((size_t)n * sizeof *s);
    int i = 0;
    for (const cJSON *v = arr->child; v; v = v->next, i++)
        if ((rc = js_quantity_value(ctx, v, js_path_index(ep, sp, i), UNIT_TIME, true, &s[i]))) {
            free(s);
            return rc;
        }
    cal_point_set(p, size, s, n);
    free(s);
    /* the summary must be the samples' summary */
    static const char *const names[] = {"min", "median", "mean", "stddev"};
    double got[] = {mn, med, mean, sd}, want[] = {p->min, p->median, p->mean, p->stddev};
    for (int k = 0; k < 4; k++)
        if (!agree(got[k], want[k]))
            return js_fail(ctx, path, names[k], "is %.6g but the samples give %.6g", got[k], want[k]);
    return DT_OK;
}

static int load_fit(const js_ctx *ctx, const cJSON *f, const char *path, const cal_result *c, cal_algo *a)
{
    static const char *const keys[] = {"name",    "kind",      "k_fraction", "alpha",  "alpha_ci95", "beta",
                                       "beta_ci95", "r2",      "samples",    "bandwidth", "link",     "throughput",
                                       "points",  "ranks",     "hosts",      "scope",  "fit_range",  "alpha_free", NULL};
    int rc, kind = 0;
    const char *name = NULL;
    if ((rc = js_expect_object(ctx, f, path)) || (rc = js_check_keys(ctx, f, path, keys)) ||
        (rc = js_get_string(ctx, f, path, "name", true, &name)) ||
        (rc = js_get_enum(ctx, f, path, "kind", true, kind_names, &kind)))
        return rc;
    if (!name[0] || strlen(name) >= sizeof a->name)
        return js_fail(ctx, path, "name", "expected a name of 1 to %zu characters", sizeof a->name - 1);
    snprintf(a->name, sizeof a->name, "%s", name);
    a->kind = (cal_kind)kind;
    if (a->kind == CAL_KIND_TOPK) {
        if ((rc = js_get_number(ctx, f, path, "k_fraction", true, 1e-9, 1.0, &a->k_fraction))) return rc;
    } else if (cJSON_GetObjectItemCaseSensitive(f, "k_fraction")) {
        return js_fail(ctx, path, "k_fraction", "only applies to kind \"topk\"");
    }
    double dummy;
    long long ns = 0;
    /* alpha may be negative by a little when latency is below the noise; beta must be positive */
    if ((rc = js_get_number(ctx, f, path, "alpha", true, -1e6, 1e6, &a->fit.alpha)) ||
        (rc = js_get_number(ctx, f, path, "alpha_ci95", true, 0, 1e6, &a->fit.alpha_ci)) ||
        (rc = js_get_number(ctx, f, path, "beta", true, 1e-300, 1e6, &a->fit.beta)) ||
        (rc = js_get_number(ctx, f, path, "beta_ci95", true, 0, 1e6, &a->fit.beta_ci)) ||
        (rc = js_get_number(ctx, f, path, "r2", true, -1e9, 1.0, &a->fit.r2)) ||
        (rc = js_get_int(ctx, f, path, "samples", true, 3, 1LL << 40, &ns)))
        return rc;
    /* A negative alpha within its own 95 % interval is a latency below the noise: applied as 0
     * (docs/calibration.md). One whose interval does not reach 0 is a wrong fit (a fit range of
     * large sizes only, a broken log): applied as 0 it silently removed every latency. The rule
     * is cal_alpha_judge, the one dtsim calibrate applies before it writes. */
    char why[160];
    if (cal_alpha_judge(a->fit.alpha, a->fit.alpha_ci) == CAL_ALPHA_NEGATIVE)
        return js_fail(ctx, path, "alpha", "%s: the fit is wrong; re-run the calibration with smaller sizes in its fit range",
                       cal_alpha_refusal(a->fit.alpha, a->fit.alpha_ci, why, sizeof why));
    /* "alpha_free": the writer held alpha at 0 because the free fit's was noise. Checked, so
     * that a file cannot claim a hold the rule would not have made. */
    const cJSON *held = cJSON_GetObjectItemCaseSensitive(f, "alpha_free");
    if (held) {
        static const char *const hkeys[] = {"alpha", "alpha_ci95", NULL};
        char hp[JS_PATH_MAX];
        js_path_key(hp, path, "alpha_free");
        if ((rc = js_expect_object(ctx, held, hp)) || (rc = js_check_keys(ctx, held, hp, hkeys)) ||
            (rc = js_get_number(ctx, held, hp, "alpha", true, -1e6, 1e6, &a->fit.free_alpha)) ||
            (rc = js_get_number(ctx, held, hp, "alpha_ci95", true, 0, 1e6, &a->fit.free_alpha_ci)))
            return rc;
        if (a->fit.alpha != 0 || a->fit.alpha_ci != 0)
            return js_fail(ctx, path, "alpha", "expected 0 with alpha_ci95 0 (alpha_free says alpha was held at 0), "
                           "found %.6g +- %.3g s", a->fit.alpha, a->fit.alpha_ci);
        if (cal_alpha_judge(a->fit.free_alpha, a->fit.free_alpha_ci) != CAL_ALPHA_NOISE)
            return js_fail(ctx, hp, "alpha", "expected a negative latency whose 95 %% interval reaches 0 (the only "
                           "one held at 0), found %.6g +- %.3g s", a->fit.free_alpha, a->fit.free_alpha_ci);
        a->fit.alpha_held = true;
    }
    a->fit.n_samples = (int)ns;
    a->fit.dof = (int)ns - (a->fit.alpha_held ? 1 : 2);
    (void)dummy;
    long long rk = 0, hs = 1;
    int sc = CAL_SCOPE_INTRA;
    if ((rc = js_get_int(ctx, f, path, "ranks", false, 2, 1 << 24, &rk)) ||
        (rc = js_get_int(ctx, f, path, "hosts", false, 1, 1 << 24, &hs)) ||
        (rc = js_get_enum(ctx, f, path, "scope", false, scope_names, &sc)))
        return rc;
    a->ranks = (int)rk;
    a->hosts = (int)hs;
    a->scope = (cal_scope)sc;
    if (a->kind == CAL_KIND_TOPK && (cJSON_GetObjectItemCaseSensitive(f, "ranks") || cJSON_GetObjectItemCaseSensitive(f, "scope") ||
                                     cJSON_GetObjectItemCaseSensitive(f, "hosts")))
        return js_fail(ctx, path, "kind", "ranks, hosts and scope describe collectives, not top-k");
    if (a->scope == CAL_SCOPE_INTER && a->hosts < 2)
        return js_fail(ctx, path, "hosts", "an inter-host fit spans 2 or more hosts, found %d", a->hosts);
    const cJSON *fr = cJSON_GetObjectItemCaseSensitive(f, "fit_range");
    if (fr) {
        static const char *const rkeys[] = {"from", "to", "worst_miss", NULL};
        char rp[JS_PATH_MAX];
        js_path_key(rp, path, "fit_range");
        if ((rc = js_expect_object(ctx, fr, rp)) || (rc = js_check_keys(ctx, fr, rp, rkeys)) ||
            (rc = js_get_quantity(ctx, fr, rp, "from", UNIT_SIZE, true, true, &a->fit_from)) ||
            (rc = js_get_quantity(ctx, fr, rp, "to", UNIT_SIZE, true, true, &a->fit_to)) ||
            (rc = js_get_number(ctx, fr, rp, "worst_miss", false, 0, 1e9, &a->fit_worst)))
            return rc;
        if (a->fit_to < a->fit_from) return js_fail(ctx, rp, "to", "is below \"from\"");
    }
    if (a->kind != CAL_KIND_TOPK) {
        int nr = cal_fit_ranks(c, a);
        if (nr < 2) return js_fail(ctx, path, "kind", "a collective fit needs ranks >= 2, the file says %d", nr);
        if (cJSON_GetObjectItemCaseSensitive(f, "throughput"))
            return js_fail(ctx, path, "throughput", "only applies to kind \"topk\"");
        if ((rc = derived(ctx, f, path, "bandwidth", UNIT_BANDWIDTH, 1.0 / a->fit.beta))) return rc;
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(f, "link");
        char lp[JS_PATH_MAX];
        js_path_key(lp, path, "link");
        static const char *const lkeys[] = {"latency", "bandwidth", NULL};
        if (!l) return js_fail(ctx, path, "link", "is required for kind \"allreduce\"");
        double la, lb;
        cal_link_figures(a->kind, a->fit.alpha, a->fit.beta, nr, &la, &lb);
        if ((rc = js_expect_object(ctx, l, lp)) || (rc = js_check_keys(ctx, l, lp, lkeys)) ||
            (rc = derived(ctx, l, lp, "bandwidth", UNIT_BANDWIDTH, lb)))
            return rc;
        double lat = 0;
        const cJSON *lv = cJSON_GetObjectItemCaseSensitive(l, "latency");
        if (!lv) return js_fail(ctx, lp, "latency", "is required");
        if (!cJSON_IsNumber(lv) || !agree(lv->valuedouble, la)) {
            char lpp[JS_PATH_MAX];
            if (cJSON_IsNumber(lv)) lat = lv->valuedouble;
            return js_fail(ctx, js_path_key(lpp, lp, "latency"), NULL,
                           "expected the number %s = %.6g s, found %.6g",
                           a->kind == CAL_KIND_ALLREDUCE ? "alpha/(2(ranks-1))"
                           : (a->kind == CAL_KIND_ALLTOALL || a->kind == CAL_KIND_SENDRECV) ? "alpha"
                                                                                            : "alpha/(ranks-1)",
                           la, lat);
        }
    } else {
        if (cJSON_GetObjectItemCaseSensitive(f, "bandwidth") || cJSON_GetObjectItemCaseSensitive(f, "link"))
            return js_fail(ctx, path, cJSON_GetObjectItemCaseSensitive(f, "link") ? "link" : "bandwidth",
                           "only applies to collective kinds");
        double thr = 0;
        if ((rc = js_get_number(ctx, f, path, "throughput", true, 1e-300, 1e300, &thr))) return rc;
        if (!agree(thr, 1.0 / a->fit.beta))
            return js_fail(ctx, path, "throughput", "is %.6g but 1/beta is %.6g", thr, 1.0 / a->fit.beta);
    }
    const cJSON *pts = cJSON_GetObjectItemCaseSensitive(f, "points");
    char pp[JS_PATH_MAX], ip[JS_PATH_MAX];
    js_path_key(pp, path, "points");
    if (!pts) return js_fail(ctx, path, "points", "is required (the measurements behind the fit)");
    if ((rc = js_expect_array(ctx, pts, pp))) return rc;
    int n = cJSON_GetArraySize(pts);
    if (n < 2) return js_fail(ctx, pp, NULL, "expected at least 2 sizes, found %d", n);
    a->points = dt_xcalloc((size_t)n, sizeof *a->points);
    int total = 0;
    for (const cJSON *p = pts->child; p; p = p->next) {
        cal_point *cp = &a->points[a->n_points++];
        if ((rc = load_point(ctx, p, js_path_index(ip, pp, a->n_points - 1), a->kind, cp))) return rc;
        if (a->n_points > 1 && !(cp->size > a->points[a->n_points - 2].size))
            return js_fail(ctx, ip, a->kind == CAL_KIND_TOPK ? "elements" : "size",
                           "sizes must increase from one point to the next");
        if (in_fit_range(a, cp->size)) total += cp->n_samples;
    }
    if (total != a->fit.n_samples)
        return js_fail(ctx, path, "samples", "is %d but the points%s hold %d samples", a->fit.n_samples,
                       fr ? " inside fit_range" : "", total);
    return DT_OK;
}

int cal_from_json(const js_ctx *ctx, const cJSON *root, cal_result **out)
{
    static const char *const keys[] = {"format", "version", "date", "machine", "backend", "ranks", "dtype", "chunk",
                                       "repeats", "warmup", "fit_method", "fits", "compute", "source", NULL};
    static const char *const mkeys[] = {"hostname", "cpu_model", "cores", "gpu", NULL};
    *out = NULL;
    int rc;
    if ((rc = js_expect_object(ctx, root, "")) || (rc = js_check_keys(ctx, root, "", keys))) return rc;
    const char *s = NULL;
    if ((rc = js_get_string(ctx, root, "", "format", true, &s))) return rc;
    if (strcmp(s, CAL_FORMAT) != 0) return js_fail(ctx, "", "format", "expected \"%s\", found \"%s\"", CAL_FORMAT, s);
    long long v = 0;
    if ((rc = js_get_int(ctx, root, "", "version", true, 0, 1000, &v))) return rc;
    if (v != CAL_VERSION) return js_fail(ctx, "", "version", "expected %d (this dtsim reads version %d), found %lld", CAL_VERSION, CAL_VERSION, v);
    cal_result *c = dt_xcalloc(1, sizeof *c);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "machine");
    long long ll = 0;
    int bk = 0, dt = 0;
    const char *hn = "", *cpu = "", *gpu = "", *date = "", *method = "";
    if (!m) { rc = js_fail(ctx, "", "machine", "is required (hostname, cpu_model, cores, gpu)"); goto fail; }
    if ((rc = js_get_string(ctx, root, "", "date", true, &date)) || (rc = js_expect_object(ctx, m, "machine")) ||
        (rc = js_check_keys(ctx, m, "machine", mkeys)) ||
        (rc = js_get_string(ctx, m, "machine", "hostname", true, &hn)) ||
        (rc = js_get_string(ctx, m, "machine", "cpu_model", true, &cpu)) ||
        (rc = js_get_int(ctx, m, "machine", "cores", true, 0, 1 << 20, &ll)) ||
        (rc = js_get_string(ctx, m, "machine", "gpu", false, &gpu)))
        goto fail;
    /* ISO-8601 UTC as written: YYYY-MM-DDTHH:MM:SSZ */
    {
        int y, mo, d, h, mi, se;
        char z = 0;
        if (strlen(date) != 20 || sscanf(date, "%4d-%2d-%2dT%2d:%2d:%2d%c", &y, &mo, &d, &h, &mi, &se, &z) != 7 ||
            z != 'Z' || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60) {
            rc = js_fail(ctx, "", "date", "expected an ISO-8601 UTC date such as \"2026-11-21T23:45:00Z\", found \"%s\"", date);
            goto fail;
        }
    }
    snprintf(c->date, sizeof c->date, "%s", date);
    snprintf(c->hostname, sizeof c->hostname, "%s", hn);
    snprintf(c->cpu_model, sizeof c->cpu_model, "%s", cpu);
    snprintf(c->gpu, sizeof c->gpu, "%s", gpu);
    c->cores = (int)ll;
    if ((rc = js_get_enum(ctx, root, "", "backend", true, backend_names, &bk)) ||
        (rc = js_get_int(ctx, root, "", "ranks", true, 1, 1 << 20, &ll)))
        goto fail;
    snprintf(c->backend, sizeof c->backend, "%s", backend_names[bk]);
    c->ranks = (int)ll;
    if ((rc = js_get_enum(ctx, root, "", "dtype", true, dtype_names, &dt))) goto fail;
    snprintf(c->dtype, sizeof c->dtype, "%s", dtype_names[dt]);
    if ((rc = js_get_quantity(ctx, root, "", "chunk", UNIT_SIZE, false, false, &c->chunk_bytes)) ||
        (rc = js_get_int(ctx, root, "", "repeats", true, 1, 1 << 30, &ll)))
        goto fail;
    c->repeats = (int)ll;
    if ((rc = js_get_int(ctx, root, "", "warmup", true, 0, 1 << 30, &ll)) ||
        (rc = js_get_string(ctx, root, "", "fit_method", false, &method)))
        goto fail;
    c->warmup = (int)ll;
    const cJSON *fits = cJSON_GetObjectItemCaseSensitive(root, "fits");
    if (!fits) { rc = js_fail(ctx, "", "fits", "is required (an array of fitted algorithms)"); goto fail; }
    if ((rc = js_expect_array(ctx, fits, "fits"))) goto fail;
    int n = cJSON_GetArraySize(fits);
    if (n < 1) { rc = js_fail(ctx, "fits", NULL, "expected at least one fit, found an empty array"); goto fail; }
    char fp[JS_PATH_MAX];
    int i = 0;
    for (const cJSON *f = fits->child; f; f = f->next, i++) {
        cal_algo *a = cal_result_add_algo(c, "", CAL_KIND_ALLREDUCE);
        if ((rc = load_fit(ctx, f, js_path_index(fp, "fits", i), c, a))) goto fail;
        for (int j = 0; j < i; j++)
            if (!strcmp(c->algos[j].name, a->name)) {
                rc = js_fail(ctx, fp, "name", "\"%s\" appears twice (fits[%d] has it too)", a->name, j);
                goto fail;
            }
    }
    const cJSON *co = cJSON_GetObjectItemCaseSensitive(root, "compute");
    if (co && (rc = gpu_tables_from_json(ctx, co, "compute", c->compute))) goto fail;
    const char *origin = NULL;
    if ((rc = js_get_string(ctx, root, "", "source", false, &origin))) goto fail;
    if (origin) snprintf(c->origin, sizeof c->origin, "%s", origin);
    *out = c;
    return DT_OK;
fail:
    cal_result_destroy(c);
    return rc;
}

int cal_load_file(const char *filename, cal_result **out, dt_error *err)
{
    *out = NULL;
    cJSON *root = NULL;
    int rc = js_parse_file(filename, &root, err);
    if (rc) return rc;
    js_ctx ctx = {.file = filename, .err = err};
    rc = cal_from_json(&ctx, root, out);
    cJSON_Delete(root);
    if (rc == DT_OK) {
        const char *base = strrchr(filename, '/');
        snprintf((*out)->source, sizeof (*out)->source, "%s", base ? base + 1 : filename);
    }
    return rc;
}

/* ---------------------------------------------------------------- applying */

const cal_algo *cal_link_fit_scope(const cal_result *c, cal_scope scope)
{
    /* MPI_Allreduce before the reduce-scatter + all-gather pair: it is the all-reduce the user's
     * program calls, and Open MPI's pair can be an order of magnitude slower (338 MB/s against
     * 5.93 GB/s measured on one machine), which applied to every link made MPI look 17x slow */
    static const char *const order[] = {"ring", "nccl", "tcp_ring", "mpi_allreduce", "mpi_rs_ag", NULL};
    static const cal_kind kinds[] = {CAL_KIND_ALLREDUCE, CAL_KIND_REDUCE_SCATTER, CAL_KIND_ALLGATHER,
                                     CAL_KIND_SENDRECV,  CAL_KIND_ALLTOALL,       CAL_KIND_BROADCAST,
                                     CAL_KIND_REDUCE};
    for (const char *const *o = order; *o; o++)
        for (int i = 0; i < c->n_algos; i++)
            if (c->algos[i].kind == CAL_KIND_ALLREDUCE && c->algos[i].scope == scope && !strcmp(c->algos[i].name, *o))
                return &c->algos[i];
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        for (int i = 0; i < c->n_algos; i++)
            if (c->algos[i].kind == kinds[k] && c->algos[i].scope == scope) return &c->algos[i];
    return NULL;
}

const cal_algo *cal_link_fit(const cal_result *c) { return cal_link_fit_scope(c, CAL_SCOPE_INTRA); }

int cal_find_fit(const cal_result *c, const char *name)
{
    for (int i = 0; i < c->n_algos; i++)
        if (!strcmp(c->algos[i].name, name)) return i;
    return -1;
}

double cal_topk_throughput(const cal_result *c)
{
    for (int i = 0; i < c->n_algos; i++)
        if (c->algos[i].kind == CAL_KIND_TOPK && c->algos[i].fit.beta > 0) return 1.0 / c->algos[i].fit.beta;
    return 0.0;
}
