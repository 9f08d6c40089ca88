/* test_ring_fluid.c - the fluid ring model (coll.h COLL_RING_FLUID, net_send_ring).
 * Pins down: uncontended, the fluid ring matches the alpha-beta closed forms within 0.5% for
 * all-reduce, reduce-scatter and all-gather (odd n, sizes not divisible by n, latency-bound
 * sizes) and agrees with the step model within 0.5%, reductions included (one chunk, and
 * several chunks); under contention, two rings sharing a bottleneck each take twice the
 * bandwidth term, and a ring sharing one edge slows as a whole (its edges move in lockstep);
 * a coupled transfer crossing one link twice gets half that link; a ring split over ECMP
 * lanes competes with a send like one flow (weighted max-min, hand-computed); the incremental
 * solver equals a global re-solve throughout fluid and step rings and sends; `auto` switches at
 * COLL_RING_FLUID_MIN ranks (one flow instead of 2(n-1)n) and runs any ring with an edge of
 * several equal-cost routes fluid;
 * two trains of reduce-scatters of two pipeline stages' groups, meeting on the spines, end
 * 1 ns later for a start 1 ns later under `auto`, where the step model's lane rotation moved
 * them by 13 ns or more (trains_continuous_in_start); `exact` runs fluid only where the step
 * model's steps run alone (then within a picosecond per step) and is the step model elsewhere;
 * names parse; runs repeat exactly. Rings per rail (8 rings over 2 DGX boxes, 16 ranks) run
 * fluid under `auto` at any size: 32 flows instead of 3,840, the closed form of 8 rails alone
 * (a picosecond per step from the step model), and under contention a shared link split as
 * hand-computed (two all-reduces on the same GPUs; a send on one ring's NIC), the step model
 * earlier by at most the ring's latency term where other traffic fills its per-step gaps.
 * A ring with one slow edge and another edge of larger latency: steps, fluid and the analytic
 * time all take 2(n-1) x max over edges of (alpha_e + c / B_e) (slow_edge_and_long_edge).
 * Leaves free: how the fluid model differs from the step model under partial contention
 * (documented in docs/collectives.md, not a fixed number). */
#include <math.h>
#include <string.h>

#include "coll_testutil.h"
#include "maxmin.h"

#define TOL 0.005

static coll_result run(topo *t, coll_op op, const int *group, int n, double S, double reduce_bw,
                       double chunk, coll_ring_model m)
{
    int all[256];
    if (!group) {
        for (int i = 0; i < n; i++) all[i] = i;
        group = all;
    }
    coll_spec spec = {.op = op, .algo = COLL_RING, .group = group, .n = n, .bytes = S,
                      .elem_bytes = 2};
    coll_config cc = {.reduce_bw = reduce_bw, .chunk_bytes = chunk, .ring_model = m};
    return simulate_checked(t, &spec, &cc);
}

START_TEST(fluid_closed_forms)
{
    const int ns[] = {8, 7};
    const double sizes[] = {64.0 * 1048576, 1e8 + 7, 4096};
    const coll_op ops[] = {COLL_ALLREDUCE, COLL_REDUCE_SCATTER, COLL_ALLGATHER};
    for (int a = 0; a < 2; a++) {
        int n = ns[a];
        topo *t = ring_topo(n);
        double al, bw;
        path(t, 0, 1, &al, &bw);
        for (int b = 0; b < 3; b++)
            for (int o = 0; o < 3; o++) {
                coll_result r = run(t, ops[o], NULL, n, sizes[b], 0, 0, COLL_RING_FLUID);
                ck_assert_rel(secs(r), coll_closed_form(ops[o], COLL_RING, n, sizes[b], al, bw),
                              TOL);
                ck_assert_uint_eq(r.net.flows_started, NET_ECMP_LANES);
                /* every edge carries 2(n-1)/n S (all-reduce) or (n-1)/n S, up to elements */
                ck_assert_rel(r.net.bytes_delivered, n * coll_busbw_factor(ops[o], n) * sizes[b],
                              1e-3);
            }
        topo_destroy(t);
    }
}
END_TEST

START_TEST(fluid_agrees_with_steps)
{
    /* 96 GPUs on one switch, the GPU's default reduction bandwidth, one chunk: every
     * reduction is on the critical path in both models. */
    int n = 96;
    topo *t = switch_topo(n);
    double al, bw;
    path(t, 0, 1, &al, &bw);
    const coll_op ops[] = {COLL_ALLREDUCE, COLL_REDUCE_SCATTER, COLL_ALLGATHER};
    double S = 1e9 + 13;
    for (int o = 0; o < 3; o++) {
        double st = secs(run(t, ops[o], NULL, n, S, -1, 1e18, COLL_RING_STEPS));
        double f = secs(run(t, ops[o], NULL, n, S, -1, 1e18, COLL_RING_FLUID));
        ck_assert_rel(f, st, TOL);
        ck_assert_double_gt(f, coll_closed_form(ops[o], COLL_RING, n, S, al, bw));
    }
    /* 4 MiB chunks: the step model hides reductions (and part of the latency) behind other
     * chunks' transfers; the fluid model exposes one chunk's reduction and the full latency,
     * i.e. the closed form. */
    for (int o = 0; o < 3; o++) {
        double f = secs(run(t, ops[o], NULL, n, S, -1, 0, COLL_RING_FLUID));
        ck_assert_rel(f, coll_closed_form(ops[o], COLL_RING, n, S, al, bw), TOL);
    }
    /* The reduction term itself: one chunk, R = 200 GB/s, (n-1) S/n / R on top. */
    S = 256.0 * 1048576;
    double R = 200e9;
    double f = secs(run(t, COLL_ALLREDUCE, NULL, n, S, R, 1e18, COLL_RING_FLUID));
    ck_assert_rel(f, coll_closed_form(COLL_ALLREDUCE, COLL_RING, n, S, al, bw) + (n - 1) * S / n / R,
                  TOL);
    topo_destroy(t);
}
END_TEST

