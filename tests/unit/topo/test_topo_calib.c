/* test_topo_calib.c - applying a calibration to a topology (models/topo/topo_calib.c).
 * Pins down: applying a 4-rank ring fit to a hand-built topology sets exactly the intra-host GPU
 * links (direct: whole alpha_link; through a host switch: split over the 2 hops, minus the
 * switch latency) to alpha/(2(n-1)) and 2(n-1)/(n beta), makes those GPUs' reductions free (they
 * are inside beta), leaves NIC links and other GPUs alone, and says so in the note; a
 * calibration without a collective fit is an input error. An inter-host fit (a run across hosts)
 * on a 2 x 2 DGX: every fabric link (GPU-NIC, NIC-leaf, leaf-spine) gets 2(n-1)/(n beta), the
 * NVLink paths keep theirs, the route where a ring first crosses hosts costs exactly
 * alpha/(2(n-1)) with its switches, every GPU reduces for free; on one host it is refused. An
 * intra-host fit whose per-path latency exceeds the way out through the NICs says so in the
 * note. cal_link_figures follows each collective's ring cost.
 * Link efficiency scales the same intra-host links by the NVLink fraction and every other
 * link by the network fraction (0.8 and 0.96 for "nccl"), latencies untouched; its parser
 * takes nccl, line and NV,NET.
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
    t->gpu_node = dt_xcalloc(4, sizeof *t->gpu_node);
    for (int g = 0; g < 4; g++) t->gpu_node[g] = g;
    topo_route_cache_init(t);
    return t;
}

static void free_hand(topo *t)
{
    topo_route_cache_free(t);
    free(t->links); free(t->out_start); free(t->out_links); free(t->gpus); free(t->gpu_node); free(t);
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
    free_hand(t);

    /* a calibration with only top-k cannot describe links */
    cal_result *k = cal_test_make();
    k->algos[0].kind = CAL_KIND_TOPK;
    t = hand_topo();
    ck_assert_int_eq(topo_apply_calibration(t, k, note, sizeof note, &err), DT_EINPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "no collective fit"));
    free_hand(t);
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
    free_hand(t);
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

/* a 4-rank all-reduce fit over 2 hosts: alpha 300 us, 1/beta 10 GB/s -> per hop 50 us, 15 GB/s
 * ring-equivalent; 2 GPUs per host run 2 rings, one per rail (docs/collectives.md, "Rings per
 * rail"), so each fabric link gets half: 7.5 GB/s */
static cal_result *inter_cal(void)
{
    cal_result *c = cal_test_make();
    cal_algo *a = &c->algos[0];
    snprintf(a->name, sizeof a->name, "nccltests_allreduce_inter");
    a->scope = CAL_SCOPE_INTER;
    a->hosts = 2;
    a->ranks = 4;
    a->fit.alpha = 300e-6;
    a->fit.beta = 1.0 / 10e9;
    snprintf(c->backend, sizeof c->backend, "nccl-tests");
    return c;
}

static topo *dgx(int nodes)
{
    topo_gen_params p = {.family = TOPO_FAMILY_DGX, .nodes = nodes, .gpus_per_node = 2};
    topo *t = NULL;
    dt_error err;
    dt_error_clear(&err);
    ck_assert_int_eq(topo_generate(&p, &t, &err), DT_OK);
    return t;
}

