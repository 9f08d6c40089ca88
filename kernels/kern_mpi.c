/* kern_mpi.c - all-reduce over Open MPI ranks, for processes started by mpirun.
 *
 * Two algorithms are timed: MPI_Allreduce (whatever Open MPI's tuned component picks for the
 * size and rank count) and MPI_Reduce_scatter_block followed by MPI_Allgather (the two halves of
 * a ring all-reduce, as separate collectives). bf16/fp16 travel as 16-bit integers and are
 * summed by user-defined commutative MPI_Ops that convert, add in fp32 and round back.
 * Timing: a barrier, MPI_Wtime around the collective on every rank, then the maximum over ranks
 * (the collective is done when its slowest rank is).
 * Built only with DTSIM_HAVE_MPI; otherwise every entry point says so (DT_EUNSUPPORTED).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtsim/kern.h"

const char *kern_mpi_algo_name(kern_mpi_algo a)
{
    static const char *const names[KERN_MPI_ALGO_COUNT] = {"mpi_allreduce", "mpi_rs_ag"};
    DT_ASSERT(a >= 0 && a < KERN_MPI_ALGO_COUNT);
    return names[a];
}

#ifdef DTSIM_HAVE_MPI
#include <mpi.h>

/* A launcher leaves these in the environment; without one, MPI_Init would make a singleton. */
static bool under_mpirun(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

int kern_mpi_init(int *argc, char ***argv, int *rank, int *size, dt_error *err)
{
    if (!under_mpirun())
        return dt_error_set(err, DT_EUNSUPPORTED, NULL, NULL,
                            "--backend mpi must be launched by mpirun with 2 or more ranks, "
                            "e.g. mpirun -np 2 dtsim calibrate --backend mpi ...");
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited && MPI_Init(argc, argv) != MPI_SUCCESS)
        return dt_error_set(err, DT_EINTERNAL, NULL, NULL, "MPI_Init failed");
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    if (*size < 2) {
        MPI_Finalize();
        return dt_error_set(err, DT_EUNSUPPORTED, NULL, NULL,
                            "--backend mpi needs 2 or more ranks, mpirun started %d", *size);
    }
    return DT_OK;
}

void kern_mpi_finalize(void)
{
    int inited = 0, fin = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&fin);
    if (inited && !fin) MPI_Finalize();
}

static void sum_bf16(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    const uint16_t *a = in;
    uint16_t *b = inout;
    for (int i = 0; i < *len; i++) b[i] = kern_f32_to_bf16(kern_bf16_to_f32(a[i]) + kern_bf16_to_f32(b[i]));
}

static void sum_fp16(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    const uint16_t *a = in;
    uint16_t *b = inout;
    for (int i = 0; i < *len; i++) b[i] = kern_f32_to_fp16(kern_fp16_to_f32(a[i]) + kern_fp16_to_f32(b[i]));
}

/* Ops are created per call and freed after it: no process-wide state to manage, at the price of
 * two cheap local calls outside the timed region. */
static void type_and_op(kern_dtype t, MPI_Datatype *type, MPI_Op *op, bool *own)
{
    *own = false;
    if (t == KERN_FP32) {
        *type = MPI_FLOAT;
        *op = MPI_SUM;
        return;
    }
    *type = MPI_UINT16_T;
    MPI_Op_create(t == KERN_BF16 ? sum_bf16 : sum_fp16, 1, op);
    *own = true;
}

static int run_once(kern_mpi_algo a, MPI_Datatype type, MPI_Op op, size_t es, void *buf, void *tmp,
                    size_t count)
{
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (a == KERN_MPI_ALLREDUCE) return MPI_Allreduce(MPI_IN_PLACE, buf, (int)count, type, op, MPI_COMM_WORLD);
    /* blocks of ceil(count/size): buf and tmp hold block*size elements (padding included) */
    size_t block = (count + (size_t)size - 1) / (size_t)size;
    int rc = MPI_Reduce_scatter_block(buf, tmp, (int)block, type, op, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) return rc;
    (void)es;
    return MPI_Allgather(tmp, (int)block, type, buf, (int)block, type, MPI_COMM_WORLD);
}

