/* gpu.c - GPU presets, GPU specs from JSON, and the roofline op-time model.
 *
 * Presets are datasheet figures (dense, i.e. without 2:4 structured sparsity) of the SXM parts;
 * the efficiencies are defaults a user is expected to calibrate (docs/formats.md, "GPU specs and
 * presets", says where each number comes from). A spec is plain data, so everything here is
 * pure: no allocation except the cJSON tree gpu_spec_to_json() hands to its caller.
 */
#include "dtsim/gpu.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "dtsim/units.h"

static const char *const precision_names[GPU_PRECISION_COUNT + 1] = {"fp32", "tf32", "fp16",
                                                                     "bf16", "fp8", NULL};
static const char *const class_names[GPU_OP_CLASS_COUNT + 1] = {"matmul", "attention",
                                                                "elementwise", "optimizer", NULL};

/* Default achieved fractions. matmul ~0.7 and attention ~0.5 of dense peak are what large
 * GEMMs and fused (flash) attention typically sustain on Hopper-class parts; elementwise and
 * optimizer kernels are memory bound, so their compute fraction rarely matters (0.5 keeps a
 * compute floor for them). memory_eff 0.8 is a typical STREAM-like fraction of HBM peak. */
#define EFF_MATMUL 0.7
#define EFF_ATTENTION 0.5
#define EFF_ELEMENTWISE 0.5
#define EFF_OPTIMIZER 0.5
#define EFF_MEMORY 0.8

#define GiB 1073741824.0
#define T 1e12

typedef struct preset {
    const char *name;
    double flops[GPU_PRECISION_COUNT];
    double hbm_bytes, hbm_bw, nvlink_bw, cost_per_hour;
} preset;

/* Datasheet dense peaks (fp32 is the non-tensor rate). NVLink is per direction: the datasheet
 * figure (600 GB/s, 900 GB/s, 1.8 TB/s) is both directions together. Costs are assumptions
 * (rough 2025 cloud on-demand rates per GPU-hour), documented as such. */
static const preset presets[] = {
    {"A100-SXM", {19.5 * T, 156 * T, 312 * T, 312 * T, 0}, 80 * GiB, 2039e9, 300e9, 1.80},
    {"H100-SXM", {67 * T, 494.5 * T, 989.5 * T, 989.5 * T, 1979 * T}, 80 * GiB, 3.35e12, 450e9,
     2.50},
    {"H200-SXM", {67 * T, 494.5 * T, 989.5 * T, 989.5 * T, 1979 * T}, 141e9, 4.8e12, 450e9, 3.50},
    {"B200", {75 * T, 1100 * T, 2250 * T, 2250 * T, 4500 * T}, 180e9, 7.7e12, 900e9, 5.00},
};
#define N_PRESETS (sizeof presets / sizeof presets[0])

static const char *const preset_name_list[N_PRESETS + 1] = {"A100-SXM", "H100-SXM", "H200-SXM",
                                                            "B200", NULL};

const char *const *gpu_preset_names(void) { return preset_name_list; }

const char *gpu_precision_name(gpu_precision p)
{
    return (p >= 0 && p < GPU_PRECISION_COUNT) ? precision_names[p] : "?";
}

int gpu_precision_parse(const char *s, gpu_precision *out)
{
    for (int i = 0; i < GPU_PRECISION_COUNT; i++) {
        if (strcmp(s, precision_names[i]) == 0) {
            *out = (gpu_precision)i;
            return DT_OK;
        }
    }
    return DT_EINPUT;
}

static void set_defaults(gpu_spec *s)
{
    s->compute_eff[GPU_OP_MATMUL] = EFF_MATMUL;
    s->compute_eff[GPU_OP_ATTENTION] = EFF_ATTENTION;
    s->compute_eff[GPU_OP_ELEMENTWISE] = EFF_ELEMENTWISE;
    s->compute_eff[GPU_OP_OPTIMIZER] = EFF_OPTIMIZER;
    s->memory_eff = EFF_MEMORY;
}

int gpu_preset(const char *name, gpu_spec *out, dt_error *err)
{
    for (size_t i = 0; i < N_PRESETS; i++) {
        if (strcmp(presets[i].name, name) != 0) continue;
        memset(out, 0, sizeof *out);
        snprintf(out->name, sizeof out->name, "%s", presets[i].name);
        memcpy(out->peak_flops, presets[i].flops, sizeof out->peak_flops);
        out->hbm_bytes = presets[i].hbm_bytes;
        out->hbm_bw = presets[i].hbm_bw;
        out->nvlink_bw = presets[i].nvlink_bw;
        out->cost_per_hour = presets[i].cost_per_hour;
        set_defaults(out);
        /* A reduction reads two operands and writes one: a third of HBM bandwidth. */
        out->reduce_bw = out->hbm_bw / 3.0;
        return DT_OK;
    }
    const char *hint = js_suggest(name, preset_name_list);
    if (hint)
        return dt_error_set(err, DT_EINPUT, NULL, NULL,
                            "unknown GPU preset \"%s\" (did you mean \"%s\"?)", name, hint);
    return dt_error_set(err, DT_EINPUT, NULL, NULL,
                        "unknown GPU preset \"%s\" (known: A100-SXM, H100-SXM, H200-SXM, B200)",
                        name);
}

