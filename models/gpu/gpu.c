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
static const char *const class_names[GPU_OP_CLASS_COUNT + 1] = {
    "matmul", "attention", "elementwise", "optimizer", "attention_bwd", NULL};
static const char *const attn_kernel_names[GPU_ATTN_KERNEL_COUNT + 1] = {"fa2", "cudnn", NULL};

/* Default achieved fractions, for a GPU spec without a preset (and the presets' classes that have
 * no measurement of their own, below): matmul ~0.7 and attention ~0.5 of dense peak are round
 * figures for large GEMMs and fused attention; elementwise and optimizer kernels are memory
 * bound, so their compute fraction rarely matters (0.5 keeps a compute floor for them).
 * memory_eff 0.8 is a typical STREAM-like fraction of HBM peak. */
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
    int sms;
} preset;

/* Datasheet dense peaks (fp32 is the non-tensor rate). NVLink is per direction: the datasheet
 * figure (600 GB/s, 900 GB/s, 1.8 TB/s) is both directions together. Costs are assumptions
 * (rough 2025 cloud on-demand rates per GPU-hour), documented as such. SM counts: A100 SXM4 108
 * (A100 architecture whitepaper, 2020; both memory sizes), H100 SXM5 132 (H100 architecture whitepaper, 2022),
 * H200 132 (the same GH100 configuration: the same peaks at the same clock), B200 148 (74 per
 * die as the device reports them; NVIDIA's datasheet gives none); docs/formats.md checks each
 * against peak = SMs x tensor cores x FLOP/clock x boost clock. */
static const preset presets[] = {
    {"A100-SXM", {19.5 * T, 156 * T, 312 * T, 312 * T, 0}, 80 * GiB, 2039e9, 300e9, 1.80, 108},
    /* The launch part: the same GA100 configuration, clocks, peaks and NVLink 3; only its memory
     * differs, 40 GB of HBM2 at 2.4 Gb/s per pin (1,555 GB/s) against the 80 GB part's HBM2e
     * (NVIDIA A100 datasheet). "40 GB" is 40 GiB: nvidia-smi reports 40960 MiB, as it reports
     * 81920 MiB for the 80 GB part. */
    {"A100-SXM-40GB", {19.5 * T, 156 * T, 312 * T, 312 * T, 0}, 40 * GiB, 1555e9, 300e9, 1.30,
     108},
    {"H100-SXM", {67 * T, 494.5 * T, 989.5 * T, 989.5 * T, 1979 * T}, 80 * GiB, 3.35e12, 450e9,
     2.50, 132},
    {"H200-SXM", {67 * T, 494.5 * T, 989.5 * T, 989.5 * T, 1979 * T}, 141e9, 4.8e12, 450e9, 3.50,
     132},
    {"B200", {75 * T, 1100 * T, 2250 * T, 2250 * T, 4500 * T}, 180e9, 7.7e12, 900e9, 5.00, 148},
};

/* Measured fused-attention throughput, TFLOP/s (BF16/FP16, FLOPs as the kernel executes them:
 * a causal call counts half the score matrix), per head dimension, at key/query lengths seq:
 * the forward with and without the causal mask and the backward without it. A causal backward
 * is taken at the non-causal backward times the forward's causal/non-causal ratio at the same
 * length (the same tiles skipped, the same diagonal tiles masked); no source gives it.
 *
 * H100 SXM5: Shah et al. 2024, "FlashAttention-3" (arXiv 2407.08608), figures 5 and 6
 *   (hidden 2048, 16k tokens per batch; 32, 16 or 8 heads of 64, 128 or 256): the
 *   FlashAttention-2 and cuDNN bars. Head dim 128: every panel. Head dims 64 and 256: only the
 *   panels, and the lengths, on which two transcriptions of the figure agree (docs/workloads.md,
 *   "Attention kernels", lists them and the readings left out): 64 the causal forward and the
 *   backward at 512 to 2k, 256 the non-causal forward.
 * A100 SXM4: FlashAttention-2's own figures are not in reach here; the forward at 1k and 4k
 *   (32 heads, 16k tokens) from liangan1/GPU_travel performance/flash-attn/README.md (FA2 on
 *   A100 80 GB: 143.7 / 156.3 causal, 179.1 / 184.0 non-causal); its backward is not measured
 *   there: the same code (FA2 has no Hopper kernel; the sm80 kernels run on the H100) is given
 *   the H100's FA2 backward/forward ratio at the same length (1k 260/350, 4k 310/368). One
 *   panel, taken as head dim 128 and held at every head dim. cuDNN on A100: no figure, FA2's
 *   curve is used. A100 40 GB: the 80 GB part's (same SMs and clocks; the flash kernels keep
 *   their tiles in shared memory and are compute bound, so the HBM difference does not reach
 *   them). H200: the H100's (same die and clocks; attention is compute bound). B200: none (the
 *   attention classes' efficiencies). */
