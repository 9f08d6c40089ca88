/* test_net.c - the flow network model (models/net.c) on generated topologies.
 * Pins down: a flow alone takes path latency + bytes/bottleneck to the picosecond (rounded up,
 * switch forwarding latency included); flows sharing a link split it evenly and the split is
 * re-divided when one ends (hand-computed staggered case); only the flows in the changed
 * component are re-rated (rate_updates counts them); analytic mode ignores contention; zero
 * bytes pay latency; src == dst is immediate; and, on random traffic over an oversubscribed
 * fat-tree, that no link is ever over capacity, every byte sent is delivered and every
 * completion fires exactly once; the link observer reports each link's bandwidth phase.
 * Leaves free: the order of simultaneous completions, which equal-cost path a flow takes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dtsim/net.h"
#include "dtsim/sim.h"
#include "dtsim/topo.h"
#include "testutil.h"

#define MAXC 4096

typedef struct rec {
    sim_time_t at[MAXC];
    int count[MAXC];
} rec;

static void on_done(void *model, sim_engine *eng, const sim_event *ev)
{
    rec *r = model;
    (void)eng;
    ck_assert_uint_lt(ev->id, MAXC);
    r->at[ev->id] = ev->time;
    r->count[ev->id]++;
}

static topo *gen_switch(int gpus, double bw, sim_time_t lat, sim_time_t swlat)
{
    topo_gen_params p = {.family = TOPO_FAMILY_SWITCH, .gpus = gpus, .bandwidth = bw,
                         .latency = lat, .switch_latency = swlat};
    topo *t = NULL;
    dt_error err;
    dt_error_clear(&err);
    ck_assert_int_eq(topo_generate(&p, &t, &err), DT_OK);
    return t;
}

typedef struct fixture {
    topo *t;
    sim_engine *eng;
    net *n;
    rec *r;
    uint32_t k;
} fixture;

static void fx_init_cfg(fixture *f, topo *t, net_config cfg)
{
    f->t = t;
    f->eng = sim_engine_create();
    f->n = net_create(t, f->eng, &cfg);
    f->r = calloc(1, sizeof *f->r);
    f->k = sim_kind_register(f->eng, "test.done", on_done, f->r);
}

static void fx_init(fixture *f, topo *t, net_mode mode)
{
    fx_init_cfg(f, t, (net_config){.mode = mode});
}

static void fx_free(fixture *f)
{
    net_destroy(f->n);
    sim_engine_destroy(f->eng);
    topo_destroy(f->t);
    free(f->r);
}

START_TEST(single_flow_exact)
{
    /* 2 x 1 us links + 200 ns switch = 2.2 us; 12,345,678 B at 100 GB/s = 123,456,780 ps. */
    fixture f;
    fx_init(&f, gen_switch(4, 100e9, SIM_US, 200 * SIM_NS), NET_FLOW);
    sim_time_t lat;
    double bw;
    int hops;
    ck_assert_int_eq(net_path_info(f.n, 0, 3, &lat, &bw, &hops), DT_OK);
    ck_assert_int_eq(lat, 2200000);
    ck_assert_int_eq(hops, 2);
    net_send(f.n, 0, 3, 12345678.0, f.k, 0, 0);
    /* 1,000,001 B at 30 GB/s = 33,333,366.67 ps, rounded up; latency 2 x 1 ps + 1 ps. */
    topo *t2 = gen_switch(2, 30e9, 1, 1);
    fixture g;
    fx_init(&g, t2, NET_FLOW);
    net_send(g.n, 0, 1, 1000001.0, g.k, 1, 0);
    sim_run(f.eng, SIM_TIME_MAX);
    sim_run(g.eng, SIM_TIME_MAX);
    ck_assert_int_eq(f.r->at[0], 2200000 + 123456780);
    ck_assert_int_eq(g.r->at[1], 33333367 + 3);
    net_stats st;
    net_get_stats(f.n, &st);
    ck_assert_double_eq(st.max_link_utilisation, 1.0); /* alone, it fills its bottleneck */
    ck_assert_uint_eq(st.flows_finished, 1);
    fx_free(&f);
    fx_free(&g);
}
END_TEST

