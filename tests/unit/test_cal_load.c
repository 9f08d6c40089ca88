/* test_cal_load.c - calibration files: writing, strict loading, and applying to a topology.
 * Pins down: a written calibration loads back to the same figures; each kind of bad field is an
 * input error naming the file and the JSON path (unknown key with suggestion, wrong version,
 * bad date, derived bandwidth or link figure or summary that disagrees with what it derives
 * from, decreasing sizes, sample count mismatch, top-k keys on an all-reduce fit); applying a
 * 4-rank ring fit to a hand-built topology sets exactly the intra-host GPU links (direct: whole
 * alpha_link; through a host switch: split over the 2 hops, minus the switch latency) to
 * alpha/(2(n-1)) and 2(n-1)/(n beta), makes those GPUs' reductions free (they are inside beta),
 * leaves NIC links and other GPUs alone, and says so in the note.
 * Leaves free: the wording of messages beyond the path and the key facts. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dtsim/calib.h"
#include "testutil.h"

static cal_result *make(void)
{
    cal_result *c = dt_xcalloc(1, sizeof *c);
    snprintf(c->date, sizeof c->date, "2026-11-21T23:00:00Z");
    snprintf(c->hostname, sizeof c->hostname, "testhost");
    snprintf(c->cpu_model, sizeof c->cpu_model, "Test CPU");
    c->cores = 2;
    snprintf(c->backend, sizeof c->backend, "cpu");
    snprintf(c->dtype, sizeof c->dtype, "fp32");
    c->ranks = 4;
    c->chunk_bytes = 65536;
    c->repeats = 3;
    c->warmup = 1;
    cal_algo *a = cal_result_add_algo(c, "ring", CAL_KIND_ALLREDUCE);
    a->points = dt_xcalloc(3, sizeof *a->points);
    double s1[3] = {1e-5, 1.1e-5, 1.2e-5}, s2[3] = {2e-5, 2.5e-5, 2.1e-5}, s3[3] = {1e-4, 1.01e-4, 0.99e-4};
    cal_point_set(&a->points[a->n_points++], 1024, s1, 3);
    cal_point_set(&a->points[a->n_points++], 65536, s2, 3);
    cal_point_set(&a->points[a->n_points++], 1048576, s3, 3);
    a->fit = (cal_fit){.alpha = 60e-6, .beta = 1.0 / 2e9, .alpha_ci = 1e-6, .beta_ci = 1e-11, .r2 = 0.99, .n_samples = 9, .dof = 7};
    cal_algo *k = cal_result_add_algo(c, "topk", CAL_KIND_TOPK);
    k->k_fraction = 0.01;
    k->points = dt_xcalloc(2, sizeof *k->points);
    cal_point_set(&k->points[k->n_points++], 1000, s1, 3);
    cal_point_set(&k->points[k->n_points++], 100000, s3, 3);
    k->fit = (cal_fit){.alpha = 1e-6, .beta = 1e-9, .alpha_ci = 1e-7, .beta_ci = 1e-11, .r2 = 0.9, .n_samples = 6, .dof = 4};
    return c;
}

START_TEST(round_trip)
{
    cal_result *c = make();
    cJSON *j = cal_result_to_json(c);
    char *text = cJSON_Print(j);
    char path[] = "/tmp/dtsim_cal_XXXXXX";
    int fd = mkstemp(path);
    ck_assert(fd >= 0);
    ck_assert(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    cal_result *d = NULL;
    dt_error err;
    dt_error_clear(&err);
    ck_assert_msg(cal_load_file(path, &d, &err) == DT_OK, "%s: %s", err.path, err.msg);
    unlink(path);
    ck_assert_str_eq(d->backend, "cpu");
    ck_assert_int_eq(d->ranks, 4);
    ck_assert_int_eq(d->n_algos, 2);
    ck_assert_str_eq(d->algos[0].name, "ring");
    ck_assert(d->algos[0].fit.alpha == 60e-6);
    ck_assert(d->algos[0].fit.beta == 1.0 / 2e9);
    ck_assert_int_eq(d->algos[0].n_points, 3);
    ck_assert(d->algos[0].points[1].samples[1] == 2.5e-5);
    ck_assert(d->algos[0].points[1].median == 2.1e-5);
    ck_assert_rel(cal_topk_throughput(d), 1e9, 1e-12);
    ck_assert_ptr_eq(cal_link_fit(d), &d->algos[0]);
    ck_assert_ptr_nonnull(strstr(d->source, "dtsim_cal_"));
    cal_result_destroy(d);
    cal_result_destroy(c);
    cJSON_Delete(j);
    free(text);
}
END_TEST

/* Load j as file "c.json" expecting an input error at path containing want_path and a message
 * containing want_msg. */
