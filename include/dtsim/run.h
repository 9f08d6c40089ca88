/* run.h - one simulated training step of a scenario, and its results.
 *
 * The entry point tests, the CLI and sweeps share: a parsed scenario (cJSON, borrowed) goes in,
 * a plain-data run_result comes out. Nothing is printed; writers in reports/ format results.
 */
#ifndef DTSIM_RUN_H
#define DTSIM_RUN_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "dtsim/error.h"
#include "dtsim/net.h"

typedef struct run_options {
    bool have_seed;
    uint64_t seed;            /* overrides the scenario's seed when have_seed */
    bool have_network;
    net_mode network;         /* overrides the scenario's network mode when have_network */
    const char *write_trace;  /* path to write the op graph to, or NULL */
    const char *timeline;     /* path for a Perfetto trace-event file, or NULL */
    const char *timeline_gpus;/* GPU selection for the timeline ("0-7,64"), NULL = all */
} run_options;

typedef struct run_memory {
    double params, grads, optimizer, activations, peak; /* bytes, most loaded GPU */
    double capacity;                                     /* GPU memory, bytes */
} run_memory;

typedef struct run_result {
    double step_time_s;
    struct {
        double compute, comm_exposed, bubble, straggler_wait;
    } breakdown_s;
    struct {
        double samples_per_s, tokens_per_s, tflops_per_gpu, mfu;
    } throughput;
    run_memory memory;
    bool fits;
    int n_gpus;
    double cost_per_step_usd;   /* step time x GPUs x $/GPU-hour, 0 if price unknown */
    uint64_t events;
    double wall_s;
    uint64_t seed;
    char calibration_note[256]; /* what calibration was applied, "" if none */
} run_result;

/* Run one step of the scenario in `scenario` (read from file `file`, relative paths resolved
 * against base_dir). Returns DT_OK, or an error with err filled (file and JSON path). */
int run_scenario(const cJSON *scenario, const char *file, const char *base_dir,
                 const run_options *opt, run_result *out, dt_error *err);

/* Same, from a file name. */
int run_scenario_file(const char *filename, const run_options *opt, run_result *out,
                      dt_error *err);

#endif