static int preset_at(const js_ctx *ctx, const char *name, const char *path, gpu_spec *out)
{
    dt_error tmp;
    dt_error_clear(&tmp);
    if (gpu_preset(name, out, &tmp) == DT_OK) return DT_OK;
    return js_fail(ctx, path, NULL, "%s", tmp.msg);
}

static const char *const spec_keys[] = {"preset",     "name",      "flops",  "hbm",
                                        "hbm_bw",     "nvlink_bw", "efficiency",
                                        "memory_eff", "reduce_bw", "cost_per_hour", NULL};

int gpu_spec_from_json(const js_ctx *ctx, const cJSON *v, const char *path, gpu_spec *out)
{
    char sub[JS_PATH_MAX], d[96];
    if (cJSON_IsString(v)) return preset_at(ctx, v->valuestring, path, out);
    if (!cJSON_IsObject(v))
        return js_fail(ctx, path, NULL, "expected a GPU preset name or a GPU spec object, found %s",
                       js_describe(v, d, sizeof d));
    int rc = js_check_keys(ctx, v, path, spec_keys);
    if (rc) return rc;

    gpu_spec s;
    memset(&s, 0, sizeof s);
    const char *pname = NULL;
    if ((rc = js_get_string(ctx, v, path, "preset", false, &pname))) return rc;
    bool from_preset = pname != NULL;
    if (from_preset) {
        if ((rc = preset_at(ctx, pname, js_path_key(sub, path, "preset"), &s))) return rc;
    } else {
        set_defaults(&s);
        snprintf(s.name, sizeof s.name, "custom");
    }
    const char *name = NULL;
    if ((rc = js_get_string(ctx, v, path, "name", false, &name))) return rc;
    if (name) {
        if (!name[0] || strlen(name) >= GPU_NAME_MAX)
            return js_fail(ctx, path, "name", "expected a name of 1 to %d characters, found %s",
                           GPU_NAME_MAX - 1, js_describe(cJSON_GetObjectItemCaseSensitive(v, "name"),
                                                         d, sizeof d));
        memset(s.name, 0, sizeof s.name); /* specs compare bytewise: no stale tail */
        snprintf(s.name, sizeof s.name, "%s", name);
    }

    const cJSON *fl = cJSON_GetObjectItemCaseSensitive(v, "flops");
    if (fl) {
        js_path_key(sub, path, "flops");
        if ((rc = js_expect_object(ctx, fl, sub))) return rc;
        if ((rc = js_check_keys(ctx, fl, sub, precision_names))) return rc;
        for (int p = 0; p < GPU_PRECISION_COUNT; p++)
            if ((rc = js_get_quantity(ctx, fl, sub, precision_names[p], UNIT_COMPUTE, false, false,
                                      &s.peak_flops[p])))
                return rc;
    }
    if (!(s.peak_flops[GPU_FP32] > 0))
        return js_fail(ctx, path, fl ? "flops.fp32" : "flops",
                       "a GPU spec without a preset needs a positive fp32 peak (e.g. \"67 TFLOP/s\")");

    if ((rc = js_get_quantity(ctx, v, path, "hbm", UNIT_SIZE, !from_preset, true, &s.hbm_bytes)))
        return rc;
    double hbm_bw_old = s.hbm_bw;
    if ((rc = js_get_quantity(ctx, v, path, "hbm_bw", UNIT_BANDWIDTH, !from_preset, true,
                              &s.hbm_bw)))
        return rc;
    if ((rc = js_get_quantity(ctx, v, path, "nvlink_bw", UNIT_BANDWIDTH, false, false,
                              &s.nvlink_bw)))
        return rc;

    const cJSON *ef = cJSON_GetObjectItemCaseSensitive(v, "efficiency");
    if (ef) {
        js_path_key(sub, path, "efficiency");
        if ((rc = js_expect_object(ctx, ef, sub))) return rc;
        if ((rc = js_check_keys(ctx, ef, sub, class_names))) return rc;
        for (int c = 0; c < GPU_OP_CLASS_COUNT; c++) {
            if ((rc = js_get_number(ctx, ef, sub, class_names[c], false, 0, 1, &s.compute_eff[c])))
                return rc;
            if (!(s.compute_eff[c] > 0))
                return js_fail(ctx, sub, class_names[c], "expected a fraction in (0, 1], found 0");
        }
    }
    if ((rc = js_get_number(ctx, v, path, "memory_eff", false, 0, 1, &s.memory_eff))) return rc;
    if (!(s.memory_eff > 0)) return js_fail(ctx, path, "memory_eff", "expected a fraction in (0, 1], found 0");

    /* reduce_bw follows hbm_bw unless given: overriding a preset's HBM bandwidth moves it too. */
    if (!cJSON_GetObjectItemCaseSensitive(v, "reduce_bw") &&
        (!from_preset || s.hbm_bw != hbm_bw_old))
        s.reduce_bw = s.hbm_bw / 3.0;
    /* 0 is allowed: reductions are free (a calibration whose link figures include them). */
    if ((rc = js_get_quantity(ctx, v, path, "reduce_bw", UNIT_BANDWIDTH, false, false, &s.reduce_bw)))
        return rc;
    if ((rc = js_get_number(ctx, v, path, "cost_per_hour", false, 0, 1e6, &s.cost_per_hour)))
        return rc;
    *out = s;
    return DT_OK;
}

