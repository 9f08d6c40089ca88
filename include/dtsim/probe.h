/* probe.h - the compute probe (`dtsim probe`, docs/calibration.md "Compute probe"): real bf16
 * GEMMs of a training layer's shapes and HBM copies timed on one CUDA device, as a short burst
 * and sustained for a while, set against what dtsim's GPU model predicts for the same shapes.
 *
 * Two halves. Measuring (kern_probe_measure, kernels/kern_probe.cu; a stub says "built without
 * CUDA" elsewhere) needs a device and cuBLAS. Everything else here is plain C that runs on any
 * machine: the shape list and its file format, reading a measurement back from JSON (one taken
 * on a GPU machine by the standalone build of kern_probe.cu, which needs nothing but nvcc and
 * cuBLAS), and the report, whose arithmetic the unit tests check by hand.
 *
 * Ownership: every struct is plain data owned by the caller; cJSON results belong to the caller
 * (cJSON_Delete). No global state.
 */
#ifndef DTSIM_PROBE_H
#define DTSIM_PROBE_H

#include <stdbool.h>
#include <stddef.h>

#include "dtsim/error.h"

/* Declared, not included: kern_probe.cu built alone has neither cJSON nor the GPU model. */
struct cJSON;
struct gpu_spec;

#define CAL_PROBE_MAX_SHAPES 32
#define CAL_PROBE_MAX_WINDOWS 600 /* one-second windows of a sustained run: 10 minutes */
#define CAL_PROBE_NAME_MAX 32
#define CAL_PROBE_MAX_DIM 65536.0 /* a side larger than this is a typo, not a layer */

/* How a training layer hands a GEMM (m, n, k) to cuBLAS (column-major; Megatron's and
 * PyTorch's nn.Linear with the weight stored out x in), C[m x n] = A[m x k] . B[k x n] in
 * row-major terms:
 *  fwd   Y = X . W^T,   W stored n x k: cuBLAS "TN" (the forward)
 *  dgrad dX = dY . W,   W stored k x n: "NN" (the data gradient)
 *  wgrad dW = X^T . dY, X stored k x m: "NT" (the weight gradient, k = tokens) */
typedef enum cal_probe_layout { CAL_PROBE_FWD, CAL_PROBE_DGRAD, CAL_PROBE_WGRAD, CAL_PROBE_LAYOUT_COUNT } cal_probe_layout;

const char *cal_probe_layout_name(cal_probe_layout l); /* "fwd", "dgrad", "wgrad" */

typedef struct cal_probe_shape {
    char name[CAL_PROBE_NAME_MAX];
    double m, n, k;          /* whole numbers, 1 .. CAL_PROBE_MAX_DIM */
    cal_probe_layout layout;
    double sustain_s;        /* this shape's sustained run, s; < 0: the run's default; 0: none */
} cal_probe_shape;

/* The default list: one layer of the Megatron README's 1.7B GPT (h 2048, f 8192, 16 heads, 4096
 * tokens per microbatch, t = 1): QKV, projection, MLP up and down, each forward (T, n, k), data
 * gradient (T, k, n) and weight gradient (k, n, T) as dtsim's wl_gemm_backward shapes them;
 * then 8192^3 (the public benchmarks' shape). Returns the count (13); max must allow it. */
int cal_probe_default_shapes(cal_probe_shape *out, int max);

/* A shape list from JSON text: an array of {"name": s, "m": i, "n": i, "k": i, "layout":
 * "fwd"|"dgrad"|"wgrad" (default fwd), "sustain": seconds (optional)}, or an object
 * {"shapes": [...]}. Errors are DT_EINPUT naming file, JSON path, what was expected and what
 * was found (duplicate names too). *n is the count, 1 .. max. */
int cal_probe_shapes_parse(const char *text, size_t len, const char *file, cal_probe_shape *out,
                           int max, int *n, dt_error *err);
int cal_probe_shapes_file(const char *path, cal_probe_shape *out, int max, int *n, dt_error *err);

/* ---- a measurement ---- */

