/* test_federated.c - `dtsim federated`: federated rounds over the flow network.
 * Pins down, on a star (generator switch: GPU links B = 50 GB/s, 500 ns each way, switch
 * 200 ns, so a = 1.2 us a transfer; H100 reduction R = 3.35 TB/s / 3), synthetic local steps of
 * 6 ms (2 layers x (1 + 2) ms) and updates of U = 400 MB:
 * - flat parameter server, n = 8 clients, S = 1, 2, 4, 8 cloud servers (GPUs of their own): a
 *   round is T + 2a + 2 n (U/S) / B + n (U/S) / R (each server's link carries n shards in, then
 *   n out; it reduces n shards), the PS formula with the servers apart from the clients;
 * - hierarchical, 2 edges of 3 clients, 1 cloud, 2 edge rounds of 2 local steps: every
 *   transfer of a fan-in or fan-out shares the server's link (3 U / B, not 3 (U / B + a)), the
 *   hand sum below; the first round's milestones; bytes per tier;
 * - all-reduce among 6 clients (ring): T + 2(n-1) a + 2(n-1)/n U/B + (n-1)/n U/R;
 * - rounds repeat exactly (symmetric clients), --rounds overrides; a slower client's extra
 *   training hides under the others' uploads while the server's link is the bottleneck, and
 *   shows once it is longer (both hand-computed below); GPUs by node name or index;
 * - bad sections get located errors; `dtsim run` refuses a federated scenario.
 * Leaves free: output formatting. */
#include <stdio.h>
#include <string.h>

#include "dtsim/federated.h"
#include "dtsim/run.h"
#include "testutil.h"

static const double U = 4e8, B = 50e9, A = 1.2e-6, R = 3.35e12 / 3, STEP = 6e-3;

static int fl_text(const char *text, const fl_options *opt, fl_result *r, dt_error *e)
{
    cJSON *j;
    dt_error_clear(e);
    ck_assert_int_eq(js_parse_text(text, strlen(text), "f.json", &j, e), DT_OK);
    int rc = fl_run(j, "f.json", ".", opt, r, e);
    cJSON_Delete(j);
    return rc;
}

static fl_result must(const char *text, const fl_options *opt)
{
    fl_result r;
    dt_error e;
    int rc = fl_text(text, opt, &r, &e);
    ck_assert_msg(rc == DT_OK, "%s: %s", e.path, e.msg);
    return r;
}

#define SCEN(gpus, extra, fed)                                                                   \
    "{\"topology\": {\"generator\": \"switch\", \"gpus\": " #gpus "}, " extra "\"model\": "      \
    "{\"kind\": \"synthetic\", \"layers\": 2, \"forward_time\": \"1 ms\", \"backward_time\": "    \
    "\"2 ms\", \"params\": 0}, \"federated\": {\"update_bytes\": 4e8, " fed "}}"

START_TEST(star_against_ps_formula)
{
    const double n = 8;
    static const int servers[] = {1, 2, 4, 8};
    for (int i = 0; i < 4; i++) {
        int S = servers[i];
        char cloud[64] = "", buf[1024];
        for (int k = 0; k < S; k++)
            snprintf(cloud + strlen(cloud), sizeof cloud - strlen(cloud), "%s%d", k ? ", " : "", 8 + k);
        char fed[256];
        snprintf(fed, sizeof fed, "\"cloud\": [%s], \"clients\": [0, 1, 2, 3, 4, 5, 6, 7], "
                 "\"local_steps\": 5, \"rounds\": 3", cloud);
        char ng[32];
        snprintf(ng, sizeof ng, "%d", 8 + S);
        snprintf(buf, sizeof buf, "{\"topology\": {\"generator\": \"switch\", \"gpus\": %s}, "
                 "\"model\": {\"kind\": \"synthetic\", \"layers\": 2, \"forward_time\": \"1 ms\", "
                 "\"backward_time\": \"2 ms\", \"params\": 0}, \"federated\": {\"update_bytes\": "
                 "4e8, %s}}", ng, fed);
        fl_result r = must(buf, NULL);
        double want = 5 * STEP + 2 * A + 2 * n * (U / S) / B + n * (U / S) / R;
        ck_assert_int_eq(r.aggregation, FL_PS);
        ck_assert_int_eq(r.cloud_servers, S);
        ck_assert_rel(r.round_s, want, 1e-6);
        ck_assert_rel(r.total_s, 3 * want, 1e-6);
        ck_assert_rel(r.compute_s, 5 * STEP, 1e-12);
        ck_assert_rel(r.first.at_cloud, 5 * STEP + A + n * (U / S) / B, 1e-6);
        ck_assert_rel(r.first.cloud_aggregated, 5 * STEP + A + n * (U / S) / B + n * (U / S) / R, 1e-6);
        ck_assert_double_eq(r.first.at_edges, -1);
        /* every client sends U up per round, the servers n U down, whatever S */
        ck_assert_rel(r.bytes_clients_up, n * U, 1e-12);
        ck_assert_rel(r.bytes_cloud_down, n * U, 1e-12);
        ck_assert_rel(r.samples_per_round, 8 * 5, 1e-12);
    }
}
END_TEST

