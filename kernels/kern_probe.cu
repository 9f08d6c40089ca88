/* kern_probe.cu - the compute probe's measurements on one CUDA device (include/dtsim/probe.h,
 * docs/calibration.md "Compute probe"): bf16 GEMMs through cublasGemmEx (fp32 accumulation) in
 * the layouts a training layer uses, timed as a burst and sustained, and HBM copies.
 *
 * Burst: `warmup` untimed GEMMs, then `repeats` back to back with an event between each two, so
 * every repeat is timed alone without a host round trip between them; the median is the figure
 * (the minimum is kept to show spread). This is what a benchmark such as MAMF sees.
 * Sustained: the same GEMM looped for sustain_s, an event every window (about window_s worth of
 * GEMMs, sized from the burst median). All windows are queued before the host waits, so the GPU
 * never idles between windows; a window that ran at a lower clock simply lasts longer and its
 * rate is its FLOPs over its own event time. First and last windows say what minutes of dense
 * tensor load at the power limit cost against the burst.
 *
 * Self-check: before anything is timed, each layout runs once on a small odd shape and is
 * compared with a host product written from its row-major definition (check_layouts).
 *
 * Inputs are uniform random bf16 (not zeros: the power a GEMM draws, and so the clock it holds,
 * depends on the data's bit switching; docs/validation.md, "GEMM benchmarks are power-limited").
 * The weight gradient writes fp32 with beta 1, Megatron's gradient-accumulation fusion
 * (main_grad += X^T dY); forward and data gradient write bf16.
 *
 * Built two ways: into libdtsim with CUDA (kernels/kernels.cmake), and alone for a GPU machine
 * that lacks the library's dependencies (GSL, cJSON, protobuf-c):
 *   nvcc -O2 -std=c++17 -arch=sm_90 -DKERN_PROBE_STANDALONE -Iinclude kernels/kern_probe.cu -lcublas
 * which prints the measurement as JSON on stdout (what cal_probe_run_parse reads; `dtsim probe
 * --from FILE` then makes the report anywhere). scripts/device-probe.sh does that.
 */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <algorithm>
#include <string>
#include <vector>

/* error.h is C17: _Noreturn has no C++ spelling but [[noreturn]] */
#define _Noreturn [[noreturn]]
extern "C" {
#include "dtsim/probe.h"
}
#undef _Noreturn
#include "probe_defaults.h"

