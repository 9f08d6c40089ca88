/* test_gpu.c - GPU presets, specs from JSON and the roofline.
 * Pins down: the presets' datasheet figures (dense peaks, HBM, NVLink per direction) and default
 * efficiencies; the A100 40 GB as the 80 GB part with its own memory (memory-bound ops slower by
 * the bandwidth ratio, compute-bound ones and attention curves the same); preset names with did-you-mean; objects with a preset plus overrides, fully
 * inline specs, every key validated with its JSON path; reduce_bw following hbm_bw; the
 * roofline (compute bound, memory bound, fp8 falling back to bf16 on A100) to the picosecond;
 * gpu_spec_to_json reading back bit-identical; measured compute tables ("compute"): exact at
 * the points, log-linear interpolation of the achieved rate between them (hand-computed),
 * clamping to the end rates outside, precision-specific and by-bytes tables, every validation
 * error with its path, and round-tripping through gpu_spec_to_json; the measured fused-attention
 * curves (gpu_attention_eff): the FlashAttention-3 paper's H100 figures at their lengths, log2
 * interpolation between them, held ends, the causal backward by the forward's causal ratio, the
 * A100's derived backward, no curve for B200 or an inline spec, "attention_kernels" and a
 * user's own attention efficiency turning them on and off, and their JSON round trip; the
 * head dims 64 and 256 at their measured bars, log2 interpolation between head dims, held
 * ends and series without a panel, and 128 (or none) giving the head-dim-128 curves exactly.
 * Leaves free: the cost figures' values (assumptions), formatting of the unit strings. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "dtsim/gpu.h"
#include "testutil.h"

static cJSON *parse(const char *text)
{
    cJSON *j = NULL;
    dt_error e;
    dt_error_clear(&e);
    ck_assert_int_eq(js_parse_text(text, strlen(text), "g.json", &j, &e), DT_OK);
    return j;
}

START_TEST(preset_figures)
{
    gpu_spec s;
    dt_error e;
    dt_error_clear(&e);
    ck_assert_int_eq(gpu_preset("H100-SXM", &s, &e), DT_OK);
    ck_assert_str_eq(s.name, "H100-SXM");
    ck_assert_rel(s.peak_flops[GPU_BF16], 989.5e12, 1e-15);
    ck_assert_rel(s.peak_flops[GPU_FP8], 1979e12, 1e-15);
    ck_assert_rel(s.peak_flops[GPU_FP32], 67e12, 1e-15);
    ck_assert_rel(s.hbm_bytes, 80.0 * 1073741824.0, 1e-15);
    ck_assert_rel(s.hbm_bw, 3.35e12, 1e-15);
    ck_assert_rel(s.nvlink_bw, 450e9, 1e-15);
    ck_assert_rel(s.reduce_bw, 3.35e12 / 3, 1e-15);
    ck_assert_rel(s.compute_eff[GPU_OP_MATMUL], 0.7, 1e-15);
    ck_assert_rel(s.compute_eff[GPU_OP_ATTENTION], 0.5, 1e-15);
    ck_assert_rel(s.memory_eff, 0.8, 1e-15);
    ck_assert(s.cost_per_hour > 0);

    ck_assert_int_eq(gpu_preset("A100-SXM", &s, &e), DT_OK);
    ck_assert_rel(s.peak_flops[GPU_FP16], 312e12, 1e-15);
    ck_assert_rel(s.peak_flops[GPU_TF32], 156e12, 1e-15);
    ck_assert(s.peak_flops[GPU_FP8] == 0);
    ck_assert_rel(s.hbm_bw, 2039e9, 1e-15);
    ck_assert_rel(s.nvlink_bw, 300e9, 1e-15);

    ck_assert_int_eq(gpu_preset("H200-SXM", &s, &e), DT_OK);
    ck_assert_rel(s.hbm_bytes, 141e9, 1e-15);
    ck_assert_rel(s.hbm_bw, 4.8e12, 1e-15);

    ck_assert_int_eq(gpu_preset("B200", &s, &e), DT_OK);
    ck_assert_rel(s.peak_flops[GPU_BF16], 2250e12, 1e-15);
    ck_assert_rel(s.peak_flops[GPU_FP8], 4500e12, 1e-15);
    ck_assert_rel(s.hbm_bytes, 180e9, 1e-15);
    ck_assert_rel(s.nvlink_bw, 900e9, 1e-15);

    int n = 0;
    for (const char *const *p = gpu_preset_names(); *p; p++) n++;
    ck_assert_int_eq(n, 5);
    ck_assert_int_eq(gpu_preset("H100-SMX", &s, &e), DT_EINPUT);
    ck_assert_msg(strstr(e.msg, "did you mean \"H100-SXM\"") != NULL, "%s", e.msg);
}
END_TEST

/* The A100 40 GB differs from the 80 GB part in its memory only (datasheet): 40 GiB at 1,555 GB/s,
 * the same peaks, SMs, NVLink and attention curves; so a memory-bound op takes 2039/1555 times
 * as long and a compute-bound one the same time. */