int kern_mpi_allreduce(kern_mpi_algo a, kern_dtype t, void *buf, void *tmp, size_t count,
                       double *seconds, dt_error *err)
{
    MPI_Datatype type;
    MPI_Op op;
    bool own;
    type_and_op(t, &type, &op, &own);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    int rc = run_once(a, type, op, kern_dtype_size(t), buf, tmp, count);
    double mine = MPI_Wtime() - t0, slowest = 0;
    if (own) MPI_Op_free(&op);
    if (rc != MPI_SUCCESS) return dt_error_set(err, DT_EINTERNAL, NULL, NULL, "%s failed (MPI error %d)", kern_mpi_algo_name(a), rc);
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    *seconds = slowest;
    return DT_OK;
}

/* Integer-valued data in [-8, 8]: every partial sum of up to 16 ranks is an integer of
 * magnitude <= 128, exact in bf16 (8 significant bits) and fp16, whatever the order. */
static float pattern(int rank, size_t i) { return (float)((int)((i * 7 + (size_t)rank * 3) % 17) - 8); }

int kern_mpi_verify(kern_mpi_algo a, kern_dtype t, size_t count, dt_error *err)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t es = kern_dtype_size(t), block = (count + (size_t)size - 1) / (size_t)size;
    size_t cap = block * (size_t)size;
    void *buf = dt_xcalloc(cap, es), *tmp = dt_xcalloc(block ? block : 1, es);
    for (size_t i = 0; i < cap; i++) kern_store(t, buf, i, pattern(rank, i));
    MPI_Datatype type;
    MPI_Op op;
    bool own;
    type_and_op(t, &type, &op, &own);
    int mrc = run_once(a, type, op, es, buf, tmp, a == KERN_MPI_RS_AG ? cap : count);
    if (own) MPI_Op_free(&op);
    int rc = DT_OK;
    if (mrc != MPI_SUCCESS) rc = dt_error_set(err, DT_EINTERNAL, NULL, NULL, "%s failed (MPI error %d)", kern_mpi_algo_name(a), mrc);
    for (size_t i = 0; rc == DT_OK && i < count; i++) {
        float want = 0;
        for (int r = 0; r < size; r++) want += pattern(r, i);
        float got = kern_load(t, buf, i);
        if (got != want)
            rc = dt_error_set(err, DT_EINTERNAL, NULL, NULL, "%s verification failed on rank %d: element %zu is %g, expected %g",
                              kern_mpi_algo_name(a), rank, i, (double)got, (double)want);
    }
    free(buf);
    free(tmp);
    /* every rank learns whether any rank failed */
    int bad = rc != DT_OK, anybad = 0;
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (anybad && rc == DT_OK) rc = dt_error_set(err, DT_EINTERNAL, NULL, NULL, "%s verification failed on another rank", kern_mpi_algo_name(a));
    return rc;
}

int kern_mpi_bcast_int(int v)
{
    MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return v;
}

#else /* !DTSIM_HAVE_MPI */

int kern_mpi_init(int *argc, char ***argv, int *rank, int *size, dt_error *err)
{
    (void)argc, (void)argv, (void)rank, (void)size;
    return dt_error_set(err, DT_EUNSUPPORTED, NULL, NULL,
                        "--backend mpi: this dtsim was built without MPI (install libopenmpi-dev and rebuild)");
}
void kern_mpi_finalize(void) {}
int kern_mpi_allreduce(kern_mpi_algo a, kern_dtype t, void *buf, void *tmp, size_t count, double *seconds, dt_error *err)
{
    (void)a, (void)t, (void)buf, (void)tmp, (void)count, (void)seconds;
    return dt_error_set(err, DT_EUNSUPPORTED, NULL, NULL, "built without MPI");
}
int kern_mpi_verify(kern_mpi_algo a, kern_dtype t, size_t count, dt_error *err)
{
    (void)a, (void)t, (void)count;
    return dt_error_set(err, DT_EUNSUPPORTED, NULL, NULL, "built without MPI");
}
int kern_mpi_bcast_int(int v) { return v; }

#endif