namespace {

int fail(dt_error *err, const char *what, const char *why)
{
    return dt_error_set(err, DT_EINTERNAL, NULL, NULL, "%s: %s", what, why);
}

#define CK(call)                                                                \
    do {                                                                        \
        cudaError_t e_ = (call);                                                \
        if (e_ != cudaSuccess) return fail(err, #call, cudaGetErrorString(e_)); \
    } while (0)
#define CB(call)                                                                           \
    do {                                                                                   \
        cublasStatus_t s_ = (call);                                                        \
        if (s_ != CUBLAS_STATUS_SUCCESS) return fail(err, #call, cublasGetStatusString(s_)); \
    } while (0)

/* Uniform in [-1, 1): an integer hash of the index, so no RNG state and any size. */
__global__ void fill_bf16(__nv_bfloat16 *p, size_t n, uint32_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint32_t x = (uint32_t)i * 2654435761u ^ seed;
        x ^= x >> 16;
        x *= 0x7feb352du;
        x ^= x >> 15;
        x *= 0x846ca68bu;
        x ^= x >> 16;
        p[i] = __float2bfloat16((float)(x >> 8) * (2.0f / 16777216.0f) - 1.0f);
    }
}

/* y = a*x + y: two reads and a write per element, the shape of an optimizer or residual add */
__global__ void axpy(float *y, const float4 *x, size_t n4, float a)
{
    float4 *y4 = (float4 *)y;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4; i += (size_t)gridDim.x * blockDim.x) {
        float4 v = x[i], w = y4[i];
        w.x += a * v.x;
        w.y += a * v.y;
        w.z += a * v.z;
        w.w += a * v.w;
        y4[i] = w;
    }
}

struct gemm_call {
    cublasOperation_t op_p, op_q;
    int ld_p, ld_q;
    cudaDataType_t c_type;
    float beta;
};

/* The column-major call computing C^T (n x m) = op(P) . op(Q), P the row-major right operand and
 * Q the left one (probe.h's table of layouts). */
gemm_call layout_call(const cal_probe_shape *s)
{
    int m = (int)s->m, n = (int)s->n, k = (int)s->k;
    switch (s->layout) {
    case CAL_PROBE_DGRAD: return {CUBLAS_OP_N, CUBLAS_OP_N, n, k, CUDA_R_16BF, 0.0f};
    case CAL_PROBE_WGRAD: return {CUBLAS_OP_N, CUBLAS_OP_T, n, m, CUDA_R_32F, 1.0f};
    default: return {CUBLAS_OP_T, CUBLAS_OP_N, k, k, CUDA_R_16BF, 0.0f};
    }
}

struct probe {
    cublasHandle_t h = nullptr;
    cudaStream_t st = nullptr;
    void *p = nullptr, *q = nullptr, *c = nullptr;
    std::vector<cudaEvent_t> ev;
    ~probe()
    {
        for (cudaEvent_t e : ev) cudaEventDestroy(e);
        if (h) cublasDestroy(h);
        if (st) cudaStreamDestroy(st);
        cudaFree(p);
        cudaFree(q);
        cudaFree(c);
    }
};

int events(probe &pr, size_t n, dt_error *err)
{
    while (pr.ev.size() < n) {
        cudaEvent_t e;
        CK(cudaEventCreate(&e));
        pr.ev.push_back(e);
    }
    return DT_OK;
}

int gemm(probe &pr, const cal_probe_shape *s, const gemm_call &g, dt_error *err)
{
    const float alpha = 1.0f;
    CB(cublasGemmEx(pr.h, g.op_p, g.op_q, (int)s->n, (int)s->m, (int)s->k, &alpha, pr.p, CUDA_R_16BF, g.ld_p, pr.q,
                    CUDA_R_16BF, g.ld_q, &g.beta, pr.c, g.c_type, (int)s->n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return DT_OK;
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int measure_gemm(probe &pr, const cal_probe_opts *o, const cal_probe_shape *s, cal_probe_gemm *out, dt_error *err)
{
    memset(out, 0, sizeof *out);
    out->shape = *s;
    out->flops = 2 * s->m * s->n * s->k;
    gemm_call g = layout_call(s);
    size_t np = (size_t)s->n * (size_t)s->k, nq = (size_t)s->m * (size_t)s->k, nc = (size_t)s->m * (size_t)s->n;
    size_t cb = g.c_type == CUDA_R_32F ? 4 : 2;
    cudaFree(pr.p);
    cudaFree(pr.q);
    cudaFree(pr.c);
    pr.p = pr.q = pr.c = nullptr;
    CK(cudaMalloc(&pr.p, np * 2));
    CK(cudaMalloc(&pr.q, nq * 2));
    CK(cudaMalloc(&pr.c, nc * cb));
    fill_bf16<<<1024, 256, 0, pr.st>>>((__nv_bfloat16 *)pr.p, np, 1u);
    fill_bf16<<<1024, 256, 0, pr.st>>>((__nv_bfloat16 *)pr.q, nq, 2u);
    CK(cudaMemsetAsync(pr.c, 0, nc * cb, pr.st));
    CK(cudaGetLastError());
    for (int i = 0; i < o->warmup; i++)
        if (int rc = gemm(pr, s, g, err)) return rc;
    CK(cudaStreamSynchronize(pr.st));

    int r = o->repeats;
    if (int rc = events(pr, (size_t)r + 1, err)) return rc;
    CK(cudaEventRecord(pr.ev[0], pr.st));
    for (int i = 0; i < r; i++) {
        if (int rc = gemm(pr, s, g, err)) return rc;
        CK(cudaEventRecord(pr.ev[(size_t)i + 1], pr.st));
    }
    CK(cudaEventSynchronize(pr.ev[(size_t)r]));
    std::vector<double> t((size_t)r);
    for (int i = 0; i < r; i++) {
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, pr.ev[(size_t)i], pr.ev[(size_t)i + 1]));
        t[(size_t)i] = 1e-3 * ms;
    }
    out->repeats = r;
    out->burst_s = median(t);
    out->burst_min_s = *std::min_element(t.begin(), t.end());

    double sustain = s->sustain_s >= 0 ? s->sustain_s : o->sustain_s;
    if (!(sustain > 0)) return DT_OK;
    double win = o->window_s > 0 ? o->window_s : 1.0;
    int windows = (int)ceil(sustain / win - 1e-9);
    if (windows < 1) windows = 1;
    if (windows > CAL_PROBE_MAX_WINDOWS) windows = CAL_PROBE_MAX_WINDOWS;
    long per = out->burst_s > 0 ? lround(win / out->burst_s) : 1;
    if (per < 1) per = 1;
    if (int rc = events(pr, (size_t)windows + 1, err)) return rc;
    /* the GPU is idle here (the burst was waited for), so it reaches ev[0] at once */
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    out->sustain_start_unix = (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
    CK(cudaEventRecord(pr.ev[0], pr.st));
    for (int w = 0; w < windows; w++) {
        for (long i = 0; i < per; i++)
            if (int rc = gemm(pr, s, g, err)) return rc;
        CK(cudaEventRecord(pr.ev[(size_t)w + 1], pr.st));
    }
    CK(cudaEventSynchronize(pr.ev[(size_t)windows]));
    for (int w = 0; w < windows; w++) {
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, pr.ev[(size_t)w], pr.ev[(size_t)w + 1]));
        out->window_tflops[w] = (double)per * out->flops / (1e-3 * ms) / 1e12;
        out->sustain_s += 1e-3 * ms;
    }
    out->windows = windows;
    return DT_OK;
}

float bf16_to_float(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Before anything is timed: each layout on a small odd shape against a host product written
 * from its row-major definition (probe.h), so a wrong operation or leading dimension (which
 * would time some other GEMM, or read out of bounds) stops the probe instead of reporting. */
int check_layouts(probe &pr, dt_error *err)
{
    const int m = 96, n = 80, k = 72;
    for (int l = 0; l < CAL_PROBE_LAYOUT_COUNT; l++) {
        cal_probe_shape s;
        memset(&s, 0, sizeof s);
        s.m = m, s.n = n, s.k = k, s.layout = (cal_probe_layout)l;
        gemm_call g = layout_call(&s);
        size_t cb = g.c_type == CUDA_R_32F ? 4 : 2;
        cudaFree(pr.p);
        cudaFree(pr.q);
        cudaFree(pr.c);
        pr.p = pr.q = pr.c = nullptr;
        CK(cudaMalloc(&pr.p, (size_t)n * k * 2));
        CK(cudaMalloc(&pr.q, (size_t)m * k * 2));
        CK(cudaMalloc(&pr.c, (size_t)m * n * cb));
        fill_bf16<<<64, 256, 0, pr.st>>>((__nv_bfloat16 *)pr.p, (size_t)n * k, 11u + l);
        fill_bf16<<<64, 256, 0, pr.st>>>((__nv_bfloat16 *)pr.q, (size_t)m * k, 23u + l);
        CK(cudaMemsetAsync(pr.c, 0, (size_t)m * n * cb, pr.st));
        if (int rc = gemm(pr, &s, g, err)) return rc;
        std::vector<uint16_t> P((size_t)n * k), Q((size_t)m * k), C16((size_t)m * n);
        std::vector<float> C32((size_t)m * n);
        CK(cudaMemcpyAsync(P.data(), pr.p, P.size() * 2, cudaMemcpyDeviceToHost, pr.st));
        CK(cudaMemcpyAsync(Q.data(), pr.q, Q.size() * 2, cudaMemcpyDeviceToHost, pr.st));
        if (cb == 4) CK(cudaMemcpyAsync(C32.data(), pr.c, C32.size() * 4, cudaMemcpyDeviceToHost, pr.st));
        else CK(cudaMemcpyAsync(C16.data(), pr.c, C16.size() * 2, cudaMemcpyDeviceToHost, pr.st));
        CK(cudaStreamSynchronize(pr.st));
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) {
                double ref = 0, mag = 0;
                for (int x = 0; x < k; x++) {
                    double a, b; /* A[i][x] . B[x][j] in row-major terms */
                    if (l == CAL_PROBE_FWD) a = bf16_to_float(Q[(size_t)i * k + x]), b = bf16_to_float(P[(size_t)j * k + x]);
                    else if (l == CAL_PROBE_DGRAD) a = bf16_to_float(Q[(size_t)i * k + x]), b = bf16_to_float(P[(size_t)x * n + j]);
                    else a = bf16_to_float(Q[(size_t)x * m + i]), b = bf16_to_float(P[(size_t)x * n + j]);
                    ref += a * b;
                    mag += fabs(a * b);
                }
                double got = cb == 4 ? C32[(size_t)i * n + j] : bf16_to_float(C16[(size_t)i * n + j]);
                if (fabs(got - ref) > 1e-2 * mag + 1e-3)
                    return dt_error_set(err, DT_EINTERNAL, NULL, NULL,
                                        "probe: the %s GEMM (%d x %d x %d) computes %g at C[%d][%d], its definition %g: "
                                        "the layout is wrong, nothing was timed",
                                        cal_probe_layout_name((cal_probe_layout)l), m, n, k, got, i, j, ref);
            }
    }
    return DT_OK;
}

/* Median of 10 timed runs after 2 untimed ones, each bracketed by events. */
template <class F> int time_median(probe &pr, F run, double *out, dt_error *err)
{
    if (int rc = events(pr, 2, err)) return rc;
    for (int i = 0; i < 2; i++) run();
    CK(cudaGetLastError());
    std::vector<double> t;
    for (int i = 0; i < 10; i++) {
        CK(cudaEventRecord(pr.ev[0], pr.st));
        run();
        CK(cudaEventRecord(pr.ev[1], pr.st));
        CK(cudaEventSynchronize(pr.ev[1]));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, pr.ev[0], pr.ev[1]));
        t.push_back(1e-3 * ms);
    }
    CK(cudaGetLastError());
    *out = median(t);
    return DT_OK;
}

