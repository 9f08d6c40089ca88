/* kern_cuda_stub.c - the CUDA/NCCL entry points when this build has no CUDA compiler: each one
 * says so (DT_EUNSUPPORTED), so `--backend cuda|nccl` fails clearly instead of not linking.
 * With CUDA, kernels/kern_cuda.cu and kern_probe.cu provide them and this file compiles to nothing. */
#include "dtsim/kern.h"
#include "dtsim/probe.h"

#ifndef DTSIM_HAVE_CUDA
int kern_cuda_devices(int *n, char *name, size_t name_size, dt_error *err)
{
    *n = 0;
    if (name_size) name[0] = '\0';
    return dt_error_set(err, DT_EUNSUPPORTED, NULL, NULL,
                        "this dtsim was built without CUDA (no working nvcc at configure time, or -DDTSIM_CUDA=OFF): no CUDA device support");
}

int kern_cuda_create(kern_cuda_algo a, int ranks, kern_dtype t, size_t max_count, kern_cuda_ctx **out,
                     dt_error *err)
{
    (void)a, (void)ranks, (void)t, (void)max_count;
    *out = NULL;
    int n;
    char name[8];
    return kern_cuda_devices(&n, name, sizeof name, err);
}

void kern_cuda_destroy(kern_cuda_ctx *c) { (void)c; }

int kern_cuda_verify(kern_cuda_ctx *c, size_t count, dt_error *err)
{
    (void)c, (void)count;
    return dt_error_set(err, DT_EUNSUPPORTED, NULL, NULL, "built without CUDA");
}

int kern_cuda_run(kern_cuda_ctx *c, size_t count, double *seconds, dt_error *err)
{
    (void)c, (void)count, (void)seconds;
    return dt_error_set(err, DT_EUNSUPPORTED, NULL, NULL, "built without CUDA");
}

int kern_probe_measure(const cal_probe_opts *o, const cal_probe_shape *shapes, int n,
                       void (*progress)(const char *what, void *arg), void *arg,
                       cal_probe_run *out, dt_error *err)
{
    (void)o, (void)shapes, (void)n, (void)progress, (void)arg, (void)out;
    int devs;
    char name[8];
    return kern_cuda_devices(&devs, name, sizeof name, err);
}
#else
typedef int kern_cuda_stub_unused; /* ISO C forbids an empty translation unit */
#endif
