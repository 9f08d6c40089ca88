/* kern_cpu_ring.c - ring all-reduce over shared memory, one thread per rank.
 *
 * The shape of NCCL's ring, on a CPU: rank r sends only to r+1 and receives only from r-1, via a
 * FIFO of KERN_RING_SLOTS chunk slots that lives with the receiver. A run is 2(n-1) steps:
 * n-1 reduce-scatter steps (receive a partial sum of one segment, add the local segment into it)
 * then n-1 all-gather steps (receive a finished segment, copy it). Every step is cut into chunks
 * and each rank alternates "send chunk c, receive chunk c", so a chunk travels on while its
 * successor is still being reduced upstream: the pipelining that makes the ring bandwidth-optimal.
 * Synchronisation is per chunk through two monotonic counters per FIFO (posted by the sender,
 * consumed by the receiver), with acquire/release ordering; no locks on the data path.
 *
 * Waiting spins briefly, yields a little, then sleeps on the FIFO's condition variable
 * (fifo_wait): on a machine with fewer free cores than ranks a pure spin would burn the time
 * slice the neighbour needs, and a pure yield hands the core to other jobs for whole slices.
 * The cost is a wake-up (a few microseconds) when a wait outlasts the spin.
 *
 * Deadlock freedom: a rank blocks on send only while its right FIFO holds SLOTS unconsumed
 * chunks; since every rank consumes chunk c before it sends chunk c+1, all ranks blocked on send
 * would need full FIFOs that nobody has filled - impossible.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dtsim/kern.h"

typedef struct ring_fifo {
    unsigned char *slots;       /* KERN_RING_SLOTS * chunk_bytes */
    _Atomic uint64_t posted;    /* chunks written by the left neighbour (monotonic) */
    _Atomic uint64_t consumed;  /* chunks read by the owner (monotonic) */
    _Atomic int sleepers;       /* threads blocked on cv waiting for either counter */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char pad[64];               /* keep neighbours' counters off one cache line */
} ring_fifo;

typedef struct ring_rank {
    kern_cpu_ring *ring;
    int rank;
    uint64_t sent, received; /* this rank's view of its right FIFO / own FIFO counters */
} ring_rank;

struct kern_cpu_ring {
    int n;
    int started;               /* rank threads running (n once created; 1 rank runs none) */
    size_t chunk_bytes;
    pthread_t *threads;
    ring_rank *ranks;
    ring_fifo *fifo; /* fifo[r] is rank r's receive FIFO */
    /* start/finish handshakes: generation counters, waited on by spinning briefly, then
     * yielding, then sleeping on the condition variable (see gate_wait) */
    _Atomic uint64_t go;       /* runs started (written by the caller) */
    _Atomic uint64_t finished; /* rank-runs finished (each rank adds 1 per run) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* the job, written by the caller before the start barrier, read-only during a run */
    bool quit;
    kern_dtype dtype;
    void *const *bufs;
    size_t count;
};

/* Wait for *v >= target: spin, then yield for a while (a run is about to start or end and a
 * futex wake-up costs tens of microseconds on a busy VM), then sleep until gate_signal. The
 * signaller takes the mutex to broadcast, so a sleeper cannot miss the change. */
static void gate_wait(kern_cpu_ring *r, _Atomic uint64_t *v, uint64_t target)
{
    for (unsigned i = 0; i < 256; i++) {
        if (atomic_load_explicit(v, memory_order_acquire) >= target) return;
        if (i >= 224) sched_yield();
    }
    pthread_mutex_lock(&r->mu);
    while (atomic_load_explicit(v, memory_order_acquire) < target) pthread_cond_wait(&r->cv, &r->mu);
    pthread_mutex_unlock(&r->mu);
}

