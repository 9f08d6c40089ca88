/* coll.h - collective operations as programs of point-to-point steps over the network.
 *
 * Each algorithm turns (op, group, bytes) into per-rank step lists (send to peer, receive from
 * peer, reduce locally) with dependencies; the collective engine runs them over net_send(), so
 * contention between steps and with other traffic is real. Closed forms live in
 * coll_closed_form*() as test oracles; coll_analytic_time gives the alpha-beta time of what
 * coll_start would run (the training step's analytic mode), and the analytic network mode
 * (net_config.mode) runs the same step programs with contention-free transfers.
 *
 * Ownership: coll_create borrows net, engine and topo (they must outlive it); coll_start
 * copies the group, so spec->group is only borrowed for the call. Several collectives may run
 * at once on one engine (they share the network and each GPU's reduction unit).
 *
 * Which algorithm runs which op (others are DT_EINPUT with a message naming the op):
 *   ring    allreduce reduce_scatter allgather broadcast reduce (the last two as a chain)
 *   tree    allreduce broadcast reduce         dbt   allreduce broadcast reduce
 *   hd      allreduce (any n); reduce_scatter allgather (n a power of two)
 *   direct  every op                           hier  allreduce (same GPU count per host)
 *   ps      allreduce
 * sendrecv is one transfer and runs as `direct` whatever the algorithm asked.
 * Formulas, step programs, `auto` (by estimated time among the library's algorithms) and `rule`:
 * docs/collectives.md.
 */
#ifndef DTSIM_COLL_H
#define DTSIM_COLL_H

#include <stdint.h>

#include "dtsim/net.h"
#include "dtsim/sim.h"
#include "dtsim/topo.h"

typedef enum coll_op {
    COLL_ALLREDUCE,
    COLL_REDUCE_SCATTER,
    COLL_ALLGATHER,
    COLL_BROADCAST,
    COLL_REDUCE,
    COLL_ALLTOALL,
    COLL_SENDRECV,
    COLL_OP_COUNT
} coll_op;

typedef enum coll_algo {
    /* the algorithm with the least estimated time under contention among those the collective
     * library that runs the group offers (coll_config.library: NCCL's ring and tree, or every
     * candidate of `estimate`); coll_auto_pick. Resolved like COLL_FASTEST. */
    COLL_AUTO,
    COLL_RING,
    COLL_TREE,
    COLL_DBT,
    COLL_HD,
    COLL_DIRECT,
    COLL_HIER,
    COLL_PS,
    /* the algorithm with the least estimated time (coll_analytic_time, no contention) among
     * those that can run the spec; ties go to the earlier one in this list. Resolved by
     * coll_start and the coll_analytic_* calls (coll_fastest_choice). */
    COLL_FASTEST,
    /* the algorithm with the least estimated time under contention among those a collective
     * library runs (ring, tree, dbt, hd, direct, hier): every candidate costed over its
     * routes together with the concurrent collectives of the same op when the caller names
     * them (coll_estimate_choice); all-reduce, reduce-scatter and all-gather only, other ops
     * by the rule. Resolved like COLL_FASTEST. */
    COLL_ESTIMATE,
    /* the documented rule from size and topology (coll_auto_choice): what `auto` was before it
     * chose by estimated time (docs/collectives.md, "`rule`"). */
    COLL_RULE,
    COLL_ALGO_COUNT
} coll_algo;

const char *coll_op_name(coll_op op);
const char *coll_algo_name(coll_algo a);
int coll_op_parse(const char *s, coll_op *out);     /* DT_OK / DT_EINPUT */
int coll_algo_parse(const char *s, coll_algo *out);

typedef struct coll_spec {
    coll_op op;
    coll_algo algo;
    const int *group;  /* GPU indices, borrowed for the call; n >= 1 */
    int n;
    double bytes;      /* the nccl-tests "size": the full buffer per rank (all-gather: output) */
    int root;          /* index into group for broadcast/reduce; for sendrecv (n = 2) the
                          receiver, group[0] sending (0 means 1) */
    int servers;       /* ps: number of parameter servers (0 = one per host spanned) */
    double elem_bytes; /* element size: buffers are cut on element boundaries (0 = 2) */
    uint32_t tag;      /* coll_start: label of its transfers (net_set_tag), for link loads */
} coll_spec;