START_TEST(preset_a100_40gb)
{
    gpu_spec a, b;
    dt_error e;
    dt_error_clear(&e);
    ck_assert_int_eq(gpu_preset("A100-SXM", &a, &e), DT_OK);
    ck_assert_int_eq(gpu_preset("A100-SXM-40GB", &b, &e), DT_OK);
    ck_assert_str_eq(b.name, "A100-SXM-40GB");
    ck_assert_rel(b.hbm_bytes, 40.0 * 1073741824.0, 1e-15);
    ck_assert_rel(b.hbm_bw, 1555e9, 1e-15);
    ck_assert_rel(b.reduce_bw, 1555e9 / 3, 1e-15);
    ck_assert_rel(b.nvlink_bw, 300e9, 1e-15);
    ck_assert_int_eq(b.sms, 108);
    ck_assert(b.cost_per_hour > 0 && b.cost_per_hour < a.cost_per_hour);
    for (int p = 0; p < GPU_PRECISION_COUNT; p++)
        ck_assert(b.peak_flops[p] == a.peak_flops[p]);
    ck_assert(b.attn_curves > 0 && b.attn_curves != a.attn_curves);
    for (double seq = 512; seq <= 16384; seq *= 2)
        for (int bwd = 0; bwd < 2; bwd++)
            ck_assert(gpu_attention_eff(&b, GPU_ATTN_FA2, seq, 128, true, bwd) ==
                      gpu_attention_eff(&a, GPU_ATTN_FA2, seq, 128, true, bwd));
    /* 1 GB of elementwise traffic: 1e9 / (1555e9 * 0.8) = 803.8585 us against 613.0456 us */
    sim_time_t t40 = gpu_op_time(&b, GPU_OP_ELEMENTWISE, GPU_BF16, 1e6, 1e9);
    sim_time_t t80 = gpu_op_time(&a, GPU_OP_ELEMENTWISE, GPU_BF16, 1e6, 1e9);
    ck_assert_rel((double)t40, 1e9 / (1555e9 * 0.8) * 1e12, 1e-9);
    ck_assert_rel((double)t40 / (double)t80, 2039.0 / 1555.0, 1e-9);
    /* 1 PFLOP of GEMM: 1e15 / (312e12 * 0.7) on both */
    ck_assert(gpu_op_time(&b, GPU_OP_MATMUL, GPU_BF16, 1e15, 1e6) ==
              gpu_op_time(&a, GPU_OP_MATMUL, GPU_BF16, 1e15, 1e6));
    /* its JSON names its own curves and reads back to the same spec */
    cJSON *j = gpu_spec_to_json(&b);
    const cJSON *ak = cJSON_GetObjectItem(j, "attention_kernels");
    ck_assert(cJSON_IsString(ak));
    ck_assert_str_eq(ak->valuestring, "A100-SXM-40GB");
    dt_error e2;
    dt_error_clear(&e2);
    js_ctx ctx = {.file = "g.json", .err = &e2};
    gpu_spec c;
    ck_assert_int_eq(gpu_spec_from_json(&ctx, j, "gpu", &c), DT_OK);
    ck_assert(c.hbm_bw == b.hbm_bw && c.hbm_bytes == b.hbm_bytes && c.attn_curves == b.attn_curves);
    cJSON_Delete(j);
    ck_assert_int_eq(gpu_preset("A100-SXM-40G", &c, &e), DT_EINPUT);
    ck_assert_msg(strstr(e.msg, "did you mean \"A100-SXM-40GB\"") != NULL, "%s", e.msg);
}
END_TEST

