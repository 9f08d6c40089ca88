/* test_gemm.c - the GEMM shape model: tile and wave quantization over the SMs, and the time of
 * a set of GEMMs (docs/workloads.md, "GEMM shapes").
 * Pins down, against hand-computed cases: the presets' SM counts (108, 132, 132, 148) and their
 * validation in a spec ("sms", 0 = unknown, bad values located), the tile ("gemm_tile", default
 * [256, 128], bad values located); the quantization factor of
 * m 4096 x n 3072 with 256x128 tiles - 384 tiles, 3 waves on 132 SMs (32/33), 4 on 108 (8/9),
 * 3 on 148 (32/37); the better orientation chosen (4100 x 3072: 128x256 fills 3 waves, 256x128
 * would need 4); an exact fit (33,792 x 128 on 132 SMs: 1); a lone tile (128 x 128: one SM of
 * 132 busy); sms 0 = no quantization; a 128 x 128 tile (768 tiles, 6 waves); the time of 4096 x 3072 x 8192 on an H100 (2mnk /
 * (0.7 x 989.5 TFLOP/s x 32/33), to the picosecond), counts multiplying it, a memory-bound
 * shape at its bytes, shapes with no work ignored, fp8 at twice bf16; a no_fp8 GEMM under fp8
 * at the bf16 time (compute and 2-byte memory bound, beside an fp8 GEMM in one set, a bf16-only
 * table, a GPU without fp8); a matmul table looked up
 * per GEMM (two 1-TFLOP GEMMs take twice the 1-TFLOP point, not the table at 2 TFLOP).
 * Leaves free: which shapes a transformer has (tests/unit/workload/test_gemm_shapes.c). */
#include <stdio.h>
#include <string.h>

#include "dtsim/gpu.h"
#include "testutil.h"

static gpu_spec preset(const char *name)
{
    gpu_spec s;
    dt_error e;
    dt_error_clear(&e);
    ck_assert_int_eq(gpu_preset(name, &s, &e), DT_OK);
    return s;
}

START_TEST(preset_sms)
{
    ck_assert_int_eq(preset("A100-SXM").sms, 108);
    ck_assert_int_eq(preset("H100-SXM").sms, 132);
    ck_assert_int_eq(preset("H200-SXM").sms, 132);
    ck_assert_int_eq(preset("B200").sms, 148);
}
END_TEST

static int spec_text(const char *text, gpu_spec *s, dt_error *e)
{
    cJSON *j = NULL;
    dt_error_clear(e);
    ck_assert_int_eq(js_parse_text(text, strlen(text), "g.json", &j, e), DT_OK);
    js_ctx ctx = {.file = "g.json", .err = e};
    int rc = gpu_spec_from_json(&ctx, cJSON_GetObjectItemCaseSensitive(j, "gpu"), "gpu", s);
    cJSON_Delete(j);
    return rc;
}

START_TEST(spec_sms)
{
    gpu_spec s;
    dt_error e;
    ck_assert_int_eq(spec_text("{\"gpu\": {\"preset\": \"H100-SXM\", \"sms\": 114}}", &s, &e), DT_OK);
    ck_assert_int_eq(s.sms, 114);
    /* an inline spec without it: unknown, no quantization */
    ck_assert_int_eq(spec_text("{\"gpu\": {\"flops\": {\"fp32\": 1e12}, \"hbm\": 1e9, "
                               "\"hbm_bw\": 1e12}}", &s, &e), DT_OK);
    ck_assert_int_eq(s.sms, 0);
    const char *bad[] = {"{\"gpu\": {\"preset\": \"B200\", \"sms\": 13.5}}",
                         "{\"gpu\": {\"preset\": \"B200\", \"sms\": -1}}",
                         "{\"gpu\": {\"preset\": \"B200\", \"sms\": 100000}}",
                         "{\"gpu\": {\"preset\": \"B200\", \"sms\": \"148\"}}"};
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(spec_text(bad[i], &s, &e), DT_EINPUT);
        ck_assert_str_eq(e.path, "gpu.sms");
    }
    ck_assert_int_eq(s.gemm_tile[0], 256); /* the default tile, inline or preset */
    ck_assert_int_eq(s.gemm_tile[1], 128);
    ck_assert_int_eq(spec_text("{\"gpu\": {\"preset\": \"H100-SXM\", \"gemm_tile\": [128, 64]}}",
                               &s, &e), DT_OK);
    ck_assert(s.gemm_tile[0] == 128 && s.gemm_tile[1] == 64);
    const char *badt[][2] = {{"{\"gpu\": {\"preset\": \"B200\", \"gemm_tile\": [256]}}", "gpu.gemm_tile"},
                             {"{\"gpu\": {\"preset\": \"B200\", \"gemm_tile\": 256}}", "gpu.gemm_tile"},
                             {"{\"gpu\": {\"preset\": \"B200\", \"gemm_tile\": [256, 0]}}", "gpu.gemm_tile[1]"},
                             {"{\"gpu\": {\"preset\": \"B200\", \"gemm_tile\": [12.5, 8]}}", "gpu.gemm_tile[0]"}};
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(spec_text(badt[i][0], &s, &e), DT_EINPUT);
        ck_assert_str_eq(e.path, badt[i][1]);
    }
    /* written back and read bit-identical, the SM count and tile included */
    s = preset("B200");
    s.sms = 77;
    s.gemm_tile[0] = 192;
    cJSON *j = gpu_spec_to_json(&s);
    gpu_spec back;
    js_ctx ctx = {.file = "rt", .err = &e};
    ck_assert_int_eq(gpu_spec_from_json(&ctx, j, "gpu", &back), DT_OK);
    ck_assert(memcmp(&s, &back, sizeof s) == 0);
    cJSON_Delete(j);
}
END_TEST

