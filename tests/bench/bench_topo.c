/* bench_topo.c - routing cost and route-cache memory at scale.
 *
 * Prints, for rail-optimised DGX clusters of 1,024 and 16,384 GPUs and a 4,096-GPU fat-tree:
 * time to generate, to route every ring-neighbour pair (what a ring collective uses), to route
 * a further 64 flows per pair for the first 64 pairs (ECMP variants), and to route all pairs
 * from a few sources (every pair, 1,048,576 routes, for the 1,024-GPU cluster); and the route
 * cache's bytes after each stage. Figures, not assertions:
 * docs/architecture.md quotes them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "dtsim/topo.h"
#include "topo_internal.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void run(const char *label, topo_gen_params p, int all_pairs_sources)
{
    dt_error e;
    dt_error_clear(&e);
    topo *t = NULL;
    double t0 = now();
    if (topo_generate(&p, &t, &e)) {
        fprintf(stderr, "%s: %s\n", label, e.msg);
        return;
    }
    double t1 = now();
    long hops = 0;
    for (int s = 0; s < t->n_gpus; s++) {
        const int *l;
        int n;
        if (topo_route(t, s, (s + 1) % t->n_gpus, 0, &l, &n)) return;
        hops += n;
    }
    double t2 = now();
    size_t ring_bytes = topo_route_cache_bytes(t);
    for (int s = 0; s < t->n_gpus && s < 64; s++)
        for (uint64_t h = 0; h < 64; h++) {
            const int *l;
            int n;
            topo_route(t, s, (s + t->n_gpus / 2) % t->n_gpus, h, &l, &n);
        }
    double t3 = now();
    long pairs = 0;
    for (int s = 0; s < all_pairs_sources; s++)
        for (int d = 0; d < t->n_gpus; d++) {
            const int *l;
            int n;
            topo_route(t, s * (t->n_gpus / all_pairs_sources), d, 0, &l, &n);
            pairs++;
        }
    double t4 = now();
    printf("%-18s gpus %6d nodes %6d links %7d | gen %7.3f s | ring %6d routes %7.3f s (%.1f hops avg), "
           "cache %7.1f MB | 4096 ECMP %6.3f s | %ld more pairs %7.3f s, cache %7.1f MB\n",
           label, t->n_gpus, t->n_nodes, t->n_links, t1 - t0, t->n_gpus, t2 - t1,
           (double)hops / t->n_gpus, ring_bytes / 1e6, t3 - t2, pairs, t4 - t3,
           topo_route_cache_bytes(t) / 1e6);
    topo_destroy(t);
}

/* Write a generated topology as JSON, read it back as a file would be, and run the generic
 * metrics (a loaded file has no closed forms). */
static void run_file(const char *label, topo_gen_params p)
{
    dt_error e;
    dt_error_clear(&e);
    topo *t = NULL, *back = NULL;
    if (topo_generate(&p, &t, &e)) return;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    double t0 = now();
    topo_write_json(t, f, &e);
    fclose(f);
    double t1 = now();
    cJSON *j = NULL;
    js_ctx ctx = {.file = label, .err = &e};
    if (js_parse_text(buf, len, label, &j, &e) || topo_from_json(&ctx, j, "", ".", &back)) {
        fprintf(stderr, "%s: %s\n", label, e.msg);
        return;
    }
    double t2 = now();
    topo_info in;
    topo_get_info(back, &in, &e);
    double t3 = now();
    printf("%-18s file %.1f MB | write %.3f s | parse+load+validate %.3f s | info (generic: "
           "diameter %d, bisection %.4g B/s) %.3f s\n",
           label, len / 1e6, t1 - t0, t2 - t1, in.diameter_hops, in.bisection_bw, t3 - t2);
    cJSON_Delete(j);
    free(buf);
    topo_destroy(t);
    topo_destroy(back);
}

int main(void)
{
    run("dgx-128x8", (topo_gen_params){.family = TOPO_FAMILY_DGX, .nodes = 128, .gpus_per_node = 8}, 1024);
    run("fat-tree-4096", (topo_gen_params){.family = TOPO_FAMILY_FAT_TREE, .gpus = 4096, .radix = 64,
                                           .tiers = 3}, 4);
    run("torus-16x16x16", (topo_gen_params){.family = TOPO_FAMILY_TORUS, .dims = {16, 16, 16}, .n_dims = 3}, 2);
    run("dgx-2048x8", (topo_gen_params){.family = TOPO_FAMILY_DGX, .nodes = 2048, .gpus_per_node = 8,
                                        .radix = 64}, 2);
    run_file("dgx-128x8 file", (topo_gen_params){.family = TOPO_FAMILY_DGX, .nodes = 128, .gpus_per_node = 8});
    run_file("dgx-2048x8 file", (topo_gen_params){.family = TOPO_FAMILY_DGX, .nodes = 2048, .gpus_per_node = 8});
    return 0;
}