START_TEST(spec_from_json)
{
    dt_error e;
    dt_error_clear(&e);
    js_ctx ctx = {.file = "g.json", .err = &e};
    gpu_spec s;
    cJSON *j = parse("{\"a\": \"B200\", \"b\": {\"preset\": \"H100-SXM\", \"hbm\": \"94 GB\", "
                     "\"hbm_bw\": \"3.9 TB/s\", \"efficiency\": {\"matmul\": 0.6}},"
                     "\"c\": {\"name\": \"toy\", \"flops\": {\"fp32\": \"10 TFLOP/s\", \"bf16\": "
                     "\"100 TFLOP/s\"}, \"hbm\": \"16 GiB\", \"hbm_bw\": \"1 TB/s\", "
                     "\"reduce_bw\": \"200 GB/s\", \"cost_per_hour\": 0.5}}");
    ck_assert_int_eq(gpu_spec_from_json(&ctx, cJSON_GetObjectItem(j, "a"), "a", &s), DT_OK);
    ck_assert_str_eq(s.name, "B200");
    ck_assert_int_eq(gpu_spec_from_json(&ctx, cJSON_GetObjectItem(j, "b"), "b", &s), DT_OK);
    ck_assert_str_eq(s.name, "H100-SXM");
    ck_assert_rel(s.hbm_bytes, 94e9, 1e-15);
    ck_assert_rel(s.reduce_bw, 3.9e12 / 3, 1e-15); /* follows the overridden hbm_bw */
    ck_assert_rel(s.compute_eff[GPU_OP_MATMUL], 0.6, 1e-15);
    ck_assert_rel(s.compute_eff[GPU_OP_ATTENTION], 0.5, 1e-15);
    ck_assert_rel(s.peak_flops[GPU_BF16], 989.5e12, 1e-15);
    ck_assert_int_eq(gpu_spec_from_json(&ctx, cJSON_GetObjectItem(j, "c"), "c", &s), DT_OK);
    ck_assert_str_eq(s.name, "toy");
    ck_assert_rel(s.peak_flops[GPU_BF16], 100e12, 1e-15);
    ck_assert(s.peak_flops[GPU_FP8] == 0);
    ck_assert_rel(s.hbm_bytes, 16.0 * 1073741824.0, 1e-15);
    ck_assert_rel(s.reduce_bw, 200e9, 1e-15);
    ck_assert_rel(s.cost_per_hour, 0.5, 1e-15);
    ck_assert_rel(s.memory_eff, 0.8, 1e-15);
    cJSON_Delete(j);
}
END_TEST

static void expect_error(const char *text, const char *path, const char *msg_part)
{
    dt_error e;
    dt_error_clear(&e);
    js_ctx ctx = {.file = "g.json", .err = &e};
    cJSON *j = parse(text);
    gpu_spec s;
    ck_assert_int_eq(gpu_spec_from_json(&ctx, cJSON_GetObjectItem(j, "gpu"), "gpu", &s), DT_EINPUT);
    ck_assert_str_eq(e.file, "g.json");
    ck_assert_msg(strcmp(e.path, path) == 0, "path %s, expected %s (%s)", e.path, path, e.msg);
    ck_assert_msg(strstr(e.msg, msg_part) != NULL, "message: %s", e.msg);
    cJSON_Delete(j);
}

START_TEST(spec_errors)
{
    expect_error("{\"gpu\": \"H100\"}", "gpu", "unknown GPU preset \"H100\"");
    expect_error("{\"gpu\": 3}", "gpu", "expected a GPU preset name");
    expect_error("{\"gpu\": {\"preset\": \"B200\", \"hbm_bandwidth\": 1}}", "gpu.hbm_bandwidth",
                 "unknown key");
    expect_error("{\"gpu\": {\"preset\": \"B20\"}}", "gpu.preset", "did you mean \"B200\"");
    expect_error("{\"gpu\": {\"preset\": \"B200\", \"hbm\": \"80 Gb\"}}", "gpu.hbm", "unknown size unit");
    expect_error("{\"gpu\": {\"preset\": \"B200\", \"flops\": {\"fp4\": 1}}}", "gpu.flops.fp4",
                 "unknown key");
    expect_error("{\"gpu\": {\"preset\": \"B200\", \"efficiency\": {\"matmul\": 1.5}}}",
                 "gpu.efficiency.matmul", "from 0 to 1");
    expect_error("{\"gpu\": {\"flops\": {\"bf16\": \"1 TFLOP/s\"}, \"hbm\": 1, \"hbm_bw\": 1}}",
                 "gpu.flops.fp32", "fp32");
    expect_error("{\"gpu\": {\"flops\": {\"fp32\": \"1 TFLOP/s\"}, \"hbm_bw\": 1}}", "gpu.hbm",
                 "missing required key");
    expect_error("{\"gpu\": {\"preset\": \"B200\", \"hbm_bw\": \"0 GB/s\"}}", "gpu.hbm_bw", "positive");
    expect_error("{\"gpu\": {\"preset\": \"B200\", \"reduce_bw\": \"-1 GB/s\"}}", "gpu.reduce_bw",
                 "non-negative");
}
END_TEST

