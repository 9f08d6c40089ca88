/* test_coll.c - collective algorithms run as step programs over the flow network.
 * Pins down, against alpha-beta closed forms within 0.5% (reduction cost zero unless said):
 * ring all-reduce / reduce-scatter / all-gather on a ring of n GPUs (odd n, sizes not divisible
 * by n), halving-doubling on a switch (power of two and not), direct all-to-all on a switch,
 * pipelined tree and chain broadcast, parameter server with one server, send/recv, reduction
 * compute added to the ring; contention with known answers (two all-reduces sharing one GPU's
 * links each take twice the bandwidth term; a 4:1 oversubscribed fat-tree slows an all-to-all
 * by o(n-d)/(n-1)); hierarchical vs flat ring all-reduce on a dgx topology (both times and
 * their ratio from the closed forms); dbt's flow count; host-aware trees' NIC traffic (only chain
 * heads cross hosts, (H-1) S bytes); the incremental max-min sharing equals a
 * global re-solve throughout overlapping collectives; completion batches change no link's
 * bandwidth phase and no completion time; determinism; `auto` picks; input errors.
 * Leaves free: tie order of simultaneous events; tree shapes beyond flow counts. */
#include <math.h>
#include <string.h>

#include "coll_testutil.h"

#define TOL 0.005

static coll_result run(topo *t, coll_op op, coll_algo algo, const int *group, int n, double S,
                       double reduce_bw)
{
    int all[1024];
    if (!group) {
        for (int i = 0; i < n; i++) all[i] = i;
        group = all;
    }
    coll_spec spec = {.op = op, .algo = algo, .group = group, .n = n, .bytes = S, .elem_bytes = 2};
    coll_config cc = {.reduce_bw = reduce_bw};
    return simulate_checked(t, &spec, &cc);
}

START_TEST(ring_closed_forms)
{
    const int ns[] = {8, 7};
    const double sizes[] = {64.0 * 1048576, 1e8 + 7};
    for (int a = 0; a < 2; a++) {
        int n = ns[a];
        topo *t = ring_topo(n);
        double al, bw;
        path(t, 0, 1, &al, &bw);
        ck_assert_double_eq(bw, 100e9);
        for (int b = 0; b < 2; b++) {
            double S = sizes[b];
            double ar = secs(run(t, COLL_ALLREDUCE, COLL_RING, NULL, n, S, 0));
            ck_assert_rel(ar, coll_closed_form(COLL_ALLREDUCE, COLL_RING, n, S, al, bw), TOL);
            double rs = secs(run(t, COLL_REDUCE_SCATTER, COLL_RING, NULL, n, S, 0));
            ck_assert_rel(rs, coll_closed_form(COLL_REDUCE_SCATTER, COLL_RING, n, S, al, bw), TOL);
            double ag = secs(run(t, COLL_ALLGATHER, COLL_RING, NULL, n, S, 0));
            ck_assert_rel(ag, coll_closed_form(COLL_ALLGATHER, COLL_RING, n, S, al, bw), TOL);
        }
        /* Small sizes: latency-dominated, the alpha term must be right too. */
        double S = 4096;
        double ar = secs(run(t, COLL_ALLREDUCE, COLL_RING, NULL, n, S, 0));
        ck_assert_rel(ar, coll_closed_form(COLL_ALLREDUCE, COLL_RING, n, S, al, bw), TOL);
        topo_destroy(t);
    }
}
END_TEST