#define ATTN_POINTS 6
#define ATTN_HEAD_DIMS 3
enum { ATTN_FWD_CAUSAL, ATTN_FWD, ATTN_BWD, ATTN_SERIES };
/* one panel's bars: n 0 where no reading of it is confirmed */
typedef struct attn_series {
    int n;
    double seq[ATTN_POINTS], tflops[ATTN_POINTS];
} attn_series;
typedef struct attn_curve {
    double peak;                            /* TFLOP/s, bf16, the benchmark's denominator */
    int n_hd;
    double head_dim[ATTN_HEAD_DIMS];        /* ascending; 128 has all three series */
    attn_series s[ATTN_HEAD_DIMS][ATTN_SERIES];
    double dropout[2];                      /* forward, backward: time with dropout 0.1 / without */
    double bench_tokens, bench_hidden;      /* the benchmark's call: tokens and heads x head dim */
} attn_curve;

/* Attention dropout inside the fused kernels, time with p = 0.1 over time without, measured on
 * one H100 SXM (2026-11-27; PyTorch 2.11's scaled_dot_product_attention, cuDNN 9.19 and
 * flash-attn 2, causal, head dim 128, bf16; docs/img/h100-probe/attn-dropout.jsonl): the median
 * over five calls of 4k to 16k tokens (b x heads x s: 1x16x4k, 4x16x4k, 8x16x2k, 1x32x2k,
 * 1x64x4k). cuDNN forward 1.87-2.28, backward 1.16-1.33; FlashAttention-2 forward 1.08-1.24,
 * backward 1.09-1.20. The mask's random numbers (Philox) are drawn per score element inside the
 * kernel, so the cost follows the kernel, not the mask's bytes. The A100 curve is
 * FlashAttention-2's sm80 code, the same kernels that ran on the H100, and takes its ratios. */
#define DROPOUT_CUDNN {2.00, 1.19}
#define DROPOUT_FA2 {1.21, 1.12}

#define SEQ6 {512, 1024, 2048, 4096, 8192, 16384}
static const attn_curve h100_fa2 = {
    989, 3, {64, 128, 256},
    {{[ATTN_FWD_CAUSAL] = {6, SEQ6, {180, 229, 262, 284, 295, 299}},
      [ATTN_BWD] = {3, {512, 1024, 2048}, {198, 238, 264}}},
     {{6, SEQ6, {191, 260, 298, 319, 333, 335}},
      {6, SEQ6, {309, 350, 362, 368, 370, 370}},
      {6, SEQ6, {214, 260, 291, 310, 318, 322}}},
     {[ATTN_FWD] = {6, SEQ6, {275, 313, 321, 323, 324, 326}}}},
    DROPOUT_FA2, 16384, 2048};