START_TEST(roofline)
{
    gpu_spec s;
    dt_error e;
    ck_assert_int_eq(gpu_preset("H100-SXM", &s, &e), DT_OK);
    /* Compute bound: 0.7 * 989.5e12 FLOP/s, 692.65e12 FLOP -> exactly 1 s. */
    double f = 0.7 * 989.5e12;
    ck_assert_int_eq(gpu_op_time(&s, GPU_OP_MATMUL, GPU_BF16, f, 1.0), SIM_S);
    /* Memory bound: 0.8 * 3.35e12 B/s; 2.68e9 B -> 1 ms. */
    ck_assert_int_eq(gpu_op_time(&s, GPU_OP_ELEMENTWISE, GPU_BF16, 1.0, 2.68e9), SIM_MS);
    /* The max of the two, not the sum. */
    ck_assert_int_eq(gpu_op_time(&s, GPU_OP_MATMUL, GPU_BF16, f / 1000, 2.68e9), SIM_MS);
    /* Rounded up to whole picoseconds. */
    ck_assert_int_eq(gpu_op_time(&s, GPU_OP_MATMUL, GPU_BF16, 1.0, 0), 1);
    ck_assert_int_eq(gpu_op_time(&s, GPU_OP_MATMUL, GPU_BF16, 0, 0), 0);
    /* fp8 is twice bf16 on H100; A100 has none and falls back to its bf16 rate. */
    ck_assert_int_eq(gpu_op_time(&s, GPU_OP_MATMUL, GPU_FP8, 2 * f, 0), SIM_S);
    gpu_spec a;
    ck_assert_int_eq(gpu_preset("A100-SXM", &a, &e), DT_OK);
    ck_assert_int_eq(gpu_op_time(&a, GPU_OP_MATMUL, GPU_FP8, 0.7 * 312e12, 0), SIM_S);
    ck_assert_int_eq(gpu_op_time(&a, GPU_OP_ATTENTION, GPU_FP16, 0.5 * 312e12, 0), SIM_S);
}
END_TEST

START_TEST(to_json_round_trip)
{
    const char *names[] = {"A100-SXM", "H100-SXM", "H200-SXM", "B200"};
    for (int i = 0; i < 4; i++) {
        gpu_spec s, back;
        dt_error e;
        dt_error_clear(&e);
        ck_assert_int_eq(gpu_preset(names[i], &s, &e), DT_OK);
        s.compute_eff[GPU_OP_MATMUL] = 0.123456789;
        s.hbm_bytes = 12345678901.0;
        s.reduce_bw = i == 3 ? 0 : s.reduce_bw; /* 0: free reductions, also round-trips */
        cJSON *j = gpu_spec_to_json(&s);
        js_ctx ctx = {.file = "rt", .err = &e};
        ck_assert_int_eq(gpu_spec_from_json(&ctx, j, "gpu", &back), DT_OK);
        ck_assert_msg(memcmp(&s, &back, sizeof s) == 0, "%s does not round-trip", names[i]);
        cJSON_Delete(j);
    }
    gpu_precision p;
    ck_assert_int_eq(gpu_precision_parse("bf16", &p), DT_OK);
    ck_assert_int_eq(p, GPU_BF16);
    ck_assert_str_eq(gpu_precision_name(GPU_FP8), "fp8");
    ck_assert_int_eq(gpu_precision_parse("fp64", &p), DT_EINPUT);
}
END_TEST

/* A spec with the given "compute" object on an H100 preset. */
static gpu_spec table_spec(const char *compute)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "{\"preset\": \"H100-SXM\", \"compute\": %s}", compute);
    cJSON *j = parse(buf);
    dt_error e;
    dt_error_clear(&e);
    js_ctx ctx = {.file = "g.json", .err = &e};
    gpu_spec s;
    int rc = gpu_spec_from_json(&ctx, j, "gpu", &s);
    ck_assert_msg(rc == DT_OK, "%s: %s", e.path, e.msg);
    cJSON_Delete(j);
    return s;
}

