/* kern_topk.c - top-k sparsification with error feedback, the compressor of "deep gradient
 * compression" style data parallelism.
 *
 * acc = grad + residual; the k entries of largest magnitude are sent as (index, value) pairs and
 * everything else stays in the residual for the next step, so no gradient mass is ever lost.
 * Selection is a three-way-partition quickselect on a copy of the magnitudes (average O(n),
 * robust to the many equal values a sparse residual has) for the k-th largest magnitude t,
 * then one in-order scan keeps every |acc| > t and the first |acc| == t up to k: the kept
 * indices come out sorted and ties break by lower index, deterministically.
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

void kern_topk_compress(const float *grad, float *residual, size_t count, size_t k,
                        uint32_t *idx, float *val, float *scratch)
{
    if (k > count) k = count;
    for (size_t i = 0; i < count; i++) {
        residual[i] += grad[i];
        scratch[i] = fabsf(residual[i]);
    }
    if (k == 0) return;
    float t = select_desc(scratch, count, k - 1);
    size_t above = 0;
    for (size_t i = 0; i < count; i++) above += fabsf(residual[i]) > t;
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