typedef struct coll_engine coll_engine;

/* How ring all-reduce / reduce-scatter / all-gather run over the network (docs/collectives.md,
 * "Ring models"):
 *   STEPS  the reference: 2(n-1) (all-reduce) or n-1 step transfers per ring edge, each
 *          waiting for the previous step (rendezvous), a reduction after each reduce-scatter
 *          step. 2(n-1)n flows per all-reduce.
 *   FLUID  the classic fluid treatment: the ring is a coupled flow over every edge's route
 *          (net_send_ring) carrying what each edge sends over the whole collective
 *          (2(n-1)/n S for an all-reduce) at one rate, the smallest max-min share along the
 *          ring (its edges move in lockstep, as the step model's steps wait for the slowest
 *          edge). It is sent as NET_ECMP_LANES such flows, one per ECMP lane, each with
 *          1/lanes of the bytes and max-min weight 1/lanes: spread over the equal-cost paths
 *          like the step model's lane rotation, competing with other traffic as one flow.
 *          Each lane flow runs in the ring's steps (net_send_ring_steps): a step lasts as long
 *          as its slowest edge, latency included, max over edges of (alpha_e + chunk /
 *          rate_e), the latency its bytes do not cover passing after its last byte. After the
 *          last lane: each receiver's reductions in one block on its reduction unit (with K
 *          chunks, one chunk's: the rest overlaps other chunks' transfers).
 *          Equal to the closed form (and to STEPS with one chunk) when uncontended. 4 flows
 *          and about 10 events per collective. n = 1, and ops other than these three, run as
 *          STEPS. Where it differs from STEPS: docs/collectives.md.
 *   AUTO   FLUID for groups of at least COLL_RING_FLUID_MIN ranks, for rings per rail
 *          (a group over hosts of g > 1 GPUs each, run as several rings: their step model
 *          costs the rings' count times 2(n-1)n flows) and for any ring with an edge of
 *          several equal-cost routes (through spines: the step model's per-step lane
 *          rotation made collisions between concurrent groups follow their step phase,
 *          docs/collectives.md "Ring models"); STEPS for a smaller ring whose every edge has
 *          one route.
 *   EXACT  FLUID where it gives STEPS' answer, STEPS elsewhere: groups of at least
 *          COLL_RING_FLUID_MIN ranks whose ring edges are link-disjoint on every ECMP lane
 *          (so every step transfer runs alone at its route's bottleneck) and that send one
 *          transfer per step (one chunk, or an all-gather: nothing to pipeline a reduction
 *          with). The two then differ only by rounding: STEPS rounds each step to a whole
 *          picosecond, FLUID the whole collective. `dtsim collective`'s default: it is what
 *          makes an 8,192-GPU ring take seconds. Costs 4 routes per edge to decide. */
typedef enum coll_ring_model {
    COLL_RING_STEPS,
    COLL_RING_FLUID,
    COLL_RING_AUTO,
    COLL_RING_EXACT,
    COLL_RING_MODEL_COUNT
} coll_ring_model;
#define COLL_RING_FLUID_MIN 64
const char *coll_ring_model_name(coll_ring_model m);
int coll_ring_model_parse(const char *s, coll_ring_model *out); /* DT_OK / DT_EINPUT */

/* Which collective library runs the collectives: the candidates `auto` chooses among
 * (docs/collectives.md, "`auto`: by estimated time among the library's algorithms").
 *   ANY   no library named (a generic or decentralised scenario, dtsim collective): every
 *         candidate of `estimate` (ring, tree, dbt, hd, direct, hier).
 *   NCCL  what NCCL's tuner chooses among (src/graph/tuning.cc, ncclTopoTuneModel: only
 *         all-reduce has algorithms other than the ring): all-reduce ring or tree;
 *         reduce-scatter, all-gather, broadcast, reduce ring; all-to-all and sendrecv its
 *         point-to-point sends (direct). The frameworks' presets (megatron, fsdp) run it. */