static void gate_signal(kern_cpu_ring *r, _Atomic uint64_t *v)
{
    atomic_fetch_add_explicit(v, 1, memory_order_acq_rel);
    pthread_mutex_lock(&r->mu);
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

/* Wait for the neighbour: spin (it is usually running on another core and a chunk takes
 * microseconds), yield a few times, then sleep. Sleeping matters on a loaded machine: a thread
 * that only yields hands its core to whatever else is runnable for a whole time slice, while a
 * sleeper that is woken gets the scheduler's wake-up preference. The poster only pays for the
 * wake-up (mutex + broadcast) when someone is asleep: both sides use sequentially consistent
 * operations on the counter and on `sleepers`, so either the poster sees the sleeper or the
 * sleeper sees the new count. */
static void fifo_wait(ring_fifo *f, _Atomic uint64_t *v, uint64_t target)
{
    for (unsigned i = 0; i < 256; i++) {
        if (atomic_load_explicit(v, memory_order_acquire) >= target) return;
        if (i >= 224) sched_yield();
    }
    pthread_mutex_lock(&f->mu);
    atomic_fetch_add(&f->sleepers, 1);
    while (atomic_load(v) < target) pthread_cond_wait(&f->cv, &f->mu);
    atomic_fetch_sub(&f->sleepers, 1);
    pthread_mutex_unlock(&f->mu);
}

static void fifo_post(ring_fifo *f, _Atomic uint64_t *v, uint64_t value)
{
    atomic_store(v, value);
    if (atomic_load(&f->sleepers) > 0) {
        pthread_mutex_lock(&f->mu);
        pthread_cond_broadcast(&f->cv);
        pthread_mutex_unlock(&f->mu);
    }
}

/* a[i] = a[i] + b[i], rounded in the storage type. */
void kern_reduce_into(kern_dtype t, void *a, const void *b, size_t n)
{
    switch (t) {
    case KERN_FP32: {
        float *x = a;
        const float *y = b;
        for (size_t i = 0; i < n; i++) x[i] = y[i] + x[i];
        break;
    }
    case KERN_BF16: {
        uint16_t *x = a;
        const uint16_t *y = b;
        for (size_t i = 0; i < n; i++)
            x[i] = kern_f32_to_bf16(kern_bf16_to_f32(y[i]) + kern_bf16_to_f32(x[i]));
        break;
    }
    case KERN_FP16: {
        uint16_t *x = a;
        const uint16_t *y = b;
        for (size_t i = 0; i < n; i++)
            x[i] = kern_f32_to_fp16(kern_fp16_to_f32(y[i]) + kern_fp16_to_f32(x[i]));
        break;
    }
    default: DT_ASSERT(0);
    }
}

static size_t seg_begin(size_t count, int n, int k) { return (size_t)((count * (size_t)k) / (size_t)n); }

static int mod(int a, int n) { return ((a % n) + n) % n; }

/* One step: send segment send_seg to the right, receive segment recv_seg from the left and either
 * reduce it into (reduce=true) or copy it over the local buffer. */
static void ring_step(ring_rank *me, int send_seg, int recv_seg, bool reduce)
{
    kern_cpu_ring *r = me->ring;
    int n = r->n;
    size_t es = kern_dtype_size(r->dtype);
    size_t per_chunk = r->chunk_bytes / es;
    unsigned char *buf = r->bufs[me->rank];
    ring_fifo *out = &r->fifo[(me->rank + 1) % n], *in = &r->fifo[me->rank];

    size_t s0 = seg_begin(r->count, n, send_seg), s1 = seg_begin(r->count, n, send_seg + 1);
    size_t r0 = seg_begin(r->count, n, recv_seg), r1 = seg_begin(r->count, n, recv_seg + 1);
    size_t ns = (s1 - s0 + per_chunk - 1) / per_chunk, nr = (r1 - r0 + per_chunk - 1) / per_chunk;
    size_t nc = ns > nr ? ns : nr;
    for (size_t c = 0; c < nc; c++) {
        if (c < ns) {
            size_t e0 = s0 + c * per_chunk, e1 = e0 + per_chunk < s1 ? e0 + per_chunk : s1;
            if (me->sent >= KERN_RING_SLOTS) fifo_wait(out, &out->consumed, me->sent - KERN_RING_SLOTS + 1);
            unsigned char *slot = out->slots + (me->sent % KERN_RING_SLOTS) * r->chunk_bytes;
            memcpy(slot, buf + e0 * es, (e1 - e0) * es);
            me->sent++;
            fifo_post(out, &out->posted, me->sent);
        }
        if (c < nr) {
            size_t e0 = r0 + c * per_chunk, e1 = e0 + per_chunk < r1 ? e0 + per_chunk : r1;
            fifo_wait(in, &in->posted, me->received + 1);
            const unsigned char *slot = in->slots + (me->received % KERN_RING_SLOTS) * r->chunk_bytes;
            if (reduce)
                kern_reduce_into(r->dtype, buf + e0 * es, slot, e1 - e0);
            else
                memcpy(buf + e0 * es, slot, (e1 - e0) * es);
            me->received++;
            fifo_post(in, &in->consumed, me->received);
        }
    }
}

static void *ring_thread(void *arg)
{
    ring_rank *me = arg;
    kern_cpu_ring *r = me->ring;
    int n = r->n, k = me->rank;
    for (uint64_t gen = 1;; gen++) {
        gate_wait(r, &r->go, gen);
        if (r->quit) break;
        for (int s = 0; s < n - 1; s++) /* reduce-scatter: afterwards k owns segment k+1 */
            ring_step(me, mod(k - s, n), mod(k - s - 1, n), true);
        for (int s = 0; s < n - 1; s++) /* all-gather: pass finished segments on */
            ring_step(me, mod(k + 1 - s, n), mod(k - s, n), false);
        gate_signal(r, &r->finished);
    }
    return NULL;
}

int kern_cpu_ring_create(int ranks, size_t chunk_bytes, kern_cpu_ring **out, dt_error *err)
{
    *out = NULL;
    if (ranks < 1)
        return dt_error_set(err, DT_EINPUT, NULL, NULL, "cpu ring: needs 1 or more ranks, found %d", ranks);
    kern_cpu_ring *r = dt_xcalloc(1, sizeof *r);
    r->n = ranks;
    r->chunk_bytes = chunk_bytes ? chunk_bytes : 64 * 1024;
    r->chunk_bytes -= r->chunk_bytes % 4; /* whole elements of every dtype */
    DT_ASSERT(r->chunk_bytes >= 4);
    if (ranks == 1) {
        *out = r;
        return DT_OK;
    }
    r->fifo = dt_xcalloc((size_t)ranks, sizeof *r->fifo);
    r->ranks = dt_xcalloc((size_t)ranks, sizeof *r->ranks);
    r->threads = dt_xcalloc((size_t)ranks, sizeof *r->threads);
    for (int i = 0; i < ranks; i++) {
        r->fifo[i].slots = dt_xmalloc(KERN_RING_SLOTS * r->chunk_bytes);
        atomic_init(&r->fifo[i].posted, 0);
        atomic_init(&r->fifo[i].consumed, 0);
        atomic_init(&r->fifo[i].sleepers, 0);
        DT_ASSERT(pthread_mutex_init(&r->fifo[i].mu, NULL) == 0);
        DT_ASSERT(pthread_cond_init(&r->fifo[i].cv, NULL) == 0);
        r->ranks[i].ring = r;
        r->ranks[i].rank = i;
    }
    atomic_init(&r->go, 0);
    atomic_init(&r->finished, 0);
    DT_ASSERT(pthread_mutex_init(&r->mu, NULL) == 0);
    DT_ASSERT(pthread_cond_init(&r->cv, NULL) == 0);
    /* Every rank is a thread of its own (each waits for its neighbour): a rank that cannot start
     * (a limit on processes or on address space) makes the ring impossible, not slower. */
    int e = 0;
    while (r->started < ranks &&
           (e = pthread_create(&r->threads[r->started], NULL, ring_thread, &r->ranks[r->started])) == 0)
        r->started++;
    if (r->started < ranks) {
        int started = r->started;
        kern_cpu_ring_destroy(r);
        return dt_error_set(err, DT_EIO, NULL, NULL,
                            "cpu ring: could not start the thread of rank %d of %d (%s); "
                            "%d started. Fewer --ranks, or a higher limit on processes (ulimit -u)",
                            started, ranks, strerror(e), started);
    }
    *out = r;
    return DT_OK;
}

void kern_cpu_ring_destroy(kern_cpu_ring *r)
{
    if (!r) return;
    if (r->n > 1) {
        r->quit = true;
        gate_signal(r, &r->go);
        for (int i = 0; i < r->started; i++) pthread_join(r->threads[i], NULL);
        pthread_mutex_destroy(&r->mu);
        pthread_cond_destroy(&r->cv);
        for (int i = 0; i < r->n; i++) {
            free(r->fifo[i].slots);
            pthread_mutex_destroy(&r->fifo[i].mu);
            pthread_cond_destroy(&r->fifo[i].cv);
        }
    }
    free(r->fifo);
    free(r->ranks);
    free(r->threads);
    free(r);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double kern_cpu_ring_allreduce(kern_cpu_ring *r, kern_dtype t, void *const *bufs, size_t count)
{
    if (r->n == 1) return 0.0;
    r->dtype = t;
    r->bufs = bufs;
    r->count = count;
    /* The release in gate_signal orders these writes before the workers' acquire of `go`. */
    uint64_t gen = atomic_load_explicit(&r->go, memory_order_relaxed) + 1;
    double t0 = now_s();
    gate_signal(r, &r->go);
    gate_wait(r, &r->finished, gen * (uint64_t)r->n);
    return now_s() - t0;
}

void kern_allreduce_reference(kern_dtype t, const void *const *in, int ranks, size_t count,
                              void *out)
{
    for (int k = 0; k < ranks; k++) {
        size_t e0 = seg_begin(count, ranks, k), e1 = seg_begin(count, ranks, k + 1);
        for (size_t e = e0; e < e1; e++) {
            float acc = kern_load(t, in[k], e);
            for (int j = 1; j < ranks; j++) {
                float sum = acc + kern_load(t, in[(k + j) % ranks], e);
                kern_store(t, out, e, sum); /* round in the storage type after every add */
                acc = kern_load(t, out, e);
            }
            kern_store(t, out, e, acc);
        }
    }
}
