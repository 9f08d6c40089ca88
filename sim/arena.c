/* arena.c - bump allocation from blocks, every array zeroed (dtsim/arena.h). */
#include "dtsim/arena.h"

#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The header is padded to max_align_t, so the data after it is aligned for any type. */
struct dt_arena_block {
    alignas(max_align_t) dt_arena_block *next;
    size_t cap, used; /* bytes of data after the header */
};

#define ALIGN_UP(x) (((x) + alignof(max_align_t) - 1) & ~(alignof(max_align_t) - 1))

/* Under AddressSanitizer (-DDTSIM_SANITIZE=ON) the arena would hide an overrun from one array
 * into the next, both inside one malloc'd block; so there every array is followed by a poisoned
 * red zone and a block's unused space is poisoned until handed out, and ASan reports an overrun
 * as it would between two callocs. (Valgrind still sees only the blocks: an overrun inside one
 * is not reported there.) */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define REDZONE 32
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define REDZONE 0
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

static char *data_of(dt_arena_block *b) { return (char *)b + ALIGN_UP(sizeof *b); }

/* behind: link the new block after the head, leaving the head's free tail for the requests to
 * come (a request too large for any ordinary block gets a block of its own). */
static bool open_block(dt_arena *a, size_t bytes, bool behind)
{
    size_t hdr = ALIGN_UP(sizeof(dt_arena_block));
    if (bytes > SIZE_MAX - hdr) {
        a->failed = SIZE_MAX;
        a->overflow = true;
        return false;
    }
    /* malloc, not calloc: each array is zeroed as it is handed out, so a block's unused tail
     * costs neither the zeroing nor (untouched pages) memory */
    dt_arena_block *b = malloc(hdr + bytes);
    if (!b) {
        a->failed = bytes;
        return false;
    }
    b->cap = bytes;
    b->used = 0;
    POISON(data_of(b), bytes);
    if (behind && a->head) {
        b->next = a->head->next;
        a->head->next = b;
    } else {
        b->next = a->head;
        a->head = b;
    }
    return true;
}

void dt_arena_reserve(dt_arena *a, size_t bytes)
{
    if (!a->failed) open_block(a, ALIGN_UP(bytes ? bytes : 1), false);
}

void *dt_arena_array(dt_arena *a, size_t n, size_t size)
{
    if (a->failed) return NULL;
    if (size && n > (SIZE_MAX - alignof(max_align_t) - REDZONE) / size) {
        a->failed = SIZE_MAX;
        a->overflow = true;
        return NULL;
    }
    size_t bytes = ALIGN_UP(n * size + REDZONE);
    dt_arena_block *b = a->head;
    if (!b || b->cap - b->used < bytes) {
        bool own = bytes > DT_ARENA_BLOCK / 2;
        if (!open_block(a, own ? bytes : DT_ARENA_BLOCK, own)) {
            if (!a->overflow && n > 0 && size > 0) a->failed = n * size; /* what the caller asked for */
            return NULL;
        }
        b = own && a->head->next ? a->head->next : a->head;
    }
    void *p = data_of(b) + b->used;
    b->used += bytes;
    UNPOISON(p, n * size);
    return memset(p, 0, n * size);
}

int dt_arena_check(const dt_arena *a, const char *what, dt_error *err)
{
    if (!a->failed) return DT_OK;
    if (a->overflow)
        return dt_error_set(err, DT_ENOMEM, NULL, NULL, "%s: out of memory (an array larger than the address space)", what);
    return dt_error_set(err, DT_ENOMEM, NULL, NULL, "%s: out of memory (a request of %zu bytes failed)", what, a->failed);
}

void dt_arena_free(dt_arena *a)
{
    if (!a) return;
    for (dt_arena_block *b = a->head, *next; b; b = next) {
        next = b->next;
        UNPOISON(data_of(b), b->cap);
        free(b);
    }
    *a = (dt_arena)DT_ARENA_INIT;
}
