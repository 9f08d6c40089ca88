/* test_cal_probe.c - the compute probe's host half (kernels/cal_probe.c), no GPU needed.
 * Pins down: the default shapes (one Megatron 1.7B layer's GEMMs as docs/workloads.md shapes
 * their gradients, and 8192^3); the shape-file parser's acceptance and its errors (file, JSON
 * path, expected, found); the device-name-to-preset rule (PCIe and NVL H100s match no preset);
 * the report's arithmetic against figures worked out by hand from the H100-SXM preset (989.5
 * TFLOP/s bf16, 132 SMs, tiles 256 x 128 and 128 x 128, matmul efficiency 0.7, 3.35 TB/s at
 * 0.8): quantization, predicted time, compute or memory bound, measured/predicted, implied
 * efficiency, sustained first/last, and the suggested override; and that a measurement read
 * back from JSON gives the same report. Leaves free: the timings themselves (test_probe_cuda). */
#include <stdio.h>
#include <string.h>

#include "dtsim/gpu.h"
#include "dtsim/probe.h"
#include "testutil.h"

#define PEAK 989.5e12
#define SMS 132.0

static cJSON *get(const cJSON *o, const char *path)
{
    /* "a.b.c" through objects */
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    const cJSON *v = o;
    for (char *t = strtok(buf, "."); t && v; t = strtok(NULL, ".")) v = cJSON_GetObjectItemCaseSensitive(v, t);
    ck_assert_msg(v != NULL, "missing %s", path);
    return (cJSON *)v;
}

static double getn(const cJSON *o, const char *path)
{
    const cJSON *v = get(o, path);
    ck_assert_msg(cJSON_IsNumber(v), "%s is not a number", path);
    return v->valuedouble;
}

START_TEST(default_shapes)
{
    cal_probe_shape s[CAL_PROBE_MAX_SHAPES];
    int n = cal_probe_default_shapes(s, CAL_PROBE_MAX_SHAPES);
    ck_assert_int_eq(n, 13);
    /* QKV forward (T, 3h, h), its data gradient (T, h, 3h), its weight gradient (h, 3h, T) */
    ck_assert_str_eq(s[0].name, "qkv_fwd");
    ck_assert(s[0].m == 4096 && s[0].n == 6144 && s[0].k == 2048 && s[0].layout == CAL_PROBE_FWD);
    ck_assert(s[1].m == 4096 && s[1].n == 2048 && s[1].k == 6144 && s[1].layout == CAL_PROBE_DGRAD);
    ck_assert(s[2].m == 2048 && s[2].n == 6144 && s[2].k == 4096 && s[2].layout == CAL_PROBE_WGRAD);
    ck_assert(s[9].m == 4096 && s[9].n == 2048 && s[9].k == 8192); /* MLP down */
    ck_assert(s[12].m == 8192 && s[12].n == 8192 && s[12].k == 8192);
    /* every gradient has its forward's FLOPs: 2 T P per layer per pass, P = 12 h^2 = 50.3M */
    double f = 0;
    for (int i = 0; i < 12; i++) {
        ck_assert(s[i].sustain_s < 0);
        f += 2 * s[i].m * s[i].n * s[i].k;
    }
    ck_assert_rel(f, 3 * 2 * 4096.0 * 12 * 2048 * 2048, 1e-15);
}
END_TEST

START_TEST(shape_file_accepted)
{
    const char *t = "{\"shapes\": [{\"name\": \"a\", \"m\": 1000, \"n\": 1000, \"k\": 1000},\n"
                    " {\"name\": \"b\", \"m\": 8, \"n\": 16, \"k\": 24, \"layout\": \"wgrad\", \"sustain\": 5}]}";
    cal_probe_shape s[4];
    int n = 0;
    dt_error err;
    dt_error_clear(&err);
    ck_assert_int_eq(cal_probe_shapes_parse(t, strlen(t), "s.json", s, 4, &n, &err), DT_OK);
    ck_assert_int_eq(n, 2);
    ck_assert(s[0].layout == CAL_PROBE_FWD && s[0].sustain_s < 0);
    ck_assert(s[1].layout == CAL_PROBE_WGRAD && s[1].sustain_s == 5 && s[1].k == 24);
    const char *bare = "[{\"name\": \"x\", \"m\": 1, \"n\": 2, \"k\": 3, \"layout\": \"dgrad\"}]";
    ck_assert_int_eq(cal_probe_shapes_parse(bare, strlen(bare), "b.json", s, 4, &n, &err), DT_OK);
    ck_assert(n == 1 && s[0].layout == CAL_PROBE_DGRAD);
}
END_TEST

