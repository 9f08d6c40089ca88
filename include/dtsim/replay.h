/* replay.h - running an op graph (workload.h) on the engine, and trace files.
 *
 * replay_ (models/replay.c): every lane has four streams (compute, TP, PP, DP), each running its
 * ops one at a time in graph order, an op starting when it is at its stream's head and its
 * deps are done. A collective starts when every participating lane has reached it; the time a
 * lane spends between reaching it and its start is waiting for late peers. Communication is
 * costed either in closed form over the fabric's paths (analytic) or handed to a comm back end
 * (flow mode: collectives, sends and context parallelism's ring-attention sends over the
 * network model).
 *
 * trace_ (models/trace.c): the op graph and the run environment as a JSON file a user can read,
 * write by hand, or convert from a profiler (docs/formats.md, "Trace files").
 *
 * Ownership: replay_run borrows graph and config for the call; replay_result owns its arrays
 * (replay_result_free). trace_read returns a graph the caller destroys and fills a trace_env whose
 * arrays the caller frees with trace_env_free.
 */
#ifndef DTSIM_REPLAY_H
#define DTSIM_REPLAY_H

#include <stdio.h>

#include "dtsim/sim.h"
#include "dtsim/workload.h"

/* Contention-free time of a collective (or, op COLL_SENDRECV with n = 2, of a send from
 * gpus[0] to gpus[1]); in_lane: a tensor-parallel collective inside a compute op. run.c wires
 * it to coll_analytic_time (coll.h), so analytic mode charges the algorithm flow mode runs. */
typedef sim_time_t (*replay_coll_time_fn)(void *ctx, coll_op op, const int *gpus, int n,
                                       double bytes, bool in_lane);

/* Path between two GPUs, for the topology-less fallback: bottleneck bandwidth (B/s;
 * INFINITY = free) and latency. */
typedef void (*replay_path_fn)(void *ctx, int src_gpu, int dst_gpu, double *bw, sim_time_t *lat);

/* Optional comm back end (flow mode). Each call must eventually fire (kind, id, 0) on the
 * engine exactly once. tag says what the traffic is: REPLAY_TAG(comm kind, op name index). */
typedef struct replay_comm {
    void (*coll)(void *ctx, coll_op op, const int *gpus, int n, double bytes, uint32_t tag,
                 uint32_t kind, uint32_t id);
    void (*send)(void *ctx, int src_gpu, int dst_gpu, double bytes, uint32_t tag, uint32_t kind,
                 uint32_t id);
    void *ctx;
} replay_comm;

/* A transfer's label: its wl_comm_kind and the name (index into wl_graph.names) of the op that
 * issued it; REPLAY_TAG_INLANE as the name for collectives inside compute ops (TP). */
#define REPLAY_TAG(kind, name) ((uint32_t)(kind) << 16 | ((uint32_t)(name) & 0xffffu))
#define REPLAY_TAG_KIND(tag) ((int)((tag) >> 16))
#define REPLAY_TAG_NAME(tag) ((uint32_t)(tag) & 0xffffu)
#define REPLAY_TAG_INLANE 0xffffu

/* Compute time of one op class on a GPU: gpu_op_time, or a measured table. */
typedef sim_time_t (*replay_op_time_fn)(const gpu_spec *spec, gpu_op_class cls, gpu_precision prec,
                                     double flops, double bytes);

/* Compute time of a cost's GEMM shapes (wl_cost.gemm_set) on a GPU: gpu_gemm_time. prec is
 * the op's; a shape marked no_fp8 runs at 16 bits when prec is GPU_FP8 (gpu_gemm). */
typedef sim_time_t (*replay_gemm_time_fn)(const gpu_spec *spec, gpu_precision prec,
                                          const gpu_gemm *gemms, int n);