static const attn_curve h100_cudnn = {
    989, 3, {64, 128, 256},
    {{[ATTN_FWD_CAUSAL] = {6, SEQ6, {225, 288, 334, 363, 379, 388}},
      [ATTN_BWD] = {3, {512, 1024, 2048}, {266, 348, 395}}},
     {{6, SEQ6, {315, 410, 484, 518, 529, 539}},
      {6, SEQ6, {497, 574, 617, 609, 600, 595}},
      {6, SEQ6, {305, 408, 465, 499, 518, 516}}},
     {[ATTN_FWD] = {6, SEQ6, {470, 546, 580, 581, 580, 581}}}},
    DROPOUT_CUDNN, 16384, 2048};
static const attn_curve a100_fa2 = {
    312, 1, {128},
    {{{2, {1024, 4096}, {143.7, 156.3}},
      {2, {1024, 4096}, {179.1, 184.0}},
      {2, {1024, 4096}, {179.1 * 260 / 350, 184.0 * 310 / 368}}}},
    DROPOUT_FA2, 16384, 32 * 128};
#undef SEQ6
/* per preset (presets[] order), per kernel; NULL: no curve */
static const attn_curve *const attn_curves[][GPU_ATTN_KERNEL_COUNT] = {
    {&a100_fa2, &a100_fa2}, {&a100_fa2, &a100_fa2}, {&h100_fa2, &h100_cudnn},
    {&h100_fa2, &h100_cudnn}, {NULL, NULL}};
#define N_PRESETS (sizeof presets / sizeof presets[0])

static const char *const preset_name_list[N_PRESETS + 1] = {
    "A100-SXM", "A100-SXM-40GB", "H100-SXM", "H200-SXM", "B200", NULL};

const char *const *gpu_preset_names(void) { return preset_name_list; }

const char *gpu_op_class_name(gpu_op_class c)
{
    return (c >= 0 && c < GPU_OP_CLASS_COUNT) ? class_names[c] : "?";
}

const char *gpu_attn_kernel_name(gpu_attn_kernel k)
{
    return (k >= 0 && k < GPU_ATTN_KERNEL_COUNT) ? attn_kernel_names[k] : "?";
}

const char *const *gpu_attn_kernel_names(void) { return attn_kernel_names; }

/* value of y over x at xq, linear in log2(x), held at the ends */
static double interp_log(const double *x, const double *y, int n, double xq)
{
    if (xq <= x[0]) return y[0];
    if (xq >= x[n - 1]) return y[n - 1];
    int i = 1;
    while (x[i] < xq) i++;
    double f = log2(xq / x[i - 1]) / log2(x[i] / x[i - 1]);
    return y[i - 1] + f * (y[i] - y[i - 1]);
}

/* Series k of curve c at (seq, hd): each head dim that measured it (and, with pair >= 0, that
 * series too: the causal ratio takes both forwards from the same panels) read at seq, then
 * linear in log2 between those head dims and held at the first and last outside them. Held,
 * not extrapolated: a head dim picks the kernel's tile shape (its block sizes and warps are
 * instantiated per head dim), so beyond the last measured one the trend of the two before it
 * says nothing. The 128 panel has every series, so there is always one. */
static double at_head_dim(const attn_curve *c, int k, int pair, double seq, double hd)
{
    double x[ATTN_HEAD_DIMS], y[ATTN_HEAD_DIMS];
    int n = 0;
    for (int i = 0; i < c->n_hd; i++) {
        const attn_series *s = &c->s[i][k];
        if (s->n == 0 || (pair >= 0 && c->s[i][pair].n == 0)) continue;
        x[n] = c->head_dim[i];
        y[n++] = interp_log(s->seq, s->tflops, s->n, seq);
    }
    return interp_log(x, y, n, hd);
}

static const attn_curve *curve_of(const gpu_spec *spec, gpu_attn_kernel k)
{
    int p = spec->attn_curves - 1;
    return p >= 0 && p < (int)N_PRESETS && k >= 0 && k < GPU_ATTN_KERNEL_COUNT ? attn_curves[p][k]
                                                                                : NULL;
}

double gpu_attention_dropout_factor(const gpu_spec *spec, gpu_attn_kernel k, bool bwd)
{
    const attn_curve *c = curve_of(spec, k);
    return c ? c->dropout[bwd] : 1;
}