typedef struct cal_probe_opts {
    int warmup;          /* untimed GEMMs before the burst (default 10) */
    int repeats;         /* timed GEMMs of the burst, one event pair each (default 50) */
    double sustain_s;    /* default sustained duration per shape, s (default 60; 0: none) */
    double window_s;     /* sustained windows, s (default 1) */
    double hbm_bytes;    /* HBM probe buffer, B (default 1 GiB; 0: no HBM probe) */
} cal_probe_opts;

void cal_probe_opts_default(cal_probe_opts *o);

typedef struct cal_probe_gemm {
    cal_probe_shape shape;
    double flops;                 /* 2mnk */
    double burst_s;               /* median of the repeats, s */
    double burst_min_s;           /* fastest repeat, s */
    int repeats;
    double sustain_s;             /* measured length of the sustained run, s (0: none) */
    double sustain_start_unix;    /* wall clock (s since 1970, UTC) when it began, to line its
                                     windows up with an nvidia-smi log; 0 unknown */
    int windows;                  /* sustained windows recorded */
    double window_tflops[CAL_PROBE_MAX_WINDOWS];
} cal_probe_gemm;

typedef struct cal_probe_run {
    char device[256];             /* cudaDeviceProp.name, e.g. "NVIDIA H100 80GB HBM3" */
    int sms;                      /* multiprocessors the device reports */
    double clock_mhz;             /* the device's reported maximum SM clock, 0 unknown */
    int cuda_runtime, cublas;     /* versions, 0 unknown */
    cal_probe_opts opts;
    int n_gemms;
    cal_probe_gemm gemms[CAL_PROBE_MAX_SHAPES];
    /* HBM (0 when not measured): a device-to-device copy of hbm_bytes (read + write counted)
     * and y = a*x + y over hbm_bytes of fp32 per operand (two reads and a write) */
    double hbm_bytes, copy_s, copy_bytes_moved, rmw_s, rmw_bytes_moved;
} cal_probe_run;

/* Measure on device 0 (kernels/kern_probe.cu). DT_EUNSUPPORTED without CUDA in the build or
 * without a device; DT_EINTERNAL if CUDA or cuBLAS fail. progress (may be NULL) is called before
 * each step with a short description, for the command's stderr. */
int kern_probe_measure(const cal_probe_opts *o, const cal_probe_shape *shapes, int n,
                       void (*progress)(const char *what, void *arg), void *arg,
                       cal_probe_run *out, dt_error *err);

/* Read a measurement back: the JSON that the standalone probe (kern_probe.cu built alone) or
 * cal_probe_report writes; checked like any input (file, JSON path). */
int cal_probe_run_parse(const char *text, size_t len, const char *file, cal_probe_run *out,
                        dt_error *err);
int cal_probe_run_file(const char *path, cal_probe_run *out, dt_error *err);

/* ---- against dtsim's model ---- */

/* The preset a device name denotes ("NVIDIA H100 80GB HBM3" -> "H100-SXM", "NVIDIA H200" ->
 * "H200-SXM", "NVIDIA A100-SXM4-80GB" -> "A100-SXM", ...-40GB -> "A100-SXM-40GB", "NVIDIA B200"
 * -> "B200"), NULL when none fits (an H100 PCIe or NVL has other peaks than the SXM preset). */
const char *cal_probe_preset_for(const char *device);

/* dtsim's time for one bf16 GEMM of the shape on spec (gpu_gemm_time, count 1), s; and the
 * matmul efficiency that would make dtsim's compute term reproduce a measured time t:
 * 2mnk / (peak_bf16 x q x t), q = gpu_gemm_quantization(spec, m, n). */
double cal_probe_predict_s(const struct gpu_spec *spec, const cal_probe_shape *s);
double cal_probe_implied_eff(const struct gpu_spec *spec, const cal_probe_shape *s, double t);

/* The report (docs/calibration.md, "Compute probe"): the measurement, and with spec (may be
 * NULL: no comparison) per shape dtsim's prediction, measured/predicted rates and the implied
 * efficiency for the burst and the sustained end, and a suggested GPU spec override. preset
 * names the spec in the report (may be NULL). Caller owns the result. */
struct cJSON *cal_probe_report(const cal_probe_run *r, const struct gpu_spec *spec, const char *preset);

#endif