int measure_hbm(probe &pr, double bytes, cal_probe_run *out, dt_error *err)
{
    size_t b = (size_t)bytes & ~(size_t)15; /* whole float4s */
    cudaFree(pr.p);
    cudaFree(pr.q);
    cudaFree(pr.c);
    pr.p = pr.q = pr.c = nullptr;
    CK(cudaMalloc(&pr.p, b));
    CK(cudaMalloc(&pr.q, b));
    CK(cudaMemsetAsync(pr.p, 0, b, pr.st));
    CK(cudaMemsetAsync(pr.q, 0, b, pr.st));
    int sms = 0, dev = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    void *src = pr.p, *dst = pr.q;
    cudaStream_t st = pr.st;
    if (int rc = time_median(pr, [&] { cudaMemcpyAsync(dst, src, b, cudaMemcpyDeviceToDevice, st); }, &out->copy_s, err))
        return rc;
    size_t n4 = b / 16;
    if (int rc = time_median(pr, [&] { axpy<<<(unsigned)sms * 8, 512, 0, st>>>((float *)dst, (const float4 *)src, n4, 0.5f); },
                             &out->rmw_s, err))
        return rc;
    out->hbm_bytes = (double)b;
    out->copy_bytes_moved = 2.0 * (double)b;
    out->rmw_bytes_moved = 3.0 * (double)b;
    return DT_OK;
}

} // namespace

