/* test_wl_graph.c - interning op names in an op graph.
 * Pins down: each distinct name gets the next id, the same name always the same id (across
 * index growth), and the stored text is the name's. Leaves free: the index's layout. */
#include <stdio.h>

#include "dtsim/workload.h"
#include "testutil.h"

START_TEST(names_interned_once)
{
    wl_graph *g = wl_graph_create(1, 1, 1);
    char buf[32];
    enum { N = 50000 };
    for (uint32_t i = 0; i < N; i++) {
        snprintf(buf, sizeof buf, "op%u", i);
        ck_assert_uint_eq(wl_graph_name(g, buf), i);
    }
    ck_assert_uint_eq(g->n_names, N);
    for (uint32_t i = 0; i < N; i += 7) {
        snprintf(buf, sizeof buf, "op%u", i);
        ck_assert_uint_eq(wl_graph_name(g, buf), i);
        ck_assert_str_eq(g->names[i], buf);
    }
    ck_assert_uint_eq(wl_graph_name(g, ""), N);
    ck_assert_uint_eq(wl_graph_name(g, ""), N);
    ck_assert_uint_eq(g->n_names, N + 1);
    wl_graph_destroy(g);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("wl_graph");
    TCase *tc = tcase_create("names");
    tcase_add_test(tc, names_interned_once);
    suite_add_tcase(s, tc);
    return dt_run_suite(s);
}
