/* threads.c - start, join and run workers on several threads (dtsim/threads.h). */
#include "dtsim/threads.h"

#include <stdlib.h>

int dt_threads_start(dt_threads *t, int n, dt_thread_fn fn, void *arg)
{
    t->th = NULL;
    t->n = 0;
    if (n < 1) return 0;
    /* malloc, not dt_xmalloc: no table means no threads, and the caller works alone */
    t->th = malloc((size_t)n * sizeof *t->th);
    if (!t->th) return 0;
    while (t->n < n && pthread_create(&t->th[t->n], NULL, fn, arg) == 0) t->n++;
    return t->n;
}

void dt_threads_join(dt_threads *t)
{
    for (int i = 0; i < t->n; i++) pthread_join(t->th[i], NULL);
    free(t->th);
    t->th = NULL;
    t->n = 0;
}

int dt_threads_run(int n, dt_thread_fn fn, void *arg)
{
    dt_threads t;
    int started = dt_threads_start(&t, n - 1, fn, arg);
    fn(arg);
    dt_threads_join(&t);
    return started + 1;
}
