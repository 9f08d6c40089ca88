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
#include "dtsim/goodput.h"
#include "dtsim/net.h"
#include "dtsim/workload.h"

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
    int comm;          /* wl_comm_kind of a communication span, -1 for compute */
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
    int links;                /* report this many of the most loaded links (run_result.links) */
    /* Stop simulating once the step is known to take longer than this many seconds (0: run
     * to the end; a planner's incumbent). Then run_result.stopped_at_deadline is set,
     * step_time_s is the deadline and the rest of the result is not filled in. Applies to a
     * single synchronous step whose time is the replay's (no backup workers, bounded
     * staleness or local SGD: their step is not one replay's end); ignored otherwise. */
    double deadline_s;
} run_options;

/* One of the most loaded links of a run (run_options.links). Load = bytes / bandwidth, the
 * time the link needs at line rate; utilisation = that / the step time. Traffic the flow network
 * carries (pipeline sends, cross-lane collectives in flow mode) is counted as it flowed, over
 * the ECMP paths its flows hashed to; traffic costed in closed form (TP collectives inside
 * layers; everything in analytic mode) over the routes coll_analytic_time uses, spread over a
 * pair's ECMP lanes. */
#define RUN_LINK_USERS 6
typedef struct run_link_load {
    int link;                  /* index of the directed link in the topology */
    char name[96];             /* "src->dst" */
    double bandwidth;          /* B/s */
    double bytes;              /* carried during the step */
    double utilisation;        /* bytes / (bandwidth x step time) */
    double busy_s;             /* time it carried at least one flow (flow traffic only) */
    bool intra_host;           /* both ends in one host (NVLink, PCIe), else fabric */
    int alike;                 /* further links in the same role (endpoint names equal but for
                                  their digits) with the same bandwidth, bytes and kinds of
                                  users (the other GPUs' NVLinks, say), listed once */
    int n_users;
    struct {
        char op[40];           /* op name: "dp_allreduce", "send_activation", "tp_collectives" */
        int kind;              /* wl_comm_kind */
        double bytes;
    } users[RUN_LINK_USERS];   /* largest first; n_users of them; what is left is in `bytes` */
} run_link_load;

/* A struct tag only: run_memory is also the name of the function below. */
struct run_memory {
    double params, grads, optimizer, activations, peak; /* bytes, most loaded GPU */
    double capacity;                                     /* GPU memory, bytes */
};

#define RUN_GPU_TYPES 8

typedef struct run_result {
    double step_time_s;
    struct {
        double compute, comm_exposed, bubble, straggler_wait;
        double data_stall;        /* waiting for the input pipeline (scenario `input`) */
    } breakdown_s;
    /* the part of breakdown_s.compute the critical GPU spent waiting for its host's dispatch
     * (framework.host_*_per_layer; replay_result.host_wait); 0 without it */
    double host_wait_s;
    /* breakdown_s.comm_exposed by what the communication is for (wl_comm_kind: TP, PP, DP,
     * ZeRO gathers); they sum to it (replay.h says how overlapping kinds share an instant). */
    double comm_exposed_by_kind_s[WL_COMM_KIND_COUNT];
    /* per kind, how long the critical GPU had that communication in flight, hidden or not */
    double comm_inflight_by_kind_s[WL_COMM_KIND_COUNT];
    double max_straggler_wait_s;  /* longest wait for late peers over all GPUs */
    int max_straggler_wait_gpu;   /* the GPU that waited it */
    int critical_gpu;             /* whose breakdown breakdown_s is */
    struct {
        double samples_per_s, tokens_per_s, tflops_per_gpu, mfu;
    } throughput;
    struct run_memory memory;
    bool fits;
    int n_gpus;
    double cost_per_step_usd;   /* step time x the sum of every used GPU's $/GPU-hour (0 when
                                   no price is known): a mixed cluster pays each GPU its own */
    /* The GPUs the step ran on, by type (GPU name), in order of first appearance in GPU index
     * order; throughput.mfu is the model FLOP rate over the sum of their peaks at the run's
     * precision (a precision a GPU lacks: its next wider one, as the compute model runs it).
     * More than RUN_GPU_TYPES names: the rest count in the totals only. */
    int n_gpu_types;
    struct run_gpu_type {
        char name[GPU_NAME_MAX];
        int count;
        double peak_flops;      /* one GPU's, FLOP/s at the run's precision */
        double cost_per_hour;   /* one GPU's, USD */
        double hbm_bytes;       /* one GPU's memory */
    } gpu_types[RUN_GPU_TYPES];
    double peak_flops_total;    /* sum over the used GPUs, FLOP/s */
    double cost_per_hour_total; /* sum over the used GPUs, USD per hour */
    /* bytes one GPU sends per step, averaged over the GPUs, by kind (TP, PP, DP, ZeRO) and in
     * all: what each collective's program sends (every rank, every step of its algorithm) */
    double bytes_sent_per_gpu[WL_COMM_KIND_COUNT];
    double bytes_sent_per_gpu_total;
    run_link_load *links;       /* owned: the run_options.links most loaded, busiest first */
    int n_links;
    int links_loaded;           /* links that carried anything */
    uint64_t events;
    bool stopped_at_deadline;   /* run_options.deadline_s passed: the step takes longer */
    double wall_s;
    uint64_t seed;
    /* Data parallelism beyond one synchronous step (plan options; docs/workloads.md, "Many
     * steps"): */
    int backup_workers;         /* k > 0: the slowest k replicas' gradients are dropped: */
    int dropped_replicas;       /* replicas dropped this step */
    double samples_used;        /* samples whose gradients the update used (throughput counts
                                   only those) */
    int local_sgd;              /* H > 1: step_time_s is the mean over H steps, of which */
    double local_step_s, sync_step_s; /* H - 1 local steps and one averaging step */
    int staleness;              /* >= 0: bounded-staleness asynchronous DP; step_time_s is the
                                   mean period over `async_steps` steps, and the reads were */
    int async_steps;
    double staleness_mean, staleness_max; /* steps behind, on average and at worst */
    bool has_input;             /* the scenario has an `input` section: */
    double input_read_s;        /* reading one step's samples from storage */
    int input_prefetch;         /* batches the loader reads ahead */
    char calibration_note[768]; /* what calibration was applied, "" if none */
    char summary[256];          /* one line: model and plan, for people ("" for traces) */
    char name[128];             /* the scenario's (or trace's) "name", "" when it has none */
    run_timeline *timeline;     /* owned; NULL unless record_timeline; free with run_result_free */
} run_result;

