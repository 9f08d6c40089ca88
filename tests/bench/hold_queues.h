/* hold_queues.h - the candidate pending-event queues that bench_hold.c races against each other
 * and against the library's sim_queue (sim/queue.c holds the winner).
 *
 * Every candidate stores sim_event by value, orders by (time, seq), assigns seq from its own
 * counter on push, and allocates only when it grows, like sim_queue. They are header-only and
 * static inline so that the comparison measures the structures, not call overhead; the bench
 * also runs the library sim_queue through its real (out-of-line) API.
 *
 *   dheap2, dheap4, dheap8  implicit d-ary min-heaps. The array is offset so that the d
 *                           children of a node start on a 64-byte boundary (for d = 4 they fill
 *                           exactly two cache lines; for d = 2 one line).
 *   dheap4f                 4-ary heap whose pop moves the hole to a leaf along the least
 *                           children first and then sifts the last element up from there
 *                           (Floyd's "bottom-up" deletion): d-1 comparisons per level instead
 *                           of d, since the element that replaces the root nearly always
 *                           belongs near the bottom.
 *   pairing                 pairing heap (two-pass), nodes in one growable pool with a free
 *                           list, linked by 32-bit indices.
 *
 * Not part of libdtsim: bench code only.
 */
#ifndef DTSIM_HOLD_QUEUES_H
#define DTSIM_HOLD_QUEUES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dtsim/error.h"
#include "dtsim/sim.h"

