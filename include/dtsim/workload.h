/* workload.h - training workloads: the scenario's model and parallel plan, their FLOPs and
 * memory, and the schedule generator that turns them into a per-GPU op graph.
 *
 * Three modules share this header because they share its plain-data types:
 *   wl_  scenario parsing (models/scenario.c), model arithmetic (models/wl_model.c) and
 *        schedule generation (models/wl_schedule.c);
 *   mem_ memory accounting (models/mem.c).
 * The replay of an op graph and the trace file format are in replay.h.
 *
 * Ownership: wl_scenario is filled by wl_scenario_parse() and freed with wl_scenario_free();
 * it borrows the cJSON it was parsed from for `topology` and `gpu` (those stay raw: the topology
 * module interprets them), so keep that cJSON alive as long as the scenario. A wl_graph is
 * created by wl_graph_build()/trace loading and freed by wl_graph_destroy().
 *
 * Lanes: the op graph's unit of execution is a *lane*, a set of GPUs that run the same op list
 * in lockstep - a tensor-parallel group, which synchronises at every layer. Collapsing a TP
 * group into one lane divides the op count by tp while keeping per-GPU stragglers exact (a
 * lane's compute op lasts as long as its slowest member). A hand-written trace uses one GPU
 * per lane.
 */
#ifndef DTSIM_WORKLOAD_H
#define DTSIM_WORKLOAD_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "dtsim/coll.h"
#include "dtsim/error.h"
#include "dtsim/goodput.h"
#include "dtsim/gpu.h"
#include "dtsim/json.h"
#include "dtsim/net.h"
#include "dtsim/simtime.h"

/* ---------------------------------------------------------------- scenario ---- */

typedef enum wl_model_kind { WL_TRANSFORMER, WL_SYNTHETIC, WL_PARAMS } wl_model_kind;
typedef enum wl_mlp_kind { WL_MLP_GELU, WL_MLP_SWIGLU } wl_mlp_kind;
/* How the attention core runs (docs/workloads.md, "Attention"): unfused (Megatron before
 * FlashAttention: the score matrix materialised, softmax and dropout kernels over it) or a
 * fused flash kernel (no score matrix in memory, recomputed inside its backward). 0 = unfused
 * so that struct literals keep Korthikanti's closed forms; scenarios default to flash. */
typedef enum wl_attention { WL_ATTN_UNFUSED, WL_ATTN_FLASH } wl_attention;
/* The model's normalisation layers (docs/workloads.md, "Parameters"): LayerNorm has a weight
 * and a bias of h each (GPT, Megatron's default), RMSNorm a weight alone (Llama, Mixtral,
 * Qwen). 0 = LayerNorm so that struct literals keep the 4h per layer of the closed forms. */
typedef enum wl_norm_kind { WL_NORM_LAYERNORM, WL_NORM_RMSNORM } wl_norm_kind;

typedef struct wl_model {
    wl_model_kind kind;
    char name[64];
    int layers;
    /* transformer */
    double hidden, heads, seq_len, vocab, ffn, kv_heads, experts, top_k;
    /* Mixture of experts (docs/workloads.md, "Expert parallelism"); zero reads as the
     * default, so struct literals stay dense: expert_ffn 0 = ffn, moe_layer_freq 0 = 1. */
    double expert_ffn;        /* MLP width of one routed (and one shared) expert */
    /* width of one attention head; 0 = hidden / heads. Qwen3 and Gemma set it apart from the
     * hidden size (queries a x head_dim wide, keys and values g x head_dim) */
    double head_dim;
    double shared_experts;    /* experts every token passes through (DeepSeekMoE) */
    double capacity_factor;   /* tokens an expert takes, x its balanced share; 0 = dropless */
    double router_zipf;       /* Zipf exponent of tokens per expert; 0 = balanced router */
    int moe_layer_freq;       /* every k-th layer (0, k, 2k, ...) is an MoE layer */
    uint64_t router_seed;     /* seed of the router's skew (which experts are popular) */
    wl_mlp_kind mlp;
    bool tied_embeddings;     /* output layer shares the input embedding (GPT) */
    wl_attention attention;
    wl_norm_kind norm;        /* the two norms of every layer and the final one */
    /* (negated so that zero is the GPT default: causal mask, dropout on the probabilities) */
    bool non_causal;          /* no causal mask: flash computes every score block */
    bool no_attention_dropout; /* unfused: no dropout kernel, mask or output over the scores */
    gpu_attn_kernel flash_kernel; /* flash: which fused kernel runs (its measured curve) */
    /* synthetic: per layer and microbatch; params is the whole model (all kinds) */
    sim_time_t t_fwd, t_bwd;
    double act_bytes_per_layer;
    double flops_per_layer;   /* forward FLOPs per layer and microbatch (synthetic, optional) */
    double params;            /* total parameter count */
} wl_model;

typedef enum wl_schedule_kind { WL_GPIPE, WL_1F1B, WL_INTERLEAVED } wl_schedule_kind;
typedef enum wl_ckpt { WL_CKPT_NONE, WL_CKPT_FULL, WL_CKPT_SELECTIVE } wl_ckpt;
/* tf32: fp32 storage, GEMMs on the tensor cores' TF32 rate (Ampere and later) */
typedef enum wl_precision { WL_FP32, WL_FP16, WL_BF16, WL_FP8, WL_TF32 } wl_precision;
typedef enum wl_optimizer { WL_ADAM, WL_SGD } wl_optimizer;
typedef enum wl_axis { WL_AXIS_TP, WL_AXIS_PP, WL_AXIS_DP } wl_axis;
/* How work is split over GPUs of different speeds ("parallel.balance", docs/workloads.md
 * "Uneven work on mixed clusters"): evenly (the default), or by each stage's and each
 * replica's speed as the compute model runs them. */
typedef enum wl_balance { WL_BALANCE_NONE, WL_BALANCE_SPEED } wl_balance;

/* How the training framework runs the plan (scenario "framework": a preset name or
 * {"preset": NAME, option: value, ...}; docs/workloads.md "Framework behaviour" gives every
 * option's default per preset and where it comes from). Zero-initialised = the "generic"
 * preset except for overlap of the gradient reduction, which lives in wl_plan.overlap_dp. */
typedef enum wl_framework_preset { WL_FW_GENERIC, WL_FW_MEGATRON, WL_FW_FSDP } wl_framework_preset;

