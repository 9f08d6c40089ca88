/* arena.h - a run's working arrays from few allocations, freed at once.
 *
 * A model that needs a few dozen arrays for one run (per op, per lane, per client ...) takes
 * them from an arena instead of one calloc each: one error path instead of one per array, one
 * dt_arena_free instead of a free per array, and usually one allocation (dt_arena_reserve with
 * the run's estimate) instead of dozens.
 *
 * Allocation failure is sticky and returned, never printed or aborted on: dt_arena_array returns
 * NULL and marks the arena failed, later requests return NULL too, and the caller checks once
 * (dt_arena_check) before it touches any of the arrays, then reports DT_ENOMEM.
 *
 * Who owns what: the arena owns every array it hands out; they live until dt_arena_free. An
 * array that must outlive the run (handed to a caller's result) is not for an arena.
 * Cost: each array is zeroed as it is handed out (as calloc would) and aligned for any type
 * (max_align_t); a request that does not fit the current block opens a new one of
 * DT_ARENA_BLOCK bytes, a request larger than half of that a block of its own (linked behind,
 * so the current block keeps serving small ones). The unused tail of a block is the waste: at
 * most half a block per new block, in address space more than in memory (never touched).
 */
#ifndef DTSIM_ARENA_H
#define DTSIM_ARENA_H

#include <stdbool.h>
#include <stddef.h>

#include "dtsim/error.h"

#define DT_ARENA_BLOCK ((size_t)64 << 10) /* bytes of a block opened without a reservation */

typedef struct dt_arena_block dt_arena_block;
typedef struct dt_arena {
    dt_arena_block *head; /* newest block first */
    size_t failed;        /* bytes of the first request that could not be met; 0 while none */
    bool overflow;        /* that request's n x size did not fit a size_t */
} dt_arena;

/* An empty arena: `dt_arena a = {0};` is the same. */
#define DT_ARENA_INIT {0}

/* Open a block of at least `bytes` (the run's estimate), so that requests up to that total come
 * from one allocation. Optional; a failure is recorded as dt_arena_array's. */
void dt_arena_reserve(dt_arena *a, size_t bytes);
/* n zeroed elements of `size` bytes each (n = 0 gives a valid, empty array), or NULL once the
 * arena has failed. Use as p = dt_arena_array(a, n, sizeof *p). */
void *dt_arena_array(dt_arena *a, size_t n, size_t size);
/* DT_OK, or DT_ENOMEM with "<what>: out of memory (a request of N bytes failed)" in err. */
int dt_arena_check(const dt_arena *a, const char *what, dt_error *err);
/* Frees every block; the arena is empty again (reusable). NULL-safe. */
void dt_arena_free(dt_arena *a);

#endif