/* Start rings a and b at once (fluid), return their completion times in seconds. */
static void two_rings(topo *t, const int *ga, int na, const int *gb, int nb, double S,
                      double out[2])
{
    sim_engine *e = sim_engine_create();
    net *n = net_create(t, e, NULL);
    coll_config cc = {.reduce_bw = 0, .ring_model = COLL_RING_FLUID};
    coll_engine *c = coll_create(n, e, t, &cc);
    two_done d = {{0, 0}};
    uint32_t k = sim_kind_register(e, "test.two", on_two, &d);
    coll_spec a = {.op = COLL_ALLREDUCE, .algo = COLL_RING, .group = ga, .n = na, .bytes = S};
    coll_spec b = {.op = COLL_ALLREDUCE, .algo = COLL_RING, .group = gb, .n = nb, .bytes = S};
    dt_error err;
    dt_error_clear(&err);
    ck_assert_int_eq(coll_start(c, &a, k, 0, 0, &err), DT_OK);
    ck_assert_int_eq(coll_start(c, &b, k, 1, 0, &err), DT_OK);
    sim_run(e, SIM_TIME_MAX);
    ck_assert_int_eq(net_check_fair(n, 1e-9), 0);
    for (int i = 0; i < 2; i++) out[i] = sim_time_to_s(d.at[i]);
    coll_destroy(c);
    net_destroy(n);
    sim_engine_destroy(e);
}

START_TEST(fluid_contention)
{
    double S = 256.0 * 1048576, got[2];
    topo *t = switch_topo(7);
    double al, bw;
    path(t, 0, 1, &al, &bw);
    /* Two 2-rank rings sharing GPU 0's links: each takes twice the bandwidth term. */
    two_rings(t, (int[]){0, 1}, 2, (int[]){0, 2}, 2, S, got);
    for (int i = 0; i < 2; i++)
        ck_assert_rel(got[i] - 2 * al, 2 * (S / bw), TOL);
    /* Two 4-rank rings sharing only GPU 0: its up- and downlink carry one edge of each, so
     * each whole ring runs at half rate (its edges move in lockstep). */
    two_rings(t, (int[]){0, 1, 2, 3}, 4, (int[]){0, 4, 5, 6}, 4, S, got);
    double lat = 2 * 3 * al, bwt = 2.0 * 3 / 4 * S / bw;
    for (int i = 0; i < 2; i++) ck_assert_rel(got[i] - lat, 2 * bwt, TOL);
    topo_destroy(t);
}
END_TEST

typedef struct one_done {
    sim_time_t at;
    int fired;
} one_done;

static void on_one(void *model, sim_engine *eng, const sim_event *ev)
{
    one_done *d = model;
    d->at = ev->time;
    d->fired++;
    (void)eng;
}

START_TEST(coupled_transfer_crossing_a_link_twice)
{
    /* Pairs 0->1 and 0->2 on a switch both leave through GPU 0's uplink: the coupled flow
     * spends its rate there twice, so it runs at B/2; completion = S/(B/2) + latency. */
    topo *t = switch_topo(3);
    double al, bw;
    path(t, 0, 1, &al, &bw);
    sim_engine *e = sim_engine_create();
    net *n = net_create(t, e, NULL);
    one_done d = {0, 0};
    uint32_t k = sim_kind_register(e, "test.one", on_one, &d);
    double S = 1e8;
    net_send_ring(n, 2, (int[]){0, 0}, (int[]){1, 2}, S, -1, 1.0, k, 0, 0);
    sim_run(e, SIM_TIME_MAX);
    ck_assert_int_eq(d.fired, 1);
    ck_assert_rel(sim_time_to_s(d.at), 2 * S / bw + al, 1e-9);
    net_stats st;
    net_get_stats(n, &st);
    ck_assert_uint_eq(st.flows_started, 1);
    ck_assert_double_eq_tol(st.bytes_delivered, 2 * S, 1e-3);
    /* Disjoint pairs: full rate. */
    d.fired = 0;
    sim_time_t t0 = sim_now(e);
    net_send_ring(n, 2, (int[]){0, 1}, (int[]){1, 2}, S, 2, 0.25, k, 0, 0);
    sim_run(e, SIM_TIME_MAX);
    ck_assert_rel(sim_time_to_s(d.at - t0), S / bw + al, 1e-9);
    net_destroy(n);
    sim_engine_destroy(e);
    topo_destroy(t);
}
END_TEST

