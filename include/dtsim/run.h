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

/* Per-op and per-link activity of a run, kept only when run_options.record_timeline is set;
 * writers in reports/ turn it into Perfetto/Chrome trace-event files. */
typedef enum run_stream {
    RUN_STREAM_COMPUTE,
    RUN_STREAM_TP,   /* tensor-parallel collectives */
    RUN_STREAM_PP,   /* pipeline send/recv */
    RUN_STREAM_DP,   /* data-parallel / ZeRO collectives */
    RUN_STREAM_COUNT
} run_stream;

typedef struct run_span {
    int gpu;
    run_stream stream;
    sim_time_t start, end;
    int name;          /* index into run_timeline.names */
    int microbatch;    /* -1 if not applicable */
    int layer;         /* -1 if not applicable */
} run_span;

typedef struct run_link_span {
    int link;          /* index into run_timeline.link_names */
    sim_time_t start, end;
    double bytes;
} run_link_span;

typedef struct run_timeline {
    run_span *spans;
    size_t n_spans;
    char **names;            /* op names, owned */
    size_t n_names;
    run_link_span *link_spans;
    size_t n_link_spans;
    char **link_names;       /* "src->dst" per directed link, owned */
    size_t n_links;
    /* Per link, its two endpoints (src at 2l, dst at 2l+1): the GPU index of the node (-1 if
     * the node is not a GPU) and the host the node belongs to (-1 none). Owned; NULL (both)
     * when the producer does not know them: a GPU selection then keeps every link. */
    int *link_gpu;
    int *link_host;
    int n_gpus;
    int *gpu_host;           /* host index per GPU (-1 none) */
    char **host_names;       /* owned */
    int n_hosts;
} run_timeline;

void run_timeline_free(run_timeline *tl);

struct wl_graph;
struct trace_env;
struct topo;

/* Called once a run's op graph exists, before it is simulated, with the environment it runs
 * under and the topology (GPU overrides, degraded links and calibration applied): how the CLI
 * writes the graph out (--write-chakra, and --write-trace of a replayed trace) through its own
 * output files. Everything passed is borrowed for the call. A non-zero return stops the run
 * with that status (err filled). */
typedef int (*run_graph_fn)(void *ctx, const struct wl_graph *g, const struct trace_env *env, const struct topo *t,
                            dt_error *err);

typedef struct run_options {
    bool have_seed;
    uint64_t seed;            /* overrides the scenario's seed when have_seed */
    bool have_network;
    net_mode network;         /* overrides the scenario's network mode when have_network */
    const char *write_trace;  /* path to write the op graph to, or NULL */
    const char *timeline;     /* path for a Perfetto trace-event file, or NULL */
    const char *timeline_gpus;/* GPU selection for the timeline ("0-7,64"), NULL = all */
    bool record_timeline;     /* fill run_result.timeline */
    run_graph_fn on_graph;    /* NULL: none */
    void *on_graph_ctx;
    const char *chakra_groups; /* run_chakra: ASTRA-sim communicator-group file, or NULL */
    void (*warn)(void *ctx, const dt_error *warning); /* run_chakra's warnings (NULL: dropped) */
    void *warn_ctx;
} run_options;

/* A struct tag only: run_memory is also the name of the function below. */
struct run_memory {
    double params, grads, optimizer, activations, peak; /* bytes, most loaded GPU */
    double capacity;                                     /* GPU memory, bytes */
};

typedef struct run_result {
    double step_time_s;
    struct {
        double compute, comm_exposed, bubble, straggler_wait;
    } breakdown_s;
    double max_straggler_wait_s;  /* longest wait for late peers over all GPUs */
    int max_straggler_wait_gpu;   /* the GPU that waited it */
    int critical_gpu;             /* whose breakdown breakdown_s is */
    struct {
        double samples_per_s, tokens_per_s, tflops_per_gpu, mfu;
    } throughput;
    struct run_memory memory;
    bool fits;
    int n_gpus;
    double cost_per_step_usd;   /* step time x GPUs x $/GPU-hour, 0 if price unknown */
    uint64_t events;
    double wall_s;
    uint64_t seed;
    char calibration_note[768]; /* what calibration was applied, "" if none */
    char summary[256];          /* one line: model and plan, for people ("" for traces) */
    run_timeline *timeline;     /* owned; NULL unless record_timeline; free with run_result_free */
} run_result;

/* Frees what run_result owns (the timeline); the struct itself is the caller's. */
void run_result_free(run_result *r);

/* Run one step of the scenario in `scenario` (read from file `file`, relative paths resolved
 * against base_dir). Returns DT_OK, or an error with err filled (file and JSON path). */
int run_scenario(const cJSON *scenario, const char *file, const char *base_dir,
                 const run_options *opt, run_result *out, dt_error *err);

/* Memory per GPU only (no simulation): fast, for planners. Fills out and *fits. */
int run_memory(const cJSON *scenario, const char *file, const char *base_dir, struct run_memory *out,
               bool *fits, dt_error *err);

/* Same as run_scenario, from a file name. */
int run_scenario_file(const char *filename, const run_options *opt, run_result *out,
                      dt_error *err);
int run_memory_file(const char *filename, struct run_memory *out, bool *fits, dt_error *err);

/* Replay a trace file (docs/formats.md, "Trace files") on the topology in topology_file.
 * The trace carries the GPU override, faults, seed and network mode of the run that wrote it,
 * so a written trace replayed on the same topology gives the same result. */
int run_trace_file(const char *trace_file, const char *topology_file, const run_options *opt,
                   run_result *out, dt_error *err);

/* Replay a Chakra execution trace (chakra.h: PREFIX.<rank>.et files, or the directory holding
 * them) on the topology in topology_file, one GPU per rank. A trace dtsim wrote carries its run
 * environment and gives the step time of the run that wrote it. */
int run_chakra(const char *dir_or_prefix, const char *topology_file, const run_options *opt,
               run_result *out, dt_error *err);

#endif
