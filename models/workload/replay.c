/* replay.c - one training step: an op graph run on the engine (see replay.h).
 *
 * Per op the hot path is: deps counter reaches zero -> maybe start (stream head) -> one
 * completion event -> successors. Nothing is allocated per event: successor lists, stream
 * queues and collective participant lists are CSR arrays built once from the graph. The
 * critical GPU's breakdown is computed after the run from the recorded op times of its lane
 * only, by one sweep over at most a few thousand intervals.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtsim/arena.h"
#include "dtsim/replay.h"

#define N_STREAMS 4
#define MAX_SPECS 64 /* distinct GPU specs whose compute times are cached */

sim_time_t replay_roofline(const gpu_spec *spec, gpu_op_class cls, gpu_precision prec, double flops,
                        double bytes)
{
    double t = 0;
    if (flops > 0) {
        int p = (int)prec;
        /* a precision the GPU lacks falls back to the next wider one */
        while (p > 0 && spec->peak_flops[p] <= 0) p--;
        double peak = spec->peak_flops[p] * spec->compute_eff[cls];
        t = peak > 0 ? flops / peak : INFINITY;
    }
    if (bytes > 0) {
        double bw = spec->hbm_bw * spec->memory_eff;
        double tb = bw > 0 ? bytes / bw : INFINITY;
        if (tb > t) t = tb;
    }
    if (!(t < 1e6)) t = 1e6;
    return (sim_time_t)ceil(t * 1e12 - 1e-6);
}

sim_time_t replay_coll_time(replay_path_fn path, void *ctx, coll_op op, const int *gpus, int n,
                         double bytes)
{
    if (!path || n <= 1) return 0;
    double bw = INFINITY;
    sim_time_t lat = 0;
    int hops = op == COLL_SENDRECV ? 1 : n;
    for (int i = 0; i < hops; i++) {
        double b;
        sim_time_t l;
        path(ctx, gpus[i], gpus[(i + 1) % n], &b, &l);
        if (b < bw) bw = b;
        if (l > lat) lat = l;
    }
    double steps, frac;
    switch (op) {
    case COLL_ALLREDUCE: steps = 2.0 * (n - 1); frac = 2.0 * (n - 1) / n; break;
    case COLL_REDUCE_SCATTER:
    case COLL_ALLGATHER: steps = n - 1; frac = (double)(n - 1) / n; break;
    case COLL_ALLTOALL: steps = n - 1; frac = (double)(n - 1) / n; break;
    case COLL_BROADCAST:
    case COLL_REDUCE: steps = n - 1; frac = 1; break;
    case COLL_SENDRECV:
    default: steps = 1; frac = 1; break;
    }
    double t = bytes > 0 && isfinite(bw) ? frac * bytes / bw : 0;
    double L = steps * (double)lat; /* saturating: see sim_time_add */
    return sim_time_add(L < 9.2e18 ? (sim_time_t)L : SIM_TIME_MAX, sim_time_from_s(t));
}

/* One remembered contention-free send time of a lane (send_time_of). */
typedef struct send_memo {
    uint32_t to;
    double bytes;
    sim_time_t t;
} send_memo;

/* One remembered contended/free ratio of a lane (cn_ratio_of), CN_MEMO_WAYS per lane. */
#define CN_MEMO_WAYS 4
typedef struct cn_memo {
    uint32_t cost;
    double sms, hbm, r;
} cn_memo;

/* One entry of the run's shared table of contended/free ratios: the same (cost, GPU spec, whole
 * SMs taken, HBM B/s taken) recurs on every lane of a stage and every data-parallel replica
 * (GPT-3 on 1,024 GPUs: 39,880 look-ups that miss the lanes' own memos, 27 distinct keys), and
 * the ratio is a function of that key alone (replay_contended_time rounds the SMs). Direct
 * mapped, an entry overwritten on collision: the answer never depends on what is cached. */
typedef struct cn_shared {
    uint32_t cost;
    int spec; /* -1: empty */
    long sms;
    double hbm, r;
} cn_shared;
#define CN_SHARED_SIZE 1024 /* entries, a power of two */

typedef struct rep {
    const wl_graph *g;
    const replay_config *cfg;
    sim_engine *eng;
    uint32_t k_op_done, k_coll_done, k_coll_part, k_send_part;
    int ts;                        /* lane size */
    /* CSR: successors, stream queues, collective participants */
    uint32_t *succ_start, *succ;
    uint32_t *q_start, *q;         /* key lane*N_STREAMS + stream */
    uint32_t *q_head;
    uint8_t *q_busy;
    uint32_t *part_start, *part;   /* collective instance -> participant ops */
    uint32_t *remaining;           /* deps not yet done, per op */
    uint32_t *arrived;             /* per instance */
    /* Parts still in flight, flow mode. Two arrays: op ids and collective instance ids are
     * separate index spaces, and one shared array let a send op and the collective instance
     * with the same number overwrite each other's count (a ZeRO-2 pipeline step then hung). */
    uint32_t *pending_send;        /* per send op */
    uint32_t *pending_coll;        /* per collective instance */
    sim_time_t *start, *launch, *end;
    sim_time_t *own;               /* per op x lane member compute time (when heterogeneous) */
    sim_time_t *cost_base;         /* per (cost, distinct GPU spec): base compute time, -1 unknown */
    int *spec_of;                  /* per GPU: index of its spec among the distinct ones */
    int n_specs;
    sim_time_t *inlane_cache;      /* per (cost, lane) in-lane comm time, -1 = unknown */
    /* per (cost, lane): what a cost with inlane_overlap adds for its collectives beside one GEMM
     * (userbuffers' bulk overlap), -1 = unknown; NULL when no cost has them */
    sim_time_t *bulk_cache;
    sim_time_t *inl;               /* per op exposed in-lane time, when some cost overlaps it */
    sim_time_t *ring_cache;        /* per (cost, lane) exposed ring-attention time (cp > 1) */
    sim_time_t *ring_total;        /* per (cost, lane) all of its sends' time (cp > 1) */
    sim_time_t *inl_cp;            /* per op: the ring-attention part of inl (cp > 1) */
    sim_time_t *ring_hid;          /* per op: ring sends hidden under its compute (cp > 1) */
    /* Flow mode, cp > 1: a compute op's ring steps run as flows one after another (ring_step);
     * per op the steps left, when the current one began, its compute and in-lane time without
     * the ring, the attention block a step overlaps, and the ring's exposed and total time. */
    uint32_t k_ring_part, k_ring_step;
    uint32_t *ring_left;
    sim_time_t *ring_t0, *ring_base, *ring_block, *ring_exp, *ring_all;
    /* With contention (cp > 1): per (cost, lane) the SMs and HBM B/s one ring step's NCCL
     * send/receive takes on each lane member (-1: not yet known); flow mode, per op: when its
     * compute (and TP) part ended while its ring was still going (-1: not yet). */
    double *ring_cn_sms, *ring_cn_hbm;
    sim_time_t *ring_cdone;
    bool hetero_time;
    sim_rng **rng;                 /* per GPU jitter streams */
    int *scratch;                  /* group building */
    /* backup workers (replay_config.backup_drop) */
    unsigned char *dropped;        /* per lane */
    unsigned char *waiting;        /* per op: a collective op that has arrived, not finished */
    bool quorum;                   /* the step's quorum is decided */
    int n_dropped;
    /* Communication contention (replay_config.contention), per lane: the NCCL collectives in
     * flight (count, summed HBM B/s), and the compute-stream op running now: its remaining work
     * in contention-free picoseconds, the contended/free time ratio it runs at since cn_t, the end
     * of its compute part and the in-lane tail after it, and a version that lets a re-timed
     * op's earlier completion event be ignored (sim.h: lazy cancellation). NULL when off. */
    int *cn_lvl;
    double *cn_hbm, *cn_sms;
    /* the share of the GPU the framework's memory passes on the collectives' streams take
     * (wl_coll.hbm_bytes: their time alone over the collective's), summed per lane */
    double *cn_phi;
    uint32_t *cn_cur;
    double *cn_rem, *cn_ratio;
    sim_time_t *cn_t, *cn_tail, *cn_start;
    /* Host dispatch floor (wl_cost.host) under contention, per lane: when the running op's GPU
     * work ends at its current rate (cn_gend) and the earliest its compute part may end,
     * start + the floor (cn_fend); the compute part ends at the later of the two (cn_schedule),
     * and only the GPU work is re-timed by collectives starting and ending (a GPU waiting for
     * its host has no kernels to slow down). Without a floor cn_fend <= cn_gend. */
    sim_time_t *cn_gend, *cn_fend;
    uint64_t *cn_ver;
    double *cn_inst_hbm;           /* per collective instance: its HBM B/s on each GPU */
    double *cn_inst_sms;           /* per collective instance: the SMs it holds on each GPU */
    double *cn_inst_phi;           /* per collective instance: its passes' share of the GPU */
    unsigned char *cn_on;          /* per op: its collective (send) counted in its lane's (its
                                      two lanes') contention */
    sim_time_t *cn_send_t;         /* per send op counted: its contention-free time, its pace */
    send_memo *send_memo;          /* per lane: its last two destinations' send times */
    cn_memo *cn_memo;              /* per lane: its last CN_MEMO_WAYS ratios (cn_ratio_of) */
    cn_shared *cn_shared;          /* CN_SHARED_SIZE ratios shared by the lanes (cn_ratio_of) */
    sim_time_t *tp_steal;          /* per (cost, lane): compute lost to overlapped TP comm, -1 */
    /* Only when some cost has a host floor: per compute op the floor of its compute part (the
     * host's time less the op's in-lane communication, host_fl) and the lane's GPU work in that
     * part (host_gpu), from which breakdown() tells the GPU's wait for its host */
    sim_time_t *host_fl, *host_gpu;
    dt_arena mem;                  /* owns every array above but those a result takes over */
    /* breakdown()'s marks, kept from one call to the next (it runs once per lane) */
    struct mark *bd_marks;
    size_t bd_cap;
} rep;

#define CN_NONE UINT32_MAX

/* FP8 training (Transformer Engine) runs only the GEMMs of linear layers in FP8: attention
 * (a bf16 fused kernel), elementwise and optimizer ops stay in 16 bits or fp32. */
static gpu_precision class_precision(gpu_precision prec, int cls)
{
    return prec == GPU_FP8 && cls != GPU_OP_MATMUL ? GPU_BF16 : prec;
}

/* sp, or a copy in *tmp whose attention classes hold the measured efficiency of the cost's fused
 * attention kernel at its sequence length and head dimension (gpu_attention_eff), over the
 * kernel's measured slowdown with attention dropout where the cost runs it, and scaled from the
 * curve's benchmark call to the cost's (gpu_attention_call_factor); the op_time hook and the
 * roofline then see one plain spec. */
static const gpu_spec *attention_spec(const wl_cost *c, const gpu_spec *sp, gpu_spec *tmp)
{
    if (!(c->attn_seq > 0) || sp->attn_curves <= 0 ||
        !(c->flops[GPU_OP_ATTENTION] > 0 || c->flops[GPU_OP_ATTENTION_BWD] > 0))
        return sp;
    *tmp = *sp;
    for (int bwd = 0; bwd < 2; bwd++) {
        double e = gpu_attention_eff(sp, c->attn_kernel, c->attn_seq, c->attn_head_dim,
                                     c->attn_causal, bwd);
        if (c->attn_dropout) e /= gpu_attention_dropout_factor(sp, c->attn_kernel, bwd);
        e *= gpu_attention_call_factor(sp, c->attn_kernel, c->attn_seq, c->attn_head_dim,
                                       c->attn_rows, c->attn_causal);
        tmp->compute_eff[bwd ? GPU_OP_ATTENTION_BWD : GPU_OP_ATTENTION] = e;
    }
    return tmp;
}

