/* test_threads.c - one function on several threads (dtsim/threads.h).
 * Pins down: dt_threads_run runs the function on the calling thread and on up to n - 1 more,
 * each item of a shared counter is done exactly once whatever n (1, 2, 3, 8; n < 1 is 1), and it
 * returns how many threads ran it; dt_threads_start returns how many started (0 for n < 1),
 * joining empties the set; when the system will start no thread (an unprivileged user at a process limit of 1,
 * in a forked child: needs root and Check's fork mode, and no ASan), start returns 0 and run still does
 * every item, on the calling thread alone.
 * Leaves free: which thread does which item. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "dtsim/threads.h"
#include "testutil.h"

enum { ITEMS = 1000 };

typedef struct work {
    atomic_int next;
    atomic_int done[ITEMS];
    atomic_int calls;      /* how many threads entered the function */
    pthread_t caller;
    atomic_int by_caller;  /* items the calling thread did */
} work;

static void *worker(void *arg)
{
    work *w = arg;
    atomic_fetch_add(&w->calls, 1);
    for (int k; (k = atomic_fetch_add(&w->next, 1)) < ITEMS;) {
        atomic_fetch_add(&w->done[k], 1);
        if (pthread_equal(pthread_self(), w->caller)) atomic_fetch_add(&w->by_caller, 1);
    }
    return NULL;
}

static void reset(work *w)
{
    memset(w, 0, sizeof *w);
    w->caller = pthread_self();
}

static void each_once(work *w)
{
    for (int k = 0; k < ITEMS; k++) ck_assert_int_eq(atomic_load(&w->done[k]), 1);
}

START_TEST(run_does_each_item_once)
{
    static work w;
    const int ns[] = {1, 2, 3, 8};
    for (int i = 0; i < 4; i++) {
        reset(&w);
        int ran = dt_threads_run(ns[i], worker, &w);
        /* as many as the system started (all of them unless it limits processes) */
        ck_assert(ran >= 1 && ran <= ns[i]);
        ck_assert_int_eq(atomic_load(&w.calls), ran);
        each_once(&w);
    }
    for (int n = -1; n <= 0; n++) {
        reset(&w);
        ck_assert_int_eq(dt_threads_run(n, worker, &w), 1);
        ck_assert_int_eq(atomic_load(&w.by_caller), ITEMS);
        each_once(&w);
    }
}
END_TEST

START_TEST(start_and_join)
{
    static work w;
    reset(&w);
    dt_threads t;
    ck_assert_int_eq(dt_threads_start(&t, 0, worker, &w), 0);
    ck_assert_int_eq(t.n, 0);
    dt_threads_join(&t); /* nothing to join */
    int started = dt_threads_start(&t, 3, worker, &w);
    ck_assert(started >= 0 && started <= 3);
    if (started == 0) worker(&w); /* the caller's fallback, as plan and sweep do */
    dt_threads_join(&t);
    ck_assert_int_eq(t.n, 0);
    ck_assert_ptr_null(t.th);
    ck_assert_int_eq(atomic_load(&w.calls), started ? started : 1);
    ck_assert_int_eq(atomic_load(&w.by_caller), started ? 0 : ITEMS); /* the caller only waited */
    each_once(&w);
}
END_TEST

/* No thread can start: the work is the calling thread's. */
START_TEST(no_thread_starts)
{
#if defined(__SANITIZE_ADDRESS__)
    return; /* LeakSanitizer needs a thread of its own at exit */
#endif
    const char *fork_env = getenv("CK_FORK");
    if (getuid() != 0 || (fork_env && !strcmp(fork_env, "no"))) return; /* see the header */
    /* this test runs in a child of its own (fork mode): the limit ends with it. Where the
     * unprivileged ids cannot be taken (a user namespace without them) there is nothing to
     * check. */
    if (setgid(65534) != 0 || setuid(65534) != 0) return;
    struct rlimit one = {1, 1};
    ck_assert_int_eq(setrlimit(RLIMIT_NPROC, &one), 0);
    static work w;
    reset(&w);
    dt_threads t;
    ck_assert_int_eq(dt_threads_start(&t, 4, worker, &w), 0);
    dt_threads_join(&t);
    ck_assert_int_eq(dt_threads_run(4, worker, &w), 1);
    ck_assert_int_eq(atomic_load(&w.calls), 1);
    ck_assert_int_eq(atomic_load(&w.by_caller), ITEMS);
    each_once(&w);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("threads");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, run_does_each_item_once);
    tcase_add_test(tc, start_and_join);
    tcase_add_test(tc, no_thread_starts);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return dt_run_suite(suite()); }