static void refused(const char *text, const char *path, const char *needle)
{
    cal_probe_shape s[4];
    int n = 0;
    dt_error err;
    dt_error_clear(&err);
    ck_assert_int_eq(cal_probe_shapes_parse(text, strlen(text), "bad.json", s, 4, &n, &err), DT_EINPUT);
    ck_assert_str_eq(err.file, "bad.json");
    ck_assert_msg(!strcmp(err.path, path), "path %s, expected %s (%s)", err.path, path, err.msg);
    ck_assert_msg(strstr(err.msg, needle) != NULL, "message \"%s\" lacks \"%s\"", err.msg, needle);
}

START_TEST(shape_file_refused)
{
    refused("[{\"name\": \"a\", \"m\": 0, \"n\": 1, \"k\": 1}]", "[0].m", "found 0");
    refused("[{\"name\": \"a\", \"m\": 1.5, \"n\": 1, \"k\": 1}]", "[0].m", "1.5");
    refused("[{\"name\": \"a\", \"m\": 1, \"n\": 70000, \"k\": 1}]", "[0].n", "70000");
    refused("[{\"name\": \"a\", \"m\": 1, \"n\": 1}]", "[0].k", "");
    refused("[{\"name\": \"a\", \"m\": 1, \"n\": 1, \"k\": 1, \"layout\": \"bwd\"}]", "[0].layout", "bwd");
    refused("[{\"name\": \"a\", \"m\": 1, \"n\": 1, \"k\": 1, \"mm\": 2}]", "[0].mm", "did you mean");
    refused("{\"shapes\": [{\"name\": \"a\", \"m\": 1, \"n\": 1, \"k\": 1}, {\"name\": \"a\", \"m\": 2, \"n\": 2, \"k\": 2}]}",
            "shapes[1].name", "not used before");
    refused("{\"shapes\": []}", "shapes", "found 0");
    refused("{\"shapes\": 3}", "shapes", "found 3");
    refused("[{\"name\": \"\", \"m\": 1, \"n\": 1, \"k\": 1}]", "[0].name", "1 to 31 characters");
    refused("[1,2,3,4,5]", "", "1 to 4 shapes, found 5");
    /* syntax: line and column */
    cal_probe_shape s[4];
    int n;
    dt_error err;
    dt_error_clear(&err);
    const char *t = "[\n {\"name\": \"a\",, }]";
    ck_assert_int_eq(cal_probe_shapes_parse(t, strlen(t), "bad.json", s, 4, &n, &err), DT_EINPUT);
    ck_assert_int_eq(err.line, 2);
}
END_TEST

START_TEST(preset_names)
{
    ck_assert_str_eq(cal_probe_preset_for("NVIDIA H100 80GB HBM3"), "H100-SXM");
    ck_assert_str_eq(cal_probe_preset_for("NVIDIA H200"), "H200-SXM");
    ck_assert_str_eq(cal_probe_preset_for("NVIDIA A100-SXM4-80GB"), "A100-SXM");
    ck_assert_str_eq(cal_probe_preset_for("NVIDIA A100-SXM4-40GB"), "A100-SXM-40GB");
    ck_assert_str_eq(cal_probe_preset_for("NVIDIA B200"), "B200");
    ck_assert_ptr_null(cal_probe_preset_for("NVIDIA H100 PCIe"));
    ck_assert_ptr_null(cal_probe_preset_for("NVIDIA H100 NVL"));
    ck_assert_ptr_null(cal_probe_preset_for("NVIDIA A100 80GB PCIe"));
}
END_TEST

/* The model against hand arithmetic. 1000 x 1000: tiles of 256 x 128 give 4 x 8 = 32 tiles in
 * one wave of 132 (q = 10^6 / (132 x 32768) = 0.2312), 128 x 128 give 64 in one wave (q = 10^6 /
 * (132 x 16384) = 0.46239), the better. 8192^2: 2048 tiles of 256 x 128 in 16 waves (15.5): q =
 * 2048 / 2112 = 32/33. */
