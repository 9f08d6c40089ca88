/* test_solve_memo.c - the exact memo of whole max-min solves (models/net/solve_memo.c) and its
 * use by the flow network (net.c).
 * Pins down: an entry is handed back only for a key equal word for word (two keys with the same
 * hash and length but one word apart miss); a set of 4 replaces its least recently used entry;
 * the bytes held never pass the bound (a store that would, empties the memo first; an entry
 * larger than the bound is not kept); interned paths are one copy per distinct link list, and
 * a full table takes no new path but still finds the old ones. End to end: rounds of the same
 * traffic (coupled ring lanes run in steps, spread and plain sends starting while they run) on
 * an oversubscribed fat-tree give every completion at the same picosecond, and the same
 * network statistics, with the memo on (every component looked up) and off, while the memo
 * does answer most solves.
 * Leaves free: which problems hit (the slot depends on addresses), the hash function. */
#include <string.h>

#include "dtsim/net.h"
#include "dtsim/sim.h"
#include "dtsim/topo.h"
#include "net_internal.h"
#include "solve_memo.h"
#include "testutil.h"

START_TEST(memo_exact_key)
{
    sm_memo *m = sm_create(1 << 20, 8);
    uint64_t k1[5] = {5, 9, 1ull << 40, 7, 3}, k2[5] = {5, 9, 1ull << 40, 7, 4};
    double r1[2] = {1.5, 2.25};
    int b1[2] = {0, 2};
    unsigned char sat[1] = {0x5};
    sm_store(m, 42, k1, 5, r1, b1, 2, sat, 3, 0.75);
    const sm_result *r = sm_find(m, 42, k1, 5);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->nf, 2);
    ck_assert_int_eq(r->nl, 3);
    ck_assert(r->rate[0] == 1.5 && r->rate[1] == 2.25);
    ck_assert_int_eq(r->bneck[1], 2);
    ck_assert_int_eq(r->sat[0], 0x5);
    ck_assert(r->umax == 0.75);
    /* the same hash and length, one word apart: not the same problem */
    ck_assert_ptr_null(sm_find(m, 42, k2, 5));
    ck_assert_ptr_null(sm_find(m, 42, k1, 4));
    ck_assert_ptr_null(sm_find(m, 43, k1, 5));
    sm_destroy(m);
}
END_TEST

START_TEST(memo_lru_and_bound)
{
    /* one set of 4: the least recently used goes */
    sm_memo *m = sm_create(1 << 20, 4);
    uint64_t k[5][1] = {{10}, {11}, {12}, {13}, {14}};
    double r = 1;
    int b = 0;
    unsigned char s = 0;
    for (int i = 0; i < 4; i++) sm_store(m, (uint64_t)i * 4, k[i], 1, &r, &b, 1, &s, 1, 0);
    ck_assert_ptr_nonnull(sm_find(m, 0, k[0], 1)); /* key 0 used last now; key 1 least */
    sm_store(m, 16, k[4], 1, &r, &b, 1, &s, 1, 0);
    ck_assert_ptr_nonnull(sm_find(m, 0, k[0], 1));
    ck_assert_ptr_null(sm_find(m, 4, k[1], 1));
    ck_assert_ptr_nonnull(sm_find(m, 8, k[2], 1));
    ck_assert_ptr_nonnull(sm_find(m, 16, k[4], 1));
    ck_assert_uint_eq(sm_clears(m), 0);
    sm_destroy(m);

    /* bytes: entries of 1,000 words (8,000 B of key) under a 20,000 B bound: the third store
     * empties the memo first */
    m = sm_create(20000, 64);
    uint64_t big[1000];
    for (int i = 0; i < 1000; i++) big[i] = (uint64_t)i;
    for (int j = 0; j < 5; j++) {
        big[0] = (uint64_t)j;
        sm_store(m, (uint64_t)j, big, 1000, &r, &b, 1, &s, 1, 0);
        ck_assert_uint_le(sm_bytes(m), 20000);
        ck_assert_ptr_nonnull(sm_find(m, (uint64_t)j, big, 1000));
    }
    ck_assert_uint_eq(sm_clears(m), 2); /* before the 3rd and the 5th */
    big[0] = 1;
    ck_assert_ptr_null(sm_find(m, 1, big, 1000));
    uint64_t huge[3000] = {0};
    sm_store(m, 99, huge, 3000, &r, &b, 1, &s, 1, 0); /* larger than the bound: not kept */
    ck_assert_ptr_null(sm_find(m, 99, huge, 3000));
    big[0] = 4;
    ck_assert_ptr_nonnull(sm_find(m, 4, big, 1000));
    sm_destroy(m);
}
END_TEST

START_TEST(paths_interned)
{
    sm_paths *p = sm_paths_create(200);
    int a[6] = {1, 2, 3, 4, 5, 6}, a2[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 2, 3, 4, 5, 7};
    const int *pa = sm_paths_intern(p, a, 6);
    ck_assert_ptr_nonnull(pa);
    ck_assert_ptr_ne(pa, a);
    ck_assert_int_eq(memcmp(pa, a, sizeof a), 0);
    ck_assert_ptr_eq(sm_paths_intern(p, a2, 6), pa);
    const int *pb = sm_paths_intern(p, b, 6);
    ck_assert_ptr_nonnull(pb);
    ck_assert_ptr_ne(pb, pa);
    ck_assert_ptr_ne(sm_paths_intern(p, a, 5), pa); /* a prefix is another path */
    /* full (each path costs its links and a table record): new ones are refused, old found */
    int c[40] = {0};
    ck_assert_ptr_null(sm_paths_intern(p, c, 40));
    ck_assert_ptr_eq(sm_paths_intern(p, b, 6), pb);
    sm_paths_destroy(p);
}
END_TEST