static inline bool hq_before(const sim_event *a, const sim_event *b)
{
    return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

/* ---- d-ary heaps ---------------------------------------------------------------------- */

/* Logical index i lives at base[i + D - 1]. Its children, logical D*i+1 .. D*i+D, then sit at
 * physical D*(i+1) .. D*(i+1) + D-1: a block starting at a multiple of D elements, so with a
 * 64-byte aligned base and 32-byte events the block is 64-byte aligned (D*32 bytes long). */
#define HQ_DHEAP(NAME, D)                                                                   \
    typedef struct NAME {                                                                   \
        sim_event *mem;  /* aligned allocation */                                           \
        sim_event *base; /* mem shifted so logical 0 is at base[D-1] */                     \
        size_t n, cap;                                                                      \
        uint64_t next_seq;                                                                  \
    } NAME;                                                                                 \
    static inline void NAME##_grow(NAME *h, size_t cap)                                     \
    {                                                                                       \
        sim_event *m = NULL;                                                                \
        if (posix_memalign((void **)&m, 64, (cap + D) * sizeof *m)) abort();                \
        if (h->mem) {                                                                       \
            memcpy(m + (D - 1), h->base + (D - 1), h->n * sizeof *m);                       \
            free(h->mem);                                                                   \
        }                                                                                   \
        h->mem = h->base = m;                                                               \
        h->cap = cap;                                                                       \
    }                                                                                       \
    static inline void NAME##_init(NAME *h, size_t cap)                                     \
    {                                                                                       \
        memset(h, 0, sizeof *h);                                                            \
        NAME##_grow(h, cap ? cap : 1024);                                                   \
    }                                                                                       \
    static inline void NAME##_free(NAME *h) { free(h->mem); }                               \
    static inline void NAME##_push(NAME *h, sim_event ev)                                   \
    {                                                                                       \
        if (h->n == h->cap) NAME##_grow(h, 2 * h->cap);                                     \
        sim_event *a = h->base + (D - 1);                                                   \
        ev.seq = h->next_seq++;                                                             \
        size_t i = h->n++;                                                                  \
        while (i > 0) {                                                                     \
            size_t p = (i - 1) / D;                                                         \
            if (!hq_before(&ev, &a[p])) break;                                              \
            a[i] = a[p];                                                                    \
            i = p;                                                                          \
        }                                                                                   \
        a[i] = ev;                                                                          \
    }                                                                                       \
    static inline bool NAME##_pop(NAME *h, sim_event *out)                                  \
    {                                                                                       \
        if (h->n == 0) return false;                                                        \
        sim_event *a = h->base + (D - 1);                                                   \
        *out = a[0];                                                                        \
        sim_event last = a[--h->n];                                                         \
        size_t i = 0, n = h->n;                                                             \
        for (;;) {                                                                          \
            size_t c = D * i + 1;                                                           \
            if (c >= n) break;                                                              \
            size_t end = c + D < n ? c + D : n, m = c;                                      \
            for (size_t k = c + 1; k < end; k++)                                            \
                if (hq_before(&a[k], &a[m])) m = k;                                         \
            if (!hq_before(&a[m], &last)) break;                                            \
            a[i] = a[m];                                                                    \
            i = m;                                                                          \
        }                                                                                   \
        a[i] = last;                                                                        \
        return true;                                                                        \
    }

HQ_DHEAP(dheap2, 2)
HQ_DHEAP(dheap4, 4)
HQ_DHEAP(dheap8, 8)

/* 4-ary heap with bottom-up deletion; shares dheap4's layout, push and growth. */
typedef dheap4 dheap4f;
#define dheap4f_init dheap4_init
#define dheap4f_free dheap4_free
#define dheap4f_push dheap4_push
static inline bool dheap4f_pop(dheap4f *h, sim_event *out)
{
    if (h->n == 0) return false;
    sim_event *a = h->base + 3;
    *out = a[0];
    size_t n = --h->n;
    sim_event last = a[n];
    size_t i = 0;
    /* Walk the hole down to a leaf along the least child. */
    for (;;) {
        size_t c = 4 * i + 1;
        if (c >= n) break;
        size_t end = c + 4 < n ? c + 4 : n, m = c;
        for (size_t k = c + 1; k < end; k++)
            if (hq_before(&a[k], &a[m])) m = k;
        a[i] = a[m];
        i = m;
    }
    /* Then sift `last` up from the hole (usually zero or one step). */
    while (i > 0) {
        size_t p = (i - 1) / 4;
        if (!hq_before(&last, &a[p])) break;
        a[i] = a[p];
        i = p;
    }
    a[i] = last;
    return true;
}

/* ---- branch-free d-ary heaps ------------------------------------------------------------
 *
 * Which child is least is a coin toss in the hold model, so the textbook loop mispredicts about
 * once per comparison (~15-20 cycles each). These variants compare without branches (bitwise
 * (time, seq) order, index picked with a mask) and keep D sentinel events (time = max) past the
 * last element so that every child block is full and the loop needs no bounds test beyond
 * "has a first child". FLOYD = 1 walks the hole to a leaf first, then sifts the last element
 * up (it nearly always belongs near the bottom in the hold model). */

static inline size_t hq_lt(const sim_event *a, const sim_event *b)
{
    return (size_t)((a->time < b->time) | ((a->time == b->time) & (a->seq < b->seq)));
}

static const sim_event hq_sentinel = {.time = INT64_MAX, .seq = UINT64_MAX};

#define HQ_BHEAP(NAME, D, FLOYD)                                                            \
    typedef struct NAME {                                                                   \
        sim_event *mem;                                                                     \
        size_t n, cap;                                                                      \
        uint64_t next_seq;                                                                  \
    } NAME;                                                                                 \
    /* logical i at mem[i + D - 1]; mem[D-1+n .. D-1+n+D-1] are sentinels */                \
    static inline void NAME##_grow(NAME *h, size_t cap)                                     \
    {                                                                                       \
        sim_event *m = NULL;                                                                \
        if (posix_memalign((void **)&m, 64, (cap + 2 * D) * sizeof *m)) abort();            \
        if (h->mem) {                                                                       \
            memcpy(m + (D - 1), h->mem + (D - 1), h->n * sizeof *m);                        \
            free(h->mem);                                                                   \
        }                                                                                   \
        for (size_t k = h->n; k < cap + D; k++) m[D - 1 + k] = hq_sentinel;                \
        h->mem = m;                                                                         \
        h->cap = cap;                                                                       \
    }                                                                                       \
    static inline void NAME##_init(NAME *h, size_t cap)                                     \
    {                                                                                       \
        memset(h, 0, sizeof *h);                                                            \
        NAME##_grow(h, cap ? cap : 1024);                                                   \
    }                                                                                       \
    static inline void NAME##_free(NAME *h) { free(h->mem); }                               \
    static inline void NAME##_push(NAME *h, sim_event ev)                                   \
    {                                                                                       \
        if (h->n == h->cap) NAME##_grow(h, 2 * h->cap);                                     \
        sim_event *a = h->mem + (D - 1);                                                    \
        ev.seq = h->next_seq++;                                                             \
        size_t i = h->n++;                                                                  \
        while (i > 0) {                                                                     \
            size_t p = (i - 1) / D;                                                         \
            if (!hq_lt(&ev, &a[p])) break;                                                  \
            a[i] = a[p];                                                                    \
            i = p;                                                                          \
        }                                                                                   \
        a[i] = ev;                                                                          \
    }                                                                                       \
    static inline size_t NAME##_least(const sim_event *a, size_t c)                         \
    {                                                                                       \
        size_t m = c;                                                                       \
        for (size_t k = c + 1; k < c + D; k++) {                                            \
            size_t lt = hq_lt(&a[k], &a[m]);                                                \
            m ^= (m ^ k) & (0 - lt);                                                        \
        }                                                                                   \
        return m;                                                                           \
    }                                                                                       \
    static inline bool NAME##_pop(NAME *h, sim_event *out)                                  \
    {                                                                                       \
        if (h->n == 0) return false;                                                        \
        sim_event *a = h->mem + (D - 1);                                                    \
        *out = a[0];                                                                        \
        size_t n = --h->n;                                                                  \
        sim_event last = a[n];                                                              \
        a[n] = hq_sentinel;                                                                 \
        size_t i = 0;                                                                       \
        if (FLOYD) {                                                                        \
            for (size_t c = 1; c < n; c = D * i + 1) {                                      \
                size_t m = NAME##_least(a, c);                                              \
                a[i] = a[m];                                                                \
                i = m;                                                                      \
            }                                                                               \
            while (i > 0) {                                                                 \
                size_t p = (i - 1) / D;                                                     \
                if (!hq_lt(&last, &a[p])) break;                                            \
                a[i] = a[p];                                                                \
                i = p;                                                                      \
            }                                                                               \
        } else {                                                                            \
            for (size_t c = 1; c < n; c = D * i + 1) {                                      \
                size_t m = NAME##_least(a, c);                                              \
                if (!hq_lt(&a[m], &last)) break;                                            \
                a[i] = a[m];                                                                \
                i = m;                                                                      \
            }                                                                               \
        }                                                                                   \
        a[i] = last;                                                                        \
        return true;                                                                        \
    }

HQ_BHEAP(bheap2, 2, 0)
HQ_BHEAP(bheap4, 4, 0)
HQ_BHEAP(bheap8, 8, 0)
HQ_BHEAP(bheap2f, 2, 1)
HQ_BHEAP(bheap4f, 4, 1)

/* ---- split d-ary heaps -------------------------------------------------------------------
 *
 * The hold model's pop is a chain of dependent loads, root to leaf: which child to follow is
 * known only once its keys arrive. Past the first levels those loads miss L1 (and at N = 1e5,
 * 3.2 MB of 32-byte events, L2), so the structure is latency bound, not compute bound (that is
 * also why the branch-free variants above lose: a predicted branch starts the next level's load
 * early half the time). These heaps keep the keys (time, seq: 16 bytes) in one array and the
 * payloads (kind, id, data: 16 bytes) in a parallel one: the chain walks only keys, half the
 * bytes, and the payload moves are stores and loads off the critical path. With D = 4 a child
 * block is exactly one 64-byte line. */

typedef struct hq_key {
    sim_time_t time;
    uint64_t seq;
} hq_key;

typedef struct hq_payload {
    uint32_t kind, id;
    uint64_t data;
} hq_payload;

static inline bool hq_key_before(const hq_key *a, const hq_key *b)
{
    return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

#define HQ_SHEAP(NAME, D)                                                                   \
    typedef struct NAME {                                                                   \
        hq_key *kmem;                                                                       \
        hq_payload *pmem;                                                                   \
        size_t n, cap;                                                                      \
        uint64_t next_seq;                                                                  \
    } NAME;                                                                                 \
    /* logical i at [i + D - 1]: child blocks start at multiples of D (64-byte aligned) */   \
    static inline void NAME##_grow(NAME *h, size_t cap)                                     \
    {                                                                                       \
        hq_key *k = NULL;                                                                   \
        hq_payload *p = NULL;                                                               \
        if (posix_memalign((void **)&k, 64, (cap + D) * sizeof *k)) abort();                \
        if (posix_memalign((void **)&p, 64, (cap + D) * sizeof *p)) abort();                \
        if (h->kmem) {                                                                      \
            memcpy(k + (D - 1), h->kmem + (D - 1), h->n * sizeof *k);                       \
            memcpy(p + (D - 1), h->pmem + (D - 1), h->n * sizeof *p);                       \
            free(h->kmem);                                                                  \
            free(h->pmem);                                                                  \
        }                                                                                   \
        h->kmem = k;                                                                        \
        h->pmem = p;                                                                        \
        h->cap = cap;                                                                       \
    }                                                                                       \
    static inline void NAME##_init(NAME *h, size_t cap)                                     \
    {                                                                                       \
        memset(h, 0, sizeof *h);                                                            \
        NAME##_grow(h, cap ? cap : 1024);                                                   \
    }                                                                                       \
    static inline void NAME##_free(NAME *h)                                                 \
    {                                                                                       \
        free(h->kmem);                                                                      \
        free(h->pmem);                                                                      \
    }                                                                                       \
    static inline void NAME##_push(NAME *h, sim_event ev)                                   \
    {                                                                                       \
        if (h->n == h->cap) NAME##_grow(h, 2 * h->cap);                                     \
        hq_key *k = h->kmem + (D - 1);                                                      \
        hq_payload *p = h->pmem + (D - 1);                                                  \
        hq_key key = {ev.time, h->next_seq++};                                              \
        size_t i = h->n++;                                                                  \
        while (i > 0) {                                                                     \
            size_t up = (i - 1) / D;                                                        \
            if (!hq_key_before(&key, &k[up])) break;                                        \
            k[i] = k[up];                                                                   \
            p[i] = p[up];                                                                   \
            i = up;                                                                         \
        }                                                                                   \
        k[i] = key;                                                                         \
        p[i] = (hq_payload){ev.kind, ev.id, ev.data};                                       \
    }                                                                                       \
    static inline bool NAME##_pop(NAME *h, sim_event *out)                                  \
    {                                                                                       \
        if (h->n == 0) return false;                                                        \
        hq_key *k = h->kmem + (D - 1);                                                      \
        hq_payload *p = h->pmem + (D - 1);                                                  \
        *out = (sim_event){.time = k[0].time, .seq = k[0].seq, .kind = p[0].kind,           \
                           .id = p[0].id, .data = p[0].data};                               \
        size_t n = --h->n;                                                                  \
        hq_key lk = k[n];                                                                   \
        size_t i = 0;                                                                       \
        for (;;) {                                                                          \
            size_t c = D * i + 1;                                                           \
            if (c >= n) break;                                                              \
            size_t end = c + D < n ? c + D : n, m = c;                                      \
            for (size_t j = c + 1; j < end; j++)                                            \
                if (hq_key_before(&k[j], &k[m])) m = j;                                     \
            if (!hq_key_before(&k[m], &lk)) break;                                          \
            k[i] = k[m];                                                                    \
            p[i] = p[m];                                                                    \
            i = m;                                                                          \
        }                                                                                   \
        k[i] = lk;                                                                          \
        p[i] = p[n];                                                                        \
        return true;                                                                        \
    }

HQ_SHEAP(sheap2, 2)
HQ_SHEAP(sheap4, 4)
HQ_SHEAP(sheap8, 8)

/* ---- tuned split d-ary heaps ------------------------------------------------------------
 *
 * As the split heaps, plus: the key array carries D sentinel keys (time = max) past the last
 * element so every child block is full (no bounds test per child), the least-of-D choice is an
 * unrolled tournament (depth log2 D instead of D-1 sequential compares), and FLOYD = 1 uses
 * bottom-up deletion. */

static const hq_key hq_key_sentinel = {INT64_MAX, UINT64_MAX};

#define HQ_QHEAP(NAME, D, FLOYD, BL)                                                            \
    typedef struct NAME {                                                                   \
        hq_key *kmem;                                                                       \
        hq_payload *pmem;                                                                   \
        size_t n, cap;                                                                      \
        uint64_t next_seq;                                                                  \
    } NAME;                                                                                 \
    static inline void NAME##_grow(NAME *h, size_t cap)                                     \
    {                                                                                       \
        hq_key *k = NULL;                                                                   \
        hq_payload *p = NULL;                                                               \
        if (posix_memalign((void **)&k, 64, (cap + 2 * D) * sizeof *k)) abort();            \
        if (posix_memalign((void **)&p, 64, (cap + 2 * D) * sizeof *p)) abort();            \
        if (h->kmem) {                                                                      \
            memcpy(k + (D - 1), h->kmem + (D - 1), h->n * sizeof *k);                       \
            memcpy(p + (D - 1), h->pmem + (D - 1), h->n * sizeof *p);                       \
            free(h->kmem);                                                                  \
            free(h->pmem);                                                                  \
        }                                                                                   \
        for (size_t j = h->n; j < cap + D; j++) k[D - 1 + j] = hq_key_sentinel;            \
        h->kmem = k;                                                                        \
        h->pmem = p;                                                                        \
        h->cap = cap;                                                                       \
    }                                                                                       \
    static inline void NAME##_init(NAME *h, size_t cap)                                     \
    {                                                                                       \
        memset(h, 0, sizeof *h);                                                            \
        NAME##_grow(h, cap ? cap : 1024);                                                   \
    }                                                                                       \
    static inline void NAME##_free(NAME *h)                                                 \
    {                                                                                       \
        free(h->kmem);                                                                      \
        free(h->pmem);                                                                      \
    }                                                                                       \
    static inline void NAME##_push(NAME *h, sim_event ev)                                   \
    {                                                                                       \
        if (h->n == h->cap) NAME##_grow(h, 2 * h->cap);                                     \
        hq_key *k = h->kmem + (D - 1);                                                      \
        hq_payload *p = h->pmem + (D - 1);                                                  \
        hq_key key = {ev.time, h->next_seq++};                                              \
        size_t i = h->n++;                                                                  \
        while (i > 0) {                                                                     \
            size_t up = (i - 1) / D;                                                        \
            if (!hq_key_before(&key, &k[up])) break;                                        \
            k[i] = k[up];                                                                   \
            p[i] = p[up];                                                                   \
            i = up;                                                                         \
        }                                                                                   \
        k[i] = key;                                                                         \
        p[i] = (hq_payload){ev.kind, ev.id, ev.data};                                       \
    }                                                                                       \
    static inline size_t NAME##_sel(const hq_key *k, size_t x, size_t y)                   \
    {                                                                                       \
        /* y if k[y] < k[x] else x */                                                       \
        if (!BL) return hq_key_before(&k[y], &k[x]) ? y : x;                                \
        size_t lt = (size_t)((k[y].time < k[x].time) |                                      \
                             ((k[y].time == k[x].time) & (k[y].seq < k[x].seq)));           \
        return x ^ ((x ^ y) & (0 - lt));                                                    \
    }                                                                                       \
    static inline size_t NAME##_least(const hq_key *k, size_t c)                            \
    {                                                                                       \
        if (BL) {                                                                           \
            if (D == 2) return NAME##_sel(k, c, c + 1);                                     \
            size_t a = NAME##_sel(k, c, c + 1), b = NAME##_sel(k, c + 2, c + 3);            \
            size_t m = NAME##_sel(k, a, b);                                                 \
            if (D == 4) return m;                                                           \
            a = NAME##_sel(k, c + 4, c + 5);                                                \
            b = NAME##_sel(k, c + 6, c + 7);                                                \
            return NAME##_sel(k, m, NAME##_sel(k, a, b));                                   \
        }                                                                                   \
        if (D == 2) return hq_key_before(&k[c + 1], &k[c]) ? c + 1 : c;                     \
        size_t a = hq_key_before(&k[c + 1], &k[c]) ? c + 1 : c;                             \
        size_t b = hq_key_before(&k[c + 3], &k[c + 2]) ? c + 3 : c + 2;                     \
        size_t m = hq_key_before(&k[b], &k[a]) ? b : a;                                     \
        if (D == 4) return m;                                                               \
        a = hq_key_before(&k[c + 5], &k[c + 4]) ? c + 5 : c + 4;                            \
        b = hq_key_before(&k[c + 7], &k[c + 6]) ? c + 7 : c + 6;                            \
        a = hq_key_before(&k[b], &k[a]) ? b : a;                                            \
        return hq_key_before(&k[a], &k[m]) ? a : m;                                         \
    }                                                                                       \
    static inline bool NAME##_pop(NAME *h, sim_event *out)                                  \
    {                                                                                       \
        if (h->n == 0) return false;                                                        \
        hq_key *k = h->kmem + (D - 1);                                                      \
        hq_payload *p = h->pmem + (D - 1);                                                  \
        *out = (sim_event){.time = k[0].time, .seq = k[0].seq, .kind = p[0].kind,           \
                           .id = p[0].id, .data = p[0].data};                               \
        size_t n = --h->n;                                                                  \
        hq_key lk = k[n];                                                                   \
        hq_payload lp = p[n];                                                               \
        k[n] = hq_key_sentinel;                                                             \
        size_t i = 0;                                                                       \
        if (FLOYD) {                                                                        \
            for (size_t c = 1; c < n; c = D * i + 1) {                                      \
                size_t m = NAME##_least(k, c);                                              \
                k[i] = k[m];                                                                \
                p[i] = p[m];                                                                \
                i = m;                                                                      \
            }                                                                               \
            while (i > 0) {                                                                 \
                size_t up = (i - 1) / D;                                                    \
                if (!hq_key_before(&lk, &k[up])) break;                                     \
                k[i] = k[up];                                                               \
                p[i] = p[up];                                                               \
                i = up;                                                                     \
            }                                                                               \
        } else {                                                                            \
            for (size_t c = 1; c < n; c = D * i + 1) {                                      \
                size_t m = NAME##_least(k, c);                                              \
                if (!hq_key_before(&k[m], &lk)) break;                                      \
                k[i] = k[m];                                                                \
                p[i] = p[m];                                                                \
                i = m;                                                                      \
            }                                                                               \
        }                                                                                   \
        k[i] = lk;                                                                          \
        p[i] = lp;                                                                          \
        return true;                                                                        \
    }

HQ_QHEAP(qheap2, 2, 0, 0)
HQ_QHEAP(qheap4, 4, 0, 0)
HQ_QHEAP(qheap8, 8, 0, 0)
HQ_QHEAP(qheap2f, 2, 1, 0)
HQ_QHEAP(qheap4f, 4, 1, 0)
HQ_QHEAP(xheap2, 2, 0, 1)
HQ_QHEAP(xheap4, 4, 0, 1)
HQ_QHEAP(xheap8, 8, 0, 1)
HQ_QHEAP(xheap2f, 2, 1, 1)
HQ_QHEAP(xheap4f, 4, 1, 1)

/* ---- indexed d-ary heaps -----------------------------------------------------------------
 *
 * The heap holds only 16-byte entries {time, seq << SLOT_BITS | slot}; the payload sits still in
 * a slot array (free slots on a LIFO stack, so the slot a pop frees is the one the next push
 * takes, still in cache). The sift-down moves and reads 16 bytes per entry and nothing else. */

#define HQ_SLOT_BITS 28

typedef struct hq_ent {
    sim_time_t time;
    uint64_t ss; /* seq << HQ_SLOT_BITS | slot */
} hq_ent;

static inline bool hq_ent_before(const hq_ent *a, const hq_ent *b)
{
    return a->time < b->time || (a->time == b->time && a->ss < b->ss);
}

static const hq_ent hq_ent_sentinel = {INT64_MAX, UINT64_MAX};

#define HQ_IHEAP(NAME, D, PF, FLOYD)                                                                   \
    typedef struct NAME {                                                                   \
        hq_ent *kmem;                                                                       \
        hq_payload *slots;                                                                  \
        uint32_t *free_slots;                                                               \
        size_t n, cap, n_free;                                                              \
        uint64_t next_seq;                                                                  \
    } NAME;                                                                                 \
    static inline void NAME##_grow(NAME *h, size_t cap)                                     \
    {                                                                                       \
        hq_ent *k = NULL;                                                                   \
        if (posix_memalign((void **)&k, 64, (cap + 2 * D) * sizeof *k)) abort();            \
        if (h->kmem) {                                                                      \
            memcpy(k + (D - 1), h->kmem + (D - 1), h->n * sizeof *k);                       \
            free(h->kmem);                                                                  \
        }                                                                                   \
        for (size_t j = h->n; j < cap + D; j++) k[D - 1 + j] = hq_ent_sentinel;            \
        h->kmem = k;                                                                        \
        h->slots = dt_xrealloc(h->slots, cap * sizeof *h->slots);                           \
        h->free_slots = dt_xrealloc(h->free_slots, cap * sizeof *h->free_slots);            \
        /* new slots cap-1 .. old cap on the stack, lowest on top */                        \
        for (size_t j = cap; j > h->cap; j--) h->free_slots[h->n_free++] = (uint32_t)(j - 1); \
        h->cap = cap;                                                                       \
    }                                                                                       \
    static inline void NAME##_init(NAME *h, size_t cap)                                     \
    {                                                                                       \
        memset(h, 0, sizeof *h);                                                            \
        NAME##_grow(h, cap ? cap : 1024);                                                   \
    }                                                                                       \
    static inline void NAME##_free(NAME *h)                                                 \
    {                                                                                       \
        free(h->kmem);                                                                      \
        free(h->slots);                                                                     \
        free(h->free_slots);                                                                \
    }                                                                                       \
    static inline void NAME##_push(NAME *h, sim_event ev)                                   \
    {                                                                                       \
        if (h->n == h->cap) NAME##_grow(h, 2 * h->cap);                                     \
        hq_ent *k = h->kmem + (D - 1);                                                      \
        uint32_t slot = h->free_slots[--h->n_free];                                         \
        h->slots[slot] = (hq_payload){ev.kind, ev.id, ev.data};                             \
        hq_ent e = {ev.time, h->next_seq++ << HQ_SLOT_BITS | slot};                         \
        size_t i = h->n++;                                                                  \
        while (i > 0) {                                                                     \
            size_t up = (i - 1) / D;                                                        \
            if (!hq_ent_before(&e, &k[up])) break;                                          \
            k[i] = k[up];                                                                   \
            i = up;                                                                         \
        }                                                                                   \
        k[i] = e;                                                                           \
    }                                                                                       \
    static inline size_t NAME##_least(const hq_ent *k, size_t c)                            \
    {                                                                                       \
        if (D == 2) return hq_ent_before(&k[c + 1], &k[c]) ? c + 1 : c;                     \
        size_t a = hq_ent_before(&k[c + 1], &k[c]) ? c + 1 : c;                             \
        size_t b = hq_ent_before(&k[c + 3], &k[c + 2]) ? c + 3 : c + 2;                     \
        return hq_ent_before(&k[b], &k[a]) ? b : a;                                         \
    }                                                                                       \
    static inline bool NAME##_pop(NAME *h, sim_event *out)                                  \
    {                                                                                       \
        if (h->n == 0) return false;                                                        \
        hq_ent *k = h->kmem + (D - 1);                                                      \
        uint32_t slot = (uint32_t)(k[0].ss & ((1u << HQ_SLOT_BITS) - 1));                   \
        const hq_payload *pl = &h->slots[slot];                                             \
        *out = (sim_event){.time = k[0].time, .seq = k[0].ss >> HQ_SLOT_BITS,               \
                           .kind = pl->kind, .id = pl->id, .data = pl->data};               \
        h->free_slots[h->n_free++] = slot;                                                  \
        size_t n = --h->n;                                                                  \
        hq_ent last = k[n];                                                                 \
        k[n] = hq_ent_sentinel;                                                             \
        size_t i = 0;                                                                       \
        if (FLOYD) {                                                                        \
            for (size_t c = 1; c < n; c = D * i + 1) {                                      \
                if (PF) __builtin_prefetch(&k[D * c + 1]);                                  \
                size_t m = NAME##_least(k, c);                                              \
                k[i] = k[m];                                                                \
                i = m;                                                                      \
            }                                                                               \
            while (i > 0) {                                                                 \
                size_t up = (i - 1) / D;                                                    \
                if (!hq_ent_before(&last, &k[up])) break;                                   \
                k[i] = k[up];                                                               \
                i = up;                                                                     \
            }                                                                               \
        } else {                                                                            \
            for (size_t c = 1; c < n; c = D * i + 1) {                                      \
                if (PF) __builtin_prefetch(&k[D * c + 1]);                                  \
                size_t m = NAME##_least(k, c);                                              \
                if (!hq_ent_before(&k[m], &last)) break;                                    \
                k[i] = k[m];                                                                \
                i = m;                                                                      \
            }                                                                               \
        }                                                                                   \
        k[i] = last;                                                                        \
        return true;                                                                        \
    }

HQ_IHEAP(iheap2, 2, 0, 0)
HQ_IHEAP(iheap4, 4, 0, 0)
HQ_IHEAP(iheap2p, 2, 1, 0)
HQ_IHEAP(iheap2pf, 2, 1, 1)
HQ_IHEAP(iheap4p, 4, 1, 0)

/* ---- radix heap -------------------------------------------------------------------------
 *
 * Monotone integer priority queue: keys are (time ^ sign bit) as uint64; `last` is the least key
 * present. Bucket 0 holds keys == last (FIFO, served from `head`), bucket b >= 1 holds keys whose
 * highest bit differing from last is bit b-1. A pop that empties bucket 0 finds the lowest
 * non-empty bucket (a bitmask, ctz), takes its least key as the new last and redistributes it
 * into lower buckets in order. Items of equal key always share a bucket and keep insertion order,
 * so ties pop first-in first-out. Pushing a key below last (never from the engine, which enforces
 * causality) rebuilds all buckets against the new last. Work is sequential scans, no pointer
 * chasing: each item moves at most 64 times, in practice a handful. */

typedef struct rbucket {
    sim_event *ev;
    uint32_t len, cap;
} rbucket;

typedef struct radix {
    rbucket b[65];
    uint32_t head;     /* next to pop in b[0] */
    uint64_t nonempty; /* bit b-1 set when b[b] (b >= 1) has items */
    uint64_t last;     /* least key present (valid when n > 0) */
    size_t n;
    uint64_t next_seq;
} radix;

static inline uint64_t radix_key(sim_time_t t) { return (uint64_t)t ^ (UINT64_C(1) << 63); }

static inline unsigned radix_bucket(uint64_t key, uint64_t last)
{
    uint64_t x = key ^ last;
    return x ? 64u - (unsigned)__builtin_clzll(x) : 0u;
}

static inline void radix_append(radix *h, unsigned bi, const sim_event *ev)
{
    rbucket *b = &h->b[bi];
    if (b->len == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 64;
        b->ev = dt_xrealloc(b->ev, b->cap * sizeof *b->ev);
    }
    b->ev[b->len++] = *ev;
    if (bi) h->nonempty |= UINT64_C(1) << (bi - 1);
}

static inline void radix_init(radix *h, size_t cap)
{
    (void)cap;
    memset(h, 0, sizeof *h);
}

static inline void radix_free(radix *h)
{
    for (int i = 0; i < 65; i++) free(h->b[i].ev);
}

/* Bucket 0 is empty and n > 0: refill it from the lowest non-empty bucket. */
static inline void radix_settle(radix *h)
{
    unsigned bi = 1u + (unsigned)__builtin_ctzll(h->nonempty);
    rbucket *b = &h->b[bi];
    uint64_t m = UINT64_MAX;
    for (uint32_t i = 0; i < b->len; i++) {
        uint64_t k = radix_key(b->ev[i].time);
        m = k < m ? k : m;
    }
    h->last = m;
    h->nonempty &= ~(UINT64_C(1) << (bi - 1));
    uint32_t len = b->len;
    b->len = 0;
    for (uint32_t i = 0; i < len; i++)
        radix_append(h, radix_bucket(radix_key(b->ev[i].time), m), &b->ev[i]);
}

static inline void radix_push(radix *h, sim_event ev)
{
    ev.seq = h->next_seq++;
    uint64_t k = radix_key(ev.time);
    if (h->n == 0) {
        h->last = k;
    } else if (k < h->last) {
        /* Gather in bucket order (keeps equal keys in insertion order), re-bucket. */
        sim_event *all = dt_xmalloc(h->n * sizeof *all);
        size_t m = 0;
        for (unsigned i = 0; i < 65; i++) {
            for (uint32_t j = i ? 0 : h->head; j < h->b[i].len; j++) all[m++] = h->b[i].ev[j];
            h->b[i].len = 0;
        }
        h->head = 0;
        h->nonempty = 0;
        h->last = k;
        for (size_t j = 0; j < m; j++) radix_append(h, radix_bucket(radix_key(all[j].time), k), &all[j]);
        free(all);
    }
    radix_append(h, radix_bucket(k, h->last), &ev);
    h->n++;
}

static inline bool radix_pop(radix *h, sim_event *out)
{
    if (h->n == 0) return false;
    rbucket *b0 = &h->b[0];
    *out = b0->ev[h->head++];
    if (h->head == b0->len) {
        h->head = b0->len = 0;
        if (--h->n) radix_settle(h);
    } else {
        h->n--;
    }
    return true;
}

/* ---- pairing heap ----------------------------------------------------------------------- */

#define HQ_NIL UINT32_MAX

typedef struct pnode {
    sim_event ev;
    uint32_t child, sibling;
} pnode;

typedef struct pairing {
    pnode *pool;
    uint32_t cap, used, free_head, root;
    size_t n;
    uint64_t next_seq;
} pairing;

static inline void pairing_init(pairing *h, size_t cap)
{
    memset(h, 0, sizeof *h);
    h->cap = (uint32_t)(cap ? cap : 1024);
    h->pool = dt_xmalloc(h->cap * sizeof *h->pool);
    h->free_head = HQ_NIL;
    h->root = HQ_NIL;
}

static inline void pairing_free(pairing *h) { free(h->pool); }

/* Link two roots; the later one becomes the first child of the earlier. */
static inline uint32_t pairing_meld(pnode *p, uint32_t a, uint32_t b)
{
    if (a == HQ_NIL) return b;
    if (b == HQ_NIL) return a;
    if (hq_before(&p[b].ev, &p[a].ev)) {
        uint32_t t = a;
        a = b;
        b = t;
    }
    p[b].sibling = p[a].child;
    p[a].child = b;
    return a;
}

static inline void pairing_push(pairing *h, sim_event ev)
{
    uint32_t x;
    if (h->free_head != HQ_NIL) {
        x = h->free_head;
        h->free_head = h->pool[x].sibling;
    } else {
        if (h->used == h->cap) {
            h->cap *= 2;
            h->pool = dt_xrealloc(h->pool, h->cap * sizeof *h->pool);
        }
        x = h->used++;
    }
    ev.seq = h->next_seq++;
    h->pool[x] = (pnode){.ev = ev, .child = HQ_NIL, .sibling = HQ_NIL};
    h->root = pairing_meld(h->pool, h->root, x);
    h->n++;
}

static inline bool pairing_pop(pairing *h, sim_event *out)
{
    if (h->root == HQ_NIL) return false;
    pnode *p = h->pool;
    uint32_t r = h->root;
    *out = p[r].ev;
    /* Pass 1: meld children pairwise left to right, threading the results into a reversed
     * list through `sibling`. Pass 2: meld that list into one tree (right to left). */
    uint32_t c = p[r].child, rev = HQ_NIL;
    while (c != HQ_NIL) {
        uint32_t a = c, b = p[a].sibling;
        if (b == HQ_NIL) {
            p[a].sibling = rev;
            rev = a;
            break;
        }
        c = p[b].sibling;
        p[a].sibling = p[b].sibling = HQ_NIL;
        uint32_t m = pairing_meld(p, a, b);
        p[m].sibling = rev;
        rev = m;
    }
    uint32_t acc = HQ_NIL;
    while (rev != HQ_NIL) {
        uint32_t next = p[rev].sibling;
        p[rev].sibling = HQ_NIL;
        acc = pairing_meld(p, acc, rev);
        rev = next;
    }
    h->root = acc;
    p[r].sibling = h->free_head;
    h->free_head = r;
    h->n--;
    return true;
}

#endif
