/* test_kern_cpu.c - the CPU kernels against their naive references.
 * Pins down: fp32<->bf16/fp16 conversion (every fp16 and bf16 value round-trips, ties go to
 * even, overflow to infinity, subnormals exact, agreement with the compiler's _Float16 where it
 * has one); the threaded ring all-reduce equals the one-thread reference bit for bit for every
 * dtype, for rank counts 2..7 (non powers of two) and sizes not divisible by the rank count or
 * the chunk, and stays within the rounding bound u*(n-1)*sum|x| of the exact double sum; top-k
 * keeps exactly the k largest magnitudes (ties to the lower index) and the error-feedback
 * residual carries everything else exactly over several steps, also when the sampled threshold
 * is fooled and the full selection takes over.
 * Leaves free: timing (benchmarks and `dtsim calibrate` measure that). */
#include <float.h>
#include <math.h>
#include <string.h>

#include "dtsim/kern.h"
#include "testutil.h"

START_TEST(fp16_round_trip_all)
{
    for (uint32_t h = 0; h < 65536; h++) {
        float f = kern_fp16_to_f32((uint16_t)h);
        if (isnan(f)) {
            ck_assert(isnan(kern_fp16_to_f32(kern_f32_to_fp16(f))));
            continue;
        }
        ck_assert_uint_eq(kern_f32_to_fp16(f), h);
    }
    ck_assert_float_eq(kern_fp16_to_f32(0x3c00), 1.0f);
    ck_assert_float_eq(kern_fp16_to_f32(0x7bff), 65504.0f);
    ck_assert_float_eq(kern_fp16_to_f32(0x0001), ldexpf(1.0f, -24));
    /* ties to even: 1 + 2^-11 is halfway between 1 and 1+2^-10 -> 1; 1 + 3*2^-11 -> 1 + 2^-9 */
    ck_assert_uint_eq(kern_f32_to_fp16(1.0f + ldexpf(1.0f, -11)), 0x3c00);
    ck_assert_uint_eq(kern_f32_to_fp16(1.0f + 3 * ldexpf(1.0f, -11)), 0x3c02);
    ck_assert_uint_eq(kern_f32_to_fp16(65519.0f), 0x7bff);
    ck_assert_uint_eq(kern_f32_to_fp16(65520.0f), 0x7c00);
    ck_assert_uint_eq(kern_f32_to_fp16(-1e9f), 0xfc00);
    ck_assert_uint_eq(kern_f32_to_fp16(ldexpf(1.0f, -25)), 0x0000);      /* tie -> even 0 */
    ck_assert_uint_eq(kern_f32_to_fp16(ldexpf(3.0f, -26)), 0x0001);      /* above the tie */
    ck_assert_uint_eq(kern_f32_to_fp16(ldexpf(3.0f, -25)), 0x0002);      /* 1.5 ulp -> even 2 */
    ck_assert_uint_eq(kern_f32_to_fp16(-ldexpf(1.0f, -30)), 0x8000);
}
END_TEST

START_TEST(bf16_round_trip_all)
{
    for (uint32_t h = 0; h < 65536; h++) {
        float f = kern_bf16_to_f32((uint16_t)h);
        if (isnan(f)) continue;
        ck_assert_uint_eq(kern_f32_to_bf16(f), h);
    }
    ck_assert_uint_eq(kern_f32_to_bf16(1.0f), 0x3f80);
    ck_assert_uint_eq(kern_f32_to_bf16(1.0f + ldexpf(1.0f, -8)), 0x3f80); /* tie -> even */
    ck_assert_uint_eq(kern_f32_to_bf16(1.0f + 3 * ldexpf(1.0f, -8)), 0x3f82);
    ck_assert_uint_eq(kern_f32_to_bf16(FLT_MAX), 0x7f80); /* rounds up to infinity */
    ck_assert(isnan(kern_bf16_to_f32(kern_f32_to_bf16(NAN))));
}
END_TEST