/* The quantization of an m x n output on an H100 given `sms` SMs and the default tile. */
static double q(int sms, double m, double n)
{
    gpu_spec s = preset("H100-SXM");
    s.sms = sms;
    return gpu_gemm_quantization(&s, m, n);
}

START_TEST(quantization)
{
    /* 4096 x 3072 in 256x128 tiles: 16 x 24 = 384 (128x256: 32 x 12, the same) */
    ck_assert_rel(q(132, 4096, 3072), 384.0 / (3 * 132), 1e-15); /* 32/33 */
    ck_assert_rel(q(108, 4096, 3072), 384.0 / (4 * 108), 1e-15); /* 8/9 */
    ck_assert_rel(q(148, 4096, 3072), 384.0 / (3 * 148), 1e-15); /* 32/37 */
    /* 4100 rows: 256x128 needs 17 x 24 = 408 tiles (4 waves), 128x256 33 x 12 = 396 (exactly
     * 3 waves); the useful fraction is the output over 3 waves of 128x256 */
    ck_assert_rel(q(132, 4100, 3072), 4100.0 * 3072 / (3 * 132 * 32768.0), 1e-15);
    /* one wave exactly: 132 tiles of 256x128 */
    ck_assert_rel(q(132, 132 * 256, 128), 1, 1e-15);
    /* a lone 128 x 128 output is one square tile: one SM of 132 busy */
    ck_assert_rel(q(132, 128, 128), 1.0 / 132, 1e-15);
    /* unknown SM count: no quantization */
    ck_assert(q(0, 4100, 3072) == 1);
    /* another tile: 128 x 128 cuts 4096 x 3072 into 32 x 24 = 768 tiles, 5.8 waves of 132 */
    gpu_spec t = preset("H100-SXM");
    t.gemm_tile[0] = t.gemm_tile[1] = 128;
    ck_assert_rel(gpu_gemm_quantization(&t, 4096, 3072), 768.0 / (6 * 132), 1e-15);
}
END_TEST

START_TEST(gemm_time)
{
    gpu_spec h = preset("H100-SXM");
    /* 2 x 4096 x 3072 x 8192 = 206,158,430,208 FLOP at 0.7 x 989.5 TFLOP/s x 32/33:
     * 306,938,397.68 ps, rounded up */
    gpu_gemm g = {4096, 3072, 8192, 1, 1, false};
    ck_assert_int_eq(gpu_gemm_time(&h, GPU_BF16, &g, 1), 306938398LL);
    g.count = 3;
    ck_assert_int_eq(gpu_gemm_time(&h, GPU_BF16, &g, 1), 920815193LL); /* 3 x, rounded once */
    /* fp8 at twice the rate */
    g.count = 1;
    ck_assert_int_eq(gpu_gemm_time(&h, GPU_FP8, &g, 1), 153469199LL);
    /* without an SM count, the flat roofline of the same FLOPs */
    gpu_spec flat = h;
    flat.sms = 0;
    ck_assert_int_eq(gpu_gemm_time(&flat, GPU_BF16, &g, 1),
                     gpu_op_time(&flat, GPU_OP_MATMUL, GPU_BF16, 2.0 * 4096 * 3072 * 8192, 0));
    /* memory bound: 33,792 x 128 x 64 is 0.80 us of compute (one full wave) but moves
     * 2 x (33792 x 64 + 64 x 128 + 33792 x 128) = 12,992,512 B at 0.8 x 3.35 TB/s: 4.848 us */
    gpu_gemm mb = {33792, 128, 64, 1, 1, false};
    ck_assert_int_eq(gpu_gemm_time(&h, GPU_BF16, &mb, 1), 4847953LL);
    /* a set sums its shapes; a shape without work adds nothing */
    gpu_gemm set[3] = {{4096, 3072, 8192, 1, 1, false},
                       {33792, 128, 64, 1, 1, false},
                       {4096, 0, 8192, 1, 1, false}};
    ck_assert_int_eq(gpu_gemm_time(&h, GPU_BF16, set, 3), 306938398LL + 4847952LL);
    ck_assert_int_eq(gpu_gemm_time(&h, GPU_BF16, set, 0), 0);
}
END_TEST