sim_time_t replay_cost_time(const wl_cost *c, const gpu_spec *sp, gpu_precision precision,
                            const gpu_gemm *gs, uint32_t ng, replay_op_time_fn op_time,
                            replay_gemm_time_fn gf)
{
    sim_time_t t = c->fixed;
    if (!sp) return t;
    gpu_spec tmp;
    sp = attention_spec(c, sp, &tmp);
    replay_op_time_fn f = op_time ? op_time : replay_roofline;
    if (!gf) ng = 0;
    for (int k = 0; k < GPU_OP_CLASS_COUNT; k++) {
        gpu_precision prec = class_precision(precision, k);
        if (k == GPU_OP_MATMUL && ng > 0) {
            t = sim_time_add(t, sim_time_add(gf(sp, prec, gs, (int)ng),
                                             c->bytes[k] > 0 ? f(sp, (gpu_op_class)k, prec, 0, c->bytes[k]) : 0));
        } else if (k == GPU_OP_MATMUL && prec == GPU_FP8 && c->matmul_no_fp8 > 0) {
            /* the logits at bf16, as their shapes would run them (gpu_gemm.no_fp8); the
             * class's bytes stay with the fp8 part */
            DT_ASSERT(c->matmul_no_fp8 <= c->flops[k]);
            double x = c->matmul_no_fp8;
            sim_time_t at8 = f(sp, GPU_OP_MATMUL, prec, c->flops[k] - x, c->bytes[k]);
            t = sim_time_add(t, sim_time_add(at8, f(sp, GPU_OP_MATMUL, GPU_BF16, x, 0)));
        } else if (c->flops[k] > 0 || c->bytes[k] > 0) {
            t = sim_time_add(t, f(sp, (gpu_op_class)k, prec, c->flops[k], c->bytes[k]));
        }
    }
    return t;
}

/* A compute op's time on one GPU without stragglers or jitter: cached per cost and distinct GPU
 * spec (a mixed cluster has a few), since GEMM shapes make it more than a few divisions. */
sim_time_t replay_op_compute_time(const wl_graph *g, const wl_cost *c, const gpu_spec *sp,
                                  replay_op_time_fn op_time, replay_gemm_time_fn gemm_time)
{
    replay_gemm_time_fn gf = gemm_time;
    if (!gf && !op_time) gf = gpu_gemm_time;
    uint32_t ng = 0;
    const gpu_gemm *gs = gf ? wl_cost_gemms(g, c, &ng) : NULL;
    return replay_cost_time(c, sp, g->precision, gs, ng, op_time, gf);
}

static sim_time_t base_time(rep *R, uint32_t cost, int gpu)
{
    const wl_cost *c = &R->g->costs[cost];
    int k0 = R->spec_of ? R->spec_of[gpu] : 0;
    size_t slot = (size_t)cost * R->n_specs + (size_t)(k0 < 0 ? 0 : k0);
    if (k0 >= 0 && R->cost_base[slot] >= 0) return R->cost_base[slot];
    sim_time_t t = replay_op_compute_time(R->g, c, R->cfg->gpus ? &R->cfg->gpus[gpu] : NULL,
                                          R->cfg->op_time, R->cfg->gemm_time);
    if (k0 >= 0) R->cost_base[slot] = t;
    return t;
}

static sim_time_t comm_time(const rep *R, coll_op op, const int *gpus, int n, double bytes,
                            bool in_lane)
{
    if (R->cfg->coll_time) return n > 1 ? R->cfg->coll_time(R->cfg->coll_ctx, op, gpus, n, bytes, in_lane) : 0;
    return replay_coll_time(R->cfg->path, R->cfg->path_ctx, op, gpus, n, bytes);
}

int replay_nccl_sms(const gpu_spec *spec)
{
    if (!spec || spec->nvlink_bw <= 0 || spec->sms <= 0) return 0;
    long ch = lround(spec->nvlink_bw * TOPO_NCCL_NVLINK_EFFICIENCY / REPLAY_NCCL_CHANNEL_BW);
    if (ch < 1) ch = 1;
    if (ch > spec->sms / 2) ch = spec->sms / 2;
    return (int)ch;
}

int replay_nccl_channels(const gpu_spec *spec, double rate)
{
    int most = replay_nccl_sms(spec);
    if (most <= 0) return 0;
    double x = ceil(rate / REPLAY_NCCL_CHANNEL_BW - 1e-9);
    int ch = x > most ? most : (int)x;
    if (ch < REPLAY_NCCL_MIN_CHANNELS) ch = REPLAY_NCCL_MIN_CHANNELS;
    return ch > most ? most : ch;
}

double replay_passes_phi(const gpu_spec *spec, double bytes, double t0)
{
    if (!spec || bytes <= 0 || t0 <= 0 || spec->hbm_bw <= 0 || spec->memory_eff <= 0) return 0;
    return bytes / (spec->hbm_bw * spec->memory_eff) / t0;
}

double replay_passes_share(double phi)
{
    if (phi <= 0) return 0;
    return phi < REPLAY_PASSES_MAX_SHARE ? phi : REPLAY_PASSES_MAX_SHARE;
}

static void contended_spec(const gpu_spec *spec, double sms, double hbm, gpu_spec *out);

sim_time_t replay_contended_time(const wl_graph *g, const wl_cost *c, const gpu_spec *spec,
                                 replay_op_time_fn op_time, replay_gemm_time_fn gemm_time,
                                 double sms, double hbm)
{
    if (!spec) return replay_op_compute_time(g, c, spec, op_time, gemm_time);
    gpu_spec s;
    contended_spec(spec, sms, hbm, &s);
    return replay_op_compute_time(g, c, &s, op_time, gemm_time);
}

/* spec with `sms` whole SMs and `hbm` B/s of HBM bandwidth taken by communication kernels. */
static void contended_spec(const gpu_spec *spec, double sms, double hbm, gpu_spec *out)
{
    gpu_spec s = *spec;
    if (s.sms > 0 && sms > 0) {
        /* the collective's blocks hold whole SMs (NCCL CTAs share no SM with compute kernels,
         * NVIDIA/nccl#689): the GEMM's waves run over the rest, each SM at its own rate */
        int left = s.sms - (int)lround(sms);
        if (left < 1) left = 1;
        double f = (double)left / s.sms;
        for (int p = 0; p < GPU_PRECISION_COUNT; p++) s.peak_flops[p] *= f;
        s.sms = left;
    }
    if (hbm > 0 && s.hbm_bw > 0 && s.memory_eff > 0) {
        double avail = s.hbm_bw * s.memory_eff;
        double left = avail - hbm;
        if (left < 0.5 * avail) left = 0.5 * avail;
        s.hbm_bw = left / s.memory_eff;
    }
    *out = s;
}

/* Bytes one GPU sends in collective op over n ranks of `bytes` (nccl-tests convention): the
 * ring's (n-1)/n of the buffer, twice for an all-reduce. */
static double sent_bytes(coll_op op, int n, double bytes)
{
    if (n <= 1) return 0;
    double f = (double)(n - 1) / n;
    switch (op) {
    case COLL_ALLREDUCE: return 2 * f * bytes;
    case COLL_BROADCAST:
    case COLL_REDUCE:
    case COLL_SENDRECV: return bytes;
    default: return f * bytes;
    }
}

/* Contended / free time of cost on the lane's first GPU with the SMs and HBM B/s of the
 * lane's collectives in flight taken (1 with nothing in flight). */
static double cn_ratio_of(rep *R, uint32_t cost, uint32_t lane)
{
    if (R->cn_lvl[lane] <= 0) return 1;
    /* A lane's op mostly moves among a few states (a ring step's sends in flight or not, one
     * bucket's collective or not; a pipeline stage's own send, its neighbour's arriving, both):
     * the last CN_MEMO_WAYS answers are kept, keyed exactly, since a contended time costs the
     * op's GEMM shapes again (the CP ring asks twice per step). */
    cn_memo *mo = &R->cn_memo[(size_t)lane * CN_MEMO_WAYS];
    /* the FSDP passes beside the collectives time-share the whole GPU with the op
     * (replay_passes_share); not part of the memo's key, so applied to its answer */
    double passes = 1 - replay_passes_share(R->cn_phi[lane]);
    for (int k = 0; k < CN_MEMO_WAYS; k++)
        if (mo[k].cost == cost && mo[k].sms == R->cn_sms[lane] && mo[k].hbm == R->cn_hbm[lane])
            return mo[k].r / passes;
    int gpu = R->g->lane_gpus[(size_t)lane * R->ts];
    int spec = R->spec_of ? R->spec_of[gpu] : 0; /* -1: a spec not told apart, not shared */
    long sms = lround(R->cn_sms[lane]);
    double hbm = R->cn_hbm[lane];
    cn_shared *e = NULL;
    if (spec >= 0) {
        uint64_t bits;
        memcpy(&bits, &hbm, sizeof bits);
        uint64_t h = (uint64_t)cost * 0x9E3779B97F4A7C15u ^ (uint64_t)spec * 0xC2B2AE3D27D4EB4Fu ^
                     (uint64_t)sms * 0x165667B19E3779F9u ^ bits;
        h ^= h >> 29;
        e = &R->cn_shared[(h * 0xBF58476D1CE4E5B9u >> 32) & (CN_SHARED_SIZE - 1)];
    }
    double r;
    if (e && e->spec == spec && e->cost == cost && e->sms == sms && e->hbm == hbm) {
        r = e->r;
    } else {
        const gpu_spec *sp = &R->cfg->gpus[gpu];
        sim_time_t t0 = base_time(R, cost, gpu);
        if (t0 <= 0) return 1;
        sim_time_t t1 = replay_contended_time(R->g, &R->g->costs[cost], sp, R->cfg->op_time,
                                              R->cfg->gemm_time, R->cn_sms[lane], hbm);
        r = t1 > t0 ? (double)t1 / (double)t0 : 1;
        if (e) *e = (cn_shared){cost, spec, sms, hbm, r};
    }
    memmove(mo + 1, mo, (CN_MEMO_WAYS - 1) * sizeof *mo);
    mo[0] = (cn_memo){cost, R->cn_sms[lane], R->cn_hbm[lane], r};
    return r / passes;
}

/* A non-negative time in picoseconds, rounded to the clock's, saturating past its range. */
static sim_time_t ps_time(double ps)
{
    return ps < 9.2e18 ? (sim_time_t)llround(ps) : SIM_TIME_MAX;
}

static void cn_schedule(rep *R, uint32_t lane)
{
    uint32_t id = R->cn_cur[lane];
    double x = R->cn_rem[lane] * R->cn_ratio[lane];
    sim_time_t d = ps_time(x);
    R->cn_gend[lane] = sim_time_add(R->cn_t[lane], d);
    sim_time_t end = R->cn_gend[lane] > R->cn_fend[lane] ? R->cn_gend[lane] : R->cn_fend[lane];
    sim_schedule(R->eng, sim_time_add(end, R->cn_tail[lane]), R->k_op_done, id,
                 ++R->cn_ver[lane]);
}