START_TEST(weighted_maxmin)
{
    /* One link of 100: a flow of weight 1 and four of weight 1/4 (a ring over four lanes)
     * split it 50 / 4 x 12.5; a second link of 10 under one quarter-flow caps it at 10 and
     * the rest is shared again: level (100 - 10) / 1.75, the quarters at a quarter of it. */
    double cap[2] = {100, 10}, w[5] = {1, 0.25, 0.25, 0.25, 0.25}, r[5];
    int fs[6] = {0, 1, 2, 3, 4, 5}, fl[5] = {0, 0, 0, 0, 0};
    mm_solver *m = mm_create();
    mm_solve_weighted(m, 1, cap, 5, fs, fl, w, r, NULL);
    ck_assert_rel(r[0], 50, 1e-12);
    for (int i = 1; i < 5; i++) ck_assert_rel(r[i], 12.5, 1e-12);
    int fs2[6] = {0, 1, 2, 3, 4, 6}, fl2[6] = {0, 0, 0, 0, 0, 1};
    int bn[5];
    mm_solve_weighted(m, 2, cap, 5, fs2, fl2, w, r, bn);
    ck_assert_rel(r[4], 10, 1e-12);
    ck_assert_int_eq(bn[4], 1);
    double level = 90 / 1.75;
    ck_assert_rel(r[0], level, 1e-12);
    for (int i = 1; i < 4; i++) ck_assert_rel(r[i], level / 4, 1e-12);
    mm_destroy(m);
}
END_TEST

START_TEST(ring_competes_as_one_flow)
{
    /* A fluid 4-ring {0,1,2,3} and a send 0 -> 4 of the size of one ring edge's bytes, started
     * together on a switch: GPU 0's uplink carries the ring (its lanes weigh one flow) and the
     * send, so each gets B/2 and both take twice their bandwidth term; the whole ring slows
     * (lockstep) while its other edges have the link to themselves. */
    topo *t = switch_topo(5);
    double al, bw;
    path(t, 0, 1, &al, &bw);
    double S = 64.0 * 1048576, b = 2.0 * 3 / 4 * S;
    sim_engine *e = sim_engine_create();
    net *n = net_create(t, e, NULL);
    coll_config cc = {.reduce_bw = 0, .ring_model = COLL_RING_FLUID};
    coll_engine *c = coll_create(n, e, t, &cc);
    two_done d = {{0, 0}};
    uint32_t k = sim_kind_register(e, "test.two", on_two, &d);
    coll_spec a = {.op = COLL_ALLREDUCE, .algo = COLL_RING, .group = (int[]){0, 1, 2, 3}, .n = 4,
                   .bytes = S};
    dt_error err;
    dt_error_clear(&err);
    ck_assert_int_eq(coll_start(c, &a, k, 0, 0, &err), DT_OK);
    net_send(n, 0, 4, b, k, 1, 0);
    sim_run(e, SIM_TIME_MAX);
    ck_assert_rel(sim_time_to_s(d.at[0]), 2 * 3 * al + 2 * b / bw, TOL);
    ck_assert_rel(sim_time_to_s(d.at[1]), al + 2 * b / bw, TOL);
    coll_destroy(c);
    net_destroy(n);
    sim_engine_destroy(e);
    topo_destroy(t);
}
END_TEST

/* The fair probe (coll_testutil.h) plus a third ring started late. */
typedef struct late_probe {
    fair_probe fp;
    coll_engine *later; /* starts a third ring at 1 us */
    uint32_t k_start, k_done;
} late_probe;

static void on_start_late(void *model, sim_engine *eng, const sim_event *ev)
{
    late_probe *p = model;
    (void)eng;
    (void)ev;
    int g[5] = {15, 11, 7, 2, 0};
    coll_spec s = {.op = COLL_REDUCE_SCATTER, .algo = COLL_RING, .group = g, .n = 5, .bytes = 5e6};
    dt_error err;
    dt_error_clear(&err);
    ck_assert_int_eq(coll_start(p->later, &s, p->k_done, 9, 0, &err), DT_OK);
}

START_TEST(fluid_incremental_equals_global)
{
    /* Weighted coupled flows through the incremental solver (components, skipped re-solves)
     * must agree with a from-scratch global solve at all times: two fluid rings (one started
     * late, sharing GPU 0 with the other), a step-model ring and two sends, on a 2:1
     * oversubscribed fat-tree with ECMP, reductions on. */
    topo *t = gen((topo_gen_params){.family = TOPO_FAMILY_FAT_TREE, .gpus = 16, .radix = 8,
                                    .oversubscription = 2});
    sim_engine *e = sim_engine_create();
    net *n = net_create(t, e, NULL);
    coll_config fl = {.reduce_bw = -1, .ring_model = COLL_RING_FLUID};
    coll_config st = {.reduce_bw = -1, .ring_model = COLL_RING_STEPS};
    coll_engine *cf = coll_create(n, e, t, &fl), *cs = coll_create(n, e, t, &st);
    late_probe p = {.fp = {.n = n, .until = 5}, .later = cf};
    p.fp.kind = sim_kind_register(e, "test.fair", on_fair, &p.fp);
    p.k_done = sim_kind_register(e, "test.fair_done", on_fair_done, &p.fp);
    p.k_start = sim_kind_register(e, "test.start_late", on_start_late, &p);
    int ga[6] = {0, 3, 5, 8, 10, 13}, gb[4] = {1, 2, 6, 9};
    coll_spec a = {.op = COLL_ALLREDUCE, .algo = COLL_RING, .group = ga, .n = 6, .bytes = 8e6};
    coll_spec b = {.op = COLL_ALLREDUCE, .algo = COLL_RING, .group = gb, .n = 4, .bytes = 6e6};
    dt_error err;
    dt_error_clear(&err);
    ck_assert_int_eq(coll_start(cf, &a, p.k_done, 0, 0, &err), DT_OK);
    ck_assert_int_eq(coll_start(cs, &b, p.k_done, 1, 0, &err), DT_OK);
    net_send(n, 4, 12, 5e6, p.k_done, 2, 0);
    net_send(n, 7, 14, 3e6, p.k_done, 3, 0);
    sim_schedule(e, SIM_US, p.k_start, 0, 0);
    /* Probe at 7 ps + k x 50 ns: a probe at the very picosecond of a departure would run before
     * that departure's recompute (net_check_fair wants a quiet instant), and departures land on
     * round times + 1 ps (rounding up), so the phase 1 ps of test_coll meets one here. */
    sim_schedule(e, 7, p.fp.kind, 0, 0);
    sim_run(e, SIM_TIME_MAX);
    ck_assert_int_eq(p.fp.done, 5);
    ck_assert_int_gt(p.fp.checks, 1000);
    ck_assert_int_eq(p.fp.bad, 0);
    net_stats ns;
    net_get_stats(n, &ns);
    ck_assert_uint_gt(ns.solves, 3); /* the rings did share links */
    coll_destroy(cf);
    coll_destroy(cs);
    net_destroy(n);
    sim_engine_destroy(e);
    topo_destroy(t);
}
END_TEST

