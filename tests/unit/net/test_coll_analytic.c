/* test_coll_analytic.c - coll_analytic_time (the analytic network mode's collective cost)
 * against the flow simulation of the same spec alone, and against the closed forms.
 * Pins down, within 0.5% (the flow model rounds every transfer to a picosecond, the analytic
 * time once): ring all-reduce / reduce-scatter / all-gather on a ring (odd n, sizes not
 * divisible by n, latency-dominated sizes) and with reduction cost; halving-doubling on a
 * switch (power of two and not); direct all-to-all / all-gather, send/recv, one-server ps;
 * tree and chain broadcast, chain reduce; hier on dgx boxes (2 x 8 with free and H100
 * reductions, 16 x 8 as in a 128-way data-parallel step) and the host-aware flat ring; `auto`
 * resolved as coll_start resolves it; the cache returning the same time; coll_start's input
 * errors. Tree/dbt all-reduce: only bounds (the closed form over one tree is not exact when
 * up and down phases overlap; see docs/collectives.md). Leaves free: contention (analytic
 * mode has none by design; test_coll.c pins the flow model's). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coll_testutil.h"

#define TOL 0.005

static topo *dgx(int nodes) /* NVLink 450 GB/s inside, one 50 GB/s NIC per GPU */
{
    return gen((topo_gen_params){.family = TOPO_FAMILY_DGX, .nodes = nodes, .gpus_per_node = 8,
                                 .nic_bw = 50e9, .nvlink_bw = 450e9});
}

typedef struct pair_t {
    double flow, analytic; /* seconds */
    coll_algo flow_algo, analytic_algo;
} pair_t;

/* The spec alone: flow simulation and analytic time with the same coll_config. */
static pair_t both_nc(topo *t, coll_op op, coll_algo algo, const int *group, int n, double S,
                      double reduce_bw, double chunk, net_config nc);

static pair_t both(topo *t, coll_op op, coll_algo algo, const int *group, int n, double S,
                   double reduce_bw, double chunk)
{
    return both_nc(t, op, algo, group, n, S, reduce_bw, chunk, (net_config){.mode = NET_FLOW});
}

static pair_t both_nc(topo *t, coll_op op, coll_algo algo, const int *group, int n, double S,
                      double reduce_bw, double chunk, net_config nc)
{
    int all[1024];
    if (!group) {
        for (int i = 0; i < n; i++) all[i] = i;
        group = all;
    }
    coll_spec spec = {.op = op, .algo = algo, .group = group, .n = n, .bytes = S, .elem_bytes = 2,
                      .servers = algo == COLL_PS ? 1 : 0};
    coll_config cc = {.reduce_bw = reduce_bw, .chunk_bytes = chunk};
    coll_result r;
    dt_error err;
    dt_error_clear(&err);
    int rc = coll_simulate(t, &spec, &cc, &nc, &r, &err);
    ck_assert_msg(rc == DT_OK, "coll_simulate: %s", err.msg);
    sim_engine *e = sim_engine_create();
    net *nw = net_create(t, e, &nc);
    coll_analytic *a = coll_analytic_create(nw, t, &cc);
    sim_time_t at = 0, again = 0;
    coll_algo ran = COLL_AUTO;
    ck_assert_int_eq(coll_analytic_time(a, &spec, &at, &ran, &err), DT_OK);
    ck_assert_int_eq(coll_analytic_time(a, &spec, &again, NULL, &err), DT_OK); /* cached */
    ck_assert_int_eq(at, again);
    coll_analytic_destroy(a);
    net_destroy(nw);
    sim_engine_destroy(e);
    return (pair_t){sim_time_to_s(r.time), sim_time_to_s(at), r.algo, ran};
}

#define AGREE(p, tol)                                                                      \
    do {                                                                                   \
        pair_t p_ = (p);                                                                   \
        ck_assert_int_eq(p_.flow_algo, p_.analytic_algo);                                  \
        ck_assert_rel(p_.analytic, p_.flow, tol);                                          \
    } while (0)

