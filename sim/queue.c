/* queue.c - pending events in a binary min-heap ordered by (time, seq).
 * Placeholder structure; see docs/architecture.md for the measured choice. */
#include <stdlib.h>
#include <string.h>

#include "dtsim/error.h"
#include "dtsim/sim.h"

struct sim_queue {
    sim_event *heap;
    size_t n, cap;
    uint64_t next_seq;
};

static inline bool before(const sim_event *a, const sim_event *b)
{
    return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

sim_queue *sim_queue_create(size_t initial_capacity)
{
    sim_queue *q = dt_xcalloc(1, sizeof *q);
    q->cap = initial_capacity ? initial_capacity : 1024;
    q->heap = dt_xmalloc(q->cap * sizeof *q->heap);
    return q;
}

void sim_queue_destroy(sim_queue *q)
{
    if (!q) return;
    free(q->heap);
    free(q);
}

void sim_queue_push(sim_queue *q, sim_event ev)
{
    if (q->n == q->cap) {
        q->cap *= 2;
        q->heap = dt_xrealloc(q->heap, q->cap * sizeof *q->heap);
    }
    ev.seq = q->next_seq++;
    size_t i = q->n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!before(&ev, &q->heap[p])) break;
        q->heap[i] = q->heap[p];
        i = p;
    }
    q->heap[i] = ev;
}

bool sim_queue_pop(sim_queue *q, sim_event *out)
{
    if (q->n == 0) return false;
    *out = q->heap[0];
    sim_event last = q->heap[--q->n];
    size_t i = 0, n = q->n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && before(&q->heap[c + 1], &q->heap[c])) c++;
        if (!before(&q->heap[c], &last)) break;
        q->heap[i] = q->heap[c];
        i = c;
    }
    q->heap[i] = last;
    return true;
}

const sim_event *sim_queue_peek(const sim_queue *q) { return q->n ? &q->heap[0] : NULL; }
size_t sim_queue_size(const sim_queue *q) { return q->n; }
