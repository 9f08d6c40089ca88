/* sim.h - the discrete-event core: events, the pending-event queue, the engine loop.
 *
 * Ground floor of dtsim: includes nothing of ours but error.h/simtime.h and knows nothing of
 * GPUs or links. Models register one handler per event kind and schedule small plain-data
 * events: (time, kind, id, data). Payloads carry ids, never pointers, so events can be copied,
 * logged and compared.
 *
 * Ordering: events fire in (time, seq) order, seq being the order in which they were
 * scheduled. Ties therefore break first-in first-out, identically on every run.
 *
 * Memory: the queue stores events by value in a few growable arrays (a radix heap, see
 * sim/queue.c); scheduling allocates only when one must grow (amortised, never per event in
 * steady state).
 *
 * Cancellation is lazy: a model that must move an event (a flow whose finish time changed)
 * bumps a version number it keeps and puts the version in `data`; the stale event is then
 * ignored by its handler. That costs one wasted pop per change and keeps the queue simple.
 */
#ifndef DTSIM_SIM_H
#define DTSIM_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dtsim/simtime.h"

typedef struct sim_event {
    sim_time_t time;
    uint64_t seq;
    uint32_t kind; /* handler index, from sim_kind_register() */
    uint32_t id;   /* target entity (flow, GPU, op ...) */
    uint64_t data; /* model-defined payload (version, step number ...) */
} sim_event;

/* ---- pending-event queue (usable alone, e.g. by benchmarks) ---- */

typedef struct sim_queue sim_queue;

sim_queue *sim_queue_create(size_t initial_capacity);
void sim_queue_destroy(sim_queue *q);
/* Assigns ev->seq from the queue's counter; the stored copy is what pops. */
void sim_queue_push(sim_queue *q, sim_event ev);
/* Removes the least (time, seq) event into *out; returns false when empty. */
bool sim_queue_pop(sim_queue *q, sim_event *out);
/* The least event, or NULL when empty; borrowed, valid until the next push or pop.
 * Cost note: pushes are cheapest at times >= the last popped (or peeked) event's time, which is
 * what the engine guarantees; an earlier push is correct but re-sorts the queue, O(size). */
const sim_event *sim_queue_peek(const sim_queue *q);
size_t sim_queue_size(const sim_queue *q);

/* ---- engine ---- */

typedef struct sim_engine sim_engine;
typedef void (*sim_handler_fn)(void *model, sim_engine *eng, const sim_event *ev);

#define SIM_MAX_KINDS 64

sim_engine *sim_engine_create(void);
void sim_engine_destroy(sim_engine *eng);

/* Register a handler; returns its kind number. The model pointer and the name are borrowed:
 * they must outlive the engine (a string literal for the name). Aborts past SIM_MAX_KINDS (a
 * programming error). */
uint32_t sim_kind_register(sim_engine *eng, const char *name, sim_handler_fn fn, void *model);
const char *sim_kind_name(const sim_engine *eng, uint32_t kind);

/* Schedule at absolute time `at` (>= now, else abort: causality is an invariant). */
void sim_schedule(sim_engine *eng, sim_time_t at, uint32_t kind, uint32_t id, uint64_t data);
/* now + delay, saturating at SIM_TIME_MAX ("never" in practice) instead of overflowing. */
static inline void sim_schedule_in(sim_engine *eng, sim_time_t now, sim_time_t delay,
                                   uint32_t kind, uint32_t id, uint64_t data)
{
    sim_schedule(eng, now > 0 && delay > SIM_TIME_MAX - now ? SIM_TIME_MAX : now + delay, kind, id,
                 data);
}

sim_time_t sim_now(const sim_engine *eng);

/* Call kind's handler now, from inside another handler, with an event at the current time: what
 * popping an event scheduled for now would do, without the queue. For a model that holds a
 * run of events it knows to be consecutive in (time, sequence) order (the network's batched
 * deliveries) and hands them out in that order. Counts as a handled event. A sim_stop() from
 * the handler takes effect when the outermost handler returns. */
void sim_dispatch(sim_engine *eng, uint32_t kind, uint32_t id, uint64_t data);

/* Run until the queue is empty, sim_stop() is called, or the next event is past `until`
 * (SIM_TIME_MAX for no limit). Returns the number of events handled by this call. Events at
 * exactly `until` are handled; `now` stays at the last handled event's time. Not reentrant:
 * calling it from a handler aborts. */
uint64_t sim_run(sim_engine *eng, sim_time_t until);
void sim_stop(sim_engine *eng);
uint64_t sim_events_handled(const sim_engine *eng);
size_t sim_pending(const sim_engine *eng);

/* ---- deterministic random streams (GSL) ---- */

/* One stream per purpose: the stream's seed is a hash of (run seed, name), so adding draws to
 * one stream never shifts another. Generator: gsl_rng_mt19937 (named, not the env default). */
typedef struct sim_rng sim_rng;

sim_rng *sim_rng_create(uint64_t seed, const char *stream_name);
void sim_rng_destroy(sim_rng *r);
double sim_rng_uniform(sim_rng *r);                  /* [0, 1) */
uint64_t sim_rng_uniform_int(sim_rng *r, uint64_t n); /* [0, n), n >= 1 */
double sim_rng_exponential(sim_rng *r, double mean);
double sim_rng_normal(sim_rng *r, double mean, double sigma);
double sim_rng_lognormal(sim_rng *r, double zeta, double sigma);
/* The underlying gsl_rng* (as void* to keep GSL out of this header). */
void *sim_rng_gsl(sim_rng *r);
/* The 64-bit stream seed derived from (seed, name); exposed for tests and logs. */
uint64_t sim_rng_stream_seed(uint64_t seed, const char *stream_name);

#endif