typedef struct wl_framework {
    wl_framework_preset preset;
    bool overlap_param_gather;   /* ZeRO-1/2 parameter all-gather hidden in the next forward */
    bool tp_comm_overlap;        /* TP collectives overlap the layer's GEMMs (exposed: excess) */
    /* without tp_comm_overlap: a column-parallel linear's backward issues its collectives
     * asynchronously beside its GEMMs (Megatron's LinearWithGradAccumulationAndAsync-
     * Communication, Transformer Engine's Linear/LayerNormLinear backward) instead of after
     * the layer's compute (wl_cost.inlane[].under) */
    bool tp_async_backward;
    bool pp_blocking_sends;      /* a stage's compute waits for its pipeline send to finish */
    /* with overlap and pp > 1 (1F1B), only the first stage reduces during its last backward;
     * the others start their buckets after it (Megatron-Core --delay-grad-reduce) */
    bool delay_grad_reduce;
    double optimizer_bytes;      /* bytes moved per updated parameter; 0 = by optimizer kind */
    /* bytes per gradient element of the data-parallel reduction (framework.reduce_dtype: FSDP's
     * MixedPrecision.reduce_dtype); 0 = the training precision's */
    double reduce_bytes;
    /* bytes per parameter of the GPU's whole gradient buffer (not its ZeRO shard) that the
     * framework's data-parallel wrapper moves once per step outside the optimizer: zeroing,
     * scaling by 1/d, the NaN check (framework.grad_buffer_bytes, when grad_buffer_set;
     * otherwise by preset) */
    bool grad_buffer_set;
    double grad_buffer_bytes;
    /* the output layer's loss (framework.cross_entropy): false = "fp32", PyTorch's
     * F.cross_entropy over logits cast to fp32 (Megatron, autocast); true = "fused",
     * flash-attn's fused kernel over the 16-bit logits (llm-foundry's default loss_fn) */
    bool fused_cross_entropy;
    /* flash attention called through flash-attn's unpad_input/pad_input (llm-foundry's
     * flash_attn_fn): gathers of q, k, v and a scatter of the output around the varlen kernel
     * (framework.attention_unpad) */
    bool attention_unpad;
    /* interleaved schedule, sends not blocking: a stage's next compute of the send's direction
     * waits for it (a forward's send before the next forward, a backward's before the next
     * backward), the compute between them runs beside it (Megatron-Core overlap_p2p_comm) */
    bool overlap_p2p_comm;
    /* Megatron's --no-gradient-accumulation-fusion (framework.gradient_accumulation_fusion
     * false; megatron preset only): each linear layer's weight-gradient GEMM writes a 16-bit
     * param.grad that the DDP hook adds into the fp32 main_grad every microbatch, instead of
     * accumulating into main_grad itself. Stored negated so that zero is the fused default. */
    bool grad_accum_unfused;
    /* Host time (Python, autograd, kernel launches) of one layer's forward and of its backward
     * on one microbatch (framework.host_forward_per_layer, host_backward_per_layer; 0 = none,
     * every preset's default): the CPU issues kernels ahead of the GPU, so a layer op of n
     * layers lasts at least n x this (wl_cost.host); a fully recomputed backward pays the
     * forward's again (docs/workloads.md, "Host dispatch floor") */
    sim_time_t host_fwd, host_bwd;
} wl_framework;

const char *wl_framework_name(wl_framework_preset p);
/* Bytes the optimizer step moves per parameter it updates: fw.optimizer_bytes when set, else
 * the framework's optimizer as derived in docs/workloads.md (Megatron's mixed-precision
 * optimizer: 54 with fp16, 38 with bf16/fp8, its main_grad zeroing being in
 * wl_grad_buffer_bytes; otherwise Adam 28, SGD with momentum 20). */
struct wl_plan;
double wl_optimizer_bytes(const struct wl_plan *p);
/* Which Megatron the `megatron` preset stands for: Megatron-Core (v0.7, with Transformer Engine)
 * under every precision but fp16, whose runs are Megatron-LM of 2022 (Korthikanti's cases).
 * The one rule for everything that differs between the two: the preset's defaults (gradient
 * buffer passes, overlapped interleaved sends, the fp32 reduction), the optimizer's bytes and
 * the layer's elementwise kernels (docs/workloads.md, "Framework behaviour"). False for the
 * other presets. */
bool wl_megatron_core(const struct wl_plan *p);
/* Bytes per parameter of the GPU's whole gradient buffer moved once per step by the
 * data-parallel wrapper (fw.grad_buffer_bytes when set): Megatron-Core's DDP under bf16/fp8
 * zeroes its main_grad buffer, scales it by 1/d and takes its norm for the NaN check, 4 x the
 * buffer's element size (16 with the fp32 buffer); 0 otherwise (docs/workloads.md). */
double wl_grad_buffer_bytes(const struct wl_plan *p);
/* The part of wl_grad_buffer_bytes that Megatron-Core runs per gradient bucket, on the compute
 * stream just before the bucket's reduction (start_grad_sync: the NaN check's norm and the 1/d
 * scaling, 3 x the element size); the rest (the zeroing) runs once per step. 0 without the
 * preset's passes, at d = 1, and when framework.grad_buffer_bytes is given. */
double wl_grad_buffer_bucket_bytes(const struct wl_plan *p);
/* Bytes per element of the input embedding's V/t x h weight that one microbatch's backward
 * moves for its weight gradient outside the scatter (Megatron: the dense gradient PyTorch's
 * embedding backward zero-fills, added into the fp32 main_grad by the DDP hook; tied on one
 * stage also the output layer's zeroed wgrad and autograd's sum of the two); PyTorch FSDP the
 * zero-fill and, tied on one GPU, autograd's sum with the output layer's gradient (4e); 0 for
 * the generic preset (docs/workloads.md, "Framework behaviour"). */
double wl_embedding_wgrad_bytes(const struct wl_plan *p, bool tied_here);
/* Bytes per element of a linear layer's weight that Megatron's DDP hook moves after each
 * microbatch's backward of it when gradient-accumulation fusion is off
 * (framework.gradient_accumulation_fusion false): param.main_grad.add_(param.grad), read the
 * 16-bit gradient and read and write main_grad, e + 2 x main_grad bytes (10 under bf16 with
 * the fp32 buffer). 0 with the fusion (the wgrad GEMM accumulates into main_grad itself) and
 * for the other presets. The wgrad GEMM's own write of param.grad is in its GEMM time
 * (docs/workloads.md, "Framework behaviour"). */
double wl_wgrad_hook_bytes(const struct wl_plan *p);
/* Bytes per logit of the output layer's cross-entropy (docs/workloads.md, "Compute time of an
 * op"): fp32 (framework.cross_entropy "fp32") forward e + 32, backward 12 + e; flash-attn's fused
 * kernel ("fused") forward e (one online-softmax read), backward 2e (read the logits, write
 * their gradient); e the training precision's bytes. */