typedef struct replay_config {
    const gpu_spec *gpus;      /* n_gpus specs, borrowed */
    int n_gpus;
    replay_op_time_fn op_time;    /* NULL: the built-in roofline (same formula as gpu_op_time) */
    /* The matmul class of a cost with GEMM shapes. NULL: gpu_gemm_time when op_time is NULL
     * too; with an op_time of its own a program replaces the whole compute model, so the
     * shapes are ignored and op_time gets the matmul FLOPs. */
    replay_gemm_time_fn gemm_time;
    replay_coll_time_fn coll_time; /* contention-free collective costs (analytic mode; TP in
                                   both modes); NULL: the `path` fallback */
    void *coll_ctx;
    replay_path_fn path;          /* fallback without a topology (tests): a ring over uniform paths,
                                  see replay_coll_time; NULL with coll_time NULL: comm is free */
    void *path_ctx;
    const replay_comm *comm;      /* NULL: analytic (coll_time, else path) */
    sim_engine *eng;           /* engine the comm back end uses; NULL: replay_run makes its own */
    const double *slowdown;    /* per-GPU compute slowdown factor, NULL = none */
    wl_jitter_kind jitter;
    double jitter_sigma;
    uint64_t seed;
    bool record;               /* keep per-op times in the result (timelines) */
    /* Backup workers (Chen et al. 2016): a collective instance starts when all but
     * `backup_drop` of its lanes have reached it. The first instance to start decides the step's
     * quorum; the lanes left out are dropped for the whole step: their gradients are
     * discarded (their collective ops finish at once, without communication), the step ends
     * with the quorum's last op and their remaining compute is cancelled (it counts for
     * nothing). 0: synchronous, every lane waits for every other. */
    int backup_drop;
    /* Communication contention (docs/workloads.md, "Compute beside communication"): while a
     * collective of its lane is in flight, a compute op on the compute stream runs at the rate
     * of its GPU less the SMs the collective's kernels occupy and the HBM bandwidth they use
     * (re-timed by events when a collective starts or ends), and likewise beside a pipeline send
     * its compute does not wait for (the sender's and the receiver's GPU: NCCL send/receive
     * kernels); a layer op whose tensor-parallel
     * collectives it overlaps (wl_cost.inlane_overlap) pays the SMs and HBM of Transformer
     * Engine's userbuffers kernels. false (the zero value): overlapped communication is free
     * for the compute beside it. contention_sms: SMs one NCCL collective occupies; 0: by its
     * bandwidth, replay_nccl_channels(). */
    bool contention;
    int contention_sms;
    /* Stop once simulated time passes this (0: run to the end): a planner that only wants
     * steps shorter than its incumbent's spends nothing on the rest of a longer one. When an op
     * is left unfinished the result has stopped_at_deadline set, step_time = deadline (the step
     * takes longer) and nothing else filled in. Not with backup_drop (dropped lanes' ops). */
    sim_time_t deadline;
} replay_config;

/* Bandwidth one NCCL channel (one thread block, one SM) achieves per direction, B/s. NCCL runs
 * as few channels as reach the bandwidth its topology search finds (NVIDIA/nccl#689: "a PCI
 * system with a single NIC, which can achieve up to 12-24 GB/s ... should just launch 2 SMs",
 * 16 on DGX A100, whose NVLink all-reduce reaches 0.8 x 300 GB/s), and an H100 all-gather under
 * FSDP launched 24 (NVIDIA developer forum 337991; 0.8 x 450 GB/s): 15 GB/s per channel on each. */
#define REPLAY_NCCL_CHANNEL_BW 15e9
#define REPLAY_NCCL_MIN_CHANNELS 2
/* The most SMs an NCCL collective occupies on spec: its NVLink bandwidth at NCCL's efficiency
 * (0.8, topo.h) over REPLAY_NCCL_CHANNEL_BW, rounded, at most half the SMs (0 when neither
 * NVLink bandwidth nor SMs are known): A100 16, H100 and H200 24, B200 48. */
int replay_nccl_sms(const gpu_spec *spec);
/* SMs a collective sending `rate` B/s per GPU occupies on spec: ceil(rate /
 * REPLAY_NCCL_CHANNEL_BW), at least REPLAY_NCCL_MIN_CHANNELS, at most replay_nccl_sms(spec). */
int replay_nccl_channels(const gpu_spec *spec, double rate);
/* Transformer Engine's userbuffers tensor-parallel overlap (Megatron-Core --tp-comm-overlap,
 * TE initialize_ub defaults): all-gathers run as a ring exchange on the copy engines with one SM
 * (num_sm 1), reduce-scatters (pipeline and bulk methods) on 16 SMs that the GEMM leaves free
 * (set_sm_margin). */
#define REPLAY_TE_AG_SMS 1
#define REPLAY_TE_RS_SMS 16
/* The `bulk` method (the backward's qkv_dgrad, fc1_dgrad all-gathers of the saved input and
 * qkv_wgrad, fc1_wgrad reduce-scatters of the data gradient, each beside one GEMM:
 * wl_cost.inlane[].under in a cost with inlane_overlap) runs on add_ub's default 16 SMs. */
