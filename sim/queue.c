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
 * each as large as the queue, in practice about 2-3x the largest queue. A push earlier than
 * `last` (never from the engine, whose pushes are >= now and now == last popped key; possible
 * after a peek advanced `last` to a later pending event, e.g. sim_run(until) returning, or from
 * direct users of this queue) rebuilds all buckets against the new key: O(n), correct, slow if
 * done often. A larger scale would want a ladder queue; at ours this is simpler and faster.
 */
#include <stdlib.h>
#include <string.h>

#include "dtsim/error.h"
#include "dtsim/sim.h"

#define N_BUCKETS 65

typedef struct bucket {
    sim_event *ev;
    size_t len, cap;
} bucket;

struct sim_queue {
    bucket b[N_BUCKETS];
    size_t head;       /* next event to pop in b[0] */
    uint64_t nonempty; /* bit k set when b[k + 1] holds events */
    uint64_t last;     /* key of b[0]'s events; <= every key present */
    size_t n;
    uint64_t next_seq;
    sim_event *scratch; /* for rebuilds */
    size_t scratch_cap;
};

static inline uint64_t key_of(sim_time_t t) { return (uint64_t)t ^ (UINT64_C(1) << 63); }

static inline unsigned bucket_of(uint64_t key, uint64_t last)
{
    uint64_t x = key ^ last;
    return x ? 64u - (unsigned)__builtin_clzll(x) : 0u;
}

static inline void append(sim_queue *q, unsigned bi, const sim_event *ev)
{
    bucket *b = &q->b[bi];
    if (b->len == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 64;
        b->ev = dt_xrealloc(b->ev, b->cap * sizeof *b->ev);
    }
    b->ev[b->len++] = *ev;
    if (bi) q->nonempty |= UINT64_C(1) << (bi - 1);
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
    for (int i = 0; i < N_BUCKETS; i++) free(q->b[i].ev);
    free(q->scratch);
    free(q);
}

/* Re-bucket every event against a new, lower `last`. Gathering in bucket order keeps events of
 * equal key (always in one bucket) in their order. */
static void rebuild(sim_queue *q, uint64_t new_last)
{
    if (q->scratch_cap < q->n) {
        q->scratch_cap = q->n;
        q->scratch = dt_xrealloc(q->scratch, q->scratch_cap * sizeof *q->scratch);
    }
    size_t m = 0;
    for (unsigned i = 0; i < N_BUCKETS; i++) {
        bucket *b = &q->b[i];
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
        append(q, bucket_of(key_of(q->scratch[j].time), new_last), &q->scratch[j]);
}

/* Bucket 0 is exhausted and events remain: refill it from the lowest non-empty bucket. */
static void settle(sim_queue *q)
{
    q->b[0].len = q->head = 0;
    DT_ASSERT(q->nonempty != 0);
    unsigned bi = 1u + (unsigned)__builtin_ctzll(q->nonempty);
    bucket *b = &q->b[bi];
    uint64_t m = UINT64_MAX;
    for (size_t i = 0; i < b->len; i++) {
        uint64_t k = key_of(b->ev[i].time);
        m = k < m ? k : m;
    }
    q->last = m;
    q->nonempty &= ~(UINT64_C(1) << (bi - 1));
    size_t len = b->len;
    b->len = 0; /* every event goes to a lower bucket, never back into this one */
    for (size_t i = 0; i < len; i++) append(q, bucket_of(key_of(b->ev[i].time), m), &b->ev[i]);
}

void sim_queue_push(sim_queue *q, sim_event ev)
{
    ev.seq = q->next_seq++;
    uint64_t k = key_of(ev.time);
    if (q->n == 0) {
        q->b[0].len = q->head = 0;
        q->last = k;
    } else if (k < q->last) {
        rebuild(q, k);
    }
    append(q, bucket_of(k, q->last), &ev);
    q->n++;
}

bool sim_queue_pop(sim_queue *q, sim_event *out)
{
    if (q->n == 0) return false;
    bucket *b0 = &q->b[0];
    if (q->head == b0->len) settle(q);
    *out = b0->ev[q->head++];
    q->n--;
    /* Reset at once so a long run of equal-time events reuses the front of bucket 0. */
    if (q->head == b0->len) b0->len = q->head = 0;
    return true;
}

const sim_event *sim_queue_peek(const sim_queue *cq)
{
    if (cq->n == 0) return NULL;
    /* Logically const: settling re-arranges buckets without changing the queue's contents.
     * The queue is always heap-allocated (never a const object), so the cast is defined. */
    sim_queue *q = (sim_queue *)cq;
    if (q->head == q->b[0].len) settle(q);
    return &q->b[0].ev[q->head];
}

size_t sim_queue_size(const sim_queue *q) { return q->n; }
