/* bench_kern.c - speed of the real calibration kernels on this machine: the threaded CPU ring
 * all-reduce (bus bandwidth, nccl-tests convention busbw = 2(n-1)/n * S / t) per dtype and rank
 * count, top-k compression throughput, and the fp16/bf16 conversions. Prints the median of 9
 * runs after 2 warm-ups; figures, not assertions (docs/performance.md quotes them). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dtsim/kern.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#define RUNS 9

static void ring(int ranks, kern_dtype t, size_t bytes)
{
    size_t count = bytes / kern_dtype_size(t);
    void **b = calloc((size_t)ranks, sizeof *b);
    for (int r = 0; r < ranks; r++) {
        b[r] = malloc(bytes);
        kern_fill_gradient(t, b[r], count, 1e-3, 1, r);
    }
    kern_cpu_ring *ring = NULL;
    if (kern_cpu_ring_create(ranks, 0, &ring, NULL) != DT_OK) {
        fprintf(stderr, "bench_kern: could not start %d ranks\n", ranks);
        exit(1);
    }
    double s[RUNS];
    for (int i = 0; i < 2; i++) kern_cpu_ring_allreduce(ring, t, b, count);
    for (int i = 0; i < RUNS; i++) s[i] = kern_cpu_ring_allreduce(ring, t, b, count);
    qsort(s, RUNS, sizeof *s, cmp);
    double busbw = 2.0 * (ranks - 1) / ranks * (double)bytes / s[RUNS / 2];
    printf("ring all-reduce  %d ranks  %-4s  %8.0f KiB  median %9.1f us  busbw %6.2f GB/s\n", ranks,
           kern_dtype_name(t), bytes / 1024.0, s[RUNS / 2] * 1e6, busbw / 1e9);
    kern_cpu_ring_destroy(ring);
    for (int r = 0; r < ranks; r++) free(b[r]);
    free(b);
}

static void topk(size_t n)
{
    float *g = malloc(n * 4), *res = calloc(n, 4), *sc = malloc(n * 4), *val = malloc(n / 100 * 4 + 4);
    uint32_t *idx = malloc(n / 100 * 4 + 4);
    kern_fill_gradient(KERN_FP32, g, n, 1e-3, 1, 0);
    double s[RUNS];
    for (int i = 0; i < RUNS + 2; i++) {
        memset(res, 0, n * 4);
        double t0 = now_s();
        kern_topk_compress(g, res, n, n / 100, idx, val, sc);
        if (i >= 2) s[i - 2] = now_s() - t0;
    }
    qsort(s, RUNS, sizeof *s, cmp);
    printf("top-k 1%%         %9zu elements  median %9.1f us  %6.1f M elements/s\n", n, s[RUNS / 2] * 1e6, n / s[RUNS / 2] / 1e6);
    free(g); free(res); free(sc); free(val); free(idx);
}

static void conversions(void)
{
    size_t n = 1 << 22;
    float *f = malloc(n * 4);
    uint16_t *h = malloc(n * 2);
    kern_fill_gradient(KERN_FP32, f, n, 1.0, 1, 0);
    double t0 = now_s();
    for (size_t i = 0; i < n; i++) h[i] = kern_f32_to_fp16(f[i]);
    double t1 = now_s();
    for (size_t i = 0; i < n; i++) h[i] = kern_f32_to_bf16(f[i]);
    double t2 = now_s();
    volatile float sink = 0;
    for (size_t i = 0; i < n; i++) sink += kern_fp16_to_f32(h[i]);
    double t3 = now_s();
    printf("f32->fp16 %.0f M/s, f32->bf16 %.0f M/s, fp16->f32 %.0f M/s\n", n / (t1 - t0) / 1e6, n / (t2 - t1) / 1e6, n / (t3 - t2) / 1e6);
    free(f);
    free(h);
}

int main(void)
{
    for (int ranks = 2; ranks <= 4; ranks += 2)
        for (int t = 0; t < KERN_DTYPE_COUNT; t++) {
            ring(ranks, (kern_dtype)t, 256 << 10);
            ring(ranks, (kern_dtype)t, 4 << 20);
        }
    topk(1 << 16);
    topk(1 << 20);
    conversions();
    return 0;
}
