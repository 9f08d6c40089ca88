/* test_topo_calib.c - applying a calibration to a topology (models/topo/topo_calib.c).
 * Pins down: applying a 4-rank ring fit to a hand-built topology sets exactly the intra-host GPU
 * links (direct: whole alpha_link; through a host switch: split over the 2 hops, minus the
 * switch latency) to alpha/(2(n-1)) and 2(n-1)/(n beta), makes those GPUs' reductions free (they
 * are inside beta), leaves NIC links and other GPUs alone, and says so in the note; a
 * calibration without an all-reduce fit is an input error. Link efficiency scales the same
 * intra-host links by the NVLink fraction and every other link by the network fraction (0.8
 * and 0.96 for "nccl"), latencies untouched; its parser takes nccl, line and NV,NET.
 * Leaves free: the wording of the note beyond the key facts. */
#include <stdio.h>
#include <string.h>

#include "../gpu/cal_testutil.h"
#include "dtsim/topo.h"
#include "testutil.h"
#include "topo_internal.h"

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
    cal_result *c = cal_test_make(); /* ring, 4 ranks: alpha 60 us, beta 1/(2 GB/s) -> 10 us, 3 GB/s */
    topo *t = hand_topo();
    char note[256] = "";
    dt_error err;
    dt_error_clear(&err);
    ck_assert_int_eq(topo_apply_calibration(t, c, note, sizeof note, &err), DT_OK);
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
    cal_result *k = cal_test_make();
    k->algos[0].kind = CAL_KIND_TOPK;
    t = hand_topo();
    ck_assert_int_eq(topo_apply_calibration(t, k, note, sizeof note, &err), DT_EINPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "no all-reduce fit"));
    free(t->links); free(t->out_start); free(t->out_links); free(t->gpus); free(t);
    cal_result_destroy(k);
    cal_result_destroy(c);
}
END_TEST

START_TEST(link_efficiency)
{
    topo *t = hand_topo();
    topo_apply_link_efficiency(t, TOPO_NCCL_NVLINK_EFFICIENCY, TOPO_NCCL_NETWORK_EFFICIENCY);
    for (int l = 0; l <= 5; l++) ck_assert_rel(t->links[l].bandwidth, 0.8e9, 1e-15);
    for (int l = 6; l <= 8; l++) ck_assert_rel(t->links[l].bandwidth, 0.96e9, 1e-15);
    for (int l = 0; l <= 8; l++) ck_assert_int_eq(t->links[l].latency, 1000 * SIM_NS);
    free(t->links); free(t->out_start); free(t->out_links); free(t->gpus); free(t);
    double nv = 0, nw = 0;
    char why[128];
    ck_assert_int_eq(topo_link_efficiency_parse("nccl", &nv, &nw, why, sizeof why), DT_OK);
    ck_assert(nv == 0.8 && nw == 0.96);
    ck_assert_int_eq(topo_link_efficiency_parse("line", &nv, &nw, why, sizeof why), DT_OK);
    ck_assert(nv == 1 && nw == 1);
    ck_assert_int_eq(topo_link_efficiency_parse("0.7,0.9", &nv, &nw, why, sizeof why), DT_OK);
    ck_assert(nv == 0.7 && nw == 0.9);
    ck_assert_int_eq(topo_link_efficiency_parse("0.7", &nv, &nw, why, sizeof why), DT_EINPUT);
    ck_assert_int_eq(topo_link_efficiency_parse("1.2,0.9", &nv, &nw, why, sizeof why), DT_EINPUT);
    ck_assert_ptr_nonnull(strstr(why, "1.2,0.9"));
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("topo_calib");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, apply_to_topology);
    tcase_add_test(tc, link_efficiency);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return dt_run_suite(suite()); }