#define REPLAY_TE_BULK_SMS 16
/* Transformer Engine's `pipeline` overlap (the forward's proj_fprop and fc2_fprop
 * reduce-scatters, initialize_ub's default methods) splits the GEMM and its reduce-scatter into
 * num_splits = 4 chunks (add_ub's default): chunk i's reduce-scatter runs under chunk i + 1's
 * GEMM, and the last one's under nothing. So each such reduce-scatter of time C leaves C/4
 * exposed however long the GEMM is (docs/workloads.md, "Compute beside communication"). */
#define REPLAY_TE_RS_SPLITS 4
/* HBM bytes a GPU moves per byte it sends in a collective: NCCL (simple protocol through the
 * receiver's FIFO buffer): the byte is written into the receiver's FIFO, read from it, and
 * written to the output (or summed with the local chunk, read once more); the read also feeds
 * the send onward: 3. Userbuffers write straight into the peer's registered buffer: read to
 * send, written on receipt: 2. */
#define REPLAY_NCCL_HBM_PER_BYTE 3.0
#define REPLAY_TE_HBM_PER_BYTE 2.0
/* HBM bytes an NCCL send/receive moves per byte: the sender reads its source (1); the receiver
 * has the byte written into its FIFO, reads it and writes it to the output (3). No ring chains
 * the read that feeds a send to the write of what came in, so a GPU that sends one block and
 * receives one as large (context parallelism's ring step: Transformer Engine's isend/irecv of
 * the KV block to the next CP rank and from the previous one) moves 4 per byte it sends; a
 * pipeline send charges its two sides apart, since they are two GPUs. */
#define REPLAY_NCCL_SEND_HBM_PER_BYTE 1.0
#define REPLAY_NCCL_RECV_HBM_PER_BYTE 3.0
#define REPLAY_NCCL_P2P_HBM_PER_BYTE (REPLAY_NCCL_SEND_HBM_PER_BYTE + REPLAY_NCCL_RECV_HBM_PER_BYTE)
/* Compute time of cost c on spec while other kernels hold `sms` of its SMs and use `hbm` B/s of
 * its memory bandwidth: the cost on a GPU with sms fewer SMs (peak scaled by the SMs left, GEMM
 * waves over the SMs left) and the achieved HBM bandwidth less hbm, never under half of it (two
 * streams of requests each get half of a saturated memory system). */
sim_time_t replay_contended_time(const wl_graph *g, const wl_cost *c, const gpu_spec *spec,
                                 replay_op_time_fn op_time, replay_gemm_time_fn gemm_time,
                                 double sms, double hbm);
/* The framework's memory passes on a collective's stream (FSDP's casts and divisions,
 * wl_coll.hbm_bytes) as a share of the GPU over the collective's contention-free time t0 s:
 * their time alone, bytes at spec's achieved HBM bandwidth, over t0 (0 without passes, time or
 * bandwidth). An elementwise kernel at HBM bandwidth keeps every SM busy for bytes / BW, and
 * its blocks share no SM with a GEMM's that fills the register file, so beside any compute op
 * the passes time-share the GPU: the op runs at (1 - share) of its rate (docs/workloads.md,
 * "FSDP's own passes"). */
double replay_passes_phi(const gpu_spec *spec, double bytes, double t0);
/* The share of the GPU that passes summing to phi leave the compute stream without: phi, at
 * most REPLAY_PASSES_MAX_SHARE (FSDP creates its post-backward and pre-unshard streams at the
 * default priority: the block scheduler prefers neither stream's waiting blocks, and the
 * symmetric case gives each half of the SMs while both have work). */
#define REPLAY_PASSES_MAX_SHARE 0.5
double replay_passes_share(double phi);

