/* test_arena.c - the working-array arena (dtsim/arena.h).
 * Pins down: every array is zeroed, aligned for any type (max_align_t) and disjoint from the
 * others, also across blocks (more than DT_ARENA_BLOCK in small arrays, and a request larger than
 * a block, which gets its own block without ending the current one); n = 0 gives a usable
 * pointer; a failed request (n x size overflowing size_t, or more bytes than can be had) is
 * sticky: NULL then and for every later request, reported once by dt_arena_check as DT_ENOMEM
 * with the caller's name and the bytes asked, nothing printed; dt_arena_free empties the arena,
 * which can then be used again; under ASan the byte after each array is poisoned (an overrun
 * into the next array is reported). ASan and valgrind (scripts/test.sh) see the frees.
 * Leaves free: the block layout (which block an array comes from). */
#include <stdalign.h>
#include <stdint.h>
#include <string.h>

#include "dtsim/arena.h"
#include "testutil.h"

/* Under ASan a request beyond its maximum aborts unless it may return NULL, as malloc does. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }

static bool aligned(const void *p) { return (uintptr_t)p % alignof(max_align_t) == 0; }

START_TEST(zeroed_aligned_disjoint)
{
    dt_arena a = DT_ARENA_INIT;
    enum { N = 200 };
    /* 200 arrays of 1..1000 bytes (~100 KiB: two blocks at least), each filled with its own
     * byte; then every one must still hold only its byte */
    unsigned char *p[N];
    size_t len[N];
    for (int i = 0; i < N; i++) {
        len[i] = (size_t)(i * 37 % 1000) + 1;
        p[i] = dt_arena_array(&a, len[i], 1);
        ck_assert_ptr_nonnull(p[i]);
        ck_assert(aligned(p[i]));
        for (size_t k = 0; k < len[i]; k++) ck_assert_int_eq(p[i][k], 0);
        memset(p[i], i + 1, len[i]);
    }
    /* larger than a block: a block of its own, and the small ones keep coming from the last */
    double *big = dt_arena_array(&a, DT_ARENA_BLOCK, sizeof *big);
    ck_assert_ptr_nonnull(big);
    ck_assert(aligned(big));
    for (size_t k = 0; k < DT_ARENA_BLOCK; k++) ck_assert(big[k] == 0.0);
    big[DT_ARENA_BLOCK - 1] = 1.5;
    unsigned char *after = dt_arena_array(&a, 16, 1);
    ck_assert_ptr_nonnull(after);
    ck_assert((size_t)(after - p[N - 1]) < DT_ARENA_BLOCK); /* same block as the last small one */
    memset(after, 0xff, 16);
    for (int i = 0; i < N; i++)
        for (size_t k = 0; k < len[i]; k++) ck_assert_int_eq(p[i][k], (unsigned char)(i + 1));
    ck_assert(big[DT_ARENA_BLOCK - 1] == 1.5);
    void *empty = dt_arena_array(&a, 0, sizeof(double));
    ck_assert_ptr_nonnull(empty);
    ck_assert_int_eq(dt_arena_check(&a, "t", NULL), DT_OK);
    dt_arena_free(&a);
    ck_assert_ptr_null(a.head);
    /* reusable after free */
    int *again = dt_arena_array(&a, 10, sizeof *again);
    ck_assert_ptr_nonnull(again);
    ck_assert_int_eq(again[9], 0);
    dt_arena_free(&a);
}
END_TEST

START_TEST(failure_is_sticky_and_returned)
{
    dt_arena a = DT_ARENA_INIT;
    dt_error err;
    ck_assert_ptr_nonnull(dt_arena_array(&a, 8, 8));
    /* n x size overflows size_t */
    ck_assert_ptr_null(dt_arena_array(&a, SIZE_MAX / 4, 8));
    ck_assert_ptr_null(dt_arena_array(&a, 1, 1)); /* sticky */
    dt_error_clear(&err);
    ck_assert_int_eq(dt_arena_check(&a, "replay", &err), DT_ENOMEM);
    ck_assert_str_eq(err.msg, "replay: out of memory (an array larger than the address space)");
    dt_arena_free(&a);
    ck_assert_int_eq(dt_arena_check(&a, "replay", NULL), DT_OK); /* free resets */
    /* more than any machine has (2^62 bytes): malloc fails, the bytes asked are named */
    ck_assert_ptr_null(dt_arena_array(&a, (size_t)1 << 59, 8));
    ck_assert_ptr_null(dt_arena_array(&a, 1, 1));
    dt_error_clear(&err);
    ck_assert_int_eq(dt_arena_check(&a, "federated", &err), DT_ENOMEM);
    ck_assert_str_eq(err.msg, "federated: out of memory (a request of 4611686018427387904 bytes failed)");
    dt_arena_free(&a);
}
END_TEST

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
/* Under ASan an overrun from one array into the next is caught as between two callocs: the byte
 * after each array is poisoned, the array itself is not. */
START_TEST(asan_red_zones)
{
    dt_arena a = DT_ARENA_INIT;
    char *x = dt_arena_array(&a, 24, 1), *y = dt_arena_array(&a, 16, 1);
    ck_assert(!__asan_address_is_poisoned(x) && !__asan_address_is_poisoned(x + 23));
    ck_assert(__asan_address_is_poisoned(x + 24));
    ck_assert(__asan_address_is_poisoned(y + 16));
    dt_arena_free(&a);
}
END_TEST
#endif

static Suite *suite(void)
{
    Suite *s = suite_create("arena");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, zeroed_aligned_disjoint);
    tcase_add_test(tc, failure_is_sticky_and_returned);
#if defined(__SANITIZE_ADDRESS__)
    tcase_add_test(tc, asan_red_zones);
#endif
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return dt_run_suite(suite()); }
