/* traffic.h - what a step's communication moves, read off its op graph without the engine:
 * bytes sent by all GPUs per kind of communication (wl_comm_kind), and the link loads of the
 * traffic the flow network does not carry itself (the collectives inside compute ops, TP, in
 * both network modes; every collective, send and CP ring send in analytic mode).
 *
 * Private to models/workload (run.c). Both walk the graph once and cost each collective by the
 * program the simulation runs for it (coll_analytic_bytes, coll_analytic_loads: the algorithm
 * options.dp_algorithm names, falling back to auto as the run does; in-lane collectives auto).
 * Nothing is allocated beyond per-instance participant lists and per-lane sums.
 */
#ifndef DTSIM_TRAFFIC_H
#define DTSIM_TRAFFIC_H

#include <stdbool.h>

#include "dtsim/coll.h"
#include "dtsim/workload.h"

/* The step's concurrent collectives, for options.dp_algorithm "auto" and "estimate": per (op, group
 * size), every distinct group that a collective instance of the graph runs over (the k-th
 * GPUs of its participating lanes: the data-parallel groups of every tensor-parallel rank and
 * pipeline stage). A step's data-parallel collectives of one op and size run in its last
 * microbatches' backward passes, the groups of one instance at the same instant and those of
 * other stages overlapping them, so coll_estimate_choice costs each candidate with all of
 * them on the links at once (an upper bound on the contention a group meets). Owns its
 * arrays; borrows nothing after create. */
typedef struct traffic_phases traffic_phases;
traffic_phases *traffic_phases_create(const wl_graph *g);
void traffic_phases_destroy(traffic_phases *P);
/* What "auto" (spec->algo COLL_AUTO: coll_auto_pick, the library's candidates) or "estimate"
 * (any other: coll_estimate_choice) runs for spec (cross-lane), with the phase of (spec->op,
 * spec->n) as the concurrent set, memoised per (phase, bytes, algo asked); a group outside
 * every phase (a backup-worker quorum) is costed alone, not memoised. P NULL: alone. DT_OK
 * or the choice's error. */
int traffic_phases_choice(traffic_phases *P, coll_analytic *an, const coll_spec *spec,
                          coll_algo *out, dt_error *err);

typedef struct traffic_env {
    topo *t;
    coll_analytic *an;  /* borrowed; its cache is shared with the run's analytic costs */
    coll_algo algo;     /* algorithm of cross-lane collectives (options.dp_algorithm) */
    int servers;        /* options.ps_servers (0 = coll_ps's default) */
    double elem_bytes;
    traffic_phases *phases; /* "auto", "estimate": the run's choices (borrowed; NULL: alone) */
} traffic_env;

/* Bytes all GPUs send in one step, per kind (sent[k] for wl_comm_kind k; sends count their
 * bytes once per lane member, a collective what its program sends over all its ranks). */
void traffic_bytes(const wl_graph *g, const traffic_env *e, double sent[WL_COMM_KIND_COUNT]);

/* Link loads: fn(ctx, link, bytes, tag) per loaded link of each collective, tag REPLAY_TAG
 * (replay.h) of the op (in-lane: REPLAY_TAG_INLANE). In-lane collectives always, summed per
 * lane and op over the step; collectives, sends and the CP ring's sends too when `all`
 * (analytic mode: flow mode runs them as flows). */
typedef void (*traffic_load_fn)(void *ctx, int link, double bytes, uint32_t tag);
void traffic_loads(const wl_graph *g, const traffic_env *e, bool all, traffic_load_fn fn,
                   void *ctx);

#endif