/* A collective of this lane starts (dl +1) or ends (-1): the compute op running now, if it is
 * still in its compute part, keeps the work it has done at the old rate and runs the rest at the
 * new one. */
static void cn_change(rep *R, uint32_t lane, int dl, double dh, double ds, double dphi)
{
    sim_time_t now = sim_now(R->eng);
    uint32_t id = R->cn_cur[lane];
    bool running = id != CN_NONE && now < R->cn_gend[lane];
    if (running) {
        double done = (double)(now - R->cn_t[lane]) / R->cn_ratio[lane];
        R->cn_rem[lane] = R->cn_rem[lane] > done ? R->cn_rem[lane] - done : 0;
    }
    R->cn_lvl[lane] += dl;
    R->cn_hbm[lane] += dh;
    R->cn_sms[lane] += ds;
    R->cn_phi[lane] += dphi;
    if (R->cn_lvl[lane] <= 0) {
        R->cn_lvl[lane] = 0;
        /* no drift of the sums once nothing is in flight */
        R->cn_hbm[lane] = R->cn_sms[lane] = R->cn_phi[lane] = 0;
    }
    if (!running) return;
    R->cn_t[lane] = now;
    R->cn_ratio[lane] = cn_ratio_of(R, R->g->ops[id].arg, lane);
    cn_schedule(R, lane);
}

/* Compute a layer op loses to the tensor-parallel collectives it overlaps (Transformer Engine
 * userbuffers): each collective i of time C_i takes s_i = 1 - free/contended of the op's compute
 * rate while it runs, so the compute part becomes W + sum s_i C_i and the op max(C, that). */
static sim_time_t tp_steal_time(rep *R, uint32_t cost, uint32_t lane)
{
    const wl_cost *c = &R->g->costs[cost];
    if (!R->tp_steal || !c->inlane_overlap || c->n_inlane == 0 || R->ts <= 1) return 0;
    sim_time_t *slot = &R->tp_steal[(size_t)cost * R->g->n_lanes + lane];
    if (*slot >= 0) return *slot;
    const int *gpus = &R->g->lane_gpus[(size_t)lane * R->ts];
    const gpu_spec *sp = &R->cfg->gpus[gpus[0]];
    sim_time_t t0 = base_time(R, cost, gpus[0]);
    double steal = 0;
    for (int i = 0; i < c->n_inlane && t0 > 0; i++) {
        if (c->inlane[i].under.m > 0) continue; /* beside one GEMM: bulk_time */
        sim_time_t x = comm_time(R, c->inlane[i].op, gpus, R->ts, c->inlane[i].bytes, true);
        if (x <= 0) continue;
        double sms = c->inlane[i].op == COLL_ALLGATHER ? REPLAY_TE_AG_SMS : REPLAY_TE_RS_SMS;
        double hbm = REPLAY_TE_HBM_PER_BYTE * sent_bytes(c->inlane[i].op, R->ts, c->inlane[i].bytes) /
                     sim_time_to_s(x);
        sim_time_t t1 = replay_contended_time(R->g, c, sp, R->cfg->op_time, R->cfg->gemm_time, sms,
                                              hbm);
        double lost = t1 > t0 ? 1.0 - (double)t0 / (double)t1 : 0;
        steal += lost * (double)x * c->inlane[i].count;
    }
    *slot = ps_time(steal);
    return *slot;
}

/* The exposed drain of an op's pipelined reduce-scatters (wl_cost.inlane_drain): each leaves its
 * last split's share, C / REPLAY_TE_RS_SPLITS, after its GEMM. Not cached: only TP-overlap ops
 * with a drain ask, and comm_time's path costs are cached below it. */
static sim_time_t drain_time(rep *R, uint32_t cost, uint32_t lane)
{
    const wl_cost *c = &R->g->costs[cost];
    if (c->inlane_drain <= 0 || R->ts <= 1) return 0;
    const int *gpus = &R->g->lane_gpus[(size_t)lane * R->ts];
    for (int i = 0; i < c->n_inlane; i++) {
        if (c->inlane[i].op != COLL_REDUCE_SCATTER || c->inlane[i].under.m > 0) continue;
        sim_time_t x = comm_time(R, c->inlane[i].op, gpus, R->ts, c->inlane[i].bytes, true);
        int k = c->inlane_drain < c->inlane[i].count ? c->inlane_drain : c->inlane[i].count;
        return (sim_time_t)llround((double)x * k / REPLAY_TE_RS_SPLITS);
    }
    return 0;
}

static void nccl_load(const rep *R, int gpu, double rate, double per_byte, double *sms,
                      double *hbm);

/* One GEMM of shape gm alone on spec (NULL: none, 0), timed as the op's GEMMs are. */
static double gemm_alone(const rep *R, const gpu_spec *spec, gpu_gemm gm)
{
    if (!spec) return 0;
    replay_gemm_time_fn gf = R->cfg->gemm_time;
    if (!gf && !R->cfg->op_time) gf = gpu_gemm_time;
    wl_cost one = {0};
    gm.count = gm.batch = 1;
    one.flops[GPU_OP_MATMUL] = 2 * gm.m * gm.n * gm.k;
    return (double)replay_cost_time(&one, spec, R->g->precision, gf ? &gm : NULL, gf ? 1 : 0,
                                    R->cfg->op_time, gf);
}

/* What one collective of contention-free time C (ps), issued beside a GEMM of shape `under`
 * and waited for after it, adds to the op (wl_cost.inlane[].under): the GEMM alone takes G0;
 * while the collective runs, its kernels hold NCCL's channels and HBM (nccl_load, as any
 * collective beside compute), or with `ub` Transformer Engine's bulk userbuffers kernels
 * (REPLAY_TE_BULK_SMS, REPLAY_TE_HBM_PER_BYTE), and the GEMM runs at the rate that leaves, G1 for
 * the whole of it.
 * If the collective outlasts the slowed GEMM the op waits for it: C - G0; otherwise the GEMM
 * loses C (1 - G0/G1) to it. Without the contention model (options.comm_contention off)
 * G1 = G0: only the collective's excess over the GEMM. */
static double async_extra(rep *R, const int *gpus, coll_op op, double bytes, gpu_gemm under, bool ub)
{
    double C = (double)comm_time(R, op, gpus, R->ts, bytes, true);
    if (C <= 0) return 0;
    const gpu_spec *sp = R->cfg->gpus ? &R->cfg->gpus[gpus[0]] : NULL;
    double g0 = gemm_alone(R, sp, under), g1 = g0;
    if (sp && R->cfg->contention) {
        double rate = sent_bytes(op, R->ts, bytes) / sim_time_to_s((sim_time_t)llround(C)), sms, hbm;
        if (ub) {
            sms = REPLAY_TE_BULK_SMS;
            hbm = REPLAY_TE_HBM_PER_BYTE * rate;
        } else {
            nccl_load(R, gpus[0], rate, REPLAY_NCCL_HBM_PER_BYTE, &sms, &hbm);
        }
        gpu_spec cs;
        contended_spec(sp, sms, hbm, &cs);
        g1 = fmax(g0, gemm_alone(R, &cs, under));
    }
    if (C >= g1) return C - g0;
    return g1 > 0 ? C * (1 - g0 / g1) : 0;
}

/* The in-lane collectives' time a compute op of `cost` on `lane` adds after its compute: the
 * blocking ones in full, the asynchronous ones by async_extra. In a cost with inlane_overlap
 * (userbuffers), the pooled collectives' time only (start_op overlaps it with the compute);
 * those beside one GEMM are bulk_time's. */
static sim_time_t inlane_time(rep *R, uint32_t cost, uint32_t lane)
{
    const wl_cost *c = &R->g->costs[cost];
    if (c->n_inlane == 0 || R->ts <= 1) return 0;
    sim_time_t *slot = &R->inlane_cache[(size_t)cost * R->g->n_lanes + lane];
    if (*slot >= 0) return *slot;
    const int *gpus = &R->g->lane_gpus[(size_t)lane * R->ts];
    sim_time_t t = 0;
    for (int i = 0; i < c->n_inlane; i++) {
        int k = c->inlane[i].count;
        sim_time_t x;
        if (c->inlane[i].under.m > 0) {
            if (c->inlane_overlap) continue;
            x = ps_time(async_extra(R, gpus, c->inlane[i].op, c->inlane[i].bytes, c->inlane[i].under, false));
        } else {
            x = comm_time(R, c->inlane[i].op, gpus, R->ts, c->inlane[i].bytes, true);
        }
        t = sim_time_add(t, x > 0 && k > SIM_TIME_MAX / x ? SIM_TIME_MAX : k * x);
    }
    *slot = t;
    return t;
}

/* Whether a cost has bulk overlaps: collectives beside one GEMM each under inlane_overlap. */
static bool has_bulk(const wl_cost *c)
{
    for (int i = 0; c->inlane_overlap && i < c->n_inlane; i++)
        if (c->inlane[i].under.m > 0) return true;
    return false;
}

/* What a cost with inlane_overlap adds for its collectives beside one GEMM each: Transformer
 * Engine's bulk overlap of the backward (async_extra with the userbuffers' SMs), after the
 * pooled collectives' exposed part. 0 for other costs. */
static sim_time_t bulk_time(rep *R, uint32_t cost, uint32_t lane)
{
    const wl_cost *c = &R->g->costs[cost];
    if (!R->bulk_cache || !c->inlane_overlap || R->ts <= 1) return 0;
    sim_time_t *slot = &R->bulk_cache[(size_t)cost * R->g->n_lanes + lane];
    if (*slot >= 0) return *slot;
    const int *gpus = &R->g->lane_gpus[(size_t)lane * R->ts];
    double t = 0;
    for (int i = 0; i < c->n_inlane; i++)
        if (c->inlane[i].under.m > 0)
            t += c->inlane[i].count *
                 async_extra(R, gpus, c->inlane[i].op, c->inlane[i].bytes, c->inlane[i].under, true);
    *slot = ps_time(t);
    return *slot;
}

/* One block of the attention compute a ring step overlaps: the op's attention-class time on
 * `gpu`, spread evenly over its ring_count passes of cp blocks each. */
static double ring_block_time(const rep *R, const wl_cost *c, int gpu)
{
    double attn = 0;
    if (R->cfg->gpus) {
        replay_op_time_fn f = R->cfg->op_time ? R->cfg->op_time : replay_roofline;
        gpu_spec tmp;
        const gpu_spec *sp = attention_spec(c, &R->cfg->gpus[gpu], &tmp);
        /* the forward's and (flash) the backward's kernels both overlap the sends */
        static const gpu_op_class cls[2] = {GPU_OP_ATTENTION, GPU_OP_ATTENTION_BWD};
        for (int i = 0; i < 2; i++)
            if (c->flops[cls[i]] > 0 || c->bytes[cls[i]] > 0)
                attn += (double)f(sp, cls[i], class_precision(R->g->precision, cls[i]),
                                  c->flops[cls[i]], c->bytes[cls[i]]);
    }
    return attn / ((double)c->ring_count * R->g->cp);
}

/* The contention-free time of a send of `bytes` from every member of lane `from` to its
 * counterpart (same position) in lane `to`: they send at once, the slowest pair paces them. A
 * pipeline send (analytic mode's duration; the pace of its contention) and one ring step's
 * sends (cp > 1) alike. */
