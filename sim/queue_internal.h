/* queue_internal.h - the radix heap's layout and its fast paths, shared by queue.c (the public
 * sim_queue_* calls) and engine.c (which inlines push, peek and pop into its loop: the calls
 * cost about a tenth of the engine's time per event otherwise). Private to sim/.
 * The structure and its reasoning are described at the top of queue.c.
 */
#ifndef DTSIM_QUEUE_INTERNAL_H
#define DTSIM_QUEUE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dtsim/sim.h"

#define SIMQ_BUCKETS 65

typedef struct simq_bucket {
    sim_event *ev;
    size_t len, cap;
} simq_bucket;

struct sim_queue {
    simq_bucket b[SIMQ_BUCKETS];
    size_t head;       /* next event to pop in b[0] */
    uint64_t nonempty; /* bit k set when b[k + 1] holds events */
    uint64_t last;     /* key of b[0]'s events; <= every key present */
    size_t n;
    uint64_t next_seq;
    sim_event *scratch; /* for rebuilds */
    size_t scratch_cap;
};

/* Out of line (queue.c): the rare paths. */
void simq_grow(simq_bucket *b);
void simq_settle(sim_queue *q);
void simq_rebuild(sim_queue *q, uint64_t new_last);

static inline uint64_t simq_key(sim_time_t t) { return (uint64_t)t ^ (UINT64_C(1) << 63); }

static inline unsigned simq_bucket_of(uint64_t key, uint64_t last)
{
    uint64_t x = key ^ last;
    return x ? 64u - (unsigned)__builtin_clzll(x) : 0u;
}

static inline void simq_append(sim_queue *q, unsigned bi, const sim_event *ev)
{
    simq_bucket *b = &q->b[bi];
    if (b->len == b->cap) simq_grow(b);
    b->ev[b->len++] = *ev;
    if (bi) q->nonempty |= UINT64_C(1) << (bi - 1);
}

static inline void simq_push(sim_queue *q, sim_event ev)
{
    ev.seq = q->next_seq++;
    uint64_t k = simq_key(ev.time);
    if (q->n == 0) {
        q->b[0].len = q->head = 0;
        q->last = k;
    } else if (k < q->last) {
        simq_rebuild(q, k);
    }
    simq_append(q, simq_bucket_of(k, q->last), &ev);
    q->n++;
}

/* The least event (settling first if bucket 0 is used up), or NULL when empty. Borrowed until
 * the next push or pop. */
static inline const sim_event *simq_peek(sim_queue *q)
{
    if (q->n == 0) return NULL;
    if (q->head == q->b[0].len) simq_settle(q);
    return &q->b[0].ev[q->head];
}

static inline bool simq_pop(sim_queue *q, sim_event *out)
{
    if (q->n == 0) return false;
    simq_bucket *b0 = &q->b[0];
    if (q->head == b0->len) simq_settle(q);
    *out = b0->ev[q->head++];
    q->n--;
    /* Reset at once so a long run of equal-time events reuses the front of bucket 0. */
    if (q->head == b0->len) b0->len = q->head = 0;
    return true;
}

#endif