double wl_cross_entropy_bytes(const struct wl_plan *p, bool bwd);
/* Bytes per token and layer of the layout copies around a flash kernel called through
 * flash-attn's unpad_input/pad_input (framework.attention_unpad; 0 without): forward the gathers
 * of q, k, v (read and write each) and pad_input's zero-fill and scatter of the output;
 * backward the output gradient's gather, the zero-fill and scatter of dq, dk, dv and the
 * concatenation of the three into the fused QKV gradient (docs/workloads.md). */
double wl_attention_unpad_bytes(const struct wl_model *m, const struct wl_plan *p, bool bwd);
/* PyTorch FSDP (FSDP1, flat parameters; the fsdp preset) per unsharded parameter of a layer's
 * backward on the compute stream: autograd builds the flat gradient from the parameters' views
 * (split_with_sizes' backward: a concatenation, read e and write e); 0 for other presets. */
double wl_fsdp_flat_grad_bytes(const struct wl_plan *p);
/* PyTorch FSDP's gradient pre- and post-division factors for d ranks (DefaultState's
 * _get_gradient_predivide_factor: the smallest power of two f with f >= d / f or not dividing
 * d; post = d / pre). */
double wl_fsdp_predivide(int d);
/* HBM bytes per GPU of the memory passes FSDP runs on its post-backward stream around the
 * reduction of `elems` unsharded gradient elements over d ranks: the cast to reduce_dtype, the
 * pre-division of the unsharded gradient, the post-division of the shard, its cast to the fp32
 * parameter dtype and, when `accumulate`, its addition to the saved shard (sharded strategies:
 * zero >= 1; with zero 0 the division and cast act on the whole all-reduced gradient). 0 unless
 * the fsdp preset. */
double wl_fsdp_reduce_pass_bytes(const struct wl_plan *p, double elems, int d, bool accumulate);
/* The part of wl_fsdp_reduce_pass_bytes that runs before the collective starts: the cast to
 * reduce_dtype and the pre-division of the unsharded gradient; the rest runs after it ends. */
double wl_fsdp_reduce_pre_bytes(const struct wl_plan *p, double elems, int d);
/* HBM bytes per GPU of FSDP's pre-unshard cast of the fp32 shard to the parameter dtype before
 * an all-gather of `elems` unsharded parameters over d ranks (read 4, write e per shard
 * element); 0 unless the fsdp preset under a 16-bit precision. */
double wl_fsdp_gather_pass_bytes(const struct wl_plan *p, double elems, int d);
/* What a piece of communication is for: the key of the per-kind accounting of exposed
 * communication (replay.h), bytes sent per GPU and link loads (run.h). Tensor-parallel
 * collectives inside layers, pipeline sends, data-parallel gradient reduction (compressed or
 * not, ZeRO's gradient reduce-scatter included), ZeRO's parameter all-gathers, expert
 * parallelism's all-to-alls and context parallelism's ring. New kinds go before the count;
 * names are lower-case and stable: they are JSON keys and CSV column suffixes (ep and cp are
 * printed only by runs that have them, and have no sweep column yet). */
typedef enum wl_comm_kind {
    WL_COMM_TP,
    WL_COMM_PP,
    WL_COMM_DP,
    WL_COMM_ZERO,
    WL_COMM_EP,   /* expert all-to-alls (dispatch, combine); expert-DP gradients count as dp */
    WL_COMM_CP,   /* ring attention's KV blocks between context-parallel ranks */
    WL_COMM_KIND_COUNT
} wl_comm_kind;
/* "tp", "pp", "dp", "zero", "ep", "cp"; "?" out of range. */
const char *wl_comm_kind_name(wl_comm_kind k);
/* For people: "tensor parallel", "pipeline", "data parallel", "ZeRO parameter gathers". */
const char *wl_comm_kind_label(wl_comm_kind k);
/* Short, for plots and timelines: "TP", "PP", "DP", "ZeRO". */
const char *wl_comm_kind_abbrev(wl_comm_kind k);
int wl_comm_kind_parse(const char *s, wl_comm_kind *out); /* DT_OK / DT_EINPUT */

typedef struct wl_plan {
    int dp, tp, pp, zero, virtual_stages, microbatches, micro_batch_size;
    /* Expert and context parallelism (docs/workloads.md); 0 reads as 1 (wl_ep, wl_cp), so
     * plans built in code stay what they were. dp x tp x pp x cp = GPUs; ep divides dp. */
    int ep, cp;
    wl_schedule_kind schedule;
    wl_ckpt checkpointing;
    bool sequence_parallel;
    wl_precision precision;
    wl_optimizer optimizer;
    double bucket_bytes;         /* DP gradient bucket size */
    bool overlap_dp;             /* DP communication overlaps backward (DDP-style) */
    double compression_ratio;    /* top-k fraction kept, 0 = no compression */
    bool sparse_allreduce;       /* compression.method "sparse_allreduce": the pairs are reduced
                                    (density kept at the ratio) instead of all-gathered */
    int quant_bits;              /* compression.method int8/fp8 (8), onebit (1): gradients
                                    all-reduced quantised with error feedback; 0 = none */
    bool topk_ps;                /* compression.method "ps": workers push their top-k pairs to
                                    the parameter servers (options.dp_algorithm "ps"), which
                                    sum them; the union is pulled back (docs/workloads.md) */
    int lowrank_rank;            /* compression.method "powersgd": rank r of P (m x r) and
                                    Q (n x r) per weight matrix; 0 = none */
    double lowrank_min_rate;     /* PowerSGD compresses a matrix only when m n > rate r (m+n)
                                    (PyTorch's min_compression_rate, default 2) */
    double topk_throughput;      /* elements/s of the top-k selection kernel */
    wl_axis placement[3];        /* outermost first; default dp, pp, tp (TP innermost) */
    bool place_by_bandwidth;     /* "placement": "bandwidth": gpu_map from the topology */
    /* GPU of each rank slot: wl_gpu_of's formula index -> GPU (wl_place_by_bandwidth); NULL =
     * the formula itself. Owned by the wl_scenario; copies of a plan borrow it. */
    int *gpu_map;
    /* Beyond one synchronous step (docs/workloads.md, "Many steps"): */
    int backup_workers;          /* drop the slowest k DP replicas' gradients each step (pp 1) */
    int staleness;               /* bounded-staleness asynchronous DP: a replica may run s steps
                                    ahead of the slowest; -1 = synchronous */
    int local_sgd;               /* average the replicas every H steps (local SGD); 0/1 = every step */
    bool local_step;             /* build a step without DP gradient reduction (internal: the
                                    local steps of local SGD and of asynchronous DP) */
    wl_framework fw;             /* framework behaviour (generic when zero) */
    /* Layers of each virtual stage, pp x virtual_stages entries in model order (virtual stage
     * c*pp + i is model chunk c of pipeline stage i), summing to the model's layers:
     * "parallel.stage_layers", or the default split wl_scenario_resolve fills in (equal when
     * the layers divide, else the ends lighter: docs/workloads.md). Owned by the wl_scenario;
     * copies of a plan borrow it. */
    int *stage_layers;
    int n_stage_layers;
    wl_balance balance;
    /* Microbatches of each DP replica (dp entries summing to dp x microbatches), set by
     * wl_balance_speed; NULL = every replica runs `microbatches`. Owned by the wl_scenario;
     * copies of a plan borrow it. */
    int *replica_microbatches;
} wl_plan;

