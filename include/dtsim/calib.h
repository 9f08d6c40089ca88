/* calib.h - calibration results: fitted latency/bandwidth models from real kernel runs, and how
 * they are applied to a simulated cluster.
 *
 * Produced by `dtsim calibrate` (kernels/), stored as a calibration JSON file (docs/formats.md),
 * consumed by `dtsim collective --calibration FILE` and scenarios with "calibration": FILE.
 * A cal_result is plain data owned by the caller (cal_result_free for its arrays).
 */
#ifndef DTSIM_CALIB_H
#define DTSIM_CALIB_H

#include <stddef.h>

#include "dtsim/error.h"
#include "dtsim/topo.h"

typedef struct cal_result cal_result;

/* Load and validate a calibration file. *out is caller-owned (cal_result_destroy). */
int cal_load_file(const char *filename, cal_result **out, dt_error *err);
void cal_result_destroy(cal_result *c);

/* Apply the fitted figures the calibration covers to topology t (link latency and bandwidth of
 * the links it describes; reduction bandwidth and compression throughput of the GPUs). Writes a
 * one-line human description of what was applied into note (for the run's output). */
int cal_apply_topology(const cal_result *c, topo *t, char *note, size_t note_size, dt_error *err);

/* Fitted top-k compression throughput in elements/s, 0 if the calibration has none. */
double cal_topk_throughput(const cal_result *c);

#endif