static sim_time_t lanes_send_time(rep *R, uint32_t from, uint32_t to, double bytes)
{
    const int *gpus = &R->g->lane_gpus[(size_t)from * R->ts];
    const int *next = &R->g->lane_gpus[(size_t)to * R->ts];
    sim_time_t send = 0;
    for (int k = 0; k < R->ts; k++) {
        int pair[2] = {gpus[k], next[k]};
        sim_time_t x = comm_time(R, COLL_SENDRECV, pair, 2, bytes, false);
        if (x > send) send = x;
    }
    return send;
}

/* lanes_send_time of a pipeline send from lane `from`, remembered: a stage sends the same bytes
 * to its next stage and to its previous one all step long, and each time costs every TP pair's
 * route (a third of the 1,024-GPU GPT-3 step's instructions in analytic mode unremembered). */
static sim_time_t send_time_of(rep *R, uint32_t from, uint32_t to, double bytes)
{
    send_memo *mo = &R->send_memo[(size_t)from * 2];
    for (int k = 0; k < 2; k++)
        if (mo[k].to == to && mo[k].bytes == bytes) return mo[k].t;
    sim_time_t t = lanes_send_time(R, from, to, bytes);
    mo[1] = mo[0];
    mo[0] = (send_memo){to, bytes, t};
    return t;
}

/* The contention-free time of one ring step's sends of cost on lane. */
static sim_time_t ring_send_time(rep *R, const wl_cost *c, uint32_t lane)
{
    return lanes_send_time(R, lane, R->g->cp_next[lane], c->ring_bytes);
}

/* What NCCL kernels sending `rate` B/s per GPU take from the compute beside them on `gpu`: the
 * channels a collective of that pace takes (replay_nccl_channels), or options.comm_contention's
 * "sms", and per_byte x rate of HBM. The one rule of collectives, the CP ring's steps and the
 * pipeline's sends. */
static void nccl_load(const rep *R, int gpu, double rate, double per_byte, double *sms,
                      double *hbm)
{
    *hbm = per_byte * rate;
    *sms = R->cfg->contention_sms > 0 ? R->cfg->contention_sms
                                      : replay_nccl_channels(&R->cfg->gpus[gpu], rate);
}

/* What NCCL send/receive kernels moving `bytes` in `t` (their contention-free time) take from
 * the compute beside them on `gpu`: nccl_load at their pace, rate = bytes / t (NCCL's
 * ncclTopoGetNchannels gives a send/receive 2 channels per network peer by default, 2 per NVLink
 * of an NVLink peer, capped by the collectives'), with REPLAY_NCCL_SEND_HBM_PER_BYTE, _RECV_, or
 * _P2P_ for a GPU doing both; nothing for an empty or instant transfer. */
static void p2p_load(const rep *R, int gpu, double bytes, sim_time_t t, double per_byte,
                     double *sms, double *hbm)
{
    *sms = *hbm = 0;
    if (t <= 0 || bytes <= 0) return;
    nccl_load(R, gpu, bytes / sim_time_to_s(t), per_byte, sms, hbm);
}

/* What one ring step takes from the compute beside it (contention on): the KV block goes out
 * as NCCL send/receive kernels (Transformer Engine's flash_attn_p2p_communicate: isend/irecv
 * on the CP group), which hold SMs and stream HBM like a collective's: p2p_load at the step's
 * contention-free pace, each GPU sending one block and receiving one
 * (REPLAY_NCCL_P2P_HBM_PER_BYTE). Cached per (cost, lane). */
static void ring_contention(rep *R, uint32_t cost, uint32_t lane, double *sms, double *hbm)
{
    size_t slot = (size_t)cost * R->g->n_lanes + lane;
    if (R->ring_cn_sms[slot] < 0) {
        const wl_cost *c = &R->g->costs[cost];
        double s, h;
        p2p_load(R, R->g->lane_gpus[(size_t)lane * R->ts], c->ring_bytes,
                 ring_send_time(R, c, lane), REPLAY_NCCL_P2P_HBM_PER_BYTE, &s, &h);
        R->ring_cn_sms[slot] = s;
        R->ring_cn_hbm[slot] = h;
    }
    *sms = R->ring_cn_sms[slot];
    *hbm = R->ring_cn_hbm[slot];
}

/* Contended / free time of cost on the lane's first GPU beside one ring step's sends alone
 * (1 without contention). */
static double ring_ratio(rep *R, uint32_t cost, uint32_t lane)
{
    if (!R->ring_cn_sms) return 1;
    double sms, hbm;
    ring_contention(R, cost, lane, &sms, &hbm);
    if (sms <= 0 && hbm <= 0) return 1;
    int gpu = R->g->lane_gpus[(size_t)lane * R->ts];
    sim_time_t t0 = base_time(R, cost, gpu);
    if (t0 <= 0) return 1;
    sim_time_t t1 = replay_contended_time(R->g, &R->g->costs[cost], &R->cfg->gpus[gpu],
                                          R->cfg->op_time, R->cfg->gemm_time, sms, hbm);
    return t1 > t0 ? (double)t1 / (double)t0 : 1;
}

/* Context parallelism's ring attention, exposed, in closed form (analytic mode; flow mode runs
 * ring_step): each of the op's ring_count passes sends the KV block to the next CP lane cp - 1
 * times, every send overlapped with one block of the attention compute (the op's
 * attention-class time spread evenly over its passes' cp blocks); only a send longer than its
 * block shows. The TP ranks send to their counterparts at once,
 * the slowest pair paces the step. */
static sim_time_t ring_time(rep *R, uint32_t cost, uint32_t lane)
{
    const wl_cost *c = &R->g->costs[cost];
    if (!R->ring_cache || c->ring_count == 0 || c->ring_bytes <= 0) return 0;
    sim_time_t *slot = &R->ring_cache[(size_t)cost * R->g->n_lanes + lane];
    if (*slot >= 0) return *slot;
    const int *gpus = &R->g->lane_gpus[(size_t)lane * R->ts];
    int cp = R->g->cp;
    sim_time_t send = ring_send_time(R, c, lane);
    /* with contention the attention block runs slower beside the step's sends */
    double block = ring_block_time(R, c, gpus[0]) * ring_ratio(R, cost, lane);
    double exposed = (double)send > block ? (double)send - block : 0;
    double t = (double)c->ring_count * (cp - 1) * exposed;
    double all = (double)c->ring_count * (cp - 1) * (double)send;
    *slot = ps_time(t);
    R->ring_total[(size_t)cost * R->g->n_lanes + lane] = ps_time(all);
    return *slot;
}

/* Whether the sender's compute waits for pipeline send op id: the op its lane's compute stream
 * runs next after the compute the send follows (its latest dependency there) depends on it
 * (framework.pp_blocking_sends, or a trace that says so; that op may be an expert-parallel
 * all-to-all, which Megatron runs there). Megatron's blocking exchange (p2p_communication.py,
 * _communicate with wait_on_reqs) makes the next compute wait for the send and for the receive
 * posted with it, on both stages: the transfer then runs beside no compute on either GPU. A
 * send waited for only by a later op (overlap_p2p_comm: the next forward waits for a forward's
 * send, the backward between them runs beside it) or by none does not block. A send with no
 * compute before it on its lane (a hand-written trace) blocks if any compute of the lane waits
 * for it. */
static bool send_blocks(const rep *R, uint32_t id)
{
    const wl_graph *g = R->g;
    uint32_t lane = g->ops[id].lane;
    uint32_t key = lane * N_STREAMS + WL_STREAM_COMPUTE;
    uint32_t prev = UINT32_MAX;
    for (uint32_t d = 0; d < g->ops[id].n_deps; d++) {
        uint32_t x = g->deps[g->ops[id].dep_start + d];
        if (g->ops[x].lane == lane && g->ops[x].stream == WL_STREAM_COMPUTE &&
            (prev == UINT32_MAX || x > prev))
            prev = x;
    }
    if (prev == UINT32_MAX) {
        for (uint32_t i = R->succ_start[id]; i < R->succ_start[id + 1]; i++) {
            const wl_op *s = &g->ops[R->succ[i]];
            if (s->lane == lane && s->stream == WL_STREAM_COMPUTE) return true;
        }
        return false;
    }
    /* the queue holds the lane's compute ops in id order: the one after prev */
    uint32_t lo = R->q_start[key], hi = R->q_start[key + 1];
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (R->q[mid] <= prev) lo = mid + 1;
        else hi = mid;
    }
    if (lo == R->q_start[key + 1]) return false;
    const wl_op *next = &g->ops[R->q[lo]];
    for (uint32_t d = 0; d < next->n_deps; d++)
        if (g->deps[next->dep_start + d] == id) return true;
    return false;
}

/* A non-blocking pipeline send starts (sign +1) or arrives (-1), with contention on: its NCCL
 * send kernel runs beside the sender's next compute and the receive kernel beside whatever the
 * receiver computes meanwhile (Megatron's overlap_p2p_comm posts both with isend/irecv and waits
 * before the compute that needs them). Each side's load follows the CP ring's rule (p2p_load) at
 * the send's contention-free pace R->cn_send_t[id]: the sender reads what it sends
 * (REPLAY_NCCL_SEND_HBM_PER_BYTE), the receiver writes, reads and writes it again
 * (REPLAY_NCCL_RECV_HBM_PER_BYTE); both hold the channels. Charged to the lanes' in-flight
 * load like a collective (cn_change), so the op running beside it is re-timed by events. */
static void send_contention(rep *R, uint32_t id, int sign)
{
    const wl_op *o = &R->g->ops[id];
    uint32_t lanes[2] = {o->lane, o->arg};
    static const double per_byte[2] = {REPLAY_NCCL_SEND_HBM_PER_BYTE,
                                       REPLAY_NCCL_RECV_HBM_PER_BYTE};
    for (int k = 0; k < 2; k++) {
        double sms, hbm;
        p2p_load(R, R->g->lane_gpus[(size_t)lanes[k] * R->ts], o->bytes, R->cn_send_t[id],
                 per_byte[k], &sms, &hbm);
        cn_change(R, lanes[k], sign, sign * hbm, sign * sms, 0);
    }
}

static double jitter_draw(rep *R, int gpu)
{
    const replay_config *c = R->cfg;
    double x = 1;
    if (c->jitter == WL_JITTER_LOGNORMAL)
        x = sim_rng_lognormal(R->rng[gpu], -0.5 * c->jitter_sigma * c->jitter_sigma,
                              c->jitter_sigma);
    else if (c->jitter == WL_JITTER_NORMAL)
        x = fmax(0.01, sim_rng_normal(R->rng[gpu], 1.0, c->jitter_sigma));
    return x;
}

static void try_start(rep *R, uint32_t key);

/* Flow mode: one step of compute op id's ring attention. Every lane member sends the KV block
 * (ring_bytes) to its counterpart in the next CP lane as a flow over the network, sharing
 * links with whatever else runs then (Transformer Engine's ring: the P2P send of step i + 1
 * is posted before the attention of block i and waited for after it). ring_part ends the step
 * when the last member's flow has arrived. */
