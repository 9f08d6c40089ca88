/* coll_internal.h - how an algorithm describes its step program to the collective engine.
 *
 * Private to models/coll*.c and their tests. An algorithm is a builder that fills a coll_prog:
 * the number of streams per rank and two callbacks that describe, lazily, step `s` of stream
 * `k` on rank `r`. Nothing is materialised: a 1,024-rank ring all-reduce has two million steps
 * and the engine asks for each one only when the stream reaches it.
 *
 * Semantics the engine implements (coll.c):
 *  - A rank runs its streams concurrently; the steps of one stream run in order.
 *  - A step may wait for a step of another stream of the same rank (dep_stream/dep_step), or
 *    for all streams of the rank (dep_stream = COLL_DEP_ALL) to have completed dep_step.
 *  - At its start a step posts its sends. Each names the receiving (rank, stream, step). A
 *    transfer starts when both sides have started the matching steps (rendezvous: a sender
 *    never pushes into a receiver that has not reached the step, as with NCCL's credits).
 *  - A step completes when all its sends have arrived, its n_recvs messages have arrived and
 *    then its reduction (reduce_bytes at the GPU's reduce bandwidth) has run.
 *  - The collective is done when every stream of every rank has run all its steps.
 */
#ifndef DTSIM_COLL_INTERNAL_H
#define DTSIM_COLL_INTERNAL_H

#include <stdint.h>

#include "dtsim/coll.h"

#define COLL_DEP_NONE (-1)
#define COLL_DEP_ALL (-2)

typedef struct coll_send {
    int peer;   /* rank (index into the group) */
    int stream; /* the peer's stream */
    int step;   /* the peer's step */
    double bytes;
} coll_send;

typedef struct coll_step {
    int n_sends;
    coll_send *sends; /* engine-owned buffer with room for n (group size) sends */
    int n_recvs;
    double reduce_bytes;
    int dep_stream; /* COLL_DEP_NONE, COLL_DEP_ALL or a stream of this rank */
    int dep_step;
} coll_step;

/* What else a program is, beyond its steps, for the two consumers that run it without the step
 * engine: the fluid ring model (coll.c) and the analytic mode (coll_analytic.c). The builder
 * says so; neither consumer knows which algorithm built the program. */
typedef enum coll_form {
    COLL_FORM_STEPS, /* only a step program (costed lock-step by the analytic mode) */
    COLL_FORM_RING,  /* a ring of edges in lock-step: ring_edges and ring_steps are set */
    COLL_FORM_PIPE   /* pipelined trees, 4 streams per tree (coll_build_pipe) */
} coll_form;

typedef struct coll_prog coll_prog;
struct coll_prog {
    /* filled by coll.c before the builder runs */
    coll_op op;
    int n;
    double bytes;
    double elem;
    int root;
    int servers;
    double chunk;
    int max_rings;   /* coll_config.rings: 0 = one ring per rail */
    const int *gpus; /* group -> GPU index */
    topo *t;
    /* filled by the builder */
    int n_streams;
    int (*n_steps)(const coll_prog *p, int rank, int stream);
    /* Fill *out (sends buffer and defaults preset: no sends, no recvs, no dep). */
    void (*step)(const coll_prog *p, int rank, int stream, int step, coll_step *out);
    coll_form form; /* COLL_FORM_STEPS unless the builder says otherwise */
    /* COLL_FORM_RING only. The program is `rings` rings of n edges run side by side (NCCL's
     * channels, each on its own rail across hosts: coll_ring.c). For ring r and position q
     * (arrays of rings x n, caller-allocated, ring r's edges at [r*n, r*n + n)), the edge
     * q -> q+1: sender and receiver ranks, the bytes sent over the whole collective, the bytes
     * the receiver reduces; and the steps per stream, whose latencies the fluid model charges. */
    int rings;
    void (*ring_edges)(const coll_prog *p, int *src, int *dst, double *bytes, double *reduce_bytes);
    int (*ring_steps)(const coll_prog *p);
    void *data; /* builder-owned, freed with free() by the engine */
    int i[8];   /* small integer parameters for the builder's own use */
    double d[4];
};

/* Validate spec (DT_EINPUT with err filled, as coll_start documents), resolve `rule` (and
 * `auto`, which the public entry points resolve by estimate before they get here, and which
 * only reaches this as the error path of a spec nothing runs) by coll_auto_choice (sendrecv
 * always runs as direct) and run the algorithm's builder with
 * cfg's chunk. On DT_OK *p is ready (p->gpus borrows spec->group, p->data is the caller's to
 * free()) and *algo names what runs; coll_start and coll_analytic_time share it, so both
 * resolve and validate a spec the same way. */
