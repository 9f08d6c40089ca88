/* test_sim.c - the pending-event queue and the engine loop.
 * Pins down: events pop in (time, seq) order with equal times first-in first-out, including
 * negative and extreme times and pushes earlier than the last peek (the rebuild path); the queue
 * matches a linear-scan reference over seeded random push/pop mixes (monotone like the engine,
 * and arbitrary); the engine calls handlers in that order with the right model pointer and
 * clock, sim_run(until) handles exactly the events at times <= until and resumes, sim_stop ends
 * a run after the current event, counters add up, sim_schedule_in saturates, and scheduling in
 * the past, an unknown kind, too many kinds or a nested sim_run aborts.
 * Leaves free: the queue's internal layout and memory use, and speed (bench_hold measures it). */
#include <signal.h>
#include <stdint.h>
#include <string.h>

#include "dtsim/error.h"
#include "dtsim/sim.h"
#include "testutil.h"

/* Check's ck_assert* records a checkpoint per passing call (a pipe write when forking); in the
 * long loops below that dominated the run time, ~300x under valgrind. FAST() reports only on
 * failure. */
#define FAST(cond)                                                                          \
    do {                                                                                    \
        if (!(cond)) ck_abort_msg("%s:%d: assertion %s failed", __FILE__, __LINE__, #cond); \
    } while (0)

/* ---- queue ---------------------------------------------------------------------------- */

static sim_event ev_at(sim_time_t t, uint32_t id)
{
    return (sim_event){.time = t, .kind = 0, .id = id, .data = (uint64_t)t * 3u + id};
}

START_TEST(queue_empty)
{
    sim_queue *q = sim_queue_create(0);
    sim_event e;
    ck_assert_int_eq(sim_queue_size(q), 0);
    ck_assert_ptr_null(sim_queue_peek(q));
    ck_assert(!sim_queue_pop(q, &e));
    sim_queue_push(q, ev_at(5, 1));
    ck_assert(sim_queue_pop(q, &e));
    ck_assert(!sim_queue_pop(q, &e));
    ck_assert_ptr_null(sim_queue_peek(q));
    sim_queue_destroy(q);
    sim_queue_destroy(NULL);
}
END_TEST

START_TEST(queue_order_hand)
{
    /* Times chosen to cross the sign bit, share high bits, and hit both extremes. */
    const sim_time_t t[] = {7, -3, INT64_MAX, 0, 7, INT64_MIN, 1 << 20, -3, (1 << 20) + 1, 6};
    const uint32_t want_id[] = {5, 1, 7, 3, 9, 0, 4, 6, 8, 2};
    const sim_time_t want_t[] = {INT64_MIN, -3, -3, 0, 6, 7, 7, 1 << 20, (1 << 20) + 1,
                                 INT64_MAX};
    sim_queue *q = sim_queue_create(4);
    for (uint32_t i = 0; i < 10; i++) sim_queue_push(q, ev_at(t[i], i));
    ck_assert_int_eq(sim_queue_size(q), 10);
    for (int i = 0; i < 10; i++) {
        const sim_event *p = sim_queue_peek(q);
        ck_assert_ptr_nonnull(p);
        ck_assert_int_eq(p->id, want_id[i]);
        sim_event e;
        ck_assert(sim_queue_pop(q, &e));
        ck_assert_int_eq(e.time, want_t[i]);
        ck_assert_int_eq(e.id, want_id[i]);
        ck_assert_uint_eq(e.seq, want_id[i]); /* seq = push order */
        ck_assert_uint_eq(e.data, (uint64_t)t[e.id] * 3u + e.id);
    }
    ck_assert_int_eq(sim_queue_size(q), 0);
    sim_queue_destroy(q);
}
END_TEST

START_TEST(queue_fifo_ties)
{
    sim_queue *q = sim_queue_create(0);
    /* 1000 events at one time, interleaved with later ones; then more at that time after some
     * pops (they must still come after the earlier ones). */
    for (uint32_t i = 0; i < 1000; i++) {
        sim_queue_push(q, ev_at(100, i));
        sim_queue_push(q, ev_at(200 + i, 10000 + i));
    }
    sim_event e;
    for (uint32_t i = 0; i < 500; i++) {
        FAST(sim_queue_pop(q, &e));
        FAST((e.time) == (100));
        FAST((e.id) == (i));
    }
    for (uint32_t i = 1000; i < 1500; i++) sim_queue_push(q, ev_at(100, i));
    for (uint32_t i = 500; i < 1500; i++) {
        FAST(sim_queue_pop(q, &e));
        FAST((e.time) == (100));
        FAST((e.id) == (i));
    }
    for (uint32_t i = 0; i < 1000; i++) {
        FAST(sim_queue_pop(q, &e));
        FAST((e.id) == (10000 + i));
    }
    sim_queue_destroy(q);
}
END_TEST

START_TEST(queue_push_before_peek)
{
    /* A peek may advance the queue's internal lower bound to the next pending time; a push
     * earlier than that (allowed, e.g. after sim_run(until) returns) must still come first, and
     * equal-time events must keep FIFO order across the rebuild. */
    sim_queue *q = sim_queue_create(0);
    sim_queue_push(q, ev_at(10, 0));
    sim_queue_push(q, ev_at(1000, 1));
    sim_queue_push(q, ev_at(1000, 2));
    sim_event e;
    ck_assert(sim_queue_pop(q, &e));
    ck_assert_int_eq(e.id, 0);
    ck_assert_int_eq(sim_queue_peek(q)->id, 1);
    sim_queue_push(q, ev_at(500, 3));
    sim_queue_push(q, ev_at(1000, 4));
    sim_queue_push(q, ev_at(20, 5));
    const uint32_t want[] = {5, 3, 1, 2, 4};
    for (int i = 0; i < 5; i++) {
        ck_assert(sim_queue_pop(q, &e));
        ck_assert_int_eq(e.id, want[i]);
    }
    sim_queue_destroy(q);
}
END_TEST

/* Linear-scan reference: obviously correct, O(n) per pop. */
typedef struct ref_queue {
    sim_event *ev;
    size_t n;
    uint64_t next_seq;
} ref_queue;

static void ref_push(ref_queue *r, sim_event e)
{
    e.seq = r->next_seq++;
    r->ev[r->n++] = e;
}

static sim_event ref_pop(ref_queue *r)
{
    size_t m = 0;
    for (size_t i = 1; i < r->n; i++) {
        const sim_event *a = &r->ev[i], *b = &r->ev[m];
        if (a->time < b->time || (a->time == b->time && a->seq < b->seq)) m = i;
    }
    sim_event e = r->ev[m];
    r->ev[m] = r->ev[--r->n];
    return e;
}

/* ops random push/pop steps; times drawn from a range of `spread` above a base that is the
 * last popped time when monotone, else anywhere in [-spread, spread]. */
static void random_vs_reference(uint64_t seed, int ops, sim_time_t spread, bool monotone)
{
    sim_rng *rng = sim_rng_create(seed, "test.queue");
    sim_queue *q = sim_queue_create(1);
    ref_queue r = {.ev = dt_xmalloc((size_t)ops * sizeof(sim_event))};
    sim_time_t now = 0;
    uint32_t id = 0;
    for (int i = 0; i < ops; i++) {
        bool push = r.n == 0 || sim_rng_uniform(rng) < 0.55;
        if (push) {
            sim_time_t off = (sim_time_t)sim_rng_uniform_int(rng, (uint64_t)spread);
            sim_time_t t = monotone ? now + off : off - spread / 2;
            sim_event e = ev_at(t, id++);
            sim_queue_push(q, e);
            ref_push(&r, e);
        } else {
            if (sim_rng_uniform(rng) < 0.3) {
                const sim_event *p = sim_queue_peek(q);
                FAST((p) != NULL);
            }
            sim_event want = ref_pop(&r), got;
            FAST(sim_queue_pop(q, &got));
            if (!(got.time == want.time && got.seq == want.seq && got.id == want.id &&
                  got.data == want.data))
                ck_abort_msg("seed %llu step %d: got (t=%lld seq=%llu) want (t=%lld seq=%llu)",
                             (unsigned long long)seed, i, (long long)got.time,
                             (unsigned long long)got.seq, (long long)want.time,
                             (unsigned long long)want.seq);
            now = got.time;
        }
        FAST((sim_queue_size(q)) == (r.n));
    }
    while (r.n) {
        sim_event want = ref_pop(&r), got;
        FAST(sim_queue_pop(q, &got));
        FAST((got.time) == (want.time));
        FAST((got.seq) == (want.seq));
    }
    FAST(sim_queue_peek(q) == NULL);
    free(r.ev);
    sim_queue_destroy(q);
    sim_rng_destroy(rng);
}

START_TEST(queue_random_monotone)
{
    /* Small spreads force many ties, large ones exercise the high buckets. */
    const sim_time_t spreads[] = {1, 4, 1000, (sim_time_t)1 << 40};
    for (uint64_t seed = 1; seed <= 3; seed++)
        for (int s = 0; s < 4; s++) random_vs_reference(seed, 4000, spreads[s], true);
}
END_TEST

START_TEST(queue_random_any_order)
{
    const sim_time_t spreads[] = {3, 100000, (sim_time_t)1 << 62};
    for (uint64_t seed = 1; seed <= 3; seed++)
        for (int s = 0; s < 3; s++) random_vs_reference(seed, 3000, spreads[s], false);
}
END_TEST

START_TEST(queue_large_sorted)
{
    /* 50k events in one go (buckets grow), popped in nondecreasing time, ties by seq. */
    sim_rng *rng = sim_rng_create(7, "test.queue.large");
    sim_queue *q = sim_queue_create(16);
    const uint32_t n = 50000;
    for (uint32_t i = 0; i < n; i++)
        sim_queue_push(q, ev_at((sim_time_t)sim_rng_uniform_int(rng, 50000), i));
    sim_event prev, e;
    FAST(sim_queue_pop(q, &prev));
    for (uint32_t i = 1; i < n; i++) {
        FAST(sim_queue_pop(q, &e));
        FAST(e.time > prev.time || (e.time == prev.time && e.seq > prev.seq));
        prev = e;
    }
    FAST((sim_queue_size(q)) == (0));
    sim_queue_destroy(q);
    sim_rng_destroy(rng);
}
END_TEST

/* ---- engine --------------------------------------------------------------------------- */

typedef struct trace {
    int n;
    sim_time_t t[64];
    uint32_t kind[64], id[64];
    sim_time_t now_seen[64];
    sim_engine *eng;
    uint32_t chain_kind; /* events of this kind reschedule themselves data times */
    uint32_t stop_id;    /* sim_stop() when handling this id */
} trace;

static void record(void *model, sim_engine *eng, const sim_event *ev)
{
    trace *tr = model;
    ck_assert_ptr_eq(tr->eng, eng);
    ck_assert_int_lt(tr->n, 64);
    tr->t[tr->n] = ev->time;
    tr->kind[tr->n] = ev->kind;
    tr->id[tr->n] = ev->id;
    tr->now_seen[tr->n] = sim_now(eng);
    tr->n++;
    if (ev->kind == tr->chain_kind && ev->data > 0)
        sim_schedule_in(eng, sim_now(eng), 10, ev->kind, ev->id + 1, ev->data - 1);
    if (ev->id == tr->stop_id) sim_stop(eng);
}

START_TEST(engine_order_and_dispatch)
{
    sim_engine *eng = sim_engine_create();
    trace a = {.eng = eng, .chain_kind = UINT32_MAX, .stop_id = UINT32_MAX};
    trace b = {.eng = eng, .chain_kind = UINT32_MAX, .stop_id = UINT32_MAX};
    uint32_t ka = sim_kind_register(eng, "a", record, &a);
    uint32_t kb = sim_kind_register(eng, "b", record, &b);
    ck_assert_uint_eq(ka, 0);
    ck_assert_uint_eq(kb, 1);
    ck_assert_str_eq(sim_kind_name(eng, kb), "b");
    ck_assert_str_eq(sim_kind_name(eng, 9), "?");
    sim_schedule(eng, 30, ka, 1, 0);
    sim_schedule(eng, 10, kb, 2, 0);
    sim_schedule(eng, 30, kb, 3, 0); /* same time as id 1, scheduled later: after it */
    sim_schedule(eng, 20, ka, 4, 0);
    ck_assert_uint_eq(sim_pending(eng), 4);
    ck_assert_uint_eq(sim_run(eng, SIM_TIME_MAX), 4);
    ck_assert_int_eq(a.n, 2);
    ck_assert_int_eq(b.n, 2);
    ck_assert_int_eq(b.id[0], 2);
    ck_assert_int_eq(b.t[0], 10);
    ck_assert_int_eq(a.id[0], 4);
    ck_assert_int_eq(a.now_seen[0], 20);
    ck_assert_int_eq(a.id[1], 1);
    ck_assert_int_eq(b.id[1], 3);
    ck_assert_int_eq(sim_now(eng), 30);
    ck_assert_uint_eq(sim_events_handled(eng), 4);
    ck_assert_uint_eq(sim_pending(eng), 0);
    sim_engine_destroy(eng);
}
END_TEST

static void zero_delay(void *model, sim_engine *eng, const sim_event *ev)
{
    trace *tr = model;
    tr->id[tr->n++] = ev->id;
    /* An event scheduled at now from a handler runs after those already pending at now. */
    if (ev->id == 1) sim_schedule(eng, sim_now(eng), ev->kind, 100, 0);
}

START_TEST(engine_zero_delay_fifo)
{
    sim_engine *eng = sim_engine_create();
    trace tr = {0};
    uint32_t k = sim_kind_register(eng, "z", zero_delay, &tr);
    sim_schedule(eng, 5, k, 1, 0);
    sim_schedule(eng, 5, k, 2, 0);
    sim_schedule(eng, 6, k, 3, 0);
    ck_assert_uint_eq(sim_run(eng, SIM_TIME_MAX), 4);
    const uint32_t want[] = {1, 2, 100, 3};
    for (int i = 0; i < 4; i++) ck_assert_int_eq(tr.id[i], want[i]);
    sim_engine_destroy(eng);
}
END_TEST

START_TEST(engine_run_until)
{
    sim_engine *eng = sim_engine_create();
    trace tr = {.eng = eng, .chain_kind = 0, .stop_id = UINT32_MAX};
    uint32_t k = sim_kind_register(eng, "chain", record, &tr);
    /* A chain at 0, 10, 20, ..., 100 (11 events, each scheduling the next). */
    sim_schedule(eng, 0, k, 0, 10);
    ck_assert_uint_eq(sim_run(eng, 35), 4); /* 0 10 20 30 */
    ck_assert_int_eq(sim_now(eng), 30);
    ck_assert_uint_eq(sim_pending(eng), 1);
    ck_assert_uint_eq(sim_run(eng, 40), 1); /* exactly at until: handled */
    ck_assert_int_eq(sim_now(eng), 40);
    ck_assert_uint_eq(sim_run(eng, 40), 0); /* nothing left at or before 40 */
    /* Scheduling between runs, earlier than the pending event at 50. */
    sim_schedule(eng, 45, k, 77, 0);
    ck_assert_uint_eq(sim_run(eng, SIM_TIME_MAX), 7); /* 45, then 50 .. 100 */
    ck_assert_int_eq(tr.n, 12);
    ck_assert_int_eq(tr.id[5], 77);
    ck_assert_int_eq(tr.t[5], 45);
    for (int i = 6; i < 12; i++) ck_assert_int_eq(tr.t[i], 10 * (i - 1));
    ck_assert_int_eq(sim_now(eng), 100);
    ck_assert_uint_eq(sim_events_handled(eng), 12);
    sim_engine_destroy(eng);
}
END_TEST

START_TEST(engine_stop)
{
    sim_engine *eng = sim_engine_create();
    trace tr = {.eng = eng, .chain_kind = UINT32_MAX, .stop_id = 3};
    uint32_t k = sim_kind_register(eng, "s", record, &tr);
    for (uint32_t i = 1; i <= 5; i++) sim_schedule(eng, i * 100, k, i, 0);
    ck_assert_uint_eq(sim_run(eng, SIM_TIME_MAX), 3); /* stops after handling id 3 */
    ck_assert_int_eq(sim_now(eng), 300);
    ck_assert_uint_eq(sim_pending(eng), 2);
    ck_assert_uint_eq(sim_run(eng, SIM_TIME_MAX), 2); /* a new run resumes */
    ck_assert_uint_eq(sim_events_handled(eng), 5);
    sim_engine_destroy(eng);
}
END_TEST

static void noop(void *model, sim_engine *eng, const sim_event *ev) {}

START_TEST(engine_schedule_in_past_aborts)
{
    sim_engine *eng = sim_engine_create();
    uint32_t k = sim_kind_register(eng, "n", noop, NULL);
    sim_schedule(eng, 100, k, 0, 0);
    sim_run(eng, SIM_TIME_MAX);
    sim_schedule(eng, 99, k, 0, 0); /* before now = 100: aborts */
}
END_TEST

START_TEST(engine_unknown_kind_aborts)
{
    sim_engine *eng = sim_engine_create();
    sim_kind_register(eng, "n", noop, NULL);
    sim_schedule(eng, 1, 1, 0, 0);
}
END_TEST

START_TEST(engine_too_many_kinds_aborts)
{
    sim_engine *eng = sim_engine_create();
    for (int i = 0; i <= SIM_MAX_KINDS; i++) sim_kind_register(eng, "k", noop, NULL);
}
END_TEST

static void reenter(void *model, sim_engine *eng, const sim_event *ev) { sim_run(eng, SIM_TIME_MAX); }

START_TEST(engine_reentrant_run_aborts)
{
    sim_engine *eng = sim_engine_create();
    uint32_t k = sim_kind_register(eng, "r", reenter, NULL);
    sim_schedule(eng, 1, k, 0, 0);
    sim_run(eng, SIM_TIME_MAX);
}
END_TEST

START_TEST(engine_schedule_at_now_ok)
{
    sim_engine *eng = sim_engine_create();
    uint32_t k = sim_kind_register(eng, "n", noop, NULL);
    sim_schedule(eng, 100, k, 0, 0);
    sim_run(eng, SIM_TIME_MAX);
    sim_schedule(eng, 100, k, 0, 0); /* at now: allowed */
    ck_assert_uint_eq(sim_run(eng, SIM_TIME_MAX), 1);
    ck_assert_uint_eq(sim_events_handled(eng), 2);
    /* a delay past the end of time saturates instead of wrapping into the past */
    sim_schedule_in(eng, sim_now(eng), SIM_TIME_MAX, k, 0, 0);
    ck_assert_uint_eq(sim_run(eng, SIM_TIME_MAX), 1);
    ck_assert_int_eq(sim_now(eng), SIM_TIME_MAX);
    sim_engine_destroy(eng);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sim");
    TCase *q = tcase_create("queue");
    tcase_add_test(q, queue_empty);
    tcase_add_test(q, queue_order_hand);
    tcase_add_test(q, queue_fifo_ties);
    tcase_add_test(q, queue_push_before_peek);
    tcase_add_test(q, queue_random_monotone);
    tcase_add_test(q, queue_random_any_order);
    tcase_add_test(q, queue_large_sorted);
    suite_add_tcase(s, q);
    TCase *e = tcase_create("engine");
    tcase_add_test(e, engine_order_and_dispatch);
    tcase_add_test(e, engine_zero_delay_fifo);
    tcase_add_test(e, engine_run_until);
    tcase_add_test(e, engine_stop);
    tcase_add_test(e, engine_schedule_at_now_ok);
    /* Causality and programming errors abort (DT_ASSERT); these need Check's fork mode and
     * are skipped under CK_FORK=no (valgrind runs). */
    const char *fork_env = getenv("CK_FORK");
    if (!fork_env || strcmp(fork_env, "no") != 0) {
        tcase_add_test_raise_signal(e, engine_schedule_in_past_aborts, SIGABRT);
        tcase_add_test_raise_signal(e, engine_unknown_kind_aborts, SIGABRT);
        tcase_add_test_raise_signal(e, engine_too_many_kinds_aborts, SIGABRT);
        tcase_add_test_raise_signal(e, engine_reentrant_run_aborts, SIGABRT);
    }
    suite_add_tcase(s, e);
    return dt_run_suite(s);
}