typedef enum wl_jitter_kind { WL_JITTER_NONE, WL_JITTER_LOGNORMAL, WL_JITTER_NORMAL } wl_jitter_kind;

typedef struct wl_straggler { int gpu; double slowdown; } wl_straggler;

typedef struct wl_degraded_link {
    int index;                   /* link index, or -1 when named by src/dst */
    char src[64], dst[64];
    double bandwidth_factor;
} wl_degraded_link;

/* What a step runs under besides its op graph: the network model and algorithm choices, the
 * perturbations and the seed. A scenario parses it (wl_scenario.env), a trace carries it
 * (trace_env.env, replay.h) so that a replay reproduces the run; run.c simulates with it. */
typedef struct wl_env {
    net_mode network;
    coll_algo dp_algorithm;      /* algorithm of cross-lane collectives (flow mode), AUTO default */
    int ps_servers;              /* parameter servers of a ps collective (options.ps_servers);
                                    0 = coll_ps's default, one per host the group spans */
    coll_ring_model ring_model;  /* how their rings run (coll.h), options.ring_model, AUTO default */
    coll_library coll_library;   /* whose algorithms `auto` chooses among (coll.h):
                                    options.collective_library; default NCCL with a framework
                                    preset (megatron, fsdp), ANY without */
    wl_straggler *stragglers;    /* owned by the struct holding this wl_env */
    int n_stragglers;
    wl_jitter_kind jitter;
    double jitter_sigma;
    wl_degraded_link *degraded;  /* owned by the struct holding this wl_env */
    int n_degraded;
    uint64_t seed;
    /* Fraction of line rate collectives and sends achieve per link class
     * (topo_apply_link_efficiency): 0 is read as 1 (line rate). */
    double link_nvlink, link_network;
    /* options.comm_contention (replay_config.contention): compute beside an overlapped
     * collective slows by the SMs and HBM bandwidth the collective takes. On unless
     * no_contention; contention_sms: SMs one collective occupies (0: the GPU's figure). */
    bool no_contention;
    int contention_sms;
} wl_env;

typedef struct wl_scenario {
    const char *file;            /* borrowed, for errors */
    char name[128];
    const cJSON *topology;       /* borrowed raw value (path string, object or generator) */
    const cJSON *gpu;            /* borrowed raw value or NULL */
    const cJSON *federated;      /* borrowed raw "federated" section or NULL (federated.h) */
    wl_model model;
    wl_plan plan;
    double global_batch;         /* samples per step */
    char calibration[512];       /* calibration file path ("" none), resolved by run.c */
    char calibration_fit[128];   /* options.calibration_fit: which fits to apply ("" defaults) */
    double memory_headroom;      /* options.memory_headroom: fraction of GPU memory the planner
                                    keeps free; -1 when not given */
    wl_env env;                  /* options, stragglers, jitter, degraded links, seed */
    /* a long job: what fails, checkpoints, the storage they and the input data go through
     * (goodput.h; present = false when the section is absent) */
    gp_failures failures;
    gp_checkpoint checkpoint;
    stor_spec storage;
    stor_input input;
} wl_scenario;

/* Parse and validate the scenario object j (every key, with path-named errors). Does not look
 * at the topology beyond its presence: checks that need the GPU count are in wl_plan_check(). */
int wl_scenario_parse(const js_ctx *ctx, const cJSON *j, wl_scenario *out);
void wl_scenario_free(wl_scenario *s);
/* options.comm_contention (or a trace environment's) of obj into env: true, false or
 * {"sms": N}; absent leaves env as it is. Errors name path.comm_contention. */
int wl_comm_contention_parse(const js_ctx *ctx, const cJSON *obj, const char *path, wl_env *env);
/* Complete the plan for a cluster of n_gpus: dp defaults to n_gpus/(tp*pp); microbatches and
 * global_batch are derived from each other; then dp*tp*pp must equal n_gpus, layers split over
 * pp*virtual_stages, stragglers name existing GPUs. Error paths name the keys involved. */
int wl_scenario_resolve(const js_ctx *ctx, wl_scenario *s, int n_gpus);
/* Stragglers listed more than once for a GPU multiply; fail (at list_path[i].slowdown) when a
 * GPU's product leaves the 0.001..10^6 one entry may have. GPUs outside 0..n_gpus-1 are
 * skipped (checked by the caller). */
int wl_check_straggler_product(const js_ctx *c, const wl_env *env, int n_gpus,
                               const char *list_path);

/* Default layers per virtual stage for `layers` over n virtual stages (layers >= n): every
 * one gets ceil(layers/n), then the surplus is taken one layer each from the ends inward - the
 * last (logits), the first (embedding), the second-to-last, the second, ... out[0..n). */
void wl_default_stage_layers(int layers, int n, int *out);
/* "placement": "bandwidth" (docs/workloads.md, "Placement from the bandwidth matrix"): with
 * the topology known, choose which GPU holds each (dp, pp, tp) rank. TP groups are the GPUs with
 * the fastest routes between them; of PP and DP, the axis that moves more bytes per step gets
 * the next-fastest links (its groups formed inside fast domains) and the other crosses between
 * them; pipeline stages are ordered along the path whose slowest link is fastest, replicas
 * around the ring whose slowest link is fastest (exact for up to 16, greedy beyond). Fills
 * s->plan.gpu_map (owned by s). No-op unless plan.place_by_bandwidth. Its work is quadratic in
 * the GPUs: more than WL_PLACE_MAX_GPUS is refused (DT_EINPUT at parallel.placement). */
#define WL_PLACE_MAX_GPUS 4096
struct topo;
int wl_place_by_bandwidth(const js_ctx *c, wl_scenario *s, struct topo *t);