START_TEST(table_interpolation)
{
    /* 1 TFLOP in 4 ms (250 TFLOP/s), 100 TFLOP in 200 ms (500 TFLOP/s). */
    gpu_spec s = table_spec("{\"matmul\": [{\"flops\": \"1 TFLOP\", \"time\": \"4 ms\"},"
                            " {\"flops\": \"100 TFLOP\", \"time\": \"200 ms\"}]}");
    ck_assert_int_eq(s.table[GPU_OP_MATMUL].n, 2);
    ck_assert_int_eq(s.table[GPU_OP_ATTENTION].n, 0);
    /* exact at the points, whatever the bytes (the measurement holds the memory traffic) */
    ck_assert_int_eq(gpu_op_time(&s, GPU_OP_MATMUL, GPU_BF16, 1e12, 1e13), 4 * SIM_MS);
    ck_assert_int_eq(gpu_op_time(&s, GPU_OP_MATMUL, GPU_BF16, 1e14, 0), 200 * SIM_MS);
    /* 10 TFLOP is halfway in log: rate 375 TFLOP/s, 26.666... ms, rounded up to the ps */
    ck_assert_int_eq(gpu_op_time(&s, GPU_OP_MATMUL, GPU_BF16, 1e13, 0), 26666666667LL);
    /* a quarter of the way (10^0.5 TFLOP): rate 312.5 TFLOP/s */
    double w = 1e12 * sqrt(10.0);
    ck_assert_rel(gpu_table_time(&s.table[GPU_OP_MATMUL], w), w / 312.5e12, 1e-12);
    /* clamped to the end points' rates outside */
    ck_assert_int_eq(gpu_op_time(&s, GPU_OP_MATMUL, GPU_BF16, 1e11, 0), 400 * SIM_US);
    ck_assert_int_eq(gpu_op_time(&s, GPU_OP_MATMUL, GPU_BF16, 1e15, 0), 2 * SIM_S);
    /* no FLOPs to look up: the roofline's memory term, 5e9 B at 2.68e12 B/s, rounded up */
    ck_assert_int_eq(gpu_op_time(&s, GPU_OP_MATMUL, GPU_BF16, 0, 5e9), 1865671642LL);
    ck_assert(gpu_table_time(&s.table[GPU_OP_MATMUL], 0) == 0);
    /* every precision (no "precision" given); other classes keep the roofline */
    ck_assert_int_eq(gpu_op_time(&s, GPU_OP_MATMUL, GPU_FP8, 1e12, 0), 4 * SIM_MS);
    ck_assert_int_eq(gpu_op_time(&s, GPU_OP_ATTENTION, GPU_BF16, 0.5 * 989.5e12, 0), SIM_S);

    /* a bf16-only table: fp8 stays on the roofline (0.7 * 1979 TFLOP/s) */
    s = table_spec("{\"matmul\": {\"precision\": \"bf16\", \"points\":"
                   " [{\"flops\": 1e12, \"time\": 0.001}]}}");
    ck_assert_int_eq(s.table[GPU_OP_MATMUL].precision, GPU_BF16);
    ck_assert_int_eq(gpu_op_time(&s, GPU_OP_MATMUL, GPU_BF16, 3e12, 0), 3 * SIM_MS);
    ck_assert_int_eq(gpu_op_time(&s, GPU_OP_MATMUL, GPU_FP8, 0.7 * 1979e12, 0), SIM_S);

    /* by bytes: an elementwise table at 1 TB/s ignores the op's FLOPs */
    s = table_spec("{\"elementwise\": [{\"bytes\": \"1 GB\", \"time\": \"1 ms\"}]}");
    ck_assert(s.table[GPU_OP_ELEMENTWISE].by_bytes);
    ck_assert_int_eq(gpu_op_time(&s, GPU_OP_ELEMENTWISE, GPU_BF16, 1e15, 2e9), 2 * SIM_MS);
}
END_TEST

START_TEST(table_errors)
{
    const char *pre = "{\"gpu\": {\"preset\": \"H100-SXM\", \"compute\": ";
    char buf[8192];
#define TERR(body, path, msg)                                                  \
    do {                                                                       \
        snprintf(buf, sizeof buf, "%s%s}}", pre, body);                        \
        expect_error(buf, path, msg);                                          \
    } while (0)
    TERR("{\"matmull\": []}", "gpu.compute.matmull", "did you mean");
    TERR("[]", "gpu.compute", "object");
    TERR("{\"matmul\": []}", "gpu.compute.matmul", "1 to 32 measured points, found 0");
    TERR("{\"matmul\": 3}", "gpu.compute.matmul", "expected an array of measured points");
    TERR("{\"matmul\": [{\"flops\": 2e12, \"time\": 1}, {\"flops\": 1e12, \"time\": 1}]}",
         "gpu.compute.matmul[1].flops", "must increase");
    TERR("{\"matmul\": [{\"flops\": 1e12, \"time\": 1}, {\"flops\": 1e12, \"time\": 2}]}",
         "gpu.compute.matmul[1].flops", "must increase");
    TERR("{\"matmul\": [{\"flops\": 1e12, \"time\": \"0 ms\"}]}", "gpu.compute.matmul[0].time",
         "positive");
    TERR("{\"matmul\": [{\"flops\": 0, \"time\": 1}]}", "gpu.compute.matmul[0].flops", "positive");
    TERR("{\"matmul\": [{\"flops\": \"1 GB\", \"time\": 1}]}", "gpu.compute.matmul[0].flops",
         "unit");
    TERR("{\"matmul\": [{\"flops\": 1e12}]}", "gpu.compute.matmul[0].time", "missing required key");
    TERR("{\"matmul\": [{\"flops\": 1e12, \"time\": 1, \"bytes\": 1}]}",
         "gpu.compute.matmul[0].flops", "unknown key");
    TERR("{\"optimizer\": [{\"bytes\": 1e9, \"time\": 1}, {\"flops\": 1e12, \"time\": 2}]}",
         "gpu.compute.optimizer[1]", "same key");
    TERR("{\"attention\": {\"precision\": \"bf16\"}}", "gpu.compute.attention.points", "required");
    TERR("{\"attention\": {\"precision\": \"fp4\", \"points\": []}}",
         "gpu.compute.attention.precision", "fp4");
    TERR("{\"attention\": {\"precison\": \"bf16\", \"points\": []}}",
         "gpu.compute.attention.precison", "did you mean");
    /* 33 points: one too many */
    char pts[4096] = "{\"matmul\": [";
    for (int i = 0; i < 33; i++) {
        size_t n = strlen(pts);
        snprintf(pts + n, sizeof pts - n, "%s{\"flops\": %d, \"time\": 1}", i ? ", " : "", i + 1);
    }
    strcat(pts, "]}");
    TERR(pts, "gpu.compute.matmul", "1 to 32 measured points, found 33");
#undef TERR
}
END_TEST

