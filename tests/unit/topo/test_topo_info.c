/* test_topo_info.c - counts, diameter and bisection bandwidth.
 * Pins down: closed-form bisection of ring (2 links x B), switch, torus (2N/k for the largest even
 * extent k, N/2 for a hypercube), 2- and 3-tier fat-trees with and without oversubscription,
 * and rail-optimised DGX clusters, each also equal to the generic max-flow between GPU halves;
 * closed-form diameters equal both generic methods (forward Dijkstra per GPU, and the routing
 * module's distance maps), which also agree on files and families without a closed form; the generic methods on a hand-written file
 * (a 32 GB/s PCIe link is the bottleneck) and on families without a closed form.
 * Tiers of layered fabrics: links and bandwidth up per level, aggregate and worst-node
 * oversubscription (a partly filled last leaf), the least tier bisection, none on a torus.
 * Leaves free: cost of the generic methods (bench_topo). */
#include <string.h>

#include "dtsim/topo.h"
#include "testutil.h"
#include "topo_internal.h"

static topo *gen(topo_gen_params p)
{
    topo *t = NULL;
    dt_error e;
    dt_error_clear(&e);
    ck_assert_msg(topo_generate(&p, &t, &e) == DT_OK, "%s: %s", e.path, e.msg);
    return t;
}

/* Check info's closed forms against the expected figure and against the generic methods. */
static void check(topo_gen_params p, double want_bisection, int want_diameter)
{
    topo *t = gen(p);
    topo_info in;
    dt_error e;
    ck_assert_int_eq(topo_get_info(t, &in, &e), DT_OK);
    ck_assert_msg(in.bisection_exact, "%s: no closed form", t->name);
    ck_assert_rel(in.bisection_bw, want_bisection, 1e-12);
    ck_assert_rel(topo_bisection_maxflow(t), want_bisection, 1e-9);
    ck_assert_int_eq(in.diameter_hops, want_diameter);
    ck_assert_int_eq(topo_diameter_search(t), want_diameter);
    ck_assert_int_eq(topo_route_diameter(t), want_diameter);
    topo_destroy(t);
}

START_TEST(direct_families)
{
    double B = 50e9;
    check((topo_gen_params){.family = TOPO_FAMILY_RING, .gpus = 8}, 2 * B, 4);
    check((topo_gen_params){.family = TOPO_FAMILY_RING, .gpus = 7, .bandwidth = 1e9}, 2e9, 3);
    check((topo_gen_params){.family = TOPO_FAMILY_RING, .gpus = 2}, 2 * B, 1);
    check((topo_gen_params){.family = TOPO_FAMILY_SWITCH, .gpus = 16}, 8 * B, 2);
    check((topo_gen_params){.family = TOPO_FAMILY_TORUS, .dims = {4, 4, 4}, .n_dims = 3}, 32 * B, 6);
    check((topo_gen_params){.family = TOPO_FAMILY_TORUS, .dims = {3, 6}, .n_dims = 2}, 6 * B, 4);
    check((topo_gen_params){.family = TOPO_FAMILY_TORUS, .dims = {2, 2, 2}, .n_dims = 3}, 4 * B, 3);
}
END_TEST