START_TEST(ring_agrees)
{
    const int ns[] = {8, 7};
    const double sizes[] = {64.0 * 1048576, 1e8 + 7, 4096};
    for (int a = 0; a < 2; a++) {
        topo *t = ring_topo(ns[a]);
        double al, bw;
        path(t, 0, 1, &al, &bw);
        for (int b = 0; b < 3; b++) {
            double S = sizes[b];
            for (coll_op op = COLL_ALLREDUCE; op <= COLL_ALLGATHER; op++) {
                pair_t p = both(t, op, COLL_RING, NULL, ns[a], S, 0, 0);
                AGREE(p, TOL);
                ck_assert_rel(p.analytic, coll_closed_form(op, COLL_RING, ns[a], S, al, bw), TOL);
            }
        }
        topo_destroy(t);
    }
}
END_TEST

START_TEST(ring_reduction_cost)
{
    /* One chunk: every reduce-scatter step's reduction is on the critical path, in both. */
    int n = 8;
    double S = 64.0 * 1048576, R = 200e9;
    topo *t = ring_topo(n);
    double al, bw;
    path(t, 0, 1, &al, &bw);
    pair_t p = both(t, COLL_ALLREDUCE, COLL_RING, NULL, n, S, R, 1e18);
    AGREE(p, TOL);
    ck_assert_rel(p.analytic,
                  coll_closed_form(COLL_ALLREDUCE, COLL_RING, n, S, al, bw) + (n - 1) * S / n / R,
                  TOL);
    topo_destroy(t);
}
END_TEST

START_TEST(hd_agrees)
{
    const int ns[] = {8, 16, 6, 12};
    double S = 64.0 * 1048576;
    for (int a = 0; a < 4; a++) {
        int n = ns[a];
        topo *t = switch_topo(n);
        double al, bw;
        path(t, 0, 1, &al, &bw);
        pair_t p = both(t, COLL_ALLREDUCE, COLL_HD, NULL, n, S, 0, 0);
        AGREE(p, TOL);
        ck_assert_rel(p.analytic, coll_closed_form(COLL_ALLREDUCE, COLL_HD, n, S, al, bw), TOL);
        if ((n & (n - 1)) == 0) {
            AGREE(both(t, COLL_REDUCE_SCATTER, COLL_HD, NULL, n, S, 0, 0), TOL);
            AGREE(both(t, COLL_ALLGATHER, COLL_HD, NULL, n, S, 0, 0), TOL);
            AGREE(both(t, COLL_ALLREDUCE, COLL_HD, NULL, n, 1024, 0, 0), TOL);
            /* with the GPU's reduction cost (one reduction per step, uncontended) */
            AGREE(both(t, COLL_ALLREDUCE, COLL_HD, NULL, n, S, -1, 0), TOL);
        }
        topo_destroy(t);
    }
}
END_TEST

START_TEST(direct_ps_sendrecv_agree)
{
    int n = 16;
    double S = 64.0 * 1048576;
    topo *t = switch_topo(n);
    double al, bw;
    path(t, 0, 1, &al, &bw);
    pair_t p = both(t, COLL_ALLTOALL, COLL_DIRECT, NULL, n, S, 0, 0);
    AGREE(p, TOL);
    ck_assert_rel(p.analytic, coll_closed_form(COLL_ALLTOALL, COLL_DIRECT, n, S, al, bw), TOL);
    AGREE(both(t, COLL_ALLGATHER, COLL_DIRECT, NULL, n, S, 0, 0), TOL);
    AGREE(both(t, COLL_REDUCE_SCATTER, COLL_DIRECT, NULL, n, S, 0, 0), TOL);
    p = both(t, COLL_ALLREDUCE, COLL_PS, NULL, 8, 16.0 * 1048576, 0, 0);
    AGREE(p, TOL);
    ck_assert_rel(p.analytic, 2 * al + 2 * 7 * 16.0 * 1048576 / bw, TOL);
    int pair[2] = {3, 5};
    p = both(t, COLL_SENDRECV, COLL_AUTO, pair, 2, S, 0, 0);
    AGREE(p, 1e-9);
    ck_assert_rel(p.analytic, al + S / bw, 1e-9);
    topo_destroy(t);
}
END_TEST