/* Microbatches DP replica d runs (plan.replica_microbatches, else plan.microbatches). */
int wl_replica_microbatches(const wl_plan *p, int d);
/* The most microbatches any replica runs. */
int wl_max_replica_microbatches(const wl_plan *p);
/* The forwards stage `stage` runs before its first backward under the 1F1B and interleaved
 * schedules on m microbatches (chunk forwards for interleaved, at most m x v): p - stage - 1
 * for 1F1B; Megatron's 2 (p - stage - 1) + (v - 1) p for interleaved, and every chunk forward
 * when m equals pp under Megatron-LM of 2022 (the `megatron` preset under fp16: its
 * `all_warmup_microbatches`; docs/workloads.md, "The interleaved schedule on pp
 * microbatches"). */
int wl_pipeline_warmup(const wl_plan *p, int stage, int m);

/* Each GPU's straggler slowdown, the product of env's entries naming it (1 for the others):
 * an array of n_gpus + 1 doubles the caller frees. *hetero (may be NULL) says whether any
 * differs from 1. */
double *wl_env_slowdowns(const wl_env *env, int n_gpus, bool *hetero);

/* "balance": "speed" (docs/workloads.md, "Uneven work on mixed clusters"): with the cluster
 * known, replace the resolved plan's layer split and per-replica microbatches by the ones that
 * minimise the slowest stage and the slowest replica. A GPU's speed is the time the compute
 * model gives one layer's forward and backward on its spec (op_time, gpu_op_time in a run),
 * times its straggler slowdown (slowdown[gpu], NULL = 1). Layers: a stage runs at its slowest
 * GPU (lanes are lockstep, replicas share the split); each stage gets at least one layer per
 * model chunk, and the split minimises the slowest stage's time (its layers plus its
 * embedding or logits) exactly: found by bisection on that time (balance.c), it is what
 * handing layers one at a time to the stage that grows least gives. Microbatches
 * likewise over replicas, a replica's time being (its microbatches + pp - 1) x its slowest
 * stage (in units of pp with the interleaved schedule). A stage_layers list given by the user
 * is refused at parse time (they cannot be combined). Fills s->plan (owning the arrays).
 * Returns DT_OK (c is for errors of future inputs; a GPU that cannot run a layer gets the
 * roofline's capped time and so the fewest layers). No-op unless plan.balance is
 * WL_BALANCE_SPEED. */
int wl_balance_speed(const js_ctx *c, wl_scenario *s, const gpu_spec *gpus, int n_gpus,
                     const double *slowdown,
                     sim_time_t (*op_time)(const gpu_spec *, gpu_op_class, gpu_precision,
                                           double, double));

/* The compute cost of one forward (bwd false) or backward op over `layers` layers of a
 * virtual stage, holding the embedding (first) or the output layer (last): what the schedule
 * generator puts on that op, in-lane TP collectives included. */
struct wl_cost;
void wl_layer_op_cost(const wl_scenario *s, const wl_plan *p, bool bwd, bool first, bool last,
                      int layers, struct wl_cost *out);
/* The same as a graph op gets it: with g, a dense model's GEMM shapes go into g's GEMM sets (as
 * wl_graph_build attaches them; replay_op_compute_time then times them by the GEMM shape model).
 * For the planner's bound, which builds no step graph. */
struct wl_graph;
void wl_layer_op_cost_graph(const wl_scenario *s, const wl_plan *p, struct wl_graph *g, bool bwd,
                            bool first, bool last, int layers, struct wl_cost *out);
/* Time of a compute cost on one GPU: fixed + the op time of each class (fp8 runs only the
 * matmul class at fp8, the rest at bf16), in-lane collectives not included. */
sim_time_t wl_cost_time(const struct wl_cost *c, const gpu_spec *sp, gpu_precision prec,
                        sim_time_t (*op_time)(const gpu_spec *, gpu_op_class, gpu_precision,
                                              double, double));

/* Layers held by pipeline stage `stage` (all its model chunks). */
int wl_stage_layer_count(const wl_plan *p, int layers, int stage);
/* First layer and layer count of virtual stage vs (model chunk vs / pp of stage vs % pp). */
void wl_virtual_stage_layers(const wl_plan *p, int layers, int vs, int *first, int *n);

/* Bytes per element of weights/activations/gradients in the compute precision. */
double wl_precision_bytes(wl_precision p);
gpu_precision wl_gpu_precision(wl_precision p);
const char *wl_schedule_name(wl_schedule_kind k);

/* GPU index of (dp, pp, tp) rank coordinates under the plan's placement. */
int wl_gpu_of(const wl_plan *p, int dp_rank, int pp_rank, int tp_rank);
/* The same with a context-parallel rank: CP ranks sit directly outside TP ranks (the
 * placement's "tp" axis is tp x cp GPUs, CP rank c's TP group at offset c x tp). */
int wl_gpu_of_cp(const wl_plan *p, int dp_rank, int cp_rank, int pp_rank, int tp_rank);

static inline int wl_ep(const wl_plan *p) { return p->ep > 1 ? p->ep : 1; }
static inline int wl_cp(const wl_plan *p) { return p->cp > 1 ? p->cp : 1; }

/* --------------------------------------------------------- model arithmetic ---- */

/* Work of one transformer layer for one microbatch, per GPU (already divided by tp). */
typedef struct wl_layer_cost {
    double fwd_matmul_flops, fwd_attn_flops; /* forward */
    double bwd_attn_flops;                   /* backward of the attention core */
    /* memory-bound traffic of norms, activation, dropout, residuals and bias gradients per
     * layer, forward and backward, as the plan's framework preset runs them kernel by kernel
     * (docs/workloads.md, "Elementwise traffic of a layer"): an MoE layer's when the model has
     * experts, dense_* a dense layer's (the same without experts) */
    double fwd_elem_bytes, bwd_elem_bytes;
    double dense_fwd_elem_bytes, dense_bwd_elem_bytes;
    double fwd_score_bytes, bwd_score_bytes; /* unfused: traffic over the score matrix */
    /* unfused: the part of it the core's batched GEMMs move themselves (forward: S written, D
     * read, 2e per score; backward: dD written, dS read twice, D read, 4e), which their own
     * roofline holds when they are costed as GEMM shapes (wl_attention_gemms) */
    double fwd_score_gemm_bytes, bwd_score_gemm_bytes;
    double tp_bytes;                         /* bytes of each TP collective (activation size) */
    /* Mixture of experts: fwd_matmul_flops is a dense layer's (experts 1) or an MoE layer's
     * whole (experts balanced); an MoE layer splits into moe_matmul_flops (attention, router,
     * shared experts) and expert_matmul_flops (the routed experts' tokens on this GPU,
     * balanced). dense_matmul_flops is a dense layer's of an MoE model (moe_layer_freq > 1). */
    double dense_matmul_flops, moe_matmul_flops, expert_matmul_flops;
    /* fp8 only (0 otherwise): Transformer Engine's cast and transpose of the layer's weights on
     * this GPU, once per step (the first microbatch's forward), an MoE layer's and a dense
     * layer's (docs/workloads.md, "FP8 casts and transposes") */
    double fp8_weight_bytes, dense_fp8_weight_bytes;
    /* without gradient-accumulation fusion only (0 otherwise): the DDP hook's addition of the
     * layer's linear weight gradients on this GPU into main_grad, every microbatch's backward
     * (wl_wgrad_hook_bytes per weight element), an MoE layer's and a dense layer's */
    double wgrad_hook_bytes, dense_wgrad_hook_bytes;
} wl_layer_cost;

