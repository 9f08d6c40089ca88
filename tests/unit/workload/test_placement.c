/* test_placement.c - "parallel.placement": "bandwidth" (placement.c).
 * Pins down, on the decentralised lab's DT-FM setting (8 regions x 8 V100, the measured AWS
 * matrix, GPT3-XL pp 8 x dp 8: activations 2.1 GB per GPU per step against 0.57 GB of
 * gradients, so pipelines go inside regions):
 * - every replica's 8 stages sit in one region, stage order free;
 * - the replicas' ring over the regions has the fastest slowest wide-area link of all 5,040
 *   rings (brute force here): 8 x 0.523 Gb/s (Oregon, Virginia, London, Frankfurt, Ireland,
 *   Ohio, Seoul, Tokyo: its slowest pair Tokyo-Oregon) against the default order's 8 x 0.342
 *   (Seoul-London), and the step drops from 24.45 s to 18.48 s;
 * - a "pp,dp,tp" formula, pipelines across regions, takes 116 s; "bandwidth" recovers;
 * - gradient-heavy synthetic model (4 regions x 4 GPUs, pp 4 x dp 4): each stage's
 *   data-parallel group inside one region instead, and the step is well below the default's
 *   (measured 4.15 s against 960 s: 3 GB of gradients per GPU over 100 Mb/s);
 * - TP groups stay inside a DGX box whatever the plan; the map is a permutation.
 * Leaves free: which of several equally good layouts is chosen. */
#include <stdio.h>
#include <string.h>

#include "dtsim/run.h"
#include "dtsim/topo.h"
#include "run_internal.h"
#include "testutil.h"

static cJSON *load_lab(const char *placement)
{
    cJSON *j;
    dt_error e;
    ck_assert_int_eq(js_parse_file(DTSIM_SOURCE_DIR "/examples/labs/decentralised/geo-default.json", &j, &e), DT_OK);
    cJSON *par = cJSON_GetObjectItemCaseSensitive(j, "parallel");
    cJSON_DeleteItemFromObjectCaseSensitive(par, "placement");
    if (placement) cJSON_AddStringToObject(par, "placement", placement);
    return j;
}

static double step(cJSON *j)
{
    run_options opt = {0};
    run_result r;
    dt_error e;
    dt_error_clear(&e);
    int rc = run_scenario(j, "geo.json", DTSIM_SOURCE_DIR "/examples/labs/decentralised", &opt, &r, &e);
    ck_assert_msg(rc == DT_OK, "%s: %s", e.path, e.msg);
    double T = r.step_time_s;
    run_result_free(&r);
    return T;
}

/* The wide-area link between two regions: the route's link with the largest latency. */
static double wan_bw(topo *t, int a, int b)
{
    const int *l = NULL;
    int n = 0;
    ck_assert_int_eq(topo_route(t, a, b, 0, &l, &n), DT_OK);
    int w = l[0];
    for (int i = 1; i < n; i++)
        if (t->links[l[i]].latency > t->links[w].latency) w = l[i];
    return t->links[w].bandwidth;
}

static int host_of(const topo *t, int g) { return t->nodes[t->gpu_node[g]].host; }

static double ring_min(topo *t, const int *rep_gpu, const int *order, int n)
{
    double m = INFINITY;
    for (int i = 0; i < n; i++)
        m = fmin(m, wan_bw(t, rep_gpu[order[i]], rep_gpu[order[(i + 1) % n]]));
    return m;
}

static double best_ring(topo *t, const int *rep_gpu, int *perm, int k, int n)
{
    if (k == n) return ring_min(t, rep_gpu, perm, n);
    double b = 0;
    for (int i = k; i < n; i++) {
        int x = perm[k];
        perm[k] = perm[i];
        perm[i] = x;
        b = fmax(b, best_ring(t, rep_gpu, perm, k + 1, n));
        perm[i] = perm[k];
        perm[k] = x;
    }
    return b;
}