START_TEST(auto_threshold_and_names)
{
    int n = COLL_RING_FLUID_MIN;
    topo *t = switch_topo(n);
    double S = 64.0 * 1048576;
    coll_result below = run(t, COLL_ALLREDUCE, NULL, n - 1, S, 0, 1e18, COLL_RING_AUTO);
    ck_assert_uint_eq(below.net.flows_started, (uint64_t)2 * (n - 2) * (n - 1));
    coll_result at = run(t, COLL_ALLREDUCE, NULL, n, S, 0, 1e18, COLL_RING_AUTO);
    ck_assert_uint_eq(at.net.flows_started, NET_ECMP_LANES);
    coll_result again = run(t, COLL_ALLREDUCE, NULL, n, S, 0, 1e18, COLL_RING_AUTO);
    ck_assert_int_eq(at.time, again.time);
    ck_assert_uint_eq(at.events, again.events);
    /* Not a ring op: broadcast on a ring stays a chain, whatever the model. */
    coll_result bc = run(t, COLL_BROADCAST, NULL, n, S, 0, 0, COLL_RING_FLUID);
    ck_assert_uint_gt(bc.net.flows_started, 1);
    coll_ring_model m;
    ck_assert_int_eq(coll_ring_model_parse("fluid", &m), DT_OK);
    ck_assert_int_eq(m, COLL_RING_FLUID);
    ck_assert_int_eq(coll_ring_model_parse("steps", &m), DT_OK);
    ck_assert_int_eq(m, COLL_RING_STEPS);
    ck_assert_int_eq(coll_ring_model_parse("fluidd", &m), DT_EINPUT);
    ck_assert_str_eq(coll_ring_model_name(COLL_RING_AUTO), "auto");
    topo_destroy(t);
}
END_TEST


/* EXACT picks the fluid model only where the step model's answer is alpha + S/B per step: every
 * edge alone on its links on every lane, one transfer per step. There the two agree to one
 * picosecond per step; elsewhere EXACT is STEPS, event for event. */
START_TEST(exact_where_steps_agree)
{
    int n = COLL_RING_FLUID_MIN;
    topo *t = switch_topo(n);
    double S = 64.0 * 1048576; /* 1 MiB per rank: one 4 MiB chunk per step */
    const coll_op ops[] = {COLL_ALLREDUCE, COLL_REDUCE_SCATTER, COLL_ALLGATHER};
    for (int o = 0; o < 3; o++) {
        coll_result ex = run(t, ops[o], NULL, n, S, -1, 0, COLL_RING_EXACT);
        coll_result st = run(t, ops[o], NULL, n, S, -1, 0, COLL_RING_STEPS);
        ck_assert_int_eq(ex.ring_model, COLL_RING_FLUID);
        ck_assert_int_eq(st.ring_model, COLL_RING_STEPS);
        ck_assert_uint_eq(ex.net.flows_started, NET_ECMP_LANES);
        int steps = ops[o] == COLL_ALLREDUCE ? 2 * (n - 1) : n - 1;
        ck_assert_msg(llabs((long long)(ex.time - st.time)) <= steps, "%s: %lld vs %lld ps",
                      coll_op_name(ops[o]), (long long)ex.time, (long long)st.time);
    }
    /* several chunks per step: the step model pipelines reductions, fluid does not: steps */
    coll_result ch = run(t, COLL_ALLREDUCE, NULL, n, 16 * S, -1, 0, COLL_RING_EXACT);
    coll_result chs = run(t, COLL_ALLREDUCE, NULL, n, 16 * S, -1, 0, COLL_RING_STEPS);
    ck_assert_int_eq(ch.ring_model, COLL_RING_STEPS);
    ck_assert_int_eq(ch.time, chs.time);
    ck_assert_uint_eq(ch.events, chs.events);
    /* ...but an all-gather has no reductions to pipeline: still fluid */
    coll_result ag = run(t, COLL_ALLGATHER, NULL, n, 16 * S, -1, 0, COLL_RING_EXACT);
    ck_assert_int_eq(ag.ring_model, COLL_RING_FLUID);
    /* below the threshold: steps */
    coll_result sm = run(t, COLL_ALLREDUCE, NULL, n - 1, S, -1, 0, COLL_RING_EXACT);
    ck_assert_int_eq(sm.ring_model, COLL_RING_STEPS);
    topo_destroy(t);
    /* a ring whose edges share links (a 2D torus routes ring-order neighbours across rows
     * through shared links): steps, identical to STEPS */
    topo_gen_params p = {.family = TOPO_FAMILY_TORUS, .n_dims = 2, .dims = {8, 8}};
    dt_error e;
    dt_error_clear(&e);
    ck_assert_int_eq(topo_generate(&p, &t, &e), DT_OK);
    coll_result tx = run(t, COLL_ALLREDUCE, NULL, n, S, -1, 0, COLL_RING_EXACT);
    coll_result ts = run(t, COLL_ALLREDUCE, NULL, n, S, -1, 0, COLL_RING_STEPS);
    ck_assert_int_eq(tx.ring_model, COLL_RING_STEPS);
    ck_assert_int_eq(tx.time, ts.time);
    ck_assert_str_eq(coll_ring_model_name(COLL_RING_EXACT), "exact");
    topo_destroy(t);
}
END_TEST