START_TEST(switched_families)
{
    double B = 50e9;
    /* 128 GPUs, radix 64: 4 leaves x 32 up: N/2 links */
    check((topo_gen_params){.family = TOPO_FAMILY_FAT_TREE, .gpus = 128}, 64 * B, 4);
    /* 3:1 at radix 32: 24 down, 8 up; 96 GPUs -> 4 leaves; cut 4*8/2 = 16 = N/(2*3) */
    check((topo_gen_params){.family = TOPO_FAMILY_FAT_TREE, .gpus = 96, .radix = 32,
                            .oversubscription = 3}, 16 * B, 4);
    /* one leaf only */
    check((topo_gen_params){.family = TOPO_FAMILY_FAT_TREE, .gpus = 10}, 5 * B, 2);
    /* 3 tiers, radix 4: 8 leaves in 4 pods, 4 cores: every layer carries N/2 */
    check((topo_gen_params){.family = TOPO_FAMILY_FAT_TREE, .gpus = 16, .radix = 4, .tiers = 3},
          8 * B, 6);
    /* 3 tiers, radix 8 at 3:1 (6 down, 2 up), 96 GPUs: 16 leaves, 4 pods, 8 cores:
     * leaf layer 16*2/2 = 16 links, core layer 4*2*4/2 = 16 */
    check((topo_gen_params){.family = TOPO_FAMILY_FAT_TREE, .gpus = 96, .radix = 8, .tiers = 3,
                            .oversubscription = 3}, 16 * B, 6);
    /* dgx 4x8: one leaf per rail: half the NIC links */
    check((topo_gen_params){.family = TOPO_FAMILY_DGX, .nodes = 4, .gpus_per_node = 8}, 16 * B, 6);
    /* dgx 8x8 at radix 8 (4 down/4 up): two leaves per rail, spine layer 8*2*4/2 = 32 = N/2 */
    check((topo_gen_params){.family = TOPO_FAMILY_DGX, .nodes = 8, .gpus_per_node = 8, .radix = 8},
          32 * B, 6);
    /* 3:1 at radix 8: 6 down/2 up, 12 nodes: spine layer 8*2*2/2 = 16 */
    check((topo_gen_params){.family = TOPO_FAMILY_DGX, .nodes = 12, .gpus_per_node = 8, .radix = 8,
                            .oversubscription = 3, .nic_bw = 25e9}, 16 * 25e9, 6);
    check((topo_gen_params){.family = TOPO_FAMILY_DGX, .nodes = 2, .gpus_per_node = 1}, 1 * B, 4);
}
END_TEST

START_TEST(generic_methods)
{
    topo *t = NULL;
    dt_error e;
    dt_error_clear(&e);
    ck_assert_int_eq(topo_load_file(DT_DATA("topo/example.json"), &t, &e), DT_OK);
    topo_info in;
    ck_assert_int_eq(topo_get_info(t, &in, &e), DT_OK);
    ck_assert_int_eq(in.n_gpus, 4);
    ck_assert_int_eq(in.n_switches, 1);
    ck_assert_int_eq(in.n_nics, 2);
    ck_assert_int_eq(in.n_hosts, 2);
    ck_assert_int_eq(in.n_links, 32);
    ck_assert_int_eq(in.diameter_hops, 6);
    ck_assert_int_eq(topo_diameter_search(t), 6);
    ck_assert(!in.bisection_exact);
    ck_assert_rel(in.bisection_bw, 32e9, 1e-12); /* boxB's NIC-to-host PCIe link */
    topo_destroy(t);

    /* odd torus: no closed form, max flow over the index halves */
    t = gen((topo_gen_params){.family = TOPO_FAMILY_TORUS, .dims = {5, 5}, .n_dims = 2});
    ck_assert_int_eq(topo_get_info(t, &in, &e), DT_OK);
    ck_assert(!in.bisection_exact);
    ck_assert_int_eq(in.diameter_hops, 4);
    ck_assert_int_eq(topo_diameter_search(t), 4);
    ck_assert(in.bisection_bw >= 10 * 50e9);
    topo_destroy(t);

    /* canonical dragonfly: 9 groups; diameter by search */
    t = gen((topo_gen_params){.family = TOPO_FAMILY_DRAGONFLY, .df_a = 4, .df_p = 2, .df_h = 2});
    ck_assert_int_eq(topo_get_info(t, &in, &e), DT_OK);
    ck_assert(!in.bisection_exact);
    ck_assert_int_eq(in.diameter_hops, 5);
    ck_assert_int_eq(topo_diameter_search(t), 5);
    ck_assert_int_eq(in.n_switches, 36);
    ck_assert(in.bisection_bw > 0);
    topo_destroy(t);

    /* 10 groups of 3 routers with 3 terminals, 3 global ports each: index halves are groups
     * 0-4 vs 5-9 */
    t = gen((topo_gen_params){.family = TOPO_FAMILY_DRAGONFLY, .df_a = 3, .df_p = 3, .df_h = 3,
                              .df_groups = 10});
    ck_assert_int_eq(topo_get_info(t, &in, &e), DT_OK);
    /* 9 ports per group, one link per group pair: 5 x 5 pairs cross, each one link (the 45
     * terminal links per half are not the bottleneck) */
    ck_assert_rel(in.bisection_bw, 25 * 50e9, 1e-12);
    topo_destroy(t);
}
END_TEST