/* The list-scheduling share of one call: `rows` x n units of GPU_ATTN_TILE queries, each 1 .. n
 * tiles of keys long (causal) or n (full), over sms SMs, done in W + L where W is the mean
 * load per SM and L the longest unit: W / (W + L). */
static double call_share(double seq, double rows, double sms, bool causal)
{
    double n = ceil(seq / GPU_ATTN_TILE);
    double w = rows * (causal ? n * (n + 1) / 2 : n * n) / sms;
    return w / (w + n);
}

double gpu_attention_call_factor(const gpu_spec *spec, gpu_attn_kernel k, double seq,
                                 double head_dim, double rows, bool causal)
{
    const attn_curve *c = curve_of(spec, k);
    if (!c || !(rows > 0) || !(seq > 0) || spec->sms <= 0) return 1;
    double hd = head_dim > 0 ? head_dim : GPU_ATTN_HEAD_DIM;
    /* the benchmark's call: bench_tokens of sequences of length seq, and never less than one
     * (beyond bench_tokens the curve holds its last length's rate, measured on one sequence) */
    double bench = fmax(c->bench_tokens / seq, 1) * (c->bench_hidden / hd);
    return call_share(seq, rows, spec->sms, causal) / call_share(seq, bench, spec->sms, causal);
}

double gpu_attention_eff(const gpu_spec *spec, gpu_attn_kernel k, double seq, double head_dim,
                         bool causal, bool bwd)
{
    const attn_curve *c = curve_of(spec, k);
    if (!c || !(seq > 0)) return spec->compute_eff[bwd ? GPU_OP_ATTENTION_BWD : GPU_OP_ATTENTION];
    double hd = head_dim > 0 ? head_dim : GPU_ATTN_HEAD_DIM;
    if (!bwd) return at_head_dim(c, causal ? ATTN_FWD_CAUSAL : ATTN_FWD, -1, seq, hd) / c->peak;
    double r = at_head_dim(c, ATTN_BWD, -1, seq, hd);
    if (causal)
        r *= at_head_dim(c, ATTN_FWD_CAUSAL, ATTN_FWD, seq, hd) /
             at_head_dim(c, ATTN_FWD, ATTN_FWD_CAUSAL, seq, hd);
    return r / c->peak;
}

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
    s->compute_eff[GPU_OP_ATTENTION_BWD] = EFF_ATTENTION;
    s->memory_eff = EFF_MEMORY;
    s->gemm_tile[0] = GPU_GEMM_TILE_LONG;
    s->gemm_tile[1] = GPU_GEMM_TILE_SHORT;
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
        out->sms = presets[i].sms;
        set_defaults(out);
        if (attn_curves[i][0] || attn_curves[i][1]) out->attn_curves = (int)i + 1;
        /* A reduction reads two operands and writes one: a third of HBM bandwidth. */
        out->reduce_bw = out->hbm_bw / 3.0;
        return DT_OK;
    }
    const char *hint = js_suggest(name, preset_name_list);
    if (hint)
        return dt_error_set(err, DT_EINPUT, NULL, NULL,
                            "unknown GPU preset \"%s\" (did you mean \"%s\"?)", name, hint);
    return dt_error_set(err, DT_EINPUT, NULL, NULL,
                        "unknown GPU preset \"%s\" (known: A100-SXM, A100-SXM-40GB, H100-SXM, "
                        "H200-SXM, B200)",
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
                                        "memory_eff", "reduce_bw", "cost_per_hour",
                                        "compute",    "sms",       "gemm_tile",
                                        "attention_kernels", NULL};

/* One class's table: an array of points, or {"precision": "bf16", "points": [...]}. Every point
 * is {"flops": q, "time": q} or {"bytes": q, "time": q}, one key for the whole table. */