/* Rings per rail (docs/collectives.md) under `auto`: a ring all-reduce over 2 DGX boxes of 8 GPUs
 * (n = 16, below COLL_RING_FLUID_MIN), started at t = 0, plus `other`: nothing (0), the same
 * all-reduce over the same GPUs (1), or a send 0 -> 8 of `send` bytes (2, GPU 0's NIC to GPU 8's:
 * rail 0). Completion times in seconds (the second 0 without other traffic); *flows counted. */
static void rails_with(topo *t, coll_ring_model m, int other, double S, double send, double out[2],
                       uint64_t *flows)
{
    sim_engine *e = sim_engine_create();
    net *n = net_create(t, e, NULL);
    coll_config cc = {.reduce_bw = 0, .chunk_bytes = 1e18, .ring_model = m};
    coll_engine *c = coll_create(n, e, t, &cc);
    two_done d = {{0, 0}};
    uint32_t k = sim_kind_register(e, "test.rails", on_two, &d);
    int g[16];
    for (int i = 0; i < 16; i++) g[i] = i;
    coll_spec a = {.op = COLL_ALLREDUCE, .algo = COLL_RING, .group = g, .n = 16, .bytes = S,
                   .elem_bytes = 2};
    dt_error err;
    dt_error_clear(&err);
    ck_assert_int_eq(coll_start(c, &a, k, 0, 0, &err), DT_OK);
    if (other == 1) ck_assert_int_eq(coll_start(c, &a, k, 1, 0, &err), DT_OK);
    if (other == 2) net_send(n, 0, 8, send, k, 1, 0);
    sim_run(e, SIM_TIME_MAX);
    ck_assert_int_eq(net_check_fair(n, 1e-9), 0);
    net_stats st;
    net_get_stats(n, &st);
    ck_assert_uint_eq(st.flows_started, st.flows_finished);
    *flows = st.flows_started;
    for (int i = 0; i < 2; i++) out[i] = sim_time_to_s(d.at[i]);
    coll_destroy(c);
    net_destroy(n);
    sim_engine_destroy(e);
}

START_TEST(auto_rings_per_rail_fluid)
{
    /* 2 DGX boxes of 8 GPUs (NVLink 450 GB/s, one 50 GB/s NIC per GPU): n = 16 ranks, below
     * COLL_RING_FLUID_MIN, run as 8 rings, one per rail. `auto` runs them as the fluid ring
     * (4 lane flows per ring: 32 flows) where the step model takes 8 x 2(n-1)n = 3,840; alone
     * both give the closed form of 8 parallel rings, 8 x the per-rail bandwidth
     * (coll_closed_form_rails: 2(n-1) a + 2(n-1)/n S / (8 x 50 GB/s), a the wrap-around edge's
     * path, the slowest), and agree with each other to a picosecond per step. One ring
     * (coll_config.rings = 1) below 64 ranks stays the step model where its every edge has
     * one route. */
    topo *t = gen((topo_gen_params){.family = TOPO_FAMILY_DGX, .nodes = 2, .gpus_per_node = 8,
                                    .nic_bw = 50e9, .nvlink_bw = 450e9});
    double a_x, b_x, a_in, b_in, a_out, b_out;
    path(t, 8 + 6, 0, &a_x, &b_x); /* ring 0's wrap-around: host 1 local (0-2) mod 8 -> GPU 0 */
    path(t, 0, 1, &a_in, &b_in);
    path(t, 0, 8, &a_out, &b_out);
    ck_assert_double_eq(b_out, 50e9);
    int n = 16, steps = 2 * (n - 1);
    double S = 256.0 * 1048576, cf = coll_closed_form_rails(COLL_ALLREDUCE, 8, 2, S, a_x, b_in, b_out);
    ck_assert_rel(cf - steps * a_x, 2.0 * (n - 1) / n * S / (8 * 50e9), 1e-12);
    double fa[2], fs[2];
    uint64_t flows_a, flows_s;
    rails_with(t, COLL_RING_AUTO, 0, S, 0, fa, &flows_a);
    rails_with(t, COLL_RING_STEPS, 0, S, 0, fs, &flows_s);
    ck_assert_uint_eq(flows_a, 8 * NET_ECMP_LANES);
    ck_assert_uint_eq(flows_s, (uint64_t)8 * 2 * (n - 1) * n);
    ck_assert_rel(fa[0], cf, 1e-6);
    ck_assert_msg(fabs(fa[0] - fs[0]) <= steps * 1e-12, "auto %.12f s, steps %.12f s", fa[0], fs[0]);
    /* the same through coll_simulate: what ran, and one ring stays steps */
    int g[16];
    for (int i = 0; i < 16; i++) g[i] = i;
    coll_spec spec = {.op = COLL_ALLREDUCE, .algo = COLL_RING, .group = g, .n = n, .bytes = S,
                      .elem_bytes = 2};
    coll_config cc = {.reduce_bw = 0, .chunk_bytes = 1e18, .ring_model = COLL_RING_AUTO};
    coll_result r = simulate_checked(t, &spec, &cc);
    ck_assert_int_eq(r.ring_model, COLL_RING_FLUID);
    /* one ring over the 16 GPUs: its two edges between the boxes join GPU 7 (rail 7) to GPU
     * 8 (rail 0) and back, through the spines (4 lanes, 4 routes), so it runs fluid too; a
     * ring of one box's 8 GPUs (one route per edge, over the NVSwitch) stays the step model */
    cc.rings = 1;
    r = simulate_checked(t, &spec, &cc);
    ck_assert_int_eq(r.ring_model, COLL_RING_FLUID);
    ck_assert_uint_eq(r.net.flows_started, NET_ECMP_LANES);
    spec.n = 8;
    r = simulate_checked(t, &spec, &cc);
    ck_assert_int_eq(r.ring_model, COLL_RING_STEPS);
    ck_assert_uint_eq(r.net.flows_started, (uint64_t)2 * (8 - 1) * 8);
    topo_destroy(t);
}
END_TEST