static void expect_error(cJSON *j, const char *want_path, const char *want_msg)
{
    dt_error err;
    dt_error_clear(&err);
    js_ctx ctx = {.file = "c.json", .err = &err};
    cal_result *d = NULL;
    ck_assert_int_eq(cal_from_json(&ctx, j, &d), DT_EINPUT);
    ck_assert_ptr_null(d);
    ck_assert_str_eq(err.file, "c.json");
    ck_assert_msg(strstr(err.path, want_path) != NULL, "path '%s' lacks '%s' (%s)", err.path, want_path, err.msg);
    ck_assert_msg(strstr(err.msg, want_msg) != NULL, "message '%s' lacks '%s'", err.msg, want_msg);
    cJSON_Delete(j);
}

static cJSON *fresh(void)
{
    cal_result *c = make();
    cJSON *j = cal_result_to_json(c);
    cal_result_destroy(c);
    return j;
}

static cJSON *fit0(cJSON *j) { return cJSON_GetArrayItem(cJSON_GetObjectItem(j, "fits"), 0); }

START_TEST(validation_errors)
{
    cJSON *j = fresh();
    cJSON_AddNumberToObject(j, "rankz", 3);
    expect_error(j, "rankz", "did you mean \"ranks\"");

    j = fresh();
    cJSON_ReplaceItemInObject(j, "version", cJSON_CreateNumber(2));
    expect_error(j, "version", "expected 1");

    j = fresh();
    cJSON_ReplaceItemInObject(j, "date", cJSON_CreateString("yesterday"));
    expect_error(j, "date", "ISO-8601");

    j = fresh();
    cJSON_ReplaceItemInObject(j, "backend", cJSON_CreateString("gpu"));
    expect_error(j, "backend", "");

    j = fresh();
    cJSON_ReplaceItemInObject(fit0(j), "bandwidth", cJSON_CreateString("3 GB/s"));
    expect_error(j, "fits[0].bandwidth", "derived");

    j = fresh();
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(fit0(j), "link"), "bandwidth", cJSON_CreateNumber(1e9));
    expect_error(j, "fits[0].link.bandwidth", "derived");

    j = fresh();
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(fit0(j), "link"), "latency", cJSON_CreateNumber(1e-3));
    expect_error(j, "fits[0].link.latency", "alpha/(2(ranks-1))");

    j = fresh();
    cJSON *p1 = cJSON_GetArrayItem(cJSON_GetObjectItem(fit0(j), "points"), 1);
    cJSON_ReplaceItemInObject(p1, "median", cJSON_CreateNumber(3e-5));
    expect_error(j, "fits[0].points[1].median", "samples give");

    j = fresh();
    p1 = cJSON_GetArrayItem(cJSON_GetObjectItem(fit0(j), "points"), 1);
    cJSON_ReplaceItemInObject(p1, "size", cJSON_CreateString("1 KiB"));
    expect_error(j, "fits[0].points[1].size", "increase");

    j = fresh();
    p1 = cJSON_GetArrayItem(cJSON_GetObjectItem(fit0(j), "points"), 2);
    cJSON_ReplaceItemInArray(cJSON_GetObjectItem(p1, "samples"), 0, cJSON_CreateString("fast"));
    expect_error(j, "fits[0].points[2].samples[0]", "");

    j = fresh();
    cJSON_ReplaceItemInObject(fit0(j), "samples", cJSON_CreateNumber(10));
    expect_error(j, "fits[0].samples", "hold 9");

    j = fresh();
    cJSON_AddNumberToObject(fit0(j), "k_fraction", 0.01);
    expect_error(j, "fits[0].k_fraction", "topk");

    j = fresh();
    cJSON_ReplaceItemInObject(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "fits"), 1), "name", cJSON_CreateString("ring"));
    expect_error(j, "fits[1].name", "twice");

    j = fresh();
    cJSON_DeleteItemFromObject(j, "machine");
    expect_error(j, "machine", "required");

    j = fresh();
    cJSON_ReplaceItemInObject(j, "ranks", cJSON_CreateNumber(1));
    expect_error(j, "fits[0].kind", "ranks >= 2");
}
END_TEST

START_TEST(load_missing_file)
{
    cal_result *d = NULL;
    dt_error err;
    dt_error_clear(&err);
    ck_assert_int_ne(cal_load_file("/nonexistent/calib.json", &d, &err), DT_OK);
    ck_assert_ptr_null(d);
    ck_assert_str_eq(err.file, "/nonexistent/calib.json");
}
END_TEST