START_TEST(table_round_trip)
{
    gpu_spec s = table_spec(
        "{\"matmul\": [{\"flops\": \"1 TFLOP\", \"time\": \"4.1 ms\"},"
        "  {\"flops\": \"3.3 TFLOP\", \"time\": \"7.77 ms\"}],"
        " \"attention\": {\"precision\": \"fp8\", \"points\": [{\"flops\": 1e9, \"time\": 1e-5}]},"
        " \"optimizer\": [{\"bytes\": \"1 GiB\", \"time\": \"0.9 ms\"}]}");
    cJSON *j = gpu_spec_to_json(&s);
    dt_error e;
    dt_error_clear(&e);
    js_ctx ctx = {.file = "rt", .err = &e};
    gpu_spec back;
    ck_assert_int_eq(gpu_spec_from_json(&ctx, j, "gpu", &back), DT_OK);
    ck_assert(memcmp(&s, &back, sizeof s) == 0);
    cJSON_Delete(j);
    /* no tables: no "compute" key written */
    ck_assert_int_eq(gpu_preset("B200", &s, &e), DT_OK);
    j = gpu_spec_to_json(&s);
    ck_assert_ptr_null(cJSON_GetObjectItem(j, "compute"));
    cJSON_Delete(j);
}
END_TEST