static void ring_step(rep *R, uint32_t id)
{
    const wl_op *o = &R->g->ops[id];
    const wl_cost *c = &R->g->costs[o->arg];
    const int *src = &R->g->lane_gpus[(size_t)o->lane * R->ts];
    const int *dst = &R->g->lane_gpus[(size_t)R->g->cp_next[o->lane] * R->ts];
    R->ring_t0[id] = sim_now(R->eng);
    R->pending_send[id] = (uint32_t)R->ts; /* compute ops never use it otherwise */
    for (int k = 0; k < R->ts; k++)
        R->cfg->comm->send(R->cfg->comm->ctx, src[k], dst[k], c->ring_bytes,
                           REPLAY_TAG(WL_COMM_CP, REPLAY_TAG_INLANE), R->k_ring_part, id);
}

/* A step's flows have all arrived: the step lasted max(block, transfer) (the next send waits
 * for the block's attention, the next block for the transfer); what the transfer took beyond
 * the block is exposed. After the op's last step it ends at its start + compute + in-lane
 * time + the ring's exposed time, the closed form of ring_time with the flows' real times. */
static void on_ring_part(void *model, sim_engine *eng, const sim_event *ev)
{
    rep *R = model;
    uint32_t id = ev->id;
    if (--R->pending_send[id] > 0) return;
    sim_time_t now = sim_now(eng), t0 = R->ring_t0[id], took = now - t0;
    sim_time_t block = R->ring_block[id];
    R->ring_all[id] = sim_time_add(R->ring_all[id], took);
    if (took > block) R->ring_exp[id] = sim_time_add(R->ring_exp[id], took - block);
    if (--R->ring_left[id] > 0) {
        sim_time_t next = took > block ? now : sim_time_add(t0, block);
        if (next > now) sim_schedule_in(eng, now, next - now, R->k_ring_step, id, 0);
        else ring_step(R, id);
        return;
    }
    sim_time_t ring = R->ring_exp[id];
    R->inl_cp[id] = ring;
    R->ring_hid[id] = R->ring_all[id] > ring ? R->ring_all[id] - ring : 0;
    R->inl[id] = sim_time_add(R->inl[id], ring);
    if (R->ring_cdone) {
        /* contention-timed: the op ends its (re-timed) compute and TP part plus the ring's
         * exposed time and what the sends took from its compute: while they were in flight
         * (ring_all: the steps' flows' real times) it ran at 1/r of its rate, for at most its
         * stretched compute (analytic mode's closed form, with the flows' times) */
        const wl_op *o = &R->g->ops[id];
        double r = ring_ratio(R, o->arg, o->lane);
        double w = (double)R->ring_base[id] - (double)R->inl[id] + (double)ring; /* compute before the ring */
        double steal = (1 - 1 / r) * fmin((double)R->ring_all[id], w * r);
        ring = sim_time_add(ring, (sim_time_t)llround(steal));
        uint32_t lane = o->lane;
        if (R->cn_cur[lane] == id) {
            R->cn_tail[lane] = sim_time_add(R->cn_tail[lane], ring);
            cn_schedule(R, lane);
            return;
        }
        sim_time_t end = sim_time_add(R->ring_cdone[id], ring);
        sim_schedule_in(eng, now, end > now ? end - now : 0, R->k_op_done, id, 0);
        return;
    }
    sim_time_t end = sim_time_add(sim_time_add(R->start[id], R->ring_base[id]), ring);
    sim_schedule_in(eng, now, end > now ? end - now : 0, R->k_op_done, id, 0);
}

static void on_ring_step(void *model, sim_engine *eng, const sim_event *ev)
{
    (void)eng;
    ring_step(model, ev->id);
}

/* The host dispatch floor of compute op id (wl_cost.host): its compute part lasts at least the
 * host's time less the in-lane communication `in` that follows it on its stream, so that the op
 * lasts max(GPU time, host) with the TP collectives counted as GPU time (the host issues them
 * too). Noted for breakdown(); 0 when no cost of the graph has a floor. */
static sim_time_t host_floor(rep *R, uint32_t id, sim_time_t in)
{
    if (!R->host_fl) return 0;
    sim_time_t h = R->g->costs[R->g->ops[id].arg].host;
    return R->host_fl[id] = h > in ? h - in : 0;
}

static void start_op(rep *R, uint32_t id)
{
    const wl_op *o = &R->g->ops[id];
    sim_time_t now = sim_now(R->eng);
    R->start[id] = now;
    R->launch[id] = now;
    if (o->kind == WL_OP_COMPUTE) {
        const int *gpus = &R->g->lane_gpus[(size_t)o->lane * R->ts];
        sim_time_t max = 0;
        if (R->hetero_time) {
            for (int k = 0; k < R->ts; k++) {
                int gpu = gpus[k];
                double f = R->cfg->slowdown ? R->cfg->slowdown[gpu] : 1.0;
                if (R->cfg->jitter != WL_JITTER_NONE) f *= jitter_draw(R, gpu);
                double x = (double)base_time(R, o->arg, gpu) * f;
                sim_time_t t = ps_time(x);
                R->own[(size_t)id * R->ts + k] = t;
                if (t > max) max = t;
            }
        } else {
            max = base_time(R, o->arg, gpus[0]);
        }
        sim_time_t in = inlane_time(R, o->arg, o->lane);
        sim_time_t planned = max;
        /* overlapped in-lane collectives (--tp-comm-overlap) run under the op's compute:
         * only what exceeds it is exposed; with contention the compute they overlap runs
         * slower by what their kernels take */
        if (R->g->costs[o->arg].inlane_overlap) {
            max = sim_time_add(max, tp_steal_time(R, o->arg, o->lane));
            in = in > max ? in - max : 0;
            /* the split pipeline's last reduce-scatter chunks: exposed even when the GEMMs
             * outlast the communication (when they do not, the excess above covers them) */
            sim_time_t dr = drain_time(R, o->arg, o->lane);
            if (dr > in) in = dr;
            /* the bulk overlaps, each beside its own GEMM */
            in = sim_time_add(in, bulk_time(R, o->arg, o->lane));
        }
        const wl_cost *oc = &R->g->costs[o->arg];
        if (R->ring_left && oc->ring_count > 0 && oc->ring_bytes > 0 && R->g->cp > 1) {
            /* flow mode: the ring's steps as flows; ring_step's last one schedules the end */
            R->ring_left[id] = (uint32_t)oc->ring_count * (uint32_t)(R->g->cp - 1);
            /* the floor against the compute and TP part: the ring's exposed time comes after
             * it (an upper bound where the host would have hidden some of the ring) */
            sim_time_t fl = host_floor(R, id, in);
            if (R->host_gpu) R->host_gpu[id] = max;
            R->ring_base[id] = sim_time_add(max > fl ? max : fl, in);
            /* with contention the attention block beside a step's sends runs at 1/r of its
             * rate (r: the op's contended/free time beside them, ring_ratio) */
            R->ring_block[id] = (sim_time_t)llround(ring_block_time(R, oc, gpus[0]) *
                                                    ring_ratio(R, o->arg, o->lane));
            R->ring_exp[id] = R->ring_all[id] = 0;
            R->inl[id] = in;
            if (R->ring_cdone && o->stream == WL_STREAM_COMPUTE) {
                /* its compute is re-timed by the lane's collectives beside it; on_ring_part adds
                 * the ring's exposed time and its own sends' toll at the end (one re-timing per
                 * op, not two per step: a re-timed op leaves its old event queued until its
                 * time, and two per step had tripled the 1,024-GPU 128k step's memory) */
                uint32_t l = o->lane;
                R->ring_cdone[id] = -1;
                R->cn_cur[l] = id;
                R->cn_rem[l] = (double)max;
                R->cn_t[l] = now;
                R->cn_fend[l] = sim_time_add(now, fl);
                R->cn_start[l] = planned;
                R->cn_tail[l] = in;
                R->cn_ratio[l] = cn_ratio_of(R, o->arg, l);
                cn_schedule(R, l);
            }
            ring_step(R, id);
            return;
        }
        if (R->inl_cp) {
            sim_time_t ring = ring_time(R, o->arg, o->lane);
            R->inl_cp[id] = ring;
            /* what the compute hid: in flight, never exposed (it lies under the compute) */
            sim_time_t all = R->g->costs[o->arg].ring_count
                                 ? R->ring_total[(size_t)o->arg * R->g->n_lanes + o->lane] : 0;
            if (R->ring_cn_sms && all > 0) {
                /* contention: while the sends are in flight the compute runs at 1/ratio of its
                 * rate, losing 1 - 1/ratio of each such picosecond (tp_steal_time's form), for
                 * as long as the sends or the stretched compute last */
                double r = ring_ratio(R, o->arg, o->lane);
                double c = fmin((double)all, (double)max * r);
                double x = (double)max + (1 - 1 / r) * c;
                max = ps_time(x);
            }
            R->ring_hid[id] = all > ring ? all - ring : 0;
            in = sim_time_add(in, ring);
        }
        if (R->inl) R->inl[id] = in;
        sim_time_t fl = host_floor(R, id, in);
        if (R->cn_cur && o->stream == WL_STREAM_COMPUTE) {
            uint32_t l = o->lane;
            R->cn_cur[l] = id;
            R->cn_rem[l] = (double)max;
            R->cn_t[l] = now;
            R->cn_fend[l] = sim_time_add(now, fl);
            R->cn_start[l] = planned; /* for scaling the members' own times at the end */
            R->cn_tail[l] = in;
            R->cn_ratio[l] = cn_ratio_of(R, o->arg, l);
            cn_schedule(R, l);
            return;
        }
        if (R->host_gpu) R->host_gpu[id] = max;
        sim_schedule_in(R->eng, now, sim_time_add(max > fl ? max : fl, in), R->k_op_done, id, 0);
    } else if (o->kind == WL_OP_SEND) {
        const int *src = &R->g->lane_gpus[(size_t)o->lane * R->ts];
        const int *dst = &R->g->lane_gpus[(size_t)o->arg * R->ts];
        /* the contention-free time: analytic mode's duration, and the pace of its contention
         * (flow mode's sharing only slows it: an upper bound, as for collectives) */
        sim_time_t t = -1;
        if (R->cn_lvl && o->bytes > 0 && !send_blocks(R, id)) {
            t = send_time_of(R, o->lane, o->arg, o->bytes);
            if (t > 0) {
                R->cn_send_t[id] = t;
                R->cn_on[id] = 1;
                send_contention(R, id, +1);
            }
        }
        if (R->cfg->comm) {
            R->pending_send[id] = (uint32_t)R->ts;
            for (int k = 0; k < R->ts; k++)
                R->cfg->comm->send(R->cfg->comm->ctx, src[k], dst[k], o->bytes,
                                   REPLAY_TAG(WL_COMM_PP, o->name), R->k_send_part, id);
        } else {
            if (t < 0) t = send_time_of(R, o->lane, o->arg, o->bytes);
            sim_schedule_in(R->eng, now, t, R->k_op_done, id, 0);
        }
    } else {
        /* Collective: wait for every participating lane (backup workers: for the quorum). */
        uint32_t inst = o->arg;
        uint32_t n = R->part_start[inst + 1] - R->part_start[inst];
        if (R->dropped && R->dropped[o->lane]) {
            /* a dropped lane's gradients are discarded: nothing to send, nothing to wait for */
            sim_schedule_in(R->eng, now, 0, R->k_op_done, id, 0);
            return;
        }
        if (R->waiting) R->waiting[id] = 1;
        uint32_t need = n;
        if (R->dropped) {
            if (!R->quorum) {
                need = n > (uint32_t)R->cfg->backup_drop ? n - (uint32_t)R->cfg->backup_drop : 1;
            } else {
                need = 0;
                for (uint32_t i = R->part_start[inst]; i < R->part_start[inst + 1]; i++)
                    need += !R->dropped[R->g->ops[R->part[i]].lane];
            }
        }
        if (++R->arrived[inst] < need) return;
        if (R->dropped && !R->quorum) {
            /* the first instance to reach its quorum decides who is dropped this step */
            R->quorum = true;
            for (uint32_t i = R->part_start[inst]; i < R->part_start[inst + 1]; i++) {
                uint32_t p = R->part[i];
                if (!R->waiting[p] && !R->dropped[R->g->ops[p].lane]) {
                    R->dropped[R->g->ops[p].lane] = 1;
                    R->n_dropped++;
                }
            }
        }
        const wl_coll *c = &R->g->colls[inst];
        sim_time_t worst = 0;
        if (R->cfg->comm) R->pending_coll[inst] = (uint32_t)R->ts;
        uint32_t last_m = 0;
        for (int k = 0; k < R->ts; k++) {
            uint32_t m = 0; /* the participants that take part: all, or the quorum */
            for (uint32_t i = 0; i < n; i++) {
                uint32_t p = R->part[R->part_start[inst] + i];
                if (R->dropped && R->dropped[R->g->ops[p].lane]) continue;
                R->scratch[m++] = R->g->lane_gpus[(size_t)R->g->ops[p].lane * R->ts + k];
            }
            last_m = m;
            if (R->cfg->comm) {
                R->cfg->comm->coll(R->cfg->comm->ctx, c->op, R->scratch, (int)m, c->bytes,
                                   REPLAY_TAG(c->kind, o->name), R->k_coll_part, inst);
            } else {
                sim_time_t t = comm_time(R, c->op, R->scratch, (int)m, c->bytes, false);
                if (t > worst) worst = t;
            }
        }
        for (uint32_t i = 0; i < n; i++) {
            uint32_t p = R->part[R->part_start[inst] + i];
            if (!R->dropped || !R->dropped[R->g->ops[p].lane]) R->launch[p] = now;
        }
        if (R->cn_lvl) {
            /* its HBM traffic at its contention-free pace (the analytic time of one of the ts
             * symmetric collectives; flow mode's sharing only slows it, an upper bound) */
            sim_time_t t0 = R->cfg->comm ? comm_time(R, c->op, R->scratch, (int)last_m, c->bytes, false)
                                         : worst;
            if (t0 > 0 && last_m > 1) {
                /* its pace per GPU sets both its HBM traffic and the channels NCCL gives it */
                double rate = sent_bytes(c->op, (int)last_m, c->bytes) / sim_time_to_s(t0);
                double h, ch;
                nccl_load(R, R->scratch[0], rate, REPLAY_NCCL_HBM_PER_BYTE, &ch, &h);
                /* the framework's memory passes on the collective's stream (FSDP's casts and
                 * divisions, wl_coll.hbm_bytes) spread over its contention-free time: they run
                 * beside the compute on their own stream, and their elementwise kernels hold
                 * every SM and the HBM for their time alone, so the compute beside them
                 * time-shares the GPU with them (docs/workloads.md, "FSDP's own passes") */
                const gpu_spec *gs = &R->cfg->gpus[R->scratch[0]];
                double phi = replay_passes_phi(gs, c->hbm_bytes, sim_time_to_s(t0));
                R->cn_inst_hbm[inst] = h;
                R->cn_inst_sms[inst] = ch;
                R->cn_inst_phi[inst] = phi;
                for (uint32_t i = 0; i < n; i++) {
                    uint32_t p = R->part[R->part_start[inst] + i];
                    if (R->dropped && R->dropped[R->g->ops[p].lane]) continue;
                    R->cn_on[p] = 1;
                    cn_change(R, R->g->ops[p].lane, +1, h, ch, phi);
                }
            }
        }
        if (!R->cfg->comm) sim_schedule_in(R->eng, now, worst, R->k_coll_done, inst, 0);
    }
}

