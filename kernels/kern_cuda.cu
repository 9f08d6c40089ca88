/* kern_cuda.cu - calibration kernels on CUDA devices: a ring all-reduce over peer copies, a top-k
 * compression kernel with error feedback, and NCCL's all-reduce for reference.
 *
 * Ring: logical rank r lives on device r % devices (on one GPU every rank is a buffer there)
 * with its own stream. Each of the 2(n-1) steps moves one segment from rank r to rank r+1 with
 * cudaMemcpyPeerAsync on the receiver's stream, then (reduce-scatter) a kernel adds it into the
 * receiver's segment, in chunks of CHUNK_BYTES so the next hop can start on the first chunk
 * while later ones are still arriving. Cross-rank order is carried by events: the receiver's
 * stream waits for the sender's previous step. Segments and summation order are those of the CPU
 * ring (kernels/kern_cpu_ring.c), and the device rounds bf16/fp16 to nearest-even exactly like
 * the host conversions, so verification demands bit equality with kern_allreduce_reference.
 *
 * Top-k: acc = residual + grad in place; a 4-pass radix select on the magnitude bits finds the
 * k-th largest |acc| (t) and how many ties at t to keep; an ordered compaction (per-block counts,
 * host prefix, in-block scans) writes the kept (index, value) pairs sorted by index and zeroes
 * them in the residual - the same contract as kern_topk_compress, checked bit for bit.
 *
 * NCCL: one communicator per device (ncclCommInitAll), so NCCL ranks = devices (>= 2).
 * Timing: CUDA events on rank 0's stream around the whole collective.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#ifdef DTSIM_HAVE_NCCL
#include <nccl.h>
#endif

/* error.h is C17: _Noreturn has no C++ spelling but [[noreturn]] */
#define _Noreturn [[noreturn]]
extern "C" {
#include "dtsim/kern.h"
}
#undef _Noreturn

#define CHUNK_BYTES (1u << 20)
#define TOPK_BLOCK 1024 /* elements per block: 256 threads x 4 */

struct kern_cuda_ctx {
    kern_cuda_algo algo;
    int ranks, n_dev;
    kern_dtype dtype;
    size_t max_count;
    std::vector<int> dev;
    std::vector<void *> buf, recv;
    std::vector<cudaStream_t> stream;
    std::vector<cudaEvent_t> step_done;
    cudaEvent_t t_start, t_stop;
#ifdef DTSIM_HAVE_NCCL
    std::vector<ncclComm_t> comms;
#endif
    /* top-k */
    float *grad, *res, *res0, *val;
    uint32_t *idx, *hist, *counts, *prefix;
};

static int cuda_fail(dt_error *err, const char *what, cudaError_t e)
{
    return dt_error_set(err, DT_EINTERNAL, NULL, NULL, "%s: %s", what, cudaGetErrorString(e));
}

#define CK(call)                                                  \
    do {                                                          \
        cudaError_t e_ = (call);                                  \
        if (e_ != cudaSuccess) return cuda_fail(err, #call, e_); \
    } while (0)

extern "C" int kern_cuda_devices(int *n, char *name, size_t name_size, dt_error *err)
{
    *n = 0;
    if (name_size) name[0] = '\0';
    cudaError_t e = cudaGetDeviceCount(n);
    if (e != cudaSuccess || *n == 0) {
        *n = 0;
        return dt_error_set(err, DT_EUNSUPPORTED, NULL, NULL, "no CUDA device (%s)",
                            e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    }
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, 0) == cudaSuccess && name_size)
        snprintf(name, name_size, "%d x %s", *n, p.name);
    return DT_OK;
}

/* ---------------------------------------------------------------- element arithmetic */

template <int T> struct elem;
template <> struct elem<KERN_FP32> {
    typedef float t;
    static __device__ float add(float a, float b) { return __fadd_rn(a, b); }
};
template <> struct elem<KERN_BF16> {
    typedef uint16_t t;
    static __device__ uint16_t add(uint16_t a, uint16_t b)
    {
        float s = __fadd_rn(__bfloat162float(__ushort_as_bfloat16(a)), __bfloat162float(__ushort_as_bfloat16(b)));
        return __bfloat16_as_ushort(__float2bfloat16_rn(s));
    }
};
template <> struct elem<KERN_FP16> {
    typedef uint16_t t;
    static __device__ uint16_t add(uint16_t a, uint16_t b)
    {
        float s = __fadd_rn(__half2float(__ushort_as_half(a)), __half2float(__ushort_as_half(b)));
        return __half_as_ushort(__float2half_rn(s));
    }
};