extern "C" int kern_probe_measure(const cal_probe_opts *o, const cal_probe_shape *shapes, int n,
                                  void (*progress)(const char *what, void *arg), void *arg, cal_probe_run *out,
                                  dt_error *err)
{
    memset(out, 0, sizeof *out);
    out->opts = *o;
    if (n < 0 || n > CAL_PROBE_MAX_SHAPES)
        return dt_error_set(err, DT_EINPUT, NULL, NULL, "probe: %d shapes, expected 0 to %d", n, CAL_PROBE_MAX_SHAPES);
    int devs = 0;
    cudaError_t e = cudaGetDeviceCount(&devs);
    if (e != cudaSuccess || devs == 0)
        return dt_error_set(err, DT_EUNSUPPORTED, NULL, NULL, "no CUDA device (%s)",
                            e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    CK(cudaSetDevice(0));
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    snprintf(out->device, sizeof out->device, "%s", p.name);
    out->sms = p.multiProcessorCount;
    int khz = 0;
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0) == cudaSuccess) out->clock_mhz = khz / 1000.0;
    cudaGetLastError();
    CK(cudaRuntimeGetVersion(&out->cuda_runtime));
    probe pr;
    CK(cudaStreamCreateWithFlags(&pr.st, cudaStreamNonBlocking));
    CB(cublasCreate(&pr.h));
    CB(cublasSetStream(pr.h, pr.st));
    CB(cublasGetVersion(pr.h, &out->cublas));
    if (progress) progress("checking the three layouts against a host product", arg);
    if (int rc = check_layouts(pr, err)) return rc;
    char what[160];
    for (int i = 0; i < n; i++) {
        double sus = shapes[i].sustain_s >= 0 ? shapes[i].sustain_s : o->sustain_s;
        snprintf(what, sizeof what, "%s (%.0f x %.0f x %.0f, %s): burst%s", shapes[i].name, shapes[i].m, shapes[i].n,
                 shapes[i].k, cal_probe_layout_name(shapes[i].layout), sus > 0 ? " and sustained" : "");
        if (progress) progress(what, arg);
        if (int rc = measure_gemm(pr, o, &shapes[i], &out->gemms[i], err)) return rc;
        out->n_gemms = i + 1;
    }
    if (o->hbm_bytes > 0) {
        if (progress) progress("HBM copy and read-modify-write", arg);
        if (int rc = measure_hbm(pr, o->hbm_bytes, out, err)) return rc;
    }
    CK(cudaStreamSynchronize(pr.st));
    return DT_OK;
}

