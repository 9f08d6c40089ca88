/* coll.h - collective operations as programs of point-to-point steps over the network.
 *
 * Each algorithm turns (op, group, bytes) into per-rank step lists (send to peer, receive from
 * peer, reduce locally) with dependencies; the collective engine runs them over net_send(), so
 * contention between steps and with other traffic is real. Closed forms live in
 * coll_cost_analytic() for tests and the analytic mode.
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
    COLL_AUTO,
    COLL_RING,
    COLL_TREE,
    COLL_DBT,
    COLL_HD,
    COLL_DIRECT,
    COLL_HIER,
    COLL_PS,
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
    int root;          /* index into group for broadcast/reduce; peer for send/recv */
    int servers;       /* ps: number of parameter servers (0 = default) */
    double elem_bytes; /* element size for reductions (default 2) */
} coll_spec;

typedef struct coll_engine coll_engine;

typedef struct coll_config {
    double reduce_bw;       /* B/s of reduction compute; <0 = from GPU spec; 0 = free */
    double chunk_bytes;     /* pipelining chunk for ring/tree (0 = default) */
} coll_config;

coll_engine *coll_create(net *n, sim_engine *eng, topo *t, const coll_config *cfg);
void coll_destroy(coll_engine *c);

/* Start now; fire (done_kind, done_id, done_data) when every rank has finished.
 * Returns DT_EINPUT with err filled for impossible requests (empty group, bad root). */
int coll_start(coll_engine *c, const coll_spec *spec, uint32_t done_kind, uint32_t done_id,
               uint64_t done_data, dt_error *err);

/* Which algorithm `auto` picks for this spec on this topology. */
coll_algo coll_auto_choice(const topo *t, const coll_spec *spec);

/* Bus bandwidth factor (nccl-tests): busbw = algbw * factor. */
double coll_busbw_factor(coll_op op, int n);

#endif