/* Hand-computed from the tables in gpu.c (FlashAttention-3 paper, figures 5 and 6, TFLOP/s). */
START_TEST(attention_curves)
{
    gpu_spec h, a, b;
    dt_error e;
    dt_error_clear(&e);
    ck_assert_int_eq(gpu_preset("H100-SXM", &h, &e), DT_OK);
    ck_assert_int_eq(gpu_preset("A100-SXM", &a, &e), DT_OK);
    ck_assert_int_eq(gpu_preset("B200", &b, &e), DT_OK);
    /* at the measured lengths: the bars themselves over the 989 TFLOP/s of the figures */
    ck_assert_rel(gpu_attention_eff(&h, GPU_ATTN_FA2, 2048, 128, true, false), 298.0 / 989, 1e-15);
    ck_assert_rel(gpu_attention_eff(&h, GPU_ATTN_FA2, 1024, 128, false, false), 350.0 / 989, 1e-15);
    ck_assert_rel(gpu_attention_eff(&h, GPU_ATTN_FA2, 4096, 128, false, true), 310.0 / 989, 1e-15);
    ck_assert_rel(gpu_attention_eff(&h, GPU_ATTN_CUDNN, 8192, 128, true, false), 529.0 / 989, 1e-15);
    /* causal backward: the non-causal backward x the forward's causal / non-causal ratio */
    ck_assert_rel(gpu_attention_eff(&h, GPU_ATTN_CUDNN, 16384, 128, true, true),
                  516.0 * (539.0 / 595.0) / 989, 1e-14);
    /* between: linear in log2(seq); 3,072 is 0.585 of the way from 2k to 4k */
    double f = log2(3072.0 / 2048.0);
    ck_assert_rel(gpu_attention_eff(&h, GPU_ATTN_FA2, 3072, 128, true, false),
                  (298 + f * (319 - 298)) / 989.0, 1e-14);
    /* held at the ends: shorter than 512 and longer than 16k */
    ck_assert_rel(gpu_attention_eff(&h, GPU_ATTN_FA2, 128, 128, true, false), 191.0 / 989, 1e-15);
    ck_assert_rel(gpu_attention_eff(&h, GPU_ATTN_CUDNN, 131072, 128, true, false), 539.0 / 989, 1e-15);
    /* A100: forward measured at 1k and 4k; its backward is the forward x the H100 FA2
     * backward/forward ratio (1k: 260/350, 4k: 310/368); 2k is half way in log2 */
    ck_assert_rel(gpu_attention_eff(&a, GPU_ATTN_FA2, 1024, 128, true, false), 143.7 / 312, 1e-15);
    ck_assert_rel(gpu_attention_eff(&a, GPU_ATTN_FA2, 2048, 128, false, false),
                  (179.1 + 184.0) / 2 / 312, 1e-14);
    ck_assert_rel(gpu_attention_eff(&a, GPU_ATTN_FA2, 4096, 128, false, true),
                  184.0 * 310 / 368 / 312, 1e-14);
    ck_assert_rel(gpu_attention_eff(&a, GPU_ATTN_CUDNN, 4096, 128, true, false), 156.3 / 312, 1e-15);
    /* no curve (B200), or no length: the classes' efficiencies */
    ck_assert_rel(gpu_attention_eff(&b, GPU_ATTN_FA2, 2048, 128, true, false), 0.5, 1e-15);
    ck_assert_rel(gpu_attention_eff(&h, GPU_ATTN_FA2, 0, 128, true, true),
                  h.compute_eff[GPU_OP_ATTENTION_BWD], 1e-15);

    /* a user's own attention efficiency replaces the curves; the backward follows it */
    js_ctx ctx = {"g.json", &e};
    gpu_spec s;
    cJSON *j = parse("{\"preset\": \"H100-SXM\", \"efficiency\": {\"attention\": 0.3}}");
    ck_assert_int_eq(gpu_spec_from_json(&ctx, j, "gpu", &s), DT_OK);
    ck_assert_int_eq(s.attn_curves, 0);
    ck_assert_rel(s.compute_eff[GPU_OP_ATTENTION_BWD], 0.3, 1e-15);
    ck_assert_rel(gpu_attention_eff(&s, GPU_ATTN_FA2, 2048, 128, true, true), 0.3, 1e-15);
    cJSON_Delete(j);
    /* an inline spec names the curves it wants; the JSON round trip keeps them */
    j = parse("{\"flops\": {\"fp32\": \"67 TFLOP/s\", \"bf16\": \"989.5 TFLOP/s\"}, \"hbm\": "
              "\"80 GB\", \"hbm_bw\": \"3 TB/s\", \"attention_kernels\": \"H100-SXM\"}");
    ck_assert_int_eq(gpu_spec_from_json(&ctx, j, "gpu", &s), DT_OK);
    ck_assert_rel(gpu_attention_eff(&s, GPU_ATTN_FA2, 2048, 128, true, false), 298.0 / 989, 1e-15);
    cJSON_Delete(j);
    cJSON *w = gpu_spec_to_json(&h);
    ck_assert_str_eq(cJSON_GetObjectItem(w, "attention_kernels")->valuestring, "H100-SXM");
    ck_assert_int_eq(gpu_spec_from_json(&ctx, w, "gpu", &s), DT_OK);
    ck_assert_int_eq(s.attn_curves, h.attn_curves);
    for (int c = 0; c < GPU_OP_CLASS_COUNT; c++)
        ck_assert(s.compute_eff[c] == h.compute_eff[c]);
    cJSON_Delete(w);
    /* "none" turns them off; a preset without curves is refused with its path */
    j = parse("{\"preset\": \"H100-SXM\", \"attention_kernels\": \"none\"}");
    ck_assert_int_eq(gpu_spec_from_json(&ctx, j, "gpu", &s), DT_OK);
    ck_assert_int_eq(s.attn_curves, 0);
    cJSON_Delete(j);
    j = parse("{\"preset\": \"H100-SXM\", \"attention_kernels\": \"B200\"}");
    ck_assert_int_eq(gpu_spec_from_json(&ctx, j, "gpu", &s), DT_EINPUT);
    ck_assert_str_eq(e.path, "gpu.attention_kernels");
    cJSON_Delete(j);
}
END_TEST

/* Head dims 64 and 256 (the same figures' other panels, only the readings two transcriptions
 * agree on: docs/workloads.md, "Attention kernels"); 128 exactly the curves above. */
