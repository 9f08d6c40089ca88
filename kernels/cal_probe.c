/* cal_probe.c - the compute probe's host half (include/dtsim/probe.h): shape lists, reading a
 * measurement back, and the report that sets it against dtsim's GEMM model.
 *
 * Nothing here touches a GPU, so all of it is tested on any machine; the measurement itself is
 * kernels/kern_probe.cu. The report's comparison is deliberately the model's own functions
 * (gpu_gemm_time, gpu_gemm_quantization), not a copy of their formulas: a change to the model
 * changes what the probe says about it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtsim/gpu.h"
#include "dtsim/json.h"
#include "dtsim/probe.h"
#include "probe_defaults.h"

static const char *const layout_names[] = {"fwd", "dgrad", "wgrad", NULL};

const char *cal_probe_layout_name(cal_probe_layout l)
{
    return l >= 0 && l < CAL_PROBE_LAYOUT_COUNT ? layout_names[l] : "?";
}

int cal_probe_default_shapes(cal_probe_shape *out, int max)
{
    static const struct {
        const char *name;
        double m, n, k;
        int layout;
    } d[] = {PROBE_DEFAULT_SHAPES};
    int n = (int)(sizeof d / sizeof *d);
    DT_ASSERT(n == PROBE_DEFAULT_COUNT && max >= n);
    for (int i = 0; i < n; i++) {
        memset(&out[i], 0, sizeof out[i]);
        snprintf(out[i].name, sizeof out[i].name, "%s", d[i].name);
        out[i].m = d[i].m;
        out[i].n = d[i].n;
        out[i].k = d[i].k;
        out[i].layout = (cal_probe_layout)d[i].layout;
        out[i].sustain_s = -1;
    }
    return n;
}

void cal_probe_opts_default(cal_probe_opts *o)
{
    o->warmup = 10;
    o->repeats = 50;
    o->sustain_s = 60;
    o->window_s = 1;
    o->hbm_bytes = 1024.0 * 1024 * 1024;
}

/* ---------------------------------------------------------------- shape files */

static int get_dim(const js_ctx *ctx, const cJSON *o, const char *path, const char *key, double *out)
{
    long long v = 0;
    int rc = js_get_int(ctx, o, path, key, true, 1, (long long)CAL_PROBE_MAX_DIM, &v);
    *out = (double)v;
    return rc;
}

static int parse_shape(const js_ctx *ctx, const cJSON *o, const char *path, cal_probe_shape *s)
{
    static const char *const keys[] = {"name", "m", "n", "k", "layout", "sustain", NULL};
    int rc;
    if ((rc = js_expect_object(ctx, o, path)) || (rc = js_check_keys(ctx, o, path, keys))) return rc;
    memset(s, 0, sizeof *s);
    const char *name = NULL;
    if ((rc = js_get_string(ctx, o, path, "name", true, &name))) return rc;
    if (!*name || strlen(name) >= sizeof s->name)
        return js_fail(ctx, path, "name", "expected a name of 1 to %d characters, found \"%s\"",
                       (int)sizeof s->name - 1, name);
    snprintf(s->name, sizeof s->name, "%s", name);
    if ((rc = get_dim(ctx, o, path, "m", &s->m)) || (rc = get_dim(ctx, o, path, "n", &s->n)) ||
        (rc = get_dim(ctx, o, path, "k", &s->k)))
        return rc;
    int layout = CAL_PROBE_FWD;
    if ((rc = js_get_enum(ctx, o, path, "layout", false, layout_names, &layout))) return rc;
    s->layout = (cal_probe_layout)layout;
    s->sustain_s = -1;
    if ((rc = js_get_number(ctx, o, path, "sustain", false, 0, CAL_PROBE_MAX_WINDOWS, &s->sustain_s))) return rc;
    return DT_OK;
}