START_TEST(rings_per_rail_contention)
{
    /* The fluid rings per rail still split what they share (same set-up as
     * auto_rings_per_rail_fluid: 2 DGX boxes, 256 MiB, a = the wrap-around edge's path):
     * (1) two such all-reduces over the same 16 GPUs at once share every link: each takes the
     *     latency plus twice the bandwidth term, 2(n-1) a + 2 x 2(n-1)/n S / (8 x 50 GB/s); the
     *     step model gives the same within 0.5 %.
     * (2) one all-reduce and a send 0 -> 8 of one ring edge's bytes b = 2(n-1)/n S/8: the send
     *     shares GPU 0's NIC (and GPU 8's) with ring 1's host crossing, the only ring that
     *     crosses there, and gets half of it (ring 1's 4 lane flows weigh one flow). Fluid:
     *     ring 1 runs at 25 GB/s throughout (its edges move in lockstep) and paces the
     *     collective; each of its steps lasts as long as the edge held to that rate, the
     *     crossing at GPU 0's NIC (a_out + c / 25 GB/s: its other edges, the wrap-around one
     *     of latency a_x included, are done sooner), so it ends at steps x a_out + 2b / 50 GB/s;
     *     the send ends at a_out + 2 b / 50 GB/s.
     *     The step model differs as docs/collectives.md says (reason 2): the send fills ring 1's
     *     per-step gaps at 50 GB/s, so the NIC carries 2b at full rate without a pause and the
     *     ring ends at a_out + 2b / 50 GB/s, its latency hidden under the send; the fluid ring
     *     charges its latency after its bytes, later by at most 2(n-1) a (3 % here: 2.6 us a
     *     step against 84 us of transfer), and the send ends earlier by at most as much. */
    topo *t = gen((topo_gen_params){.family = TOPO_FAMILY_DGX, .nodes = 2, .gpus_per_node = 8,
                                    .nic_bw = 50e9, .nvlink_bw = 450e9});
    double a_x, b_x, a_in, b_in, a_out, b_out;
    path(t, 8 + 6, 0, &a_x, &b_x);
    path(t, 0, 1, &a_in, &b_in);
    path(t, 0, 8, &a_out, &b_out);
    int n = 16, steps = 2 * (n - 1);
    double S = 256.0 * 1048576, bwt = 2.0 * (n - 1) / n * S / (8 * b_out), b = 2.0 * (n - 1) / n * S / 8;
    double fl[2], st[2];
    uint64_t flows;
    /* (1) */
    rails_with(t, COLL_RING_AUTO, 1, S, 0, fl, &flows);
    ck_assert_uint_eq(flows, 2 * 8 * NET_ECMP_LANES);
    rails_with(t, COLL_RING_STEPS, 1, S, 0, st, &flows);
    ck_assert_uint_eq(flows, (uint64_t)2 * 8 * 2 * (n - 1) * n);
    for (int i = 0; i < 2; i++) {
        ck_assert_rel(fl[i], steps * a_x + 2 * bwt, 1e-6);
        ck_assert_rel(st[i], steps * a_x + 2 * bwt, TOL);
    }
    /* (2) */
    rails_with(t, COLL_RING_AUTO, 2, S, b, fl, &flows);
    ck_assert_rel(fl[0], steps * a_out + bwt + b / b_out, 1e-6);
    ck_assert_rel(fl[1], a_out + 2 * b / b_out, 1e-6);
    rails_with(t, COLL_RING_STEPS, 2, S, b, st, &flows);
    ck_assert_rel(st[0], a_out + 2 * b / b_out, 1e-6);
    ck_assert_double_le(fl[0] - st[0], steps * a_x);
    ck_assert_double_ge(fl[0] - st[0], 0);
    ck_assert_double_le(fl[1] - st[1], steps * a_x);
    ck_assert_double_ge(fl[1] - st[1], 0);
    topo_destroy(t);
}
END_TEST