#ifdef KERN_PROBE_STANDALONE
/* ---------------------------------------------------------------- alone on a GPU machine
 * Without libdtsim: the few library functions the code above calls, the default shapes, and a
 * JSON writer of the fields cal_probe_run_parse reads. */

extern "C" int dt_error_set(dt_error *err, int code, const char *file, const char *path, const char *fmt, ...)
{
    if (err) {
        err->code = code;
        snprintf(err->file, sizeof err->file, "%s", file ? file : "");
        snprintf(err->path, sizeof err->path, "%s", path ? path : "");
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

extern "C" const char *cal_probe_layout_name(cal_probe_layout l)
{
    static const char *const names[] = {"fwd", "dgrad", "wgrad"};
    return l >= 0 && l < CAL_PROBE_LAYOUT_COUNT ? names[l] : "?";
}

static void print_json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c < 0x20) printf("\\u%04x", c);
        else putchar(c);
    }
    putchar('"');
}

static void print_run(const cal_probe_run *r)
{
    printf("{\n  \"probe\": \"dtsim-gpu-probe\",\n  \"device\": ");
    print_json_string(r->device);
    printf(",\n  \"sms\": %d,\n  \"clock_mhz\": %.17g,\n  \"cuda_runtime\": %d,\n  \"cublas\": %d,\n", r->sms,
           r->clock_mhz, r->cuda_runtime, r->cublas);
    printf("  \"settings\": {\"warmup\": %d, \"repeats\": %d, \"sustain_s\": %.17g, \"window_s\": %.17g, "
           "\"hbm_bytes\": %.17g},\n",
           r->opts.warmup, r->opts.repeats, r->opts.sustain_s, r->opts.window_s, r->opts.hbm_bytes);
    printf("  \"gemms\": [");
    for (int i = 0; i < r->n_gemms; i++) {
        const cal_probe_gemm *g = &r->gemms[i];
        printf("%s\n    {\"name\": ", i ? "," : "");
        print_json_string(g->shape.name);
        printf(", \"m\": %.17g, \"n\": %.17g, \"k\": %.17g, \"layout\": \"%s\", \"flops\": %.17g,\n"
               "     \"burst_s\": %.17g, \"burst_min_s\": %.17g, \"repeats\": %d, \"sustain_s\": %.17g,\n"
               "     \"sustain_start_unix\": %.17g, \"window_tflops\": [",
               g->shape.m, g->shape.n, g->shape.k, cal_probe_layout_name(g->shape.layout), g->flops, g->burst_s,
               g->burst_min_s, g->repeats, g->sustain_s, g->sustain_start_unix);
        for (int w = 0; w < g->windows; w++) printf("%s%.6g", w ? ", " : "", g->window_tflops[w]);
        printf("]}");
    }
    printf("\n  ]");
    if (r->hbm_bytes > 0)
        printf(",\n  \"hbm\": {\"bytes\": %.17g, \"copy_s\": %.17g, \"copy_bytes_moved\": %.17g, \"rmw_s\": %.17g, "
               "\"rmw_bytes_moved\": %.17g}",
               r->hbm_bytes, r->copy_s, r->copy_bytes_moved, r->rmw_s, r->rmw_bytes_moved);
    printf("\n}\n");
}