/* Parameters of one layer (whole, not divided by tp), embedding (V*h) and the total.
 * wl_layer_params is an MoE layer's when the model has experts (every layer's otherwise);
 * wl_layer_params_at the given layer's (dense or MoE, by moe_layer_freq), and
 * wl_layer_expert_params_at its routed experts' share (0 for a dense layer): the part that
 * expert parallelism shards over ep ranks. */
double wl_layer_params(const wl_model *m);
double wl_layer_params_at(const wl_model *m, int layer);
double wl_layer_expert_params_at(const wl_model *m, int layer);
bool wl_layer_is_moe(const wl_model *m, int layer);
double wl_expert_ffn(const wl_model *m);
/* Parameters of the layers [first, first + n) (with their experts whole). */
double wl_layers_params(const wl_model *m, int first, int n);
double wl_layers_expert_params(const wl_model *m, int first, int n);
int wl_moe_layers_in(const wl_model *m, int first, int n);
/* Tokens each of the ep ranks of an EP group computes in MoE layer `layer`, relative to a
 * balanced router (mean 1 over ranks without drops): the model's experts get Zipf(router_zipf)
 * shares of the routed tokens in an order drawn from the seeded stream "moe_router.<layer>"
 * (sim_rng), rank e holds experts [e E/ep, (e+1) E/ep), and with a capacity factor cf an
 * expert computes at most cf x its balanced share (the rest is dropped). loads[0..ep). */
void wl_moe_rank_loads(const wl_model *m, int ep, int layer, uint64_t seed, double *loads);
/* The busiest EP rank's load over the model's MoE layers (max of wl_moe_rank_loads): how much
 * longer than balanced the slowest expert makes its layers' routed-expert compute. */
double wl_moe_max_load(const wl_model *m, int ep);
/* All-to-all bytes of one dispatch (or combine) of one MoE layer for one microbatch, per GPU,
 * nccl-tests convention (the send buffer: b (s/cp) h e top_k; (ep-1)/ep of it leaves). */
double wl_moe_alltoall_bytes(const wl_model *m, const wl_plan *p);
/* Context parallelism: bytes one ring-attention step sends to the next CP rank, per GPU (the
 * K and V blocks of s/cp tokens, kv heads over tp): 2 b (s/cp) h (g/a) e / t. */
/* Attention widths of a transformer: queries a x d (the attention output too), keys and
 * values g x d each, with d = head_dim (hidden / heads unless the model says). */
double wl_head_dim(const wl_model *m);
double wl_q_width(const wl_model *m);
double wl_kv_width(const wl_model *m);
double wl_cp_ring_bytes(const wl_model *m, const wl_plan *p);
double wl_embedding_params(const wl_model *m);
/* Parameters of one norm layer: 2h for LayerNorm (weight, bias), h for RMSNorm; 0 for models
 * that are not transformers. A layer holds two, the model one more after its last layer (the
 * final norm before the logits), held by the last pipeline stage. Norm weights are replicated
 * over the TP ranks: every norm is whole on each (wl_tp_rank_params for the layers' two). */
double wl_norm_params(const wl_model *m);
/* What one TP rank holds of `params` parameters (from wl_layer_params, wl_layers_params or
 * their dense part) of `layers` whole layers: their two norms each whole, the rest / tp:
 * (params - layers·2n)/tp + layers·2n. A layer's routed experts (already / ep) are passed in
 * or left out by the caller; they hold no norm. */
double wl_tp_rank_params(const wl_model *m, double params, double layers, int tp);
/* Layers + embedding (twice when untied) + the final norm. */
double wl_total_params(const wl_model *m);
void wl_layer_cost_get(const wl_model *m, const wl_plan *p, wl_layer_cost *out);
/* The forward GEMMs of one transformer layer for one microbatch on one GPU (Megatron's tensor
 * parallel split; docs/workloads.md "GEMM shapes"), count 1 each, into out[0..WL_LAYER_GEMMS_MAX);
 * returns how many (0 for other model kinds). Their 2mnk sum to wl_layer_cost.fwd_matmul_flops.
 * The backward of a forward GEMM (m, n, k) is its data gradient (m, k, n) and its weight
 * gradient (k, n, m): wl_gemm_backward. */
#define WL_LAYER_GEMMS_MAX 8
int wl_layer_gemms(const wl_model *m, const wl_plan *p, gpu_gemm out[WL_LAYER_GEMMS_MAX]);
/* The unfused attention core's two forward GEMMs for one microbatch on one GPU, each a
 * strided-batched call over the b·a/t heads (Megatron's CoreAttention: torch.baddbmm for
 * Q·Kᵀ, torch.bmm for P·V): Q·Kᵀ (s/cp, s, d) and P·V (s/cp, d, s), count and batch b·a/t.
 * Their 2mnk·count sum to wl_layer_cost.fwd_attn_flops. Returns 2, or 0 for flash attention
 * (its kernels are not GEMM calls) and other model kinds. */
#define WL_ATTN_GEMMS 2
int wl_attention_gemms(const wl_model *m, const wl_plan *p, gpu_gemm out[WL_ATTN_GEMMS]);
/* PowerSGD (Vogels et al. 2019, as PyTorch's powerSGD_hook runs it) on one GPU's gradient of
 * one transformer layer (embedding false) or of the V/t x h embedding matrix (true), rank
 * plan.lowrank_rank: a weight matrix of R x C elements (R output features) is compressed when
 * R C > min_rate q (R + C), q = min(r, R, C); the rest goes uncompressed. docs/workloads.md. */