typedef enum coll_library { COLL_LIB_ANY, COLL_LIB_NCCL, COLL_LIB_COUNT } coll_library;
const char *coll_library_name(coll_library l);
int coll_library_parse(const char *s, coll_library *out); /* DT_OK / DT_EINPUT */

typedef struct coll_config {
    double reduce_bw;       /* B/s of reduction compute; <0 = from GPU spec; 0 = free. One
                               reduction unit per GPU, first come first served */
    double chunk_bytes;     /* pipelining chunk for ring/tree/dbt/chain (0 = 4 MiB) */
    coll_ring_model ring_model; /* ring algorithm's model; STEPS (0) unless set */
    int rings;              /* ring all-reduce/reduce-scatter/all-gather over a group spanning
                               hosts with g > 1 GPUs each: at most this many rings (NCCL's
                               channels), one per rail; 0 = g (capped at COLL_MAX_RINGS), 1 =
                               one ring (docs/collectives.md, "Rings per rail") */
    coll_library library;       /* whose algorithms `auto` chooses among; ANY (0) unless set */
} coll_config;

/* Most rings (channels) a host-spanning ring collective runs (NCCL: 32 channels at most). */
#define COLL_MAX_RINGS 16

coll_engine *coll_create(net *n, sim_engine *eng, topo *t, const coll_config *cfg);
void coll_destroy(coll_engine *c);

/* Start now; fire (done_kind, done_id, done_data) when every rank has finished.
 * Returns DT_EINPUT with err filled for impossible requests (empty group, a GPU twice or out of
 * range, bad root, an op the algorithm does not run); nothing is scheduled then. */
int coll_start(coll_engine *c, const coll_spec *spec, uint32_t done_kind, uint32_t done_id,
               uint64_t done_data, dt_error *err);

/* What `fastest` picks: the concrete algorithm (ring .. ps) with the least analytic time for
 * the spec, or DT_EINPUT with err filled when none can run it (auto's error). */
struct coll_analytic;
int coll_fastest_choice(struct coll_analytic *a, const coll_spec *spec, coll_algo *out,
                        dt_error *err);

/* What `estimate` picks (docs/collectives.md, "`estimate`: by estimated time under
 * contention"). concurrent: m groups of spec->n GPUs each, one after the other, the
 * collectives of spec->op that run at the same time as this one, spec->group among them
 * (borrowed for the call); NULL or m <= 1, or a set without spec->group: the collective alone.
 * Every candidate (ring, tree, dbt, hd, direct, hier: what the `rule` can pick) that can
 * run every group is costed with all m programs loading the links at once, lock-step
 * programs' transfers each whole on one ECMP lane (as a flow takes one), rings and
 * pipelines spread over the lanes (as they run); the time is the slowest group's; the least
 * wins, ties to the earlier candidate. Ops other than all-reduce, reduce-scatter and
 * all-gather, and groups of one GPU, get the rule's choice (coll_auto_choice); sendrecv direct.
 * Cost: O(m x program size) route look-ups per candidate, its walk cached in the analytic
 * object per (op, candidate, set) as latency + per-byte; lock-step candidates (hd, direct,
 * hier) are walked bounded by the best so far and stop once they cannot win. Callers that ask
 * often memoise the choice (run.c does, per op, group size and bytes). DT_OK, or DT_EINPUT with err filled
 * when no candidate runs the spec (auto's error). */
int coll_estimate_choice(struct coll_analytic *a, const coll_spec *spec, const int *concurrent,
                         int m, coll_algo *out, dt_error *err);

/* The time coll_estimate_choice gives spec->algo (a concrete algorithm, ring .. ps) over the
 * same concurrent set: the slowest group's. DT_EINPUT with err filled for auto, fastest,
 * estimate, sendrecv, or an algorithm that cannot run a group. */
int coll_estimate_time(struct coll_analytic *a, const coll_spec *spec, const int *concurrent,
                       int m, sim_time_t *time, dt_error *err);

