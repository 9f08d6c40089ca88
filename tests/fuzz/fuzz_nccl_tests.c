/* fuzz_nccl_tests.c - libFuzzer target: nccl-tests logs (dtsim calibrate --from-nccl-tests).
 *
 * cal_nccl_parse on the input as a log (header, device list, column headers, rows, noise,
 * mpirun tags), then cal_from_nccl_runs on what it read (merging runs, choosing the fitted range,
 * the robust fit). Failures must be DT_EINPUT with a non-empty message and leave nothing
 * allocated. A calibration made successfully is serialised (cal_result_to_json) and loaded back
 * with cal_from_json, which must succeed: what the import writes must read back.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dtsim/calib.h"
#include "dtsim/error.h"
#include "dtsim/json.h"
#include "dtsim/kern.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void expect_error(const dt_error *err, int rc)
{
    if (rc != DT_EINPUT || err->msg[0] == '\0') abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    dt_error err;
    dt_error_clear(&err);
    cal_nccl_log log;
    /* the first byte picks the collective hint half the time, as --nccl-op would */
    int hint = size && (data[0] & 0x80) ? (data[0] & 0x7f) % CAL_KIND_COUNT : -1;
    if (hint == CAL_KIND_TOPK) hint = -1;
    int rc = cal_nccl_parse((const char *)data, size, "fuzz.all_reduce_perf.log", hint, &log, &err);
    if (rc != DT_OK) {
        expect_error(&err, rc);
        if (log.runs || log.n_runs) abort();
        return 0;
    }
    if (log.n_runs < 1) abort();
    cal_result *c = NULL;
    dt_error_clear(&err);
    rc = cal_from_nccl_runs(log.runs, log.n_runs, NULL, &c, &err);
    if (rc != DT_OK) {
        expect_error(&err, rc);
        if (c) abort();
    } else {
        cJSON *j = cal_result_to_json(c);
        js_ctx ctx = {.file = "written.json", .err = &err};
        cal_result *d = NULL;
        dt_error_clear(&err);
        if (cal_from_json(&ctx, j, &d) != DT_OK || d->n_algos != c->n_algos) abort();
        cal_result_destroy(d);
        cJSON_Delete(j);
        cal_result_destroy(c);
    }
    cal_nccl_log_free(&log);
    return 0;
}