static int table_from_json(const js_ctx *ctx, const cJSON *v, const char *path, gpu_table *out)
{
    static const char *const tkeys[] = {"precision", "points", NULL};
    static const char *const fkeys[] = {"flops", "time", NULL};
    static const char *const bkeys[] = {"bytes", "time", NULL};
    char sub[JS_PATH_MAX], pp[JS_PATH_MAX], d[96];
    gpu_table t;
    memset(&t, 0, sizeof t);
    t.precision = -1;
    const cJSON *pts = v;
    const char *ppath = path;
    int rc;
    if (cJSON_IsObject(v)) {
        if ((rc = js_check_keys(ctx, v, path, tkeys))) return rc;
        int prec = -1;
        if (cJSON_GetObjectItemCaseSensitive(v, "precision") &&
            (rc = js_get_enum(ctx, v, path, "precision", false, precision_names, &prec)))
            return rc;
        t.precision = prec;
        pts = cJSON_GetObjectItemCaseSensitive(v, "points");
        if (!pts) return js_fail(ctx, path, "points", "is required (an array of measured points)");
        ppath = js_path_key(sub, path, "points");
    } else if (!cJSON_IsArray(v)) {
        return js_fail(ctx, path, NULL,
                       "expected an array of measured points or {\"precision\", \"points\"}, found %s",
                       js_describe(v, d, sizeof d));
    }
    if ((rc = js_expect_array(ctx, pts, ppath))) return rc;
    int n = cJSON_GetArraySize(pts);
    if (n < 1 || n > GPU_TABLE_MAX)
        return js_fail(ctx, ppath, NULL, "expected 1 to %d measured points, found %d", GPU_TABLE_MAX, n);
    int i = 0;
    for (const cJSON *p = pts->child; p; p = p->next, i++) {
        js_path_index(pp, ppath, i);
        if ((rc = js_expect_object(ctx, p, pp))) return rc;
        bool by_bytes = cJSON_GetObjectItemCaseSensitive(p, "bytes") != NULL;
        if (i == 0) t.by_bytes = by_bytes;
        else if (by_bytes != t.by_bytes)
            return js_fail(ctx, pp, NULL, "every point of a table needs the same key: %s[0] has \"%s\"",
                           ppath, t.by_bytes ? "bytes" : "flops");
        if ((rc = js_check_keys(ctx, p, pp, by_bytes ? bkeys : fkeys))) return rc;
        if ((rc = js_get_quantity(ctx, p, pp, by_bytes ? "bytes" : "flops",
                                  by_bytes ? UNIT_SIZE : UNIT_WORK, true, true, &t.work[i])) ||
            (rc = js_get_quantity(ctx, p, pp, "time", UNIT_TIME, true, true, &t.time[i])))
            return rc;
        if (i > 0 && !(t.work[i] > t.work[i - 1]))
            return js_fail(ctx, pp, by_bytes ? "bytes" : "flops",
                           "must increase from one point to the next (%s[%d] has %g, this %g)", ppath,
                           i - 1, t.work[i - 1], t.work[i]);
    }
    t.n = n;
    *out = t;
    return DT_OK;
}

int gpu_tables_from_json(const js_ctx *ctx, const cJSON *v, const char *path,
                         gpu_table tables[GPU_OP_CLASS_COUNT])
{
    char sub[JS_PATH_MAX];
    int rc;
    if ((rc = js_expect_object(ctx, v, path)) || (rc = js_check_keys(ctx, v, path, class_names)))
        return rc;
    gpu_table t[GPU_OP_CLASS_COUNT];
    memcpy(t, tables, sizeof t);
    for (int c = 0; c < GPU_OP_CLASS_COUNT; c++) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(v, class_names[c]);
        if (e && (rc = table_from_json(ctx, e, js_path_key(sub, path, class_names[c]), &t[c])))
            return rc;
    }
    memcpy(tables, t, sizeof t); /* all or nothing */
    return DT_OK;
}