/* Tiers: links up from each level of a layered fabric, their bandwidth, the oversubscription
 * (bandwidth in from below / up) in aggregate and at the worst node. */
static topo_info info_of(topo_gen_params p)
{
    topo *t = gen(p);
    topo_info in;
    dt_error e;
    ck_assert_int_eq(topo_get_info(t, &in, &e), DT_OK);
    topo_destroy(t);
    return in;
}

START_TEST(tiers)
{
    double B = 50e9;
    /* 128 GPUs at radix 64. 1:1: 4 leaves x 32 up; the tier bound is the closed form. */
    topo_info in = info_of((topo_gen_params){.family = TOPO_FAMILY_FAT_TREE, .gpus = 128});
    ck_assert_int_eq(in.n_tiers, 2);
    ck_assert_str_eq(in.tiers[0].from, "gpu");
    ck_assert_str_eq(in.tiers[0].to, "leaf");
    ck_assert_str_eq(in.tiers[1].to, "spine");
    ck_assert_int_eq(in.tiers[0].n_links, 128);
    ck_assert_int_eq(in.tiers[1].n_links, 128);
    ck_assert_rel(in.tiers[1].oversubscription, 1, 1e-12);
    ck_assert_rel(in.tier_bisection, in.bisection_bw, 1e-12);
    ck_assert_rel(in.asked_oversubscription, 1, 1e-12);
    /* 2:1 splits a leaf's 64 ports 43 down, 21 up: 3 leaves (43, 43, 42 GPUs), 63 links up */
    in = info_of((topo_gen_params){.family = TOPO_FAMILY_FAT_TREE, .gpus = 128,
                                   .oversubscription = 2});
    ck_assert_int_eq(in.tiers[1].n_links, 63);
    ck_assert_rel(in.tiers[1].up_bw, 63 * B, 1e-12);
    ck_assert_rel(in.tiers[1].oversubscription, 128.0 / 63, 1e-12);
    ck_assert_rel(in.tiers[1].worst, 43.0 / 21, 1e-12);
    ck_assert_rel(in.tier_bisection, 63 * B / 2, 1e-12);
    ck_assert_int_eq(in.leaf_down, 43);
    ck_assert_int_eq(in.leaf_up, 21);
    /* 4:1 on 64 GPUs: leaves of 51 and 13 GPUs, 13 up each: 2.46:1 overall, 3.92:1 at leaf0 */
    in = info_of((topo_gen_params){.family = TOPO_FAMILY_FAT_TREE, .gpus = 64,
                                   .oversubscription = 4});
    ck_assert_int_eq(in.tiers[1].n_links, 26);
    ck_assert_rel(in.tiers[1].oversubscription, 64.0 / 26, 1e-12);
    ck_assert_rel(in.tiers[1].worst, 51.0 / 13, 1e-12);
    /* 3 tiers at radix 8: gpu -> leaf -> agg -> core */
    in = info_of((topo_gen_params){.family = TOPO_FAMILY_FAT_TREE, .gpus = 64, .radix = 8,
                                   .tiers = 3});
    ck_assert_int_eq(in.n_tiers, 3);
    ck_assert_str_eq(in.tiers[1].to, "agg");
    ck_assert_str_eq(in.tiers[2].to, "core");
    ck_assert_rel(in.tiers[2].oversubscription, 1, 1e-12);
    /* DGX rails: the NVSwitch only GPUs reach is no tier; GPU -> NIC -> leaf */
    in = info_of((topo_gen_params){.family = TOPO_FAMILY_DGX, .nodes = 4, .gpus_per_node = 8,
                                   .nic_bw = 50e9});
    ck_assert_str_eq(in.tiers[0].to, "nic");
    ck_assert_int_eq(in.tiers[0].n_links, 32);
    ck_assert_str_eq(in.tiers[1].to, "leaf");
    /* switchless: no tiers */
    in = info_of((topo_gen_params){.family = TOPO_FAMILY_TORUS, .dims = {4, 4}, .n_dims = 2});
    ck_assert_int_eq(in.n_tiers, 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("topo_info");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, direct_families);
    tcase_add_test(tc, switched_families);
    tcase_add_test(tc, generic_methods);
    tcase_add_test(tc, tiers);
    suite_add_tcase(s, tc);
    return dt_run_suite(s);
}
