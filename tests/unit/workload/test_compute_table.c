/* test_compute_table.c - measured compute tables reaching a training step.
 * Pins down: a transformer step takes exactly twice the compute time when every op class gets a
 * table at half the roofline rate (FLOP tables for matmul/attention, byte tables for
 * elementwise/optimizer; to within a picosecond of rounding per op), and a matmul-only table
 * changes less than that; a calibration file's
 * "compute" section round-trips through cal_result_to_json / cal_load_file, is applied by
 * options.calibration to every GPU (same step compute as the table inline in the GPU spec, and
 * said in the calibration note), and its validation errors carry the file's JSON path.
 * Leaves free: the transformer's op list (only ratios of its compute time are asserted);
 * interpolation details, which test_gpu.c pins down. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dtsim/calib.h"
#include "dtsim/run.h"
#define WL_TESTUTIL_NO_FIXTURE
#include "wl_testutil.h"

/* 100 TFLOP/s at efficiency 1 for every class, 1 TB/s HBM at memory_eff 1. dtsim's transformer
 * ops carry FLOPs only (matmul, attention) or bytes only (elementwise, optimizer), so each op's
 * roofline is one term of the max: F / 1e14 or M / 1e12 seconds. */
#define FLAT_GPU(extra)                                                                         \
    "{\"name\": \"flat\", \"flops\": {\"fp32\": \"100 TFLOP/s\", \"bf16\": \"100 TFLOP/s\"},"    \
    " \"hbm\": \"80 GB\", \"hbm_bw\": \"1 TB/s\", \"memory_eff\": 1, \"efficiency\": {\"matmul\": 1," \
    " \"attention\": 1, \"elementwise\": 1, \"optimizer\": 1}" extra "}"
/* Half the roofline rate for every class: 1 TFLOP in 20 ms (50 TFLOP/s) for the FLOP-bound
 * classes, 1 GB in 2 ms (500 GB/s) for the memory-bound ones. */
#define HALF_PTS "[{\"flops\": \"1 TFLOP\", \"time\": \"20 ms\"}]"
#define HALF_BYTES "[{\"bytes\": \"1 GB\", \"time\": \"2 ms\"}]"
#define HALF_TABLES                                                                             \
    "{\"matmul\": " HALF_PTS ", \"attention\": " HALF_PTS ", \"elementwise\": " HALF_BYTES    \
    ", \"optimizer\": " HALF_BYTES ", \"attention_bwd\": " HALF_PTS "}"
#define SCENARIO(gpu, options)                                                                  \
    "{\"topology\": {\"generator\": \"dgx\", \"nodes\": 1, \"gpus_per_node\": 2, \"gpu\": " gpu \
    "}, \"model\": {\"kind\": \"transformer\", \"layers\": 2, \"hidden\": 512, \"heads\": 8,"  \
    " \"seq_len\": 256, \"vocab\": 8000}, \"parallel\": {\"dp\": 2}" options "}"

START_TEST(half_rate_doubles_compute)
{
    run_result roof = run_text(SCENARIO(FLAT_GPU(""), ""));
    run_result half = run_text(SCENARIO(FLAT_GPU(", \"compute\": " HALF_TABLES), ""));
    ck_assert_double_gt(roof.breakdown_s.compute, 1e-6);
    /* each op's time is rounded up to the picosecond on its own: 1e-6 relative (~300 ps here)
     * bounds that for the few hundred ops of this step */
    ck_assert_rel(half.breakdown_s.compute, 2 * roof.breakdown_s.compute, 1e-6);
    /* a table on matmul only changes less than all of it, and more than nothing */
    run_result mm = run_text(SCENARIO(FLAT_GPU(", \"compute\": {\"matmul\": " HALF_PTS "}"), ""));
    ck_assert_double_gt(mm.breakdown_s.compute, roof.breakdown_s.compute * (1 + 1e-6));
    ck_assert_double_lt(mm.breakdown_s.compute, half.breakdown_s.compute * (1 - 1e-6));
    run_result_free(&roof);
    run_result_free(&half);
    run_result_free(&mm);
}
END_TEST