/* Shortest "%.Ng UNIT" (N = 6..17) that parses back to exactly x: files written by dtsim read
 * back bit-identical, and stay readable for the round numbers presets use. */
static cJSON *quantity(double x, double scale, const char *unit)
{
    char buf[64];
    for (int prec = 6; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g %s", prec, x / scale, unit);
        double back = 0;
        char why[128];
        unit_kind kind = UNIT_SIZE;
        if (!strcmp(unit, "TFLOP/s")) kind = UNIT_COMPUTE;
        else if (!strcmp(unit, "GB/s")) kind = UNIT_BANDWIDTH;
        if (unit_parse(kind, buf, &back, why, sizeof why) == DT_OK && back == x) break;
    }
    return cJSON_CreateString(buf);
}

cJSON *gpu_spec_to_json(const gpu_spec *s)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", s->name);
    cJSON *fl = cJSON_AddObjectToObject(o, "flops");
    for (int p = 0; p < GPU_PRECISION_COUNT; p++)
        cJSON_AddItemToObject(fl, precision_names[p], quantity(s->peak_flops[p], 1e12, "TFLOP/s"));
    cJSON_AddItemToObject(o, "hbm", quantity(s->hbm_bytes, 1e9, "GB"));
    cJSON_AddItemToObject(o, "hbm_bw", quantity(s->hbm_bw, 1e9, "GB/s"));
    cJSON_AddItemToObject(o, "nvlink_bw", quantity(s->nvlink_bw, 1e9, "GB/s"));
    cJSON *ef = cJSON_AddObjectToObject(o, "efficiency");
    for (int c = 0; c < GPU_OP_CLASS_COUNT; c++)
        cJSON_AddNumberToObject(ef, class_names[c], s->compute_eff[c]);
    cJSON_AddNumberToObject(o, "memory_eff", s->memory_eff);
    cJSON_AddItemToObject(o, "reduce_bw", quantity(s->reduce_bw, 1e9, "GB/s"));
    cJSON_AddNumberToObject(o, "cost_per_hour", s->cost_per_hour);
    return o;
}

sim_time_t gpu_op_time(const gpu_spec *spec, gpu_op_class cls, gpu_precision prec, double flops,
                       double bytes)
{
    DT_ASSERT(cls >= 0 && cls < GPU_OP_CLASS_COUNT);
    DT_ASSERT(prec >= 0 && prec < GPU_PRECISION_COUNT);
    /* Fall back towards wider formats (fp8 -> bf16 -> fp16 -> tf32 -> fp32): a GPU without fp8
     * tensor cores runs the op at its 16-bit rate. */
    int p = (int)prec;
    while (p > 0 && !(spec->peak_flops[p] > 0)) p--;
    double t = 0;
    if (flops > 0) {
        double rate = spec->peak_flops[p] * spec->compute_eff[cls];
        DT_ASSERT(rate > 0);
        t = flops / rate;
    }
    if (bytes > 0) {
        double rate = spec->hbm_bw * spec->memory_eff;
        DT_ASSERT(rate > 0);
        double tm = bytes / rate;
        if (tm > t) t = tm;
    }
    /* Round up to whole picoseconds, but let a result within rounding noise of an integer
     * stay that integer (1e-3 s must be 1e9 ps, not 1e9 + 1). */
    double ps = t * 1e12, r = nearbyint(ps);
    ps = fabs(ps - r) <= 1e-9 * ps ? r : ceil(ps);
    if (ps >= 9.2e18) return SIM_TIME_MAX;
    return (sim_time_t)ps;
}