START_TEST(model_by_hand)
{
    gpu_spec h;
    dt_error err;
    dt_error_clear(&err);
    ck_assert_int_eq(gpu_preset("H100-SXM", &h, &err), DT_OK);
    cal_probe_shape a = {"a", 1000, 1000, 1000, CAL_PROBE_FWD, -1};
    double q = 1e6 / (SMS * 16384);
    double t = 2e9 / (PEAK * 0.7 * q); /* 6.2447 us; its bytes, 6 MB at 2.68 TB/s, take 2.24 us */
    ck_assert_rel(cal_probe_predict_s(&h, &a), t, 1e-6); /* gpu_gemm_time rounds to whole ps */
    ck_assert_rel(t, 6.2447e-6, 1e-4);
    /* measured in 10 us: efficiency 2e9 / (989.5e12 x 0.46239 x 1e-5) = 0.43712 */
    ck_assert_rel(cal_probe_implied_eff(&h, &a, 1e-5), 2e9 / (PEAK * q * 1e-5), 1e-12);
    ck_assert_rel(cal_probe_implied_eff(&h, &a, 1e-5), 0.43712, 1e-4);
    cal_probe_shape sq = {"sq", 8192, 8192, 8192, CAL_PROBE_FWD, -1};
    double f = 2.0 * 8192 * 8192 * 8192;
    ck_assert_rel(cal_probe_predict_s(&h, &sq), f / (PEAK * 0.7 * 32 / 33), 1e-6);
    /* a public burst figure, 797.5 TFLOP/s: 797.5 / (989.5 x 32/33) = 0.8312 of peak per full wave */
    ck_assert_rel(cal_probe_implied_eff(&h, &sq, f / 797.5e12), 797.5 / (989.5 * 32 / 33), 1e-12);
}
END_TEST

/* A hand-made measurement: two shapes, one sustained over 4 windows, one memory-bound in
 * dtsim's model, and an HBM probe. */
static void hand_run(cal_probe_run *r)
{
    memset(r, 0, sizeof *r);
    snprintf(r->device, sizeof r->device, "NVIDIA H100 80GB HBM3");
    r->sms = 132;
    cal_probe_opts_default(&r->opts);
    r->opts.sustain_s = 4;
    r->n_gemms = 3;
    cal_probe_gemm *g = &r->gemms[0];
    g->shape = (cal_probe_shape){"sq", 8192, 8192, 8192, CAL_PROBE_FWD, -1};
    g->flops = 2.0 * 8192 * 8192 * 8192;
    g->burst_s = g->flops / 800e12; /* 800 TFLOP/s burst */
    g->burst_min_s = g->burst_s * 0.99;
    g->repeats = 50;
    g->windows = 4;
    g->sustain_s = 4.2;
    double w[] = {790, 760, 740, 720};
    memcpy(g->window_tflops, w, sizeof w);
    g = &r->gemms[1];
    g->shape = (cal_probe_shape){"a", 1000, 1000, 1000, CAL_PROBE_DGRAD, -1};
    g->flops = 2e9;
    g->burst_s = 1e-5;
    g->burst_min_s = 1e-5;
    g->repeats = 50;
    g = &r->gemms[2];
    g->shape = (cal_probe_shape){"thin", 8192, 8192, 16, CAL_PROBE_WGRAD, -1};
    g->flops = 2.0 * 8192 * 8192 * 16;
    g->burst_s = 6e-5;
    g->burst_min_s = 6e-5;
    g->repeats = 50;
    r->hbm_bytes = 1 << 30;
    r->copy_bytes_moved = 2.0 * (1 << 30);
    r->copy_s = r->copy_bytes_moved / 2.9e12;
    r->rmw_bytes_moved = 3.0 * (1 << 30);
    r->rmw_s = r->rmw_bytes_moved / 3.0e12;
}