int coll_prepare(topo *t, const coll_config *cfg, const coll_spec *spec, coll_prog *p,
                 coll_algo *algo, dt_error *err);

/* Builders: DT_OK, or DT_EINPUT with a message when the algorithm cannot run this op/group.
 * The engine reaches them only through its table (coll.c), indexed by coll_algo. */
typedef int (*coll_builder)(coll_prog *p, dt_error *err);
int coll_build_ring(coll_prog *p, dt_error *err);
int coll_build_tree(coll_prog *p, dt_error *err);
int coll_build_dbt(coll_prog *p, dt_error *err);
int coll_build_hd(coll_prog *p, dt_error *err);
int coll_build_direct(coll_prog *p, dt_error *err);
int coll_build_hier(coll_prog *p, dt_error *err);
int coll_build_ps(coll_prog *p, dt_error *err);

/* Pipelined trees (coll_tree.c), shared by ring (chain) broadcast/reduce, tree and dbt:
 * shape COLL_SHAPE_CHAIN or COLL_SHAPE_HEAP (binary), `trees` = 1 or 2 (the second mirrors the
 * first so that inner ranks of one are leaves of the other); each tree carries 1/trees of the
 * data cut into chunks of p->chunk. Supports broadcast, reduce and allreduce. Sets form
 * COLL_FORM_PIPE. */
enum { COLL_SHAPE_CHAIN, COLL_SHAPE_HEAP };
int coll_build_pipe(coll_prog *p, int shape, int trees, dt_error *err);

/* Bytes of part i when `bytes` is cut into n parts on element boundaries (elem bytes each):
 * parts differ by at most one element, the last absorbs a partial element; they sum to bytes. */
double coll_part(double bytes, double elem, int n, int i);
/* Bytes of parts [a, b) together. */
double coll_parts(double bytes, double elem, int n, int a, int b);

/* The reductions a ring program (COLL_FORM_RING) exposes, as the fluid ring and the analytic
 * time charge them: given ring_edges' receivers dst and reduce bytes red (rings x n), rewrites
 * red so that each rank's receiving edge in ring 0 holds what that rank exposes and every other
 * edge 0. Per ring with Kc chunks (streams): Kc = 1 exposes every reduction (each step forwards
 * what it just reduced), Kc > 1 about one chunk's (the other chunks' transfers cover the rest,
 * reduction being far faster than a link); rings run side by side, so a rank exposes its
 * slowest ring's (the step model's rings stagger on the rank's reduction unit). coll_ring.c. */
void coll_ring_exposed_reduction(const coll_prog *p, const int *dst, double *red);

/* Whether `auto` (COLL_RING_AUTO) runs this ring program (COLL_FORM_RING) as the fluid ring:
 * groups of at least COLL_RING_FLUID_MIN ranks, rings per rail (p->rings > 1) of any size, and
 * any ring with an edge of several equal-cost routes on nw (net_pair_multipath; its steps'
 * lane rotation made concurrent rings' collisions on the spines follow their phase:
 * docs/collectives.md, "Ring models"; nw NULL: not tested, such rings stay steps).
 * The step model costs 2(n-1)n flows per ring, and R rings per rail R times that: a 32-GPU
 * data-parallel all-reduce over 4 DGX boxes runs 8 rings, 15,872 flows per bucket, where the
 * fluid ring sends 32 (the stragglers lab: 1.6 M events a step against 1.7 k). What fluid
 * changes for such rings, and by how much, is in docs/collectives.md ("Ring models"). The
 * engine (coll.c use_fluid) and the estimate (coll_analytic.c) both ask here, so that `auto`
 * costs each ring as it will run. coll.c. */
int coll_ring_auto_fluid(net *nw, const coll_prog *p);

/* Default pipelining chunk (bytes) for tree, dbt and chain broadcasts/reductions. */
#define COLL_DEFAULT_CHUNK (4.0 * 1048576.0)
/* Most chunks (streams) a ring all-reduce splits into. */
#define COLL_MAX_RING_CHUNKS 16
/* Most chunks a pipelined tree/chain splits into (bounds events per collective). */
#define COLL_MAX_PIPE_CHUNKS 256

#endif