START_TEST(gemm_no_fp8)
{
    gpu_spec h = preset("H100-SXM");
    /* the 4096 x 3072 x 8192 GEMM above kept in 16 bits: under fp8 the bf16 time (0.7 x 989.5
     * TFLOP/s x 32/33: 306,938,397.68 ps), not fp8's 153,469,198.84; under bf16 unchanged */
    gpu_gemm w = {4096, 3072, 8192, 1, 1, true};
    ck_assert_int_eq(gpu_gemm_time(&h, GPU_FP8, &w, 1), 306938398LL);
    ck_assert_int_eq(gpu_gemm_time(&h, GPU_BF16, &w, 1), 306938398LL);
    /* beside an fp8 GEMM of the same shape in one set: each at its own rate, rounded once,
     * 153,469,198.84 + 306,938,397.68 = 460,407,596.52 ps */
    gpu_gemm set[2] = {{4096, 3072, 8192, 1, 1, false}, {4096, 3072, 8192, 1, 1, true}};
    ck_assert_int_eq(gpu_gemm_time(&h, GPU_FP8, set, 2), 460407597LL);
    /* memory bound: its operands are 2-byte elements, 12,992,512 B at 0.8 x 3.35 TB/s:
     * 4,847,952.2 ps as under bf16; the fp8 GEMM moves half (1 byte) */
    gpu_gemm mb = {33792, 128, 64, 1, 1, true};
    ck_assert_int_eq(gpu_gemm_time(&h, GPU_FP8, &mb, 1), 4847953LL);
    mb.no_fp8 = false;
    ck_assert_int_eq(gpu_gemm_time(&h, GPU_FP8, &mb, 1), 2423977LL);
    /* a matmul table for bf16 only times the 16-bit GEMM under fp8 (1 TFLOP in 4 ms), and
     * leaves the fp8 one on the roofline */
    const char *text = "{\"gpu\": {\"preset\": \"H100-SXM\", \"compute\": {\"matmul\": "
                       "{\"precision\": \"bf16\", \"points\": ["
                       "{\"flops\": \"1 TFLOP\", \"time\": \"4 ms\"},"
                       " {\"flops\": \"100 TFLOP\", \"time\": \"200 ms\"}]}}}}";
    gpu_spec s;
    dt_error e;
    ck_assert_int_eq(spec_text(text, &s, &e), DT_OK);
    gpu_gemm g = {1e4, 1e4, 5000, 1, 1, true};
    ck_assert_int_eq(gpu_gemm_time(&s, GPU_FP8, &g, 1), 4 * SIM_MS);
    g.no_fp8 = false;
    ck_assert_int_eq(gpu_gemm_time(&s, GPU_FP8, &g, 1),
                     gpu_gemm_time(&h, GPU_FP8, &g, 1));
    /* a GPU without fp8 (A100) runs both at bf16 */
    gpu_spec a = preset("A100-SXM");
    ck_assert_int_eq(gpu_gemm_time(&a, GPU_FP8, &w, 1), gpu_gemm_time(&a, GPU_BF16, set, 1));
}
END_TEST

START_TEST(table_per_gemm)
{
    /* 1 TFLOP in 4 ms, 100 TFLOP in 200 ms (test_gpu.c's table) */
    const char *text = "{\"gpu\": {\"preset\": \"H100-SXM\", \"compute\": {\"matmul\": ["
                       "{\"flops\": \"1 TFLOP\", \"time\": \"4 ms\"},"
                       " {\"flops\": \"100 TFLOP\", \"time\": \"200 ms\"}]}}}";
    gpu_spec s;
    dt_error e;
    ck_assert_int_eq(spec_text(text, &s, &e), DT_OK);
    /* two GEMMs of 2 x 10^4 x 10^4 x 5000 = 1 TFLOP each: the table at 1 TFLOP, twice
     * (a lookup of the op's 2 TFLOP would give 6.95 ms) */
    gpu_gemm g = {1e4, 1e4, 5000, 2, 1, false};
    ck_assert_int_eq(gpu_gemm_time(&s, GPU_BF16, &g, 1), 8 * SIM_MS);
    ck_assert_int_lt(gpu_op_time(&s, GPU_OP_MATMUL, GPU_BF16, 2e12, 0), 7 * SIM_MS);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("gemm");
    TCase *tc = tcase_create("shapes");
    tcase_add_test(tc, preset_sms);
    tcase_add_test(tc, spec_sms);
    tcase_add_test(tc, quantization);
    tcase_add_test(tc, gemm_time);
    tcase_add_test(tc, gemm_no_fp8);
    tcase_add_test(tc, table_per_gemm);
    suite_add_tcase(s, tc);
    return dt_run_suite(s);
}