/* End to end: R rounds, each: two 6-rank rings as 4 coupled lane flows each (in steps), and
 * three sends starting while they run; every completion's time by (round, item). */
#define R 8
#define ITEMS 11
typedef struct traffic {
    net *n;
    uint32_t k_go, k_done;
    sim_time_t at[R * ITEMS];
    int count[R * ITEMS];
} traffic;

static void on_tdone(void *model, sim_engine *eng, const sim_event *ev)
{
    traffic *T = model;
    (void)eng;
    ck_assert_uint_lt(ev->id, R * ITEMS);
    T->at[ev->id] = ev->time;
    T->count[ev->id]++;
}

static void on_go(void *model, sim_engine *eng, const sim_event *ev)
{
    traffic *T = model;
    (void)eng;
    int round = (int)ev->id / ITEMS, item = (int)ev->id % ITEMS;
    static const int ga[6] = {0, 3, 5, 8, 10, 13}, gb[6] = {1, 2, 6, 9, 12, 15};
    if (item < 8) {
        const int *g = item < 4 ? ga : gb;
        int src[6], dst[6];
        for (int i = 0; i < 6; i++) {
            src[i] = g[i];
            dst[i] = g[(i + 1) % 6];
        }
        net_send_ring_steps(T->n, 6, src, dst, 4e6 + 1e5 * (item / 4), 5, item % 4, 0.25,
                            T->k_done, ev->id, 0);
    } else if (item == 8) {
        net_send(T->n, 4, 12, 2e6, T->k_done, ev->id, 0);
    } else if (item == 9) {
        net_send_spread(T->n, 7, 14, 3e6, T->k_done, ev->id, 0);
    } else {
        net_send(T->n, 11, 1, 1e6 + 1e5 * round, T->k_done, ev->id, 0); /* (a new size each round) */
    }
}

static void run_traffic(int memo, traffic *T, net_stats *st, uint64_t *keyed, uint64_t *hits)
{
    topo_gen_params p = {.family = TOPO_FAMILY_FAT_TREE, .gpus = 16, .radix = 8,
                         .oversubscription = 2};
    topo *t = NULL;
    dt_error err;
    dt_error_clear(&err);
    ck_assert_int_eq(topo_generate(&p, &t, &err), DT_OK);
    sim_engine *e = sim_engine_create();
    memset(T, 0, sizeof *T);
    T->n = net_create(t, e, NULL);
    net_set_solve_memo(T->n, memo ? 0 : -1);
    T->k_go = sim_kind_register(e, "test.go", on_go, T);
    T->k_done = sim_kind_register(e, "test.done", on_tdone, T);
    for (int r = 0; r < R; r++)
        for (int i = 0; i < ITEMS; i++) {
            /* rings at the round's start, sends 10, 20, 30 us into it; rounds 10 ms apart */
            sim_time_t at = (sim_time_t)r * 10 * SIM_MS + (i < 8 ? 0 : (i - 7) * 10 * SIM_US);
            sim_schedule(e, at, T->k_go, (uint32_t)(r * ITEMS + i), 0);
        }
    sim_run(e, SIM_TIME_MAX);
    net_get_stats(T->n, st);
    net_solve_memo_stats(T->n, keyed, hits);
    net_destroy(T->n);
    sim_engine_destroy(e);
    topo_destroy(t);
}

START_TEST(net_memo_changes_nothing)
{
    static traffic on, off;
    net_stats son, soff;
    uint64_t kon, hon, koff, hoff;
    run_traffic(1, &on, &son, &kon, &hon);
    run_traffic(0, &off, &soff, &koff, &hoff);
    for (int i = 0; i < R * ITEMS; i++) {
        ck_assert_int_eq(on.count[i], 1);
        ck_assert_int_eq(off.count[i], 1);
        ck_assert_msg(on.at[i] == off.at[i], "completion %d: %lld ps with the memo, %lld without",
                      i, (long long)on.at[i], (long long)off.at[i]);
        /* each round ends before the next begins (else the rounds would not repeat) */
        ck_assert_int_lt(on.at[i], (sim_time_t)(i / ITEMS + 1) * 10 * SIM_MS);
    }
    ck_assert_uint_eq(son.solves, soff.solves);
    ck_assert_uint_eq(son.solved_flows, soff.solved_flows);
    ck_assert_uint_eq(son.rate_updates, soff.rate_updates);
    ck_assert(son.max_link_utilisation == soff.max_link_utilisation);
    ck_assert(son.bytes_delivered == soff.bytes_delivered);
    ck_assert_uint_eq(koff, 0);
    ck_assert_uint_eq(hoff, 0);
    /* every component was looked up, and most solves were answered from the memo: the rounds
     * repeat once the ECMP lane rotation of the sends has come round */
    ck_assert_uint_eq(kon, son.solves);
    ck_assert_uint_gt(son.solves, 10 * R); /* (83) */
    ck_assert_uint_gt(2 * hon, son.solves); /* (63 hits) */
}
END_TEST

int main(void)
{
    Suite *s = suite_create("solve_memo");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, memo_exact_key);
    tcase_add_test(tc, memo_lru_and_bound);
    tcase_add_test(tc, paths_interned);
    tcase_add_test(tc, net_memo_changes_nothing);
    suite_add_tcase(s, tc);
    return dt_run_suite(s);
}