/* a[i] = incoming[i] + a[i]: the operand order of the CPU ring and the reference */
template <int T>
__global__ void reduce_kernel(typename elem<T>::t *a, const typename elem<T>::t *incoming, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        a[i] = elem<T>::add(incoming[i], a[i]);
}

static void launch_reduce(kern_dtype t, void *a, const void *b, size_t n, cudaStream_t s)
{
    unsigned blocks = (unsigned)((n + 255) / 256);
    if (blocks > 4096) blocks = 4096;
    if (blocks == 0) return;
    switch (t) {
    case KERN_FP32: reduce_kernel<KERN_FP32><<<blocks, 256, 0, s>>>((float *)a, (const float *)b, n); break;
    case KERN_BF16: reduce_kernel<KERN_BF16><<<blocks, 256, 0, s>>>((uint16_t *)a, (const uint16_t *)b, n); break;
    default: reduce_kernel<KERN_FP16><<<blocks, 256, 0, s>>>((uint16_t *)a, (const uint16_t *)b, n); break;
    }
}

/* ---------------------------------------------------------------- ring */

static size_t seg_begin(size_t count, int n, int k) { return (count * (size_t)k) / (size_t)n; }
static int mod(int a, int n) { return ((a % n) + n) % n; }

/* All ranks, step s: rank r sends segment send(r) to r+1, which reduces or copies it. */
static int ring_run(kern_cuda_ctx *c, size_t count, dt_error *err)
{
    int n = c->ranks;
    size_t es = kern_dtype_size(c->dtype);
    for (int phase = 0; phase < 2; phase++) {
        for (int s = 0; s < n - 1; s++) {
            for (int r = 0; r < n; r++) {
                CK(cudaSetDevice(c->dev[r]));
                CK(cudaEventRecord(c->step_done[r], c->stream[r]));
            }
            for (int r = 0; r < n; r++) {
                int dst = (r + 1) % n;
                int seg = phase == 0 ? mod(r - s, n) : mod(r + 1 - s, n);
                size_t e0 = seg_begin(count, n, seg), e1 = seg_begin(count, n, seg + 1);
                CK(cudaSetDevice(c->dev[dst]));
                CK(cudaStreamWaitEvent(c->stream[dst], c->step_done[r], 0));
                size_t per = CHUNK_BYTES / es;
                for (size_t a = e0; a < e1; a += per) {
                    size_t b = a + per < e1 ? a + per : e1;
                    char *src = (char *)c->buf[r] + a * es;
                    if (phase == 0) {
                        char *stage = (char *)c->recv[dst] + (a - e0) * es;
                        CK(cudaMemcpyPeerAsync(stage, c->dev[dst], src, c->dev[r], (b - a) * es, c->stream[dst]));
                        launch_reduce(c->dtype, (char *)c->buf[dst] + a * es, stage, b - a, c->stream[dst]);
                    } else {
                        CK(cudaMemcpyPeerAsync((char *)c->buf[dst] + a * es, c->dev[dst], src, c->dev[r], (b - a) * es,
                                               c->stream[dst]));
                    }
                }
                CK(cudaGetLastError());
            }
        }
    }
    return DT_OK;
}

/* ---------------------------------------------------------------- top-k */

__global__ void topk_accumulate(float *res, const float *grad, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        res[i] = __fadd_rn(res[i], grad[i]);
}

__device__ static uint32_t mag_key(float v) { return __float_as_uint(fabsf(v)); }

__global__ void topk_hist(const float *acc, size_t n, uint32_t prefix, uint32_t mask, int shift, uint32_t *hist)
{
    __shared__ uint32_t h[256];
    h[threadIdx.x] = 0;
    __syncthreads();
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint32_t k = mag_key(acc[i]);
        if ((k & mask) == prefix) atomicAdd(&h[(k >> shift) & 255u], 1u);
    }
    __syncthreads();
    if (h[threadIdx.x]) atomicAdd(&hist[threadIdx.x], h[threadIdx.x]);
}

