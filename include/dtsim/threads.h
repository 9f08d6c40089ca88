/* threads.h - one function run on several threads that share its work.
 *
 * Every parallel loop of the library (the steps of `run --steps`, a sweep's points, the
 * planner's probes and simulations, the validation cases) runs interchangeable workers that take
 * the next item from a shared counter, so how many threads run them changes the wall time and
 * never the results. What these helpers add is what each loop used to write for itself: start up
 * to n threads, treat a thread that cannot be started (a resource limit: RLIMIT_NPROC, address
 * space for its stack) as one fewer worker rather than as an error, and join what started.
 *
 * The consequence for callers: a worker must not own a fixed share of the work (items k, k + n,
 * ...), since the thread meant to run it may never start; the calling thread runs the workers'
 * function itself when no thread started (dt_threads_run always does), so the work is done on
 * however many threads the system gives, one at least.
 * Nothing here prints, aborts or keeps state between calls.
 */
#ifndef DTSIM_THREADS_H
#define DTSIM_THREADS_H

#include <pthread.h>

typedef void *(*dt_thread_fn)(void *arg);

/* The threads of one dt_threads_start, for dt_threads_join. */
typedef struct dt_threads {
    pthread_t *th; /* the started ones */
    int n;         /* how many started */
} dt_threads;

/* Start up to n threads running fn(arg) (none when n < 1). Returns how many started: fewer than
 * n when the system refused one (the rest are not tried) or when the table of n threads could
 * not be allocated (0 then). Join them with dt_threads_join, whatever the count. */
int dt_threads_start(dt_threads *t, int n, dt_thread_fn fn, void *arg);

/* Wait for every thread that dt_threads_start started, and free the table; t is then empty. */
void dt_threads_join(dt_threads *t);

/* fn(arg) on the calling thread and on up to n - 1 more threads; returns when all have returned.
 * Returns how many threads ran it (1 to n; 1 when n < 1). */
int dt_threads_run(int n, dt_thread_fn fn, void *arg);

#endif