START_TEST(zero_bytes_and_self)
{
    fixture f;
    fx_init(&f, gen_switch(4, 100e9, SIM_US, 200 * SIM_NS), NET_FLOW);
    net_send(f.n, 1, 2, 0, f.k, 0, 0);
    net_send(f.n, 3, 3, 1e9, f.k, 1, 0);
    sim_run(f.eng, SIM_TIME_MAX);
    ck_assert_int_eq(f.r->at[0], 2200000);
    ck_assert_int_eq(f.r->at[1], 0);
    net_stats st;
    net_get_stats(f.n, &st);
    ck_assert_double_eq(st.bytes_sent, st.bytes_delivered);
    fx_free(&f);
}
END_TEST

/* Fires net_send at a chosen time: (src, dst) packed in data, bytes fixed. */
typedef struct later {
    net *n;
    uint32_t k;
    double bytes;
} later;

static void on_later(void *model, sim_engine *eng, const sim_event *ev)
{
    later *l = model;
    (void)eng;
    net_send(l->n, (int)(ev->data >> 16), (int)(ev->data & 0xffff), l->bytes, l->k, ev->id, 0);
}

START_TEST(sharing_and_staggered_start)
{
    /* Latency 3 ps (the generator's smallest non-default), B = 1e10 B/s, S = 1e8 B.
     * Flows 0->1 and 0->2 at t = 0 share 0's uplink: both end at 2S/B = 20 ms.
     * Then flow A 0->1 at t = 30 ms and flow B 0->3 at t = 34 ms: A alone sends 4e7 B by
     * 34 ms, then both run at B/2 until A's remaining 6e7 B are done at 34 + 12 = 46 ms; B has
     * sent 6e7 B by then, and finishes its last 4e7 B alone at 50 ms. */
    fixture f;
    fx_init(&f, gen_switch(4, 1e10, 1, 1), NET_FLOW);
    net_send(f.n, 0, 1, 1e8, f.k, 0, 0);
    net_send(f.n, 0, 2, 1e8, f.k, 1, 0);
    later l = {f.n, f.k, 1e8};
    uint32_t kl = sim_kind_register(f.eng, "test.later", on_later, &l);
    sim_schedule(f.eng, 30 * SIM_MS, kl, 2, (0u << 16) | 1u);
    sim_schedule(f.eng, 34 * SIM_MS, kl, 3, (0u << 16) | 3u);
    sim_run(f.eng, SIM_TIME_MAX);
    ck_assert_int_eq(f.r->at[0], 20 * SIM_MS + 3);
    ck_assert_int_eq(f.r->at[1], 20 * SIM_MS + 3);
    ck_assert(llabs(f.r->at[2] - 46 * SIM_MS - 3) <= 2);
    ck_assert(llabs(f.r->at[3] - 50 * SIM_MS - 3) <= 2);
    net_stats st;
    net_get_stats(f.n, &st);
    ck_assert_double_le(st.max_link_utilisation, 1 + 1e-9);
    ck_assert_double_ge(st.max_link_utilisation, 1 - 1e-9);
    fx_free(&f);
}
END_TEST

typedef struct probe {
    net *n;
    uint64_t updates;
} probe;

static void on_probe(void *model, sim_engine *eng, const sim_event *ev)
{
    probe *p = model;
    (void)eng;
    (void)ev;
    net_stats st;
    net_get_stats(p->n, &st);
    p->updates = st.rate_updates;
}

START_TEST(only_component_rerated)
{
    /* Three disjoint flows start alone (3 rate settings). At 1 ms a fourth shares GPU 0's
     * uplink with the first: exactly those two are re-rated (5), the other two untouched. */
    fixture f;
    fx_init(&f, gen_switch(8, 1e10, 1, 1), NET_FLOW);
    net_send(f.n, 0, 1, 1e8, f.k, 0, 0);
    net_send(f.n, 2, 3, 1e8, f.k, 1, 0);
    net_send(f.n, 4, 5, 1e8, f.k, 2, 0);
    later l = {f.n, f.k, 1e8};
    uint32_t kl = sim_kind_register(f.eng, "test.later", on_later, &l);
    probe pr = {f.n, 0};
    uint32_t kp = sim_kind_register(f.eng, "test.probe", on_probe, &pr);
    sim_schedule(f.eng, SIM_MS, kl, 3, (0u << 16) | 6u);
    sim_schedule(f.eng, SIM_MS + 1, kp, 0, 0);
    sim_run(f.eng, SIM_TIME_MAX);
    ck_assert_uint_eq(pr.updates, 5);
    ck_assert_int_eq(f.r->at[1], 10 * SIM_MS + 3); /* untouched by the others */
    ck_assert_int_eq(f.r->at[2], 10 * SIM_MS + 3);
    /* 0->1: 1e7 B alone by 1 ms, then 9e7 B at B/2: 19 ms; 0->6 gets the link back after. */
    ck_assert(llabs(f.r->at[0] - 19 * SIM_MS - 3) <= 2);
    ck_assert(llabs(f.r->at[3] - 20 * SIM_MS - 3) <= 2);
    fx_free(&f);
}
END_TEST