static void check_hand_report(const cJSON *rep)
{
    ck_assert_str_eq(get(rep, "dtsim.spec")->valuestring, "H100-SXM");
    ck_assert_rel(getn(rep, "dtsim.peak_bf16_tflops"), 989.5, 1e-12);
    const cJSON *gs = get(rep, "gemms");
    ck_assert_int_eq(cJSON_GetArraySize(gs), 3);
    const cJSON *sq = cJSON_GetArrayItem(gs, 0);
    double f = 2.0 * 8192 * 8192 * 8192;
    ck_assert_rel(getn(sq, "burst_tflops"), 800, 1e-12);
    ck_assert_rel(getn(sq, "sustained.first_tflops"), 790, 1e-12);
    ck_assert_rel(getn(sq, "sustained.last_tflops"), 720, 1e-12);
    ck_assert_rel(getn(sq, "sustained.mean_tflops"), 752.5, 1e-12);
    ck_assert_rel(getn(sq, "sustained.min_tflops"), 720, 1e-12);
    ck_assert_rel(getn(sq, "sustained.last_over_burst"), 0.9, 1e-12);
    ck_assert_rel(getn(sq, "dtsim.quantization"), 32.0 / 33, 1e-12);
    /* dtsim: 989.5 x 0.7 x 32/33 = 671.66 TFLOP/s */
    ck_assert_rel(getn(sq, "dtsim.predicted_tflops"), 989.5 * 0.7 * 32 / 33, 1e-9);
    ck_assert_str_eq(get(sq, "dtsim.bound")->valuestring, "compute");
    ck_assert_rel(getn(sq, "dtsim.burst.measured_over_predicted"), 800 / (989.5 * 0.7 * 32 / 33), 1e-9); /* 1.191 */
    ck_assert_rel(getn(sq, "dtsim.burst.implied_matmul_eff"), 800 / (989.5 * 32 / 33), 1e-12);           /* 0.8337 */
    ck_assert_rel(getn(sq, "dtsim.sustained_last.implied_matmul_eff"), 720 / (989.5 * 32 / 33), 1e-12);  /* 0.7504 */
    ck_assert_rel(getn(sq, "dtsim.sustained_last.measured_over_predicted"), 720 / (989.5 * 0.7 * 32 / 33), 1e-9);
    ck_assert_rel(getn(sq, "flops"), f, 0);
    const cJSON *a = cJSON_GetArrayItem(gs, 1);
    ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(a, "sustained"));
    ck_assert_str_eq(get(a, "dtsim.bound")->valuestring, "compute"); /* 6.24 us of compute, 2.24 of bytes */
    ck_assert_rel(getn(a, "dtsim.burst.implied_matmul_eff"), 0.43712, 1e-4);
    ck_assert_rel(getn(a, "dtsim.burst.measured_over_predicted"), 6.2447e-6 / 1e-5, 1e-4);
    /* 8192 x 8192 x 16: 2.1 GFLOP, 3.2 us of compute in the model, but 134.7 MB of operands
     * and output at 3.35 x 0.8 TB/s: 50.28 us, so dtsim calls it memory bound */
    const cJSON *thin = cJSON_GetArrayItem(gs, 2);
    ck_assert_str_eq(get(thin, "dtsim.bound")->valuestring, "memory");
    ck_assert_rel(getn(thin, "dtsim.predicted_s"), 2.0 * (2 * 8192.0 * 16 + 8192.0 * 8192) / (3.35e12 * 0.8), 1e-6);
    ck_assert_rel(getn(rep, "hbm.copy_gbs"), 2900, 1e-9);
    ck_assert_rel(getn(rep, "hbm.rmw_gbs"), 3000, 1e-9);
    ck_assert_rel(getn(rep, "hbm.dtsim.rmw_memory_eff"), 3.0 / 3.35, 1e-9);
    /* the override: sustained where measured (one shape: 0.7504), read-modify-write HBM 0.896 */
    ck_assert_str_eq(get(rep, "suggested_spec.preset")->valuestring, "H100-SXM");
    ck_assert_rel(getn(rep, "suggested_spec.efficiency.matmul"), 0.750, 1e-12);
    ck_assert_rel(getn(rep, "suggested_spec.memory_eff"), 0.896, 1e-12);
    ck_assert_str_eq(get(rep, "suggested_from.matmul")->valuestring, "sustained_last");
    ck_assert_rel(getn(rep, "suggested_from.shapes"), 1, 0);
}