#ifdef __FLT16_MAX__
__extension__ typedef _Float16 f16_t; /* GCC/Clang extension, hence __extension__ */

/* The compiler's _Float16 conversion is IEEE round-to-nearest-even: compare on a sweep of bit
 * patterns covering normals, subnormals, overflow and the ties between them. */
START_TEST(fp16_matches_compiler)
{
    for (uint64_t u = 0; u < 0x100000000ULL; u += 4099) {
        uint32_t x = (uint32_t)u;
        float f;
        memcpy(&f, &x, sizeof f);
        if (isnan(f)) continue;
        f16_t h = (f16_t)f;
        uint16_t hb;
        memcpy(&hb, &h, sizeof hb);
        ck_assert_msg(kern_f32_to_fp16(f) == hb, "%a: ours %04x, compiler %04x", (double)f,
                      kern_f32_to_fp16(f), hb);
    }
}
END_TEST
#endif

/* Ring all-reduce == reference exactly; and within the rounding bound of the double sum. */
static void check_ring(kern_dtype t, int ranks, size_t count, size_t chunk)
{
    size_t es = kern_dtype_size(t);
    void **in = dt_xcalloc((size_t)ranks, sizeof *in);
    void **bufs = dt_xcalloc((size_t)ranks, sizeof *bufs);
    for (int r = 0; r < ranks; r++) {
        in[r] = dt_xmalloc(count * es + 1);
        bufs[r] = dt_xmalloc(count * es + 1);
        kern_fill_gradient(t, in[r], count, 0.5, 42, r);
        memcpy(bufs[r], in[r], count * es);
    }
    void *ref = dt_xmalloc(count * es + 1);
    kern_allreduce_reference(t, (const void *const *)in, ranks, count, ref);
    kern_cpu_ring *ring = NULL;
    ck_assert_int_eq(kern_cpu_ring_create(ranks, chunk, &ring, NULL), DT_OK);
    for (int rep = 0; rep < 2; rep++) { /* twice: counters carry over between runs */
        if (rep) for (int r = 0; r < ranks; r++) memcpy(bufs[r], in[r], count * es);
        double s = kern_cpu_ring_allreduce(ring, t, bufs, count);
        ck_assert(s >= 0);
        for (int r = 0; r < ranks; r++)
            ck_assert_msg(memcmp(bufs[r], ref, count * es) == 0,
                          "%s ranks=%d count=%zu chunk=%zu: rank %d differs from reference",
                          kern_dtype_name(t), ranks, count, chunk, r);
    }
    kern_cpu_ring_destroy(ring);
    double u = kern_dtype_unit_roundoff(t);
    for (size_t e = 0; e < count; e++) {
        double exact = 0, absum = 0;
        for (int r = 0; r < ranks; r++) {
            double x = kern_load(t, in[r], e);
            exact += x;
            absum += fabs(x);
        }
        /* n-1 roundings of partial sums, each at most u*|partial| <= u*sum|x| (first order) */
        double bound = 1.01 * u * (ranks - 1) * absum + 1e-30;
        ck_assert_msg(fabs(kern_load(t, ref, e) - exact) <= bound, "%s e=%zu: %g vs %g (bound %g)",
                      kern_dtype_name(t), e, (double)kern_load(t, ref, e), exact, bound);
    }
    for (int r = 0; r < ranks; r++) {
        free(in[r]);
        free(bufs[r]);
    }
    free(in);
    free(bufs);
    free(ref);
}

START_TEST(ring_matches_reference)
{
    static const size_t counts[] = {1, 2, 3, 7, 64, 1000, 4097, 30001};
    kern_dtype t = (kern_dtype)_i;
    for (int ranks = 2; ranks <= 7; ranks++)
        for (size_t c = 0; c < sizeof counts / sizeof *counts; c++)
            check_ring(t, ranks, counts[c], 1024); /* small chunks: many pipelined chunks */
    check_ring(t, 4, 1 << 18, 0);                 /* default 64 KiB chunks */
    check_ring(t, 3, 5, 4);                       /* one element per chunk (fp32) */
}
END_TEST

