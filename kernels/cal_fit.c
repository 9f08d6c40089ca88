/* cal_fit.c - fitting T(x) = alpha + x*beta to timing samples, with confidence intervals.
 *
 * Timings span microseconds to seconds, and their noise grows with their size. An ordinary least
 * squares fit would let the largest sizes decide alpha alone; so every sample is divided by the
 * median time at its size (relative residuals: a 5% miss counts the same everywhere), giving the
 * model  t/m = alpha*(1/m) + beta*(x/m)  with two regressors and no intercept. On a shared,
 * loaded machine a few samples are wild (a preempted thread), so the fit is robust: Tukey's
 * bisquare via gsl_multifit_robust, whose covariance is scaled by the robust residual scale.
 * Intervals are t(0.975, n-2) * standard error. R^2 is that of the per-size medians against the
 * line, in seconds (unweighted): "how much of the variation the line explains", undisturbed by
 * the outliers the robust fit set aside.
 * cal_fit_line is what calibrate writes: that fit, its alpha then judged by the calibration
 * reader's rule (cal_alpha_judge): noise below zero held at 0 with beta refitted through the
 * origin, a clearly negative alpha refused, so no reader ever refuses what was written.
 */
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "dtsim/calib.h"
#include "dtsim/kern.h"

typedef struct xt {
    double x, t;
    size_t i;
} xt;

static int by_x_then_t(const void *pa, const void *pb)
{
    const xt *a = pa, *b = pb;
    if (a->x != b->x) return a->x < b->x ? -1 : 1;
    return (a->t > b->t) - (a->t < b->t);
}

/* Median time of each sample's size (scale[i]), sorting by (x, t); the number of distinct
 * sizes. Caller frees *scale. */
static size_t size_medians(const double *x, const double *t, size_t n, double **scale)
{
    xt *s = dt_xmalloc(n * sizeof *s);
    for (size_t i = 0; i < n; i++) s[i] = (xt){x[i], t[i], i};
    qsort(s, n, sizeof *s, by_x_then_t);
    double *sc = dt_xmalloc(n * sizeof *sc);
    size_t distinct = 0;
    for (size_t a = 0; a < n;) {
        size_t b = a;
        while (b < n && s[b].x == s[a].x) b++;
        size_t len = b - a;
        double med = len % 2 ? s[a + len / 2].t : 0.5 * (s[a + len / 2 - 1].t + s[a + len / 2].t);
        for (size_t j = a; j < b; j++) sc[s[j].i] = med;
        distinct++;
        a = b;
    }
    free(s);
    *scale = sc;
    return distinct;
}

/* The robust fit on relative residuals, with the intercept (p = 2: regressors 1/m and x/m) or
 * through the origin (p = 1: x/m alone, alpha fixed at 0). Fills every field of out but the
 * alpha_held ones. */
static int robust_fit(const double *x, const double *t, size_t n, const double *scale, size_t p, cal_fit *out,
                      dt_error *err)
{
    gsl_set_error_handler_off(); /* GSL aborts by default; we check every status instead */
    gsl_matrix *X = gsl_matrix_alloc(n, p), *cov = gsl_matrix_alloc(p, p);
    gsl_vector *y = gsl_vector_alloc(n), *c = gsl_vector_alloc(p);
    for (size_t i = 0; i < n; i++) {
        if (p == 2) gsl_matrix_set(X, i, 0, 1.0 / scale[i]);
        gsl_matrix_set(X, i, p - 1, x[i] / scale[i]);
        gsl_vector_set(y, i, t[i] / scale[i]);
    }
    gsl_multifit_robust_workspace *w = gsl_multifit_robust_alloc(gsl_multifit_robust_bisquare, n, p);
    int st = gsl_multifit_robust(X, y, c, cov, w);
    int rc = DT_OK;
    if (st != GSL_SUCCESS && st != GSL_EMAXITER) {
        rc = dt_error_set(err, DT_EINTERNAL, NULL, NULL, "robust fit failed: %s", gsl_strerror(st));
    } else {
        out->alpha = p == 2 ? gsl_vector_get(c, 0) : 0.0;
        out->beta = gsl_vector_get(c, p - 1);
        out->alpha_se = p == 2 ? sqrt(fmax(gsl_matrix_get(cov, 0, 0), 0.0)) : 0.0;
        out->beta_se = sqrt(fmax(gsl_matrix_get(cov, p - 1, p - 1), 0.0));
        out->n_samples = (int)n;
        out->dof = (int)(n - p);
        double q = gsl_cdf_tdist_Pinv(0.975, (double)out->dof);
        out->alpha_ci = q * out->alpha_se;
        out->beta_ci = q * out->beta_se;
        /* R^2 of the per-size medians: outliers the robust fit ignored must not decide it */
        double *med = dt_xmalloc(n * sizeof *med), *mx = dt_xmalloc(n * sizeof *mx);
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            bool seen = false;
            for (size_t j = 0; j < m && !seen; j++) seen = mx[j] == x[i];
            if (seen) continue;
            mx[m] = x[i];
            med[m++] = scale[i];
        }
        double mean = gsl_stats_mean(med, 1, m), ss_tot = 0, ss_res = 0;
        for (size_t i = 0; i < m; i++) {
            double r = med[i] - (out->alpha + out->beta * mx[i]);
            ss_res += r * r;
            ss_tot += (med[i] - mean) * (med[i] - mean);
        }
        free(med);
        free(mx);
        out->r2 = ss_tot > 0 ? 1.0 - ss_res / ss_tot : 1.0;
    }
    gsl_multifit_robust_free(w);
    gsl_matrix_free(X);
    gsl_matrix_free(cov);
    gsl_vector_free(y);
    gsl_vector_free(c);
    return rc;
}

