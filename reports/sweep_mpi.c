/* sweep_mpi.c - the little MPI a sweep needs: start-up detection, a broadcast of the points to
 * run, and records sent to rank 0 as they finish.
 *
 * Records travel as JSON text (a few hundred bytes each), so no MPI datatypes are defined and a
 * rank-0 point and a remote point go through the same print/parse and land as the same bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "dtsim/sweep.h"
#include "sweep_internal.h"

#ifdef DTSIM_HAVE_MPI
#include <mpi.h>
#endif

bool sweep_mpi_launched(void)
{
    /* Open MPI, MPICH/Hydra, Slurm's PMI: each sets one of these in every rank it starts. */
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK",
                                       "MPI_LOCALNRANKS", NULL};
    for (size_t i = 0; vars[i]; i++)
        if (getenv(vars[i])) return true;
    return false;
}

#ifdef DTSIM_HAVE_MPI

enum { TAG_RECORD = 17 };

int sweep_mpi_init(int *rank, int *size, dt_error *err)
{
    int provided = 0;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        return dt_error_set(err, DT_EINTERNAL, NULL, NULL, "MPI_Init_thread failed");
    if (provided < MPI_THREAD_FUNNELED) {
        MPI_Finalize();
        return dt_error_set(err, DT_EUNSUPPORTED, NULL, NULL,
                            "this MPI cannot host threads (MPI_THREAD_FUNNELED)");
    }
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    return DT_OK;
}

void sweep_mpi_finalize(void) { MPI_Finalize(); }

int sweep_mpi_bcast_u64(uint64_t *vals, size_t n)
{
    /* Counts are ints in MPI: broadcast in slices. */
    while (n > 0) {
        int k = n > (1u << 30) ? (1 << 30) : (int)n;
        if (MPI_Bcast(vals, k, MPI_UINT64_T, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
            return DT_EINTERNAL;
        vals += k;
        n -= (size_t)k;
    }
    return DT_OK;
}

int sweep_mpi_send_record(const char *text)
{
    int len = (int)strlen(text) + 1;
    return MPI_Send(text, len, MPI_CHAR, 0, TAG_RECORD, MPI_COMM_WORLD) == MPI_SUCCESS
               ? DT_OK
               : DT_EINTERNAL;
}

int sweep_mpi_poll_record(char **text)
{
    int flag = 0;
    MPI_Status st;
    if (MPI_Iprobe(MPI_ANY_SOURCE, TAG_RECORD, MPI_COMM_WORLD, &flag, &st) != MPI_SUCCESS)
        return DT_EINTERNAL;
    if (!flag) return 0;
    int len = 0;
    MPI_Get_count(&st, MPI_CHAR, &len);
    char *buf = dt_xmalloc((size_t)len + 1);
    if (MPI_Recv(buf, len, MPI_CHAR, st.MPI_SOURCE, TAG_RECORD, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE) != MPI_SUCCESS) {
        free(buf);
        return DT_EINTERNAL;
    }
    buf[len] = '\0';
    *text = buf;
    return 1;
}

#else

int sweep_mpi_init(int *rank, int *size, dt_error *err)
{
    *rank = 0;
    *size = 1;
    return dt_error_set(err, DT_EUNSUPPORTED, NULL, NULL,
                        "started under mpirun, but this dtsim was built without MPI");
}

void sweep_mpi_finalize(void) {}
int sweep_mpi_bcast_u64(uint64_t *vals, size_t n) { return DT_EUNSUPPORTED; }
int sweep_mpi_send_record(const char *text) { return DT_EUNSUPPORTED; }
int sweep_mpi_poll_record(char **text) { return DT_EUNSUPPORTED; }

#endif
