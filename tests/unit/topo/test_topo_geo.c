/* test_topo_geo.c - the geo generator: regions joined by wide-area links.
 * Pins down: counts (R regions x G GPUs in boxes of g: GPUs, hosts, switches, NICs, directed
 * links 2 (R G (1 + 2) + R nodes g [g > 1] + R(R-1)/2)); a route inside a box uses its NVSwitch
 * (2 links), across boxes of a region the LAN (4 links: PCIe, LAN, LAN, PCIe), across regions
 * exactly one wide-area link of the pair's bandwidth and latency (unless a third region is
 * faster in latency: routes take the least latency); the bisection between GPU
 * halves is the WAN links crossing it; defaults (100 Mb/s, 50 ms, LAN 100 Gb/s, 8 per box);
 * matrices set each pair's link (symmetric, one row per region) and bad ones get located
 * errors; geo keys on another generator are refused. Leaves free: placement (workload). */
#include <string.h>

#include "dtsim/topo.h"
#include "testutil.h"
#include "topo_internal.h"

static int load(const char *text, topo **t, dt_error *e)
{
    cJSON *j;
    dt_error_clear(e);
    ck_assert_int_eq(js_parse_text(text, strlen(text), "t.json", &j, e), DT_OK);
    js_ctx c = {"t.json", e};
    int rc = topo_from_json(&c, j, "topology", ".", t);
    cJSON_Delete(j);
    return rc;
}

static topo *must(const char *text)
{
    topo *t = NULL;
    dt_error e;
    ck_assert_msg(load(text, &t, &e) == DT_OK, "%s: %s", e.path, e.msg);
    return t;
}

/* bottleneck bandwidth, latency sum and hop count of the route a -> b */
static void route(topo *t, int a, int b, double *bw, double *lat_s, int *hops)
{
    const int *l;
    int n;
    ck_assert_int_eq(topo_route(t, a, b, 0, &l, &n), DT_OK);
    *bw = 1e300;
    *lat_s = 0;
    for (int i = 0; i < n; i++) {
        if (t->links[l[i]].bandwidth < *bw) *bw = t->links[l[i]].bandwidth;
        *lat_s += sim_time_to_s(t->links[l[i]].latency);
    }
    *hops = n;
}

START_TEST(counts_and_routes)
{
    topo *t = must("{\"generator\": \"geo\", \"regions\": 4, \"gpus_per_region\": 16,"
                   " \"gpus_per_node\": 8, \"wan\": \"1 Gb/s\", \"wan_latency\": \"20 ms\"}");
    int R = 4, G = 16, g = 8, boxes = R * G / g;
    ck_assert_int_eq(t->n_gpus, R * G);
    ck_assert_int_eq(t->n_hosts, boxes);
    ck_assert_int_eq(t->n_links, 2 * (R * G * 2 + boxes * g + R * (R - 1) / 2));
    double bw, lat;
    int hops;
    route(t, 0, 1, &bw, &lat, &hops); /* same box: NVSwitch */
    ck_assert_int_eq(hops, 2);
    ck_assert_rel(bw, 450e9, 1e-12);
    route(t, 0, 8, &bw, &lat, &hops); /* same region, other box: the LAN */
    ck_assert_int_eq(hops, 4);
    ck_assert_rel(bw, 12.5e9, 1e-12);
    ck_assert_rel(lat, 2 * 500e-9, 1e-9);
    route(t, 0, 3 * G + 5, &bw, &lat, &hops); /* region 0 -> region 3: one WAN link */
    ck_assert_int_eq(hops, 5);
    ck_assert_rel(bw, 1e9 / 8, 1e-12);
    ck_assert_rel(lat, 20e-3 + 2 * 500e-9, 1e-9);
    /* halves of 2 regions each: 4 pair links cross, 125 MB/s each */
    ck_assert_rel(topo_bisection_maxflow(t), 4 * 1e9 / 8, 1e-9);
    topo_destroy(t);
    /* defaults: 2 regions of 8 GPUs, one box each, 100 Mb/s and 50 ms between them */
    t = must("{\"generator\": \"geo\"}");
    ck_assert_int_eq(t->n_gpus, 16);
    route(t, 0, 15, &bw, &lat, &hops);
    ck_assert_rel(bw, 100e6 / 8, 1e-12);
    ck_assert_rel(lat, 50e-3 + 2 * 500e-9, 1e-9);
    topo_destroy(t);
}
END_TEST

START_TEST(matrices)
{
    topo *t = must("{\"generator\": \"geo\", \"regions\": 3, \"gpus_per_region\": 1,"
                   " \"wan\": [[null, \"1 Gb/s\", \"100 Mb/s\"], [\"1 Gb/s\", null, \"10 Mb/s\"],"
                   " [\"100 Mb/s\", \"10 Mb/s\", null]],"
                   " \"wan_latency\": [[0, \"10 ms\", \"100 ms\"], [\"10 ms\", 0, \"200 ms\"],"
                   " [\"100 ms\", \"200 ms\", 0]]}");
    double bw, lat;
    int hops;
    /* routes take the least latency (topo_route.c): 1 -> 2 goes through region 0 (10 + 100
     * ms) rather than over its own 200 ms link, at the 100 Mb/s of its slower leg */
    route(t, 1, 2, &bw, &lat, &hops);
    ck_assert_int_eq(hops, 6);
    ck_assert_rel(bw, 100e6 / 8, 1e-12);
    ck_assert_rel(lat, 110e-3 + 2 * 500e-9, 1e-9);
    route(t, 2, 0, &bw, &lat, &hops);
    ck_assert_rel(bw, 100e6 / 8, 1e-12);
    ck_assert_rel(lat, 100e-3 + 2 * 500e-9, 1e-9);
    topo_destroy(t);
}
END_TEST

static void bad(const char *text, const char *path, const char *needle)
{
    topo *t = NULL;
    dt_error e;
    ck_assert_int_eq(load(text, &t, &e), DT_EINPUT);
    ck_assert_str_eq(e.path, path);
    ck_assert_msg(strstr(e.msg, needle), "%s", e.msg);
}

START_TEST(bad_input)
{
    bad("{\"generator\": \"geo\", \"regions\": 2, \"wan\": [[0, \"1 Gb/s\"]]}", "topology.wan",
        "expected 2 rows");
    bad("{\"generator\": \"geo\", \"regions\": 2, \"wan\": [[0, \"1 Gb/s\"], [\"2 Gb/s\", 0]]}",
        "topology.wan[1][0]", "symmetric");
    bad("{\"generator\": \"geo\", \"regions\": 2, \"wan\": [[0, \"fast\"], [\"2 Gb/s\", 0]]}",
        "topology.wan[0][1]", "fast");
    bad("{\"generator\": \"geo\", \"regions\": 2, \"wan_latency\": [[0, \"2 s\"], [\"2 s\", 0]]}",
        "topology.wan_latency[0][1]", "below 1 s");
    bad("{\"generator\": \"geo\", \"gpus_per_region\": 12, \"gpus_per_node\": 8}",
        "topology.gpus_per_node", "whole number");
    bad("{\"generator\": \"dgx\", \"nodes\": 2, \"wan\": \"1 Gb/s\"}", "topology.wan", "geo");
}
END_TEST

Suite *suite(void)
{
    Suite *s = suite_create("topo_geo");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, counts_and_routes);
    tcase_add_test(tc, matrices);
    tcase_add_test(tc, bad_input);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return dt_run_suite(suite()); }