START_TEST(report_by_hand)
{
    static cal_probe_run r;
    hand_run(&r);
    gpu_spec h;
    dt_error err;
    dt_error_clear(&err);
    ck_assert_int_eq(gpu_preset("H100-SXM", &h, &err), DT_OK);
    cJSON *rep = cal_probe_report(&r, &h, "H100-SXM");
    check_hand_report(rep);
    ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(get(rep, "dtsim"), "warning"));

    /* read back: the report is a measurement file too, and gives the same report */
    char *text = cJSON_Print(rep);
    static cal_probe_run back;
    ck_assert_msg(cal_probe_run_parse(text, strlen(text), "rep.json", &back, &err) == DT_OK, "%s: %s", err.path, err.msg);
    ck_assert_int_eq(back.n_gemms, 3);
    ck_assert_int_eq(back.gemms[0].windows, 4);
    cJSON *rep2 = cal_probe_report(&back, &h, "H100-SXM");
    check_hand_report(rep2);
    char *text2 = cJSON_Print(rep2);
    ck_assert_str_eq(text, text2);
    free(text);
    free(text2);
    cJSON_Delete(rep2);

    /* burst only, without a spec: no comparison, no suggestion */
    r.gemms[0].windows = 0;
    cJSON *bare = cal_probe_report(&r, NULL, NULL);
    ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(bare, "dtsim"));
    ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(bare, "suggested_spec"));
    cJSON_Delete(bare);
    /* burst only with a spec: the median of the three shapes' burst figures */
    cJSON *b = cal_probe_report(&r, &h, "H100-SXM");
    ck_assert_str_eq(get(b, "suggested_from.matmul")->valuestring, "burst");
    /* 0.8337 (8192^3), 0.4371 (1000^3), 0.0373 (the thin one): the middle one */
    ck_assert_rel(getn(b, "suggested_spec.efficiency.matmul"), 0.437, 1e-12);
    cJSON_Delete(b);
    /* a device whose SM count is not the spec's is said so */
    r.sms = 114;
    cJSON *w = cal_probe_report(&r, &h, "H100-SXM");
    ck_assert(strstr(get(w, "dtsim.warning")->valuestring, "114 SMs") != NULL);
    cJSON_Delete(w);
    cJSON_Delete(rep);
}
END_TEST

START_TEST(measurement_refused)
{
    static cal_probe_run r;
    dt_error err;
    dt_error_clear(&err);
    const char *t = "{\"probe\": \"dtsim-gpu-probe\", \"device\": \"x\", \"sms\": 132, \"gemms\": "
                    "[{\"name\": \"a\", \"m\": 2, \"n\": 2, \"k\": 2, \"layout\": \"fwd\", \"flops\": 17, \"burst_s\": 1e-6}]}";
    ck_assert_int_eq(cal_probe_run_parse(t, strlen(t), "m.json", &r, &err), DT_EINPUT);
    ck_assert_str_eq(err.path, "gemms[0].flops");
    ck_assert(strstr(err.msg, "2·m·n·k = 16") != NULL);
    const char *u = "{\"probe\": \"other\", \"device\": \"x\", \"sms\": 132, \"gemms\": []}";
    ck_assert_int_eq(cal_probe_run_parse(u, strlen(u), "m.json", &r, &err), DT_EINPUT);
    ck_assert_str_eq(err.path, "probe");
    const char *v = "{\"probe\": \"dtsim-gpu-probe\", \"device\": \"x\", \"sms\": 132, \"gemms\": "
                    "[{\"name\": \"a\", \"m\": 2, \"n\": 2, \"k\": 2, \"burst_s\": 1e-6, \"window_tflops\": [1, -2]}]}";
    ck_assert_int_eq(cal_probe_run_parse(v, strlen(v), "m.json", &r, &err), DT_EINPUT);
    ck_assert_str_eq(err.path, "gemms[0].window_tflops[1]");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cal_probe");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, default_shapes);
    tcase_add_test(tc, shape_file_accepted);
    tcase_add_test(tc, shape_file_refused);
    tcase_add_test(tc, preset_names);
    tcase_add_test(tc, model_by_hand);
    tcase_add_test(tc, report_by_hand);
    tcase_add_test(tc, measurement_refused);
    suite_add_tcase(s, tc);
    return dt_run_suite(s);
}
