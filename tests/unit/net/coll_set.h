/* coll_set.h - m collectives started at one instant in flow mode, as a training step's phase
 * starts its data-parallel groups: shared by test_coll_estimate.c and bench_estimate.c, which
 * hold the estimate against it. No Check: the benchmark includes it too.
 *
 * step_cc is a training step's collective configuration (run.c): the GPU's reduction cost,
 * one chunk, the ring model auto. */
#ifndef DTSIM_COLL_SET_H
#define DTSIM_COLL_SET_H

#include "dtsim/coll.h"
#include "dtsim/net.h"
#include "dtsim/topo.h"

static const coll_config step_cc = {.reduce_bw = -1, .chunk_bytes = 1e18,
                                    .ring_model = COLL_RING_AUTO};

typedef struct set_done {
    int left;
    sim_time_t at;
} set_done;

static inline void on_set(void *model, sim_engine *eng, const sim_event *ev)
{
    (void)eng;
    set_done *d = model;
    if (--d->left == 0) d->at = ev->time;
}

/* Flow time of m groups of n (gs[i n .. i n + n)) running (op, algo) on S bytes from the same
 * instant: the last to finish; -1 when the algorithm cannot run them. */
static inline double flow_set(topo *t, coll_op op, coll_algo algo, const int *gs, int m, int n,
                              double S)
{
    sim_engine *e = sim_engine_create();
    net_config nc = {.mode = NET_FLOW};
    net *nw = net_create(t, e, &nc);
    coll_engine *ce = coll_create(nw, e, t, &step_cc);
    set_done d = {m, 0};
    uint32_t k = sim_kind_register(e, "coll_set.done", on_set, &d);
    dt_error err;
    dt_error_clear(&err);
    int ok = 1;
    for (int i = 0; i < m && ok; i++) {
        coll_spec s = {.op = op, .algo = algo, .group = gs + (size_t)i * n, .n = n, .bytes = S,
                       .elem_bytes = 2};
        ok = coll_start(ce, &s, k, (uint32_t)i, 0, &err) == DT_OK;
    }
    if (ok) sim_run(e, SIM_TIME_MAX);
    coll_destroy(ce);
    net_destroy(nw);
    sim_engine_destroy(e);
    return ok ? sim_time_to_s(d.at) : -1;
}

#endif
