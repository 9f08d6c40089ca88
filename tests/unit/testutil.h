/* testutil.h - the few helpers every Check suite here uses. */
#ifndef DTSIM_TESTUTIL_H
#define DTSIM_TESTUTIL_H

#include <check.h>
#include <stdbool.h>
#include <math.h>
#include <stdlib.h>

/* |a - b| <= rel * |b| (and an absolute floor for b == 0). */
#define ck_assert_rel(a, b, rel)                                                            \
    do {                                                                                    \
        double a_ = (double)(a), b_ = (double)(b);                                          \
        double tol_ = (rel) * fabs(b_) + 1e-300;                                            \
        ck_assert_msg(fabs(a_ - b_) <= tol_, "%s = %.12g, expected %s = %.12g (rel tol %g)", \
                      #a, a_, #b, b_, (double)(rel));                                       \
    } while (0)

/* Run one suite, print Check's summary, return the process exit status. in_process: for suites
 * whose main() has already initialised CUDA (to find a device, or to skip). Check runs each test
 * in a forked child by default, and a CUDA context does not survive fork(), so every call in
 * the child fails with "initialization error" (seen on an H100, 2026-11-27: both CUDA suites
 * failed forked and passed in-process). In-process, tcase_set_timeout does not apply; ctest's
 * timeout does. */
static inline int dt_run_suite_as(Suite *s, bool in_process)
{
    SRunner *sr = srunner_create(s);
    if (in_process) srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

static inline int dt_run_suite(Suite *s) { return dt_run_suite_as(s, false); }
static inline int dt_run_suite_in_process(Suite *s) { return dt_run_suite_as(s, true); }

#define DT_DATA(rel) DTSIM_SOURCE_DIR "/tests/data/" rel

#endif