static void on_progress(const char *what, void *arg)
{
    (void)arg;
    fprintf(stderr, "probe: %s\n", what);
}

/* --format-check: made-up figures through the writer, no GPU (tests/cli/test_probe.sh reads them
 * back and compares the report with that of tests/data/probe/synthetic-h100.json, the same
 * figures written by hand): a writer bug must not cost a GPU machine's minutes to find. */
static int format_check(cal_probe_run *r)
{
    memset(r, 0, sizeof *r);
    snprintf(r->device, sizeof r->device, "synthetic H100 80GB HBM3 (hand-made test input)");
    r->sms = 132;
    r->clock_mhz = 1980;
    r->cuda_runtime = 13000;
    r->cublas = 130100;
    r->opts = {10, 50, 4.0, 1.0, 1073741824.0};
    const cal_probe_shape sh[] = {{"sq", 8192, 8192, 8192, CAL_PROBE_FWD, -1},
                                  {"a", 1000, 1000, 1000, CAL_PROBE_DGRAD, -1},
                                  {"thin", 8192, 8192, 16, CAL_PROBE_WGRAD, -1}};
    const double burst[] = {2.0 * 8192 * 8192 * 8192 / 800e12, 1e-5, 6e-5};
    for (int i = 0; i < 3; i++) {
        cal_probe_gemm *g = &r->gemms[i];
        g->shape = sh[i];
        g->flops = 2 * sh[i].m * sh[i].n * sh[i].k;
        g->burst_s = g->burst_min_s = burst[i];
        g->repeats = 50;
    }
    r->gemms[0].burst_min_s = burst[0] * 0.99;
    r->gemms[0].sustain_s = 4.2;
    r->gemms[0].sustain_start_unix = 1795000000.25;
    r->gemms[0].windows = 4;
    const double w[] = {790, 760, 740, 720};
    memcpy(r->gemms[0].window_tflops, w, sizeof w);
    r->n_gemms = 3;
    r->hbm_bytes = 1073741824.0;
    r->copy_bytes_moved = 2 * r->hbm_bytes;
    r->copy_s = r->copy_bytes_moved / 2.9e12;
    r->rmw_bytes_moved = 3 * r->hbm_bytes;
    r->rmw_s = r->rmw_bytes_moved / 3.0e12;
    print_run(r);
    return 0;
}

static int usage(void)
{
    fprintf(stderr, "usage: kern_probe [--sustain S] [--sustain-of NAME=S] [--window S] [--repeats N] [--warmup N]\n"
                    "                  [--hbm-mib N] [--shape NAME:M:N:K:fwd|dgrad|wgrad]...\n"
                    "       kern_probe --format-check   (made-up figures through the JSON writer; no GPU)\n"
                    "Prints the measurement as JSON on stdout; `dtsim probe --from FILE` makes the report.\n");
    return 2;
}

