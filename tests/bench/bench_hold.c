/* bench_hold.c - the classic hold model on the pending-event queue and on the engine.
 *
 * Hold model: N events pending; repeatedly pop the least one and push one at its time plus a
 * random increment (exponential, mean 1 us, from a sim_rng stream). N stays constant, so the
 * figure is the steady-state cost of one pop + one push at queue size N.
 *
 * Increments are drawn from sim_rng up front into a 4096-entry table (32 KiB, cycled) so the
 * queue timings exclude the generator; the cost of a live draw is printed separately, and the
 * "engine+rng" rows draw live inside the handler, as a model would.
 *
 * Rows: the candidate structures of hold_queues.h (inline), the library sim_queue through its
 * API, sim_engine dispatching a handler that reschedules (table increments), and the same with
 * live draws. Every structure must pop the same (time, seq) sequence: the bench checks a hash of
 * the popped keys against the library queue's and exits 1 on a mismatch.
 *
 * Figures are events per second of thread CPU time, best of --reps runs (other processes share
 * this machine; CPU time excludes waiting for a core, best-of drops cache disturbances).
 *
 * Usage: bench_hold [--all]     the table (N = 1e3, 1e5, 1e6); --all adds every variant tried
 *        --dist D picks the increments: exp (default), uniform, bimodal, ties (see dists[])
 *        bench_hold --queue Q [--n N] [--ops M] [--reps R]
 *            one row; Q is a row name (see rows[] below and hold_queues.h). Handy under
 *            callgrind, where the measured loop is the function hold_loop_Q, e.g.
 *            valgrind --tool=callgrind --toggle-collect=hold_loop_radix \
 *                build/bench_hold --queue radix --n 1e5 --ops 2e5 --reps 1
 *            (the count covers N warm-up ops plus --ops ops), or hold_loop_engine.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dtsim/sim.h"
#include "hold_queues.h"

#define INC_TABLE 4096
#define MEAN_PS 1e6 /* 1 us */
#define NOINLINE __attribute__((noinline))

typedef struct bench_result {
    double seconds; /* CPU time of the measured ops */
    uint64_t hash;  /* over the popped (time, seq) keys of the measured ops */
} bench_result;

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline uint64_t mix(uint64_t h, const sim_event *e)
{
    h ^= (uint64_t)e->time + 0x9e3779b97f4a7c15ULL * e->seq;
    return h * 0x100000001b3ULL;
}

static sim_time_t inc_table[INC_TABLE];

/* Increment distributions (all mean 1 us), for checking that the choice does not hinge on the
 * exponential: "exp" (the classic), "uniform" on [0, 2 us], "bimodal" (90% at Exp(0.1 us), 10%
 * at Exp(9.1 us): near-term chatter plus far timers), "ties" (Exp rounded to whole
 * microseconds: many equal times, so FIFO tie-breaking is exercised at scale). */
static const char *const dists[] = {"exp", "uniform", "bimodal", "ties", NULL};

static void fill_table(const char *dist)
{
    sim_rng *r = sim_rng_create(42, "bench.hold");
    for (int i = 0; i < INC_TABLE; i++) {
        double x;
        if (!strcmp(dist, "uniform"))
            x = 2.0 * MEAN_PS * sim_rng_uniform(r);
        else if (!strcmp(dist, "bimodal"))
            x = sim_rng_uniform(r) < 0.9 ? sim_rng_exponential(r, 0.1 * MEAN_PS)
                                         : sim_rng_exponential(r, 9.1 * MEAN_PS);
        else if (!strcmp(dist, "ties"))
            x = MEAN_PS * round(sim_rng_exponential(r, 1.0));
        else
            x = sim_rng_exponential(r, MEAN_PS);
        inc_table[i] = (sim_time_t)llround(x);
    }
    sim_rng_destroy(r);
}