/* Edge round: train 2 x 6 ms; 3 uploads share the edge's link (3U/B + a); reduce 3U/R; 3
 * downloads share it again (3U/B + a). Second edge round likewise up to the reduction, then 2
 * edges -> cloud (2U/B + a), reduce 2U/R, cloud -> 2 edges (2U/B + a), edge -> 3 clients
 * (3U/B + a). */
START_TEST(hierarchical_hand_sum)
{
    fl_result r = must(SCEN(9, "", "\"cloud\": 0, \"edges\": [{\"server\": 1, \"clients\": [3, 4, 5]},"
                                   " {\"server\": 2, \"clients\": [6, 7, 8]}], \"local_steps\": 2,"
                                   " \"edge_rounds\": 2, \"rounds\": 2"), NULL);
    double T = 2 * STEP, up = 3 * U / B + A, red = 3 * U / R, wan = 2 * U / B + A;
    double trained = T + up + red + up + T;
    double at_edges = trained + up, agg = at_edges + red, at_cloud = agg + wan;
    double cloud = at_cloud + 2 * U / R, back = cloud + wan, done = back + up;
    ck_assert_int_eq(r.aggregation, FL_HIERARCHICAL);
    ck_assert_int_eq(r.edges, 2);
    ck_assert_rel(r.first.trained, trained, 1e-6);
    ck_assert_rel(r.first.at_edges, at_edges, 1e-6);
    ck_assert_rel(r.first.edges_aggregated, agg, 1e-6);
    ck_assert_rel(r.first.at_cloud, at_cloud, 1e-6);
    ck_assert_rel(r.first.cloud_aggregated, cloud, 1e-6);
    ck_assert_rel(r.first.at_edges_back, back, 1e-6);
    ck_assert_rel(r.first.at_clients, done, 1e-6);
    ck_assert_rel(r.round_s, done, 1e-6);
    ck_assert_rel(r.total_s, 2 * done, 1e-6);
    ck_assert_rel(r.compute_s, 2 * T, 1e-12);
    ck_assert_rel(r.bytes_clients_up, 2 * 6 * U, 1e-12);  /* two edge rounds */
    ck_assert_rel(r.bytes_edges_up, 2 * U, 1e-12);        /* once per cloud round */
    ck_assert_rel(r.bytes_cloud_down, 2 * U, 1e-12);
    ck_assert_rel(r.bytes_edges_down, 2 * 6 * U, 1e-12);
    /* --rounds overrides the section's */
    fl_options o = {.rounds = 5};
    fl_result r5 = must(SCEN(9, "", "\"cloud\": 0, \"edges\": [{\"server\": 1, \"clients\": [3, 4, 5]},"
                                    " {\"server\": 2, \"clients\": [6, 7, 8]}], \"local_steps\": 2,"
                                    " \"edge_rounds\": 2, \"rounds\": 2"), &o);
    ck_assert_int_eq(r5.rounds, 5);
    ck_assert_rel(r5.total_s, 5 * done, 1e-6);
}
END_TEST

START_TEST(allreduce_ring)
{
    const double n = 6;
    fl_result r = must(SCEN(9, "\"options\": {\"dp_algorithm\": \"ring\"}, ",
                            "\"aggregation\": \"allreduce\", \"edges\": [{\"server\": 1, \"clients\":"
                            " [3, 4, 5]}, {\"server\": 2, \"clients\": [6, 7, 8]}], \"local_steps\": 2,"
                            " \"edge_rounds\": 2"), NULL);
    /* the same training per round as the hierarchical case: 2 x 2 local steps */
    double want = 4 * STEP + 2 * (n - 1) * A + 2 * (n - 1) / n * U / B + (n - 1) / n * U / R;
    ck_assert_int_eq(r.clients, 6);
    ck_assert_int_eq(r.cloud_servers, 0);
    ck_assert_rel(r.round_s, want, 1e-6);
    ck_assert_rel(r.bytes_clients_up, 2 * (n - 1) * U, 1e-9);
}
END_TEST

/* Client 0 twice as slow (12 ms a step): it finishes training at 60 ms, while the server's
 * link, saturated since 30 ms, still drains the other 7 updates (7U/B = 56 ms): its upload
 * joins the queue and the round is the same as without it, 30 ms + 2a + 2 8U/B + 8U/R. Five
 * times slower (150 ms) it is not hidden: the others are done at 86 ms + a, its own upload
 * runs alone (U/B + a), then the server reduces and sends back as before. */
START_TEST(straggler_client)
{
    const double n = 8, base = 5 * STEP + 2 * A + 2 * n * U / B + n * U / R;
    fl_result r = must(SCEN(9, "\"stragglers\": [{\"gpu\": 0, \"slowdown\": 2}], ",
                            "\"cloud\": 8, \"local_steps\": 5"), NULL);
    ck_assert_int_eq(r.clients, 8); /* every GPU but the cloud */
    ck_assert_rel(r.local_step_max_s, 2 * STEP, 1e-12);
    ck_assert_rel(r.local_step_min_s, STEP, 1e-12);
    ck_assert_rel(r.compute_s, 10 * STEP, 1e-12);
    ck_assert_rel(r.round_s, base, 1e-6);
    fl_result r5 = must(SCEN(9, "\"stragglers\": [{\"gpu\": 0, \"slowdown\": 5}], ",
                             "\"cloud\": 8, \"local_steps\": 5"), NULL);
    ck_assert_rel(r5.round_s, 25 * STEP + U / B + A + n * U / R + n * U / B + A, 1e-6);
}
END_TEST

