/* queue.c - pending events in a radix heap ordered by (time, seq).
 *
 * Why a radix heap: measured against binary, 4-ary, 8-ary heaps (textbook, branch-free, keys
 * split from payloads, indexed) and a pairing heap on the hold model (tests/bench/bench_hold.c,
 * figures in docs/architecture.md "Event core"), it was 2-3x faster than the best heap at
 * N = 1e5 and 1e6 pending events. A heap's pop is a root-to-leaf chain of dependent loads with a
 * coin-toss branch per level; past the first levels each load misses L1 and the chain stalls.
 * The radix heap touches memory in sequential scans only.
 *
 * It needs monotone keys, which a simulator has: the engine never schedules before now.
 *
 * Structure. Keys are times mapped to uint64 (sign bit flipped, so order is kept). `last` is a
 * lower bound of every key present; after a settle it is the least key. Bucket 0 holds events
 * whose key == last, served first-in first-out from `head`; bucket b >= 1 holds events whose
 * key differs from last first at bit b-1 (counting from 0). Pop serves bucket 0; when bucket 0
 * is empty, settle() takes the lowest non-empty bucket (a 64-bit mask and one ctz), makes its
 * least key the new last and re-distributes it into lower buckets, in order. Buckets above it
 * need no change: their keys differ from the new last at the same bit as from the old one.
 *
 * Ties. Events with equal keys are always in the same bucket (bucket = f(key, last)) and every
 * append and re-distribution keeps their relative order, so equal times pop in push order, which
 * is seq order: first-in first-out, the same on every run.
 *
 * Costs. Push O(1): one xor, one clz, one append. Pop amortised O(log range): an event moves
 * down at most 64 buckets over its life, in the hold model at N = 1e5 a few times. Memory: each
 * bucket keeps its high-water capacity (no allocation once warm); the worst case is 65 buckets
 * each as large as the queue, in practice 2.5-4x the largest queue. A push earlier than
 * `last` (never from the engine, whose pushes are >= now and now == last popped key; possible
 * after a peek advanced `last` to a later pending event, e.g. sim_run(until) returning, or from
 * direct users of this queue) rebuilds all buckets against the new key: O(n), correct, slow if
 * done often. A larger scale would want a ladder queue; at ours this is simpler and faster.
 */
#include <stdlib.h>
#include <string.h>

#include "dtsim/error.h"
#include "dtsim/sim.h"
#include "queue_internal.h"

void simq_grow(simq_bucket *b)
{
    b->cap = b->cap ? 2 * b->cap : 64;
    b->ev = dt_xrealloc(b->ev, b->cap * sizeof *b->ev);
}

sim_queue *sim_queue_create(size_t initial_capacity)
{
    sim_queue *q = dt_xcalloc(1, sizeof *q);
    /* Where events will sit is unknown up front; reserve the hint for bucket 0, the one every
     * event passes through. */
    if (initial_capacity) {
        q->b[0].cap = initial_capacity;
        q->b[0].ev = dt_xmalloc(initial_capacity * sizeof *q->b[0].ev);
    }
    return q;
}

void sim_queue_destroy(sim_queue *q)
{
    if (!q) return;
    for (int i = 0; i < SIMQ_BUCKETS; i++) free(q->b[i].ev);
    free(q->scratch);
    free(q);
}

/* Re-bucket every event against a new, lower `last`. Gathering in bucket order keeps events of
 * equal key (always in one bucket) in their order. */
void simq_rebuild(sim_queue *q, uint64_t new_last)
{
    if (q->scratch_cap < q->n) {
        q->scratch_cap = q->n;
        q->scratch = dt_xrealloc(q->scratch, q->scratch_cap * sizeof *q->scratch);
    }
    size_t m = 0;
    for (unsigned i = 0; i < SIMQ_BUCKETS; i++) {
        simq_bucket *b = &q->b[i];
        size_t from = i ? 0 : q->head;
        if (b->len > from) { /* never-used buckets have no array: memcpy(NULL) is undefined */
            memcpy(q->scratch + m, b->ev + from, (b->len - from) * sizeof *b->ev);
            m += b->len - from;
        }
        b->len = 0;
    }
    DT_ASSERT(m == q->n);
    q->head = 0;
    q->nonempty = 0;
    q->last = new_last;
    for (size_t j = 0; j < m; j++)
        simq_append(q, simq_bucket_of(simq_key(q->scratch[j].time), new_last), &q->scratch[j]);
}

/* Bucket 0 is used up and events remain: refill it from the lowest non-empty bucket. */
void simq_settle(sim_queue *q)
{
    q->b[0].len = q->head = 0;
    DT_ASSERT(q->nonempty != 0);
    unsigned bi = 1u + (unsigned)__builtin_ctzll(q->nonempty);
    simq_bucket *b = &q->b[bi];
    uint64_t m = UINT64_MAX;
    for (size_t i = 0; i < b->len; i++) {
        uint64_t k = simq_key(b->ev[i].time);
        m = k < m ? k : m;
    }
    q->last = m;
    q->nonempty &= ~(UINT64_C(1) << (bi - 1));
    size_t len = b->len;
    b->len = 0; /* every event goes to a lower bucket, never back into this one */
    for (size_t i = 0; i < len; i++)
        simq_append(q, simq_bucket_of(simq_key(b->ev[i].time), m), &b->ev[i]);
}

void sim_queue_push(sim_queue *q, sim_event ev) { simq_push(q, ev); }

bool sim_queue_pop(sim_queue *q, sim_event *out) { return simq_pop(q, out); }

const sim_event *sim_queue_peek(const sim_queue *cq)
{
    /* Logically const: settling re-arranges buckets without changing the queue's contents.
     * The queue is always heap-allocated (never a const object), so the cast is defined. */
    return simq_peek((sim_queue *)cq);
}

size_t sim_queue_size(const sim_queue *q) { return q->n; }
