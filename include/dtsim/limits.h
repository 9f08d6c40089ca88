/* limits.h - the documented bounds on what dtsim reads, and the memory budget it runs under.
 *
 * Every bound here is checked before the memory it protects is allocated, from an estimate, so
 * a small hostile file cannot make dtsim run out of memory (an abort) or work for minutes: it
 * gets a located error instead. docs/formats.md ("Limits") lists them; docs/reliability.md says
 * which test holds each.
 *
 * The memory budget is read from the environment (DTSIM_MAX_MEMORY, which `dtsim --max-memory`
 * sets) and from the process's resource limits each time it is asked for: the library keeps no
 * mutable state of its own.
 */
#ifndef DTSIM_LIMITS_H
#define DTSIM_LIMITS_H

#include <stdio.h>

#include "dtsim/error.h"

/* Largest input file read whole (JSON, CSV): 1 GiB. The largest files dtsim writes itself
 * (a --timeline of a 16,384-GPU step) are a few hundred MB. */
#define DT_MAX_INPUT_BYTES ((size_t)1 << 30)
/* Deepest nesting of arrays and objects in a JSON input; dtsim's formats need at most 6. */
#define DT_MAX_JSON_DEPTH 64
/* Values (numbers, strings, arrays, objects, literals) in one JSON file: 2^26, about 5 GB as
 * cJSON nodes. The largest files dtsim writes hold a few tens of millions (a 16,384-GPU step's
 * timeline); a 200 MB array of numbers holds 100 M and took over 6.7 GB. */
#define DT_MAX_JSON_VALUES ((size_t)1 << 26)
/* GPUs of one topology (files and generators): 262,144 = 2^18. The largest validated runs are
 * 16,384 GPUs; a million-GPU topology would need tens of GB for its routes. */
#define DT_MAX_GPUS 262144

/* The memory budget in bytes: DTSIM_MAX_MEMORY if set (a size such as "8GiB"), else half the
 * physical memory; never more than 3/4 of the address-space or data limit (ulimit -v, -d) when
 * one is set, so that "would not fit" is an error message and not an abort. */
double dt_memory_limit(void);

/* DT_OK when an allocation of about `bytes` (an estimate, for what) fits the budget; otherwise
 * DT_ENOMEM (a run-time condition: exit 1) with "FILE: PATH: WHAT would need about N GB of memory, above the limit of M GB
 * (--max-memory)". file and path may be NULL. */
int dt_check_memory(double bytes, const char *what, const char *file, const char *path,
                    dt_error *err);

/* fopen(path, mode) for reading a user's input, refusing what is not a regular file (a
 * directory, a device such as /dev/zero, a FIFO, a socket: reading one could block forever or
 * never end) and files larger than DT_MAX_INPUT_BYTES. On success returns the stream and, when
 * size is non-NULL, its size in bytes; on failure returns NULL with err filled (DT_EIO for what
 * cannot be opened or is not a file, DT_EINPUT for an oversized file). */
FILE *dt_open_input(const char *path, const char *mode, size_t *size, dt_error *err);

#endif