typedef struct obs_log {
    int calls;
    int links[8];
    sim_time_t start, end;
    double bytes;
    uint32_t tag;
} obs_log;

static void on_link(void *ctx, int link, sim_time_t start, sim_time_t end, double bytes,
                    uint32_t tag)
{
    obs_log *o = ctx;
    if (o->calls < 8) o->links[o->calls] = link;
    o->calls++;
    o->start = start;
    o->end = end;
    o->bytes = bytes;
    o->tag = tag;
}

START_TEST(link_observer)
{
    /* One 1e8 B flow 0 -> 2 starting at 0 on a 1e10 B/s switch: both its links report the
     * bandwidth phase [0, 10 ms] and the bytes; the latency tail is not link time. */
    fixture f;
    fx_init(&f, gen_switch(4, 1e10, SIM_US, 1), NET_FLOW);
    obs_log o = {0};
    net_set_link_observer(f.n, on_link, &o);
    net_set_tag(f.n, 7);
    net_send(f.n, 0, 2, 1e8, f.k, 0, 0);
    net_set_tag(f.n, 9); /* flows keep the tag they started with */
    net_send(f.n, 1, 1, 1e8, f.k, 1, 0);
    sim_run(f.eng, SIM_TIME_MAX);
    ck_assert_int_eq(o.calls, 2);
    ck_assert_int_ne(o.links[0], o.links[1]);
    ck_assert_int_eq(o.start, 0);
    ck_assert_int_eq(o.end, 10 * SIM_MS);
    ck_assert_double_eq(o.bytes, 1e8);
    ck_assert_int_eq(o.tag, 7);
    ck_assert_int_eq(f.r->at[0], 10 * SIM_MS + 2 * SIM_US + 1);
    /* busy time: the bandwidth phase on both links of the path, nothing elsewhere */
    ck_assert_int_eq(net_link_busy(f.n, o.links[0]), 10 * SIM_MS);
    ck_assert_int_eq(net_link_busy(f.n, o.links[1]), 10 * SIM_MS);
    sim_time_t total = 0;
    for (int l = 0; l < f.t->n_links; l++) total += net_link_busy(f.n, l);
    ck_assert_int_eq(total, 20 * SIM_MS);
    fx_free(&f);
}
END_TEST

START_TEST(analytic_ignores_contention)
{
    fixture f;
    fx_init(&f, gen_switch(4, 1e10, SIM_US, 1), NET_ANALYTIC);
    net_send(f.n, 0, 1, 1e8, f.k, 0, 0);
    net_send(f.n, 0, 2, 1e8, f.k, 1, 0);
    sim_run(f.eng, SIM_TIME_MAX);
    ck_assert_int_eq(f.r->at[0], 2 * SIM_US + 1 + 10 * SIM_MS);
    ck_assert_int_eq(f.r->at[1], 2 * SIM_US + 1 + 10 * SIM_MS);
    fx_free(&f);
}
END_TEST