static int parse_shapes(const js_ctx *ctx, const cJSON *root, cal_probe_shape *out, int max, int *n)
{
    const cJSON *arr = root;
    const char *base = "";
    int rc;
    if (cJSON_IsObject(root)) {
        static const char *const keys[] = {"shapes", NULL};
        if ((rc = js_check_keys(ctx, root, "", keys))) return rc;
        arr = cJSON_GetObjectItemCaseSensitive(root, "shapes");
        base = "shapes";
        if (!arr) return js_fail(ctx, "", "shapes", "expected an array of GEMM shapes, found nothing");
    }
    if (!cJSON_IsArray(arr)) {
        char d[64];
        return js_fail(ctx, base, NULL, "expected an array of GEMM shapes (or {\"shapes\": [...]}), found %s",
                       js_describe(arr, d, sizeof d));
    }
    int count = cJSON_GetArraySize(arr);
    if (count < 1 || count > max)
        return js_fail(ctx, base, NULL, "expected 1 to %d shapes, found %d", max, count);
    char path[JS_PATH_MAX];
    int i = 0;
    for (const cJSON *e = arr->child; e; e = e->next, i++) {
        js_path_index(path, base, i);
        if ((rc = parse_shape(ctx, e, path, &out[i]))) return rc;
        for (int j = 0; j < i; j++)
            if (!strcmp(out[j].name, out[i].name))
                return js_fail(ctx, path, "name", "expected a name not used before, found \"%s\" (also shape %d)",
                               out[i].name, j);
    }
    *n = count;
    return DT_OK;
}

int cal_probe_shapes_parse(const char *text, size_t len, const char *file, cal_probe_shape *out, int max, int *n,
                           dt_error *err)
{
    cJSON *root = NULL;
    int rc = js_parse_text(text, len, file, &root, err);
    if (rc) return rc;
    js_ctx ctx = {file, err};
    rc = parse_shapes(&ctx, root, out, max, n);
    cJSON_Delete(root);
    return rc;
}

int cal_probe_shapes_file(const char *path, cal_probe_shape *out, int max, int *n, dt_error *err)
{
    cJSON *root = NULL;
    int rc = js_parse_file(path, &root, err);
    if (rc) return rc;
    js_ctx ctx = {path, err};
    rc = parse_shapes(&ctx, root, out, max, n);
    cJSON_Delete(root);
    return rc;
}

/* ---------------------------------------------------------------- a measurement read back */

/* A report (cal_probe_report) carries the measurement under the same keys plus its own; those
 * are allowed so that a report can be read back and compared against another spec. */
static int parse_gemm(const js_ctx *ctx, const cJSON *o, const char *path, cal_probe_gemm *g)
{
    static const char *const keys[] = {"name", "m", "n", "k", "layout", "sustain", "flops", "burst_s",
                                       "burst_min_s", "repeats", "sustain_s", "sustain_start_unix", "window_tflops",
                                       /* report-only */
                                       "burst_tflops", "sustained", "dtsim", NULL};
    int rc;
    if ((rc = js_expect_object(ctx, o, path)) || (rc = js_check_keys(ctx, o, path, keys))) return rc;
    memset(g, 0, sizeof *g);
    cJSON *shape = cJSON_Duplicate(o, 1); /* the shape's keys only, through the shape parser */
    static const char *const extra[] = {"flops", "burst_s", "burst_min_s", "repeats", "sustain_s", "sustain_start_unix", "window_tflops",
                                        "burst_tflops", "sustained", "dtsim", NULL};
    for (const char *const *k = extra; *k; k++) cJSON_DeleteItemFromObjectCaseSensitive(shape, *k);
    rc = parse_shape(ctx, shape, path, &g->shape);
    cJSON_Delete(shape);
    if (rc) return rc;
    g->flops = 2 * g->shape.m * g->shape.n * g->shape.k;
    long long reps = 0;
    if ((rc = js_get_number(ctx, o, path, "burst_s", true, 1e-9, 3600, &g->burst_s)) ||
        (rc = js_get_number(ctx, o, path, "burst_min_s", false, 1e-9, 3600, &g->burst_min_s)) ||
        (rc = js_get_int(ctx, o, path, "repeats", false, 1, 1000000, &reps)) ||
        (rc = js_get_number(ctx, o, path, "sustain_s", false, 0, 1e5, &g->sustain_s)) ||
        (rc = js_get_number(ctx, o, path, "sustain_start_unix", false, 0, 1e11, &g->sustain_start_unix)))
        return rc;
    g->repeats = (int)reps;
    double flops = 0;
    if ((rc = js_get_number(ctx, o, path, "flops", false, 0, 1e30, &flops))) return rc;
    if (flops && fabs(flops - g->flops) > 1e-9 * g->flops)
        return js_fail(ctx, path, "flops", "expected 2·m·n·k = %.17g, found %.17g", g->flops, flops);
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(o, "window_tflops");
    if (w) {
        char wp[JS_PATH_MAX];
        js_path_key(wp, path, "window_tflops");
        if ((rc = js_expect_array(ctx, w, wp))) return rc;
        int n = cJSON_GetArraySize(w);
        if (n > CAL_PROBE_MAX_WINDOWS) return js_fail(ctx, wp, NULL, "expected at most %d windows, found %d", CAL_PROBE_MAX_WINDOWS, n);
        int i = 0;
        for (const cJSON *e = w->child; e; e = e->next, i++) {
            char ep[JS_PATH_MAX];
            js_path_index(ep, wp, i);
            if (!cJSON_IsNumber(e) || !(e->valuedouble > 0) || !isfinite(e->valuedouble)) {
                char d[64];
                return js_fail(ctx, ep, NULL, "expected a rate in TFLOP/s above 0, found %s", js_describe(e, d, sizeof d));
            }
            g->window_tflops[i] = e->valuedouble;
        }
        g->windows = n;
    }
    if (g->windows && !(g->sustain_s > 0))
        return js_fail(ctx, path, "sustain_s", "expected the sustained run's length (s) beside its %d windows, found none",
                       g->windows);
    return DT_OK;
}

