/* test_probe_cuda.c - the compute probe's measurement (kernels/kern_probe.cu) on a CUDA device.
 * Pins down, with a device: the three layouts agree with their host definitions (the probe's own
 * check, run first), a burst and a 1 s sustained run of small shapes give positive, ordered times
 * (fastest repeat <= median), 4 windows of 0.25 s each with rates under 10 PFLOP/s (no GPU of
 * today exceeds that in bf16; a rate above it is a timing bug), the sustained run lasts about
 * what was asked, and the HBM probe moves 2 and 3 times its buffer; the report of the
 * measurement names the preset its device matches. Without a device (or without CUDA in the
 * build) it checks that kern_probe_measure refuses with DT_EUNSUPPORTED and a message naming the
 * cause, prints "SKIP: no CUDA device" and exits 77 (ctest reports it skipped). Leaves free:
 * the rates themselves (that is what the probe is for). */
#include <stdio.h>
#include <string.h>

#include "dtsim/kern.h"
#include "dtsim/probe.h"
#include "testutil.h"

static cal_probe_run run;

START_TEST(small_shapes_measure)
{
    cal_probe_shape s[3] = {{"f", 1024, 768, 512, CAL_PROBE_FWD, -1},
                            {"d", 1024, 512, 768, CAL_PROBE_DGRAD, 0},
                            {"w", 512, 768, 1024, CAL_PROBE_WGRAD, 0}};
    cal_probe_opts o;
    cal_probe_opts_default(&o);
    o.sustain_s = 1;
    o.window_s = 0.25;
    o.hbm_bytes = 64 << 20;
    dt_error err;
    dt_error_clear(&err);
    ck_assert_msg(kern_probe_measure(&o, s, 3, NULL, NULL, &run, &err) == DT_OK, "%s", err.msg);
    ck_assert_int_eq(run.n_gemms, 3);
    ck_assert(run.sms > 0 && run.device[0]);
    for (int i = 0; i < 3; i++) {
        const cal_probe_gemm *g = &run.gemms[i];
        ck_assert_rel(g->flops, 2 * s[i].m * s[i].n * s[i].k, 1e-15);
        ck_assert(g->burst_s > 0 && g->burst_min_s > 0 && g->burst_min_s <= g->burst_s);
        ck_assert(g->flops / g->burst_s < 1e16);
        ck_assert_int_eq(g->repeats, 50);
    }
    const cal_probe_gemm *f = &run.gemms[0];
    ck_assert_int_eq(f->windows, 4);
    for (int w = 0; w < 4; w++) ck_assert(f->window_tflops[w] > 0 && f->window_tflops[w] < 1e4);
    /* windows are sized from the burst median, so the run lasts about what was asked */
    ck_assert_msg(f->sustain_s > 0.5 && f->sustain_s < 3, "sustained %g s", f->sustain_s);
    ck_assert_int_eq(run.gemms[1].windows, 0); /* its own "sustain": 0 */
    ck_assert_rel(run.copy_bytes_moved, 2.0 * (64 << 20), 1e-15);
    ck_assert_rel(run.rmw_bytes_moved, 3.0 * (64 << 20), 1e-15);
    ck_assert(run.copy_s > 0 && run.rmw_s > 0);
    cJSON *rep = cal_probe_report(&run, NULL, NULL);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(rep, "gemms")), 3);
    cJSON_Delete(rep);
    printf("%s: f %.1f TFLOP/s burst, %.1f .. %.1f sustained; HBM copy %.0f GB/s\n", run.device,
           f->flops / f->burst_s / 1e12, f->window_tflops[0], f->window_tflops[3],
           run.copy_bytes_moved / run.copy_s / 1e9);
}
END_TEST

int main(void)
{
    int n = 0;
    char name[128];
    dt_error err;
    dt_error_clear(&err);
    if (kern_cuda_devices(&n, name, sizeof name, &err) != DT_OK) {
        cal_probe_shape s[1] = {{"none", 1, 1, 1, CAL_PROBE_FWD, 0}};
        cal_probe_opts o;
        cal_probe_opts_default(&o);
        dt_error e2;
        dt_error_clear(&e2);
        int rc = kern_probe_measure(&o, s, 1, NULL, NULL, &run, &e2);
        if (rc != DT_EUNSUPPORTED || !strstr(e2.msg, "CUDA")) {
            fprintf(stderr, "FAIL: without a device the probe must refuse with DT_EUNSUPPORTED naming CUDA (%d: %s)\n", rc,
                    e2.msg);
            return 1;
        }
        printf("SKIP: %s\n", e2.msg);
        return 77;
    }
    Suite *s = suite_create("probe_cuda");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, small_shapes_measure);
    suite_add_tcase(s, tc);
    return dt_run_suite_in_process(s); /* CUDA is initialised above */
}