static cal_result *make_cal(void)
{
    cal_result *c = dt_xcalloc(1, sizeof *c);
    snprintf(c->date, sizeof c->date, "2026-11-22T01:00:00Z");
    snprintf(c->hostname, sizeof c->hostname, "testhost");
    snprintf(c->cpu_model, sizeof c->cpu_model, "Test CPU");
    c->cores = 2;
    snprintf(c->backend, sizeof c->backend, "cpu");
    snprintf(c->dtype, sizeof c->dtype, "fp32");
    c->ranks = 2;
    c->repeats = 1;
    cal_algo *a = cal_result_add_algo(c, "ring", CAL_KIND_ALLREDUCE);
    a->points = dt_xcalloc(2, sizeof *a->points);
    double s1[2] = {1e-5, 1e-5}, s2[2] = {2e-5, 2e-5};
    cal_point_set(&a->points[a->n_points++], 1024, s1, 2);
    cal_point_set(&a->points[a->n_points++], 1048576, s2, 2);
    a->fit = (cal_fit){.alpha = 10e-6, .beta = 1.0 / 100e9, .r2 = 1, .n_samples = 4, .dof = 2};
    c->compute[GPU_OP_MATMUL] = (gpu_table){.n = 1, .precision = -1, .work = {1e12}, .time = {0.02}};
    c->compute[GPU_OP_ATTENTION] = c->compute[GPU_OP_MATMUL];
    c->compute[GPU_OP_ATTENTION_BWD] = c->compute[GPU_OP_MATMUL];
    c->compute[GPU_OP_ELEMENTWISE] =
        (gpu_table){.n = 1, .by_bytes = true, .precision = -1, .work = {1e9}, .time = {2e-3}};
    c->compute[GPU_OP_OPTIMIZER] = c->compute[GPU_OP_ELEMENTWISE];
    return c;
}

static const char *write_cal(const cal_result *c, char *path, size_t size)
{
    snprintf(path, size, "/tmp/dtsim_test_ctable_%ld.json", (long)getpid());
    cJSON *j = cal_result_to_json(c);
    char *txt = cJSON_Print(j);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(txt, f);
    fclose(f);
    free(txt);
    cJSON_Delete(j);
    return path;
}

START_TEST(calibration_applies_tables)
{
    cal_result *c = make_cal();
    char path[256], text[4096];
    write_cal(c, path, sizeof path);
    cal_result *back = NULL;
    dt_error e;
    dt_error_clear(&e);
    int rc = cal_load_file(path, &back, &e);
    ck_assert_msg(rc == DT_OK, "%s: %s", e.path, e.msg);
    ck_assert(memcmp(back->compute, c->compute, sizeof c->compute) == 0);
    cal_result_destroy(back);

    snprintf(text, sizeof text, SCENARIO(FLAT_GPU(""), ", \"options\": {\"calibration\": \"%s\"}"),
             path);
    run_result cal = run_text(text);
    run_result inl = run_text(SCENARIO(FLAT_GPU(", \"compute\": " HALF_TABLES), ""));
    run_result roof = run_text(SCENARIO(FLAT_GPU(""), ""));
    ck_assert(cal.breakdown_s.compute == inl.breakdown_s.compute);
    ck_assert_rel(cal.breakdown_s.compute, 2 * roof.breakdown_s.compute, 1e-6);
    ck_assert_msg(strstr(cal.calibration_note, "measured compute table matmul (1 points by FLOPs)"),
                  "note: %s", cal.calibration_note);
    ck_assert_msg(strstr(cal.calibration_note, "on 2 GPUs"), "note: %s", cal.calibration_note);
    run_result_free(&cal);
    run_result_free(&inl);
    run_result_free(&roof);

    /* a bad table in the file: the error names the file and the path */
    c->compute[GPU_OP_ATTENTION].time[0] = 0;
    write_cal(c, path, sizeof path);
    ck_assert_int_eq(cal_load_file(path, &back, &e), DT_EINPUT);
    ck_assert_str_eq(e.path, "compute.attention[0].time");
    ck_assert_ptr_nonnull(strstr(e.file, "dtsim_test_ctable"));
    /* and without the section the file is valid and applies no table */
    memset(c->compute, 0, sizeof c->compute);
    write_cal(c, path, sizeof path);
    ck_assert_int_eq(cal_load_file(path, &back, &e), DT_OK);
    ck_assert_int_eq(back->compute[GPU_OP_MATMUL].n, 0);
    cal_result_destroy(back);
    unlink(path);
    cal_result_destroy(c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("compute_table");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, half_rate_doubles_compute);
    tcase_add_test(tc, calibration_applies_tables);
    suite_add_tcase(s, tc);
    return dt_run_suite(s);
}