typedef struct replay_result {
    sim_time_t step_time;
    /* Breakdown of [0, step_time] for the critical GPU (see docs/workloads.md): they sum to
     * step_time exactly. */
    sim_time_t compute, comm_exposed, bubble, straggler_wait;
    /* the part of compute its GPU spent waiting for its host's dispatch (wl_cost.host): from
     * the end of each op's GPU work to the host's floor; 0 without a floor */
    sim_time_t host_wait;
    /* comm_exposed split by what the communication is for (wl_comm_kind): an instant of
     * exposed communication counts for every kind in flight then, in equal shares (the
     * picosecond left over by an uneven division goes to the lowest kind), so the parts sum to
     * comm_exposed exactly. comm_inflight: per kind, how long the critical GPU had
     * communication of that kind in flight at all, exposed or hidden under compute (TP: the
     * in-layer collectives; waiting for late peers is not in flight). */
    sim_time_t comm_by_kind[WL_COMM_KIND_COUNT];
    sim_time_t comm_inflight[WL_COMM_KIND_COUNT];
    int critical_gpu;
    /* The GPU that spent longest waiting for late peers, and how long (the breakdown of the
     * critical GPU can hide it: a straggler that finishes last never waits itself). */
    sim_time_t max_straggler_wait;
    int max_straggler_wait_gpu;
    uint64_t events;
    bool stopped_at_deadline;  /* replay_config.deadline passed: the step takes longer */
    /* Per op (record only; owned): start (reached its stream head with deps done), launch
     * (communication began, after waiting for peers; = start for compute), end, and for
     * compute ops the in-lane (TP) communication time at the op's end. */
    sim_time_t *op_start, *op_launch, *op_end;
    sim_time_t *op_inlane;     /* in-lane (TP) communication inside compute ops */
    /* context parallelism (record only, NULL with cp = 1): per compute op the ring
     * attention's exposed part, the end of op_inlane, and its sends hidden under the compute */
    sim_time_t *op_ring, *op_ring_hidden;
    /* Per lane (owned, n_lanes): when its last op ended, and whether the step dropped it
     * (backup workers); dropped lanes are left out of step_time and the breakdown. */
    sim_time_t *lane_end;
    unsigned char *lane_dropped;
    int n_dropped;
} replay_result;

int replay_run(const wl_graph *g, const replay_config *cfg, replay_result *out, dt_error *err);
void replay_result_free(replay_result *r);

/* The topology-less fallback (replay_config.path without coll_time): every collective costed as
 * a ring over gpus in the order given, a = max latency and bw = min bandwidth of the ring's
 * neighbour paths: all-reduce 2(n-1)(a + B/(n bw)), reduce-scatter/all-gather/all-to-all
 * (n-1)(a + B/(n bw)), broadcast/reduce (n-1) a + B/bw, send/recv a + B/bw; reductions free.
 * A training run on a topology uses coll_analytic_time instead (the algorithm the flow mode
 * runs, reductions charged). */
sim_time_t replay_coll_time(replay_path_fn path, void *ctx, coll_op op, const int *gpus, int n,
                         double bytes);

/* The time of compute cost c on one GPU (spec NULL: its fixed part), at `precision` (fp8 runs
 * only the matmul class in fp8, the rest in bf16): the GEMMs gs[0..ng) with gemm_time (NULL:
 * none; their FLOPs then go through op_time with the rest, c->matmul_no_fp8 of them at bf16
 * under fp8), each op class with op_time (NULL: replay_roofline). What replay_op_compute_time
 * and wl_cost_time both charge. */
sim_time_t replay_cost_time(const wl_cost *c, const gpu_spec *spec, gpu_precision precision,
                            const gpu_gemm *gs, uint32_t ng, replay_op_time_fn op_time,
                            replay_gemm_time_fn gemm_time);

/* What the replay charges compute op cost c of graph g on one GPU (spec NULL: its fixed part),
 * before slowdowns and jitter and without its in-lane collectives: the GEMMs g attaches to c
 * through the GEMM shape model (gemm_time; NULL: gpu_gemm_time unless op_time is given), the
 * rest per op class with op_time (NULL: replay_roofline). The planner's bound times its ops
 * with it (run_probe_scenario). */
sim_time_t replay_op_compute_time(const wl_graph *g, const wl_cost *c, const gpu_spec *spec,
                                  replay_op_time_fn op_time, replay_gemm_time_fn gemm_time);

/* The built-in roofline: max(flops / (peak x eff), bytes / (hbm_bw x memory_eff)). */
sim_time_t replay_roofline(const gpu_spec *spec, gpu_op_class cls, gpu_precision prec, double flops,
                        double bytes);

/* ------------------------------------------------------------------ traces ---- */

/* What a trace carries besides the graph, so that replaying it reproduces the run. */
typedef struct trace_env {
    char name[128];
    cJSON *gpu;                  /* GPU override (owned copy) or NULL */
    wl_env env;                  /* the scenario's; ring_model AUTO unless the trace says otherwise */
    /* memory figures of the run that wrote it (replay cannot recompute them) */
    double mem_params, mem_grads, mem_optimizer, mem_activations, mem_peak;
} trace_env;

void trace_env_free(trace_env *e);
int trace_write(FILE *f, const wl_graph *g, const trace_env *env, dt_error *err);
/* Read and validate a trace (every key, path-named errors). */
int trace_read(const js_ctx *ctx, const cJSON *j, wl_graph **out, trace_env *env);

#endif