/* One hold run on an inline candidate: fill N, warm N ops, then time `ops` ops. */
#define HOLD_BENCH(Q)                                                                       \
    static NOINLINE uint64_t hold_loop_##Q(Q *q, uint64_t ops, size_t *k)                   \
    {                                                                                       \
        uint64_t h = 1469598103934665603ULL;                                                \
        sim_event ev = {0};                                                                 \
        size_t j = *k;                                                                      \
        for (uint64_t i = 0; i < ops; i++) {                                                \
            if (!Q##_pop(q, &ev)) abort();                                                  \
            h = mix(h, &ev);                                                                \
            ev.time += inc_table[j++ & (INC_TABLE - 1)];                                    \
            Q##_push(q, ev);                                                                \
        }                                                                                   \
        *k = j;                                                                             \
        return h;                                                                           \
    }                                                                                       \
    static bench_result hold_##Q(size_t n, uint64_t ops)                                    \
    {                                                                                       \
        Q q;                                                                                \
        Q##_init(&q, n + 1);                                                                \
        size_t k = 0;                                                                       \
        for (size_t i = 0; i < n; i++)                                                      \
            Q##_push(&q, (sim_event){.time = inc_table[k++ & (INC_TABLE - 1)],             \
                                     .id = (uint32_t)i});                                  \
        hold_loop_##Q(&q, n, &k);                                                           \
        double t0 = cpu_now();                                                              \
        uint64_t h = hold_loop_##Q(&q, ops, &k);                                            \
        double t1 = cpu_now();                                                              \
        Q##_free(&q);                                                                       \
        return (bench_result){t1 - t0, h};                                                  \
    }

/* The library queue wrapped in the candidates' calling convention. */
typedef struct simq {
    sim_queue *q;
} simq;
static void simq_init(simq *s, size_t cap) { s->q = sim_queue_create(cap); }
static void simq_free(simq *s) { sim_queue_destroy(s->q); }
static inline void simq_push(simq *s, sim_event ev) { sim_queue_push(s->q, ev); }
static inline bool simq_pop(simq *s, sim_event *ev) { return sim_queue_pop(s->q, ev); }

HOLD_BENCH(dheap2)
HOLD_BENCH(dheap4)
HOLD_BENCH(dheap4f)
HOLD_BENCH(dheap8)
HOLD_BENCH(bheap2)
HOLD_BENCH(bheap4)
HOLD_BENCH(bheap8)
HOLD_BENCH(bheap2f)
HOLD_BENCH(bheap4f)
HOLD_BENCH(sheap2)
HOLD_BENCH(sheap4)
HOLD_BENCH(sheap8)
HOLD_BENCH(qheap2)
HOLD_BENCH(qheap4)
HOLD_BENCH(qheap8)
HOLD_BENCH(qheap2f)
HOLD_BENCH(qheap4f)
HOLD_BENCH(xheap2)
HOLD_BENCH(xheap4)
HOLD_BENCH(xheap8)
HOLD_BENCH(xheap2f)
HOLD_BENCH(xheap4f)
HOLD_BENCH(iheap2)
HOLD_BENCH(iheap4)
HOLD_BENCH(iheap2p)
HOLD_BENCH(iheap2pf)
HOLD_BENCH(iheap4p)
HOLD_BENCH(radix)
HOLD_BENCH(pairing)
HOLD_BENCH(simq)

/* ---- through the engine ---- */

typedef struct hold_model {
    uint64_t left; /* events still to handle before stopping */
    size_t k;
    uint64_t hash;
    sim_rng *rng; /* NULL: table increments */
} hold_model;

static void hold_handler(void *model, sim_engine *eng, const sim_event *ev)
{
    hold_model *m = model;
    m->hash = mix(m->hash, ev);
    sim_time_t inc = m->rng ? (sim_time_t)llround(sim_rng_exponential(m->rng, MEAN_PS))
                            : inc_table[m->k++ & (INC_TABLE - 1)];
    sim_schedule(eng, ev->time + inc, ev->kind, ev->id, ev->data);
    if (--m->left == 0) sim_stop(eng);
}