int main(int argc, char **argv)
{
    cal_probe_run &run = *new cal_probe_run(); /* ~150 KB: not on the stack; freed at exit */
    struct dflt {
        const char *name;
        double m, n, k;
        int layout;
    };
    static const dflt defaults[] = {PROBE_DEFAULT_SHAPES};
    std::vector<cal_probe_shape> shapes;
    cal_probe_opts o = {10, 50, 60.0, 1.0, 1073741824.0};
    std::vector<std::pair<std::string, double>> per;
    if (argc == 2 && !strcmp(argv[1], "--format-check")) return format_check(&run);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (i + 1 >= argc) return usage();
        const char *v = argv[++i];
        char *end;
        if (!strcmp(a, "--sustain")) o.sustain_s = strtod(v, &end);
        else if (!strcmp(a, "--window")) o.window_s = strtod(v, &end);
        else if (!strcmp(a, "--repeats")) o.repeats = (int)strtol(v, &end, 10);
        else if (!strcmp(a, "--warmup")) o.warmup = (int)strtol(v, &end, 10);
        else if (!strcmp(a, "--hbm-mib")) o.hbm_bytes = 1048576.0 * strtod(v, &end);
        else if (!strcmp(a, "--sustain-of")) {
            const char *eq = strchr(v, '=');
            if (!eq) return usage();
            per.emplace_back(std::string(v, (size_t)(eq - v)), strtod(eq + 1, &end));
        } else if (!strcmp(a, "--shape")) {
            cal_probe_shape s;
            memset(&s, 0, sizeof s);
            char lay[16] = "";
            double m, n, k;
            const char *c = strchr(v, ':');
            if (!c || (size_t)(c - v) >= sizeof s.name || sscanf(c + 1, "%lf:%lf:%lf:%15s", &m, &n, &k, lay) != 4)
                return usage();
            memcpy(s.name, v, (size_t)(c - v));
            s.m = m, s.n = n, s.k = k, s.sustain_s = -1;
            int l = !strcmp(lay, "fwd") ? 0 : !strcmp(lay, "dgrad") ? 1 : !strcmp(lay, "wgrad") ? 2 : -1;
            if (l < 0 || !(m >= 1 && n >= 1 && k >= 1 && m <= CAL_PROBE_MAX_DIM && n <= CAL_PROBE_MAX_DIM &&
                           k <= CAL_PROBE_MAX_DIM))
                return usage();
            s.layout = (cal_probe_layout)l;
            shapes.push_back(s);
            continue;
        } else
            return usage();
        if (*end) return usage();
    }
    if (o.repeats < 1 || o.warmup < 0 || o.sustain_s < 0 || !(o.window_s > 0) || o.hbm_bytes < 0) return usage();
    if (shapes.empty())
        for (const dflt &d : defaults) {
            cal_probe_shape s;
            memset(&s, 0, sizeof s);
            snprintf(s.name, sizeof s.name, "%s", d.name);
            s.m = d.m, s.n = d.n, s.k = d.k, s.layout = (cal_probe_layout)d.layout, s.sustain_s = -1;
            shapes.push_back(s);
        }
    for (auto &pv : per) {
        bool found = false;
        for (cal_probe_shape &s : shapes)
            if (pv.first == s.name) s.sustain_s = pv.second, found = true;
        if (!found) {
            fprintf(stderr, "kern_probe: --sustain-of: no shape named \"%s\"\n", pv.first.c_str());
            return 2;
        }
    }
    dt_error err;
    memset(&err, 0, sizeof err);
    int rc = kern_probe_measure(&o, shapes.data(), (int)shapes.size(), on_progress, NULL, &run, &err);
    if (rc) {
        fprintf(stderr, "kern_probe: %s\n", err.msg);
        if (run.n_gemms) print_run(&run); /* what was measured before the failure */
        return 1;
    }
    print_run(&run);
    return 0;
}
#endif