static void try_start(rep *R, uint32_t key)
{
    if (R->q_busy[key] || R->q_head[key] == R->q_start[key + 1]) return;
    uint32_t id = R->q[R->q_head[key]];
    if (R->remaining[id]) return;
    R->q_busy[key] = 1;
    start_op(R, id);
}

static void complete_op(rep *R, uint32_t id)
{
    const wl_op *o = &R->g->ops[id];
    R->end[id] = sim_now(R->eng);
    if (o->kind == WL_OP_SEND && R->cn_on && R->cn_on[id]) {
        /* arrived: its kernels leave both GPUs before the receiver's consumer starts below */
        R->cn_on[id] = 0;
        send_contention(R, id, -1);
    }
    uint32_t key = o->lane * N_STREAMS + o->stream;
    R->q_busy[key] = 0;
    R->q_head[key]++;
    for (uint32_t i = R->succ_start[id]; i < R->succ_start[id + 1]; i++) {
        uint32_t s = R->succ[i];
        if (--R->remaining[s] == 0) {
            const wl_op *so = &R->g->ops[s];
            try_start(R, so->lane * N_STREAMS + so->stream);
        }
    }
    try_start(R, key);
}

static void on_op_done(void *model, sim_engine *eng, const sim_event *ev)
{
    (void)eng;
    rep *R = model;
    if (ev->data != 0) {
        /* a contention-timed op (data = its lane's version when scheduled): only the latest
         * event of the op running now ends it; earlier ones were re-timed away */
        uint32_t l = R->g->ops[ev->id].lane;
        if (R->cn_cur[l] != ev->id || ev->data != R->cn_ver[l]) return;
        R->cn_cur[l] = CN_NONE;
        if (R->host_gpu) R->host_gpu[ev->id] = R->cn_gend[l] - R->start[ev->id];
        if (R->hetero_time && R->cn_start[l] > 0) {
            /* the members' own compute times stretch with the lane's */
            double f = (double)(R->cn_gend[l] - R->start[ev->id]) / (double)R->cn_start[l];
            for (int k = 0; k < R->ts; k++) {
                double x = (double)R->own[(size_t)ev->id * R->ts + k] * f;
                R->own[(size_t)ev->id * R->ts + k] = ps_time(x);
            }
        }
        if (R->ring_cdone && R->ring_left[ev->id] > 0) {
            /* its ring is still going: on_ring_part ends it with the exposed time added */
            R->ring_cdone[ev->id] = sim_now(eng);
            return;
        }
    }
    complete_op(R, ev->id);
}

static void finish_coll(rep *R, uint32_t inst)
{
    for (uint32_t i = R->part_start[inst]; i < R->part_start[inst + 1]; i++) {
        uint32_t p = R->part[i];
        if (R->waiting) {
            /* with backup workers, only those that took part (the others are dropped and
             * finished on their own) */
            if (!R->waiting[p]) continue;
            R->waiting[p] = 0;
        }
        if (R->cn_on && R->cn_on[p]) {
            R->cn_on[p] = 0;
            cn_change(R, R->g->ops[p].lane, -1, -R->cn_inst_hbm[inst], -R->cn_inst_sms[inst],
                      -R->cn_inst_phi[inst]);
        }
        complete_op(R, p);
    }
}

static void on_coll_done(void *model, sim_engine *eng, const sim_event *ev)
{
    (void)eng;
    finish_coll(model, ev->id);
}

static void on_coll_part(void *model, sim_engine *eng, const sim_event *ev)
{
    (void)eng;
    rep *R = model;
    if (--R->pending_coll[ev->id] == 0) finish_coll(R, ev->id);
}

static void on_send_part(void *model, sim_engine *eng, const sim_event *ev)
{
    (void)eng;
    rep *R = model;
    if (--R->pending_send[ev->id] == 0) complete_op(R, ev->id);
}

/* Counting-sort CSR: items 0..n-1 with key[i] in [0, n_keys); the caller provides the arrays. */
static void csr(uint32_t n_keys, uint32_t n, const uint32_t *key, uint32_t *start, uint32_t *items,
                uint32_t *fill)
{
    /* start: n_keys + 1 zeroed; items: n; fill: n_keys + 1 scratch */
    for (uint32_t i = 0; i < n; i++) start[key[i] + 1]++;
    for (uint32_t k = 0; k < n_keys; k++) start[k + 1] += start[k];
    memcpy(fill, start, ((size_t)n_keys + 1) * sizeof *fill);
    for (uint32_t i = 0; i < n; i++) items[fill[key[i]]++] = i;
}

/* A zeroed array for R.field from the run's arena (dtsim/arena.h), n elements of its type. */
#define CARVE(field, n) (R.field = dt_arena_array(&R.mem, (n), sizeof *R.field))

/* An array the run may hand to its result (replay_result_free frees it alone): calloc'd by
 * itself, a failure noted in *oom for the one check that also covers the arena. */
static void *keep_array(size_t n, size_t size, bool *oom)
{
    void *p = calloc(n ? n : 1, size);
    if (!p) *oom = true;
    return p;
}

/* ---- breakdown of the critical GPU ---- */

/* One edge of an interval: cat CAT_WAIT, CAT_COMM or CAT_COMPUTE; kind the wl_comm_kind of a
 * communication interval. */
typedef struct mark { sim_time_t t; int cat; int kind; int delta; } mark;
enum { CAT_WAIT, CAT_COMM, CAT_COMPUTE, N_CAT };

static int mark_cmp(const void *a, const void *b)
{
    const mark *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return 0;
}

/* Put the marks in time order. Each stream's ops run one after another, so its marks (one run
 * of m, ending at run_end[stream]) are normally already in order: then a merge of the
 * N_STREAMS runs, O(n x streams), instead of a sort (the sort of every lane's marks was 4 % of
 * a 16,384-GPU step's instructions). A run out of order (own compute time longer than the op,
 * with heterogeneous members) falls back to the sort. Marks at equal times may come out in
 * any order: the sweep below only accumulates over intervals of positive length. */
static void order_marks(mark *m, size_t n, const size_t *run_end)
{
    size_t lo[N_STREAMS], hi[N_STREAMS];
    for (int r = 0; r < N_STREAMS; r++) {
        lo[r] = r ? run_end[r - 1] : 0;
        hi[r] = run_end[r];
        for (size_t i = lo[r] + 1; i < hi[r]; i++)
            if (m[i].t < m[i - 1].t) {
                qsort(m, n, sizeof *m, mark_cmp);
                return;
            }
    }
    mark *out = dt_xmalloc((n + 1) * sizeof *out);
    for (size_t k = 0; k < n; k++) {
        int best = -1;
        for (int r = 0; r < N_STREAMS; r++)
            if (lo[r] < hi[r] && (best < 0 || m[lo[r]].t < m[lo[best]].t)) best = r;
        out[k] = m[lo[best]++];
    }
    memcpy(m, out, n * sizeof *m);
    free(out);
}

/* The kind of communication an op is (compute ops: their in-lane collectives). */
static int op_comm_kind(const wl_graph *g, const wl_op *o)
{
    if (o->kind == WL_OP_COMPUTE) return WL_COMM_TP;
    if (o->kind == WL_OP_SEND) return WL_COMM_PP;
    int k = g->colls[o->arg].kind;
    return k < WL_COMM_KIND_COUNT ? k : WL_COMM_DP;
}