START_TEST(random_traffic_invariants)
{
    /* 64 GPUs on a 2:1 oversubscribed fat-tree; 2,000 flows of random size between random
     * pairs at random times. Capacity is asserted inside net.c in debug builds; here through
     * the recorded maximum utilisation in every build. */
    topo_gen_params p = {.family = TOPO_FAMILY_FAT_TREE, .gpus = 64, .radix = 12,
                         .oversubscription = 2, .bandwidth = 25e9, .latency = SIM_US};
    topo *t = NULL;
    dt_error err;
    dt_error_clear(&err);
    ck_assert_int_eq(topo_generate(&p, &t, &err), DT_OK);
    fixture f;
    fx_init(&f, t, NET_FLOW);
    sim_rng *g = sim_rng_create(11, "test_net");
    later l = {f.n, f.k, 0};
    double total = 0;
    /* Random sizes for the 1,000 sends at t = 0; 3 MB each for the 1,000 later ones. */
    for (int i = 0; i < 1000; i++) {
        int a = (int)sim_rng_uniform_int(g, 64), b = (int)sim_rng_uniform_int(g, 64);
        double s = floor(1e3 + 5e7 * sim_rng_uniform(g));
        total += s;
        net_send(f.n, a, b, s, f.k, (uint32_t)i, 0);
    }
    l.bytes = 3e6;
    uint32_t kl = sim_kind_register(f.eng, "test.later", on_later, &l);
    for (int i = 1000; i < 2000; i++) {
        int a = (int)sim_rng_uniform_int(g, 64), b = (int)sim_rng_uniform_int(g, 64);
        sim_time_t at = (sim_time_t)(sim_rng_uniform(g) * 20 * SIM_MS);
        sim_schedule(f.eng, at, kl, (uint32_t)i, ((uint64_t)a << 16) | (uint64_t)b);
        total += 3e6;
    }
    sim_run(f.eng, SIM_TIME_MAX);
    net_stats st;
    net_get_stats(f.n, &st);
    for (int i = 0; i < 2000; i++) ck_assert_int_eq(f.r->count[i], 1);
    ck_assert_uint_eq(st.flows_started, 2000);
    ck_assert_uint_eq(st.flows_finished, 2000);
    ck_assert_double_eq_tol(st.bytes_sent, total, 1e-3);
    ck_assert_double_eq_tol(st.bytes_delivered, total, 1e-3);
    ck_assert_double_le(st.max_link_utilisation, 1 + 1e-9);
    ck_assert_double_ge(st.max_link_utilisation, 1 - 1e-9); /* something saturated */
    sim_rng_destroy(g);
    fx_free(&f);
}
END_TEST

/* The directed link named a -> b of t, -1 if there is none. */
static int link_named(const topo *t, const char *a, const char *b)
{
    for (int l = 0; l < t->n_links; l++)
        if (!strcmp(t->nodes[t->links[l].src].name, a) && !strcmp(t->nodes[t->links[l].dst].name, b))
            return l;
    return -1;
}

/* Busy time of every link into or out of a spine of the dgx generator. */
static sim_time_t spine_busy(const fixture *f)
{
    sim_time_t s = 0;
    for (int l = 0; l < f->t->n_links; l++)
        if (!strncmp(f->t->nodes[f->t->links[l].src].name, "spine", 5) ||
            !strncmp(f->t->nodes[f->t->links[l].dst].name, "spine", 5))
            s += net_link_busy(f->n, l);
    return s;
}

/* 4 DGX boxes of 4 GPUs (GPU 4i + k is box i's k-th, on rail k; 50 GB/s NICs): GPU 0 sends
 * S to GPU 5 (box 1, rail 1) while GPU 1 sends S to GPU 13 (box 3, rail 1) with
 * net_send_spread. Fills at[0], at[1] and returns the fixture for the link checks. */
static void pxn_case(fixture *f, net_config cfg)
{
    topo_gen_params p = {.family = TOPO_FAMILY_DGX, .nodes = 4, .gpus_per_node = 4};
    topo *t = NULL;
    dt_error err;
    dt_error_clear(&err);
    ck_assert_int_eq(topo_generate(&p, &t, &err), DT_OK);
    fx_init_cfg(f, t, cfg);
    net_send_spread(f->n, 0, 5, 50e6, f->k, 0, 0);
    net_send_spread(f->n, 1, 13, 50e6, f->k, 1, 0);
    sim_run(f->eng, SIM_TIME_MAX);
}