/* Host 0: GPUs 0,1 joined directly both ways; GPUs 1,2 through host switch S0 (switch latency
 * 100 ns). Host 1: GPU 3 alone behind NIC N1; N0 on host 0. GPU1->N0->N1->GPU3 crosses hosts. */
static topo *hand_topo(void)
{
    topo *t = dt_xcalloc(1, sizeof *t);
    t->name = "hand";
    static topo_node nodes[] = {
        {"g0", TOPO_GPU, 0, 0}, {"g1", TOPO_GPU, 1, 0}, {"g2", TOPO_GPU, 2, 0}, {"g3", TOPO_GPU, 3, 1},
        {"s0", TOPO_SWITCH, -1, 0}, {"n0", TOPO_NIC, -1, 0}, {"n1", TOPO_NIC, -1, 1}};
    t->nodes = nodes;
    t->n_nodes = 7;
    /* src, dst */
    static const int ends[][2] = {{0, 1}, {1, 0}, {1, 4}, {4, 1}, {2, 4}, {4, 2}, {1, 5}, {5, 6}, {6, 3}};
    t->n_links = 9;
    t->links = dt_xcalloc(9, sizeof *t->links);
    for (int l = 0; l < 9; l++) t->links[l] = (topo_link){ends[l][0], ends[l][1], 1e9, 1000 * SIM_NS, -1};
    t->out_start = dt_xcalloc(8, sizeof(int));
    t->out_links = dt_xcalloc(9, sizeof(int));
    int k = 0;
    for (int v = 0; v < 7; v++) {
        t->out_start[v] = k;
        for (int l = 0; l < 9; l++)
            if (ends[l][0] == v) t->out_links[k++] = l;
    }
    t->out_start[7] = k;
    t->n_gpus = 4;
    t->gpus = dt_xcalloc(4, sizeof *t->gpus);
    for (int g = 0; g < 4; g++) t->gpus[g].reduce_bw = 100e9;
    t->n_hosts = 2;
    t->switch_latency = 100 * SIM_NS;
    return t;
}

START_TEST(apply_to_topology)
{
    cal_result *c = make(); /* ring, 4 ranks: alpha 60 us, beta 1/(2 GB/s) -> 10 us, 3 GB/s */
    topo *t = hand_topo();
    char note[256] = "";
    dt_error err;
    dt_error_clear(&err);
    ck_assert_int_eq(cal_apply_topology(c, t, note, sizeof note, &err), DT_OK);
    /* direct GPU-GPU: whole link latency */
    ck_assert_int_eq(t->links[0].latency, 10 * SIM_US);
    ck_assert_int_eq(t->links[1].latency, 10 * SIM_US);
    ck_assert_rel(t->links[0].bandwidth, 3e9, 1e-12);
    /* via the host switch: (10 us - 100 ns) / 2 per hop */
    for (int l = 2; l <= 5; l++) {
        ck_assert_int_eq(t->links[l].latency, 4950 * SIM_NS);
        ck_assert_rel(t->links[l].bandwidth, 3e9, 1e-12);
    }
    /* NIC links (inter-host) untouched */
    for (int l = 6; l <= 8; l++) {
        ck_assert_int_eq(t->links[l].latency, 1000 * SIM_NS);
        ck_assert(t->links[l].bandwidth == 1e9);
    }
    ck_assert_ptr_nonnull(strstr(note, "6 intra-host GPU links"));
    /* reductions are inside the measured beta: free on covered GPUs, untouched elsewhere */
    ck_assert(t->gpus[0].reduce_bw == 0 && t->gpus[1].reduce_bw == 0 && t->gpus[2].reduce_bw == 0);
    ck_assert(t->gpus[3].reduce_bw == 100e9);
    ck_assert_ptr_nonnull(strstr(note, "on 3 GPUs"));
    ck_assert_ptr_nonnull(strstr(note, "3 GB/s"));
    free(t->links); free(t->out_start); free(t->out_links); free(t->gpus); free(t);

    /* a calibration with only top-k cannot describe links */
    cal_result *k = make();
    k->algos[0].kind = CAL_KIND_TOPK;
    t = hand_topo();
    ck_assert_int_eq(cal_apply_topology(k, t, note, sizeof note, &err), DT_EINPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "no all-reduce fit"));
    free(t->links); free(t->out_start); free(t->out_links); free(t->gpus); free(t);
    cal_result_destroy(k);
    cal_result_destroy(c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("cal_load");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, round_trip);
    tcase_add_test(tc, validation_errors);
    tcase_add_test(tc, load_missing_file);
    tcase_add_test(tc, apply_to_topology);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return dt_run_suite(suite()); }