static int parse_run(const js_ctx *ctx, const cJSON *root, cal_probe_run *r)
{
    static const char *const keys[] = {"probe", "device", "sms", "clock_mhz", "cuda_runtime", "cublas", "settings",
                                       "gemms", "hbm",
                                       /* report-only */
                                       "dtsim", "suggested_spec", "suggested_from", NULL};
    int rc;
    if ((rc = js_expect_object(ctx, root, "")) || (rc = js_check_keys(ctx, root, "", keys))) return rc;
    memset(r, 0, sizeof *r);
    const char *probe = NULL, *device = NULL;
    if ((rc = js_get_string(ctx, root, "", "probe", true, &probe))) return rc;
    if (strcmp(probe, "dtsim-gpu-probe"))
        return js_fail(ctx, "", "probe", "expected \"dtsim-gpu-probe\" (a file written by the probe), found \"%s\"", probe);
    if ((rc = js_get_string(ctx, root, "", "device", true, &device))) return rc;
    snprintf(r->device, sizeof r->device, "%s", device);
    long long sms = 0, rt = 0, cb = 0;
    if ((rc = js_get_int(ctx, root, "", "sms", true, 1, 4096, &sms)) ||
        (rc = js_get_number(ctx, root, "", "clock_mhz", false, 0, 1e5, &r->clock_mhz)) ||
        (rc = js_get_int(ctx, root, "", "cuda_runtime", false, 0, 1000000, &rt)) ||
        (rc = js_get_int(ctx, root, "", "cublas", false, 0, 1000000, &cb)))
        return rc;
    r->sms = (int)sms;
    r->cuda_runtime = (int)rt;
    r->cublas = (int)cb;
    cal_probe_opts_default(&r->opts);
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(root, "settings");
    if (st) {
        static const char *const sk[] = {"warmup", "repeats", "sustain_s", "window_s", "hbm_bytes", NULL};
        long long wu = r->opts.warmup, re = r->opts.repeats;
        if ((rc = js_expect_object(ctx, st, "settings")) || (rc = js_check_keys(ctx, st, "settings", sk)) ||
            (rc = js_get_int(ctx, st, "settings", "warmup", false, 0, 1000000, &wu)) ||
            (rc = js_get_int(ctx, st, "settings", "repeats", false, 1, 1000000, &re)) ||
            (rc = js_get_number(ctx, st, "settings", "sustain_s", false, 0, 1e5, &r->opts.sustain_s)) ||
            (rc = js_get_number(ctx, st, "settings", "window_s", false, 1e-3, 1e3, &r->opts.window_s)) ||
            (rc = js_get_number(ctx, st, "settings", "hbm_bytes", false, 0, 1e15, &r->opts.hbm_bytes)))
            return rc;
        r->opts.warmup = (int)wu;
        r->opts.repeats = (int)re;
    }
    const cJSON *gs = cJSON_GetObjectItemCaseSensitive(root, "gemms");
    if (!gs) return js_fail(ctx, "", "gemms", "expected the array of measured GEMMs, found nothing");
    if ((rc = js_expect_array(ctx, gs, "gemms"))) return rc;
    int n = cJSON_GetArraySize(gs);
    if (n > CAL_PROBE_MAX_SHAPES) return js_fail(ctx, "gemms", NULL, "expected at most %d GEMMs, found %d", CAL_PROBE_MAX_SHAPES, n);
    int i = 0;
    char path[JS_PATH_MAX];
    for (const cJSON *e = gs->child; e; e = e->next, i++) {
        js_path_index(path, "gemms", i);
        if ((rc = parse_gemm(ctx, e, path, &r->gemms[i]))) return rc;
    }
    r->n_gemms = n;
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(root, "hbm");
    if (h) {
        static const char *const hk[] = {"bytes", "copy_s", "copy_bytes_moved", "rmw_s", "rmw_bytes_moved",
                                         "copy_gbs", "rmw_gbs", "dtsim", NULL};
        if ((rc = js_expect_object(ctx, h, "hbm")) || (rc = js_check_keys(ctx, h, "hbm", hk)) ||
            (rc = js_get_number(ctx, h, "hbm", "bytes", true, 1, 1e15, &r->hbm_bytes)) ||
            (rc = js_get_number(ctx, h, "hbm", "copy_s", true, 1e-9, 3600, &r->copy_s)) ||
            (rc = js_get_number(ctx, h, "hbm", "copy_bytes_moved", true, 1, 1e16, &r->copy_bytes_moved)) ||
            (rc = js_get_number(ctx, h, "hbm", "rmw_s", true, 1e-9, 3600, &r->rmw_s)) ||
            (rc = js_get_number(ctx, h, "hbm", "rmw_bytes_moved", true, 1, 1e16, &r->rmw_bytes_moved)))
            return rc;
    }
    return DT_OK;
}