cJSON *gpu_tables_to_json(const gpu_table tables[GPU_OP_CLASS_COUNT])
{
    cJSON *o = NULL;
    for (int c = 0; c < GPU_OP_CLASS_COUNT; c++) {
        const gpu_table *t = &tables[c];
        if (t->n <= 0) continue;
        if (!o) o = cJSON_CreateObject();
        /* plain numbers in SI base units: cJSON prints them so they read back bit-identical */
        cJSON *pts = cJSON_CreateArray();
        for (int i = 0; i < t->n; i++) {
            cJSON *p = cJSON_CreateObject();
            cJSON_AddNumberToObject(p, t->by_bytes ? "bytes" : "flops", t->work[i]);
            cJSON_AddNumberToObject(p, "time", t->time[i]);
            cJSON_AddItemToArray(pts, p);
        }
        if (t->precision >= 0) {
            cJSON *e = cJSON_AddObjectToObject(o, class_names[c]);
            cJSON_AddStringToObject(e, "precision", precision_names[t->precision]);
            cJSON_AddItemToObject(e, "points", pts);
        } else {
            cJSON_AddItemToObject(o, class_names[c], pts);
        }
    }
    return o;
}

double gpu_table_time(const gpu_table *tab, double work)
{
    DT_ASSERT(tab->n > 0 && tab->n <= GPU_TABLE_MAX);
    if (!(work > 0)) return 0;
    const double *w = tab->work, *tm = tab->time;
    int n = tab->n;
    /* Achieved rate w/t, not time, is what is interpolated: it is flat for large ops and falls
     * off for small ones, so between points it bends the right way and outside the range it
     * extrapolates time proportionally to work at the nearest measured rate. */
    if (work <= w[0]) return work * (tm[0] / w[0]);
    if (work >= w[n - 1]) return work * (tm[n - 1] / w[n - 1]);
    int i = 0;
    while (work > w[i + 1]) i++; /* w[i] < work <= w[i+1] */
    if (work == w[i + 1]) return tm[i + 1];
    double r0 = w[i] / tm[i], r1 = w[i + 1] / tm[i + 1];
    double f = log(work / w[i]) / log(w[i + 1] / w[i]);
    return work / (r0 + f * (r1 - r0));
}

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
        /* the forward's figure stands for the backward unless that has its own */
        bool fwd = cJSON_GetObjectItemCaseSensitive(ef, "attention") != NULL;
        bool bwd = cJSON_GetObjectItemCaseSensitive(ef, "attention_bwd") != NULL;
        if (fwd && !bwd) s.compute_eff[GPU_OP_ATTENTION_BWD] = s.compute_eff[GPU_OP_ATTENTION];
        /* an attention efficiency of the user's own replaces the preset's measured curves
         * (unless "attention_kernels" names them again, as gpu_spec_to_json writes them) */
        if (fwd || bwd) s.attn_curves = 0;
    }
    const cJSON *ak = cJSON_GetObjectItemCaseSensitive(v, "attention_kernels");
    if (ak) {
        js_path_key(sub, path, "attention_kernels");
        int k = -1;
        for (size_t i = 0; cJSON_IsString(ak) && i < N_PRESETS; i++)
            if (!strcmp(ak->valuestring, presets[i].name) &&
                (attn_curves[i][0] || attn_curves[i][1]))
                k = (int)i;
        if (cJSON_IsString(ak) && !strcmp(ak->valuestring, "none")) k = -1;
        else if (k < 0)
            return js_fail(ctx, path, "attention_kernels",
                           "expected \"none\" or a preset with measured attention curves "
                           "(A100-SXM, A100-SXM-40GB, H100-SXM, H200-SXM), found %s",
                           js_describe(ak, d, sizeof d));
        s.attn_curves = k + 1;
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
    /* 0 is allowed: the SM count is unknown and GEMMs run at the flat matmul efficiency. A
     * bound well above any GPU (B200: 148) catches a core count typed by mistake. */
    long long sms = s.sms;
    if ((rc = js_get_int(ctx, v, path, "sms", false, 0, 4096, &sms))) return rc;
    s.sms = (int)sms;
    const cJSON *gt = cJSON_GetObjectItemCaseSensitive(v, "gemm_tile");
    if (gt) {
        js_path_key(sub, path, "gemm_tile");
        if (!cJSON_IsArray(gt) || cJSON_GetArraySize(gt) != 2)
            return js_fail(ctx, sub, NULL, "expected [long, short], two tile sides in elements "
                           "(e.g. [256, 128]), found %s", js_describe(gt, d, sizeof d));
        int i = 0;
        for (const cJSON *x = gt->child; x; x = x->next, i++) {
            char xp[JS_PATH_MAX];
            if (!cJSON_IsNumber(x) || x->valuedouble != floor(x->valuedouble) ||
                x->valuedouble < 1 || x->valuedouble > 4096)
                return js_fail(ctx, js_path_index(xp, sub, i), NULL,
                               "expected a tile side of 1 to 4096 elements, found %s",
                               js_describe(x, d, sizeof d));
            s.gemm_tile[i] = (int)x->valuedouble;
        }
    }
    const cJSON *co = cJSON_GetObjectItemCaseSensitive(v, "compute");
    if (co && (rc = gpu_tables_from_json(ctx, co, js_path_key(sub, path, "compute"), s.table)))
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
    if (s->attn_curves > 0 && s->attn_curves <= (int)N_PRESETS)
        cJSON_AddStringToObject(o, "attention_kernels", presets[s->attn_curves - 1].name);
    cJSON_AddNumberToObject(o, "memory_eff", s->memory_eff);
    cJSON_AddItemToObject(o, "reduce_bw", quantity(s->reduce_bw, 1e9, "GB/s"));
    cJSON_AddNumberToObject(o, "cost_per_hour", s->cost_per_hour);
    cJSON_AddNumberToObject(o, "sms", s->sms);
    cJSON *gt = cJSON_AddArrayToObject(o, "gemm_tile");
    for (int i = 0; i < 2; i++) cJSON_AddItemToArray(gt, cJSON_CreateNumber(s->gemm_tile[i]));
    cJSON *co = gpu_tables_to_json(s->table);
    if (co) cJSON_AddItemToObject(o, "compute", co);
    return o;
}