/* The link from GPU a to GPU b of a generated ring topology (the direct one). */
static int ring_link(const topo *t, int a, int b)
{
    for (int l = 0; l < t->n_links; l++)
        if (t->links[l].src == t->gpu_node[a] && t->links[l].dst == t->gpu_node[b]) return l;
    ck_abort_msg("no link %d -> %d", a, b);
    return -1;
}

START_TEST(slow_edge_and_long_edge)
{
    /* A ring of 8 GPUs (100 GB/s, 1 us per link) where edge 2 -> 3 runs at 50 GB/s and edge
     * 5 -> 6 has 3 us of latency: different edges. One chunk, no reductions, every edge alone
     * on its link. A step of the step model lasts max over edges of (alpha_e + c / B_e), c =
     * S/n: rank e's step s starts once its neighbours' steps s-1 are done, so no edge runs
     * ahead by more than a step and the slowest edge's steps add up; the all-reduce takes
     * 2(n-1) x max(1 us + c / 50 GB/s, 3 us + c / 100 GB/s). The fluid ring and the analytic
     * time must give the same (each step's gap charged per step, net_send_ring_steps), where
     * charging every step the largest latency, 3 us, gave 2(n-1) x (3 us + c / 50 GB/s).
     * Two sizes: c = 1 MiB, where the slow edge paces every step (the old charge was 28 us, 9 %
     * too long), and c = 64 KiB, where the long edge does (3.655 us a step against 3 + 1.31). */
    int n = 8, steps = 2 * (n - 1);
    topo *t = ring_topo(n);
    t->links[ring_link(t, 2, 3)].bandwidth = 50e9;
    t->links[ring_link(t, 5, 6)].latency = 3 * SIM_US;
    double al_s, bw_s, al_l, bw_l;
    path(t, 2, 3, &al_s, &bw_s);
    path(t, 5, 6, &al_l, &bw_l);
    ck_assert_double_eq(bw_s, 50e9);
    ck_assert_double_eq(bw_l, 100e9);
    ck_assert_rel(al_s, 1e-6, 1e-12);
    ck_assert_rel(al_l, 3e-6, 1e-12);
    const double sizes[2] = {8.0 * 1048576, 8.0 * 65536};
    for (int i = 0; i < 2; i++) {
        double S = sizes[i], c = S / n;
        double step = fmax(al_s + c / bw_s, al_l + c / bw_l);
        double cf = steps * step;
        coll_result st = run(t, COLL_ALLREDUCE, NULL, n, S, 0, 1e18, COLL_RING_STEPS);
        coll_result fl = run(t, COLL_ALLREDUCE, NULL, n, S, 0, 1e18, COLL_RING_FLUID);
        ck_assert_int_eq(st.ring_model, COLL_RING_STEPS);
        ck_assert_int_eq(fl.ring_model, COLL_RING_FLUID);
        ck_assert_rel(secs(st), cf, 1e-9);
        ck_assert_rel(secs(fl), cf, 1e-9);
        ck_assert_msg(llabs((long long)(fl.time - st.time)) <= steps, "fluid %lld ps, steps %lld ps",
                      (long long)fl.time, (long long)st.time);
        /* what the largest-latency charge gave */
        double old = steps * (al_l + c / bw_s);
        ck_assert_rel(old - secs(fl), steps * (al_l + c / bw_s - step), 1e-6);
        ck_assert_double_gt(old - secs(fl), (i == 0 ? 0.08 : 0.15) * secs(fl));
        /* the analytic time charges the same */
        int g[8] = {0, 1, 2, 3, 4, 5, 6, 7};
        coll_spec spec = {.op = COLL_ALLREDUCE, .algo = COLL_RING, .group = g, .n = n, .bytes = S,
                          .elem_bytes = 2};
        coll_config cc = {.reduce_bw = 0, .chunk_bytes = 1e18, .ring_model = COLL_RING_FLUID};
        sim_engine *e = sim_engine_create();
        net *nn = net_create(t, e, NULL);
        coll_analytic *A = coll_analytic_create(nn, t, &cc);
        sim_time_t at;
        dt_error err;
        dt_error_clear(&err);
        ck_assert_int_eq(coll_analytic_time(A, &spec, &at, NULL, &err), DT_OK);
        ck_assert_rel(sim_time_to_s(at), cf, 1e-9);
        coll_analytic_destroy(A);
        net_destroy(nn);
        sim_engine_destroy(e);
    }
    topo_destroy(t);
}
END_TEST

/* Trains of collectives (continuity): per train i, K reduce-scatters of S bytes on group g[i],
 * each started when the one before it ends, the second train's first at d. */
typedef struct train {
    coll_engine *ce;
    const int *g[2];
    int n, left[2];
    double S;
    sim_time_t end[2];
    uint32_t k_done;
} train;

static void train_next(train *T, int i)
{
    coll_spec s = {.op = COLL_REDUCE_SCATTER, .algo = COLL_RING, .group = T->g[i], .n = T->n,
                   .bytes = T->S, .elem_bytes = 2};
    dt_error err;
    dt_error_clear(&err);
    ck_assert_int_eq(coll_start(T->ce, &s, T->k_done, (uint32_t)i, 0, &err), DT_OK);
}