int cal_probe_run_parse(const char *text, size_t len, const char *file, cal_probe_run *out, dt_error *err)
{
    cJSON *root = NULL;
    int rc = js_parse_text(text, len, file, &root, err);
    if (rc) return rc;
    js_ctx ctx = {file, err};
    rc = parse_run(&ctx, root, out);
    cJSON_Delete(root);
    return rc;
}

int cal_probe_run_file(const char *path, cal_probe_run *out, dt_error *err)
{
    cJSON *root = NULL;
    int rc = js_parse_file(path, &root, err);
    if (rc) return rc;
    js_ctx ctx = {path, err};
    rc = parse_run(&ctx, root, out);
    cJSON_Delete(root);
    return rc;
}

/* ---------------------------------------------------------------- against the model */

const char *cal_probe_preset_for(const char *device)
{
    /* Order matters: "H100 PCIe" and "H100 NVL" must not fall to the SXM preset (756 and 835
     * TFLOP/s bf16 against 989), so only the SXM5 part's names match it. */
    if (strstr(device, "H100") && (strstr(device, "HBM3") || strstr(device, "SXM"))) return "H100-SXM";
    if (strstr(device, "H200")) return "H200-SXM";
    if (strstr(device, "A100") && strstr(device, "SXM")) return strstr(device, "40GB") ? "A100-SXM-40GB" : "A100-SXM";
    if (strstr(device, "B200")) return "B200";
    return NULL;
}

static gpu_gemm as_gemm(const cal_probe_shape *s)
{
    gpu_gemm g = {s->m, s->n, s->k, 1, 1, false};
    return g;
}

double cal_probe_predict_s(const gpu_spec *spec, const cal_probe_shape *s)
{
    gpu_gemm g = as_gemm(s);
    return (double)gpu_gemm_time(spec, GPU_BF16, &g, 1) * 1e-12;
}

double cal_probe_implied_eff(const gpu_spec *spec, const cal_probe_shape *s, double t)
{
    double peak = spec->peak_flops[GPU_BF16];
    double q = gpu_gemm_quantization(spec, s->m, s->n);
    if (!(peak > 0 && q > 0 && t > 0)) return 0;
    return 2 * s->m * s->n * s->k / (peak * q * t);
}