static NOINLINE uint64_t hold_loop_engine(sim_engine *eng, hold_model *m, uint64_t ops)
{
    m->left = ops;
    m->hash = 1469598103934665603ULL;
    uint64_t done = sim_run(eng, SIM_TIME_MAX);
    if (done != ops) {
        fprintf(stderr, "engine handled %llu events, expected %llu\n",
                (unsigned long long)done, (unsigned long long)ops);
        exit(1);
    }
    return m->hash;
}

static bench_result hold_engine_common(size_t n, uint64_t ops, bool live_rng)
{
    sim_engine *eng = sim_engine_create();
    hold_model m = {.rng = live_rng ? sim_rng_create(42, "bench.hold.live") : NULL};
    uint32_t kind = sim_kind_register(eng, "hold", hold_handler, &m);
    for (size_t i = 0; i < n; i++)
        sim_schedule(eng, inc_table[m.k++ & (INC_TABLE - 1)], kind, (uint32_t)i, 0);
    hold_loop_engine(eng, &m, n);
    double t0 = cpu_now();
    uint64_t h = hold_loop_engine(eng, &m, ops);
    double t1 = cpu_now();
    sim_rng_destroy(m.rng);
    sim_engine_destroy(eng);
    return (bench_result){t1 - t0, h};
}
static bench_result hold_engine(size_t n, uint64_t ops) { return hold_engine_common(n, ops, false); }
static bench_result hold_engine_rng(size_t n, uint64_t ops)
{
    return hold_engine_common(n, ops, true);
}

typedef struct row {
    const char *name;
    bench_result (*fn)(size_t n, uint64_t ops);
    bool same_keys; /* pops the same sequence as sim_queue (table increments) */
    bool table;     /* in the default table; the others run with --all or --queue */
} row;

static const row rows[] = {
    {"dheap2", hold_dheap2, true, true},
    {"dheap4", hold_dheap4, true, true},
    {"dheap4f", hold_dheap4f, true, false},
    {"dheap8", hold_dheap8, true, true},
    {"bheap2", hold_bheap2, true, false},
    {"bheap4", hold_bheap4, true, false},
    {"bheap8", hold_bheap8, true, false},
    {"bheap2f", hold_bheap2f, true, false},
    {"bheap4f", hold_bheap4f, true, false},
    {"sheap2", hold_sheap2, true, false},
    {"sheap4", hold_sheap4, true, false},
    {"sheap8", hold_sheap8, true, false},
    {"qheap2", hold_qheap2, true, true},
    {"qheap4", hold_qheap4, true, true},
    {"qheap8", hold_qheap8, true, false},
    {"qheap2f", hold_qheap2f, true, false},
    {"qheap4f", hold_qheap4f, true, false},
    {"xheap2", hold_xheap2, true, false},
    {"xheap4", hold_xheap4, true, true},
    {"xheap8", hold_xheap8, true, false},
    {"xheap2f", hold_xheap2f, true, false},
    {"xheap4f", hold_xheap4f, true, false},
    {"iheap2", hold_iheap2, true, true},
    {"iheap4", hold_iheap4, true, true},
    {"iheap2p", hold_iheap2p, true, false},
    {"iheap2pf", hold_iheap2pf, true, false},
    {"iheap4p", hold_iheap4p, true, false},
    {"radix", hold_radix, true, true},
    {"pairing", hold_pairing, true, true},
    {"sim_queue", hold_simq, true, true},
    {"engine", hold_engine, true, true},
    {"engine+rng", hold_engine_rng, false, true},
};
#define N_ROWS (sizeof rows / sizeof rows[0])

static bench_result best_of(const row *r, size_t n, uint64_t ops, int reps)
{
    bench_result best = {INFINITY, 0};
    for (int i = 0; i < reps; i++) {
        bench_result b = r->fn(n, ops);
        if (i > 0 && b.hash != best.hash) {
            fprintf(stderr, "%s: run %d popped a different sequence\n", r->name, i);
            exit(1);
        }
        if (b.seconds < best.seconds) best.seconds = b.seconds;
        best.hash = b.hash;
    }
    return best;
}

