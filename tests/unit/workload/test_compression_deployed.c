/* test_compression_deployed.c - top-k through a parameter server and PowerSGD low rank.
 * Pins down:
 * - PowerSGD's per-layer accounting (wl_lowrank_get) on a 1024-wide transformer layer (heads
 *   16, no GQA, gelu, f = 4h) at rank 4: P elements 4 (3h + h + 4h + h) = 36,864, Q 4 (h + h +
 *   h + 4h) = 28,672, norms 4h = 4,096 uncompressed, FLOPs sum 6 R C q + 2 R q² = 302,284,800;
 *   the 32000 x 1024 embedding: P 128,000, Q 4,096, 787,456,000 FLOPs; at rank 300 no square
 *   h x h matrix is worth it (2 x 300 x 2h > h²: PyTorch's min_compression_rate 2) and goes
 *   dense; tp 2 halves each matrix's sharded side;
 * - a step's DP bytes per GPU with PowerSGD: three ring all-reduces, 2 (d-1)/d e (L (dense + P
 *   + Q) + P_emb + Q_emb + 2h) = 1,444,352 B at d = 8 (2h: the final LayerNorm, uncompressed);
 * - top-k through S parameter servers on a star (one bucket, no overlap): bytes per GPU
 *   (n-1)/n (r G (4+e) + min(U (4+e), G e)) with U = G (1 - (1-r)^n), whatever S; the exposed DP
 *   time is the push (a + (n-1) (rG(4+e)/S)/B + (n-1) (rG(4+e)/S)/R) plus the pull (a + (n-1)
 *   (A/S)/B), as coll_ps runs its halves;
 * - wl_topk_union at its limits (r = 1: G; n = 1: r G);
 * - bad input gets located errors;
 * - every method's error-feedback residual: one gradient-sized buffer (top-k, int8, fp8, 1-bit).
 * Leaves free: the GEMM model's times of PowerSGD's matmuls (test_gemm_shapes owns them). */
#include <math.h>
#include <stdio.h>

#include "wl_testutil.h"

#define LAYER_MODEL                                                                              \
    "\"topology\": {\"generator\": \"switch\", \"gpus\": 8, \"gpu\": \"H100-SXM\"}, "            \
    "\"model\": {\"kind\": \"transformer\", \"layers\": 4, \"hidden\": 1024, \"heads\": 16,"       \
    " \"seq_len\": 512, \"vocab\": 32000}"

START_TEST(lowrank_layer_closed_form)
{
    load("{" LAYER_MODEL ", \"parallel\": {\"dp\": 8, \"compression\": {\"method\": \"powersgd\","
         " \"rank\": 4}}, \"global_batch\": 16}", 8);
    wl_lowrank a, b;
    gpu_gemm g[WL_LOWRANK_GEMMS_MAX];
    int n = wl_lowrank_get(&sc.model, &sc.plan, false, &a, g);
    ck_assert_int_eq(n, 16); /* 4 matrices, 4 GEMMs each */
    ck_assert_double_eq(a.p_elems, 36864);
    ck_assert_double_eq(a.q_elems, 28672);
    ck_assert_double_eq(a.dense_elems, 4096);
    ck_assert_double_eq(a.matrix_elems, 12582912);
    ck_assert_double_eq(a.flops, 302284800);
    double sum = 0;
    for (int i = 0; i < n; i++) sum += 2 * g[i].m * g[i].n * g[i].k * g[i].count;
    ck_assert_double_eq(sum, a.flops); /* the GEMMs are the FLOPs */
    ck_assert_int_eq(wl_lowrank_get(&sc.model, &sc.plan, true, &b, NULL), 0);
    ck_assert_double_eq(b.p_elems, 128000);
    ck_assert_double_eq(b.q_elems, 4096);
    ck_assert_double_eq(b.flops, 787456000);
    /* rank 300: h x h (projection) fails 2 x 300 x 2048 < 1024²; QKV 3h x h: 2 x 300 x 4096 =
     * 2,457,600 < 3,145,728 is compressed; the MLP's 4h x h likewise */
    sc.plan.lowrank_rank = 300;
    wl_lowrank_get(&sc.model, &sc.plan, false, &a, NULL);
    ck_assert_double_eq(a.dense_elems, 4096 + 1024.0 * 1024);
    ck_assert_double_eq(a.p_elems, 300.0 * (3072 + 4096 + 1024));
    /* tp 2: each GPU holds half of every matrix's sharded side, and the layer's two
     * LayerNorms (4h = 4,096) whole: Megatron replicates norm weights over the TP ranks */
    sc.plan.lowrank_rank = 4;
    sc.plan.tp = 2;
    wl_lowrank_get(&sc.model, &sc.plan, false, &a, NULL);
    ck_assert_double_eq(a.p_elems, 4.0 * (1536 + 1024 + 2048 + 1024));
    ck_assert_double_eq(a.q_elems, 4.0 * (1024 + 512 + 1024 + 2048));
    ck_assert_double_eq(a.dense_elems, 4096);
    unload();
}
END_TEST