typedef struct wl_lowrank {
    double p_elems;      /* all-reduced P elements: sum of q R over compressed matrices */
    double q_elems;      /* all-reduced Q elements: sum of q C */
    double dense_elems;  /* all-reduced uncompressed: vectors, matrices not worth compressing */
    double matrix_elems; /* elements of the compressed matrices */
    double flops;        /* P = M Q, Q = Mᵀ P, P Qᵀ (2 R C q each) and Gram-Schmidt (2 R q²) */
} wl_lowrank;
#define WL_LOWRANK_GEMMS_MAX 32
/* Fills *out and, when gemms is not NULL, the matmuls' shapes (4 per compressed matrix: the
 * three products and the orthogonalisation as an (R x q)·(q x q) GEMM); returns their number. */
int wl_lowrank_get(const wl_model *m, const wl_plan *p, bool embedding, wl_lowrank *out,
                   gpu_gemm gemms[WL_LOWRANK_GEMMS_MAX]);
/* Expected size of the union of n top-k index sets of density r each over G elements, drawn
 * independently and uniformly: G (1 - (1 - r)^n) (docs/workloads.md). */
double wl_topk_union(double G, double r, int n);

/* The output layer's GEMM (logits) for one microbatch on one GPU: (b·s, V/t, h), no_fp8 (an
 * fp8 run keeps it in 16 bits: Megatron-Core's output layer is outside Transformer Engine,
 * docs/workloads.md "FP8 casts and transposes"). */
gpu_gemm wl_logits_gemm(const wl_model *m, const wl_plan *p);
/* The data-gradient and weight-gradient GEMMs of forward GEMM f, count, batch and no_fp8 as
 * f's. */
void wl_gemm_backward(gpu_gemm f, gpu_gemm out[2]);
/* Model FLOPs of one training step (forward + backward = 3x forward), for the whole global batch,
 * counting neither recomputation nor padding: the MFU numerator. */
double wl_model_flops_per_step(const wl_model *m, double global_batch);
/* Hardware FLOPs: adds the recomputed forward (full: whole layers; selective: attention core). */
double wl_hw_flops_per_step(const wl_model *m, const wl_plan *p, double global_batch);

/* ------------------------------------------------------------------ memory ---- */

typedef struct mem_breakdown {
    double params, grads, optimizer, activations, buffers, peak; /* bytes, one GPU */
    int stage;                                                     /* pipeline stage reported */
    double inflight_microbatches;                                  /* held on that stage */
} mem_breakdown;

/* Model-state bytes per GPU for psi parameters held by the GPU, by ZeRO stage and precision
 * (ZeRO paper accounting). */
void mem_model_states(double psi, int dp, int zero, wl_precision prec, wl_optimizer opt,
                      double *params, double *grads, double *optimizer);
/* Activation bytes of one layer for one microbatch on one GPU (Korthikanti et al. 2022); an
 * MoE layer's when the model has experts. */
double mem_activation_per_layer(const wl_model *m, const wl_plan *p);
/* Expert parallelism: the all-to-all send and receive buffers of one MoE layer on one GPU
 * (the receive side sized for the busiest rank, or the capacity). 0 without ep > 1. */
double mem_moe_dispatch_buffers(const wl_model *m, const wl_plan *p);
/* Microbatches' activations (in units of one microbatch through the stage's layers) that
 * stage `stage` holds at its peak. */
double mem_inflight(const wl_plan *p, int stage);
/* PyTorch FSDP's (FSDP1, the fsdp preset) buffers on stage `stage` beyond the ZeRO-3 gathers
 * of two layers, transformer models with sharded gradients (zero >= 1) over dp x cp > 1
 * ranks (0 otherwise; docs/workloads.md, "Memory"): the post-backward's unsharded gradients,
 * (e + c) U for the unit whose reduce-scatter is in flight and max(2e, e + c) U for the unit
 * whose backward has just ended, U the gradients of one layer that this GPU reduces (with
 * expert parallelism the dense part, and its 1/ep of the routed experts where their
 * expert-data-parallel group has more than one rank), e the parameter bytes
 * and c the reduce dtype's when it differs (the fp32 copy), else 0; with zero 3 also the root
 * unit's embedding matrices, unsharded from the forward to the end of the backward (e each),
 * and the output layer's weight gradient held by autograd until the root's post-backward
 * (e per element). */
double mem_fsdp_buffers(const wl_model *m, const wl_plan *p, int stage);
/* Memory of the most loaded GPU (max peak over stages). */
void mem_compute(const wl_model *m, const wl_plan *p, mem_breakdown *out);

/* ---------------------------------------------------------------- op graph ---- */

typedef enum wl_op_kind { WL_OP_COMPUTE, WL_OP_COLL, WL_OP_SEND } wl_op_kind;
typedef enum wl_stream { WL_STREAM_COMPUTE, WL_STREAM_TP, WL_STREAM_PP, WL_STREAM_DP } wl_stream;

#define WL_MAX_INLANE 6

/* A set of GEMM shapes: gemms[start .. start + n) of its graph. */
typedef struct wl_gemm_set {
    uint32_t start, n;
} wl_gemm_set;