/* Round up to whole picoseconds, but let a result within rounding noise of an integer stay
 * that integer (1e-3 s must be 1e9 ps, not 1e9 + 1). */
static sim_time_t round_ps(double t)
{
    double ps = t * 1e12, r = nearbyint(ps);
    ps = fabs(ps - r) <= 1e-9 * ps ? r : ceil(ps);
    if (ps >= 9.2e18) return SIM_TIME_MAX;
    return (sim_time_t)ps;
}

/* Fall back towards wider formats (fp8 -> bf16 -> fp16 -> tf32 -> fp32): a GPU without fp8
 * tensor cores runs the op at its 16-bit rate. */
static int run_precision(const gpu_spec *spec, gpu_precision prec)
{
    int p = (int)prec;
    while (p > 0 && !(spec->peak_flops[p] > 0)) p--;
    return p;
}

/* A table of class cls that holds for prec, keyed by the quantity the op has. */
static bool table_applies(const gpu_table *tab, gpu_precision prec, double flops, double bytes)
{
    return tab->n > 0 && (tab->precision < 0 || tab->precision == (int)prec) &&
           (tab->by_bytes ? bytes : flops) > 0;
}

sim_time_t gpu_op_time(const gpu_spec *spec, gpu_op_class cls, gpu_precision prec, double flops,
                       double bytes)
{
    DT_ASSERT(cls >= 0 && cls < GPU_OP_CLASS_COUNT);
    DT_ASSERT(prec >= 0 && prec < GPU_PRECISION_COUNT);
    int p = run_precision(spec, prec);
    double t = 0;
    const gpu_table *tab = &spec->table[cls];
    /* An op with none of the table's quantity (a FLOP-free copy under a FLOPs table) has nothing
     * to look up: it keeps the roofline rather than taking no time. */
    bool measured = table_applies(tab, prec, flops, bytes);
    if (measured) { /* the measured time already holds the op's memory traffic */
        t = gpu_table_time(tab, tab->by_bytes ? bytes : flops);
    } else if (flops > 0) {
        double rate = spec->peak_flops[p] * spec->compute_eff[cls];
        DT_ASSERT(rate > 0);
        t = flops / rate;
    }
    if (!measured && bytes > 0) {
        double rate = spec->hbm_bw * spec->memory_eff;
        DT_ASSERT(rate > 0);
        double tm = bytes / rate;
        if (tm > t) t = tm;
    }
    return round_ps(t);
}