/* counts[2b] = elements of block b above t, counts[2b+1] = ties at t */
__global__ void topk_count(const float *acc, size_t n, uint32_t t, uint32_t *counts)
{
    __shared__ uint32_t above, ties;
    if (threadIdx.x == 0) above = ties = 0;
    __syncthreads();
    size_t base = (size_t)blockIdx.x * TOPK_BLOCK + threadIdx.x * 4;
    uint32_t a = 0, e = 0;
    for (int j = 0; j < 4; j++)
        if (base + j < n) {
            uint32_t k = mag_key(acc[base + j]);
            a += k > t;
            e += k == t;
        }
    atomicAdd(&above, a);
    atomicAdd(&ties, e);
    __syncthreads();
    if (threadIdx.x == 0) {
        counts[2 * blockIdx.x] = above;
        counts[2 * blockIdx.x + 1] = ties;
    }
}

/* exclusive scan of v over the 256 threads of the block */
__device__ static uint32_t block_exscan(uint32_t v, uint32_t *sh)
{
    sh[threadIdx.x] = v;
    __syncthreads();
    for (unsigned off = 1; off < 256; off *= 2) {
        uint32_t x = threadIdx.x >= off ? sh[threadIdx.x - off] : 0;
        __syncthreads();
        sh[threadIdx.x] += x;
        __syncthreads();
    }
    uint32_t incl = sh[threadIdx.x];
    __syncthreads();
    return incl - v;
}

/* prefix[2b] = kept before block b, prefix[2b+1] = ties before block b; need = ties to keep */
__global__ void topk_emit(float *acc, size_t n, uint32_t t, uint32_t need, const uint32_t *prefix, uint32_t *idx,
                          float *val)
{
    __shared__ uint32_t sh[256];
    size_t base = (size_t)blockIdx.x * TOPK_BLOCK + threadIdx.x * 4;
    uint32_t k[4], nt = 0;
    for (int j = 0; j < 4; j++) {
        k[j] = base + j < n ? mag_key(acc[base + j]) : 0u;
        nt += base + j < n && k[j] == t;
    }
    uint32_t tie_rank = prefix[2 * blockIdx.x + 1] + block_exscan(nt, sh);
    bool keep[4];
    uint32_t nk = 0;
    for (int j = 0; j < 4; j++) {
        bool in = base + j < n;
        bool tie = in && k[j] == t;
        keep[j] = in && (k[j] > t || (tie && tie_rank < need));
        tie_rank += tie;
        nk += keep[j];
    }
    uint32_t pos = prefix[2 * blockIdx.x] + block_exscan(nk, sh);
    for (int j = 0; j < 4; j++)
        if (keep[j]) {
            idx[pos] = (uint32_t)(base + j);
            val[pos] = acc[base + j];
            acc[base + j] = 0.0f;
            pos++;
        }
}