START_TEST(pxn_relay_on_the_receivers_rail)
{
    /* NCCL's PXN (NCCL_P2P_PXN_LEVEL 2, its default): GPU 0's transfer to rail 1 goes over
     * NVLink to GPU 1 and out of GPU 1's NIC, so it shares that NIC with GPU 1's own transfer
     * (each at B/2: both done after 2S/B) and no spine carries a byte; its latency is the two
     * routes' together. Without PXN it crosses the spines from GPU 0's own NIC and nothing is
     * shared: S/B each. */
    const double S = 50e6, B = 50e9;
    const sim_time_t tS = (sim_time_t)(S / B * 1e12);
    fixture f;
    pxn_case(&f, (net_config){.mode = NET_FLOW, .pxn = true});
    sim_time_t l01, l15, l113, l05;
    ck_assert_int_eq(net_path_info(f.n, 0, 1, &l01, NULL, NULL), DT_OK);
    ck_assert_int_eq(net_path_info(f.n, 1, 5, &l15, NULL, NULL), DT_OK);
    ck_assert_int_eq(net_path_info(f.n, 1, 13, &l113, NULL, NULL), DT_OK);
    ck_assert_int_eq(net_path_info(f.n, 0, 5, &l05, NULL, NULL), DT_OK);
    ck_assert_int_gt(l01, 0);
    ck_assert(llabs(f.r->at[0] - (2 * tS + l01 + l15)) <= 2);
    ck_assert(llabs(f.r->at[1] - (2 * tS + l113)) <= 2);
    int own = link_named(f.t, "node0.gpu0", "node0.nic0");
    int relay = link_named(f.t, "node0.gpu1", "node0.nic1");
    int nvl = link_named(f.t, "node0.gpu0", "node0.nvswitch");
    ck_assert(own >= 0 && relay >= 0 && nvl >= 0);
    ck_assert_int_eq(net_link_busy(f.n, own), 0);
    ck_assert(llabs(net_link_busy(f.n, relay) - 2 * tS) <= 2);
    ck_assert(llabs(net_link_busy(f.n, nvl) - 2 * tS) <= 2);
    ck_assert_int_eq(spine_busy(&f), 0);
    net_stats st;
    net_get_stats(f.n, &st);
    ck_assert_double_eq_tol(st.bytes_delivered, 2 * S, 1e-3);
    ck_assert_uint_eq(st.flows_finished, 2);
    fx_free(&f);

    pxn_case(&f, (net_config){.mode = NET_FLOW, .pxn = false});
    ck_assert(llabs(f.r->at[0] - (tS + l05)) <= 4);
    ck_assert(llabs(f.r->at[1] - (tS + l113)) <= 2);
    own = link_named(f.t, "node0.gpu0", "node0.nic0");
    ck_assert(llabs(net_link_busy(f.n, own) - tS) <= 4);
    ck_assert_int_gt(spine_busy(&f), 0);
    fx_free(&f);

    /* Analytic mode routes the same way, without contention: S/B and both latencies. */
    pxn_case(&f, (net_config){.mode = NET_ANALYTIC, .pxn = true});
    ck_assert(llabs(f.r->at[0] - (tS + l01 + l15)) <= 1);
    fx_free(&f);
}
END_TEST

START_TEST(pxn_not_on_the_own_rail)
{
    /* A sender already on the receiver's rail (GPU 0 -> GPU 4, box 1, rail 0) and a receiver
     * in the sender's box (GPU 0 -> GPU 2) are sent as without PXN: its own NIC, NVLink. */
    topo_gen_params p = {.family = TOPO_FAMILY_DGX, .nodes = 4, .gpus_per_node = 4};
    topo *t = NULL;
    dt_error err;
    dt_error_clear(&err);
    ck_assert_int_eq(topo_generate(&p, &t, &err), DT_OK);
    fixture f;
    fx_init_cfg(&f, t, (net_config){.mode = NET_FLOW, .pxn = true});
    sim_time_t l04, l02;
    ck_assert_int_eq(net_path_info(f.n, 0, 4, &l04, NULL, NULL), DT_OK);
    ck_assert_int_eq(net_path_info(f.n, 0, 2, &l02, NULL, NULL), DT_OK);
    net_send_spread(f.n, 0, 4, 50e6, f.k, 0, 0);
    sim_run(f.eng, SIM_TIME_MAX);
    ck_assert(llabs(f.r->at[0] - (sim_time_t)(50e6 / 50e9 * 1e12) - l04) <= 1);
    ck_assert(llabs(net_link_busy(f.n, link_named(t, "node0.gpu0", "node0.nic0")) -
                    (sim_time_t)(50e6 / 50e9 * 1e12)) <= 1);
    net_send_spread(f.n, 0, 2, 450e6, f.k, 1, 0);
    sim_time_t t0 = sim_now(f.eng);
    sim_run(f.eng, SIM_TIME_MAX);
    ck_assert(llabs(f.r->at[1] - t0 - SIM_MS - l02) <= 1); /* 450 MB at 450 GB/s */
    ck_assert_int_eq(spine_busy(&f), 0);
    fx_free(&f);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("net");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, single_flow_exact);
    tcase_add_test(tc, zero_bytes_and_self);
    tcase_add_test(tc, sharing_and_staggered_start);
    tcase_add_test(tc, only_component_rerated);
    tcase_add_test(tc, link_observer);
    tcase_add_test(tc, analytic_ignores_contention);
    tcase_add_test(tc, random_traffic_invariants);
    tcase_add_test(tc, pxn_relay_on_the_receivers_rail);
    tcase_add_test(tc, pxn_not_on_the_own_rail);
    suite_add_tcase(s, tc);
    return dt_run_suite(s);
}
