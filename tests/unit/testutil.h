/* testutil.h - the few helpers every Check suite here uses. */
#ifndef DTSIM_TESTUTIL_H
#define DTSIM_TESTUTIL_H

#include <check.h>
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

/* Run one suite, print Check's summary, return the process exit status. */
static inline int dt_run_suite(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#define DT_DATA(rel) DTSIM_SOURCE_DIR "/tests/data/" rel

#endif