/* What `auto` picks: as coll_estimate_choice (same concurrent set, same costs, ties to the
 * earlier candidate), among the candidates of the analytic object's coll_config.library
 * (coll_library above); a library with one algorithm for the op (NCCL's reduce-scatter:
 * ring) costs nothing. Ops the estimate does not cost get the library's algorithm (NCCL) or
 * the rule's (ANY). DT_OK, or DT_EINPUT with err filled when nothing runs the spec. */
int coll_auto_pick(struct coll_analytic *a, const coll_spec *spec, const int *concurrent, int m,
                   coll_algo *out, dt_error *err);

/* The documented rule (`rule`; `auto` before it chose by estimated time) for this spec on
 * this topology: from size, group size and hosts only. */
coll_algo coll_auto_choice(const topo *t, const coll_spec *spec);

/* Bus bandwidth factor (nccl-tests): busbw = algbw * factor. all-reduce 2(n-1)/n;
 * reduce-scatter, all-gather, all-to-all (n-1)/n; broadcast, reduce, sendrecv 1. */
double coll_busbw_factor(coll_op op, int n);

/* ---- one collective alone, start to finish (CLI, tests, benchmarks) ---- */

typedef struct coll_result {
    sim_time_t time;    /* simulated duration */
    coll_algo algo;     /* the algorithm that ran (auto resolved) */
    uint64_t events;    /* events the engine handled */
    net_stats net;
    int ring_model;     /* COLL_RING_STEPS or COLL_RING_FLUID for a ring collective that ran as
                           such, -1 for other programs */
} coll_result;

/* Build an engine, network and collective engine on t, run spec alone from time 0, tear
 * down. DT_EINPUT (err filled) for impossible requests. t is only borrowed. */
int coll_simulate(topo *t, const coll_spec *spec, const coll_config *cc, const net_config *nc,
                  coll_result *out, dt_error *err);

/* ---- analytic time: alpha-beta cost of a spec on this topology (no contention) ----
 *
 * What `--network analytic` charges for a collective in a training step (dtsim run), and
 * `analytic_time_s` of dtsim collective --json: the algorithm coll_start would run (same
 * validation, auto resolved by coll_auto_pick, same chunk and reduce_bw), its step program
 * walked once without the engine, every transfer's bytes put on the links of its route (spread
 * evenly over the pair's NET_ECMP_LANES lanes, net_route_lane), a = route latency:
 *   ring (allreduce, reduce_scatter, allgather): over the ring's edges in coll_ring's order,
 *        max(steps x a of the edges crossing the busiest link + edge bytes / its bandwidth,
 *        max over edges of steps x a_e + the time the edge's own busiest link needs) - every
 *        step as long as its slowest edge, latency included, as the fluid ring charges it -
 *        plus the receivers' reductions as the fluid ring charges them (all with one chunk,
 *        one chunk's with more);
 *   hd, hier, direct, ps, sendrecv: lock step - per step index, max a + the busiest link's
 *        load / bandwidth over all the step's transfers + the slowest rank's reduction;
 *   tree, dbt, ring broadcast/reduce: per tree, the first chunk's trip (up then down) plus
 *        (chunks - 1) x the slowest stage with every edge carrying a chunk at once.
 * Equal to the flow simulation of the spec alone within rounding where the program's
 * transfers are uniform (test_coll_analytic.c; deviations measured: docs/collectives.md,
 * "Analytic time"). Leaves out contention with anything else on the network.
 *
 * Ownership: coll_analytic_create borrows net and topo (they must outlive it; net for routes
 * only, its state untouched). Results are cached (per spec; for ring and lock-step programs
 * also per group and algorithm as latency + per-byte cost), bounded in size. Not thread-safe:
 * one per simulation. */
typedef struct coll_analytic coll_analytic;
coll_analytic *coll_analytic_create(net *n, topo *t, const coll_config *cfg);
void coll_analytic_destroy(coll_analytic *a);
/* DT_OK with *time (and *algo, what runs, when non-NULL); DT_EINPUT with err filled for what
 * coll_start rejects. */
