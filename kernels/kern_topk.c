/* kern_topk.c - top-k sparsification with error feedback, the compressor of "deep gradient
 * compression" style data parallelism.
 *
 * acc = grad + residual; the k entries of largest magnitude are sent as (index, value) pairs and
 * everything else stays in the residual for the next step, so no gradient mass is ever lost.
 * Selection finds the k-th largest magnitude t: a fixed-stride sample proposes a threshold, one
 * pass keeps the ~1.5k candidates above it, and a three-way-partition quickselect (robust to the
 * many equal values a sparse residual has) runs on those only - about three passes over the
 * data in all instead of a partition of everything. Then one in-order scan keeps every
 * |acc| > t and the first |acc| == t up to k: the kept indices come out sorted and ties break by
 * lower index, deterministically.
 * Inputs must be finite (a NaN has no magnitude order).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dtsim/kern.h"

/* Value of rank `k` (0-based) in descending order of a[0..n). Reorders a. */
static float select_desc(float *a, size_t n, size_t k)
{
    size_t lo = 0, hi = n; /* search window [lo, hi) */
    uint64_t state = 0x9e3779b97f4a7c15ULL;
    for (;;) {
        if (hi - lo == 1) return a[lo];
        /* pivot from a fixed xorshift sequence: deterministic, and no adversarial worst case
         * for sorted or constant inputs */
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        float p = a[lo + (size_t)(state % (hi - lo))];
        /* three-way partition, descending: [lo,gt) > p, [gt,i) == p, (lt,hi) < p */
        size_t gt = lo, i = lo, lt = hi;
        while (i < lt) {
            if (a[i] > p) {
                float tmp = a[gt];
                a[gt++] = a[i];
                a[i++] = tmp;
            } else if (a[i] < p) {
                float tmp = a[--lt];
                a[lt] = a[i];
                a[i] = tmp;
            } else {
                i++;
            }
        }
        if (k < gt) hi = gt;
        else if (k < lt) return p;
        else lo = lt;
    }
}

#define TOPK_SAMPLE 1024

/* The k-th largest of |acc[0..n)| (k >= 1). Sampling first: a fixed-stride sample of 1024
 * magnitudes gives a threshold t0 that about 1.5k + 8 elements should exceed; one pass copies
 * only those candidates, and the quickselect runs on them (a few thousand values instead of n).
 * Exact whatever the sample says: if at least k elements are >= t0, the k-th largest overall is
 * >= t0 and hence the k-th largest candidate; otherwise fall back to selecting over all n.
 * Returns the threshold and, through *above, how many magnitudes exceed it. */
static float kth_magnitude(const float *acc, size_t n, size_t k, float *scratch, size_t *above)
{
    size_t c = 0;
    if (n >= 2 * TOPK_SAMPLE) {
        float sample[TOPK_SAMPLE];
        size_t stride = n / TOPK_SAMPLE;
        for (size_t j = 0; j < TOPK_SAMPLE; j++) sample[j] = fabsf(acc[j * stride]);
        double want = 1.5 * (double)k / (double)n * TOPK_SAMPLE + 8;
        float t0 = select_desc(sample, TOPK_SAMPLE, want >= TOPK_SAMPLE - 1 ? TOPK_SAMPLE - 1 : (size_t)want);
        for (size_t i = 0; i < n; i++) {
            float a = fabsf(acc[i]);
            if (a >= t0) scratch[c++] = a;
        }
        if (c < k) c = 0; /* unlucky sample: select over everything */
    }
    if (c == 0) {
        for (size_t i = 0; i < n; i++) scratch[i] = fabsf(acc[i]);
        c = n;
    }
    float t = select_desc(scratch, c, k - 1);
    /* select_desc leaves everything > t before position k-1; count them exactly */
    size_t a = 0;
    for (size_t i = 0; i < c; i++) a += scratch[i] > t;
    *above = a;
    return t;
}

void kern_topk_compress(const float *grad, float *residual, size_t count, size_t k,
                        uint32_t *idx, float *val, float *scratch)
{
    if (k > count) k = count;
    for (size_t i = 0; i < count; i++) residual[i] += grad[i];
    if (k == 0) return;
    size_t above = 0;
    float t = kth_magnitude(residual, count, k, scratch, &above);
    size_t ties = k - above, m = 0;
    for (size_t i = 0; i < count && m < k; i++) {
        float a = fabsf(residual[i]);
        if (a > t || (a == t && ties > 0)) {
            if (a == t) ties--;
            idx[m] = (uint32_t)i;
            val[m] = residual[i];
            residual[i] = 0.0f;
            m++;
        }
    }
    DT_ASSERT(m == k);
}

typedef struct mag_idx {
    float mag;
    uint32_t idx;
} mag_idx;

static int by_mag_desc(const void *pa, const void *pb)
{
    const mag_idx *a = pa, *b = pb;
    if (a->mag != b->mag) return a->mag > b->mag ? -1 : 1;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

static int by_u32(const void *pa, const void *pb)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    return (a > b) - (a < b);
}

void kern_topk_reference(const float *grad, float *residual, size_t count, size_t k,
                         uint32_t *idx, float *val)
{
    if (k > count) k = count;
    mag_idx *m = dt_xmalloc((count ? count : 1) * sizeof *m);
    for (size_t i = 0; i < count; i++) {
        residual[i] += grad[i];
        m[i].mag = fabsf(residual[i]);
        m[i].idx = (uint32_t)i;
    }
    qsort(m, count, sizeof *m, by_mag_desc);
    for (size_t j = 0; j < k; j++) idx[j] = m[j].idx;
    qsort(idx, k, sizeof *idx, by_u32);
    for (size_t j = 0; j < k; j++) {
        val[j] = residual[idx[j]];
        residual[idx[j]] = 0.0f;
    }
    free(m);
}