START_TEST(lowrank_bytes_per_gpu)
{
    run_result r = run_text("{" LAYER_MODEL ", \"parallel\": {\"dp\": 8, "
                            "\"compression\": {\"method\": \"powersgd\", \"rank\": 4}}, "
                            "\"global_batch\": 16, \"options\": {\"dp_algorithm\": \"ring\"}}");
    /* 4 layers' dense, P and Q elements, the embedding's P and Q, and the final LayerNorm's
     * 2h = 2048 (no matrix: sent uncompressed with the dense tensors) */
    double elems = 4 * (4096 + 36864 + 28672) + 128000 + 4096 + 2 * 1024;
    ck_assert_rel(r.bytes_sent_per_gpu[WL_COMM_DP], 2.0 * 7 / 8 * 2 * elems, 1e-12);
    ck_assert_rel(r.bytes_sent_per_gpu[WL_COMM_DP], 1444352, 1e-12);
    run_result_free(&r);
}
END_TEST

#define STAR(servers, ratio)                                                                     \
    "{\"topology\": {\"generator\": \"switch\", \"gpus\": 8}, \"model\": {\"kind\": \"synthetic\"," \
    " \"layers\": 2, \"forward_time\": \"1 ms\", \"backward_time\": \"2 ms\", \"params\": 1e8},"   \
    " \"parallel\": {\"bucket_size\": \"10 GB\", \"overlap_dp\": false, \"compression\": "        \
    "{\"method\": \"ps\", \"ratio\": " ratio ", \"throughput\": 1e9}}, \"options\": "             \
    "{\"dp_algorithm\": \"ps\", \"ps_servers\": " servers "}}"

START_TEST(topk_ps_against_closed_form)
{
    /* the star of test_ps_servers: B = 50 GB/s, a = 2 x 500 ns + 200 ns, R = HBM / 3 */
    const double n = 8, G = 1e8, e = 2, pair = 4 + e, B = 50e9, a = 2 * 500e-9 + 200e-9,
                 R = 3.35e12 / 3;
    static const char *const S_txt[] = {"1", "2", "4"};
    static const double S_val[] = {1, 2, 4};
    for (int k = 0; k < 2; k++) {
        double r = k == 0 ? 0.01 : 0.2; /* a sparse pull, then a dense one */
        double U = G * (1 - pow(1 - r, n));
        double push = r * G * pair, pull = fmin(U * pair, G * e);
        ck_assert(k == 0 ? pull < G * e : pull == G * e);
        for (int i = 0; i < 3; i++) {
            char buf[1024];
            if (k == 0) snprintf(buf, sizeof buf, STAR("%s", "0.01"), S_txt[i]);
            else snprintf(buf, sizeof buf, STAR("%s", "0.2"), S_txt[i]);
            run_result res = run_text(buf);
            double S = S_val[i];
            ck_assert_rel(res.bytes_sent_per_gpu[WL_COMM_DP], (n - 1) / n * (push + pull), 1e-12);
            double want = a + (n - 1) * (push / S) / B + (n - 1) * (push / S) / R +
                          a + (n - 1) * (pull / S) / B;
            ck_assert_rel(res.comm_exposed_by_kind_s[WL_COMM_DP], want, 1e-6);
            run_result_free(&res);
        }
    }
}
END_TEST

START_TEST(union_limits)
{
    ck_assert_double_eq(wl_topk_union(1e6, 1, 8), 1e6);
    ck_assert_rel(wl_topk_union(1e6, 0.01, 1), 1e4, 1e-12);
    ck_assert_rel(wl_topk_union(1e6, 0.01, 2), 1e6 * (1 - 0.99 * 0.99), 1e-12);
    /* tiny ratios keep their precision: n r G when n r << 1 */
    ck_assert_rel(wl_topk_union(1e12, 1e-9, 4), 4e3, 1e-8);
}
END_TEST

#define SCN(comp, opts)                                                                          \
    "{" LAYER_MODEL ", \"parallel\": {\"dp\": 8, \"compression\": " comp "}, \"global_batch\": 16" \
    opts "}"