static double mean_of(const double *v, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++) s += v[i];
    return n ? s / n : 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(double *v, int n)
{
    if (n == 0) return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The comparison of one measured time with the model: dtsim's time, which bound decides it,
 * the rate ratio (> 1: the GPU ran faster than dtsim predicts) and the implied efficiency. */
static void add_comparison(cJSON *o, const gpu_spec *spec, const cal_probe_shape *s, double t)
{
    double pred = cal_probe_predict_s(spec, s);
    cJSON_AddNumberToObject(o, "measured_over_predicted", pred / t);
    cJSON_AddNumberToObject(o, "implied_matmul_eff", cal_probe_implied_eff(spec, s, t));
}

cJSON *cal_probe_report(const cal_probe_run *r, const gpu_spec *spec, const char *preset)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "probe", "dtsim-gpu-probe");
    cJSON_AddStringToObject(o, "device", r->device);
    cJSON_AddNumberToObject(o, "sms", r->sms);
    cJSON_AddNumberToObject(o, "clock_mhz", r->clock_mhz);
    cJSON_AddNumberToObject(o, "cuda_runtime", r->cuda_runtime);
    cJSON_AddNumberToObject(o, "cublas", r->cublas);
    cJSON *st = cJSON_AddObjectToObject(o, "settings");
    cJSON_AddNumberToObject(st, "warmup", r->opts.warmup);
    cJSON_AddNumberToObject(st, "repeats", r->opts.repeats);
    cJSON_AddNumberToObject(st, "sustain_s", r->opts.sustain_s);
    cJSON_AddNumberToObject(st, "window_s", r->opts.window_s);
    cJSON_AddNumberToObject(st, "hbm_bytes", r->opts.hbm_bytes);
    if (spec) {
        cJSON *d = cJSON_AddObjectToObject(o, "dtsim");
        cJSON_AddStringToObject(d, "spec", preset ? preset : spec->name);
        cJSON_AddNumberToObject(d, "peak_bf16_tflops", spec->peak_flops[GPU_BF16] / 1e12);
        cJSON_AddNumberToObject(d, "sms", spec->sms);
        cJSON_AddNumberToObject(d, "matmul_eff", spec->compute_eff[GPU_OP_MATMUL]);
        cJSON_AddNumberToObject(d, "hbm_bw_gbs", spec->hbm_bw / 1e9);
        cJSON_AddNumberToObject(d, "memory_eff", spec->memory_eff);
        if (spec->sms != r->sms) {
            char note[200];
            snprintf(note, sizeof note, "the device reports %d SMs, the spec assumes %d: its wave quantization is not this device's",
                     r->sms, spec->sms);
            cJSON_AddStringToObject(d, "warning", note);
        }
    }
    cJSON *gs = cJSON_AddArrayToObject(o, "gemms");
    double eff_burst[CAL_PROBE_MAX_SHAPES], eff_last[CAL_PROBE_MAX_SHAPES];
    int nb = 0, nl = 0;
    for (int i = 0; i < r->n_gemms; i++) {
        const cal_probe_gemm *g = &r->gemms[i];
        const cal_probe_shape *s = &g->shape;
        cJSON *e = cJSON_CreateObject();
        cJSON_AddItemToArray(gs, e);
        cJSON_AddStringToObject(e, "name", s->name);
        cJSON_AddNumberToObject(e, "m", s->m);
        cJSON_AddNumberToObject(e, "n", s->n);
        cJSON_AddNumberToObject(e, "k", s->k);
        cJSON_AddStringToObject(e, "layout", cal_probe_layout_name(s->layout));
        cJSON_AddNumberToObject(e, "flops", g->flops);
        cJSON_AddNumberToObject(e, "burst_s", g->burst_s);
        cJSON_AddNumberToObject(e, "burst_min_s", g->burst_min_s);
        cJSON_AddNumberToObject(e, "repeats", g->repeats);
        cJSON_AddNumberToObject(e, "burst_tflops", g->flops / g->burst_s / 1e12);
        cJSON_AddNumberToObject(e, "sustain_s", g->sustain_s);
        cJSON_AddNumberToObject(e, "sustain_start_unix", g->sustain_start_unix);
        cJSON *w = cJSON_AddArrayToObject(e, "window_tflops");
        for (int j = 0; j < g->windows; j++) cJSON_AddItemToArray(w, cJSON_CreateNumber(g->window_tflops[j]));
        double first = 0, last = 0;
        if (g->windows) {
            cJSON *su = cJSON_AddObjectToObject(e, "sustained");
            first = g->window_tflops[0];
            last = g->window_tflops[g->windows - 1];
            double lo = first;
            for (int j = 0; j < g->windows; j++) lo = g->window_tflops[j] < lo ? g->window_tflops[j] : lo;
            cJSON_AddNumberToObject(su, "first_tflops", first);
            cJSON_AddNumberToObject(su, "last_tflops", last);
            cJSON_AddNumberToObject(su, "mean_tflops", mean_of(g->window_tflops, g->windows));
            cJSON_AddNumberToObject(su, "min_tflops", lo);
            /* last against burst: what minutes of load cost against a benchmark's milliseconds */
            cJSON_AddNumberToObject(su, "last_over_burst", last * 1e12 * g->burst_s / g->flops);
        }
        if (!spec) continue;
        cJSON *d = cJSON_AddObjectToObject(e, "dtsim");
        double pred = cal_probe_predict_s(spec, s);
        double q = gpu_gemm_quantization(spec, s->m, s->n);
        double compute = g->flops / (spec->peak_flops[GPU_BF16] * spec->compute_eff[GPU_OP_MATMUL] * q);
        cJSON_AddNumberToObject(d, "quantization", q);
        cJSON_AddNumberToObject(d, "predicted_s", pred);
        cJSON_AddNumberToObject(d, "predicted_tflops", g->flops / pred / 1e12);
        /* which term of gpu_gemm_time's max decides: its time above the compute term (beyond
         * its picosecond rounding) is the memory term's */
        cJSON_AddStringToObject(d, "bound", pred > compute + 1e-12 ? "memory" : "compute");
        cJSON *b = cJSON_AddObjectToObject(d, "burst");
        add_comparison(b, spec, s, g->burst_s);
        eff_burst[nb++] = cal_probe_implied_eff(spec, s, g->burst_s);
        if (g->windows) {
            double t_last = g->flops / (last * 1e12);
            cJSON *l = cJSON_AddObjectToObject(d, "sustained_last");
            add_comparison(l, spec, s, t_last);
            eff_last[nl++] = cal_probe_implied_eff(spec, s, t_last);
        }
    }
    if (r->hbm_bytes > 0) {
        cJSON *h = cJSON_AddObjectToObject(o, "hbm");
        cJSON_AddNumberToObject(h, "bytes", r->hbm_bytes);
        cJSON_AddNumberToObject(h, "copy_s", r->copy_s);
        cJSON_AddNumberToObject(h, "copy_bytes_moved", r->copy_bytes_moved);
        cJSON_AddNumberToObject(h, "copy_gbs", r->copy_bytes_moved / r->copy_s / 1e9);
        cJSON_AddNumberToObject(h, "rmw_s", r->rmw_s);
        cJSON_AddNumberToObject(h, "rmw_bytes_moved", r->rmw_bytes_moved);
        cJSON_AddNumberToObject(h, "rmw_gbs", r->rmw_bytes_moved / r->rmw_s / 1e9);
        if (spec) {
            cJSON *d = cJSON_AddObjectToObject(h, "dtsim");
            cJSON_AddNumberToObject(d, "copy_memory_eff", r->copy_bytes_moved / r->copy_s / spec->hbm_bw);
            cJSON_AddNumberToObject(d, "rmw_memory_eff", r->rmw_bytes_moved / r->rmw_s / spec->hbm_bw);
        }
    }
    if (spec && (nb || r->hbm_bytes > 0)) {
        /* The spec a user would write from this run: the median over the shapes of the
         * efficiency each implies, sustained where measured (training runs for minutes), and
         * the read-modify-write's HBM fraction (a training step's memory-bound kernels read
         * and write; a copy engine's copy is not one of them). The spread of the shapes'
         * figures says whether one efficiency describes them (shape effects the quantization
         * model misses show up as a wide min..max). */
        cJSON *sg = cJSON_AddObjectToObject(o, "suggested_spec");
        cJSON_AddStringToObject(sg, "preset", preset ? preset : spec->name);
        double *v = nl ? eff_last : eff_burst;
        int n = nl ? nl : nb;
        if (n) {
            double lo = v[0], hi = v[0];
            for (int i = 0; i < n; i++) lo = v[i] < lo ? v[i] : lo, hi = v[i] > hi ? v[i] : hi;
            double med = median_of(v, n);
            cJSON *ef = cJSON_AddObjectToObject(sg, "efficiency");
            cJSON_AddNumberToObject(ef, "matmul", round(fmin(med, 1.0) * 1000) / 1000);
            cJSON *why = cJSON_AddObjectToObject(o, "suggested_from");
            cJSON_AddStringToObject(why, "matmul", nl ? "sustained_last" : "burst");
            cJSON_AddNumberToObject(why, "shapes", n);
            cJSON_AddNumberToObject(why, "matmul_min", lo);
            cJSON_AddNumberToObject(why, "matmul_max", hi);
        }
        if (r->hbm_bytes > 0)
            cJSON_AddNumberToObject(sg, "memory_eff",
                                    round(fmin(r->rmw_bytes_moved / r->rmw_s / spec->hbm_bw, 1.0) * 1000) / 1000);
    }
    return o;
}
