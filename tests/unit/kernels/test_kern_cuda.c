/* test_kern_cuda.c - the CUDA kernels (ring all-reduce, top-k, NCCL) against the host references.
 * Pins down: on a machine with a CUDA device, the GPU ring equals kern_allreduce_reference bit
 * for bit for every dtype, rank counts 2..5 and sizes not divisible by the ranks; the top-k
 * kernel equals kern_topk_reference; NCCL (2+ GPUs) sums exactly. Without a device (or without
 * CUDA in the build) it checks that every entry point refuses with DT_EUNSUPPORTED and a message
 * naming the cause, prints "SKIP: no CUDA device" and exits 77 (ctest reports it skipped).
 * Leaves free: speed. */
#include <stdio.h>
#include <string.h>

#include "dtsim/kern.h"
#include "testutil.h"

START_TEST(ring_and_topk_match_reference)
{
    static const size_t counts[] = {1, 5, 1000, 65537, 1 << 20};
    for (int t = 0; t < KERN_DTYPE_COUNT; t++)
        for (int ranks = 2; ranks <= 5; ranks++) {
            kern_cuda_ctx *c = NULL;
            dt_error err;
            dt_error_clear(&err);
            ck_assert_int_eq(kern_cuda_create(KERN_CUDA_RING, ranks, (kern_dtype)t, 1 << 20, &c, &err), DT_OK);
            for (size_t i = 0; i < sizeof counts / sizeof *counts; i++)
                ck_assert_msg(kern_cuda_verify(c, counts[i], &err) == DT_OK, "%s", err.msg);
            double s = 0;
            ck_assert_int_eq(kern_cuda_run(c, 1 << 20, &s, &err), DT_OK);
            ck_assert(s > 0);
            kern_cuda_destroy(c);
        }
    kern_cuda_ctx *c = NULL;
    dt_error err;
    dt_error_clear(&err);
    ck_assert_int_eq(kern_cuda_create(KERN_CUDA_TOPK, 1, KERN_FP32, 1 << 20, &c, &err), DT_OK);
    for (size_t n = 100; n <= (1 << 20); n *= 7) ck_assert_msg(kern_cuda_verify(c, n, &err) == DT_OK, "%s", err.msg);
    kern_cuda_destroy(c);
}
END_TEST

START_TEST(nccl_sums)
{
    int n = 0;
    char name[128];
    dt_error err;
    dt_error_clear(&err);
    ck_assert_int_eq(kern_cuda_devices(&n, name, sizeof name, &err), DT_OK);
    kern_cuda_ctx *c = NULL;
    int rc = kern_cuda_create(KERN_CUDA_NCCL, n, KERN_FP32, 1 << 16, &c, &err);
    if (n < 2) {
        ck_assert_int_eq(rc, DT_EUNSUPPORTED); /* NCCL needs one device per rank */
        return;
    }
    ck_assert_msg(rc == DT_OK, "%s", err.msg);
    ck_assert_msg(kern_cuda_verify(c, 12345, &err) == DT_OK, "%s", err.msg);
    kern_cuda_destroy(c);
}
END_TEST

int main(void)
{
    int n = 0;
    char name[128];
    dt_error err;
    dt_error_clear(&err);
    if (kern_cuda_devices(&n, name, sizeof name, &err) != DT_OK) {
        /* the refusal itself is part of the contract */
        kern_cuda_ctx *c = NULL;
        dt_error e2;
        dt_error_clear(&e2);
        int bad = err.code != DT_EUNSUPPORTED || !strstr(err.msg, "CUDA") ||
                  kern_cuda_create(KERN_CUDA_RING, 2, KERN_FP32, 16, &c, &e2) != DT_EUNSUPPORTED || c != NULL;
        if (bad) {
            fprintf(stderr, "FAIL: without a device the CUDA entry points must refuse with DT_EUNSUPPORTED (%s)\n", err.msg);
            return 1;
        }
        printf("SKIP: no CUDA device (%s)\n", err.msg);
        return 77;
    }
    printf("CUDA devices: %s\n", name);
    Suite *s = suite_create("kern_cuda");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, ring_and_topk_match_reference);
    tcase_add_test(tc, nccl_sums);
    suite_add_tcase(s, tc);
    return dt_run_suite_in_process(s); /* CUDA is initialised above */
}