static void on_train_done(void *model, sim_engine *eng, const sim_event *ev)
{
    (void)eng;
    train *T = model;
    T->end[ev->id] = ev->time;
    if (--T->left[ev->id] > 0) train_next(T, (int)ev->id);
}

static void on_train_go(void *model, sim_engine *eng, const sim_event *ev)
{
    (void)eng;
    train_next(model, (int)ev->id);
}

static void trains(topo *t, coll_ring_model m, const int *g0, const int *g1, int n, int K, double S,
                   sim_time_t d, sim_time_t end[2])
{
    sim_engine *e = sim_engine_create();
    net_config nc = {.mode = NET_FLOW};
    net *nw = net_create(t, e, &nc);
    coll_config cc = {.reduce_bw = -1, .chunk_bytes = 1e18, .ring_model = m};
    train T = {.ce = coll_create(nw, e, t, &cc), .g = {g0, g1}, .n = n, .left = {K, K}, .S = S};
    T.k_done = sim_kind_register(e, "train.done", on_train_done, &T);
    uint32_t go = sim_kind_register(e, "train.go", on_train_go, &T);
    sim_schedule(e, 0, go, 0, 0);
    sim_schedule(e, d, go, 1, 0);
    sim_run(e, SIM_TIME_MAX);
    end[0] = T.end[0];
    end[1] = T.end[1];
    coll_destroy(T.ce);
    net_destroy(nw);
    sim_engine_destroy(e);
}

START_TEST(trains_continuous_in_start)
{
    /* M-70B's data-parallel reduce-scatters in miniature (its phase sensitivity,
     * docs/collectives.md "Ring models"): 12 DGX boxes of 4 GPUs, radix 8 (rail leaves of 4
     * boxes, 4 spines), the rail-0 groups of two pipeline stages (boxes 0-5 and 6-11, whose
     * rings meet on the spines), each a train of 16 reduce-scatters of 64 MB back to back, the
     * second train starting d later. Under `auto` (fluid: every edge over its 4 ECMP lanes at
     * once) a 1 ns later start of the second train moves its end by 1 ns and the first's by
     * nothing, for every d: each lane carries a quarter of a NIC's rate, so two rings crossing a
     * spine link do not fill it, and the first train ends at 16 x its reduce-scatter alone
     * (1.127428 ms each), the second 16 of them after its start. The step model, whose every
     * step takes each pair's next lane, moves the first train's end by 13-20 ns for that 1 ns
     * (its steps meet the other ring's on a spine link or not as their phase slides) and
     * between 18.04 and 22.31 ms across d. */
    topo *t = gen((topo_gen_params){.family = TOPO_FAMILY_DGX, .nodes = 12, .gpus_per_node = 4,
                                    .radix = 8});
    int gs[12];
    for (int b = 0; b < 12; b++) gs[b] = 4 * b;
    double S = 64e6;
    int K = 16;
    sim_time_t one[2];
    trains(t, COLL_RING_AUTO, gs, gs + 6, 6, 1, S, SIM_TIME_MAX / 2, one); /* one alone */
    sim_time_t lo = SIM_TIME_MAX, hi = 0, gain = 0;
    for (int j = 0; j <= 40; j++) {
        sim_time_t d = (sim_time_t)j * 37000000; /* 0 to 1.48 ms */
        sim_time_t a[2], b[2], sa[2], sb[2];
        trains(t, COLL_RING_AUTO, gs, gs + 6, 6, K, S, d, a);
        trains(t, COLL_RING_AUTO, gs, gs + 6, 6, K, S, d + 1000, b);
        ck_assert_int_eq(a[0], K * one[0]);
        ck_assert_int_eq(b[0], a[0]);
        ck_assert_int_eq(a[1], d + K * one[0]);
        ck_assert_int_eq(b[1] - a[1], 1000);
        trains(t, COLL_RING_STEPS, gs, gs + 6, 6, K, S, d, sa);
        trains(t, COLL_RING_STEPS, gs, gs + 6, 6, K, S, d + 1000, sb);
        if (sa[0] < lo) lo = sa[0];
        if (sa[0] > hi) hi = sa[0];
        sim_time_t g = sb[0] > sa[0] ? sb[0] - sa[0] : sa[0] - sb[0];
        if (g > gain) gain = g;
    }
    ck_assert_int_ge(gain, 13000);           /* steps: >= 13 ns for the 1 ns */
    ck_assert_int_ge(hi - lo, 4000000000);   /* steps: >= 4 ms across d */
    topo_destroy(t);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ring_fluid");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, fluid_closed_forms);
    tcase_add_test(tc, fluid_agrees_with_steps);
    tcase_add_test(tc, fluid_contention);
    tcase_add_test(tc, coupled_transfer_crossing_a_link_twice);
    tcase_add_test(tc, weighted_maxmin);
    tcase_add_test(tc, ring_competes_as_one_flow);
    tcase_add_test(tc, fluid_incremental_equals_global);
    tcase_add_test(tc, auto_threshold_and_names);
    tcase_add_test(tc, exact_where_steps_agree);
    tcase_add_test(tc, auto_rings_per_rail_fluid);
    tcase_add_test(tc, rings_per_rail_contention);
    tcase_add_test(tc, slow_edge_and_long_edge);
    tcase_add_test(tc, trains_continuous_in_start);
    suite_add_tcase(s, tc);
    return dt_run_suite(s);
}
