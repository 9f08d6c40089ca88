/* sweep_internal.h - what sweep_run.c needs from sweep_mpi.c (message passing to rank 0).
 *
 * All calls are made from the thread that called sweep_run (MPI_THREAD_FUNNELED). Without
 * DTSIM_HAVE_MPI they return DT_EUNSUPPORTED and are never reached (mpi_size is 1).
 */
#ifndef DTSIM_SWEEP_INTERNAL_H
#define DTSIM_SWEEP_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/* Broadcast n 64-bit values from rank 0 to every rank (collective). */
int sweep_mpi_bcast_u64(uint64_t *vals, size_t n);
/* Send a NUL-terminated record text to rank 0. */
int sweep_mpi_send_record(const char *text);
/* Rank 0: if a record has arrived, receive it into *text (malloc'd, caller frees) and return
 * 1; 0 if none is waiting; negative on error. */
int sweep_mpi_poll_record(char **text);

#endif