static double rng_draw_ns(void)
{
    sim_rng *r = sim_rng_create(1, "bench.draw");
    const int draws = 2000000;
    double s = 0, t0 = cpu_now();
    for (int i = 0; i < draws; i++) s += sim_rng_exponential(r, MEAN_PS);
    double t1 = cpu_now();
    sim_rng_destroy(r);
    if (s < 0) puts(""); /* keep the loop */
    return (t1 - t0) / draws * 1e9;
}

int main(int argc, char **argv)
{
    const char *only = NULL;
    size_t n_one = 0;
    uint64_t ops = 1000000;
    bool all = false;
    const char *dist = "exp";
    int reps = 2;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--queue") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--n") && i + 1 < argc) n_one = (size_t)atof(argv[++i]);
        else if (!strcmp(argv[i], "--ops") && i + 1 < argc) ops = (uint64_t)atof(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--all")) all = true;
        else if (!strcmp(argv[i], "--dist") && i + 1 < argc) dist = argv[++i];
        else {
            fprintf(stderr, "usage: bench_hold [--all] [--queue Q] [--n N] [--ops M] [--reps R] [--dist D]\n");
            return 2;
        }
    }
    if (only) {
        bool known = false;
        for (size_t r = 0; r < N_ROWS; r++) known |= !strcmp(only, rows[r].name);
        if (!known) {
            fprintf(stderr, "bench_hold: unknown queue '%s'\n", only);
            return 2;
        }
    }
    bool dist_ok = false;
    for (int d = 0; dists[d]; d++) dist_ok |= !strcmp(dist, dists[d]);
    if (!dist_ok) {
        fprintf(stderr, "bench_hold: unknown --dist '%s' (exp uniform bimodal ties)\n", dist);
        return 2;
    }
    fill_table(dist);
    size_t sizes[] = {1000, 100000, 1000000};
    size_t n_sizes = 3;
    if (n_one) {
        sizes[0] = n_one;
        n_sizes = 1;
    }
    printf("hold model: pop + push at now + increment (%s, mean 1 us); %llu ops timed after N\n"
           "warm-up ops; figures in million events/s of thread CPU time, best of %d\n",
           dist, (unsigned long long)ops, reps);
    if (!only) printf("one sim_rng_exponential draw: %.1f ns\n", rng_draw_ns());
    printf("%-12s", "queue");
    for (size_t s = 0; s < n_sizes; s++) printf(" %10s%-3s", "N=", "");
    printf("\n%-12s", "");
    for (size_t s = 0; s < n_sizes; s++) printf(" %13zu", sizes[s]);
    printf("\n");

    uint64_t ref[3] = {0};
    bool have_ref[3] = {false};
    /* Reference hashes come from sim_queue, computed first. */
    for (size_t s = 0; s < n_sizes && !only; s++) {
        ref[s] = hold_simq(sizes[s], ops).hash;
        have_ref[s] = true;
    }
    int rc = 0;
    for (size_t r = 0; r < N_ROWS; r++) {
        if (only ? strcmp(only, rows[r].name) != 0 : !(all || rows[r].table)) continue;
        printf("%-12s", rows[r].name);
        for (size_t s = 0; s < n_sizes; s++) {
            bench_result b = best_of(&rows[r], sizes[s], ops, reps);
            printf(" %13.2f", (double)ops / b.seconds / 1e6);
            fflush(stdout);
            if (rows[r].same_keys && have_ref[s] && b.hash != ref[s]) {
                fprintf(stderr, "\n%s at N=%zu popped a different sequence than sim_queue\n",
                        rows[r].name, sizes[s]);
                rc = 1;
            }
        }
        printf("\n");
    }
    return rc;
}