static void breakdown(rep *R, uint32_t lane, int member, replay_result *out)
{
    const wl_graph *g = R->g;
    size_t cap = R->bd_cap ? R->bd_cap : 64, n = 0;
    sim_time_t host = 0;
    mark *m = R->bd_cap ? R->bd_marks : dt_xmalloc(cap * sizeof *m);
#define ADD(a, b, c, k)                                                                     \
    do {                                                                                    \
        if ((b) > (a)) {                                                                    \
            if (n + 2 > cap) m = dt_xrealloc(m, (cap *= 2) * sizeof *m);                    \
            m[n++] = (mark){(a), (c), (k), +1};                                             \
            m[n++] = (mark){(b), (c), (k), -1};                                             \
        }                                                                                   \
    } while (0)
    size_t run_end[N_STREAMS]; /* marks of stream k end at run_end[k] */
    for (uint32_t k = 0; k < N_STREAMS; k++) {
        uint32_t key = lane * N_STREAMS + k;
        for (uint32_t i = R->q_start[key]; i < R->q_start[key + 1]; i++) {
            uint32_t id = R->q[i];
            const wl_op *o = &g->ops[id];
            sim_time_t s = R->start[id], l = R->launch[id], e = R->end[id];
            int kind = op_comm_kind(g, o);
            if (o->kind == WL_OP_COMPUTE) {
                sim_time_t in = R->inl ? R->inl[id] : inlane_time(R, o->arg, o->lane);
                sim_time_t ring = R->inl_cp ? R->inl_cp[id] : 0;
                sim_time_t own = R->hetero_time ? R->own[(size_t)id * R->ts + member] : e - s - in;
                if (R->host_fl) {
                    /* the GPU's wait for its host: from its own GPU work (the lane's, or with
                     * stragglers or jitter this member's) to the floor, within the compute
                     * part; compute time (each GPU's host issues its own kernels, so a member
                     * held by its host does not wait for a late peer) */
                    sim_time_t part = e - s - in;
                    sim_time_t fl = R->host_fl[id] < part ? R->host_fl[id] : part;
                    sim_time_t gpu = R->hetero_time ? own : R->host_gpu[id];
                    if (fl > gpu) host += fl - gpu;
                    if (R->hetero_time && own < fl) own = fl;
                }
                ADD(s, sim_time_add(s, own), CAT_COMPUTE, 0);
                if (R->ring_hid && R->ring_hid[id] > 0)
                    /* ring sends under the attention: in flight, hidden (compute wins) */
                    ADD(s, sim_time_add(s, R->ring_hid[id] < own ? R->ring_hid[id] : own), CAT_COMM, WL_COMM_CP);
                ADD(sim_time_add(s, own), e - in, CAT_WAIT, 0);
                ADD(e - in, e - ring, CAT_COMM, kind);
                ADD(e - ring, e, CAT_COMM, WL_COMM_CP);
            } else {
                /* a pipeline-kind collective (the tied embedding's all-reduce between the
                 * first and the last stage) waiting for the other stage waits for the
                 * pipeline's drain: the bubble, not a late peer; left unmarked, it counts as
                 * idle */
                if (kind != WL_COMM_PP) ADD(s, l, CAT_WAIT, 0);
                ADD(l, e, CAT_COMM, kind);
            }
        }
        run_end[k] = n;
    }
#undef ADD
    order_marks(m, n, run_end);
    int active[N_CAT] = {0}, kinds[WL_COMM_KIND_COUNT] = {0};
    sim_time_t acc[N_CAT + 1] = {0}, prev = 0;
    sim_time_t by_kind[WL_COMM_KIND_COUNT] = {0}, inflight[WL_COMM_KIND_COUNT] = {0};
    for (size_t i = 0; i <= n; i++) {
        sim_time_t t = i < n ? m[i].t : out->step_time;
        if (t > out->step_time) t = out->step_time;
        if (t > prev) {
            sim_time_t dt = t - prev;
            int cat = N_CAT; /* idle */
            for (int c = N_CAT - 1; c >= 0; c--)
                if (active[c] > 0) {
                    cat = c;
                    break;
                }
            acc[cat] += dt;
            int n_kinds = 0;
            for (int k = 0; k < WL_COMM_KIND_COUNT; k++)
                if (kinds[k] > 0) {
                    inflight[k] += dt;
                    n_kinds++;
                }
            if (cat == CAT_COMM) {
                /* equal shares; the remainder of the division to the lowest kind in flight */
                sim_time_t share = dt / n_kinds, rest = dt - share * n_kinds;
                for (int k = 0; k < WL_COMM_KIND_COUNT; k++)
                    if (kinds[k] > 0) {
                        by_kind[k] += share + rest;
                        rest = 0;
                    }
            }
            prev = t;
        }
        if (i < n) {
            active[m[i].cat] += m[i].delta;
            if (m[i].cat == CAT_COMM) kinds[m[i].kind] += m[i].delta;
        }
    }
    R->bd_marks = m;
    R->bd_cap = cap;
    out->compute = acc[CAT_COMPUTE];
    out->host_wait = host < out->compute ? host : out->compute;
    out->comm_exposed = acc[CAT_COMM];
    out->straggler_wait = acc[CAT_WAIT];
    out->bubble = acc[N_CAT];
    memcpy(out->comm_by_kind, by_kind, sizeof by_kind);
    memcpy(out->comm_inflight, inflight, sizeof inflight);
}

