/* cal_testutil.h - a small calibration built in memory, shared by the calibration tests of the
 * gpu room (loading) and the topo room (applying): a 4-rank CPU ring all-reduce fit with alpha
 * 60 us and beta 1/(2 GB/s), three sizes of samples, and a top-k fit. Caller frees with
 * cal_result_destroy. */
#ifndef DTSIM_CAL_TESTUTIL_H
#define DTSIM_CAL_TESTUTIL_H

#include <stdio.h>

#include "dtsim/calib.h"
#include "testutil.h"

static inline cal_result *cal_test_make(void)
{
    cal_result *c = dt_xcalloc(1, sizeof *c);
    snprintf(c->date, sizeof c->date, "2026-11-21T23:00:00Z");
    snprintf(c->hostname, sizeof c->hostname, "testhost");
    snprintf(c->cpu_model, sizeof c->cpu_model, "Test CPU");
    c->cores = 2;
    snprintf(c->backend, sizeof c->backend, "cpu");
    snprintf(c->dtype, sizeof c->dtype, "fp32");
    c->ranks = 4;
    c->chunk_bytes = 65536;
    c->repeats = 3;
    c->warmup = 1;
    cal_algo *a = cal_result_add_algo(c, "ring", CAL_KIND_ALLREDUCE);
    a->points = dt_xcalloc(3, sizeof *a->points);
    double s1[3] = {1e-5, 1.1e-5, 1.2e-5}, s2[3] = {2e-5, 2.5e-5, 2.1e-5}, s3[3] = {1e-4, 1.01e-4, 0.99e-4};
    cal_point_set(&a->points[a->n_points++], 1024, s1, 3);
    cal_point_set(&a->points[a->n_points++], 65536, s2, 3);
    cal_point_set(&a->points[a->n_points++], 1048576, s3, 3);
    a->fit = (cal_fit){.alpha = 60e-6, .beta = 1.0 / 2e9, .alpha_ci = 1e-6, .beta_ci = 1e-11, .r2 = 0.99, .n_samples = 9, .dof = 7};
    cal_algo *k = cal_result_add_algo(c, "topk", CAL_KIND_TOPK);
    k->k_fraction = 0.01;
    k->points = dt_xcalloc(2, sizeof *k->points);
    cal_point_set(&k->points[k->n_points++], 1000, s1, 3);
    cal_point_set(&k->points[k->n_points++], 100000, s3, 3);
    k->fit = (cal_fit){.alpha = 1e-6, .beta = 1e-9, .alpha_ci = 1e-7, .beta_ci = 1e-11, .r2 = 0.9, .n_samples = 6, .dof = 4};
    return c;
}

#endif