START_TEST(pipelines_agree)
{
    /* Complete binary tree of 15 GPUs (depth 3), chain of 8; 16 chunks of 4 MiB. */
    double S = 64.0 * 1048576;
    topo *t = switch_topo(15);
    double al, bw;
    path(t, 0, 1, &al, &bw);
    pair_t p = both(t, COLL_BROADCAST, COLL_TREE, NULL, 15, S, 0, 0);
    AGREE(p, TOL);
    ck_assert_rel(p.analytic, coll_closed_form_pipeline(3, 16, 2, S, al, bw), TOL);
    p = both(t, COLL_BROADCAST, COLL_RING, NULL, 8, S, 0, 0);
    AGREE(p, TOL);
    ck_assert_rel(p.analytic, coll_closed_form_pipeline(7, 16, 1, S, al, bw), TOL);
    AGREE(both(t, COLL_REDUCE, COLL_RING, NULL, 8, S, 0, 0), TOL);
    /* Tree / dbt all-reduce: between the all-reduce lower bound and the two phases run one
     * after the other. */
    for (coll_algo a = COLL_TREE; a <= COLL_DBT; a++) {
        p = both(t, COLL_ALLREDUCE, a, NULL, 15, S, 0, 0);
        double lb = 2.0 * 14 / 15 * S / bw;
        ck_assert_double_gt(p.analytic, lb);
        ck_assert_double_lt(p.analytic, 2 * coll_closed_form_pipeline(3, 16, 2, S, al, bw));
    }
    topo_destroy(t);
}
END_TEST

START_TEST(hier_and_host_ring_on_dgx)
{
    double S = 1024.0 * 1048576;
    topo *t = dgx(2);
    double a_in, b_in, a_out, b_out;
    path(t, 0, 1, &a_in, &b_in);
    path(t, 0, 8, &a_out, &b_out);
    pair_t p = both(t, COLL_ALLREDUCE, COLL_HIER, NULL, 16, S, 0, 0);
    AGREE(p, TOL);
    ck_assert_rel(p.analytic, coll_closed_form_hier(8, 2, S, a_in, b_in, a_out, b_out), TOL);
    AGREE(both(t, COLL_ALLREDUCE, COLL_HIER, NULL, 16, S, -1, 1e18), TOL); /* H100 reductions */
    AGREE(both(t, COLL_ALLREDUCE, COLL_RING, NULL, 16, S, 0, 0), TOL); /* 8 rail-aligned rings */
    /* 8 rings of one chunk each with the H100's reductions: the step model's rings stagger on
     * each GPU's reduction unit (5.266 ms), the analytic time exposes each ring's own (5.224 ms) */
    AGREE(both(t, COLL_ALLREDUCE, COLL_RING, NULL, 16, S, -1, 1e18), 0.01);
    /* the rule (what auto was): hier from 256 KiB on a multi-host group, hd below (16 is a
     * power of two) */
    AGREE(both(t, COLL_ALLREDUCE, COLL_RULE, NULL, 16, 64.0 * 1048576, -1, 1e18), TOL);
    pair_t small = both(t, COLL_ALLREDUCE, COLL_RULE, NULL, 16, 64.0 * 1024, -1, 1e18);
    AGREE(small, TOL);
    ck_assert_int_eq(small.analytic_algo, COLL_HD);
    topo_destroy(t);
    /* 16 boxes: the 128-way data-parallel all-reduce of a training step (a 2.7B model's bf16
     * gradients in one bucket), GPU reduction cost, one chunk as dtsim run configures it. */
    t = dgx(16);
    p = both(t, COLL_ALLREDUCE, COLL_RULE, NULL, 128, 5.4e9, -1, 1e18);
    AGREE(p, TOL);
    ck_assert_int_eq(p.analytic_algo, COLL_HIER);
    topo_destroy(t);
}
END_TEST