START_TEST(ring_one_rank_is_noop)
{
    float x[3] = {1, 2, 3};
    void *b[1] = {x};
    kern_cpu_ring *ring = NULL;
    ck_assert_int_eq(kern_cpu_ring_create(1, 0, &ring, NULL), DT_OK);
    ck_assert(kern_cpu_ring_allreduce(ring, KERN_FP32, b, 3) == 0.0);
    ck_assert(x[0] == 1 && x[1] == 2 && x[2] == 3);
    kern_cpu_ring_destroy(ring);
}
END_TEST

/* Hand-checked: 4 ranks, integer data, sums exact in every type. */
START_TEST(ring_small_exact)
{
    float d[4][6];
    void *b[4];
    for (int r = 0; r < 4; r++) {
        for (int e = 0; e < 6; e++) d[r][e] = (float)(10 * r + e);
        b[r] = d[r];
    }
    kern_cpu_ring *ring = NULL;
    ck_assert_int_eq(kern_cpu_ring_create(4, 4, &ring, NULL), DT_OK);
    kern_cpu_ring_allreduce(ring, KERN_FP32, b, 6);
    for (int r = 0; r < 4; r++)
        for (int e = 0; e < 6; e++) ck_assert_float_eq(d[r][e], 60.0f + 4.0f * (float)e);
    kern_cpu_ring_destroy(ring);
}
END_TEST

static void check_topk(size_t count, size_t k, int steps, bool with_ties)
{
    float *g = dt_xmalloc(count * sizeof *g + 4), *res = dt_xcalloc(count + 1, sizeof *res);
    float *res2 = dt_xcalloc(count + 1, sizeof *res2), *scratch = dt_xmalloc(count * 4 + 4);
    uint32_t *idx = dt_xmalloc(k * 4 + 4), *idx2 = dt_xmalloc(k * 4 + 4);
    float *val = dt_xmalloc(k * 4 + 4), *val2 = dt_xmalloc(k * 4 + 4);
    double *sent = dt_xcalloc(count + 1, sizeof *sent), *total = dt_xcalloc(count + 1, sizeof *total);
    for (int s = 0; s < steps; s++) {
        kern_fill_gradient(KERN_FP32, g, count, 1.0, 7, s);
        if (with_ties)
            for (size_t i = 0; i < count; i++) g[i] = (float)((int)(g[i] * 2)) * 0.5f; /* few values */
        for (size_t i = 0; i < count; i++) total[i] += g[i];
        kern_topk_compress(g, res, count, k, idx, val, scratch);
        kern_topk_reference(g, res2, count, k, idx2, val2);
        size_t kk = k < count ? k : count;
        ck_assert(memcmp(idx, idx2, kk * 4) == 0);
        ck_assert(memcmp(val, val2, kk * 4) == 0);
        ck_assert(memcmp(res, res2, count * 4) == 0);
        /* kept magnitudes dominate every residual magnitude */
        float minkept = INFINITY;
        for (size_t j = 0; j < kk; j++) {
            if (j) ck_assert(idx[j] > idx[j - 1]);
            ck_assert(res[idx[j]] == 0.0f);
            minkept = fminf(minkept, fabsf(val[j]));
            sent[idx[j]] += val[j];
        }
        for (size_t i = 0; i < count; i++) ck_assert(fabsf(res[i]) <= minkept || kk == 0);
    }
    /* error feedback: what was sent plus what remains is what was fed in (up to fp32 rounding
     * of the residual accumulation, bounded by steps * u * sum |g|) */
    for (size_t i = 0; i < count; i++)
        ck_assert_msg(fabs(sent[i] + res[i] - total[i]) <= 1e-5 * steps * (1 + fabs(total[i])),
                      "i=%zu sent %g res %g total %g", i, sent[i], (double)res[i], total[i]);
    free(g); free(res); free(res2); free(scratch); free(idx); free(idx2); free(val); free(val2);
    free(sent); free(total);
}

