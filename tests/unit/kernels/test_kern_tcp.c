/* test_kern_tcp.c - the TCP ring all-reduce between processes (Gloo's ring over loopback).
 * Pins down: every rank's result equals kern_allreduce_reference bit for bit, for every dtype,
 * for 2 to 5 ranks, for counts smaller than the rank count (empty segments), not divisible by
 * the rank count or the chunk, and many chunks per segment; a timed run restores the inputs
 * (verifying after timed runs still matches); one rank is refused; a count above what the ring
 * was made for is refused; a rank that dies makes the next run fail with a message naming it,
 * and destroying the ring then returns (no hang, no SIGPIPE).
 * Leaves free: timing (dtsim calibrate --backend tcp measures and fits it). */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dtsim/kern.h"
#include "testutil.h"

START_TEST(matches_reference)
{
    kern_dtype t = (kern_dtype)_i;
    for (int n = 2; n <= 5; n++) {
        size_t max = 70001;
        kern_tcp_ring *r = NULL;
        dt_error err;
        dt_error_clear(&err);
        /* a 4 KiB chunk: a segment of the largest count is many chunks, pipelined across steps */
        ck_assert_int_eq(kern_tcp_ring_create(n, 4096, t, max, 7, &r, &err), DT_OK);
        size_t counts[] = {1, (size_t)n - 1, (size_t)n, 1000, 4099, max};
        for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
            if (counts[i] == 0) continue;
            int rc = kern_tcp_ring_verify(r, counts[i], &err);
            ck_assert_msg(rc == DT_OK, "n %d dtype %s count %zu: %s", n, kern_dtype_name(t), counts[i], err.msg);
        }
        double s = 0;
        for (int k = 0; k < 3; k++) {
            ck_assert_int_eq(kern_tcp_ring_allreduce(r, max, &s, &err), DT_OK);
            ck_assert(s > 0 && s < 60);
        }
        /* the timed runs did not leave reduced data behind as the next run's input */
        ck_assert_int_eq(kern_tcp_ring_verify(r, max, &err), DT_OK);
        kern_tcp_ring_destroy(r);
    }
}
END_TEST

START_TEST(refusals)
{
    kern_tcp_ring *r = NULL;
    dt_error err;
    dt_error_clear(&err);
    ck_assert_int_eq(kern_tcp_ring_create(1, 0, KERN_FP32, 100, 1, &r, &err), DT_EINPUT);
    ck_assert_ptr_null(r);
    ck_assert_ptr_nonnull(strstr(err.msg, "2 or more ranks"));
    ck_assert_int_eq(kern_tcp_ring_create(2, 0, KERN_FP32, 100, 1, &r, &err), DT_OK);
    double s;
    ck_assert_int_eq(kern_tcp_ring_allreduce(r, 101, &s, &err), DT_EINPUT);
    ck_assert_int_eq(kern_tcp_ring_verify(r, 101, &err), DT_EINPUT);
    kern_tcp_ring_destroy(r);
    kern_tcp_ring_destroy(NULL);
}
END_TEST

START_TEST(dead_rank)
{
    kern_tcp_ring *r = NULL;
    dt_error err;
    dt_error_clear(&err);
    ck_assert_int_eq(kern_tcp_ring_create(3, 0, KERN_FP32, 1000, 1, &r, &err), DT_OK);
    ck_assert_int_eq(kern_tcp_ring_verify(r, 1000, &err), DT_OK);
    pid_t victim = (pid_t)kern_tcp_ring_pid(r, 1);
    ck_assert_int_gt(victim, 0);
    ck_assert_int_eq(kern_tcp_ring_pid(r, 3), -1);
    kill(victim, SIGKILL);
    double s;
    int rc = kern_tcp_ring_allreduce(r, 1000, &s, &err);
    ck_assert_int_eq(rc, DT_EINTERNAL);
    ck_assert_msg(strstr(err.msg, "rank") != NULL, "%s", err.msg);
    kern_tcp_ring_destroy(r); /* reaps the others, which see their neighbours go */
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("kern_tcp");
    TCase *tc = tcase_create("core");
    tcase_add_loop_test(tc, matches_reference, 0, KERN_DTYPE_COUNT);
    tcase_add_test(tc, refusals);
    tcase_add_test(tc, dead_rank);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return dt_run_suite(suite()); }