START_TEST(errors_as_coll_start)
{
    topo *t = switch_topo(8);
    sim_engine *e = sim_engine_create();
    net *nw = net_create(t, e, NULL);
    coll_analytic *a = coll_analytic_create(nw, t, NULL);
    int twice[3] = {1, 2, 1}, six[6] = {0, 1, 2, 3, 4, 5};
    sim_time_t at;
    dt_error err;
    dt_error_clear(&err);
    coll_spec s = {.op = COLL_ALLREDUCE, .group = twice, .n = 3, .bytes = 1e6};
    ck_assert_int_eq(coll_analytic_time(a, &s, &at, NULL, &err), DT_EINPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "appears twice"));
    dt_error_clear(&err);
    s = (coll_spec){.op = COLL_REDUCE_SCATTER, .algo = COLL_HD, .group = six, .n = 6, .bytes = 1e6};
    ck_assert_int_eq(coll_analytic_time(a, &s, &at, NULL, &err), DT_EINPUT);
    s.algo = COLL_HIER;
    ck_assert_int_eq(coll_analytic_time(a, &s, &at, NULL, &err), DT_EINPUT);
    /* a single GPU costs nothing */
    s = (coll_spec){.op = COLL_ALLREDUCE, .group = six, .n = 1, .bytes = 1e9};
    ck_assert_int_eq(coll_analytic_time(a, &s, &at, NULL, &err), DT_OK);
    ck_assert_int_eq(at, 0);
    coll_analytic_destroy(a);
    net_destroy(nw);
    sim_engine_destroy(e);
    topo_destroy(t);
}
END_TEST

START_TEST(cache_many_groups)
{
    /* More distinct specs than the cache's first size: it grows and keeps answering the same. */
    topo *t = switch_topo(16);
    sim_engine *e = sim_engine_create();
    net *nw = net_create(t, e, NULL);
    coll_config cc = {.reduce_bw = 0};
    coll_analytic *a = coll_analytic_create(nw, t, &cc);
    int g[4] = {0, 1, 2, 3};
    dt_error err;
    dt_error_clear(&err);
    sim_time_t first[600];
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < 600; i++) {
            coll_spec s = {.op = COLL_ALLREDUCE, .algo = COLL_RING, .group = g, .n = 4,
                           .bytes = 1e6 + 2 * i};
            sim_time_t at;
            ck_assert_int_eq(coll_analytic_time(a, &s, &at, NULL, &err), DT_OK);
            if (pass == 0) first[i] = at;
            else ck_assert_int_eq(at, first[i]);
        }
    ck_assert_int_lt(first[0], first[599]);
    coll_analytic_destroy(a);
    net_destroy(nw);
    sim_engine_destroy(e);
    topo_destroy(t);
}
END_TEST

typedef struct load_sum {
    double total, max, min;
    int links;
} load_sum;

static void on_load(void *ctx, int link, double bytes)
{
    (void)link;
    load_sum *l = ctx;
    l->total += bytes;
    l->links++;
    if (bytes > l->max) l->max = bytes;
    if (l->min == 0 || bytes < l->min) l->min = bytes;
}

/* coll_analytic_bytes: what all ranks of a program send, against the per-rank closed forms;
 * coll_analytic_loads: a ring all-reduce on a switch puts 2(n-1)/n S on each of the 2n
 * GPU-switch links. */
