/* test_coll_random.c - every algorithm on every op it accepts, on random groups.
 * Pins down, for random group sizes, members and orders, random sizes (odd ones included) on a
 * 3x3 dgx, a 2:1 fat-tree and a torus: each collective the builder accepts runs to completion
 * (no deadlock in the rendezvous, no assertion), every byte sent is delivered, no link goes over
 * capacity, and the contention-free analytic run is never slower than the flow run (with free
 * reductions the programs are monotone in transfer times). Ops an algorithm does not run are
 * rejected with DT_EINPUT, and the set of those is exactly the documented support matrix.
 * Leaves free: the times themselves (closed forms are test_coll's business). */
#include <string.h>

#include "dtsim/coll.h"
#include "dtsim/sim.h"
#include "dtsim/topo.h"
#include "testutil.h"

static int supported(coll_algo a, coll_op op, int n, int hosts_uniform)
{
    int pow2 = (n & (n - 1)) == 0;
    switch (a) {
    case COLL_RING:
        return op == COLL_ALLREDUCE || op == COLL_REDUCE_SCATTER || op == COLL_ALLGATHER ||
               op == COLL_BROADCAST || op == COLL_REDUCE;
    case COLL_TREE:
    case COLL_DBT: return op == COLL_ALLREDUCE || op == COLL_BROADCAST || op == COLL_REDUCE;
    case COLL_HD:
        return op == COLL_ALLREDUCE || ((op == COLL_REDUCE_SCATTER || op == COLL_ALLGATHER) && pow2);
    case COLL_DIRECT: return 1;
    case COLL_HIER: return op == COLL_ALLREDUCE && hosts_uniform;
    case COLL_PS: return op == COLL_ALLREDUCE || op == COLL_REDUCE || op == COLL_BROADCAST;
    default: return 1;
    }
}

static int uniform_hosts(const topo *t, const int *g, int n)
{
    int cnt[64] = {0};
    for (int i = 0; i < n; i++) {
        int h = t->nodes[t->gpu_node[g[i]]].host;
        if (h < 0 || h >= 64) return 0;
        cnt[h]++;
    }
    int c = 0;
    for (int h = 0; h < 64; h++)
        if (cnt[h]) {
            if (c && cnt[h] != c) return 0;
            c = cnt[h];
        }
    return 1;
}

static void sweep(topo *t, sim_rng *g, int trials)
{
    int perm[64];
    for (int trial = 0; trial < trials; trial++) {
        int n = 1 + (int)sim_rng_uniform_int(g, (uint64_t)(t->n_gpus < 12 ? t->n_gpus : 12));
        for (int i = 0; i < t->n_gpus; i++) perm[i] = i;
        for (int i = 0; i < n; i++) { /* random members in random order */
            int j = i + (int)sim_rng_uniform_int(g, (uint64_t)(t->n_gpus - i));
            int tmp = perm[i];
            perm[i] = perm[j];
            perm[j] = tmp;
        }
        double S = floor(1 + 3e6 * sim_rng_uniform(g));
        int hu = uniform_hosts(t, perm, n);
        for (int a = COLL_RING; a < COLL_ALGO_COUNT; a++)
            for (int op = 0; op < COLL_OP_COUNT; op++) {
                if (op == COLL_SENDRECV && n != 2) continue;
                coll_spec spec = {.op = (coll_op)op, .algo = (coll_algo)a, .group = perm, .n = n,
                                  .bytes = S, .root = n > 1 ? (int)sim_rng_uniform_int(g, (uint64_t)n) : 0};
                if (op == COLL_SENDRECV && spec.root == 0) spec.root = 1;
                coll_config cc = {.reduce_bw = 0, .chunk_bytes = 1 << 20};
                net_config fl = {.mode = NET_FLOW}, an = {.mode = NET_ANALYTIC};
                coll_result rf, ra;
                dt_error err;
                dt_error_clear(&err);
                int rc = coll_simulate(t, &spec, &cc, &fl, &rf, &err);
                int want = op == COLL_SENDRECV || supported((coll_algo)a, (coll_op)op, n, hu);
                ck_assert_msg((rc == DT_OK) == want, "%s/%s n=%d: rc %d (%s)",
                              coll_algo_name((coll_algo)a), coll_op_name((coll_op)op), n, rc,
                              err.msg);
                if (rc != DT_OK) continue;
                ck_assert_uint_eq(rf.net.flows_started, rf.net.flows_finished);
                ck_assert_double_eq_tol(rf.net.bytes_sent, rf.net.bytes_delivered, 1e-3);
                ck_assert_double_le(rf.net.max_link_utilisation, 1 + 1e-9);
                if (n > 1) ck_assert_uint_gt(rf.net.flows_started, 0);
                ck_assert_int_eq(coll_simulate(t, &spec, &cc, &an, &ra, &err), DT_OK);
                ck_assert_msg(ra.time <= rf.time + 2 * n, "%s/%s n=%d: analytic %lld > flow %lld",
                              coll_algo_name((coll_algo)a), coll_op_name((coll_op)op), n,
                              (long long)ra.time, (long long)rf.time);
                ck_assert_uint_eq(ra.net.flows_started, rf.net.flows_started);
            }
    }
}

static topo *gen(topo_gen_params p)
{
    topo *t = NULL;
    dt_error err;
    dt_error_clear(&err);
    ck_assert_int_eq(topo_generate(&p, &t, &err), DT_OK);
    return t;
}

START_TEST(random_dgx)
{
    sim_rng *g = sim_rng_create(3, "test_coll_random.dgx");
    topo *t = gen((topo_gen_params){.family = TOPO_FAMILY_DGX, .nodes = 3, .gpus_per_node = 3});
    sweep(t, g, 25);
    topo_destroy(t);
    sim_rng_destroy(g);
}
END_TEST

START_TEST(random_fat_tree_and_torus)
{
    sim_rng *g = sim_rng_create(5, "test_coll_random.ft");
    topo *t = gen((topo_gen_params){.family = TOPO_FAMILY_FAT_TREE, .gpus = 16, .radix = 6,
                                    .oversubscription = 2});
    sweep(t, g, 15);
    topo_destroy(t);
    t = gen((topo_gen_params){.family = TOPO_FAMILY_TORUS, .dims = {3, 3}, .n_dims = 2});
    sweep(t, g, 10);
    topo_destroy(t);
    sim_rng_destroy(g);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("coll_random");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, random_dgx);
    tcase_add_test(tc, random_fat_tree_and_torus);
    suite_add_tcase(s, tc);
    return dt_run_suite(s);
}