START_TEST(dtfm_pipelines_in_regions_best_ring)
{
    cJSON *j = load_lab("bandwidth");
    wl_scenario s;
    topo *t;
    dt_error e;
    dt_error_clear(&e);
    ck_assert_int_eq(run_prepare(j, "geo.json", ".", &s, &t, &e), DT_OK);
    ck_assert_ptr_nonnull(s.plan.gpu_map);
    /* a permutation */
    int seen[64] = {0};
    for (int i = 0; i < 64; i++) seen[s.plan.gpu_map[i]]++;
    for (int i = 0; i < 64; i++) ck_assert_int_eq(seen[i], 1);
    int rep[8], ident[8];
    for (int d = 0; d < 8; d++) {
        rep[d] = wl_gpu_of(&s.plan, d, 0, 0);
        ident[d] = d;
        for (int st = 1; st < 8; st++)
            ck_assert_int_eq(host_of(t, wl_gpu_of(&s.plan, d, st, 0)), host_of(t, rep[d]));
        for (int q = 0; q < d; q++) ck_assert_int_ne(host_of(t, rep[q]), host_of(t, rep[d]));
    }
    double chosen = ring_min(t, rep, ident, 8);
    int perm[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    double best = best_ring(t, rep, perm, 1, 8);
    ck_assert_double_eq(chosen, best);
    /* the default order: region d for replica d */
    int regions[8];
    for (int d = 0; d < 8; d++) regions[d] = d * 8;
    double deflt = ring_min(t, regions, ident, 8);
    ck_assert_double_eq_tol(deflt, 8 * 0.342e9 / 8, 1e3); /* Seoul-London, 8 x 0.342 Gb/s */
    ck_assert_double_gt(chosen, 1.5 * deflt);
    topo_destroy(t);
    wl_scenario_free(&s);
    double bw = step(j);
    cJSON_Delete(j);
    cJSON *d0 = load_lab(NULL), *bad = load_lab("pp,dp,tp");
    double def = step(d0), across = step(bad);
    cJSON_Delete(d0);
    cJSON_Delete(bad);
    ck_assert_rel(def, 24.45, 5e-4);
    ck_assert_rel(bw, 18.48, 5e-4);
    ck_assert_double_gt(across, 4 * def);
}
END_TEST

/* 4 regions x 4 GPUs (boxes of 4), 100 Mb/s between regions; a synthetic model of 4e9
 * parameters and 1 MB activations, pp 4 x dp 4: gradients (0.75 x 2 x 1e9 x 2 B = 3 GB per GPU)
 * outweigh activations (2 x 4 x 1 MB): each stage's replicas go inside a region. */
#define GRAD_HEAVY(placement)                                                                    \
    "{\"topology\": {\"generator\": \"geo\", \"regions\": 4, \"gpus_per_region\": 4, \"wan\": "  \
    "\"100 Mb/s\", \"wan_latency\": \"20 ms\"}, \"model\": {\"kind\": \"synthetic\", \"layers\": " \
    "8, \"forward_time\": \"10 ms\", \"backward_time\": \"20 ms\", \"params\": 4e9, "             \
    "\"activation_bytes\": \"1 MB\"}, \"parallel\": {\"pp\": 4, \"dp\": 4, \"microbatches\": 4"    \
    placement "}}"

START_TEST(gradient_heavy_dp_inside)
{
    const char *txt = GRAD_HEAVY(", \"placement\": \"bandwidth\"");
    cJSON *j;
    dt_error e;
    ck_assert_int_eq(js_parse_text(txt, strlen(txt), "g.json", &j, &e), DT_OK);
    wl_scenario s;
    topo *t;
    ck_assert_int_eq(run_prepare(j, "g.json", ".", &s, &t, &e), DT_OK);
    for (int st = 0; st < 4; st++)
        for (int d = 1; d < 4; d++)
            ck_assert_int_eq(host_of(t, wl_gpu_of(&s.plan, d, st, 0)),
                             host_of(t, wl_gpu_of(&s.plan, 0, st, 0)));
    topo_destroy(t);
    wl_scenario_free(&s);
    const char *dtxt = GRAD_HEAVY("");
    cJSON *dj;
    ck_assert_int_eq(js_parse_text(dtxt, strlen(dtxt), "g.json", &dj, &e), DT_OK);
    double bw = step(j), def = step(dj);
    ck_assert_double_lt(bw, def / 2);
    cJSON_Delete(j);
    cJSON_Delete(dj);
}
END_TEST

START_TEST(tp_inside_boxes)
{
    const char *txt = "{\"topology\": {\"generator\": \"dgx\", \"nodes\": 4, \"gpus_per_node\": 8},"
                      " \"model\": {\"kind\": \"transformer\", \"layers\": 8, \"hidden\": 1024,"
                      " \"heads\": 16, \"seq_len\": 1024, \"vocab\": 32000}, \"parallel\": {\"tp\": 4,"
                      " \"pp\": 2, \"placement\": \"bandwidth\"}}";
    cJSON *j;
    dt_error e;
    ck_assert_int_eq(js_parse_text(txt, strlen(txt), "d.json", &j, &e), DT_OK);
    wl_scenario s;
    topo *t;
    ck_assert_int_eq(run_prepare(j, "d.json", ".", &s, &t, &e), DT_OK);
    for (int d = 0; d < s.plan.dp; d++)
        for (int st = 0; st < 2; st++)
            for (int k = 1; k < 4; k++)
                ck_assert_int_eq(host_of(t, wl_gpu_of(&s.plan, d, st, k)),
                                 host_of(t, wl_gpu_of(&s.plan, d, st, 0)));
    topo_destroy(t);
    wl_scenario_free(&s);
    cJSON_Delete(j);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("placement");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, dtfm_pipelines_in_regions_best_ring);
    tcase_add_test(tc, gradient_heavy_dp_inside);
    tcase_add_test(tc, tp_inside_boxes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return dt_run_suite(suite()); }