START_TEST(bad_input)
{
    load_refused(SCN("{\"method\": \"ps\", \"ratio\": 0.01}", ""), 8, "parallel.compression.method",
                 "dp_algorithm \"auto\"");
    load_refused(SCN("{\"method\": \"powersgd\"}", ""), 8, "parallel.compression.rank", "required");
    load_refused(SCN("{\"method\": \"powersgd\", \"rank\": 0}", ""), 8, "parallel.compression.rank",
                 "0");
    load_refused(SCN("{\"method\": \"powersgd\", \"rank\": 4, \"ratio\": 0.1}", ""), 8,
                 "parallel.compression.ratio", "rank-r factors");
    load_refused(SCN("{\"method\": \"powersgd\", \"rank\": 4, \"throughput\": 1e9}", ""), 8,
                 "parallel.compression.throughput", "GEMMs");
    load_refused(SCN("{\"method\": \"allgather\", \"ratio\": 0.1, \"rank\": 4}", ""), 8,
                 "parallel.compression.rank", "\"powersgd\" only");
    load_refused(SCN("{\"method\": \"powersgd\", \"rank\": 4, \"min_compression_rate\": 0.5}", ""), 8,
                 "parallel.compression.min_compression_rate", "0.5");
    load_refused("{\"topology\": {\"generator\": \"switch\", \"gpus\": 8}, \"model\": {\"kind\": \"synthetic\", \"layers\": 2, \"forward_time\": \"1 ms\","
                 " \"backward_time\": \"2 ms\", \"params\": 1e8}, \"parallel\": {\"dp\": 8, "
                 "\"compression\": {\"method\": \"powersgd\", \"rank\": 4}}}", 8,
                 "parallel.compression.method", "dense transformer");
}
END_TEST

START_TEST(memory_error_feedback)
{
    /* residual (one gradient) + P and Q of every matrix, in bf16 */
    load("{" LAYER_MODEL ", \"parallel\": {\"dp\": 8}, \"global_batch\": 16}", 8);
    mem_breakdown base = {0};
    mem_compute(&sc.model, &sc.plan, &base);
    unload();
    load("{" LAYER_MODEL ", \"parallel\": {\"dp\": 8, \"compression\": {\"method\": \"powersgd\","
         " \"rank\": 4}}, \"global_batch\": 16}", 8);
    mem_breakdown lr = {0};
    mem_compute(&sc.model, &sc.plan, &lr);
    unload();
    double pq = 4 * (36864 + 28672) + 128000 + 4096;
    ck_assert_rel(lr.buffers - base.buffers, base.grads + 2 * pq, 1e-12);
}
END_TEST

START_TEST(memory_error_feedback_every_method)
{
    /* Top-k (every transport) and quantisation keep an error-feedback residual too: one
     * gradient-sized bf16 buffer more than the uncompressed plan, nothing else. */
    load("{" LAYER_MODEL ", \"parallel\": {\"dp\": 8}, \"global_batch\": 16}", 8);
    mem_breakdown base = {0};
    mem_compute(&sc.model, &sc.plan, &base);
    unload();
    static const char *const methods[] = {
        "\"allgather\", \"ratio\": 0.1", "\"sparse_allreduce\", \"ratio\": 0.1",
        "\"int8\"", "\"fp8\"", "\"onebit\""};
    for (size_t i = 0; i < sizeof methods / sizeof *methods; i++) {
        char doc[1024];
        snprintf(doc, sizeof doc, "{" LAYER_MODEL ", \"parallel\": {\"dp\": 8, \"compression\": "
                 "{\"method\": %s}}, \"global_batch\": 16}", methods[i]);
        load(doc, 8);
        mem_breakdown m = {0};
        mem_compute(&sc.model, &sc.plan, &m);
        unload();
        ck_assert_rel(m.buffers - base.buffers, base.grads, 1e-12);
        ck_assert_rel(m.peak - base.peak, base.grads, 1e-12);
    }
}
END_TEST

Suite *suite(void)
{
    Suite *s = suite_create("compression_deployed");
    TCase *t = tcase_create("core");
    tcase_set_timeout(t, 30);
    tcase_add_test(t, lowrank_layer_closed_form);
    tcase_add_test(t, lowrank_bytes_per_gpu);
    tcase_add_test(t, topk_ps_against_closed_form);
    tcase_add_test(t, union_limits);
    tcase_add_test(t, bad_input);
    tcase_add_test(t, memory_error_feedback);
    tcase_add_test(t, memory_error_feedback_every_method);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return dt_run_suite(suite()); }
