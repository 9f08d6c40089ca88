/* wl_precision.c - what a training precision means to the other workload files: bytes per element
 * and the GPU precision its math runs at.
 *
 * Its own file because both the scenario reader (scenario.c) and the model arithmetic
 * (wl_model.c) need it, and neither should reach into the other for it.
 */
#include "dtsim/workload.h"

double wl_precision_bytes(wl_precision p) { return p == WL_FP32 || p == WL_TF32 ? 4.0 : 2.0; }

gpu_precision wl_gpu_precision(wl_precision p)
{
    switch (p) {
    case WL_FP32: return GPU_FP32;
    case WL_FP16: return GPU_FP16;
    case WL_BF16: return GPU_BF16;
    case WL_FP8: return GPU_FP8;
    case WL_TF32: return GPU_TF32;
    }
    return GPU_BF16;
}