/* Useful fraction of `waves` full waves of tm x tn tiles for `batch` m x n outputs launched
 * together (a strided-batched GEMM spreads the batch over the grid: its tiles share waves). */
static double tiled(int sms, double m, double n, double batch, double tm, double tn)
{
    double tiles = batch * ceil(m / tm) * ceil(n / tn);
    double waves = ceil(tiles / sms);
    return batch * m * n / (waves * sms * tm * tn);
}

double gpu_gemm_quantization(const gpu_spec *spec, double m, double n)
{
    return gpu_gemm_quantization_batched(spec, m, n, 1);
}

double gpu_gemm_quantization_batched(const gpu_spec *spec, double m, double n, double batch)
{
    int sms = spec->sms;
    if (sms <= 0 || !(m > 0) || !(n > 0)) return 1;
    if (!(batch > 1)) batch = 1;
    double tl = spec->gemm_tile[0], ts = spec->gemm_tile[1];
    DT_ASSERT(tl >= 1 && ts >= 1);
    double a = tiled(sms, m, n, batch, tl, ts);
    double b = tiled(sms, m, n, batch, ts, tl);
    /* cuBLAS also has a square tile of the short side (128 x 128) and picks per shape what runs
     * fastest: take the best of the three, all at the same full-wave efficiency */
    double c = tiled(sms, m, n, batch, ts, ts);
    double q = a > b ? a : b;
    return c > q ? c : q;
}

static const double precision_bytes[GPU_PRECISION_COUNT] = {4, 4, 2, 2, 1};

sim_time_t gpu_gemm_time(const gpu_spec *spec, gpu_precision prec, const gpu_gemm *gemms, int n)
{
    DT_ASSERT(prec >= 0 && prec < GPU_PRECISION_COUNT);
    /* [0]: the op's precision; [1]: a no_fp8 GEMM's, bf16 under fp8 (the same otherwise) */
    gpu_precision at[2] = {prec, prec == GPU_FP8 ? GPU_BF16 : prec};
    double rate[2], e[2];
    for (int j = 0; j < 2; j++) {
        int p = run_precision(spec, at[j]);
        rate[j] = spec->peak_flops[p] * spec->compute_eff[GPU_OP_MATMUL];
        e[j] = precision_bytes[p];
    }
    double bw = spec->hbm_bw * spec->memory_eff;
    const gpu_table *tab = &spec->table[GPU_OP_MATMUL];
    double t = 0;
    for (int i = 0; i < n; i++) {
        const gpu_gemm *g = &gemms[i];
        if (!(g->m > 0 && g->n > 0 && g->k > 0) || !(g->count > 0)) continue; /* no work */
        int j = g->no_fp8 ? 1 : 0;
        double flops = 2 * g->m * g->n * g->k;
        double bytes = e[j] * (g->m * g->k + g->k * g->n + g->m * g->n);
        double one;
        if (table_applies(tab, at[j], flops, bytes)) {
            one = gpu_table_time(tab, tab->by_bytes ? bytes : flops);
        } else {
            DT_ASSERT(rate[j] > 0 && bw > 0);
            one = flops / (rate[j] * gpu_gemm_quantization_batched(spec, g->m, g->n, g->batch));
            if (bytes / bw > one) one = bytes / bw;
        }
        t += g->count * one;
    }
    return round_ps(t);
}