START_TEST(ring_with_reduction_cost)
{
    /* Each of the n-1 reduce-scatter steps reduces one S/n segment at R B/s. One chunk (one
     * stream): with several, one chunk's reduction overlaps another's transfer and the
     * time falls between the bare closed form and this sum. */
    int n = 8;
    double S = 64.0 * 1048576, R = 200e9;
    topo *t = ring_topo(n);
    double al, bw;
    path(t, 0, 1, &al, &bw);
    int g[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    coll_spec spec = {.op = COLL_ALLREDUCE, .algo = COLL_RING, .group = g, .n = n, .bytes = S};
    coll_config one = {.reduce_bw = R, .chunk_bytes = S};
    coll_result r;
    dt_error err;
    dt_error_clear(&err);
    ck_assert_int_eq(coll_simulate(t, &spec, &one, NULL, &r, &err), DT_OK);
    double bare = coll_closed_form(COLL_ALLREDUCE, COLL_RING, n, S, al, bw);
    double expect = bare + (n - 1) * S / n / R;
    ck_assert_rel(secs(r), expect, TOL);
    coll_config two = {.reduce_bw = R, .chunk_bytes = S / n / 2};
    ck_assert_int_eq(coll_simulate(t, &spec, &two, NULL, &r, &err), DT_OK);
    ck_assert_double_gt(secs(r), bare);
    ck_assert_double_lt(secs(r), expect);
    topo_destroy(t);
}
END_TEST

START_TEST(hd_closed_forms)
{
    const int ns[] = {8, 16, 6, 12};
    double S = 64.0 * 1048576;
    for (int a = 0; a < 4; a++) {
        int n = ns[a];
        topo *t = switch_topo(n);
        double al, bw;
        path(t, 0, 1, &al, &bw);
        ck_assert_rel(al, 2.3e-6, 1e-12);
        double ar = secs(run(t, COLL_ALLREDUCE, COLL_HD, NULL, n, S, 0));
        ck_assert_rel(ar, coll_closed_form(COLL_ALLREDUCE, COLL_HD, n, S, al, bw), TOL);
        if ((n & (n - 1)) == 0) {
            double rs = secs(run(t, COLL_REDUCE_SCATTER, COLL_HD, NULL, n, S, 0));
            ck_assert_rel(rs, coll_closed_form(COLL_REDUCE_SCATTER, COLL_HD, n, S, al, bw), TOL);
            double ag = secs(run(t, COLL_ALLGATHER, COLL_HD, NULL, n, S, 0));
            ck_assert_rel(ag, coll_closed_form(COLL_ALLGATHER, COLL_HD, n, S, al, bw), TOL);
            /* Small message: 2 log2(n) alpha dominates. */
            double sm = secs(run(t, COLL_ALLREDUCE, COLL_HD, NULL, n, 1024, 0));
            ck_assert_rel(sm, coll_closed_form(COLL_ALLREDUCE, COLL_HD, n, 1024, al, bw), TOL);
        }
        topo_destroy(t);
    }
}
END_TEST

START_TEST(direct_alltoall_switch)
{
    int n = 16;
    double S = 64.0 * 1048576;
    topo *t = switch_topo(n);
    double al, bw;
    path(t, 0, 1, &al, &bw);
    coll_result r = run(t, COLL_ALLTOALL, COLL_DIRECT, NULL, n, S, 0);
    ck_assert_rel(secs(r), coll_closed_form(COLL_ALLTOALL, COLL_DIRECT, n, S, al, bw), TOL);
    ck_assert_uint_eq(r.net.flows_started, (uint64_t)n * (n - 1));
    double ag = secs(run(t, COLL_ALLGATHER, COLL_DIRECT, NULL, n, S, 0));
    ck_assert_rel(ag, coll_closed_form(COLL_ALLGATHER, COLL_DIRECT, n, S, al, bw), TOL);
    topo_destroy(t);
}
END_TEST

START_TEST(pipelined_broadcasts)
{
    /* Complete binary tree of 15 GPUs (depth 3), 64 MiB in 16 chunks of 4 MiB: every inner
     * node feeds two children through its one uplink, so a stage costs alpha + 2 C/B. */
    double S = 64.0 * 1048576;
    int chunks = 16;
    topo *t = switch_topo(15);
    double al, bw;
    path(t, 0, 1, &al, &bw);
    double tb = secs(run(t, COLL_BROADCAST, COLL_TREE, NULL, 15, S, 0));
    ck_assert_rel(tb, coll_closed_form_pipeline(3, chunks, 2, S, al, bw), TOL);
    /* The chain (ring broadcast) over 8 of them: 7 stages, fan-out 1. */
    double ch = secs(run(t, COLL_BROADCAST, COLL_RING, NULL, 8, S, 0));
    ck_assert_rel(ch, coll_closed_form_pipeline(7, chunks, 1, S, al, bw), TOL);
    /* Reduce up the same chain mirrors it. */
    double rd = secs(run(t, COLL_REDUCE, COLL_RING, NULL, 8, S, 0));
    ck_assert_rel(rd, coll_closed_form_pipeline(7, chunks, 1, S, al, bw), TOL);
    topo_destroy(t);
}
END_TEST

START_TEST(ps_and_sendrecv)
{
    /* One server: it receives (n-1) S through its downlink, then sends (n-1) S up. */
    int n = 8;
    double S = 16.0 * 1048576;
    topo *t = switch_topo(n);
    double al, bw;
    path(t, 0, 1, &al, &bw);
    int g[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    coll_spec spec = {.op = COLL_ALLREDUCE, .algo = COLL_PS, .group = g, .n = n, .bytes = S,
                      .servers = 1};
    coll_config cc = {.reduce_bw = 0};
    coll_result r;
    dt_error err;
    dt_error_clear(&err);
    ck_assert_int_eq(coll_simulate(t, &spec, &cc, NULL, &r, &err), DT_OK);
    ck_assert_rel(secs(r), 2 * al + 2 * (n - 1) * S / bw, TOL);
    int pair[2] = {3, 5};
    double sr = secs(run(t, COLL_SENDRECV, COLL_AUTO, pair, 2, S, 0));
    ck_assert_rel(sr, al + S / bw, 1e-9);
    topo_destroy(t);
}
END_TEST

START_TEST(two_allreduces_share_a_bottleneck)
{
    /* Groups {0,1} and {0,2} on a switch: GPU 0's up- and downlink carry both collectives'
     * flows, so each gets half: the bandwidth term doubles, the latency term does not. */
    double S = 256.0 * 1048576;
    topo *t = switch_topo(3);
    double al, bw;
    path(t, 0, 1, &al, &bw);
    double alone = secs(run(t, COLL_ALLREDUCE, COLL_RING, (int[]){0, 1}, 2, S, 0));
    ck_assert_rel(alone, coll_closed_form(COLL_ALLREDUCE, COLL_RING, 2, S, al, bw), TOL);

    sim_engine *e = sim_engine_create();
    net *n = net_create(t, e, NULL);
    coll_config cc = {.reduce_bw = 0};
    coll_engine *c = coll_create(n, e, t, &cc);
    two_done d = {{0, 0}};
    uint32_t k = sim_kind_register(e, "test.two", on_two, &d);
    int ga[2] = {0, 1}, gb[2] = {0, 2};
    coll_spec a = {.op = COLL_ALLREDUCE, .algo = COLL_RING, .group = ga, .n = 2, .bytes = S};
    coll_spec b = a;
    b.group = gb;
    dt_error err;
    dt_error_clear(&err);
    ck_assert_int_eq(coll_start(c, &a, k, 0, 0, &err), DT_OK);
    ck_assert_int_eq(coll_start(c, &b, k, 1, 0, &err), DT_OK);
    sim_run(e, SIM_TIME_MAX);
    double lat = 2 * al; /* 2(n-1) alpha with n = 2 */
    for (int i = 0; i < 2; i++)
        ck_assert_rel(sim_time_to_s(d.at[i]) - lat, 2 * (alone - lat), TOL);
    coll_destroy(c);
    net_destroy(n);
    sim_engine_destroy(e);
    topo_destroy(t);
}
END_TEST

START_TEST(oversubscribed_fat_tree_alltoall)
{
    /* Radix 5 at 4:1 gives 5 leaves of d = 4 GPUs with one uplink to a single spine (so no
     * multipath luck is involved). Each leaf uplink carries d (n-d)/n S bytes: the all-to-all
     * takes o (n-d)/n S/B instead of the switch's (n-1)/n S/B. */
    int n = 20, d = 4;
    double o = 4, S = 64.0 * 1048576, B = 50e9;
    topo *ft = gen((topo_gen_params){.family = TOPO_FAMILY_FAT_TREE, .gpus = n, .radix = 5,
                                     .oversubscription = o, .bandwidth = B, .latency = SIM_US,
                                     .switch_latency = 300 * SIM_NS});
    topo *sw = switch_topo(n);
    double al_ft, al_sw, bw;
    path(ft, 0, n - 1, &al_ft, &bw);
    path(sw, 0, 1, &al_sw, &bw);
    double t_ft = secs(run(ft, COLL_ALLTOALL, COLL_DIRECT, NULL, n, S, 0));
    double t_sw = secs(run(sw, COLL_ALLTOALL, COLL_DIRECT, NULL, n, S, 0));
    ck_assert_rel(t_ft, al_ft + o * (n - d) / n * S / B, TOL);
    ck_assert_rel(t_sw, al_sw + (double)(n - 1) / n * S / B, TOL);
    ck_assert_rel(t_ft / t_sw, o * (n - d) / (n - 1), TOL);
    topo_destroy(ft);
    topo_destroy(sw);
}
END_TEST

/* run() with coll_config.rings set (0: one ring per rail, 1: one ring) */
static coll_result run_rings(topo *t, coll_op op, coll_algo algo, const int *group, int n, double S,
                             double reduce_bw, int rings)
{
    int all[1024];
    if (!group) {
        for (int i = 0; i < n; i++) all[i] = i;
        group = all;
    }
    coll_spec spec = {.op = op, .algo = algo, .group = group, .n = n, .bytes = S, .elem_bytes = 2};
    coll_config cc = {.reduce_bw = reduce_bw, .rings = rings};
    return simulate_checked(t, &spec, &cc);
}

START_TEST(hier_beats_flat_ring_on_dgx)
{
    /* 2 DGX boxes of 8 GPUs: NVLink 450 GB/s inside, one 50 GB/s NIC per GPU (rails).
     * One ring (coll_config.rings = 1) visits box 0 as 0..7, then box 1 as 15, 8..14, so its
     * two host crossings (7 -> 15 on rail 7, 14 -> 0 across rails via a spine) never share a
     * link: each ring step is paced by a NIC flow. The ring builder picks that rail-aligned
     * order by itself for the group 0..15 (checked too). Expected ratio from the closed forms:
     * 5.9 at 1 GiB. */
    topo *t = gen((topo_gen_params){.family = TOPO_FAMILY_DGX, .nodes = 2, .gpus_per_node = 8,
                                    .nic_bw = 50e9, .nvlink_bw = 450e9});
    double S = 1024.0 * 1048576;
    int ring[16] = {0, 1, 2, 3, 4, 5, 6, 7, 15, 8, 9, 10, 11, 12, 13, 14};
    double a_in, b_in, a_out, b_out, a_x, b_x;
    path(t, 0, 1, &a_in, &b_in);
    path(t, 0, 8, &a_out, &b_out);
    path(t, 14, 0, &a_x, &b_x);
    ck_assert_double_eq(b_in, 450e9);
    ck_assert_double_eq(b_out, 50e9);
    double t_ring = secs(run_rings(t, COLL_ALLREDUCE, COLL_RING, ring, 16, S, 0, 1));
    ck_assert_double_eq(secs(run_rings(t, COLL_ALLREDUCE, COLL_RING, NULL, 16, S, 0, 1)), t_ring);
    double t_hier = secs(run(t, COLL_ALLREDUCE, COLL_HIER, NULL, 16, S, 0));
    double c_ring = coll_closed_form(COLL_ALLREDUCE, COLL_RING, 16, S, a_x, b_out);
    double c_hier = coll_closed_form_hier(8, 2, S, a_in, b_in, a_out, b_out);
    ck_assert_rel(t_ring, c_ring, TOL);
    ck_assert_rel(t_hier, c_hier, TOL);
    ck_assert_rel(t_ring / t_hier, c_ring / c_hier, 2 * TOL);
    ck_assert_double_gt(t_ring / t_hier, 5);
    /* By default 8 rings, one per rail, S/8 each: every NIC carries one ring's crossing at
     * 50 GB/s, every NVLink port 7 rings (450/7 = 64 GB/s each, more than a NIC), so the ring
     * all-reduce runs at 8 NICs' worth: 2 x 15/16 x 1 GiB / 400 GB/s + 30 a = 5.11 ms, where
     * hier's NVLink phases add to its NIC phase (6.86 ms) and one ring takes 40.3 ms. */
    double t_rails = secs(run(t, COLL_ALLREDUCE, COLL_RING, NULL, 16, S, 0));
    double c_rails = coll_closed_form_rails(COLL_ALLREDUCE, 8, 2, S, a_x, b_in, b_out);
    ck_assert_rel(t_rails, c_rails, TOL);
    ck_assert_rel(t_rails, 2.0 * 15 / 16 * S / 400e9 + 30 * a_x, TOL);
    ck_assert_double_lt(t_rails, t_hier);
    ck_assert_double_gt(t_ring / t_rails, 7.5);
    topo_destroy(t);
}
END_TEST

START_TEST(dbt_and_tree_allreduce)
{
    /* Structure: each tree moves every chunk over each of its n-1 edges once up, once down. */
    int n = 16;
    double S = 32.0 * 1048576; /* 2 trees x 16 MiB = 4 chunks each */
    topo *t = switch_topo(n);
    double al, bw;
    path(t, 0, 1, &al, &bw);
    coll_result d = run(t, COLL_ALLREDUCE, COLL_DBT, NULL, n, S, 0);
    ck_assert_uint_eq(d.net.flows_started, 2 * 2 * (n - 1) * 4);
    coll_result tr = run(t, COLL_ALLREDUCE, COLL_TREE, NULL, n, S, 0);
    ck_assert_uint_eq(tr.net.flows_started, 2 * (n - 1) * 8);
    /* Never faster than the all-reduce lower bound 2(n-1)/n S/B. */
    double lb = 2.0 * (n - 1) / n * S / bw;
    ck_assert_double_gt(secs(d), lb);
    ck_assert_double_gt(secs(tr), lb);
    /* Splitting over two trees that use different uplinks beats one tree. */
    ck_assert_double_lt(secs(d), secs(tr));
    topo_destroy(t);
}
END_TEST

START_TEST(incremental_equals_global)
{
    /* The incremental solver (components, skipped re-solves when a departing flow bottlenecked
     * nobody else) must agree with a from-scratch global max-min solve at all times, here
     * through a dbt and a ring all-reduce overlapping on a 4-box dgx with reductions on. */
    topo *t = gen((topo_gen_params){.family = TOPO_FAMILY_DGX, .nodes = 4, .gpus_per_node = 8});
    sim_engine *e = sim_engine_create();
    net *n = net_create(t, e, NULL);
    coll_config cc = {.reduce_bw = -1};
    coll_engine *c = coll_create(n, e, t, &cc);
    fair_probe p = {.n = n, .until = 1}; /* probes until the first collective is done */
    p.kind = sim_kind_register(e, "test.fair", on_fair, &p);
    uint32_t kd = sim_kind_register(e, "test.fair_done", on_fair_done, &p);
    int g[32], h[16];
    for (int i = 0; i < 32; i++) g[i] = i;
    for (int i = 0; i < 16; i++) h[i] = 2 * i;
    coll_spec a = {.op = COLL_ALLREDUCE, .algo = COLL_DBT, .group = g, .n = 32, .bytes = 2e7};
    coll_spec b = {.op = COLL_ALLREDUCE, .algo = COLL_RING, .group = h, .n = 16, .bytes = 3e7};
    dt_error err;
    dt_error_clear(&err);
    ck_assert_int_eq(coll_start(c, &a, kd, 0, 0, &err), DT_OK);
    ck_assert_int_eq(coll_start(c, &b, kd, 1, 0, &err), DT_OK);
    sim_schedule(e, 1, p.kind, 0, 0);
    sim_run(e, SIM_TIME_MAX);
    ck_assert_int_gt(p.checks, 1000);
    ck_assert_int_eq(p.bad, 0);
    coll_destroy(c);
    net_destroy(n);
    sim_engine_destroy(e);
    topo_destroy(t);
}
END_TEST

/* Everything the network reports, in the order it reports it: each link's bandwidth phase
 * (link observer, called as flows leave their links) and each collective's completion. */
typedef struct obs_rec {
    int n, cap;
    int64_t *v; /* 5 numbers per observation */
} obs_rec;

static void obs_push(obs_rec *r, int64_t a, int64_t b, int64_t c, int64_t d, int64_t e)
{
    if (r->n + 5 > r->cap) {
        r->cap = r->cap ? 2 * r->cap : 4096;
        r->v = realloc(r->v, (size_t)r->cap * sizeof *r->v);
        ck_assert_ptr_nonnull(r->v);
    }
    int64_t x[5] = {a, b, c, d, e};
    memcpy(r->v + r->n, x, sizeof x);
    r->n += 5;
}

static void on_obs_link(void *ctx, int link, sim_time_t start, sim_time_t end, double bytes,
                        uint32_t tag)
{
    obs_push(ctx, link, start, end, (int64_t)llround(bytes * 8), tag);
}

typedef struct mix_ctx {
    coll_engine *c;
    obs_rec *r;
    uint32_t k_done;
    coll_spec late; /* started by on_mix_start */
} mix_ctx;

static void on_mix_done(void *model, sim_engine *eng, const sim_event *ev)
{
    mix_ctx *m = model;
    obs_push(m->r, -1, ev->id, ev->time, 0, 0);
    (void)eng;
}

static void on_mix_start(void *model, sim_engine *eng, const sim_event *ev)
{
    mix_ctx *m = model;
    dt_error err;
    dt_error_clear(&err);
    ck_assert_int_eq(coll_start(m->c, &m->late, m->k_done, ev->id, 0, &err), DT_OK);
    (void)eng;
}

/* Overlapping collectives on topology t, with the network's completion batches on or off:
 * a direct all-reduce of all GPUs with reductions (a million-flow pattern in small: every flow
 * of a phase finishes at once, its links empty in one batch), a ring all-reduce on the even
 * GPUs from the start, and at 37 us a direct all-to-all of an odd size on the first half,
 * whose arrivals re-rate flows already waiting in a batch (stale members). */
static uint64_t run_mix(topo *t, int batching, obs_rec *r)
{
    sim_engine *e = sim_engine_create();
    net *n = net_create(t, e, NULL);
    net_set_batching(n, batching);
    net_set_link_observer(n, on_obs_link, r);
    coll_config cc = {.reduce_bw = -1};
    coll_engine *c = coll_create(n, e, t, &cc);
    int g = t->n_gpus, all[64], evens[32];
    for (int i = 0; i < g; i++) all[i] = i;
    for (int i = 0; i < g / 2; i++) evens[i] = 2 * i;
    mix_ctx m = {.c = c, .r = r};
    m.k_done = sim_kind_register(e, "test.mix_done", on_mix_done, &m);
    uint32_t ks = sim_kind_register(e, "test.mix_start", on_mix_start, &m);
    m.late = (coll_spec){.op = COLL_ALLTOALL, .algo = COLL_DIRECT, .group = all, .n = g / 2,
                         .bytes = 1e7 + 6, .elem_bytes = 2};
    coll_spec a = {.op = COLL_ALLREDUCE, .algo = COLL_DIRECT, .group = all, .n = g,
                   .bytes = 16777216, .elem_bytes = 2};
    coll_spec b = {.op = COLL_ALLREDUCE, .algo = COLL_RING, .group = evens, .n = g / 2,
                   .bytes = 3e6, .elem_bytes = 2};
    dt_error err;
    dt_error_clear(&err);
    ck_assert_int_eq(coll_start(c, &a, m.k_done, 0, 0, &err), DT_OK);
    ck_assert_int_eq(coll_start(c, &b, m.k_done, 1, 0, &err), DT_OK);
    sim_schedule(e, 37 * SIM_US, ks, 2, 0);
    sim_run(e, SIM_TIME_MAX);
    uint64_t events = sim_events_handled(e);
    coll_destroy(c);
    net_destroy(n);
    sim_engine_destroy(e);
    return events;
}

START_TEST(batched_equals_per_flow)
{
    /* Completion batches (net.c: flows one recompute gives the same finish time leave in one
     * event, links all of whose flows leave are emptied by count, completions handed back in
     * one event per time) change the events, not the simulation: every link's bandwidth phase
     * and every collective's completion come out identical, in the same order, to the
     * picosecond, with batches on and off; with them on there are fewer events. On a switch
     * (all flows of a direct phase end together) and on a 2:1 oversubscribed fat-tree (finish
     * times spread). */
    topo *ts[2] = {switch_topo(16),
                   gen((topo_gen_params){.family = TOPO_FAMILY_FAT_TREE, .gpus = 32, .radix = 8,
                                         .oversubscription = 2})};
    for (int i = 0; i < 2; i++) {
        obs_rec on = {0}, off = {0};
        uint64_t ev_on = run_mix(ts[i], 1, &on), ev_off = run_mix(ts[i], 0, &off);
        ck_assert_int_gt(on.n, 1000);
        ck_assert_int_eq(on.n, off.n);
        for (int k = 0; k < on.n; k++)
            ck_assert_msg(on.v[k] == off.v[k], "topology %d: observation %d differs: %lld vs %lld",
                          i, k / 5, (long long)on.v[k], (long long)off.v[k]);
        int dones = 0;
        for (int k = 0; k < on.n; k += 5) dones += on.v[k] == -1;
        ck_assert_int_eq(dones, 3);
        ck_assert_uint_lt(ev_on, ev_off);
        free(on.v);
        free(off.v);
        topo_destroy(ts[i]);
    }
}
END_TEST

/* Per GPU: bytes into its NIC and out of its NIC (tree_nic_traffic, rings_per_rail) */
typedef struct rail_bytes {
    topo *t;
    double up[64], down[64];
} rail_bytes;

static void on_rail_bytes(void *ctx, int link, sim_time_t start, sim_time_t end, double bytes,
                          uint32_t tag)
{
    rail_bytes *rb = ctx;
    (void)start;
    (void)end;
    (void)tag;
    const topo_link *l = &rb->t->links[link];
    const topo_node *a = &rb->t->nodes[l->src], *b = &rb->t->nodes[l->dst];
    if (a->kind == TOPO_GPU && b->kind == TOPO_NIC) rb->up[a->gpu] += bytes;
    if (a->kind == TOPO_NIC && b->kind == TOPO_GPU) rb->down[b->gpu] += bytes;
}

static void tree_nic_traffic(coll_algo algo, double S, rail_bytes *nb)
{
    sim_engine *e = sim_engine_create();
    net *n = net_create(nb->t, e, NULL);
    net_set_link_observer(n, on_rail_bytes, nb);
    coll_config cc = {.reduce_bw = 0};
    coll_engine *c = coll_create(n, e, nb->t, &cc);
    two_done d = {{0, 0}};
    uint32_t k = sim_kind_register(e, "test.tree", on_two, &d);
    int g[16];
    for (int i = 0; i < 16; i++) g[i] = i;
    coll_spec spec = {.op = COLL_BROADCAST, .algo = algo, .group = g, .n = 16, .bytes = S,
                      .root = 5};
    dt_error err;
    dt_error_clear(&err);
    ck_assert_int_eq(coll_start(c, &spec, k, 0, 0, &err), DT_OK);
    sim_run(e, SIM_TIME_MAX);
    ck_assert_int_gt(d.at[0], 0);
    coll_destroy(c);
    net_destroy(n);
    sim_engine_destroy(e);
}

START_TEST(host_aware_trees)
{
    /* 4 boxes of 4 GPUs, broadcast from GPU 5 (box 1). Host-aware tree: chains inside boxes,
     * boxes joined head to head, so exactly (H-1) S bytes leave GPUs for NICs, all from a
     * chain head: the root in its box (GPU 5), local index 0 elsewhere (GPUs 0, 8, 12).
     * dbt: each tree carries S/2; the second tree's heads are on the last rail (local 3),
     * the root's box keeping the root as head. */
    double S = 8.0 * 1048576;
    rail_bytes nb = {.t = gen((topo_gen_params){.family = TOPO_FAMILY_DGX, .nodes = 4,
                                               .gpus_per_node = 4})};
    tree_nic_traffic(COLL_TREE, S, &nb);
    double total = 0;
    for (int i = 0; i < 16; i++) {
        total += nb.up[i];
        int head = i == 5 || (i / 4 != 1 && i % 4 == 0);
        if (!head) ck_assert_msg(nb.up[i] == 0, "GPU %d sent %g B to its NIC", i, nb.up[i]);
    }
    ck_assert_rel(total, 3 * S, 1e-12);
    memset(nb.up, 0, sizeof nb.up);
    tree_nic_traffic(COLL_DBT, S, &nb);
    total = 0;
    double last_rail = 0;
    for (int i = 0; i < 16; i++) {
        total += nb.up[i];
        if (i / 4 != 1 && i % 4 == 3) last_rail += nb.up[i];
    }
    ck_assert_rel(total, 3 * S, 1e-12);
    ck_assert_double_gt(last_rail, 0);
    topo_destroy(nb.t);
}
END_TEST

static double rails_run(rail_bytes *rb, coll_op op, int n, double S, coll_ring_model model)
{
    sim_engine *e = sim_engine_create();
    net *nw = net_create(rb->t, e, NULL);
    net_set_link_observer(nw, on_rail_bytes, rb);
    coll_config cc = {.reduce_bw = 0, .ring_model = model};
    coll_engine *c = coll_create(nw, e, rb->t, &cc);
    two_done d = {{0, 0}};
    uint32_t k = sim_kind_register(e, "test.rails", on_two, &d);
    int g[64];
    for (int i = 0; i < n; i++) g[i] = i;
    coll_spec spec = {.op = op, .algo = COLL_RING, .group = g, .n = n, .bytes = S, .elem_bytes = 2};
    dt_error err;
    dt_error_clear(&err);
    ck_assert_int_eq(coll_start(c, &spec, k, 0, 0, &err), DT_OK);
    sim_run(e, SIM_TIME_MAX);
    ck_assert_int_gt(d.at[0], 0);
    coll_destroy(c);
    net_destroy(nw);
    sim_engine_destroy(e);
    return sim_time_to_s(d.at[0]);
}

START_TEST(rings_per_rail)
{
    /* h = 2, 3, 4 DGX boxes of 8 GPUs (NVLink 450 GB/s, one 50 GB/s NIC per GPU), ring
     * all-reduce, reduce-scatter and all-gather of 64 MiB over all of them, step and fluid
     * models. Invariant: 8 rings, one per rail, each crossing every host boundary once on its
     * own rail, so every GPU pushes exactly one ring edge's bytes into its NIC and takes one
     * out of it: f (n-1)/n S/8 each (f = 2 for all-reduce), all rails equal; together h x 8 x
     * that (to a few elements: segments are cut on 2-byte element boundaries, parts differ by
     * at most one), what one ring would put through h NICs. Time: the closed form of 8 parallel rings
     * (coll_closed_form_rails), a the wrap-around edge's path (host h-1 to host 0, across
     * rails through a spine: the slowest). */
    double S = 64.0 * 1048576;
    for (int h = 2; h <= 4; h++) {
        rail_bytes rb = {.t = gen((topo_gen_params){.family = TOPO_FAMILY_DGX, .nodes = h,
                                                    .gpus_per_node = 8, .nic_bw = 50e9,
                                                    .nvlink_bw = 450e9})};
        int n = 8 * h;
        double a_x, b_x, a_in, b_in, a_out, b_out;
        path(rb.t, 8 * (h - 1) + (8 - h) % 8, 0, &a_x, &b_x);
        path(rb.t, 0, 1, &a_in, &b_in);
        path(rb.t, 0, 8, &a_out, &b_out);
        const coll_op ops[] = {COLL_ALLREDUCE, COLL_REDUCE_SCATTER, COLL_ALLGATHER};
        for (int o = 0; o < 3; o++)
            for (int m = 0; m < 2; m++) {
                memset(rb.up, 0, sizeof rb.up);
                memset(rb.down, 0, sizeof rb.down);
                double t = rails_run(&rb, ops[o], n, S, m ? COLL_RING_FLUID : COLL_RING_STEPS);
                double f = ops[o] == COLL_ALLREDUCE ? 2 : 1;
                double edge = f * (n - 1) / n * S / 8;
                for (int i = 0; i < n; i++) {
                    ck_assert_msg(fabs(rb.up[i] - edge) <= 64,
                                  "h %d op %d model %d: GPU %d put %.0f B into its NIC, expected %.0f",
                                  h, o, m, i, rb.up[i], edge);
                    ck_assert_msg(fabs(rb.down[i] - edge) <= 64,
                                  "h %d op %d model %d: GPU %d took %.0f B from its NIC, expected %.0f",
                                  h, o, m, i, rb.down[i], edge);
                }
                double c = coll_closed_form_rails(ops[o], 8, h, S, a_x, b_in, b_out);
                ck_assert_rel(t, c, TOL);
                /* 8 NICs' worth: bus bandwidth f (n-1)/n S / (t - latency) = 400 GB/s */
                double steps = f * (n - 1);
                ck_assert_rel(f * (n - 1) / n * S / (t - steps * a_x), 400e9, TOL);
            }
        topo_destroy(rb.t);
    }
}
END_TEST

START_TEST(deterministic)
{
    topo *t = gen((topo_gen_params){.family = TOPO_FAMILY_FAT_TREE, .gpus = 32, .radix = 8});
    coll_result a = run(t, COLL_ALLREDUCE, COLL_DBT, NULL, 32, 3e7, 0);
    coll_result b = run(t, COLL_ALLREDUCE, COLL_DBT, NULL, 32, 3e7, 0);
    ck_assert_int_eq(a.time, b.time);
    ck_assert_uint_eq(a.events, b.events);
    ck_assert_uint_eq(a.net.rate_updates, b.net.rate_updates);
    topo_destroy(t);
}
END_TEST

START_TEST(auto_rule)
{
    topo *t = gen((topo_gen_params){.family = TOPO_FAMILY_DGX, .nodes = 2, .gpus_per_node = 4});
    int g[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    coll_spec s = {.op = COLL_ALLREDUCE, .group = g, .n = 8, .bytes = 1e9};
    ck_assert_int_eq(coll_auto_choice(t, &s), COLL_HIER);
    s.n = 4; /* one host */
    ck_assert_int_eq(coll_auto_choice(t, &s), COLL_RING);
    s.bytes = 1024;
    ck_assert_int_eq(coll_auto_choice(t, &s), COLL_HD);
    s.n = 3;
    ck_assert_int_eq(coll_auto_choice(t, &s), COLL_DBT);
    s.op = COLL_ALLTOALL;
    ck_assert_int_eq(coll_auto_choice(t, &s), COLL_DIRECT);
    s.op = COLL_BROADCAST;
    ck_assert_int_eq(coll_auto_choice(t, &s), COLL_TREE);
    topo_destroy(t);
}
END_TEST

START_TEST(input_errors)
{
    topo *t = gen((topo_gen_params){.family = TOPO_FAMILY_DGX, .nodes = 2, .gpus_per_node = 4});
    coll_config cc = {.reduce_bw = 0};
    coll_result r;
    dt_error err;
    int g6[6] = {0, 1, 2, 3, 4, 5};
    coll_spec s = {.op = COLL_REDUCE_SCATTER, .algo = COLL_HD, .group = g6, .n = 6, .bytes = 1e6};
    dt_error_clear(&err);
    ck_assert_int_eq(coll_simulate(t, &s, &cc, NULL, &r, &err), DT_EINPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "power-of-two"));
    s.op = COLL_ALLREDUCE;
    s.algo = COLL_HIER; /* 4 GPUs on host 0, 2 on host 1 */
    dt_error_clear(&err);
    ck_assert_int_eq(coll_simulate(t, &s, &cc, NULL, &r, &err), DT_EINPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "same number"));
    int dup[3] = {0, 1, 1};
    s.group = dup;
    s.n = 3;
    s.algo = COLL_RING;
    dt_error_clear(&err);
    ck_assert_int_eq(coll_simulate(t, &s, &cc, NULL, &r, &err), DT_EINPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "twice"));
    int big[2] = {0, 99};
    s.group = big;
    s.n = 2;
    dt_error_clear(&err);
    ck_assert_int_eq(coll_simulate(t, &s, &cc, NULL, &r, &err), DT_EINPUT);
    s.group = g6;
    s.op = COLL_ALLTOALL;
    dt_error_clear(&err);
    ck_assert_int_eq(coll_simulate(t, &s, &cc, NULL, &r, &err), DT_EINPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "alltoall"));
    coll_op op;
    coll_algo al;
    ck_assert_int_eq(coll_op_parse("all-reduce", &op), DT_OK);
    ck_assert_int_eq(op, COLL_ALLREDUCE);
    ck_assert_int_eq(coll_algo_parse("rabenseifner", &al), DT_OK);
    ck_assert_int_eq(al, COLL_HD);
    ck_assert_int_eq(coll_op_parse("allreduse", &op), DT_EINPUT);
    ck_assert_rel(coll_busbw_factor(COLL_ALLREDUCE, 8), 1.75, 1e-15);
    ck_assert_rel(coll_busbw_factor(COLL_ALLGATHER, 8), 0.875, 1e-15);
    ck_assert_rel(coll_busbw_factor(COLL_BROADCAST, 8), 1.0, 1e-15);
    topo_destroy(t);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("coll");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, ring_closed_forms);
    tcase_add_test(tc, ring_with_reduction_cost);
    tcase_add_test(tc, hd_closed_forms);
    tcase_add_test(tc, direct_alltoall_switch);
    tcase_add_test(tc, pipelined_broadcasts);
    tcase_add_test(tc, ps_and_sendrecv);
    tcase_add_test(tc, two_allreduces_share_a_bottleneck);
    tcase_add_test(tc, oversubscribed_fat_tree_alltoall);
    tcase_add_test(tc, hier_beats_flat_ring_on_dgx);
    tcase_add_test(tc, rings_per_rail);
    tcase_add_test(tc, dbt_and_tree_allreduce);
    tcase_add_test(tc, incremental_equals_global);
    tcase_add_test(tc, batched_equals_per_flow);
    tcase_add_test(tc, host_aware_trees);
    tcase_add_test(tc, deterministic);
    tcase_add_test(tc, auto_rule);
    tcase_add_test(tc, input_errors);
    suite_add_tcase(s, tc);
    return dt_run_suite(s);
}