START_TEST(apply_inter_host)
{
    cal_result *c = inter_cal();
    topo *t = dgx(2);
    char note[768] = "";
    dt_error err;
    dt_error_clear(&err);
    double nvlink = 0;
    for (int l = 0; l < t->n_links; l++)
        if (t->nodes[t->links[l].dst].kind == TOPO_SWITCH && t->nodes[t->links[l].dst].host >= 0) nvlink = t->links[l].bandwidth;
    ck_assert_int_eq(topo_apply_calibration(t, c, note, sizeof note, &err), DT_OK);
    int fabric = 0, untouched = 0;
    for (int l = 0; l < t->n_links; l++) {
        const topo_node *a = &t->nodes[t->links[l].src], *b = &t->nodes[t->links[l].dst];
        bool nv = (a->kind == TOPO_SWITCH && a->host >= 0) || (b->kind == TOPO_SWITCH && b->host >= 0);
        if (nv) {
            ck_assert(t->links[l].bandwidth == nvlink);
            untouched++;
        } else {
            ck_assert_rel(t->links[l].bandwidth, 7.5e9, 1e-12);
            fabric++;
        }
    }
    ck_assert_int_gt(fabric, 0);
    ck_assert_int_eq(untouched, 8); /* 2 hosts x 2 GPUs x 2 directions */
    /* GPU 1 (host 0) -> GPU 2 (host 1): where a ring in GPU order crosses */
    const int *path;
    int np;
    ck_assert_int_eq(topo_route(t, 1, 2, 0, &path, &np), DT_OK);
    sim_time_t lat = 0;
    for (int i = 0; i < np; i++) {
        lat += t->links[path[i]].latency;
        if (t->nodes[t->links[path[i]].dst].kind == TOPO_SWITCH) lat += t->switch_latency;
    }
    ck_assert_int_le(llabs(lat - 50 * SIM_US), np); /* picosecond rounding per hop */
    for (int g = 0; g < t->n_gpus; g++) ck_assert(t->gpus[g].reduce_bw == 0);
    ck_assert_msg(strstr(note, "inter-host links set to 50 us latency per host-to-host GPU path, 7.5 GB/s per rail (the ring's over 2 rails)"), "%s", note);
    ck_assert_ptr_null(strstr(note, "intra-host"));
    topo_destroy(t);

    /* one host: nothing for it to describe */
    t = dgx(1);
    ck_assert_int_eq(topo_apply_calibration(t, c, note, sizeof note, &err), DT_EINPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "describes inter-host links"));
    topo_destroy(t);
    cal_result_destroy(c);

    /* an intra-host path made slower than the way out through the NICs: the note says so */
    c = cal_test_make();
    c->algos[0].fit.alpha = 6e-3; /* 1 ms per GPU-GPU path */
    t = dgx(2);
    ck_assert_int_eq(topo_apply_calibration(t, c, note, sizeof note, &err), DT_OK);
    ck_assert_msg(strstr(note, "warning: the 1 ms per GPU-GPU path exceeds the route out of the host"), "%s", note);
    topo_destroy(t);
    cal_result_destroy(c);
}
END_TEST

START_TEST(link_figures)
{
    double a, b;
    cal_link_figures(CAL_KIND_ALLREDUCE, 60e-6, 1 / 2e9, 4, &a, &b);
    ck_assert_rel(a, 10e-6, 1e-12);
    ck_assert_rel(b, 3e9, 1e-12);
    cal_link_figures(CAL_KIND_ALLGATHER, 60e-6, 1 / 2e9, 4, &a, &b); /* (n-1) steps, (n-1)/n */
    ck_assert_rel(a, 20e-6, 1e-12);
    ck_assert_rel(b, 1.5e9, 1e-12);
    cal_link_figures(CAL_KIND_REDUCE_SCATTER, 60e-6, 1 / 2e9, 4, &a, &b);
    ck_assert_rel(a, 20e-6, 1e-12);
    cal_link_figures(CAL_KIND_ALLTOALL, 60e-6, 1 / 2e9, 4, &a, &b); /* at once: one step */
    ck_assert_rel(a, 60e-6, 1e-12);
    ck_assert_rel(b, 1.5e9, 1e-12);
    cal_link_figures(CAL_KIND_SENDRECV, 60e-6, 1 / 2e9, 8, &a, &b);
    ck_assert_rel(a, 60e-6, 1e-12);
    ck_assert_rel(b, 2e9, 1e-12);
    cal_link_figures(CAL_KIND_BROADCAST, 60e-6, 1 / 2e9, 4, &a, &b); /* a chain: n-1 steps, factor 1 */
    ck_assert_rel(a, 20e-6, 1e-12);
    ck_assert_rel(b, 2e9, 1e-12);
    ck_assert_rel(cal_busbw_factor(CAL_KIND_ALLREDUCE, 16), 1.875, 1e-15);
    ck_assert_rel(cal_busbw_factor(CAL_KIND_REDUCE, 16), 1, 1e-15);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("topo_calib");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, apply_to_topology);
    tcase_add_test(tc, link_efficiency);
    tcase_add_test(tc, apply_inter_host);
    tcase_add_test(tc, link_figures);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return dt_run_suite(suite()); }