START_TEST(sendrecv_through_pxn)
{
    /* Under net_config.pxn a send between rails is costed through the relay net_send_spread
     * uses (NCCL's PXN): GPU 0 -> GPU 9 (box 1, rail 1) relays through GPU 1, so its time is
     * both routes' latencies + S / 50 GB/s, and its loads are both routes' links; GPU 0 -> GPU 8
     * (rail 0) and a net without pxn send from GPU 0's own NIC. */
    topo *t = dgx(2);
    sim_engine *e = sim_engine_create();
    net_config on = {.mode = NET_ANALYTIC, .pxn = true}, off = {.mode = NET_ANALYTIC};
    net *np = net_create(t, e, &on), *nd = net_create(t, e, &off);
    ck_assert_int_eq(net_pxn_relay(np, 0, 9), 1);
    ck_assert_int_eq(net_pxn_relay(np, 0, 8), -1);
    ck_assert_int_eq(net_pxn_relay(np, 0, 3), -1);
    ck_assert_int_eq(net_pxn_relay(nd, 0, 9), -1);
    coll_config cc = {.reduce_bw = 0};
    coll_analytic *ap = coll_analytic_create(np, t, &cc), *ad = coll_analytic_create(nd, t, &cc);
    const double S = 50e6;
    int pair[2] = {0, 9};
    coll_spec sr = {.op = COLL_SENDRECV, .group = pair, .n = 2, .bytes = S, .root = 1};
    sim_time_t l01, l19, l09, tp, td;
    ck_assert_int_eq(net_path_info(np, 0, 1, &l01, NULL, NULL), DT_OK);
    ck_assert_int_eq(net_path_info(np, 1, 9, &l19, NULL, NULL), DT_OK);
    ck_assert_int_eq(net_path_info(np, 0, 9, &l09, NULL, NULL), DT_OK);
    dt_error err;
    dt_error_clear(&err);
    ck_assert_int_eq(coll_analytic_time(ap, &sr, &tp, NULL, &err), DT_OK);
    ck_assert_int_eq(coll_analytic_time(ad, &sr, &td, NULL, &err), DT_OK);
    const sim_time_t tS = 1000000000; /* 50 MB at 50 GB/s: 1 ms */
    ck_assert(llabs(tp - (l01 + l19 + tS)) <= 1);
    ck_assert(llabs(td - (l09 + tS)) <= 1);
    ck_assert_int_ne(l01 + l19, l09);
    int hops01, hops19;
    ck_assert_int_eq(net_path_info(np, 0, 1, NULL, NULL, &hops01), DT_OK);
    ck_assert_int_eq(net_path_info(np, 1, 9, NULL, NULL, &hops19), DT_OK);
    load_sum l = {0};
    ck_assert_int_eq(coll_analytic_loads(ap, &sr, on_load, &l, &err), DT_OK);
    ck_assert_int_eq(l.links, hops01 + hops19);
    ck_assert_rel(l.total, (hops01 + hops19) * S, 1e-12);
    coll_analytic_destroy(ap);
    coll_analytic_destroy(ad);
    net_destroy(np);
    net_destroy(nd);
    sim_engine_destroy(e);
    topo_destroy(t);
}
END_TEST

/* Bytes an all-to-all's loads put on links into or out of a spine. */
typedef struct spine_acc {
    const topo *t;
    double bytes;
} spine_acc;

static void on_spine_load(void *ctx, int link, double bytes)
{
    spine_acc *acc = ctx;
    const topo *t = acc->t;
    if (!strncmp(t->nodes[t->links[link].src].name, "spine", 5) ||
        !strncmp(t->nodes[t->links[link].dst].name, "spine", 5))
        acc->bytes += bytes;
}

static double alltoall_spine_bytes(topo *t, bool pxn, double S)
{
    sim_engine *e = sim_engine_create();
    net_config nc = {.mode = NET_FLOW, .pxn = pxn};
    net *nw = net_create(t, e, &nc);
    coll_config cc = {.reduce_bw = 0};
    coll_analytic *a = coll_analytic_create(nw, t, &cc);
    int g[16];
    for (int i = 0; i < 16; i++) g[i] = i;
    coll_spec sp = {.op = COLL_ALLTOALL, .algo = COLL_DIRECT, .group = g, .n = 16, .bytes = S,
                    .elem_bytes = 2};
    spine_acc acc = {t, 0};
    dt_error err;
    dt_error_clear(&err);
    ck_assert_int_eq(coll_analytic_loads(a, &sp, on_spine_load, &acc, &err), DT_OK);
    coll_analytic_destroy(a);
    net_destroy(nw);
    sim_engine_destroy(e);
    return acc.bytes;
}