/* Compute cost, shared by every op with the same work (a graph has few distinct costs). */
typedef struct wl_cost {
    double flops[GPU_OP_CLASS_COUNT];  /* roofline inputs per op class */
    double bytes[GPU_OP_CLASS_COUNT];
    /* The GEMMs the matmul FLOPs are made of: 1 + index into wl_graph.gemm_sets, their 2mnk
     * summing to flops[GPU_OP_MATMUL]; 0 = no shapes (the matmul class's roofline of the total,
     * at the flat efficiency). The time of the shapes is the GPU's own (gpu_gemm_time: each GPU
     * of a mixed cluster with its SM count), so the graph stays per op, not per GEMM. */
    uint32_t gemm_set;
    /* Of flops[GPU_OP_MATMUL], the FLOPs that stay in 16 bits in an fp8 run: the output
     * layer's logits GEMMs, which a GEMM set marks gpu_gemm.no_fp8. Where the matmul class is
     * timed from its FLOPs instead (no shapes: costs timed outside a graph, MoE ops whose
     * matmul stays flat, an op_time without a gemm_time) they take GPU_BF16 and the rest the
     * fp8 rate. Set only in fp8 runs (0 otherwise); ignored where shapes time the class. */
    double matmul_no_fp8;
    sim_time_t fixed;                  /* duration given directly (synthetic, traces) */
    /* collectives among the lane's GPUs inside the op (tensor parallel), count times each:
     * after the op's compute, one after another, or, where under.m > 0, issued asynchronously
     * beside one GEMM of that shape each (Megatron's and Transformer Engine's backward of a
     * column-parallel linear: the input's re-gather beside the data-gradient GEMM, the data
     * gradient's reduce-scatter or all-reduce beside the weight-gradient GEMM), exposed only by
     * what it takes beyond that GEMM and by what its kernels take from it */
    struct { coll_op op; double bytes; int count; gpu_gemm under; } inlane[WL_MAX_INLANE];
    int n_inlane;
    /* the in-lane collectives run under the op's compute (Megatron-Core --tp-comm-overlap):
     * the op lasts max(compute, comm) instead of compute + comm */
    bool inlane_overlap;
    /* with inlane_overlap: how many of its reduce-scatters Transformer Engine runs as a split
     * pipeline behind their GEMM (proj_fprop, fc2_fprop: REPLAY_TE_RS_SPLITS chunks), whose
     * last chunk's reduce-scatter has no GEMM left to hide under (the drain) */
    int inlane_drain;
    /* Context parallelism: ring_count ring-attention passes, each cp - 1 steps sending
     * ring_bytes from every GPU to its counterpart in the next CP lane (wl_graph.cp_next),
     * each step overlapped with one block of the op's attention compute. */
    double ring_bytes;
    int ring_count;
    /* Fused attention: the key/query length one kernel call sees (s, or s/cp per ring block)
     * and which kernel runs, so each GPU takes its own measured efficiency for the attention
     * classes (gpu_attention_eff); attn_seq 0: the classes' flat efficiencies. attn_head_dim:
     * the model's head dimension, which picks the kernel's tiles (0: GPU_ATTN_HEAD_DIM).
     * attn_dropout: the kernel draws an attention-dropout mask (its measured slowdown,
     * gpu_attention_dropout_factor). attn_rows: the (sequence, head) pairs one call runs in
     * parallel on one GPU, micro batch x heads / tp (gpu_attention_call_factor; 0: the curve's
     * benchmark shape, no factor). */
    double attn_seq;
    double attn_head_dim;
    double attn_rows;
    gpu_attn_kernel attn_kernel;
    bool attn_causal;
    bool attn_dropout;
    /* The host's time to issue the op (framework.host_*_per_layer x its layers; 0 = none): the
     * CPU runs ahead of the GPU, so the op lasts max(its GPU time, host), its GPU time being
     * the compute and the in-lane collectives on its stream; what the floor adds is compute
     * time the GPU spends waiting (replay_result.host_wait). Not part of replay_cost_time: a
     * GPU's speed (stragglers, jitter, contention) does not change it. */
    sim_time_t host;
} wl_cost;

/* A collective instance: every op naming it (one per participating lane) must be reached
 * before it starts. It runs as lane_size concurrent collectives: the k-th over the k-th GPU of
 * each participating lane (data-parallel peers of the same tensor-parallel rank). */
typedef struct wl_coll {
    coll_op op;
    double bytes;   /* per GPU, nccl-tests convention (all-gather: output size) */
    uint8_t kind;   /* wl_comm_kind: WL_COMM_DP unless set (wl_graph_coll_kind) */
    /* HBM bytes per GPU of memory-bound passes the framework runs on the collective's stream
     * around it (FSDP's casts and divisions): charged as HBM traffic beside compute over the
     * collective's contention-free time, not as time of their own (docs/workloads.md) */
    double hbm_bytes;
} wl_coll;

typedef struct wl_op {
    uint32_t lane;
    uint8_t kind;      /* wl_op_kind */
    uint8_t stream;    /* wl_stream */
    uint16_t name;     /* index into wl_graph.names */
    int32_t mb;        /* microbatch, -1 if none */
    int32_t layer;     /* first layer, -1 if none */
    uint32_t arg;      /* compute: cost index; coll: instance index; send: destination lane */
    double bytes;      /* send: bytes per GPU */
    uint32_t dep_start;
    uint32_t n_deps;
} wl_op;

typedef struct wl_graph {
    int n_gpus;
    int n_lanes, lane_size;     /* every lane has lane_size GPUs */
    int *lane_gpus;             /* n_lanes * lane_size */
    wl_op *ops;
    uint32_t n_ops, cap_ops;
    uint32_t *deps;             /* op ids; op i's are deps[ops[i].dep_start ..+n_deps) */
    uint32_t n_deps, cap_deps;
    wl_cost *costs;
    uint32_t n_costs, cap_costs;
    wl_coll *colls;
    uint32_t n_colls, cap_colls;
    gpu_gemm *gemms;            /* GEMM shapes, referenced by gemm_sets */
    uint32_t n_gemms, cap_gemms;
    wl_gemm_set *gemm_sets;     /* referenced by wl_cost.gemm_set */
    uint32_t n_gemm_sets, cap_gemm_sets;
    char **names;
    uint32_t n_names, cap_names;
    uint32_t *name_slots;       /* open-addressing index over names: 1 + name id, 0 = empty */
    uint32_t cap_name_slots;    /* power of two, at least twice n_names */
    /* Context parallelism: cp lanes form a ring; cp_next[lane] is the next lane of lane's
     * ring (NULL when cp is 1). Not written to traces (trace_write refuses such graphs). */
    int cp;
    uint32_t *cp_next;
    /* Step metadata carried into results and traces. */
    double samples_per_step, tokens_per_step, model_flops_per_step;
    gpu_precision precision;
} wl_graph;

wl_graph *wl_graph_create(int n_gpus, int n_lanes, int lane_size);
void wl_graph_destroy(wl_graph *g);
uint32_t wl_graph_name(wl_graph *g, const char *name);      /* intern */
uint32_t wl_graph_cost(wl_graph *g, const wl_cost *c);      /* append (no dedup) */
/* Append a GEMM set of gemms[0..n) (copied); returns the value for wl_cost.gemm_set (1 + its
 * index). */
uint32_t wl_graph_gemm_set(wl_graph *g, const gpu_gemm *gemms, uint32_t n);
/* The GEMMs of cost c (NULL, *n = 0 when it has none). Borrowed from g. */
const gpu_gemm *wl_cost_gemms(const wl_graph *g, const wl_cost *c, uint32_t *n);
uint32_t wl_graph_coll(wl_graph *g, coll_op op, double bytes);       /* kind WL_COMM_DP */
uint32_t wl_graph_coll_kind(wl_graph *g, coll_op op, double bytes, wl_comm_kind kind);
/* Append an op with deps[0..n_deps); returns its id. Deps must be earlier ops. */
uint32_t wl_graph_op(wl_graph *g, const wl_op *op, const uint32_t *deps, uint32_t n_deps);

/* Generate one training step of the scenario as an op graph over n_gpus GPUs. The plan must
 * have passed wl_scenario_resolve(). */
wl_graph *wl_graph_build(const wl_scenario *s);

#endif