static void bad(const char *text, const char *path, const char *needle)
{
    fl_result r;
    dt_error e;
    ck_assert_int_eq(fl_text(text, NULL, &r, &e), DT_EINPUT);
    ck_assert_msg(!strcmp(e.path, path), "path %s, want %s (%s)", e.path, path, e.msg);
    ck_assert_msg(strstr(e.msg, needle), "%s lacks %s", e.msg, needle);
}

START_TEST(bad_input)
{
    bad(SCEN(4, "", "\"cloud\": 9"), "federated.cloud", "GPU index 0..3");
    bad(SCEN(4, "", "\"cloud\": \"nowhere\""), "federated.cloud", "no node named \"nowhere\"");
    bad(SCEN(4, "", "\"cloud\": \"switch0\""), "federated.cloud", "not a GPU");
    /* names work like indices */
    fl_result byname = must(SCEN(4, "", "\"cloud\": \"gpu3\", \"clients\": [\"gpu0\", 1]"), NULL);
    ck_assert_int_eq(byname.clients, 2);
    bad(SCEN(4, "", "\"cloud\": [0, 0]"), "federated.cloud[1]", "listed twice");
    bad(SCEN(4, "", "\"clients\": [1, 2]"), "federated.cloud", "required");
    bad(SCEN(4, "", "\"aggregation\": \"hierarchical\", \"cloud\": 0"), "federated.aggregation",
        "needs edges");
    bad(SCEN(4, "", "\"aggregation\": \"gossip\", \"cloud\": 0"), "federated.aggregation", "found");
    bad(SCEN(4, "", "\"cloud\": 0, \"edges\": []"), "federated.edges", "at least one");
    bad(SCEN(4, "", "\"cloud\": 0, \"edges\": [{\"server\": 1}]"), "federated.edges[0].clients",
        "required");
    bad(SCEN(4, "", "\"cloud\": 0, \"edges\": [{\"server\": 1, \"clients\": [2, 3]}, {\"server\": 1,"
                    " \"clients\": [0]}]"), "federated.edges[1].server", "listed twice");
    bad(SCEN(4, "", "\"cloud\": 0, \"edges\": [{\"server\": 1, \"clients\": [2, 3]}, {\"server\": 0,"
                    " \"clients\": [3]}]"), "federated.edges[1].clients[0]", "listed twice");
    bad(SCEN(4, "", "\"cloud\": 0, \"local_steps\": 0"), "federated.local_steps", "0");
    bad("{\"topology\": {\"generator\": \"switch\", \"gpus\": 4}, \"model\": {\"kind\": "
        "\"synthetic\", \"layers\": 2, \"forward_time\": \"1 ms\", \"backward_time\": \"2 ms\", "
        "\"params\": 0}, \"federated\": {\"cloud\": 0, \"update_bytes\": \"-1 MB\"}}",
        "federated.update_bytes", "");
    bad(SCEN(4, "", "\"cloud\": 0, \"shards\": 2"), "federated.shards", "");
    bad(SCEN(2, "", "\"aggregation\": \"allreduce\", \"clients\": [0]"), "federated.aggregation",
        "at least 2 clients");
    bad("{\"topology\": {\"generator\": \"switch\", \"gpus\": 4}, \"model\": {\"kind\": "
        "\"synthetic\", \"layers\": 2, \"forward_time\": \"1 ms\", \"backward_time\": \"2 ms\", "
        "\"params\": 0}}", "federated", "required");
    bad("{\"topology\": {\"generator\": \"switch\", \"gpus\": 4}, \"model\": {\"kind\": "
        "\"synthetic\", \"layers\": 2, \"forward_time\": \"1 ms\", \"backward_time\": \"2 ms\", "
        "\"params\": 0}, \"parallel\": {\"tp\": 2}, \"federated\": {\"cloud\": 0}}", "parallel.tp",
        "tp 1 and pp 1");
    /* dtsim run refuses it, naming the section */
    cJSON *j;
    dt_error e;
    const char *t = SCEN(4, "", "\"cloud\": 0");
    ck_assert_int_eq(js_parse_text(t, strlen(t), "f.json", &j, &e), DT_OK);
    run_options opt = {0};
    run_result rr;
    ck_assert_int_eq(run_scenario(j, "f.json", ".", &opt, &rr, &e), DT_EINPUT);
    ck_assert_str_eq(e.path, "federated");
    cJSON_Delete(j);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("federated");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, star_against_ps_formula);
    tcase_add_test(tc, hierarchical_hand_sum);
    tcase_add_test(tc, allreduce_ring);
    tcase_add_test(tc, straggler_client);
    tcase_add_test(tc, bad_input);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return dt_run_suite(suite()); }