static void on_spine_link(void *ctx, int link, sim_time_t start, sim_time_t end, double bytes,
                          uint32_t tag)
{
    (void)start, (void)end, (void)tag;
    on_spine_load(ctx, link, bytes);
}

static void on_coll_done(void *model, sim_engine *eng, const sim_event *ev)
{
    (void)eng, (void)ev;
    ++*(int *)model;
}

/* The same all-to-all run by the flow model: bytes its transfers put through the spines. */
static double alltoall_spine_bytes_flow(topo *t, bool pxn, double S)
{
    sim_engine *e = sim_engine_create();
    net_config nc = {.mode = NET_FLOW, .pxn = pxn};
    net *nw = net_create(t, e, &nc);
    spine_acc acc = {t, 0};
    net_set_link_observer(nw, on_spine_link, &acc);
    coll_config cc = {.reduce_bw = 0};
    coll_engine *ce = coll_create(nw, e, t, &cc);
    int done = 0;
    uint32_t k = sim_kind_register(e, "test.coll_done", on_coll_done, &done);
    int g[16];
    for (int i = 0; i < 16; i++) g[i] = i;
    coll_spec sp = {.op = COLL_ALLTOALL, .algo = COLL_DIRECT, .group = g, .n = 16, .bytes = S,
                    .elem_bytes = 2};
    dt_error err;
    dt_error_clear(&err);
    ck_assert_int_eq(coll_start(ce, &sp, k, 0, 0, &err), DT_OK);
    sim_run(e, SIM_TIME_MAX);
    ck_assert_int_eq(done, 1);
    coll_destroy(ce);
    net_destroy(nw);
    sim_engine_destroy(e);
    return acc.bytes;
}

START_TEST(alltoall_through_pxn)
{
    /* NCCL's all-to-all is grouped point-to-point sends, so under PXN a GPU's part for rail k
     * of the other box goes over NVLink to its box's GPU k and out of that GPU's NIC: 16 GPUs
     * on 2 DGX boxes, direct all-to-all of 64 MiB a rank. The flow simulation and the analytic
     * time agree with PXN as without; with PXN no byte crosses a spine, without it every
     * cross-rail part does (each GPU's 7 parts of S/16 for the other box's other rails). */
    topo *t = dgx(2);
    const double S = 64.0 * 1048576;
    AGREE(both_nc(t, COLL_ALLTOALL, COLL_DIRECT, NULL, 16, S, 0, 0,
                  (net_config){.mode = NET_FLOW, .pxn = true}), TOL);
    AGREE(both(t, COLL_ALLTOALL, COLL_DIRECT, NULL, 16, S, 0, 0), TOL);
    ck_assert_double_eq(alltoall_spine_bytes(t, true, S), 0);
    ck_assert_double_eq(alltoall_spine_bytes_flow(t, true, S), 0);
    ck_assert_rel(alltoall_spine_bytes_flow(t, false, S), 2 * 8 * 7 * (S / 16) * 2, 1e-9);
    /* without PXN: 2 boxes x 8 GPUs x 7 cross-rail peers, S/16 each, over 2 spine links each */
    ck_assert_rel(alltoall_spine_bytes(t, false, S), 2 * 8 * 7 * (S / 16) * 2, 1e-12);
    topo_destroy(t);
}
END_TEST

