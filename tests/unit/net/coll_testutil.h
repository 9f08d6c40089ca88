/* coll_testutil.h - set-up shared by the collective suites (test_coll.c, test_ring_fluid.c,
 * test_coll_analytic.c): the reference topologies their closed forms are written against, the
 * network's own path figures, and one checked flow-mode simulation.
 *
 * Everything is static inline so a suite that does not use a helper gets no unused-function
 * warning. Topologies returned are the caller's (topo_destroy). */
#ifndef DTSIM_COLL_TESTUTIL_H
#define DTSIM_COLL_TESTUTIL_H

#include "dtsim/coll.h"
#include "dtsim/net.h"
#include "dtsim/topo.h"
#include "testutil.h"

static inline topo *gen(topo_gen_params p)
{
    topo *t = NULL;
    dt_error err;
    dt_error_clear(&err);
    int rc = topo_generate(&p, &t, &err);
    ck_assert_msg(rc == DT_OK, "topo_generate: %s", err.msg);
    return t;
}

static inline topo *ring_topo(int n) /* 100 GB/s, 1 us per link */
{
    return gen((topo_gen_params){.family = TOPO_FAMILY_RING, .gpus = n, .bandwidth = 100e9,
                                 .latency = SIM_US});
}

static inline topo *switch_topo(int n) /* 50 GB/s, 1 us per link, 300 ns switch: alpha 2.3 us */
{
    return gen((topo_gen_params){.family = TOPO_FAMILY_SWITCH, .gpus = n, .bandwidth = 50e9,
                                 .latency = SIM_US, .switch_latency = 300 * SIM_NS});
}

/* Path latency and bottleneck between two GPUs, as the network charges them. */
static inline void path(topo *t, int a, int b, double *alpha, double *bw)
{
    sim_engine *e = sim_engine_create();
    net *n = net_create(t, e, NULL);
    sim_time_t lat;
    ck_assert_int_eq(net_path_info(n, a, b, &lat, bw, NULL), DT_OK);
    *alpha = sim_time_to_s(lat);
    net_destroy(n);
    sim_engine_destroy(e);
}

/* coll_simulate in flow mode, which must succeed and conserve the network's books: no link
 * over capacity, every byte sent delivered, every flow started finished. */
static inline coll_result simulate_checked(topo *t, const coll_spec *spec, const coll_config *cc)
{
    net_config nc = {.mode = NET_FLOW};
    coll_result r;
    dt_error err;
    dt_error_clear(&err);
    int rc = coll_simulate(t, spec, cc, &nc, &r, &err);
    ck_assert_msg(rc == DT_OK, "coll_simulate: %s", err.msg);
    ck_assert_double_le(r.net.max_link_utilisation, 1 + 1e-9);
    ck_assert_double_eq_tol(r.net.bytes_sent, r.net.bytes_delivered, 1e-3);
    ck_assert_uint_eq(r.net.flows_started, r.net.flows_finished);
    return r;
}

static inline double secs(coll_result r) { return sim_time_to_s(r.time); }

/* Completion times of two collectives started together in one engine (event id = index). */
typedef struct two_done {
    sim_time_t at[2];
} two_done;

static inline void on_two(void *model, sim_engine *eng, const sim_event *ev)
{
    (void)eng;
    ((two_done *)model)->at[ev->id] = ev->time;
}

/* Probe that re-solves the whole network from scratch every 50 ns of simulated time and counts
 * disagreements with the incremental solver (net_check_fair), until `until` transfers have
 * reported to on_fair_done. Register on_fair as p.kind and schedule its first run at an odd
 * picosecond, between the transfers' own events. */
typedef struct fair_probe {
    net *n;
    uint32_t kind;
    int until;
    int checks, bad, done;
} fair_probe;

static inline void on_fair(void *model, sim_engine *eng, const sim_event *ev)
{
    fair_probe *p = model;
    (void)ev;
    p->checks++;
    p->bad += net_check_fair(p->n, 1e-9);
    if (p->done < p->until) sim_schedule(eng, sim_now(eng) + 50 * SIM_NS, p->kind, 0, 0);
}

static inline void on_fair_done(void *model, sim_engine *eng, const sim_event *ev)
{
    (void)eng;
    (void)ev;
    ((fair_probe *)model)->done++;
}

#endif