static int check_samples(const double *x, const double *t, size_t n, double **scale, dt_error *err)
{
    *scale = NULL;
    if (n < 3) return dt_error_set(err, DT_EINPUT, NULL, NULL, "fit needs at least 3 samples, got %zu", n);
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]) || !isfinite(t[i]) || x[i] < 0 || t[i] <= 0)
            return dt_error_set(err, DT_EINPUT, NULL, NULL,
                                "sample %zu is not a positive finite (size, time): (%g, %g)", i,
                                x[i], t[i]);
    size_t distinct = size_medians(x, t, n, scale);
    if (distinct < 2) {
        free(*scale);
        *scale = NULL;
        return dt_error_set(err, DT_EINPUT, NULL, NULL, "fit needs samples at 2 or more sizes, got %zu", distinct);
    }
    return DT_OK;
}

/* Why refit rather than clamp: setting a noisy -2 us alpha to 0 and keeping beta moves the
 * whole line up by 2 us; refitting beta with the line through the origin (the same robust,
 * relative-residual fit with one regressor) gives the best line that has the latency the
 * verdict says is there, zero. It costs a second fit, only in that case. */
static int fit(const double *x, const double *t, size_t n, bool judge, cal_fit *out,
               dt_error *err)
{
    memset(out, 0, sizeof *out);
    double *scale;
    int rc = check_samples(x, t, n, &scale, err);
    if (rc == DT_OK) rc = robust_fit(x, t, n, scale, 2, out, err);
    /* a line that does not rise has no latency worth judging; the callers refuse it by beta */
    if (judge && rc == DT_OK && out->beta > 0) {
        char why[160];
        switch (cal_alpha_judge(out->alpha, out->alpha_ci)) {
        case CAL_ALPHA_OK: break;
        case CAL_ALPHA_NOISE: {
            cal_fit held;
            memset(&held, 0, sizeof held);
            rc = robust_fit(x, t, n, scale, 1, &held, err);
            if (rc == DT_OK) {
                held.alpha_held = true;
                held.free_alpha = out->alpha;
                held.free_alpha_ci = out->alpha_ci;
                *out = held;
            }
            break;
        }
        case CAL_ALPHA_NEGATIVE:
            rc = dt_error_set(err, DT_EINPUT, NULL, NULL,
                              "%s (beta %.4g s/B, R^2 %.3f): not a latency under the noise but a line that "
                              "does not describe these sizes",
                              cal_alpha_refusal(out->alpha, out->alpha_ci, why, sizeof why), out->beta, out->r2);
            break;
        }
    }
    free(scale);
    return rc;
}

int cal_fit_alpha_beta(const double *x, const double *t, size_t n, cal_fit *out, dt_error *err)
{
    return fit(x, t, n, false, out, err);
}

int cal_fit_line(const double *x, const double *t, size_t n, cal_fit *out, dt_error *err)
{
    return fit(x, t, n, true, out, err);
}