START_TEST(topk_matches_reference)
{
    check_topk(1, 1, 2, false);
    check_topk(10, 0, 2, false);
    check_topk(10, 10, 2, false);
    check_topk(10, 15, 2, false);
    check_topk(1000, 10, 5, false);
    check_topk(1000, 10, 5, true);
    check_topk(4097, 41, 4, true);
    check_topk(100000, 1000, 3, false);
}
END_TEST

/* A case by hand: magnitudes with ties, and the residual carried into the next step. */
START_TEST(topk_by_hand)
{
    float g[6] = {0.5f, -3.0f, 2.0f, -2.0f, 1.0f, 0.0f}, res[6] = {0}, sc[6], val[3];
    uint32_t idx[3];
    kern_topk_compress(g, res, 6, 3, idx, val, sc);
    ck_assert_uint_eq(idx[0], 1); ck_assert_uint_eq(idx[1], 2); ck_assert_uint_eq(idx[2], 3);
    ck_assert_float_eq(val[0], -3.0f); ck_assert_float_eq(val[2], -2.0f);
    ck_assert_float_eq(res[0], 0.5f); ck_assert_float_eq(res[4], 1.0f); ck_assert_float_eq(res[1], 0.0f);
    float g2[6] = {0.6f, 0, 0, 0, 0.0f, 0};
    kern_topk_compress(g2, res, 6, 1, idx, val, sc); /* residual 1.1 at 0 beats 1.0 at 4 */
    ck_assert_uint_eq(idx[0], 0);
    ck_assert_float_eq_tol(val[0], 1.1f, 1e-6f);
    ck_assert_float_eq(res[0], 0.0f);
}
END_TEST

/* Data that fools the sampled threshold: the sample stride hits only the large values, so fewer
 * than k elements pass it and the full selection must take over; and a constant array (all
 * ties). Both against the reference. */
START_TEST(topk_sampling_fallback)
{
    size_t n = 65536, k = 655;
    float *g = dt_xmalloc(n * 4), *r1 = dt_xcalloc(n, 4), *r2 = dt_xcalloc(n, 4), *sc = dt_xmalloc(n * 4);
    float *v1 = dt_xmalloc(k * 4), *v2 = dt_xmalloc(k * 4);
    uint32_t *i1 = dt_xmalloc(k * 4), *i2 = dt_xmalloc(k * 4);
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < n; i++)
            g[i] = pass ? 0.25f : (i % 64 == 0 ? 1.0f + (float)i * 1e-6f : 1e-3f * (float)(i % 7));
        memset(r1, 0, n * 4);
        memset(r2, 0, n * 4);
        kern_topk_compress(g, r1, n, k, i1, v1, sc);
        kern_topk_reference(g, r2, n, k, i2, v2);
        ck_assert(memcmp(i1, i2, k * 4) == 0);
        ck_assert(memcmp(v1, v2, k * 4) == 0);
        ck_assert(memcmp(r1, r2, n * 4) == 0);
    }
    ck_assert_uint_eq(i1[0], 0); /* all ties: the lowest indices win */
    ck_assert_uint_eq(i1[k - 1], k - 1);
    free(g); free(r1); free(r2); free(sc); free(v1); free(v2); free(i1); free(i2);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("kern_cpu");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, fp16_round_trip_all);
    tcase_add_test(tc, bf16_round_trip_all);
#ifdef __FLT16_MAX__
    tcase_add_test(tc, fp16_matches_compiler);
#endif
    tcase_add_loop_test(tc, ring_matches_reference, 0, KERN_DTYPE_COUNT);
    tcase_add_test(tc, ring_one_rank_is_noop);
    tcase_add_test(tc, ring_small_exact);
    tcase_add_test(tc, topk_matches_reference);
    tcase_add_test(tc, topk_by_hand);
    tcase_add_test(tc, topk_sampling_fallback);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return dt_run_suite(suite()); }