int coll_analytic_time(coll_analytic *a, const coll_spec *spec, sim_time_t *time,
                       coll_algo *algo, dt_error *err);

/* The link loads behind coll_analytic_time: every transfer of the program the spec runs (ring:
 * each edge's bytes over the whole collective; others: every send of every step; sendrecv: one
 * route) put on its route's links, spread evenly over the pair's NET_ECMP_LANES lanes as
 * coll_analytic_time spreads them (sendrecv: lane 0, as it costs it). fn is called once per
 * loaded link with its bytes. For link-load reports of traffic that is not run as flows. DT_OK,
 * or DT_EINPUT with err filled for what coll_start rejects. */
typedef void (*coll_load_fn)(void *ctx, int link, double bytes);
int coll_analytic_loads(coll_analytic *a, const coll_spec *spec, coll_load_fn fn, void *ctx,
                        dt_error *err);

/* Bytes the spec's ranks send in all, over the program it runs (what coll_start would run):
 * ring all-reduce 2(n-1)/n S per rank, hence 2(n-1) S in all, and so on for every algorithm,
 * counted from its steps (sendrecv: S). The walk is cached per (op, algorithm that runs, n,
 * streams, root, servers, element size, hosts spanned and largest ranks per host) as bytes
 * per byte of size. DT_OK, or DT_EINPUT with err filled as coll_start. */
int coll_analytic_bytes(coll_analytic *a, const coll_spec *spec, double *sent, dt_error *err);

/* ---- closed forms (alpha-beta; test oracles, docs/collectives.md) ----
 * alpha: per-transfer latency (s), bw: per-GPU link bandwidth (B/s), reduction free.
 * Returns NAN where no closed form is documented for (op, algo):
 *   ring   allreduce 2(n-1) a + 2(n-1)/n S/B; reduce_scatter, allgather (n-1) a + (n-1)/n S/B
 *   hd     allreduce, n = 2^k: 2k a + 2(n-1)/n S/B; other n with p = 2^floor(log2 n):
 *          2 log2(p) a + 2(p-1)/p S/B + 2(a + S/B); reduce_scatter/allgather k a + (n-1)/n S/B
 *   direct alltoall, allgather, reduce_scatter on a non-blocking switch: a + (n-1)/n S/B
 */
double coll_closed_form(coll_op op, coll_algo algo, int n, double bytes, double alpha, double bw);
/* Pipeline of `stages` equal stages, `chunks` chunks of S/chunks bytes, each stage costing
 * a + fanout * chunk / B (a node sending to `fanout` children shares its link):
 * (stages + chunks - 1) (a + fanout S / (chunks B)). Tree broadcast on a switch with a
 * complete binary tree: stages = depth, fanout 2; chain: stages n-1, fanout 1. */
double coll_closed_form_pipeline(int stages, int chunks, int fanout, double bytes, double alpha,
                                 double bw);
/* Hierarchical all-reduce, g GPUs per host, h hosts (coll_hier.c):
 * 2(g-1) a_in + 2(g-1)/g S/B_in + 2(h-1) a_out + 2(h-1)/h S/(g B_out). */
double coll_closed_form_hier(int g, int h, double bytes, double alpha_in, double bw_in,
                             double alpha_out, double bw_out);
/* Ring all-reduce, reduce-scatter or all-gather over h hosts of g > 1 GPUs as coll_ring runs
 * it (docs/collectives.md, "Rings per rail"): g rings side by side, each carrying S/g, each
 * crossing every host boundary through its own GPU's NIC (B_out) and g-1 of a host's g GPUs
 * forwarding it over their intra-host link (B_in, which g-1 rings share):
 * steps a + f (n-1)/n S / (g min(B_out, B_in/(g-1))), n = g h, f = 2 and steps 2(n-1) for
 * allreduce, f = 1 and steps n-1 otherwise; a the slowest edge's path latency. */
double coll_closed_form_rails(coll_op op, int g, int h, double bytes, double alpha, double bw_in,
                              double bw_out);

#endif