START_TEST(bytes_and_loads)
{
    int n = 8;
    double S = 64.0 * 1048576; /* divisible by n x 2-byte elements: no rounding */
    topo *t = switch_topo(n);
    sim_engine *e = sim_engine_create();
    net *nw = net_create(t, e, NULL);
    coll_config cc = {.reduce_bw = 0};
    coll_analytic *a = coll_analytic_create(nw, t, &cc);
    int g[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    struct { coll_op op; coll_algo algo; double per_rank; } cases[] = {
        {COLL_ALLREDUCE, COLL_RING, 2.0 * (n - 1) / n * S},
        {COLL_REDUCE_SCATTER, COLL_RING, (n - 1.0) / n * S},
        {COLL_ALLGATHER, COLL_RING, (n - 1.0) / n * S},
        {COLL_ALLREDUCE, COLL_HD, 2.0 * (n - 1) / n * S},
        {COLL_ALLTOALL, COLL_DIRECT, (n - 1.0) / n * S},
        {COLL_ALLREDUCE, COLL_TREE, 2.0 * (n - 1) / n * S}, /* n-1 edges, S up and S down */
    };
    dt_error err;
    dt_error_clear(&err);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        coll_spec sp = {.op = cases[i].op, .algo = cases[i].algo, .group = g, .n = n, .bytes = S,
                        .elem_bytes = 2};
        double sent = -1, again = -1;
        ck_assert_int_eq(coll_analytic_bytes(a, &sp, &sent, &err), DT_OK);
        ck_assert_rel(sent, n * cases[i].per_rank, 1e-12);
        sp.bytes = 2 * S; /* cached per byte: linear */
        ck_assert_int_eq(coll_analytic_bytes(a, &sp, &again, &err), DT_OK);
        ck_assert_rel(again, 2 * sent, 1e-12);
    }
    int pair[2] = {2, 6};
    coll_spec sr = {.op = COLL_SENDRECV, .group = pair, .n = 2, .bytes = S, .root = 1};
    double sent = 0;
    ck_assert_int_eq(coll_analytic_bytes(a, &sr, &sent, &err), DT_OK);
    ck_assert_double_eq(sent, S);
    load_sum l = {0};
    coll_spec ar = {.op = COLL_ALLREDUCE, .algo = COLL_RING, .group = g, .n = n, .bytes = S,
                    .elem_bytes = 2};
    ck_assert_int_eq(coll_analytic_loads(a, &ar, on_load, &l, &err), DT_OK);
    ck_assert_int_eq(l.links, 2 * n);
    ck_assert_rel(l.max, 2.0 * (n - 1) / n * S, 1e-12);
    ck_assert_rel(l.min, 2.0 * (n - 1) / n * S, 1e-12);
    l = (load_sum){0};
    ck_assert_int_eq(coll_analytic_loads(a, &sr, on_load, &l, &err), DT_OK);
    ck_assert_int_eq(l.links, 2);
    ck_assert_rel(l.total, 2 * S, 1e-12);
    coll_spec bad = ar;
    int dup[2] = {1, 1};
    bad.group = dup;
    bad.n = 2;
    ck_assert_int_eq(coll_analytic_bytes(a, &bad, &sent, &err), DT_EINPUT);
    coll_analytic_destroy(a);
    net_destroy(nw);
    sim_engine_destroy(e);
    topo_destroy(t);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("coll_analytic");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, ring_agrees);
    tcase_add_test(tc, ring_reduction_cost);
    tcase_add_test(tc, hd_agrees);
    tcase_add_test(tc, direct_ps_sendrecv_agree);
    tcase_add_test(tc, pipelines_agree);
    tcase_add_test(tc, hier_and_host_ring_on_dgx);
    tcase_add_test(tc, errors_as_coll_start);
    tcase_add_test(tc, cache_many_groups);
    tcase_add_test(tc, bytes_and_loads);
    tcase_add_test(tc, sendrecv_through_pxn);
    tcase_add_test(tc, alltoall_through_pxn);
    suite_add_tcase(s, tc);
    return dt_run_suite(s);
}