START_TEST(attention_head_dims)
{
    gpu_spec h, a, h2;
    dt_error e;
    dt_error_clear(&e);
    ck_assert_int_eq(gpu_preset("H100-SXM", &h, &e), DT_OK);
    ck_assert_int_eq(gpu_preset("H200-SXM", &h2, &e), DT_OK);
    ck_assert_int_eq(gpu_preset("A100-SXM", &a, &e), DT_OK);
    /* at measured lengths and head dims: the bars over 989 */
    ck_assert_rel(gpu_attention_eff(&h, GPU_ATTN_FA2, 1024, 64, true, false), 229.0 / 989, 1e-15);
    ck_assert_rel(gpu_attention_eff(&h, GPU_ATTN_CUDNN, 16384, 64, true, false), 388.0 / 989,
                  1e-15);
    ck_assert_rel(gpu_attention_eff(&h, GPU_ATTN_FA2, 512, 64, false, true), 198.0 / 989, 1e-15);
    ck_assert_rel(gpu_attention_eff(&h, GPU_ATTN_CUDNN, 2048, 64, false, true), 395.0 / 989,
                  1e-15);
    ck_assert_rel(gpu_attention_eff(&h, GPU_ATTN_FA2, 4096, 256, false, false), 323.0 / 989,
                  1e-15);
    ck_assert_rel(gpu_attention_eff(&h, GPU_ATTN_CUDNN, 512, 256, false, false), 470.0 / 989,
                  1e-15);
    /* the 64 backward is confirmed to 2k: held there beyond it */
    ck_assert_rel(gpu_attention_eff(&h, GPU_ATTN_FA2, 8192, 64, false, true), 264.0 / 989, 1e-15);
    /* a series without a panel at that head dim: the nearest measured one's (non-causal forward
     * at 64 and causal forward and backward at 256: 128's) */
    ck_assert_rel(gpu_attention_eff(&h, GPU_ATTN_FA2, 1024, 64, false, false), 350.0 / 989, 1e-15);
    ck_assert_rel(gpu_attention_eff(&h, GPU_ATTN_FA2, 2048, 256, true, false), 298.0 / 989, 1e-15);
    ck_assert_rel(gpu_attention_eff(&h, GPU_ATTN_CUDNN, 4096, 256, false, true), 499.0 / 989,
                  1e-15);
    /* the causal backward's ratio from panels that measured both forwards (128 only) */
    ck_assert_rel(gpu_attention_eff(&h, GPU_ATTN_CUDNN, 1024, 64, true, true),
                  348.0 * 410 / 574 / 989, 1e-14);
    /* between 64 and 128: linear in log2(head dim); 96 is log2(1.5) = 0.585 of the way, and
     * at 3,072 tokens the same share between 2k and 4k in each panel */
    double f = log2(96.0 / 64.0);
    ck_assert_rel(gpu_attention_eff(&h, GPU_ATTN_FA2, 2048, 96, true, false),
                  (262 + f * (298 - 262)) / 989.0, 1e-14);
    double p64 = 262 + f * (284 - 262), p128 = 298 + f * (319 - 298);
    ck_assert_rel(gpu_attention_eff(&h, GPU_ATTN_FA2, 3072, 96, true, false),
                  (p64 + f * (p128 - p64)) / 989.0, 1e-14);
    /* between 128 and 256: 192 is log2(1.5) of the way too */
    ck_assert_rel(gpu_attention_eff(&h, GPU_ATTN_CUDNN, 1024, 192, false, false),
                  (574 + f * (546 - 574)) / 989.0, 1e-14);
    /* held outside the measured head dims */
    ck_assert_rel(gpu_attention_eff(&h, GPU_ATTN_FA2, 2048, 32, true, false), 262.0 / 989, 1e-15);
    ck_assert_rel(gpu_attention_eff(&h, GPU_ATTN_FA2, 2048, 512, false, false), 321.0 / 989,
                  1e-15);
    /* 128, and no head dim (<= 0), are today's curves exactly, on the H100 and the H200; the
     * A100's one panel is every head dim's */
    for (double seq = 256; seq <= 32768; seq *= 2)
        for (int k = 0; k < GPU_ATTN_KERNEL_COUNT; k++)
            for (int m = 0; m < 4; m++) {
                bool causal = m & 1, bwd = m & 2;
                double e128 = gpu_attention_eff(&h, (gpu_attn_kernel)k, seq, 128, causal, bwd);
                ck_assert(gpu_attention_eff(&h, (gpu_attn_kernel)k, seq, 0, causal, bwd) == e128);
                ck_assert(gpu_attention_eff(&h2, (gpu_attn_kernel)k, seq, 128, causal, bwd) ==
                          e128);
                ck_assert(gpu_attention_eff(&h2, (gpu_attn_kernel)k, seq, 64, causal, bwd) ==
                          gpu_attention_eff(&h, (gpu_attn_kernel)k, seq, 64, causal, bwd));
                ck_assert(gpu_attention_eff(&a, (gpu_attn_kernel)k, seq, 64, causal, bwd) ==
                          gpu_attention_eff(&a, (gpu_attn_kernel)k, seq, 128, causal, bwd));
            }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("gpu");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, preset_figures);
    tcase_add_test(tc, preset_a100_40gb);
    tcase_add_test(tc, spec_from_json);
    tcase_add_test(tc, spec_errors);
    tcase_add_test(tc, roofline);
    tcase_add_test(tc, to_json_round_trip);
    tcase_add_test(tc, table_interpolation);
    tcase_add_test(tc, table_errors);
    tcase_add_test(tc, table_round_trip);
    tcase_add_test(tc, attention_curves);
    tcase_add_test(tc, attention_head_dims);
    suite_add_tcase(s, tc);
    return dt_run_suite(s);
}