int replay_run(const wl_graph *g, const replay_config *cfg, replay_result *out, dt_error *err)
{
    memset(out, 0, sizeof *out);
    if (cfg->n_gpus < g->n_gpus)
        return dt_error_set(err, DT_EINPUT, NULL, NULL,
                            "the op graph uses %d GPUs but the cluster has %d", g->n_gpus,
                            cfg->n_gpus);
    rep R = {.g = g, .cfg = cfg, .ts = g->lane_size};
    uint32_t n = g->n_ops;
    bool own_engine = cfg->eng == NULL;
    R.eng = own_engine ? sim_engine_create() : cfg->eng;
    R.k_op_done = sim_kind_register(R.eng, "rep.op_done", on_op_done, &R);
    R.k_coll_done = sim_kind_register(R.eng, "rep.coll_done", on_coll_done, &R);
    R.k_coll_part = sim_kind_register(R.eng, "rep.coll_part", on_coll_part, &R);
    R.k_send_part = sim_kind_register(R.eng, "rep.send_part", on_send_part, &R);
    R.k_ring_part = sim_kind_register(R.eng, "rep.ring_part", on_ring_part, &R);
    R.k_ring_step = sim_kind_register(R.eng, "rep.ring_step", on_ring_step, &R);

    /* The run's working arrays come from one arena (R.mem, freed at once at the end), the
     * set-up's temporaries from another (setup, freed once the tables are built); both are checked
     * once before anything is written to them. The arrays a run hands to its result (start,
     * launch, end, inl_cp, ring_hid, dropped: replay_result_free frees them one by one) are
     * calloc'd alone, their failures folded into the same check. */
    dt_arena setup = DT_ARENA_INIT;
    bool kept_oom = false;
    uint32_t n_keys = (uint32_t)g->n_lanes * N_STREAMS, n_coll_ops = 0;
    for (uint32_t i = 0; i < n; i++) n_coll_ops += g->ops[i].kind == WL_OP_COLL;
    size_t nic = (size_t)g->n_costs * g->n_lanes, L = (size_t)g->n_lanes + 1;
    size_t n_fill = (size_t)(n_keys > n ? n_keys : n) + 1;
    if ((size_t)g->n_colls + 1 > n_fill) n_fill = (size_t)g->n_colls + 1;
    uint32_t *key = dt_arena_array(&setup, (size_t)(g->n_deps > n ? g->n_deps : n) + 1, sizeof *key);
    uint32_t *edge_to = dt_arena_array(&setup, (size_t)g->n_deps + 1, sizeof *edge_to);
    uint32_t *eidx = dt_arena_array(&setup, (size_t)g->n_deps + 1, sizeof *eidx);
    uint32_t *pidx = dt_arena_array(&setup, (size_t)n_coll_ops + 1, sizeof *pidx);
    uint32_t *coll_ops = dt_arena_array(&setup, (size_t)n_coll_ops + 1, sizeof *coll_ops);
    uint32_t *fill = dt_arena_array(&setup, n_fill, sizeof *fill);
    CARVE(remaining, (size_t)n + 1);
    CARVE(succ_start, (size_t)n + 1);
    CARVE(succ, (size_t)g->n_deps + 1);
    CARVE(q_start, (size_t)n_keys + 1);
    CARVE(q, (size_t)n + 1);
    CARVE(q_head, (size_t)n_keys + 1);
    CARVE(q_busy, (size_t)n_keys + 1);
    CARVE(part_start, (size_t)g->n_colls + 1);
    CARVE(part, (size_t)n_coll_ops + 1);
    CARVE(arrived, (size_t)g->n_colls + 1);
    CARVE(pending_send, (size_t)n + 1);
    CARVE(pending_coll, (size_t)g->n_colls + 1);
    R.start = keep_array((size_t)n + 1, sizeof *R.start, &kept_oom);
    R.launch = keep_array((size_t)n + 1, sizeof *R.launch, &kept_oom);
    R.end = keep_array((size_t)n + 1, sizeof *R.end, &kept_oom);
    /* compute-time caches */
    if (cfg->gpus && g->n_gpus > 1) CARVE(spec_of, (size_t)g->n_gpus);
    CARVE(inlane_cache, nic + 1);
    for (uint32_t i = 0; i < g->n_costs && !R.bulk_cache; i++)
        if (has_bulk(&g->costs[i])) CARVE(bulk_cache, nic + 1);
    for (uint32_t i = 0; i < g->n_costs && !R.inl; i++)
        if (g->costs[i].inlane_overlap && g->costs[i].n_inlane) CARVE(inl, (size_t)n + 1);
    if (g->cp_next && g->cp > 1) {
        CARVE(ring_cache, nic + 1);
        CARVE(ring_total, nic + 1);
        R.inl_cp = keep_array((size_t)n + 1, sizeof *R.inl_cp, &kept_oom);
        R.ring_hid = keep_array((size_t)n + 1, sizeof *R.ring_hid, &kept_oom);
        if (!R.inl) CARVE(inl, (size_t)n + 1);
        if (cfg->comm) {
            CARVE(ring_left, (size_t)n + 1);
            CARVE(ring_t0, (size_t)n + 1);
            CARVE(ring_base, (size_t)n + 1);
            CARVE(ring_block, (size_t)n + 1);
            CARVE(ring_exp, (size_t)n + 1);
            CARVE(ring_all, (size_t)n + 1);
        }
    }
    bool slow = false;
    if (cfg->slowdown)
        for (int i = 0; i < g->n_gpus; i++)
            if (cfg->slowdown[i] != 1.0) slow = true;
    R.hetero_time = slow || cfg->jitter != WL_JITTER_NONE;
    if (cfg->backup_drop > 0) {
        R.dropped = keep_array(L, 1, &kept_oom);
        CARVE(waiting, (size_t)n + 1);
    }
    if (R.hetero_time) CARVE(own, (size_t)n * R.ts + 1);
    for (uint32_t i = 0; i < g->n_costs && !R.host_fl; i++)
        if (g->costs[i].host > 0) {
            CARVE(host_fl, (size_t)n + 1);
            CARVE(host_gpu, (size_t)n + 1);
        }
    if (cfg->contention && cfg->gpus) {
        CARVE(cn_lvl, L);
        CARVE(cn_hbm, L);
        CARVE(cn_sms, L);
        CARVE(cn_cur, L);
        CARVE(cn_rem, L);
        CARVE(cn_ratio, L);
        CARVE(cn_t, L);
        CARVE(cn_gend, L);
        CARVE(cn_fend, L);
        CARVE(cn_tail, L);
        CARVE(cn_start, L);
        CARVE(cn_ver, L);
        CARVE(cn_inst_hbm, (size_t)g->n_colls + 1);
        CARVE(cn_inst_sms, (size_t)g->n_colls + 1);
        CARVE(cn_inst_phi, (size_t)g->n_colls + 1);
        CARVE(cn_phi, L);
        CARVE(cn_on, (size_t)n + 1);
        CARVE(cn_send_t, (size_t)n + 1);
        CARVE(cn_memo, CN_MEMO_WAYS * L);
        CARVE(cn_shared, CN_SHARED_SIZE);
        CARVE(tp_steal, nic + 1);
        if (R.ring_cache) {
            CARVE(ring_cn_sms, nic + 1);
            CARVE(ring_cn_hbm, nic + 1);
            if (R.ring_left) CARVE(ring_cdone, (size_t)n + 1);
        }
    }
    CARVE(send_memo, 2 * L);
    if (cfg->jitter != WL_JITTER_NONE) CARVE(rng, (size_t)g->n_gpus);
    int rc = kept_oom ? dt_error_set(err, DT_ENOMEM, NULL, NULL, "replay: out of memory") : DT_OK;
    if (!rc) rc = dt_arena_check(&setup, "replay", err);
    if (!rc) rc = dt_arena_check(&R.mem, "replay", err);
    if (rc) goto done;

    /* successors: one entry per dep edge, keyed by the dep */
    for (uint32_t i = 0; i < n; i++) {
        const wl_op *o = &g->ops[i];
        R.remaining[i] = o->n_deps;
        for (uint32_t d = 0; d < o->n_deps; d++) {
            key[o->dep_start + d] = g->deps[o->dep_start + d];
            edge_to[o->dep_start + d] = i;
            DT_ASSERT(g->deps[o->dep_start + d] < n);
        }
    }
    csr(n, g->n_deps, key, R.succ_start, eidx, fill);
    for (uint32_t i = 0; i < g->n_deps; i++) R.succ[i] = edge_to[eidx[i]];
    /* stream queues in op order */
    for (uint32_t i = 0; i < n; i++) key[i] = g->ops[i].lane * N_STREAMS + g->ops[i].stream;
    csr(n_keys, n, key, R.q_start, R.q, fill);
    memcpy(R.q_head, R.q_start, (size_t)n_keys * sizeof *R.q_head);
    /* collective participants */
    for (uint32_t i = 0, k = 0; i < n; i++)
        if (g->ops[i].kind == WL_OP_COLL) key[k++] = g->ops[i].arg;
    csr(g->n_colls, n_coll_ops, key, R.part_start, pidx, fill);
    /* map participant indices (k-th collective op) back to op ids */
    for (uint32_t i = 0, k = 0; i < n; i++)
        if (g->ops[i].kind == WL_OP_COLL) coll_ops[k++] = i;
    uint32_t max_part = 1;
    for (uint32_t i = 0; i < n_coll_ops; i++) R.part[i] = coll_ops[pidx[i]];
    for (uint32_t c = 0; c < g->n_colls; c++) {
        uint32_t np = R.part_start[c + 1] - R.part_start[c];
        if (np > max_part) max_part = np;
    }
    dt_arena_free(&setup);
    for (uint32_t i = 0; i < n; i++) R.end[i] = -1;
    R.n_specs = 1;
    if (R.spec_of) {
        /* distinct specs by content, in order of first appearance: a mixed cluster has a
         * few, and a GPU whose spec equals an earlier one's shares its times */
        int first[MAX_SPECS]; /* a GPU of each distinct spec */
        first[0] = 0;
        for (int i = 1; i < g->n_gpus; i++) {
            int k = 0;
            while (k < R.n_specs && memcmp(&cfg->gpus[i], &cfg->gpus[first[k]], sizeof cfg->gpus[0]))
                k++;
            if (k == R.n_specs && R.n_specs < MAX_SPECS) first[R.n_specs++] = i;
            R.spec_of[i] = k < R.n_specs ? k : -1; /* beyond MAX_SPECS: computed every time */
        }
    }
    /* sized by what was just counted: the participants of the largest collective, the specs */
    size_t ncb = (size_t)g->n_costs * R.n_specs;
    CARVE(scratch, max_part);
    CARVE(cost_base, ncb + 1);
    if ((rc = dt_arena_check(&R.mem, "replay", err))) goto done;
    for (size_t i = 0; i < ncb; i++) R.cost_base[i] = -1;
    for (size_t i = 0; i < nic; i++) R.inlane_cache[i] = -1;
    for (size_t i = 0; R.bulk_cache && i < nic; i++) R.bulk_cache[i] = -1;
    for (size_t i = 0; R.ring_cache && i < nic; i++) R.ring_cache[i] = -1;
    for (size_t i = 0; R.cn_cur && i < L; i++) R.cn_cur[i] = CN_NONE;
    for (size_t i = 0; R.tp_steal && i < nic; i++) R.tp_steal[i] = -1;
    for (size_t i = 0; R.cn_memo && i < CN_MEMO_WAYS * L; i++)
        R.cn_memo[i] = (cn_memo){.cost = UINT32_MAX};
    for (size_t i = 0; R.cn_shared && i < CN_SHARED_SIZE; i++) R.cn_shared[i].spec = -1;
    for (size_t i = 0; R.send_memo && i < 2 * L; i++) R.send_memo[i] = (send_memo){.to = UINT32_MAX};
    for (size_t i = 0; R.ring_cn_sms && i < nic; i++) R.ring_cn_sms[i] = -1;
    for (int i = 0; R.rng && i < g->n_gpus; i++) {
        char name[48];
        snprintf(name, sizeof name, "jitter.gpu%d", i);
        R.rng[i] = sim_rng_create(cfg->seed, name);
    }

    uint64_t ev0 = sim_events_handled(R.eng);
    for (uint32_t k = 0; k < n_keys; k++) try_start(&R, k);
    bool deadline = cfg->deadline > 0 && cfg->backup_drop == 0;
    sim_run(R.eng, deadline ? cfg->deadline : SIM_TIME_MAX);
    out->events = sim_events_handled(R.eng) - ev0;

    /* An op is marked ended by the event that ends it, and sim_run handled every event up to
     * the deadline: an op left without an end ends after it (or never: a cycle, which a full
     * run would report; a caller with a deadline learns only that the step is longer). */
    for (uint32_t i = 0; deadline && i < n && !out->stopped_at_deadline; i++)
        if (R.end[i] < 0) out->stopped_at_deadline = true;
    if (out->stopped_at_deadline) out->step_time = cfg->deadline; /* and nothing else */
    sim_time_t T = 0;
    uint32_t crit_lane = 0;
    for (uint32_t i = 0; i < n && !out->stopped_at_deadline; i++) {
        if (R.end[i] < 0) {
            char op_path[32]; /* op ids are trace positions: ops[i] in a trace file */
            snprintf(op_path, sizeof op_path, "ops[%u]", i);
            rc = dt_error_set(err, DT_EINPUT, NULL, op_path,
                              "op %u (%s, lane %u) never ran: its dependencies form a cycle or "
                              "a collective lacks participants",
                              i, g->names[g->ops[i].name], g->ops[i].lane);
            break;
        }
        if (R.dropped && R.dropped[g->ops[i].lane]) continue; /* cancelled: counts for nothing */
        if (R.end[i] > T || (R.end[i] == T && g->ops[i].lane < crit_lane)) {
            T = R.end[i];
            crit_lane = g->ops[i].lane;
        }
    }
    if (rc == DT_OK && T >= SIM_TIME_MAX / 2) /* sim_time_add saturated on the way */
        rc = dt_error_set(err, DT_EINPUT, NULL, NULL,
                          "the step would take longer than the simulated clock's range (about "
                          "50 days): check durations, FLOPs, bytes and bandwidths");
    if (rc == DT_OK && !out->stopped_at_deadline) {
        out->step_time = T;
        out->critical_gpu = g->lane_gpus[(size_t)crit_lane * R.ts];
        breakdown(&R, crit_lane, 0, out);
        /* Every GPU's wait: one sweep per lane (per member when members differ). */
        replay_result tmp = {.step_time = T};
        out->max_straggler_wait = -1;
        for (uint32_t l = 0; l < (uint32_t)g->n_lanes; l++)
            for (int k = 0; k < (R.hetero_time ? R.ts : 1) && !(R.dropped && R.dropped[l]); k++) {
                breakdown(&R, l, k, &tmp);
                if (tmp.straggler_wait > out->max_straggler_wait) {
                    out->max_straggler_wait = tmp.straggler_wait;
                    out->max_straggler_wait_gpu = g->lane_gpus[(size_t)l * R.ts + k];
                }
            }
        out->lane_end = keep_array(L, sizeof *out->lane_end, &kept_oom);
        if (cfg->record) out->op_inlane = keep_array((size_t)n + 1, sizeof *out->op_inlane, &kept_oom);
        if (kept_oom) {
            rc = dt_error_set(err, DT_ENOMEM, NULL, NULL, "replay: out of memory");
            replay_result_free(out);
            goto done;
        }
        for (uint32_t i = 0; i < n; i++)
            if (R.end[i] > out->lane_end[g->ops[i].lane]) out->lane_end[g->ops[i].lane] = R.end[i];
        if (R.dropped) {
            out->lane_dropped = R.dropped;
            out->n_dropped = R.n_dropped;
            R.dropped = NULL;
        }
        if (cfg->record) {
            out->op_start = R.start;
            out->op_launch = R.launch;
            out->op_end = R.end;
            for (uint32_t i = 0; i < n; i++)
                out->op_inlane[i] = g->ops[i].kind == WL_OP_COMPUTE
                                        ? (R.inl ? R.inl[i]
                                                 : inlane_time(&R, g->ops[i].arg, g->ops[i].lane))
                                        : 0;
            R.start = R.launch = R.end = NULL;
            out->op_ring = R.inl_cp;
            out->op_ring_hidden = R.ring_hid;
            R.inl_cp = R.ring_hid = NULL;
        }
    }
done:
    for (int i = 0; R.rng && i < g->n_gpus; i++) sim_rng_destroy(R.rng[i]); /* NULL-safe */
    dt_arena_free(&setup);
    dt_arena_free(&R.mem);
    free(R.bd_marks);
    /* the result's arrays, unless handed over (set to NULL then) */
    free(R.start);
    free(R.launch);
    free(R.end);
    free(R.inl_cp);
    free(R.ring_hid);
    free(R.dropped);
    if (own_engine) sim_engine_destroy(R.eng);
    return rc;
}

void replay_result_free(replay_result *r)
{
    if (!r) return;
    free(r->op_start);
    free(r->op_launch);
    free(r->op_end);
    free(r->op_inlane);
    free(r->op_ring);
    free(r->op_ring_hidden);
    free(r->lane_end);
    free(r->lane_dropped);
    r->op_start = r->op_launch = r->op_end = r->op_inlane = r->op_ring = r->op_ring_hidden = NULL;
    r->lane_end = NULL;
    r->lane_dropped = NULL;
}