/* Many steps (dtsim run --steps N): each step replayed with its own jitter draws (step 0 with
 * the scenario's seed, so it is the single run), the input pipeline's loader simulated across
 * steps, local SGD's averaging steps every H, bounded-staleness asynchronous replicas. */
typedef struct run_steps_result {
    int n;
    double *step_s;             /* owned: each step's duration (from the end of the previous) */
    double *stall_s;            /* owned: of which waiting for input data */
    double mean_s, stddev_s, min_s, p50_s, p99_s, max_s;
    double stall_mean_s;
    double dropped_mean;        /* backup workers: replicas dropped per step */
    int sync_steps;             /* local SGD: averaging steps among the n */
    double staleness_mean, staleness_max; /* asynchronous DP, else -1 */
} run_steps_result;

void run_steps_result_free(run_steps_result *r);

/* n steps of the scenario on `jobs` threads (results do not depend on it). `first` gets step
 * 0's full result (what run_scenario gives, timeline included when asked); progress, when not
 * NULL, is called from the calling thread as steps finish. */
int run_scenario_steps(const cJSON *scenario, const char *file, const char *base_dir,
                       const run_options *opt, int n, int jobs,
                       void (*progress)(void *ctx, long done, long total), void *progress_ctx,
                       run_result *first, run_steps_result *out, dt_error *err);
int run_scenario_steps_file(const char *filename, const run_options *opt, int n, int jobs,
                            void (*progress)(void *ctx, long done, long total),
                            void *progress_ctx, run_result *first, run_steps_result *out,
                            dt_error *err);

/* Frees what run_result owns (the timeline, the links); the struct itself is the caller's. */
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

/* A planner's quick look at one plan, without simulating it (run_probe_scenario): the memory
 * run_memory gives, and a lower bound on the step time the simulation will report. */
typedef struct run_probe {
    struct run_memory memory;
    bool fits;
    /* A lower bound on run_scenario's step_time_s (docs/sweeps.md, "The lower bound"): per
     * pipeline stage, every compute op of its lane (in-lane tensor-parallel collectives and GEMM
     * shapes included, as the replay charges them) one after another, plus the forward chunks
     * of the stages before it that its first op waits for and the backward chunks they run
     * after its last one. Communication between lanes and waits for peers count nothing,
     * except data parallelism: the last gradient bucket's collective before the optimizer (all
     * of them without overlap_dp) and the ZeRO-1/2 parameter gather after it, and the lane's
     * DP stream (one collective at a time: ZeRO-2/3 reduce-scatters, ZeRO-3 gathers) before
     * the optimizer, each collective at least what must cross into a host over that host's
     * links. Mixture-of-experts and context-parallel plans, whose split layers the whole-layer
     * cost does not follow, are bounded from their op graph instead (the busiest lane's compute
     * ops; only for plans that fit the GPU, graphs under 2 M ops, else 0). 0 when no bound is
     * given (jitter, backup workers, bounded staleness: steps whose time is not a lane's own
     * work). */
    double step_lower_bound_s;
    /* Not a bound: the bound, or where larger the lane's data-parallel stream (as above) with
     * each collective costed by its algorithm's contention-free closed form plus the optimizer
     * step. A planner simulates in this order so that its best plans come early; 0 with no
     * bound. */
    double step_estimate_s;
    double cost_per_hour_total; /* $/hour of the GPUs the plan uses */
    double tokens_per_step;
    int n_gpus;
} run_probe;

/* Topologies a probe built (and the op-graph bound's working arrays), kept for the next probe
 * of the same scenario but another plan: the planner probes thousands of plans on a few cluster
 * sizes, and generating a 1,024-GPU topology costs more than the rest of a probe. Keyed by the
 * scenario's text without "parallel". Not thread safe: one cache per thread. */
typedef struct run_probe_cache run_probe_cache;
run_probe_cache *run_probe_cache_create(void);
void run_probe_cache_destroy(run_probe_cache *c);

/* Probe one plan: parse and validate as run_scenario does (errors alike), then memory and the
 * lower bound. cache may be NULL (nothing kept). */
int run_probe_scenario(const cJSON *scenario, const char *file, const char *base_dir,
                       run_probe_cache *cache, run_probe *out, dt_error *err);

/* What a goodput simulation needs from a scenario with `failures` and `checkpoint` sections
 * (goodput.h): one simulated step (written to *step, as run_scenario), the parts that can fail
 * counted on the topology, the checkpoint's size (the memory model's weights and optimizer
 * states of every parameter unless given) and its write, snapshot and read-back times through
 * the storage model, the checkpoint interval in steps (0: auto). */
int run_goodput_job(const cJSON *scenario, const char *file, const char *base_dir,
                    const run_options *opt, gp_job *job, run_result *step, dt_error *err);
int run_goodput_job_file(const char *filename, const run_options *opt, gp_job *job,
                         run_result *step, dt_error *err);

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