static int topk_run(kern_cuda_ctx *c, size_t n, size_t k, dt_error *err)
{
    cudaStream_t s = c->stream[0];
    unsigned grid = (unsigned)((n + 255) / 256);
    if (grid > 4096) grid = 4096;
    topk_accumulate<<<grid, 256, 0, s>>>(c->res, c->grad, n);
    if (k == 0) return DT_OK;
    uint32_t prefix = 0, mask = 0, kk = (uint32_t)k, h[256];
    for (int shift = 24; shift >= 0; shift -= 8) {
        CK(cudaMemsetAsync(c->hist, 0, 256 * sizeof(uint32_t), s));
        topk_hist<<<grid, 256, 0, s>>>(c->res, n, prefix, mask, shift, c->hist);
        CK(cudaMemcpyAsync(h, c->hist, sizeof h, cudaMemcpyDeviceToHost, s));
        CK(cudaStreamSynchronize(s));
        int b = 255;
        for (; b > 0 && kk > h[b]; b--) kk -= h[b];
        prefix |= (uint32_t)b << shift;
        mask |= 255u << shift;
    }
    uint32_t t = prefix, need = kk; /* kk-th of the ties at t, counting from the lowest index */
    size_t blocks = (n + TOPK_BLOCK - 1) / TOPK_BLOCK;
    topk_count<<<(unsigned)blocks, 256, 0, s>>>(c->res, n, t, c->counts);
    std::vector<uint32_t> cnt(2 * blocks), pre(2 * blocks);
    CK(cudaMemcpyAsync(cnt.data(), c->counts, cnt.size() * sizeof(uint32_t), cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    uint32_t kept = 0, ties = 0;
    for (size_t b = 0; b < blocks; b++) {
        pre[2 * b] = kept;
        pre[2 * b + 1] = ties;
        uint32_t take = ties >= need ? 0 : (need - ties < cnt[2 * b + 1] ? need - ties : cnt[2 * b + 1]);
        kept += cnt[2 * b] + take;
        ties += cnt[2 * b + 1];
    }
    if (kept != k) return dt_error_set(err, DT_EINTERNAL, NULL, NULL, "top-k kernel selected %u of %zu", kept, k);
    CK(cudaMemcpyAsync(c->prefix, pre.data(), pre.size() * sizeof(uint32_t), cudaMemcpyHostToDevice, s));
    topk_emit<<<(unsigned)blocks, 256, 0, s>>>(c->res, n, t, need, c->prefix, c->idx, c->val);
    CK(cudaGetLastError());
    return DT_OK;
}

static size_t topk_k(size_t n)
{
    size_t k = (size_t)((double)n * 0.01 + 0.5);
    return k < 1 ? 1 : k > n ? n : k;
}

/* ---------------------------------------------------------------- context */

extern "C" void kern_cuda_destroy(kern_cuda_ctx *c)
{
    if (!c) return;
#ifdef DTSIM_HAVE_NCCL
    for (ncclComm_t m : c->comms) ncclCommDestroy(m);
#endif
    for (size_t r = 0; r < c->stream.size(); r++) {
        cudaSetDevice(c->dev[r]);
        if (c->buf[r]) cudaFree(c->buf[r]);
        if (c->recv[r]) cudaFree(c->recv[r]);
        cudaStreamDestroy(c->stream[r]);
        cudaEventDestroy(c->step_done[r]);
    }
    if (!c->dev.empty()) {
        cudaSetDevice(c->dev[0]);
        cudaEventDestroy(c->t_start);
        cudaEventDestroy(c->t_stop);
    }
    cudaFree(c->grad);
    cudaFree(c->res);
    cudaFree(c->res0);
    cudaFree(c->val);
    cudaFree(c->idx);
    cudaFree(c->hist);
    cudaFree(c->counts);
    cudaFree(c->prefix);
    delete c;
}

static int create(kern_cuda_algo a, int ranks, kern_dtype t, size_t max_count, kern_cuda_ctx *c, dt_error *err)
{
    char name[8];
    int rc = kern_cuda_devices(&c->n_dev, name, sizeof name, err);
    if (rc) return rc;
    if (a == KERN_CUDA_NCCL) {
#ifndef DTSIM_HAVE_NCCL
        return dt_error_set(err, DT_EUNSUPPORTED, NULL, NULL, "--backend nccl: this dtsim was built without NCCL");
#else
        if (c->n_dev < 2)
            return dt_error_set(err, DT_EUNSUPPORTED, NULL, NULL,
                                "--backend nccl needs 2 or more GPUs (NCCL puts one rank per device), found %d", c->n_dev);
        ranks = c->n_dev;
#endif
    }
    if (a == KERN_CUDA_TOPK) ranks = 1;
    c->ranks = ranks;
    size_t es = a == KERN_CUDA_TOPK ? 4 : kern_dtype_size(t);
    for (int r = 0; r < ranks; r++) {
        int d = r % c->n_dev;
        c->dev.push_back(d);
        c->buf.push_back(nullptr);
        c->recv.push_back(nullptr);
        c->stream.push_back(nullptr);
        c->step_done.push_back(nullptr);
        CK(cudaSetDevice(d));
        CK(cudaStreamCreateWithFlags(&c->stream[r], cudaStreamNonBlocking));
        CK(cudaEventCreateWithFlags(&c->step_done[r], cudaEventDisableTiming));
        if (a != KERN_CUDA_TOPK) {
            CK(cudaMalloc(&c->buf[r], max_count * es + 16));
            CK(cudaMalloc(&c->recv[r], (max_count / (size_t)ranks + 2) * es + 16));
        }
    }
    for (int i = 0; i < c->n_dev && i < ranks; i++)
        for (int j = 0; j < c->n_dev && j < ranks; j++) {
            int ok = 0;
            if (i != j && cudaDeviceCanAccessPeer(&ok, i, j) == cudaSuccess && ok) {
                cudaSetDevice(i);
                cudaError_t e = cudaDeviceEnablePeerAccess(j, 0);
                if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) return cuda_fail(err, "cudaDeviceEnablePeerAccess", e);
                cudaGetLastError(); /* clear "already enabled" */
            }
        }
    CK(cudaSetDevice(c->dev[0]));
    CK(cudaEventCreate(&c->t_start));
    CK(cudaEventCreate(&c->t_stop));
    if (a == KERN_CUDA_TOPK) {
        size_t n = max_count ? max_count : 1, k = topk_k(n), blocks = (n + TOPK_BLOCK - 1) / TOPK_BLOCK;
        CK(cudaMalloc(&c->grad, n * 4));
        CK(cudaMalloc(&c->res, n * 4));
        CK(cudaMalloc(&c->res0, n * 4));
        CK(cudaMalloc(&c->val, k * 4));
        CK(cudaMalloc(&c->idx, k * 4));
        CK(cudaMalloc(&c->hist, 256 * 4));
        CK(cudaMalloc(&c->counts, 2 * blocks * 4));
        CK(cudaMalloc(&c->prefix, 2 * blocks * 4));
        std::vector<float> h(n);
        kern_fill_gradient(KERN_FP32, h.data(), n, 1e-3, 1, 1000);
        CK(cudaMemcpy(c->grad, h.data(), n * 4, cudaMemcpyHostToDevice));
        kern_fill_gradient(KERN_FP32, h.data(), n, 1e-4, 1, 1001);
        CK(cudaMemcpy(c->res0, h.data(), n * 4, cudaMemcpyHostToDevice));
    }
#ifdef DTSIM_HAVE_NCCL
    if (a == KERN_CUDA_NCCL) {
        c->comms.resize((size_t)ranks);
        ncclResult_t nr = ncclCommInitAll(c->comms.data(), ranks, c->dev.data());
        if (nr != ncclSuccess) {
            c->comms.clear();
            return dt_error_set(err, DT_EINTERNAL, NULL, NULL, "ncclCommInitAll: %s", ncclGetErrorString(nr));
        }
    }
#endif
    return DT_OK;
}

extern "C" int kern_cuda_create(kern_cuda_algo a, int ranks, kern_dtype t, size_t max_count, kern_cuda_ctx **out,
                                dt_error *err)
{
    *out = nullptr;
    kern_cuda_ctx *c = new kern_cuda_ctx();
    c->algo = a;
    c->dtype = t;
    c->max_count = max_count;
    int rc = create(a, ranks, t, max_count, c, err);
    if (rc) {
        kern_cuda_destroy(c);
        return rc;
    }
    *out = c;
    return DT_OK;
}

/* Run the collective once on all ranks; with timing, events on rank 0's stream bracket it. */
static int run_once(kern_cuda_ctx *c, size_t count, bool timed, dt_error *err)
{
    CK(cudaSetDevice(c->dev[0]));
    if (timed) CK(cudaEventRecord(c->t_start, c->stream[0]));
    for (int r = 1; r < c->ranks; r++) {
        CK(cudaSetDevice(c->dev[r]));
        CK(cudaStreamWaitEvent(c->stream[r], c->t_start, 0));
    }
    int rc = DT_OK;
    if (c->algo == KERN_CUDA_RING) {
        rc = ring_run(c, count, err);
    } else if (c->algo == KERN_CUDA_TOPK) {
        rc = topk_run(c, count, topk_k(count), err);
    } else {
#ifdef DTSIM_HAVE_NCCL
        ncclDataType_t dt = c->dtype == KERN_FP32 ? ncclFloat32 : c->dtype == KERN_BF16 ? ncclBfloat16 : ncclFloat16;
        ncclGroupStart();
        for (int r = 0; r < c->ranks; r++)
            ncclAllReduce(c->buf[r], c->buf[r], count, dt, ncclSum, c->comms[(size_t)r], c->stream[r]);
        ncclResult_t nr = ncclGroupEnd();
        if (nr != ncclSuccess) return dt_error_set(err, DT_EINTERNAL, NULL, NULL, "ncclAllReduce: %s", ncclGetErrorString(nr));
#endif
    }
    if (rc) return rc;
    for (int r = 1; r < c->ranks; r++) {
        CK(cudaSetDevice(c->dev[r]));
        CK(cudaEventRecord(c->step_done[r], c->stream[r]));
        CK(cudaSetDevice(c->dev[0]));
        CK(cudaStreamWaitEvent(c->stream[0], c->step_done[r], 0));
    }
    CK(cudaSetDevice(c->dev[0]));
    if (timed) CK(cudaEventRecord(c->t_stop, c->stream[0]));
    CK(cudaStreamSynchronize(c->stream[0]));
    return DT_OK;
}

/* Fill rank buffers from host data (gradient-like, or small integers for NCCL whose order of
 * summation is its own: integer sums are exact in any order). */
static int upload(kern_cuda_ctx *c, size_t count, std::vector<std::vector<unsigned char>> &host, dt_error *err)
{
    size_t es = kern_dtype_size(c->dtype);
    host.assign((size_t)c->ranks, std::vector<unsigned char>(count * es + 1));
    for (int r = 0; r < c->ranks; r++) {
        if (c->algo == KERN_CUDA_NCCL)
            for (size_t i = 0; i < count; i++) kern_store(c->dtype, host[r].data(), i, (float)((int)((i * 7 + (size_t)r * 3) % 17) - 8));
        else
            kern_fill_gradient(c->dtype, host[r].data(), count, 1e-2, 1, r);
        CK(cudaSetDevice(c->dev[r]));
        CK(cudaMemcpy(c->buf[r], host[r].data(), count * es, cudaMemcpyHostToDevice));
    }
    return DT_OK;
}

extern "C" int kern_cuda_verify(kern_cuda_ctx *c, size_t count, dt_error *err)
{
    if (count > c->max_count) return dt_error_set(err, DT_EINTERNAL, NULL, NULL, "count %zu above the context's %zu", count, c->max_count);
    if (c->algo == KERN_CUDA_TOPK) {
        size_t n = count, k = topk_k(n);
        std::vector<float> g(n), r0(n), rd(n), val(k), rval(k);
        std::vector<uint32_t> idx(k), ridx(k);
        CK(cudaMemcpy(g.data(), c->grad, n * 4, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(r0.data(), c->res0, n * 4, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(c->res, c->res0, n * 4, cudaMemcpyDeviceToDevice));
        int rc = run_once(c, n, false, err);
        if (rc) return rc;
        CK(cudaMemcpy(idx.data(), c->idx, k * 4, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(val.data(), c->val, k * 4, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(rd.data(), c->res, n * 4, cudaMemcpyDeviceToHost));
        kern_topk_reference(g.data(), r0.data(), n, k, ridx.data(), rval.data());
        if (memcmp(idx.data(), ridx.data(), k * 4) || memcmp(val.data(), rval.data(), k * 4) || memcmp(rd.data(), r0.data(), n * 4))
            return dt_error_set(err, DT_EINTERNAL, NULL, NULL, "CUDA top-k verification failed at %zu elements", n);
        return DT_OK;
    }
    std::vector<std::vector<unsigned char>> host;
    int rc = upload(c, count, host, err);
    if (rc) return rc;
    if ((rc = run_once(c, count, false, err))) return rc;
    size_t es = kern_dtype_size(c->dtype);
    std::vector<unsigned char> ref(count * es + 1), got(count * es + 1);
    if (c->algo == KERN_CUDA_NCCL) {
        for (size_t i = 0; i < count; i++) {
            float s = 0;
            for (int r = 0; r < c->ranks; r++) s += (float)((int)((i * 7 + (size_t)r * 3) % 17) - 8);
            kern_store(c->dtype, ref.data(), i, s);
        }
    } else {
        std::vector<const void *> in((size_t)c->ranks);
        for (int r = 0; r < c->ranks; r++) in[(size_t)r] = host[(size_t)r].data();
        kern_allreduce_reference(c->dtype, in.data(), c->ranks, count, ref.data());
    }
    for (int r = 0; r < c->ranks; r++) {
        CK(cudaSetDevice(c->dev[r]));
        CK(cudaMemcpy(got.data(), c->buf[r], count * es, cudaMemcpyDeviceToHost));
        if (memcmp(got.data(), ref.data(), count * es) != 0)
            return dt_error_set(err, DT_EINTERNAL, NULL, NULL, "CUDA %s verification failed: rank %d differs from the reference at %zu elements",
                                c->algo == KERN_CUDA_NCCL ? "NCCL all-reduce" : "ring all-reduce", r, count);
    }
    return DT_OK;
}

extern "C" int kern_cuda_run(kern_cuda_ctx *c, size_t count, double *seconds, dt_error *err)
{
    if (count > c->max_count) return dt_error_set(err, DT_EINTERNAL, NULL, NULL, "count %zu above the context's %zu", count, c->max_count);
    if (c->algo == KERN_CUDA_TOPK) CK(cudaMemcpy(c->res, c->res0, count * 4, cudaMemcpyDeviceToDevice));
    int rc = run_once(c, count, true, err);
    if (rc) return rc;
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, c->t_start, c->t_stop));
    *seconds = 1e-3 * (double)ms;
    return DT_OK;
}
